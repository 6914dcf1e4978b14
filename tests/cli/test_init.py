"""specnb.cli: one entry point; registering every subcommand loads no heavy library."""

from __future__ import annotations

import subprocess
import sys

from specnb.cli import COMMAND_MODULES, build_parser


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
