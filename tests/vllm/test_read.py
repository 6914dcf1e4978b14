"""specnb.vllm.read: one entry point for every input vLLM writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from specnb.vllm import read_acceptance


# ----------------------------------------------------------------- edge and bad input (r2)
from tests.vllm_support import CASES, FIELD, SCRAPE as _SCRAPE, field  # noqa: F401


def test_a_log_that_also_holds_a_scrape_or_printout_says_which_part_it_read():
    from specnb.vllm import read_acceptance

    line = ("INFO [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 2.50, "
            "Accepted: 150 tokens, Drafted: 300 tokens, Per-position acceptance rate: 0.700, "
            "0.500, 0.300\n")
    scrape = _SCRAPE.format(d=100, t=300, a=150)
    header = read_acceptance(scrape + line).header
    assert any("also holds a /metrics scrape" in h for h in header), header
    printout = "num_drafts: 10\nnum_draft_tokens: 30\nnum_accepted_tokens: 15\n"
    assert any("spec_decode.py printout" in h for h in read_acceptance(printout + line).header)
    assert not any("also holds" in h for h in read_acceptance(line).header)


# --------------------------------------------------------------------------- offline printout
def test_offline_printout_is_read_not_a_prometheus_error():
    s = read_acceptance(field("metrics_offline_printout.txt")).stats
    assert f"{100 * s.acceptance_rate:.2f}" == "36.21"   # 12208 / 33712
    assert f"{s.mean_acceptance_length:.2f}" == "3.53"   # 1 + 12208 / 4816
    assert s.num_speculative_tokens == 7                 # 33712 / 4816


# ------------------------------------------------------ streamed files (issue 26, R4)
def test_streamed_log_and_scrape_read_as_the_whole_text(tmp_path):
    from specnb._stream import scan
    from specnb.vllm import read_acceptance
    from specnb.vllm.read import MARKERS, read_acceptance_scans

    log = (CASES / "vllm" / "0.33.0" / "spec_decode.log").read_text()
    noisy = "\n".join(f"INFO request {i}\n{line}" for i, line in enumerate(log.splitlines()))
    path = tmp_path / "server.log"
    path.write_text(noisy)
    whole = read_acceptance(noisy)
    streamed = read_acceptance_scans([scan(path, MARKERS, block=64)])
    assert streamed.stats.counts == whole.stats.counts
    assert streamed.stats.per_position == pytest.approx(whole.stats.per_position)
    assert streamed.header == whole.header
    prom = tmp_path / "big.prom"
    scrape = _SCRAPE.format(d=10, t=30, a=12)
    filler = "".join(f'vllm:other_total{{id="{i}"}} {i}.0\n' for i in range(200))
    prom.write_text(filler + scrape)
    read = read_acceptance_scans([scan(prom, MARKERS)])
    assert read.stats.counts == read_acceptance(filler + scrape).stats.counts
    assert not any(h.startswith("warning:") for h in read.header)


def test_a_scrape_larger_than_a_scrape_usually_is_is_warned_with_its_size(tmp_path, monkeypatch):
    from specnb._stream import scan
    from specnb.vllm import read as R

    prom = tmp_path / "big.prom"
    prom.write_text("x_total 1.0\n" * 1000 + _SCRAPE.format(d=10, t=30, a=12))
    monkeypatch.setattr(R, "LARGE_SCRAPE", 1000)
    warn = [h for h in R.read_acceptance_scans([scan(prom, R.MARKERS)]).header
            if h.startswith("warning:")]
    assert len(warn) == 1 and f"{prom.stat().st_size / 1e6:,.1f} MB" in warn[0]
