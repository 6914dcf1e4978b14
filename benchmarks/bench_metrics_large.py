"""`specnb metrics` on a large /metrics scrape and a large vLLM log: wall time and peak memory.

Writes, in a temporary folder, a Prometheus scrape of about MB megabytes (histograms of many
label sets, as a busy multi-model vLLM server exposes them, with the four spec-decode counters
and their per-position series at the end) and a vLLM log of the same size (request lines, with
a `SpecDecoding metrics:` line every 10th line), and the worst cases, files where every line is
one the readers keep: a log made only of `SpecDecoding metrics:` lines (`spec-log`), a scrape
made only of the spec-decode series of many label sets (`series`), and one series line over and
over (`repeated`, scrapes pasted into one file). It runs `specnb metrics` on each in its own
process, and prints the wall time, the peak resident memory of that process (``wait4``'s
``ru_maxrss``) and whether the numbers read are the ones written.

Goal (issue 26): a 200 MB scrape or log read in under 30 s and under 500 MB.

    python benchmarks/bench_metrics_large.py [--mb 200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import goal_line  # noqa: E402

GOAL_S, GOAL_MB = 30.0, 500.0
ROOT = Path(__file__).resolve().parents[1]


def write_scrape(path: Path, mb: float) -> dict:
    """A scrape of about ``mb`` MB; returns the spec-decode counts written."""
    bucket = ('vllm:e2e_request_latency_seconds_bucket{{engine="{e}",le="{le}",'
              'model_name="model-{m}"}} {v}.0\n')
    les = ("0.3", "0.5", "0.8", "1.0", "1.5", "2.0", "2.5", "5.0", "10.0", "+Inf")
    block = "".join(bucket.format(e=e, le=le, m=m, v=i * 7)
                    for m in range(20) for e in range(4) for i, le in enumerate(les))
    target = int(mb * 1e6)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency.\n"
                 "# TYPE vllm:e2e_request_latency_seconds histogram\n")
        written = 0
        while written < target:
            fh.write(block)
            written += len(block)
        fh.write("# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
                 "# TYPE vllm:spec_decode_num_drafts_total counter\n"
                 'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 1000.0\n'
                 "# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
                 'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 3000.0\n'
                 "# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
                 'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 1800.0\n'
                 "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n"
                 + "".join(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",'
                           f'model_name="m",position="{i}"}} {v}.0\n'
                           for i, v in enumerate((800, 600, 400))))
    return {"drafts": 1000, "accepted": 1800, "tau": 2.80}


def write_repeated(path: Path, mb: float) -> dict:
    """A scrape of about ``mb`` MB that is one spec-decode series line over and over (scrapes
    pasted into one file, as trial 4 gave it): not Prometheus text (a series appears once per
    exposition), so the numbers are not checked, only the time and memory of the answer."""
    line = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 1000.0\n'
    n = max(1, int(mb * 1e6) // len(line))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# TYPE vllm:spec_decode_num_drafts_total counter\n"
                 'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 3000.0\n'
                 'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 1800.0\n')
        for _ in range(n // 10000):
            fh.write(line * 10000)
        fh.write(line * (n % 10000))
    return {}


def write_series(path: Path, mb: float) -> dict:
    """A scrape of about ``mb`` MB made only of the spec-decode counters, of many label sets (one
    exposition of a server with very many engines and models, each series once): every line is
    one the reader keeps. Returns the counts written (summed over the label sets)."""
    fams = [("vllm:spec_decode_num_drafts_total", "", 10),
            ("vllm:spec_decode_num_draft_tokens_total", "", 30),
            ("vllm:spec_decode_num_accepted_tokens_total", "", 18)] + [
        ("vllm:spec_decode_num_accepted_tokens_per_pos_total", f',position="{i}"', v)
        for i, v in enumerate((8, 6, 4))]
    per_set = sum(len(f'{n}{{engine="0000000",model_name="model-00"{x}}} {v}.0\n')
                  for n, x, v in fams)
    n_sets = max(1, int(mb * 1e6) // per_set)
    with open(path, "w", encoding="utf-8") as fh:
        for i, (name, extra, value) in enumerate(fams):
            if i < 4:
                fh.write(f"# TYPE {name[:-len('_total')]} counter\n")
            for start in range(0, n_sets, 10000):
                fh.write("".join(f'{name}{{engine="{j:07d}",model_name="model-{j % 16:02d}"'
                                 f'{extra}}} {value}.0\n'
                                 for j in range(start, min(n_sets, start + 10000))))
    return {"drafts": 10 * n_sets, "accepted": 18 * n_sets, "tau": 2.80}


def write_log(path: Path, mb: float, every: int = 10) -> dict:
    """A log of about ``mb`` MB, a SpecDecoding line every ``every``-th line (1: every line);
    returns the sums of its SpecDecoding lines."""
    req = ("(APIServer pid=7) INFO 12-01 20:{mm:02d}:{ss:02d} [logger.py:43] Received request "
           "cmpl-{i:08x}: prompt: 'Summarise the following text in one paragraph', params: "
           "SamplingParams(n=1, temperature=0.0, max_tokens=256), lora_request: None.\n")
    spec = ("(EngineCore_DP0 pid=9) INFO 12-01 20:{mm:02d}:{ss:02d} [metrics.py:96] "
            "SpecDecoding metrics: Mean acceptance length: 2.80, Accepted throughput: 18.00 "
            "tokens/s, Drafted throughput: 30.00 tokens/s, Accepted: 180 tokens, Drafted: 300 "
            "tokens, Per-position acceptance rate: 0.800, 0.600, 0.400, Avg Draft acceptance "
            "rate: 60.0%\n")
    target = int(mb * 1e6)
    n_spec = written = 0
    with open(path, "w", encoding="utf-8") as fh:
        i = 0
        while written < target:
            lines = []
            for _ in range(1000):
                mm, ss = (i // 60) % 60, i % 60
                line = spec.format(mm=mm, ss=ss) if i % every == every - 1 else \
                    req.format(mm=mm, ss=ss, i=i)
                n_spec += i % every == every - 1
                lines.append(line)
                i += 1
            text = "".join(lines)
            fh.write(text)
            written += len(text)
    return {"drafts": 100 * n_spec, "accepted": 180 * n_spec, "tau": 2.80}


def write_spec_log(path: Path, mb: float) -> dict:
    """A log of about ``mb`` MB made only of SpecDecoding lines."""
    return write_log(path, mb, every=1)


def run_metrics(path: Path) -> tuple[float, float, str, int, float]:
    """(wall seconds, peak RSS MB, stdout, exit status, CPU seconds) of ``specnb metrics
    PATH`` (CPU: user + system, which a loaded machine does not stretch as it does the wall)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "specnb", "metrics", str(path)],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return (wall, usage.ru_maxrss / 1024.0, text, proc.returncode,
            usage.ru_utime + usage.ru_stime)


def _read(out: str, what: str) -> float:
    for line in out.splitlines():
        if line.strip().startswith(what):
            return float(line.split()[len(what.split())].replace(",", ""))
    return float("nan")


#: (case, writer), in the order printed: the realistic files, then those of kept lines only.
CASES = (("scrape", write_scrape), ("log", write_log), ("spec-log", write_spec_log),
         ("series", write_series), ("repeated", write_repeated))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="size of each file (default 200)")
    ap.add_argument("--only", choices=[k for k, _ in CASES], action="append",
                    help="run only this case (repeatable; default all)")
    args = ap.parse_args(argv)
    lines = []
    with tempfile.TemporaryDirectory(prefix="specnb-bench-metrics-") as tmp:
        for kind, write in CASES:
            if args.only and kind not in args.only:
                continue
            path = Path(tmp) / f"large.{'log' if 'log' in kind else 'prom'}"
            t0 = time.perf_counter()
            expect = write(path, args.mb)
            size = path.stat().st_size / 1e6
            made = time.perf_counter() - t0
            wall, rss, out, code, cpu = run_metrics(path)
            path.unlink()
            drafts = _read(out, "drafts (verification steps)")
            accepted = _read(out, "accepted tokens")
            right = (code in (0, 1, 2) if kind == "repeated" else code == 0
                     and drafts == expect["drafts"] and accepted == expect["accepted"])
            if kind == "repeated":
                print(f"{kind}: {size:,.1f} MB (written in {made:.1f} s); specnb metrics exit "
                      f"{code}, {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss:,.0f} MB; "
                      f"{out.strip()[-100:]!r}")
            else:
                print(f"{kind}: {size:,.1f} MB (written in {made:.1f} s); specnb metrics exit "
                      f"{code}, {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss:,.0f} MB; drafts "
                      f"{drafts:,.0f}, "
                      f"accepted {accepted:,.0f} (written {expect['drafts']:,}, "
                      f"{expect['accepted']:,}): {'right' if right else 'WRONG'}")
            # the goal is for 200 MB; a smaller --mb checks the script, not the goal
            lines.append(goal_line(f"{kind} {args.mb:g} MB, wall", wall, GOAL_S, "s"))
            lines.append(goal_line(f"{kind} {args.mb:g} MB, peak RSS", rss, GOAL_MB, "MB"))
            if not right:
                lines.append(f"{kind}: the numbers read are not the ones written: MISSED")
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
