"""The ``specnb`` command line: one entry point, one subcommand per capability (flags and
printing only; the work is in the library).

Each capability module (:mod:`specnb.cli.run`, :mod:`specnb.cli.measure`,
:mod:`specnb.cli.vllm`, :mod:`specnb.cli.plan`) exposes ``register(subparsers)``, which adds
its subcommand(s) and sets ``func`` on the parser to a callable ``func(args) -> int`` (the exit
status). Modules are imported here only to register; heavy dependencies (torch, transformers,
papermill, matplotlib) are imported inside the command functions.

One exit-status rule for every command (:data:`EXIT_STATUS`, printed by ``specnb --help``): 0
answered, 1 the answer is no, 2 bad input, 3 the measure extra missing. A command turns a
library error into its one line with :func:`refuse`: the flag named through the one table
:data:`FLAGS` (library parameter -> flag) when the error carries ``param``
(:mod:`specnb._check`'s errors do), exit 2. Commands check what they can before their heavy
imports: the library's own checks in light modules (:mod:`specnb.limits`,
:mod:`specnb.theory`), the notebook names before papermill.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import re
import sys

from .._numbers import MAX_EXACT_INT, number_text

# Modules that add subcommands, in the order they appear in ``specnb --help``.
COMMAND_MODULES = [
    "specnb.cli.run",      # specnb run
    "specnb.cli.measure",  # specnb measure
    "specnb.cli.vllm",     # specnb config / metrics / bench
    "specnb.cli.plan",     # specnb plan
    "specnb.cli.replay",   # specnb replay
    "specnb.cli.simulate", # specnb simulate
]


def positive_int(text: str) -> int:
    """argparse ``type=`` for options that take a positive integer (counts, seconds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    if value > MAX_EXACT_INT:  # not exact in float64, which the formulas use
        raise argparse.ArgumentTypeError(f"must be at most 2**53 = {MAX_EXACT_INT}, got "
                                         f"{number_text(value)}")
    return value


def listed_twice(*flags) -> str | None:
    """The one rule for a multi-value flag that lists a value twice (``plan``, ``simulate``,
    ``replay``, ``measure``): ``flags`` are ``(flag, values)`` pairs; returns the message for
    the first flag with a repeated value, else None. Its sibling for a flag given twice
    (``--gamma 3 --gamma 4``) is in the one parser class, :class:`Parser`."""
    for flag, values in flags:
        values = list(values or [])
        if len(set(values)) != len(values):
            return f"{flag} lists a value twice: {' '.join(map(str, values))}"
    return None


def too_large(*flags) -> str | None:
    """The one rule for an integer flag's value above 2**53 in size (a 400-digit
    ``--num-prompts``; trial 6): ``flags`` are ``(flag, value or values)`` pairs; returns the
    message for the first such value (shown by its length), else None. float64 holds no larger
    whole number exactly, and the formulas and draws are float64 (an OverflowError deep in
    them otherwise). ``plan`` and ``simulate`` run it first; :func:`positive_int` has the
    same bound."""
    for flag, values in flags:
        for v in values if isinstance(values, (list, tuple)) else [values]:
            if isinstance(v, int) and abs(v) > MAX_EXACT_INT:
                return (f"{flag} must be at most 2**53 = {MAX_EXACT_INT}, got "
                        f"{number_text(v)}: too large")
    return None


def light_checks(args) -> None:
    """The library's own checks (:mod:`specnb.limits`: no serving model, no pandas) of the
    load and memory flags a command has (``--routing-skew``, ``--request-rate``,
    ``--proposal-rate``, ``--gpu-memory-utilization``), run before the heavy imports by
    ``plan`` and ``simulate``. Raises their ValueError / TypeError."""
    from .. import limits

    for name in ("routing_skew", "request_rate", "proposal_rate"):
        if getattr(args, name, None) is not None:
            getattr(limits, name)(getattr(args, name))
    if getattr(args, "gpu_memory_utilization", None) is not None:  # None: the engine's own
        limits.gpu_memory_utilization(args.gpu_memory_utilization)


#: The exit status of every command, one rule (``specnb --help`` ends with :data:`EXIT_STATUS`;
#: each command's description says which apply to it). 0: answered.
EXIT_OK = 0
#: The answer is no: vLLM would reject the config (``config check``, ``config build``), a
#: notebook failed (``run``).
EXIT_NO = 1
#: Bad input, so no answer: a flag's value, or a file that cannot be read (missing, a folder,
#: no permission) or holds no usable data (empty, not UTF-8, not the format asked for, a wrong
#: value in it); one line on stderr naming the flag or the file (:func:`refuse`).
EXIT_BAD_INPUT = 2
#: The measure extra (torch, transformers) is not installed (``measure``, ``replay`` of a model).
EXIT_NO_EXTRA = 3
EXIT_STATUS = ("exit status (every command): 0 answered; 1 the answer is no (config check / "
               "build: vLLM would reject the config; run: a notebook failed); 2 bad input, one "
               "line naming the flag or file: a flag's value, or a file that cannot be read "
               "(missing, a folder, no permission) or holds no usable data (empty, not UTF-8, "
               "not the format asked for, a wrong value in it); 3 the measure extra is not "
               "installed; 130 interrupted; 141 the reader of the output left")

#: Library parameter names (as :mod:`specnb._check`'s errors carry them in ``param``) -> the
#: flag that sets them: the one table by which every command names its own flag in a library
#: error (:func:`message`).
FLAGS = {
    "gpu": "--gpu", "model": "--model", "draft": "--draft", "engine": "--engine",
    "steps": "--gamma", "alpha": "--alpha", "tau": "--tau", "gamma": "--gamma", "gammas": "--gamma",
    "acceptance_rates": "--acceptance-rates", "proposal_rate": "--proposal-rate",
    "routing_skew": "--routing-skew", "topk": "--topk", "num_draft_tokens": "--num-draft-tokens",
    "dtype": "--dtype", "draft_dtype": "--draft-dtype", "kv_dtype": "--kv-cache-dtype",
    "draft_config": "--draft-config", "target_config": "--target-config",
    "gpu_memory_utilization": "--gpu-memory-utilization", "gpus": "--gpus",
    "contexts": "--context", "context": "--context", "batch_sizes": "--batch",
    "draft_kv_budget": "--draft-kv-budget", "input_len": "--input-len",
    "output_len": "--output-len", "num_prompts": "--num-prompts", "concurrency": "--concurrency",
    "request_rate": "--request-rate", "burstiness": "--burstiness",
    "range_ratio": "--range-ratio", "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "prefix_cache_hit_rate": "--prefix-cache-hit-rate", "max_batch": "--disable-by-batch-size",
    "seed": "--seed", "cell_timeout": "--cell-timeout", "context_edges": "--context-buckets",
    "max_model_len": "--max-model-len", "suffix_backend": "--suffix-backend",
    "prompt_lookup_min": "--prompt-lookup-min", "prompt_lookup_max": "--prompt-lookup-max",
    "suffix_decoding_max_tree_depth": "--suffix-decoding-max-tree-depth",
    "suffix_decoding_max_spec_factor": "--suffix-decoding-max-spec-factor",
    "suffix_decoding_min_token_prob": "--suffix-decoding-min-token-prob",
    "suffix_decoding_max_cached_requests": "--suffix-decoding-max-cached-requests",
    "workers": "--workers", "draft_cost": "--draft-cost", "tolerance": "--tolerance",
    "num_speculative_tokens": "-k",
}


def message(exc: BaseException, names=()) -> str:
    """One line for a library error, in the command line's words: the message's first line;
    when the error carries the parameter it checked (``param``, as :mod:`specnb._check`'s do)
    and :data:`FLAGS` has its flag, the message starts with the flag instead (``--alpha must be
    in [0, 1] ...``). ``names``: parameter names to replace by their flags anywhere in the
    message too (for a command's errors that do not carry ``param``). An OSError with a file
    name is ``FILE: why`` (``data.csv: No such file or directory``)."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    text = (str(exc).splitlines() or [type(exc).__name__])[0]
    param = getattr(exc, "param", None)
    if param in FLAGS and text.startswith(param):
        text = FLAGS[param] + text[len(param):]
    for name in names:
        text = re.sub(rf"(?<![\w-]){re.escape(name)}(?!\w)", FLAGS[name], text)
    return text


def refuse(prog: str, exc: BaseException, names=()) -> int:
    """Print ``exc`` as one line naming the flag or file (:func:`message`) and return
    :data:`EXIT_BAD_INPUT`: how every command turns bad input into its exit status."""
    return error(prog, message(exc, names), EXIT_BAD_INPUT)


def printable(text: str) -> str:
    """``text`` with characters stdout cannot encode (e.g. undecodable bytes) escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def error(prog: str, msg: str, code: int = EXIT_BAD_INPUT) -> int:
    """Print ``specnb PROG: error: MSG`` to stderr; return ``code`` (the exit status)."""
    print(f"specnb {prog}: error: {printable(msg)}", file=sys.stderr)
    return code


#: Commands whose module is registered alone when the command line names them, so that they
#: start without the other modules' imports (numpy through specnb.memory): ``specnb config
#: check`` on one string runs in under 0.3 s (benchmarks/bench_config_check.py).
ALONE = {"config": "specnb.cli.vllm", "metrics": "specnb.cli.vllm", "bench": "specnb.cli.vllm",
         "run": "specnb.cli.run"}


#: Namespace attribute holding the options an ongoing parse has seen (removed when it ends).
_SEEN = "_specnb_options_seen"
#: argparse actions that are meant to be given more than once (``config build --set``) or
#: that end the parse (``--help``, ``--version``): not refused when repeated.
_REPEATABLE = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction,
               argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)


@functools.lru_cache(maxsize=None)
def _once(action_class: type) -> type:
    """``action_class`` that refuses to be called twice in one parse: the one rule for an
    option given twice (``--gamma 3 --gamma 4``), as :func:`listed_twice` is for a value
    listed twice (``--gamma 3 3``). Without it argparse keeps the last value without a word."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = namespace.__dict__.setdefault(_SEEN, {})
        if self.dest in seen:
            first = seen[self.dest]
            also = "" if first == option_string else f" (first as {first})"
            several = self.nargs not in (None, 0, "?")
            raise argparse.ArgumentError(
                self, f"given twice{also}; give it once" +
                      (f" (its values all go after one {option_string})" if several else ""))
        seen[self.dest] = option_string
        return action_class.__call__(self, parser, namespace, values, option_string)

    return type(f"Once{action_class.__name__}", (action_class,),
                {"__call__": __call__, "_once": True})


class Parser(argparse.ArgumentParser):
    """Every subcommand's parser (argparse's subparsers take the class of their parent): a
    usage error (a type, a choice, a missing or unknown flag) is one line naming the flag,
    ``specnb PROG: error: argument --FLAG: ...``, exit 2; no usage dump.

    An option given twice (``--gamma 3 --gamma 4``, or ``-k 3 --num-speculative-tokens 4``
    where both set one value) is such an error too: argparse would keep the last one without
    a word (trial 5 C1). Options meant to repeat (``action="append"``, as ``config build
    --set``) are not refused."""

    def parse_known_args(self, args=None, namespace=None):
        for action in self._actions:  # argument groups' too: they share the parser's list
            if action.option_strings and not isinstance(action, _REPEATABLE) and \
                    not getattr(type(action), "_once", False):
                action.__class__ = _once(type(action))
        namespace, rest = super().parse_known_args(args, namespace)
        namespace.__dict__.pop(_SEEN, None)
        return namespace, rest

    def error(self, message):
        print(f"{self.prog}: error: {printable(message)} (see {self.prog} --help)",
              file=sys.stderr)
        sys.exit(2)


def build_parser(modules=None) -> argparse.ArgumentParser:
    parser = Parser(
        prog="specnb",
        description="Should I turn on speculative decoding? Formulas, data, vLLM checks, measurement.",
        epilog=EXIT_STATUS,
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"specnb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules or COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # capability not present in this checkout
                continue
            raise
        module.register(sub)
    return parser


@functools.lru_cache(maxsize=None)
def _parser(alone: str | None) -> argparse.ArgumentParser:
    """The parser :func:`main` uses, built once per process for each module set (every
    module, or the one :data:`ALONE` names): a build takes 10-50 ms, which a process calling
    ``main`` many times (the tests) would otherwise pay on every call. Reusing it is safe:
    ``parse_args`` returns a new namespace and changes nothing in the parser. The command
    functions are bound when it is built: a test that replaces one builds its own parser."""
    return build_parser([alone] if alone else None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    first = next((a for a in argv if not a.startswith("-")), None)
    parser = _parser(ALONE.get(first))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # `specnb ... | head`: the reader left; no traceback
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141  # 128 + SIGPIPE, as shells report it
    except KeyboardInterrupt:
        print("specnb: interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
