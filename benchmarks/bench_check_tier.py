"""The fast tier's time: what ``make check`` runs, ``lint-imports`` then ``pytest -m "not slow" -q``.

Target (issue 15): ``make check`` under 60 s on the 2-core development machine when it is idle.
Prints the wall time of each step and of both together (the target's figure), the CPU time of
pytest and its children (user + sys: the figure that stays meaningful on a loaded machine, where
wall time stretches; on the idle machine the wall time is close to it), the tests the fast tier
runs and deselects (with ``--whole``, the whole suite's count too, from a collection), the load
average at the start, whether Python may cache bytecode (with ``PYTHONDONTWRITEBYTECODE`` set,
every module and pytest's assertion rewriting is compiled afresh each run: seconds), and the
slowest tests as pytest's ``--durations`` reports them. The line for the target ends in met or
MISSED (``_goals.goal_line``; ``make bench`` lists the misses). A failing step exits 1.

What the fast tier leaves out, and the one rule for each cut, is in tests/tier.py.

    python benchmarks/bench_check_tier.py            # from the repository root
    python benchmarks/bench_check_tier.py --whole    # also count the whole suite (a minute more)
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from _goals import goal_line

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 60.0
SLOWEST = 15


def _timed(cmd: list[str]) -> tuple[subprocess.CompletedProcess, float, float]:
    """(finished process, wall seconds, CPU seconds of it and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, wall, cpu


def _count(summary: str, word: str) -> int:
    m = re.search(rf"(\d+) {word}", summary)
    return int(m.group(1)) if m else 0


def main(argv: list[str] | None = None) -> int:
    whole = "--whole" in (sys.argv[1:] if argv is None else argv)
    lint = [str(Path(sys.executable).with_name("lint-imports"))]
    if not Path(lint[0]).exists():
        lint = [sys.executable, "-m", "importlinter.cli"]
    cmd = [sys.executable, "-m", "pytest", "-m", "not slow", "-q", f"--durations={SLOWEST}"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    linted, lint_wall, lint_cpu = _timed(lint)
    done, wall, cpu = _timed(cmd)

    out = done.stdout
    durations = re.findall(r"^(\d+\.\d+)s (call|setup|teardown)\s+(\S+.*)$", out, re.MULTILINE)
    summary = next((line for line in reversed(out.splitlines()) if re.search(r"\d+ passed", line)),
                   out.strip().splitlines()[-1] if out.strip() else "(no output)")
    ran = sum(_count(summary, w) for w in ("passed", "failed", "skipped", "xfailed", "xpassed",
                                           "error", "errors"))
    left = _count(summary, "deselected")
    print(f"command: lint-imports, then {' '.join(cmd[1:])}   (load average at start {load:.1f} "
          f"on {os.cpu_count()} cores)")
    print(f"bytecode cache: {'off (PYTHONDONTWRITEBYTECODE is set)' if sys.flags.dont_write_bytecode else 'on'}")
    print(f"pytest:  {summary.strip('= ')}")
    if whole:
        listed, _, _ = _timed([sys.executable, "-m", "pytest", "--collect-only", "-q",
                               "-p", "no:cacheprovider"])
        total = sum(1 for line in listed.stdout.splitlines() if "::" in line)
        print(f"tests:   the fast tier runs {ran} of the whole suite's {total} (make test; "
              f"{100 * ran / max(1, total):.0f} % in the fast tier)")
    else:
        print(f"tests:   the fast tier runs {ran} and deselects {left}; the whole suite (make "
              f"test) also holds the modules of slow tests only, which the fast tier does not "
              f"collect (--whole counts it)")
    print(f"slowest {len(durations)} (seconds, phase, test):")
    for seconds, phase, test in durations:
        print(f"  {float(seconds):7.2f}  {phase:<8} {test}")
    print(f"lint-imports: {lint_wall:6.1f} s wall, {lint_cpu:6.1f} s CPU")
    print(f"pytest:       {wall:6.1f} s wall, {cpu:6.1f} s CPU (user + sys, pytest and its children)")
    print(goal_line("make check's wall time (the target is for the idle 2-core machine)",
                    lint_wall + wall, TARGET_S, "s"))
    failed = 0
    for name, proc in (("lint-imports", linted), ("pytest", done)):
        if proc.returncode != 0:
            print(f"{name} exited {proc.returncode}:", proc.stdout[-3000:], proc.stderr[-2000:],
                  sep="\n", file=sys.stderr)
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
