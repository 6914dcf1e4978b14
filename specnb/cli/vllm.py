"""``specnb config``, ``specnb metrics`` and ``specnb bench``: the vLLM tools on the command line.

Exit status:

* ``specnb config check JSON|FILE|-`` (or ``--serve LINE|-``, a whole ``vllm serve`` line) --
  0 when vLLM would accept the config (warnings allowed), 1 when it would reject it, 2 on usage
  errors (argparse's own, an unreadable file, a ``--vllm-version`` that is not a release or is
  older than every table, a serve line vLLM's parser refuses).
* ``specnb config build METHOD ...`` -- 0 and the rendered config; 1 when vLLM would reject
  what was asked for; 2 on usage errors.
* ``specnb metrics FILE [FILE]`` and ``specnb bench ON.json OFF.json`` -- 0 with their tables;
  2 on bad input (:data:`specnb.cli.EXIT_BAD_INPUT`, the rule of every command): a file that
  cannot be read (missing, a directory, no permission) or holds no usable data (empty, not
  UTF-8 text, not a scrape, log or bench result, inconsistent counts, a wrong value); ``-``
  given twice; a bad option value.

Only argparse is imported here; :mod:`specnb.vllm` and :mod:`specnb.advise` are imported
inside the commands.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from . import error as _err
from . import positive_int
from . import printable as _printable
from . import refuse as _refuse

__all__ = ["register"]


def _stdin(errors: str) -> str:
    buffer = getattr(sys.stdin, "buffer", None)  # absent when stdin is replaced by a StringIO
    return buffer.read().decode("utf-8", errors) if buffer is not None else sys.stdin.read()


def _read_text(arg: str) -> str:
    # Bytes that are not UTF-8 are kept as surrogate escapes, as Python (and so vLLM) decodes
    # command-line arguments; the checker then names them.
    return _stdin("surrogateescape") if arg == "-" else arg


_CONFIG_HINT = "give the speculative config as JSON or YAML"


def _file_text(path: str, hint: str) -> str:
    """The text of a file or of stdin (``-``) that ``config check`` reads: strict UTF-8 and
    not empty, as every reader's files (README: exit 2 naming the file). A literal argument
    is not read here: vLLM decodes command-line values itself (``_read_text``). Raises
    OSError, or ValueError naming the file."""
    text = _read_file(path, hint)
    if not text.strip():
        where = "stdin" if path == "-" else path
        raise ValueError(f"{where}: empty; {hint}")
    return text


def _looks_like_json(arg: str) -> bool:
    if arg in ("", "None") or arg.strip()[:1] in ("{", "[", '"'):
        return True
    try:
        json.loads(arg)
    except (ValueError, RecursionError):
        return False
    return True


def _config_text(arg: str) -> tuple[str, str]:
    """(text, location label) of ``config check``'s argument: stdin for ``-``; the file's text
    when the argument is not JSON and names a file; else the argument itself. Raises
    ValueError (a usage error) for a folder, or a path-like argument naming no file."""
    import os

    if arg == "-":
        return _file_text(arg, _CONFIG_HINT), "<stdin>"
    if not _looks_like_json(arg):
        if os.path.isdir(arg):
            raise ValueError(f"{arg!r} is a folder; give the config file in it, the JSON "
                             "text, or - with < FILE")
        if os.path.exists(arg):
            return _file_text(arg, _CONFIG_HINT), arg
        if arg.lower().endswith((".json", ".yaml", ".yml")) or "/" in arg or os.sep in arg:
            raise ValueError(f"{arg!r} looks like a file name, but there is no such file; "
                             "pass the file's text, or use - with < FILE")
    return arg, "<argument>"


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1), got {text!r}") from None
    if not 0.0 <= value < 1.0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1) (0.05 = 5%), got {text}")
    return value


def _cmd_check(args) -> int:
    from ..vllm import check_speculative_config

    if (args.serve is None) == (args.config is None):
        return _err("config check", "give a config (JSON, FILE or -) or --serve LINE, not "
                                    "both", 2)
    if args.serve is not None and (args.tensor_parallel_size or args.max_model_len):
        return _err("config check", "with --serve, give --tensor-parallel-size and "
                                    "--max-model-len in the serve line", 2)
    if args.gpu is not None:
        if args.serve is None:
            return _err("config check", "--gpu needs --serve LINE (the memory check reads the "
                                        "line's model and settings)", 2)
        from ..serving import gpu

        try:
            gpu(args.gpu)
        except (KeyError, ValueError) as exc:
            return _err("config check", f"--gpu {args.gpu}: {str(exc).splitlines()[0]}", 2)
    try:
        if args.serve is not None:
            from ..vllm import check_serve_line

            line = _file_text("-", "give a vllm serve line") if args.serve == "-" \
                else args.serve
            source = "<serve line>"
            parsed, result = check_serve_line(line, args.vllm_version, args.draft_config,
                                              args.target_config)
            _validated_target(args.target_config or parsed.model)
            result = _with_memory(args, parsed, result)
        else:
            _validated_target(args.target_config)
            text, source = _config_text(args.config)
            result = check_speculative_config(text, vllm_version=args.vllm_version,
                                              draft_config=args.draft_config,
                                              target_config=args.target_config,
                                              tensor_parallel_size=args.tensor_parallel_size,
                                              max_model_len=args.max_model_len)
    except OSError as exc:
        return _err("config check", f"cannot read {exc.filename}: {exc.strerror}", 2)
    except (ValueError, UnicodeDecodeError) as exc:
        return _err("config check", str(exc).splitlines()[0], 2)
    except TypeError as exc:  # a library check's ParamTypeError is bad input too (T6-T3)
        if getattr(exc, "param", None) is None:
            raise
        return _err("config check", str(exc).splitlines()[0], 2)
    if args.json:
        print(json.dumps({"accepted": result.accepted, "source": source,
                          "findings": [f.__dict__ for f in result.findings]}, indent=2))
    else:
        print(_printable(result.format(source)))
    return 0 if result.accepted else 1


def _validated_target(path) -> None:
    """Read a local target config.json (``--target-config``, or the serve line's model folder)
    through the reader ``specnb plan --model`` uses
    (:func:`specnb.serving.resolve_architecture`): one reader, one verdict (trial 7, T7-08),
    so a malformed one (``num_hidden_layers: "32"``) is bad input with plan's message. A
    config of a family the serving model does not cover (a missing key,
    :class:`specnb.hf_config.MissingConfigKey`: GPT-2, OPT) is still checked against vLLM's
    rules. A path that does not exist is left to the checker's own message. Raises
    ValueError."""
    import os

    if path is None or not os.path.exists(path) or (
            os.path.isdir(path) and not os.path.isfile(os.path.join(path, "config.json"))):
        return
    from ..hf_config import MissingConfigKey
    from ..serving import resolve_architecture

    try:
        resolve_architecture(path)
    except MissingConfigKey:
        return
    except FileNotFoundError as exc:  # the message names the file; an OSError has no filename
        raise ValueError(str(exc)) from None


def _with_target_rules(args, parsed, result):
    """vLLM's refusals that depend on the served model alone, GPU or not
    (:func:`specnb.advise.serve_memory.serve_target_findings`), added to ``result``."""
    from ..advise.serve_memory import serve_target_findings
    from ..vllm import ConfigCheck

    found = serve_target_findings(parsed.settings, parsed.model,
                                  target_config=args.target_config, env=parsed.env,
                                  speculative_config=result.config)
    return ConfigCheck(result.findings + found, result.config, result.vllm_version) \
        if found else result


def _with_memory(args, parsed, result):
    """The rules of the target alone (:func:`_with_target_rules`), then, with --gpu, vLLM's
    default token budget against --max-num-seqs (:func:`specnb.advise.serve_memory.serve_batch_findings`,
    also for a line without --speculative-config) and the line's memory on that GPU (:func:`specnb.advise.serve_memory.serve_memory_findings`: the weight
    dtype the line loads, vLLM V1's refusal when one sequence at --max-model-len does not fit,
    the cap at --max-num-seqs)."""
    result = _with_target_rules(args, parsed, result)  # speculation or not (T6-W5)
    if args.gpu is None or not result.accepted:  # a refused line: no memory advice on top
        return result
    from ..advise.serve_memory import serve_batch_findings, serve_memory_findings
    from ..vllm import ConfigCheck

    found = serve_batch_findings(parsed.settings, args.gpu, result.config)
    found += serve_memory_findings(parsed.settings, parsed.model, result.config, args.gpu,
                                   target_config=args.target_config)
    return ConfigCheck(result.findings + found, result.config, result.vllm_version) \
        if found else result


#: Keys with their own options in ``specnb config build``.
_OWN_OPTION = {"method": "the METHOD argument", "num_speculative_tokens": "-k",
               "model": "--model"}


def _parse_set(items):
    out = {}
    for item in items or ():
        if "=" not in item:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        key = key.strip()
        if not key:
            raise ValueError(f"--set expects KEY=VALUE with a non-empty KEY, got {item!r}")
        if key in _OWN_OPTION:
            raise ValueError(f"--set {key}=...: give {key} with {_OWN_OPTION[key]} instead")
        if key in out:
            raise ValueError(f"--set {key} is given twice ({out[key]!r} and {value!r}); give "
                             "each key once")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value  # like vLLM's dotted flags: JSON first, else a string
        except RecursionError:
            raise ValueError(f"--set {key}: the JSON value is nested too deeply") from None
    return out


def _cmd_build(args) -> int:
    from ..vllm import (check_speculative_config, python_snippet, serve_command,
                       speculative_config, yaml_config)

    try:
        options = _parse_set(args.set)
    except ValueError as exc:
        return _err("config build", str(exc), 2)
    if args.model is not None:
        options["model"] = args.model
    try:
        cfg = speculative_config(args.method, args.num_speculative_tokens, **options)
    except ValueError as exc:
        return _err("config build", str(exc), 1)
    render = {
        "serve": lambda: serve_command(cfg, args.target),
        "json": lambda: json.dumps(cfg),
        "yaml": lambda: yaml_config(cfg, args.target).rstrip("\n"),
        "python": lambda: python_snippet(cfg, args.target).rstrip("\n"),
    }[args.format]
    try:
        print(render())
    except ValueError as exc:
        return _err("config build", str(exc), 2)
    for f in check_speculative_config(cfg).warnings:
        print(f"# {f.severity}: {f.key or '-'}: {f.message}", file=sys.stderr)
    if args.format != "json" and args.target == "<target-model>":
        print("# note: <target-model> is a placeholder: replace it, or pass --target",
              file=sys.stderr)
    return 0


def _read_file(path: str, hint: str = "give a /metrics scrape or a vLLM log") -> str:
    """The text of ``path`` (``-`` for stdin). Raises OSError, or ValueError for non-UTF-8."""
    try:
        if path == "-":
            return _stdin("strict")
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except UnicodeDecodeError as exc:
        from .._check import utf8_error

        raise utf8_error("stdin" if path == "-" else path, exc, hint) from None


def _cmd_metrics(args) -> int:
    from .._stream import scan
    from ..advise import acceptance_advice
    from ..vllm import UsageError
    from ..vllm.read import MARKERS, read_acceptance_scans

    if len(args.files) > 2:
        return _err("metrics", "give one or two files", 2)
    if args.files.count("-") > 1:
        return _err("metrics", "- (stdin) can be given only once", 2)
    try:
        scans = [scan(p, MARKERS + _ENGINE_MARKERS, "give a /metrics scrape or a server log")
                 for p in args.files]
    except OSError as exc:
        return _err("metrics", f"cannot read {exc.filename}: {exc.strerror}")
    except ValueError as exc:
        return _refuse("metrics", exc)
    try:
        engine = _engine_of(scans, args.engine)
        if engine == "vllm":
            reading = read_acceptance_scans(scans, args.num_speculative_tokens,
                                            args.model_name)
        else:
            reading = _other_engine(engine, scans, args.num_speculative_tokens)
            if reading is None:
                return 0
        advice = acceptance_advice(reading.stats, args.draft_cost)
    except UsageError as exc:
        return _err("metrics", str(exc)[len("usage: "):])
    except ValueError as exc:
        return _refuse("metrics", _naming(exc, [sc.where for sc in scans]))
    stats = reading.stats
    for line in reading.header:  # printed only once the numbers are known to be usable
        if line.startswith("warning: "):
            print(_printable(line), file=sys.stderr)
        else:
            print(_printable(line))
    print(stats.to_frame(formatted=True).to_string(index=False))
    if stats.per_position:
        print()
        pos = stats.per_position_frame()
        pos["acceptance"] = [f"{100 * x:.2f} %" for x in pos["acceptance"]]
        pos["accepted"] = [f"{x:,.0f}" for x in pos["accepted"]]
        # counted from 1 as the advice counts them; vLLM's `position` label counts from 0
        pos.insert(0, "draft position", pos["position"] + 1)
        pos = pos.rename(columns={"position": "vLLM position"})
        print(pos.to_string(index=False))
    for note in stats.notes:
        print(f"note: {note}")
    if stats.alpha is not None and stats.num_speculative_tokens and \
            stats.num_speculative_tokens > 1:
        lower = stats.acceptance_rate < stats.alpha - 5e-4
        print(f"note: implied alpha {stats.alpha:.3f} is the per-token acceptance that gives "
              f"this tau under Eq. 1's i.i.d. assumption; the acceptance rate "
              f"{100 * stats.acceptance_rate:.2f} % (accepted / drafted) counts every draft "
              "token after a rejection as rejected, so it is "
              + ("lower at gamma > 1" if lower else
                 "lower at gamma > 1 whenever a draft is rejected (here they agree)"))
    for note in advice:
        print(f"advice: {note.message}")
    return 0


def _naming(exc: ValueError, where: list[str]) -> ValueError:
    """``exc``, its message led by the inputs' names when it names none of them (the readers
    see text, not files)."""
    text = str(exc)
    if any(w in text for w in where):
        return exc
    return ValueError(f"{' and '.join(where)}: {text}")


#: Lines the other engines' readers need (:mod:`specnb.engines`, :mod:`specnb.vllm.requests`).
_ENGINE_MARKERS = ("accept len:", "draft acceptance", "speculative_decoding", "spec_verify_ct")


def _responses(sc):
    """The JSON response bodies of a scanned file (one a line; or the whole file as one JSON
    value or a list of them; or a saved event stream, ``data: {...}`` lines:
    :func:`specnb.vllm.requests.sse_data`), or None when it is not JSON."""
    from ..vllm.bench import _objects
    from ..vllm.requests import is_sse, sse_data

    sse = is_sse(sc.head)
    if not (sse or sc.head.lstrip().startswith(("{", "["))):
        return None
    try:
        objs = [json.loads(t) for t in (sse_data(x) for _, x in sc.kept()) if t is not None]
        if not objs:
            raise ValueError
    except ValueError:
        if sc.where == "<stdin>" or sc.n_bytes > 256 << 20:
            raise ValueError(f"{sc.where}: give the responses one JSON object a line (JSONL)")
        with open(sc.where, encoding="utf-8") as fh:
            text = fh.read()
        if sse:
            objs = []
            for n, line in enumerate(text.splitlines(), 1):
                t = sse_data(line)
                try:
                    objs += [] if t is None else [json.loads(t)]
                except ValueError:
                    raise ValueError(f"{sc.where}:{n}: not a JSON event (a streamed response "
                                     "is 'data: {...}' lines)") from None
        else:
            objs = _objects(text, sc.where)
    out = []
    for o in objs:
        out += o if isinstance(o, list) else [o]
    return out


def _engine_of(scans, engine: str) -> str:
    """vllm, vllm-requests, sglang, sglang-meta or llama.cpp: what the input is."""
    from ..engines.llamacpp import is_llamacpp_log
    from ..engines.sglang import is_sglang_log
    from ..vllm import UsageError

    if engine not in ("auto", "vllm") and len(scans) > 1:
        raise UsageError(f"usage: --engine {engine} reads one file")
    from ..vllm.requests import is_sse

    sc = scans[0]
    if len(scans) == 1 and (is_sse(sc.head) or sc.head.lstrip().startswith(("{", "["))):
        if engine in ("auto", "vllm") and "speculative_decoding" in sc.markers:
            return "vllm-requests"
        if engine in ("auto", "sglang") and "spec_verify_ct" in sc.markers:
            return "sglang-meta"
        if engine in ("auto", "vllm") and is_sse(sc.head):  # a stream without the section
            return "vllm-requests"  # read_request_metrics says what the server needs
    vllm_marks = {"vllm:spec_decode_", "SpecDecoding metrics:", "Speculative metrics:"}
    if engine == "auto" and len(scans) == 1 and not (vllm_marks & sc.markers):
        text = sc.text  # no vLLM line: another engine's (O(kept lines))
        if is_sglang_log(text):
            return "sglang"
        if is_llamacpp_log(text):
            return "llama.cpp"
    return engine if engine in ("sglang", "llama.cpp") else "vllm"


def _other_engine(engine, scans, k):
    """The Reading of another engine's input (acceptance_stats on its counts when it gives
    them all), or None after printing a tau-only result."""
    from ..engines.llamacpp import read_llamacpp_log
    from ..engines.sglang import read_sglang_log, read_sglang_meta_info
    from ..vllm import Reading, SpecDecodeCounts, acceptance_stats
    from ..vllm.requests import read_request_metrics

    sc = scans[0]
    if engine == "vllm-requests":
        counts = read_request_metrics(_responses(sc))
        return Reading(acceptance_stats(counts, k), "requests", (
            f"source: {counts.label_sets:,} vLLM response(s) with metrics.speculative_decoding "
            "(--per-request-spec-decode-metrics summary), summed: the server counters' "
            "definitions, for these requests",))
    if engine == "sglang-meta":
        got = read_sglang_meta_info(_responses(sc), k)
    elif engine == "sglang":
        got = read_sglang_log(sc.kept(), k)
    else:
        got = read_llamacpp_log(sc.kept(), k)
    header = [f"source: {got.engine} {got.source}, {got.items:,} item(s) ({sc.n_lines:,} lines "
              "read)"] + [f"definition: {d}" for d in got.definition]
    c = got.counts
    if {"num_drafts", "num_draft_tokens", "num_accepted_tokens"} <= set(c):
        estimated = got.engine == "llama.cpp"
        counts = SpecDecodeCounts(float(c["num_drafts"]), float(c["num_draft_tokens"]),
                                  float(c["num_accepted_tokens"]),
                                  tuple(float(x) for x in c.get("num_accepted_tokens_per_pos",
                                                                 ())),
                                  1, f"engine {got.engine}", estimated)
        stats = acceptance_stats(counts, k if k is not None else got.num_speculative_tokens)
        stats = dataclasses.replace(stats, notes=got.notes + stats.notes)
        return Reading(stats, got.engine, tuple(header))
    for line in header:
        print(_printable(line))
    for name, value, unit in got.rows():
        shown = "-" if value is None or value != value else (
            f"{value:.3f}" if unit == "tokens/step" else f"{value:.2f}" if unit == "%" else
            f"{value}")
        print(f"{name:<32}{shown:>10} {unit}")
    if got.tau == got.tau and got.num_speculative_tokens:
        from ..theory import alpha_from_acceptance_length

        print(f"{'implied alpha':<32}"
              f"{alpha_from_acceptance_length(got.tau, got.num_speculative_tokens):>10.3f}")
    for note in got.notes:
        print(f"note: {note}")
    return None


def _draft_cost(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}") from None
    if not value >= 0.0 or value == float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0 (draft/target cost per "
                                         f"forward, e.g. 0.05), got {text}")
    return value


def _cmd_bench(args) -> int:
    from ..advise import compare_bench

    try:
        texts = {k: None if getattr(args, k) is None else _read_file(getattr(args, k))
                 for k in ("on_log", "off_log", "server_log")}
    except OSError as exc:
        return _err("bench", f"cannot read {exc.filename}: {exc.strerror}")
    except ValueError as exc:
        return _refuse("bench", exc)
    try:
        result = compare_bench(args.on, args.off, goal=args.goal, tolerance=args.tolerance,
                               on_console=texts["on_log"], off_console=texts["off_log"],
                               server_log=texts["server_log"])
    except OSError as exc:
        return _err("bench", f"cannot read {exc.filename}: {exc.strerror}")
    except ValueError as exc:
        return _refuse("bench", exc)
    print(result)
    return 0


def register(sub) -> None:
    """Add ``config`` (``check``, ``build``), ``metrics`` and ``bench`` to ``specnb``."""
    p = sub.add_parser("config", help="check or build a vLLM --speculative-config",
                       description="Check or build vLLM's speculative_config.")
    csub = p.add_subparsers(dest="config_command", metavar="{check,build}")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    c = csub.add_parser("check", help="check a --speculative-config value",
                        description="Print the findings; exit 0 if vLLM would accept the "
                                    "config (warnings allowed), 1 if it would reject it, 2 on "
                                    "usage errors.")
    c.add_argument("config", nargs="?", help="the JSON value as vLLM receives it, a file "
                                             "holding it, or - to read stdin")
    c.add_argument("--serve", metavar="LINE",
                   help="check a whole `vllm serve MODEL ...` line instead (- reads it from "
                        "stdin; also `NAME=value` / `env NAME=value` before it, `python -m "
                        "vllm.entrypoints.openai.api_server ...` and `docker run ... "
                        "vllm/vllm-openai[:tag] ARGS`): parsed with the release's own flags, "
                        "the speculative config checked with --max-model-len, -tp, -dp, "
                        "--quantization, ...")
    c.add_argument("--gpu", metavar="NAME",
                   help="with --serve: the GPU (catalogue name, e.g. H100-SXM), to check the "
                        "memory at --max-num-seqs")
    c.add_argument("--vllm-version", metavar="X.Y.Z",
                   help="the server's vLLM version (default: current vLLM)")
    c.add_argument("--draft-config", metavar="PATH",
                   help="the draft checkpoint's local config.json (or its folder): checks the "
                        "method against its architectures / model_type")
    c.add_argument("--target-config", metavar="PATH",
                   help="the served model's local config.json (or its folder): checks the "
                        "draft's max_model_len, vocabulary, TP and checkpoint kind against it "
                        "(read as plan --model reads it: a malformed one is exit 2)")
    c.add_argument("--tensor-parallel-size", metavar="N", type=positive_int,
                   help="the server's --tensor-parallel-size (judges draft_tensor_parallel_size)")
    c.add_argument("--max-model-len", metavar="N", type=positive_int,
                   help="the server's --max-model-len (default: the target's "
                        "max_position_embeddings)")
    c.add_argument("--json", action="store_true", help="print the findings as JSON")
    c.set_defaults(func=_cmd_check)

    b = csub.add_parser("build", help="build a speculative_config and render it",
                        description="Build a checked speculative_config and print it as a "
                                    "vllm serve line, JSON, a --config YAML file or Python. "
                                    "Exit status: 0 printed (warnings go to stderr), 1 vLLM "
                                    "would reject what was asked for, 2 usage error.")
    b.add_argument("method", help="ngram, suffix, draft_model, eagle, eagle3, mtp, medusa, "
                                  "mlp_speculator, ...")
    b.add_argument("-k", "--num-speculative-tokens", type=int, metavar="N",
                   help="draft length gamma")
    b.add_argument("--model", help="draft model / EAGLE head checkpoint")
    b.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="any other key, e.g. --set prompt_lookup_min=2 (value parsed as JSON, "
                        "else a string); repeatable")
    b.add_argument("--target", default="<target-model>",
                   help="target model for vllm serve (default: the placeholder "
                        "<target-model>, to replace)")
    b.add_argument("--format", choices=("serve", "json", "yaml", "python"), default="serve",
                   help="serve: a vllm serve line; json: the --speculative-config value; yaml: "
                        "a --config file; python: an LLM(...) call (default: serve)")
    b.set_defaults(func=_cmd_build)

    m = sub.add_parser("metrics", help="acceptance from a /metrics scrape (pair) or a log",
                       description="Read one /metrics scrape, a before/after pair (the window "
                                   "between them), a vLLM log (V1 SpecDecoding lines of any "
                                   "version, V0 Speculative metrics lines), the printout of "
                                   "vLLM's examples/offline_inference/spec_decode.py, vLLM "
                                   "response bodies with metrics.speculative_decoding (JSON "
                                   "lines, or a stream saved by curl -N: data: lines), or "
                                   "another engine's input (--engine); print "
                                   "acceptance rate, mean acceptance length, per-position rates "
                                   "and the implied alpha. Exit status: 0 printed, 2 bad "
                                   "input: a file that cannot be read or holds no usable data "
                                   "(not UTF-8, not a scrape or log, inconsistent counts, a -k "
                                   "the counts contradict or above the input's per-position "
                                   "series: vLLM exports one per position), - twice, a bad "
                                   "option (specnb --help: every command's exit status).")
    m.add_argument("files", nargs="+", metavar="FILE",
                   help="scrape, or BEFORE AFTER scrapes, or a log file, or a spec_decode.py "
                        "printout, or responses (JSON lines or a saved stream); - for stdin")
    m.add_argument("--num-speculative-tokens", "-k", type=positive_int, metavar="N",
                   help="gamma for alpha (default: inferred)")
    m.add_argument("--model-name", help="keep only series with this model_name label")
    m.add_argument("--engine", choices=("auto", "vllm", "sglang", "llama.cpp"), default="auto",
                   help="what wrote the input (default auto: from its lines): vllm (scrape, "
                        "log, printout, or response bodies with metrics.speculative_decoding "
                        "as JSON lines or a streamed response saved by curl -N), sglang (server log 'accept len' lines, or responses "
                        "with meta_info), llama.cpp (llama-server 'draft acceptance' lines); "
                        "each is put in specnb's tau and acceptance rate, the difference in "
                        "definitions stated")
    m.add_argument("--draft-cost", "-c", type=_draft_cost, metavar="C",
                   help="draft/target cost per forward c, for the per-position advice and the "
                        "gamma-1 verdict (Corollary 3.9: gamma 1 pays while the acceptance rate "
                        "is above c), both assuming 0.05 without it (Leviathan et al. "
                        "Definition 3.7 says c was below 0.05 in its runs; its Table 4 has "
                        "0.11 for T5-large); with it, also "
                        "Theorem 3.8 at the implied alpha")
    m.set_defaults(func=_cmd_metrics)

    bb = sub.add_parser("bench", help="compare vllm bench serve results, speculation on vs off",
                        description="Compare two `vllm bench serve --save-result` files and "
                                    "give a verdict for the goal, and one by TPOT, throughput "
                                    "and TTFT. Exit status: 0 printed, 2 bad input: a file "
                                    "that cannot be read (missing, a directory, no permission) "
                                    "or is not a bench result (empty, not JSON, wrong values: a "
                                    "TPOT or throughput of 0, negative or not finite), a bad "
                                    "option (specnb --help: every command's exit status).")
    bb.add_argument("on", metavar="ON.json", help="result with speculative decoding")
    bb.add_argument("off", metavar="OFF.json", help="result without")
    bb.add_argument("--goal", choices=("latency", "throughput", "ttft"), default="latency",
                    help="latency: judge by TPOT (median, else mean); throughput: by output "
                         "tokens/s; ttft: by time to first token; the other two verdicts are "
                         "printed below it (default: latency)")
    bb.add_argument("--on-log", metavar="FILE",
                    help="the console output of the ON run's vllm bench serve (its "
                         "Namespace(...) line says the dataset, --ignore-eos, the backend): "
                         "flags acceptance measured on content unlike real traffic")
    bb.add_argument("--off-log", metavar="FILE", help="the same for the OFF run")
    bb.add_argument("--server-log", metavar="FILE",
                    help="the ON server's log or vllm serve line: flags a server with synthetic "
                         "or lossy acceptance (rejection_sample_method synthetic / fly)")
    bb.add_argument("--tolerance", type=_tolerance, default=0.05,
                    help="relative change treated as noise (default 0.05)")
    bb.set_defaults(func=_cmd_bench)
