"""The README's and the docs pages' command lines run as written: every
``specnb config|metrics|bench|plan|replay|simulate`` line of their bash blocks (a fast subcommand, run
in-process) exits 0. Lines with a placeholder
(``...``, ``<...>``, ``my_*``) are left out; ``run`` and ``measure`` are exercised by their own
tests (they execute notebooks and models)."""

import re
import shlex
from pathlib import Path

import pytest

from specnb import cli

ROOT = Path(__file__).resolve().parent.parent
FAST = {"config", "metrics", "bench", "plan", "replay", "simulate"}


# The README and the hand-written docs pages (docs/api/ is generated: no bash blocks).
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _command_lines():
    text = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    lines = []
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)  # continuation lines
        for line in joined.splitlines():
            line = line.strip()
            if not line.startswith((".venv/bin/specnb ", "specnb ")):
                continue
            args = shlex.split(line, comments=True)[1:]
            if args and args[0] in FAST and not any(
                    a == "..." or re.search(r"<[^>]*>|\bmy_", a) for a in args):
                lines.append(args)
    return lines


LINES = _command_lines()


def test_the_readme_has_such_lines():
    assert len(LINES) >= 10


@pytest.mark.parametrize("args", LINES, ids=[" ".join(a)[:60] for a in LINES])
def test_readme_command_runs_as_written(args, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    code = cli.main(args)
    err = capsys.readouterr().err
    assert code == 0, f"specnb {' '.join(args)} -> exit {code}: {err[-400:]}"
