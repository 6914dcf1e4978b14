"""``specnb config check`` on one string: the CLI's process wall time and the check in process.

Target (issue 24): under 0.3 s for one string, both as a process (``specnb config check
JSON``, Python's start and every import included; the median of several runs) and in
process (``check_speculative_config`` on a fresh interpreter's first call: the imports of
``specnb.vllm`` and the first check, then the median of later calls). The strings are an
n-gram config, one with a dynamic schedule (the schedule's cost is read from data/) and one
with pydantic coercions; ``--serve`` is timed too (the release's flag table is parsed). Prints
the load average: on a loaded machine wall times stretch, so rerun on an idle one.

    python benchmarks/bench_config_check.py            # from the repository root
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _goals import goal_line

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.3
RUNS = 5
CONFIGS = {
    "ngram": '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, '
             '"prompt_lookup_max": 5}',
    "schedule": '{"method": "ngram", "num_speculative_tokens": 3, '
                '"num_speculative_tokens_per_batch_size": [[1, 8, 3], [9, 512, 1]]}',
    "coerced": '{"method": "suffix", "num_speculative_tokens": "8.0", '
               '"suffix_decoding_min_token_prob": ".5"}',
}
SERVE = ("vllm serve Qwen/Qwen3-8B --max-model-len 32k -tp 2 --speculative-config.method ngram "
         "--speculative-config.num_speculative_tokens 3")


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def process_seconds(args: list[str], runs: int = RUNS) -> tuple[float, float]:
    """Median (wall, CPU user + sys) seconds of ``python -m specnb ARGS`` (exit 0 or 1: the
    check's verdict); the CPU time stays meaningful on a loaded machine."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "specnb", *args], cwd=ROOT, env=_env(),
                              capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode not in (0, 1):
            raise RuntimeError(done.stderr)
    return statistics.median(walls), statistics.median(cpus)


def in_process_seconds(text: str) -> tuple[float, float]:
    """(first call with the imports, median of 20 later calls), in a fresh interpreter."""
    code = ("import time, statistics; t0 = time.perf_counter()\n"
            "from specnb.vllm import check_speculative_config as c\n"
            f"c({text!r}); first = time.perf_counter() - t0; ts = []\n"
            "for _ in range(20):\n"
            f"    t = time.perf_counter(); c({text!r}); ts.append(time.perf_counter() - t)\n"
            "print(first, statistics.median(ts))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(),
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> int:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average at start {load:.1f} on {os.cpu_count()} cores; {RUNS} runs each")
    worst_process = worst_first = 0.0
    for name, text in CONFIGS.items():
        proc, cpu = process_seconds(["config", "check", text])
        first, later = in_process_seconds(text)
        worst_process, worst_first = max(worst_process, proc), max(worst_first, first)
        print(f"{name:<9} process {proc:6.3f} s (CPU {cpu:5.3f} s)   in process: first call "
              f"{first:6.3f} s (imports included), later calls {1000 * later:7.3f} ms")
    serve, cpu = process_seconds(["config", "check", "--serve", SERVE])
    print(f"{'--serve':<9} process {serve:6.3f} s (CPU {cpu:5.3f} s)")
    print(goal_line("config check, one string, process wall time (worst median)", worst_process,
                    TARGET_S, "s", fmt="6.3f"))
    print(goal_line("config check, one string, in process (first call, imports included)",
                    worst_first, TARGET_S, "s", fmt="6.3f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
