"""specnb/serving/workload.py: proposal-rate algebra, reading M from vLLM's counters."""

import numpy as np
import pytest

from specnb import serving as S
from specnb.serving import workload as X


def test_full_proposal_rate_gives_todays_numbers():
    assert X.verified_tokens(32, 3) == 32 * 4  # B (gamma + 1)
    assert X.tokens_per_sequence_step(2.5) == 2.5
    assert X.verified_tokens(32, 3, 1.0) == X.verified_tokens(32, 3)


def test_partial_proposals():
    # M = 0.26 (GSM8K, engines.md): a step verifies B (1 + 0.26 x 4) tokens
    assert X.verified_tokens(64, 4, 0.26) == pytest.approx(64 * 2.04)
    assert X.tokens_per_sequence_step(1.8, 0.5) == pytest.approx(1.4)
    b = X.verified_tokens(np.array([1, 64, 128]), 4, 0.7)
    assert list(b) == pytest.approx([3.8, 243.2, 486.4])


@pytest.mark.parametrize("m, match", [(0, r"must be in \(0, 1\]"), (-0.1, r"must be in \(0, 1\]"),
                                      (1.01, r"must be in \(0, 1\]"), (float("nan"), "must not be NaN")])
def test_bad_proposal_rates(m, match):
    with pytest.raises(ValueError, match="proposal_rate " + match):
        X.check_proposal_rate(m)


def test_proposal_rate_from_counters():
    # 1,000 requests; 50,000 generated tokens of which 9,000 accepted drafts: 40,000 decode
    # sequence-steps, 10,000 of them with a draft
    assert X.proposal_rate_from_counters(10_000, 50_000, 9_000, 1_000) == 0.25
    with pytest.raises(ValueError, match="no decode sequence-step"):
        X.proposal_rate_from_counters(10, 100, 90, 10)
    with pytest.raises(ValueError, match="M would be above 1"):
        X.proposal_rate_from_counters(500, 400, 0, 0)
    with pytest.raises(ValueError, match="num_drafts is 0"):
        X.proposal_rate_from_counters(0, 400, 0, 0)
    assert "vllm:spec_decode_num_drafts_total" in X.PROPOSAL_RATE_HELP


def test_decode_context():
    assert X.decode_context(1000, 200) == 1100.0
    with pytest.raises(ValueError, match="output_len must be an integer >= 1"):
        X.decode_context(100, 0)
    with pytest.raises(ValueError, match="input_len must be an integer >= 0"):
        X.decode_context(-1, 10)


def test_prefill_chunks():
    assert X.prefill_chunks(4, 1000, 8192) == 1 and X.prefill_chunks(128, 1000, 8192) == 16
    assert X.prefill_chunks(3, 0) == 0


def test_verified_tokens_use_the_mean_draft_length_when_known():
    """T5-M8: B (1 + M L), L = min(mean draft length, gamma); the trial's suffix profile at
    gamma 5 (M 0.786, L 1.73) verifies 64 x 2.36 = 151 tokens at batch 64, not 315."""
    from specnb.serving import workload as W

    assert round(float(W.verified_tokens(64, 5, 0.786)), 1) == 315.5
    assert round(float(W.verified_tokens(64, 5, 0.786, mean_draft_len=1.73)), 1) == 151.0
    assert float(W.verified_tokens(8, 3, 1.0, mean_draft_len=9.0)) == 8 * 4  # at most gamma
    with pytest.raises(ValueError, match=r"mean_draft_len must be"):
        W.verified_tokens(8, 3, 1.0, mean_draft_len=0.5)
    with pytest.raises(ValueError, match="mean_draft_len applies to ngram / suffix"):
        S.setup("H100-SXM", "Llama-3.1-8B", "eagle3", mean_draft_len=2.0)
