"""specnb.engines.sglang: SGLang's accept len and meta_info in specnb's tau and rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specnb.engines.sglang import read_sglang_log, read_sglang_meta_info

CASES = Path(__file__).resolve().parents[1] / "cases" / "sglang"


def test_meta_info_counts_are_exact_under_every_versions_names():
    new, old = [json.loads(x) for x in (CASES / "meta_info.jsonl").read_text().splitlines()]
    got = read_sglang_meta_info([new])
    # PR #33518's request: 63 correct drafts in 43 steps, 215 proposed
    assert got.tau == pytest.approx(1 + 63 / 43)
    assert got.tau == pytest.approx(new["meta_info"]["spec_accept_length"])  # bonus included
    assert got.acceptance_rate == pytest.approx(63 / 215)
    hist = [11, 14, 11, 4, 0, 3]
    assert got.per_position == pytest.approx(
        [sum(hist[i + 1:]) / 43 for i in range(5)])
    assert got.num_speculative_tokens == 5 and got.counts["num_draft_tokens"] == 215
    both = read_sglang_meta_info([new, old])
    assert both.counts["num_drafts"] == 43 + 188
    assert both.counts["num_accepted_tokens"] == 63 + 11
    assert both.tau == pytest.approx(1 + 74 / 231)


def test_log_lines_give_tau_and_say_the_printed_rate_is_the_biased_one():
    lines = (CASES / "server.log").read_text().splitlines()
    got = read_sglang_log(lines, num_speculative_tokens=3)
    tau = (4 * 2.50 + 2 * 1.90 + 2 * 3.10) / 8  # weighted by #running-req
    assert got.tau == pytest.approx(tau)
    assert got.acceptance_rate == pytest.approx((tau - 1) / 3)
    assert any("pre-#23530" in n for n in got.notes)
    assert got.counts == {}
    assert read_sglang_log(lines).acceptance_rate != read_sglang_log(lines).acceptance_rate
    with pytest.raises(ValueError, match="exceeds gamma"):
        read_sglang_log(lines, num_speculative_tokens=1)


@pytest.mark.parametrize("bad", [[], ["Decode batch, #running-req: 1, accept len: 0.00, "]])
def test_no_speculation_is_refused(bad):
    with pytest.raises(ValueError, match="accept len"):
        read_sglang_log(bad)
    with pytest.raises(ValueError, match="spec_verify_ct"):
        read_sglang_meta_info([{"meta_info": {"spec_verify_ct": 0}}])
