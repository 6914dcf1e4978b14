"""specnb/_staging_engines/speculation.py: proposal-rate algebra, prefill, end-to-end ratio."""

import math

import numpy as np
import pytest

from specnb import serving as S
from specnb._staging_engines import speculation as X


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


def test_prefill_chunks_and_time():
    assert X.prefill_chunks(4, 1000, 8192) == 1 and X.prefill_chunks(128, 1000, 8192) == 16
    assert X.prefill_chunks(3, 0) == 0
    st = S.setup("H100", "Llama-3.1-8B", "eagle3")

    def step(b, s, q):
        return S.step_time_ms(st.target, st.gpu, b, s, q)

    p = X.prefill_time_ms(step, 128, 1000)
    # 16 chunks of 8,000 tokens at mean context 500: compute-bound, near 2 x 8e9 x 128,000 FLOP
    assert p == pytest.approx(16 * step(1, 500, 8000))
    flops = 2 * S.architecture("Llama-3.1-8B").matmul_params_per_token * 128_000
    assert p > flops / S.gpu("H100").bf16_flops * 1e3
    assert X.prefill_time_ms(step, 1, 0) == 0.0
    with pytest.raises(ValueError, match="input_len must be an integer >= 0"):
        X.prefill_time_ms(step, 1, -5)
    with pytest.raises(ValueError, match="step_ms returned nan"):
        X.prefill_time_ms(lambda b, s, q: math.nan, 1, 10)


def test_end_to_end_ratio():
    assert X.end_to_end_speedup(0.0, 100.0, 2.0) == 2.0
    assert X.end_to_end_speedup(100.0, 100.0, 2.0) == pytest.approx(200 / 150)
    assert X.end_to_end_speedup(100.0, 100.0, 2.0, 10.0) == pytest.approx(200 / 160)
    assert X.end_to_end_speedup(1e9, 1.0, 3.0) == pytest.approx(1.0)
    # a slowdown is pulled toward 1 too
    assert 0.5 < X.end_to_end_speedup(50.0, 100.0, 0.5) < 1
    with pytest.raises(ValueError, match=r"prefill_ms must be in \[0, inf\]"):
        X.end_to_end_speedup(-1.0, 100.0, 2.0)
    with pytest.raises(ValueError, match=r"decode_speedup must be in \(0, inf\]"):
        X.end_to_end_speedup(1.0, 100.0, 0.0)


def test_decode_context():
    assert X.decode_context(1000, 200) == 1100.0
    with pytest.raises(ValueError, match="output_len must be an integer >= 1"):
        X.decode_context(100, 0)
    with pytest.raises(ValueError, match="input_len must be an integer >= 0"):
        X.decode_context(-1, 10)


def test_speedup_from_times():
    assert X.speedup_from_times(2.5, 10.0, 12.5) == 2.0  # M = 1: tau T_plain / cost
    assert X.speedup_from_times(3.0, 10.0, 10.0, 0.5) == 2.0  # (1 + 0.5 x 2) x 10 / 10
    assert list(X.speedup_from_times([1.0, 2.0], 10.0, 20.0)) == [0.5, 1.0]
    with pytest.raises(ValueError, match=r"tau must be in \[1, inf\]"):
        X.speedup_from_times(0.5, 10.0, 10.0)
