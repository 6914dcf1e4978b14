"""specnb.vllm.read: one entry point for every input vLLM writes."""

from __future__ import annotations

from pathlib import Path

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
