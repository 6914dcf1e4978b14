"""specnb.serving.speedup: tau sources, the speedup and its grid, crossover and paying
batches, verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb import data, theory
from specnb import serving as S


def test_tokens_per_step_sources():
    g = np.arange(1, 6)
    assert np.allclose(S.tokens_per_step(g, alpha=0.7), theory.expected_tokens_per_step(0.7, g))
    assert S.tokens_per_step(3, tau=2.5) == 2.5
    # SpecDecode-Bench GSM8K acc_eagle: P(L >= 1 + i) for i = 1..5
    r = data.load("specdecode_bench_acceptance").iloc[0]
    rates = [r[f"p_ge_{i}"] for i in range(2, 7)]
    assert S.tokens_per_step(g, acceptance_rates=rates).tolist() == pytest.approx(
        [1.716, 2.198, 2.513, 2.719, 2.853])


@pytest.mark.parametrize("kwargs, match", [
    (dict(tau=4.5), r"tau must be in \[1, gamma \+ 1\] = \[1, 4\] for gamma = 3, got 4.5"),
    (dict(tau=0.5), "tau must be in"),
    (dict(alpha=1.2), r"alpha must be in \[0, 1\]"),
    (dict(acceptance_rates=[0.8, 1.3, 0.2]), r"acceptance_rates must be in \[0, 1\].*1.3"),
    (dict(acceptance_rates=[0.5, 0.7, 0.2]), "must not increase.*0.5 then 0.7"),
    (dict(acceptance_rates=[0.5, 0.3]), "gamma 3 needs 3 acceptance rates, got 2"),
    (dict(alpha=0.5, tau=2.0), "exactly one of alpha, tau or acceptance_rates"),
    (dict(), "exactly one"),
])
def test_tokens_per_step_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        S.tokens_per_step(3, **kwargs)


def test_speedup_formula_and_grid_agree():
    st_ = S.setup("A100", "Llama-3.1-8B", "Llama-3.2-1B")
    b, s, g = 16, 4000, 3
    tau = float(S.tokens_per_step(g, alpha=0.6))
    cost = S.t_draft_ms(st_, b, s, g) + S.t_verify_ms(st_, b, s, g) + S.SD_OVERHEAD_MS
    assert S.speedup(st_, b, s, g, alpha=0.6) == pytest.approx(tau * S.t_plain_ms(st_, b, s) / cost)
    assert S.per_token_latency_ms(st_, b, s, g, alpha=0.6) == pytest.approx(cost / tau)
    grid = S.evaluate(st_, [1, 16, 256], [0, 4000], [1, 3, 5], alpha=0.6)
    assert grid.speedup.shape == (3, 2, 3)
    assert grid.speedup[1, 1, 1] == pytest.approx(S.speedup(st_, b, s, g, alpha=0.6))
    frame = grid.frame()
    assert len(frame) == 18 and set(frame["bound"]) <= {"memory", "compute"}
    best, sp = grid.best()
    i = np.argmax(grid.speedup, axis=2)
    assert np.array_equal(best, np.where(sp > 1, grid.gammas[i], 0))


def test_speculation_stops_paying_at_large_batch_and_long_context_brings_it_back():
    st_ = S.setup("H100", "Llama-3.1-8B", "eagle3")
    sp = S.speedup(st_, np.array([1, 1024])[:, None], np.array([500, 32000])[None, :], 3,
                   alpha=0.7)
    assert sp[0, 0] > 1 > sp[1, 0]  # short context: pays at batch 1, not at 1024
    assert sp[1, 1] > sp[0, 1] > 1  # long context: pays more at 1024 (MagicDec's finding)
    cross = S.crossover_batch(st_, [500, 32000], [3], max_batch=1024, alpha=0.7)
    assert 1 < cross[0] < 1024 and cross[1] == 1024
    assert S.crossover_batch(st_, 500, [1, 2, 3], max_batch=64, tau=1.0) == 0


def test_paying_batches_finds_speculation_that_pays_only_from_a_larger_batch():
    # MagicDec's setting (8x A100, TinyLlama draft with a 512-token KV, context 16000): it loses
    # at batch 1, where crossover_batch stops (0), and pays from a few sequences on
    st_ = S.setup("A100", "LLaMA-2-7B-32K", "TinyLlama-1.1B", gpus=8, draft_kv_budget=512)
    assert S.crossover_batch(st_, 16000, [2], max_batch=64, tau=2.17) == 0
    ranges = S.paying_batches(st_, 16000, [2], max_batch=64, tau=2.17)
    sp = S.evaluate(st_, np.arange(1, 65), [16000], [2], tau=2.17).speedup[:, 0, 0]
    pays = np.flatnonzero(sp > 1) + 1
    assert ranges == [[int(pays[0]), 64]] and pays[0] > 1 and pays.size == 65 - pays[0]
    assert S.describe_paying(ranges, 64) == (f"does not pay at batch 1-{pays[0] - 1}; pays at "
                                              f"batch {pays[0]}-64")
    # one list per context; agrees with crossover_batch where the run starts at batch 1
    st2 = S.setup("H100", "Llama-3.1-8B", "eagle3")
    both = S.paying_batches(st2, [500, 32000], [3], max_batch=1024, alpha=0.7)
    cross = S.crossover_batch(st2, [500, 32000], [3], max_batch=1024, alpha=0.7)
    assert both[0][0] == [1, int(cross[0])] and both[1] == [[1, 1024]]
    assert S.describe_paying(both[0][:1], 1024) == (f"pays up to batch {cross[0]}, not at "
                                                    f"{cross[0] + 1}")
    assert S.describe_paying([[1, 1024]], 1024) == "pays at every batch size up to 1024"
    assert S.describe_paying([], 8) == "does not pay at any batch size up to 8"
    assert S.describe_paying([[2, 3], [6, 6]], 8) == ("does not pay at batch 1, 4-5, 7-8; pays "
                                                      "at batch 2-3, 6")


def test_verdict():
    assert S.verdict(1.2) == "pays" and S.verdict(1.0) == "does not pay"
    assert S.verdict(1.02, tolerance=0.05) == "break-even"
    assert list(S.verdict(np.array([0.9, 1.1]))) == ["does not pay", "pays"]


@settings(max_examples=30, deadline=None)
@given(b=st.integers(1, 1024), s=st.integers(0, 64_000), g=st.integers(1, 8),
       a=st.floats(0.0, 0.95), draft=st.sampled_from(["ngram", "eagle3", "Llama-3.2-1B", "self"]))
def test_speedup_properties(b, s, g, a, draft):
    st_ = S.setup("H100", "Llama-3.1-8B", draft)
    # nothing accepted: one token per step at a higher cost, always slower
    assert S.speedup(st_, b, s, g, tau=1.0) < 1
    # more acceptance never hurts
    assert S.speedup(st_, b, s, g, alpha=min(a + 0.05, 1.0)) >= S.speedup(st_, b, s, g, alpha=a)
    # per-token latency with speculation = plain step / speedup
    assert S.per_token_latency_ms(st_, b, s, g, alpha=a) == pytest.approx(
        S.t_plain_ms(st_, b, s) / S.speedup(st_, b, s, g, alpha=a))
