"""Benchmarks say whether each speed target was met (make bench lists the misses)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _goals import MISSED, goal_line  # noqa: E402


def test_goal_line_says_met_or_missed():
    assert goal_line("grid", 40.0, 50, "ms").endswith("(target < 50 ms): met")
    missed = goal_line("grid", 134.9, 50, "ms")
    assert missed.endswith(f"(target < 50 ms): {MISSED} (2.7 times the target)")
    assert goal_line("nb", 60.0, 60, "s", at_most=True).endswith("(target <= 60 s): met")
    assert MISSED in goal_line("nb", 60.0, 60, "s")


def test_every_printed_target_goes_through_goal_line():
    """No benchmark prints a bare '(target ...)' that stays silent when it misses."""
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        text = path.read_text(encoding="utf-8")
        bare = [line for line in text.splitlines()
                if re.search(r"print\(.*\(target", line) and "goal_line" not in line]
        assert not bare, f"{path.name}: {bare}"


def test_make_bench_lists_the_misses_and_exits_0_unless_strict(tmp_path):
    """The bench recipe, run by make with a stand-in interpreter whose benchmark misses."""
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "bench_x.py").write_text("")
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'grid  134.9 ms  (target < 50 ms): MISSED (2.7 times the target)'\n")
    fake.chmod(0o755)
    recipe = (ROOT / "Makefile").read_text().split("\nbench: install\n")[1].split("\n\n")[0]
    mk = tmp_path / "Makefile"
    mk.write_text(f"BIN := {tmp_path}\nBENCHES ?= $(wildcard benchmarks/bench_*.py)\n"
                  f"bench:\n{recipe}\n".replace("$(BIN)/python", str(fake)))
    ok = subprocess.run(["make", "-s", "-C", str(tmp_path), "bench"], capture_output=True, text=True)
    assert ok.returncode == 0 and "1 speed target(s) MISSED" in ok.stdout
    strict = subprocess.run(["make", "-s", "-C", str(tmp_path), "bench", "BENCH_STRICT=1"],
                            capture_output=True, text=True)
    assert strict.returncode != 0
