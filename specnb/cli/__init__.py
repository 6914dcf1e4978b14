"""The ``specnb`` command line: one entry point, one subcommand per capability (flags and
printing only; the work is in the library).

Each capability module (:mod:`specnb.cli.run`, :mod:`specnb.cli.measure`,
:mod:`specnb.cli.vllm`, :mod:`specnb.cli.plan`) exposes ``register(subparsers)``, which adds
its subcommand(s) and sets ``func`` on the parser to a callable ``func(args) -> int`` (the exit
status). Modules are imported here only to register; heavy dependencies (torch, transformers,
papermill, matplotlib) are imported inside the command functions.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys

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
    if value > 2 ** 53:  # not exact in float64, which the formulas use
        raise argparse.ArgumentTypeError(f"must be at most 2**53 = {2 ** 53}, got {value}")
    return value


def printable(text: str) -> str:
    """``text`` with characters stdout cannot encode (e.g. undecodable bytes) escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def error(prog: str, msg: str, code: int = 2) -> int:
    """Print ``specnb PROG: error: MSG`` to stderr; return ``code`` (the exit status)."""
    print(f"specnb {prog}: error: {printable(msg)}", file=sys.stderr)
    return code


#: Commands whose module is registered alone when the command line names them, so that they
#: start without the other modules' imports (numpy through specnb.memory): ``specnb config
#: check`` on one string runs in under 0.3 s (benchmarks/bench_config_check.py).
ALONE = {"config": "specnb.cli.vllm", "metrics": "specnb.cli.vllm", "bench": "specnb.cli.vllm"}


class Parser(argparse.ArgumentParser):
    """Every subcommand's parser (argparse's subparsers take the class of their parent): a
    usage error (a type, a choice, a missing or unknown flag) is one line naming the flag,
    ``specnb PROG: error: argument --FLAG: ...``, exit 2; no usage dump."""

    def error(self, message):
        print(f"{self.prog}: error: {printable(message)} (see {self.prog} --help)",
              file=sys.stderr)
        sys.exit(2)


def build_parser(modules=None) -> argparse.ArgumentParser:
    parser = Parser(
        prog="specnb",
        description="Should I turn on speculative decoding? Formulas, data, vLLM checks, measurement.",
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
