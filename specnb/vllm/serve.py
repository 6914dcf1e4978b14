"""The whole ``vllm serve`` line: :func:`parse_serve_line` reads it as vLLM's
``FlexibleArgumentParser`` (``vllm/utils/argparse_utils.py``) does, with the release's flags
(``specnb/vllm/flags/<v>.json``, from ``make_arg_parser`` by ``oracle/table.py --flags``);
:func:`check_serve_line` checks the config in its context."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from dataclasses import dataclass, field, replace
from functools import lru_cache

from .._numbers import MAX_EXACT_INT, number_text
from ._versions import flags_for, select
from .findings import ConfigCheck, Finding

__all__ = ["ServeLine", "ServeLineError", "parse_serve_line", "check_serve_line"]


class ServeLineError(ValueError):
    """The line is not one vLLM's parser takes (the message is the parser's own error line), or
    it gives an integer flag a value specnb cannot use (above 2**53 in size: not exact in a
    float64; the message names the flag)."""


@dataclass(frozen=True)
class ServeLine:
    """A parsed line: model (positional or ``--model``), speculative_config (the JSON text
    ``--speculative-config`` receives, dotted flags merged, or None), settings (every other flag,
    {dest: value}), vllm (the release whose flags parsed it), replaced (a JSON
    ``--speculative-config`` that dotted flags replaced, or None), dotted (the config came from
    ``--speculative-config.KEY`` flags), env (the ``NAME=value`` words before the command, as
    a shell sets them for it: ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve ...``)."""

    model: str | None
    speculative_config: str | None
    settings: dict = field(default_factory=dict)
    vllm: str = ""
    replaced: str | None = None
    dotted: bool = False
    env: dict = field(default_factory=dict)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ServeLineError(f"vllm serve: error: {message}")


def human_readable_int(text: str) -> int:
    """vLLM's own: '1k' = 1000, '1K' = 1024, '25.6k' = 25600, else ``int(text)``."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text.strip())
    if not m:
        return int(text)
    number, suffix = m.groups()
    if suffix.islower():
        try:
            return int(float(number) * 10 ** (3 * "kmgt".index(suffix) + 3))
        except OverflowError:  # argparse passes it on: vLLM's parser crashes on this value
            raise argparse.ArgumentTypeError(f"{number_text(text)} is too large (vLLM's parser "
                                             "crashes with OverflowError on it)") from None
    if "." in number:
        raise argparse.ArgumentTypeError(f"Decimals are not allowed with binary suffixes like "
                                         f"{suffix}. Did you mean to use {m[0].lower()} instead?")
    return int(number) * 2 ** (10 * "KMGT".index(suffix) + 10)


def _too_large(parser, given: dict) -> None:
    """Raise ServeLineError naming the first integer flag whose value is above
    :data:`MAX_EXACT_INT` in size (``--max-num-seqs 999...``): vLLM's parser takes any int, but
    specnb's float64 arithmetic cannot (trial 6, T6-T2 and T6-T3)."""
    for dest, value in given.items():
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_EXACT_INT:
            flag = next(("/".join(sorted(a.option_strings, key=lambda o: o[:2] != "--"))
                         for a in parser._actions if a.dest == dest and a.option_strings),
                        "--" + dest.replace("_", "-"))
            raise ServeLineError(f"{flag} {number_text(value)}: too large; specnb reads integer "
                                 f"flags up to 2**53 = {MAX_EXACT_INT} (a float64 holds no "
                                 "larger whole number exactly), far above any real setting")


def _loads(text):
    try:
        return json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"Value {text} cannot be converted to <function loads>."
                                         ) from None


def human_readable_int_or_auto(text: str) -> int:  # argparse's messages name it
    return -1 if text.strip().lower() in ("auto", "-1") else human_readable_int(text)


_TYPES = {"int": int, "float": float, "json": _loads, "human_int": human_readable_int,
          "human_int_or_auto": human_readable_int_or_auto}


class _Switch(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, option_string not in self.const)


@lru_cache(maxsize=None)
def _parser(version: str, api_server=False) -> tuple[argparse.ArgumentParser, str]:
    """The release's ``vllm serve`` parser, or (``api_server``) :data:`API_SERVER`'s."""
    table = flags_for(version)
    parser = _Parser(prog=f"python -m {API_SERVER}" if api_server else "vllm serve",
                     add_help=False)
    if not api_server or table.get("model_tag") == "make_arg_parser":
        parser.add_argument("model_tag", nargs="?")
    by_dest: dict = {}
    for opt, f in table["flags"].items():
        by_dest.setdefault((f["dest"], f["kind"]), []).append((opt, f))
    for (dest, kind), opts in by_dest.items():
        names = [o for o, _ in opts]
        f = opts[0][1]
        if kind in ("EnableDisableAction", "bool_optional"):
            parser.add_argument(*names, dest=dest, nargs=0, action=_Switch,
                                const={o for o, g in opts if g.get("negative")}, default=None)
        elif kind in ("store_true", "store_false"):
            parser.add_argument(*names, dest=dest, action=kind, default=None)
        else:
            nargs = f.get("nargs") if f.get("nargs") not in (None, 0) else None
            parser.add_argument(*names, dest=dest, type=_TYPES.get(f["type"], str),
                                choices=f.get("choices"), nargs=nargs, default=None)
    return parser, table["vllm"]


def _update(original: dict, update: dict) -> None:
    """vLLM's ``recursive_dict_update``: dicts merge, lists concatenate, the rest replaces."""
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(original.get(k), dict):
            _update(original[k], v)
        elif isinstance(v, list) and isinstance(original.get(k), list):
            original[k] += v
        else:
            original[k] = v


def _flexible(args: list[str]) -> tuple[list[str], set]:
    """``FlexibleArgumentParser.parse_args``'s rewriting (and the flags dotted ones gave)."""
    out = []
    for a in args:
        if a.startswith("--"):
            key, eq, value = a.partition("=")
            out.append(re.sub(r"(?<=--)[^.]*", lambda m: m.group(0).replace("_", "-"), key,
                              count=1) + eq + value)
        elif a.startswith("-O") and a != "-O":
            out += ["--optimization-level", a[3:] if a[2:3] == "=" else a[2:]]
        else:
            out.append(a)
    merged: dict = {}
    rest, skip = [], False
    for i, a in enumerate(out):
        if skip:
            skip = False
            continue
        name = a.split("=", 1)[0]
        if not (a.startswith("-") and "." in name):
            rest.append(a)
            continue
        if "=" in a:
            value = a.split("=", 1)[1]
        elif i + 1 < len(out):
            value, skip = out[i + 1], True
        else:
            raise ServeLineError(f"vllm serve: error: {a} needs a value (vLLM's parser "
                                 "crashes with IndexError on this line)")
        if name.endswith("+"):
            name, value = name[:-1], json.dumps(value.split(","))
        key, *keys = name.split(".")
        try:
            parsed = json.loads(value)
        except ValueError:
            try:
                parsed = human_readable_int(value)
            except (ValueError, argparse.ArgumentTypeError):
                parsed = value
        for k in reversed(keys):  # vLLM's create_nested_dict, then recursive_dict_update
            parsed = {k: parsed}
        _update(merged.setdefault(key, {}), parsed)
    for key, value in merged.items():
        rest += [key, json.dumps(value)]
    return rest, set(merged)


API_SERVER = "vllm.entrypoints.openai.api_server"


#: A shell's variable assignment word (``NAME=value`` before a command sets it for that run).
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _words(line) -> tuple[list[str], bool, dict]:
    """(the words after the command, whether it is ``python -m`` :data:`API_SERVER`, the
    environment the line sets). Split as a POSIX shell does: a line whose first word starts
    with ``#`` is a comment (a pasted script's), leading ``NAME=value`` words (and
    ``export NAME=value`` lines before the command) are the command's environment (trial 6
    C7)."""
    if isinstance(line, (list, tuple)):
        words = [str(w) for w in line]
    elif isinstance(line, str):
        try:
            text = line.replace("\\\r\n", " ").replace("\\\n", " ")
            # a comment line (shlex's own comments would also cut a word at an inner #)
            text = "\n".join(t for t in text.split("\n") if not t.lstrip().startswith("#"))
            words = shlex.split(text)
        except ValueError as exc:
            raise ServeLineError(f"the serve line is not one a POSIX shell can split: {exc}"
                                 ) from None
    else:
        raise TypeError(f"line must be a str or a list of words, got {type(line).__name__}")
    env = {}
    while words and (words[0] in ("export", "env") or _ASSIGNMENT.match(words[0])):
        word = words.pop(0)
        if word == "env":  # env NAME=value cmd: the same environment as NAME=value cmd
            while words and words[0] in ("-i", "--ignore-environment", "--", "-u", "--unset"):
                if words.pop(0) in ("-u", "--unset") and words:
                    env.pop(words.pop(0), None)  # env -u NAME: NAME unset for the command
        elif word != "export":
            name, _, value = word.partition("=")
            env[name] = value
    if not words:
        raise ServeLineError("the serve line is empty: give 'vllm serve MODEL ...'")
    if words[0].rsplit("/", 1)[-1] in ("docker", "podman"):
        words, docker_env = _container(words)
        return words, False, {**env, **docker_env}
    _leading_command(words)
    words, api_server = _command(words)
    return words, api_server, env


#: The vLLM image (vLLM docs "Using Docker": ``docker run ... vllm/vllm-openai:latest
#: --model ...``), with an optional registry, tag or digest.
_IMAGE = re.compile(r"(?:[\w.-]+(?::\d+)?/)*vllm/vllm-openai(?::[\w.-]+)?(?:@sha256:[0-9a-f]+)?")

#: What the line must start with, for the message of a line that starts otherwise.
_STARTS = (f"'vllm serve MODEL ...', 'python -m {API_SERVER} --model MODEL ...', "
           "'env NAME=value vllm serve ...' or 'docker run ... vllm/vllm-openai[:tag] ARGS'")


def _container(words: list) -> tuple[list[str], dict]:
    """(the serve args, the ``-e`` / ``--env`` environment) of ``docker run ... IMAGE ARGS``
    (or podman's): the vllm/vllm-openai image's entrypoint is ``vllm serve`` (its
    ``docker/Dockerfile``: ``ENTRYPOINT ["vllm", "serve"]``; older images ran ``python3 -m``
    :data:`API_SERVER`, which takes the same ``--model ...`` args), so the words after the image
    are serve args. Raises ServeLineError for another docker command, no vLLM image, an
    ``--entrypoint`` that replaces ``vllm serve``, or ``vllm serve`` repeated after the image."""
    tool = words[0].rsplit("/", 1)[-1]
    if words[1:2] != ["run"]:
        raise ServeLineError(f"not a vllm serve line: '{' '.join(words[:2])}' is not "
                             f"'{tool} run ... vllm/vllm-openai ARGS'; give {_STARTS}")
    at = next((i for i, w in enumerate(words) if i > 1 and _IMAGE.fullmatch(w)), None)
    if at is None:
        raise ServeLineError(f"not a vllm serve line: '{tool} run' without the vllm/vllm-openai "
                             f"image (specnb reads that image's lines: its entrypoint is "
                             f"'vllm serve'); give {_STARTS}")
    env, opts = {}, words[2:at]
    for i, w in enumerate(opts):
        if w == "--entrypoint" or w.startswith("--entrypoint="):
            raise ServeLineError(f"'{tool} run --entrypoint' replaces the image's 'vllm "
                                 "serve': give the command it runs as the line, 'vllm serve "
                                 "MODEL ...'")
        value = (opts[i + 1] if w in ("-e", "--env") and i + 1 < len(opts) else
                 w.split("=", 1)[1] if w.startswith("--env=") else
                 w[2:] if w.startswith("-e") and len(w) > 2 else None)
        if value and _ASSIGNMENT.match(value):  # -e NAME alone takes the host's: not known
            name, _, val = value.partition("=")
            env[name] = val
    args = words[at + 1:]
    if args[:2] == ["vllm", "serve"] or (args[:1] and args[0].rsplit("/", 1)[-1] == "vllm"):
        raise ServeLineError(f"after the image, {tool} passes the words to its entrypoint "
                             "'vllm serve': this line repeats 'vllm serve', so vLLM runs "
                             "'vllm serve vllm serve ...' and its parser refuses it; give the "
                             "model and flags right after the image")
    return args, env


#: Commands that run another command (``sudo vllm serve ...``): named in the message.
_WRAPPERS = frozenset({"sudo", "nohup", "time", "exec", "uv", "uvx", "poetry", "pipenv",
                       "conda", "srun", "torchrun", "numactl", "taskset", "nice", "bash",
                       "sh"})


def _leading_command(words: list) -> None:
    """Raise ServeLineError for a line that starts with another command (``sudo vllm serve
    ...``, ``nohup vllm serve``): a word before a later ``vllm serve`` / ``python -m vllm...``,
    or a known wrapper first, which vLLM's parser would take as the model and then blame
    ``vllm serve`` for the rest (trial 7, T7-09). A bare model first (``MODEL --flag``) passes."""
    head = words[0].rsplit("/", 1)[-1]
    if head in ("vllm", "serve") or re.fullmatch(r"python[\d.]*", head) or head.startswith("-"):
        return
    later = next((i for i, w in enumerate(words) if i > 0 and (
        (w.rsplit("/", 1)[-1] == "vllm" and words[i + 1:i + 2] == ["serve"])
        or (re.fullmatch(r"python[\d.]*", w.rsplit("/", 1)[-1])
            and words[i + 1:i + 2] == ["-m"]
            and (words[i + 2] if i + 2 < len(words) else "").startswith("vllm.")))), None)
    if later is not None or head in _WRAPPERS:
        got = " ".join(words[:later]) if later is not None else head
        raise ServeLineError(f"the line must start with {_STARTS}; it starts with '{got}'"
                             + (" before the vLLM command" if later is not None else ""))


def _command(words: list) -> tuple[list[str], bool]:
    """(the words after the command, whether it is ``python -m`` :data:`API_SERVER`)."""
    head = words[0].rsplit("/", 1)[-1]
    if re.fullmatch(r"python[\d.]*", head) and words[1:3] == ["-m", "vllm.entrypoints.cli.main"]:
        words, head = ["vllm", *words[3:]], "vllm"  # the module the vllm command runs
    if re.fullmatch(r"python[\d.]*", head):
        if words[1:3] == ["-m", API_SERVER]:
            return words[3:], True
        raise ServeLineError(f"not a vllm serve line: '{' '.join(words[:3])}' does not start "
                             f"vLLM's server; give 'vllm serve MODEL ...' (or 'python -m "
                             f"{API_SERVER} --model MODEL ...')")
    if head == "vllm":
        if words[1:2] != ["serve"]:
            raise ServeLineError(f"not a vllm serve line: 'vllm {' '.join(words[1:2])}' is "
                                 "another vLLM command; give 'vllm serve MODEL ...'")
        return words[2:], False
    return (words[1:] if head == "serve" else words), False


def parse_serve_line(line, vllm_version: str | None = None) -> ServeLine:
    """Parse ``line`` (``"vllm serve MODEL --flag value ..."``, ``vllm serve`` optional, split
    as a POSIX shell does; or its words) with the flags of ``vllm_version`` (the nearest flag
    table not newer; None: the newest) -> :class:`ServeLine`.

    ``python -m vllm.entrypoints.openai.api_server`` (its parser) and ``python -m
    vllm.entrypoints.cli.main serve`` are serve lines too; so are ``env NAME=value vllm serve
    ...`` (the same environment as ``NAME=value vllm serve ...``) and ``docker run [options]
    vllm/vllm-openai[:tag] ARGS`` (the image's entrypoint is ``vllm serve``: ARGS are serve
    args; ``-e`` / ``--env NAME=value`` are the environment). No model is no error (vLLM serves
    ``--model``'s default). Raises ServeLineError (a ValueError; the parser's own line) for a
    line that cannot be split, is empty, runs another command ("not a vllm serve line"), starts
    with another command (``sudo vllm serve``: "the line must start with ..."), or
    vLLM's parser refuses (an unknown flag, a value of the wrong type, a missing value);
    TypeError for a ``line`` that is no str or list."""
    table, _ = select(vllm_version)
    words, api_server, env = _words(line)
    parser, release = _parser(table.vllm, api_server)
    args, dotted = _flexible(words)
    names = {a.split("=")[0] for a in args}
    if flags_for(release).get("served_name_needs_model") and not api_server and words[:1] and \
            words[0][:1] == "-" and "--served-model-name" in names and \
            not {"--model", "--config"} & names:  # FlexibleArgumentParser.parse_args's check
        raise ServeLineError("vllm serve: error: `model` should be provided as the first "
                             "positional argument when using `vllm serve`. i.e. `vllm serve "
                             "<model> --<arg> <value>`. (vLLM's ValueError)")
    ns = parser.parse_args(args)
    replaced = None
    if args.count("--speculative-config") > 1 or (
            "--speculative-config" in args and any(a.startswith("--speculative-config=")
                                                   for a in args)):
        first = next(i for i, a in enumerate(args) if a.startswith("--speculative-config"))
        replaced = args[first].partition("=")[2] or args[first + 1]
    given = {k: v for k, v in vars(ns).items() if v is not None}
    _too_large(parser, given)
    spec = given.pop("speculative_config", None)
    model = given.pop("model_tag", None) or given.get("model")
    if spec is not None and not isinstance(spec, str):  # a str: a flag of type str (0.8.x)
        spec = json.dumps(spec)
    return ServeLine(model, spec, given, release,
                     replaced, bool({"--speculative-config", "-sc"} & dotted), env)


def _ngram_fix():
    """The config a line without one is told to add: n-gram with the prompt_lookup_min / max
    that plan's lines carry (:data:`specnb.vllm.NGRAM_OPTIONS`), so that pasting it draws no
    prompt_lookup warning (T6-C1)."""
    from .config import NGRAM_OPTIONS

    return {"method": "ngram", "num_speculative_tokens": 4, **NGRAM_OPTIONS}


def check_serve_line(line, vllm_version=None, draft_config=None, target_config=None):
    """(:func:`parse_serve_line`'s :class:`ServeLine`, :func:`~specnb.vllm.check_speculative_config`
    of its config with the line's settings: the target and serve-line rules too). The draft's
    config.json comes from ``draft_config`` or a local ``model`` path in the config, the
    target's from ``target_config`` or a local model path in the line; a line without
    ``--speculative-config`` gives one ``no-speculative-config`` warning. Raises what
    :func:`parse_serve_line` and the check raise."""
    from pathlib import Path

    from .check import check_speculative_config

    parsed = parse_serve_line(line, vllm_version)
    flags = flags_for(parsed.vllm)["flags"]
    first = list(_line_findings(parsed, select(vllm_version)[0].vllm, flags))
    if target_config is None and parsed.model and (Path(parsed.model) / "config.json").is_file():
        target_config = parsed.model
    v0 = parsed.settings.get("speculative_model")
    if parsed.speculative_config is None:
        first.append(Finding("note", None, f"the line turns speculative decoding on with the "
                             f"V0 flags (--speculative-model {v0} ...), which vLLM "
                             f"{parsed.vllm} takes; specnb checks only --speculative-config",
                             "check the same settings as --speculative-config JSON (vLLM 0.8.2 "
                             "and newer)", code="v0-speculative-flags") if v0 else Finding(
            "warning", None, "the line has no --speculative-config: speculative decoding is "
            "off", "add --speculative-config '" + json.dumps(_ngram_fix()) + "' (or run specnb "
            "plan for the method)", code="no-speculative-config"))
        return parsed, ConfigCheck(tuple(first), None, vllm_version)
    settings = {"served_model": parsed.model, **parsed.settings}  # the target rules run
    tp, mml = settings.pop("tensor_parallel_size", None), settings.pop("max_model_len", None)
    check = check_speculative_config(parsed.speculative_config, vllm_version, draft_config,
                                     target_config, tp if isinstance(tp, int) and tp >= 1 else
                                     None, mml if mml and mml > 0 else None,
                                     serve=settings, env=parsed.env)
    found = check.findings
    if parsed.dotted:  # no line and column in a JSON text the user never wrote
        found = tuple(replace(f, line=None, column=None, key=None if f.key is None else
                              f"--speculative-config.{f.key}") for f in found)
    if parsed.replaced is not None and parsed.dotted:
        first.append(Finding(
            "warning", None, f"the line gives --speculative-config {parsed.replaced} and dotted "
            "--speculative-config.KEY flags: vLLM merges the dotted ones into a second "
            "--speculative-config, which replaces the first, so vLLM runs "
            f"{parsed.speculative_config}", "give every key one way: all in the JSON, or all "
            "as dotted flags", code="dotted-flags-replace-json"))
    elif parsed.replaced is not None:
        first.append(Finding(
            "warning", None, f"the line gives --speculative-config more than once: vLLM's "
            f"parser keeps the last value, so {parsed.replaced} is dropped and vLLM runs "
            f"{parsed.speculative_config}", "give --speculative-config once",
            code="speculative-config-twice"))
    return parsed, ConfigCheck(tuple(first) + found, check.config, check.vllm_version)


def _line_findings(parsed: ServeLine, release: str, flags: dict):
    """The line's own findings: flags from another release, no model, a name the flag lists
    but its parser leaves to the engine config (``names``: 0.33.0's ``--kv-cache-dtype``)."""
    if parsed.vllm != release:
        yield Finding("note", None, f"the line was parsed with vLLM {parsed.vllm}'s serve flags "
                      f"(no flag table for {release}; the nearest older one, else the oldest)",
                      "", code="flags-from-other-release")
    if parsed.model is None:
        default = (flags.get("--model") or {}).get("default")
        yield Finding("warning", None, "the line names no model: vLLM's parser takes that and "
                      f"serves --model's default ({default}), not your model", "give the model "
                      "first: vllm serve MODEL ...", code="no-model")
    s = parsed.settings  # bounds: vllm/config/model.py:249 (ge=-1), config/scheduler.py:48,62
    for dest, low in (("max_model_len", -1), ("max_num_seqs", 1), ("max_num_batched_tokens", 1),
                      ("max_num_scheduled_tokens", 1),  # config/scheduler.py:55 (ge=1)
                      ("tensor_parallel_size", 1)):  # config/parallel.py:142 (ge=1)
        if isinstance(s.get(dest), int) and s[dest] < low:  # (ge=1), scheduler.py:331
            yield Finding("error", None, f"--{dest.replace('_', '-')} {s[dest]}: vLLM's "
                          f"config needs {dest} >= {low}", f"give {low} or more",
                          code=f"serve-{dest.replace('_', '-')}-range")
    gmu = s.get("gpu_memory_utilization")  # config/cache.py:215: Field(gt=0, le=1)
    if isinstance(gmu, (int, float)) and not 0 < gmu <= 1:
        yield Finding("error", None, f"--gpu-memory-utilization {gmu:g}: vLLM's CacheConfig "
                      "needs gpu_memory_utilization in (0, 1] (a share of each GPU's memory)",
                      "give a share such as 0.9", code="serve-gpu-memory-utilization-range")
    tokens, seqs = s.get("max_num_batched_tokens"), s.get("max_num_seqs")
    if isinstance(tokens, int) and isinstance(seqs, int) and 1 <= tokens < seqs:
        yield Finding("error", None, f"--max-num-batched-tokens {s['max_num_batched_tokens']} "
                      f"< --max-num-seqs {s['max_num_seqs']}: vLLM's SchedulerConfig refuses it",
                      "give --max-num-batched-tokens >= --max-num-seqs",
                      code="serve-batched-tokens-below-seqs")
    for dest, names in (("kv_cache_dtype", (flags.get("--kv-cache-dtype") or {}).get("names")),
                        ("quantization", select(release)[0].quantization_methods)):
        value, flag = parsed.settings.get(dest), "--" + dest.replace("_", "-")
        if names and isinstance(value, str) and value not in (*names, "", "None"):  # optional_type
            yield Finding("error", None, f"{flag} {value}: not one of vLLM {release}'s names; "
                          "its parser takes any name here, the engine config refuses it at "
                          f"start", f"use one of {', '.join(names[:10])}" + (
                              ", ..." if len(names) > 10 else ""),
                          code=f"serve-unknown-{flag[2:]}")
