"""The large-input benchmark prints wall time and peak memory for a scrape and a log, and
reads back exactly the counts it wrote (a small size here; `make bench` runs 200 MB)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_metrics_large_prints_time_memory_and_the_right_numbers():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_metrics_large.py"),
                          "--mb", "2"], capture_output=True, text=True, timeout=300,
                         cwd=ROOT).stdout
    for kind in ("scrape", "log", "spec-log", "series"):
        assert re.search(rf"^{kind}: .* s, peak RSS [\d,]+ MB; .*: right$", out, re.M), out
        assert re.search(rf"^{kind} 2 MB, wall .*\(target < 30 s\): (met|MISSED)", out, re.M)
        assert re.search(rf"^{kind} 2 MB, peak RSS .*\(target < 500 MB\): met", out, re.M)


def test_generated_files_hold_the_counts_they_claim(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_metrics_large import write_log, write_scrape, write_series, write_spec_log

    from specnb.vllm import read_acceptance

    for write in (write_scrape, write_log, write_spec_log, write_series):
        path = tmp_path / write.__name__
        expect = write(path, 0.05)
        stats = read_acceptance(path.read_text()).stats
        assert (stats.counts.drafts, stats.counts.accepted_tokens) == \
            (expect["drafts"], expect["accepted"])
        assert round(stats.mean_acceptance_length, 2) == expect["tau"]
