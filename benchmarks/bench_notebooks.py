"""Headless execution time of the article notebooks (01-06) through the runner.

Target (issue 3): the six article notebooks execute in at most 60 seconds together on the
2-core development machine. Prints per-notebook seconds (kernel start included) and the total.
The measurement notebook (08) has its own budget of 3 minutes and is timed separately.
"""

import sys
import tempfile
import time

from _goals import goal_line

from specnb.runner import find_notebooks, run_notebooks

ARTICLE = [s for s in find_notebooks() if s[:2] in {"01", "02", "03", "04", "05", "06"}]


def main() -> int:
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        results = run_notebooks(ARTICLE, out, progress=False, report=False)
        total = time.perf_counter() - t0
    for r in results:
        print(f"{r.name:<28} {r.status:<6} {r.seconds:6.1f} s")
    print(goal_line(f"{'total (' + str(len(results)) + ' notebooks)':<28} {'':<6}", total, 60, "s",
                    fmt="6.1f", at_most=True))
    return 0 if all(r.status == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
