"""specnb.cli: one entry point; registering every subcommand loads no heavy library."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from specnb.cli import COMMAND_MODULES, Parser, build_parser, main


def test_every_command_module_registers():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps them here
    assert {"run", "measure", "config", "metrics", "bench", "plan", "replay",
            "simulate"} <= set(commands)
    assert COMMAND_MODULES == ["specnb.cli.run", "specnb.cli.measure", "specnb.cli.vllm",
                               "specnb.cli.plan", "specnb.cli.replay", "specnb.cli.simulate"]


def test_building_the_parser_loads_no_torch_transformers_papermill_or_matplotlib():
    code = ("import sys, specnb.cli; specnb.cli.build_parser(); "
            "heavy = {'torch', 'transformers', 'papermill', 'matplotlib'}; "
            "sys.exit(1 if heavy & {m.split('.')[0] for m in sys.modules} else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# K2's kind: every subcommand's argparse error (type, choice, unknown flag) is one line
# naming the flag, exit 2, no usage dump: the parser class, walked over every subparser.


def _subparsers(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _subparsers(sub, (*path, name))


def test_every_subparser_is_the_one_line_parser():
    subs = list(_subparsers(build_parser()))
    assert subs and all(isinstance(p, Parser) for _, p in subs), \
        [n for n, p in subs if not isinstance(p, Parser)]


@pytest.mark.parametrize("argv", [("plan", "--gamma", "2.5"), ("replay", "--method", "medusa"),
                                  ("config", "check", "--no-such-flag"), ("--no-such-flag",)])
def test_usage_errors_are_one_line_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "usage:" not in err
    assert argv[-2 if len(argv) > 1 and argv[-1][0] != "-" else -1] in err
