"""The fast tier's time: ``pytest -m "not slow" -q`` (what ``make check`` runs after lint-imports).

Target (issue 15): under 60 s on the 2-core development machine when it is idle. Prints the
wall time, the CPU time of the test process and its children (user + sys: the figure that
stays meaningful on a loaded machine, where wall time stretches), the number of tests, the
load average at the start, and the slowest tests as pytest's ``--durations`` reports them.
The line for the target ends in met or MISSED (``_goals.goal_line``; ``make bench`` lists the
misses). A failing test run exits 1.

    python benchmarks/bench_check_tier.py            # from the repository root
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


def main() -> int:
    cmd = [sys.executable, "-m", "pytest", "-m", "not slow", "-q", f"--durations={SLOWEST}"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    out = done.stdout
    durations = re.findall(r"^(\d+\.\d+)s (call|setup|teardown)\s+(\S+)$", out, re.MULTILINE)
    summary = next((line for line in reversed(out.splitlines()) if re.search(r"\d+ passed", line)),
                   out.strip().splitlines()[-1] if out.strip() else "(no output)")
    print(f"command: {' '.join(cmd[1:])}   (load average at start {load:.1f} on "
          f"{os.cpu_count()} cores)")
    print(f"pytest:  {summary.strip('= ')}")
    print(f"slowest {len(durations)} (seconds, phase, test):")
    for seconds, phase, test in durations:
        print(f"  {float(seconds):7.2f}  {phase:<8} {test}")
    print(f"CPU time (user + sys, pytest and its children): {cpu:6.1f} s")
    print(goal_line("wall time (the target is for the idle 2-core machine)", wall, TARGET_S, "s"))
    if done.returncode != 0:
        print(out[-3000:], done.stderr[-2000:], sep="\n", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
