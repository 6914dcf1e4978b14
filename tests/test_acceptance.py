"""specnb.acceptance: round bookkeeping, tau without i.i.d., alpha from rounds, CIs (the timing
fit: test_timing.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb import acceptance as acc
from specnb import theory
from tests.tier import examples


def test_draft_length_follows_transformers_rule():
    # min(gamma, max_new_tokens - generated - 1)
    assert acc.draft_length(0, 5, 64) == 5
    assert acc.draft_length(60, 5, 64) == 3
    assert acc.draft_length(63, 5, 64) == 0
    with pytest.raises(ValueError, match="generated"):
        acc.draft_length(64, 5, 64)
    with pytest.raises(ValueError, match="gamma"):
        acc.draft_length(0, 0, 64)


def test_greedy_rounds_all_accepted_hand_worked():
    # 10 positions, gamma 3: rounds append 4, 4, then k = min(3, 10-8-1) = 1 -> 2.
    r = acc.greedy_rounds(np.ones(10), gamma=3)
    assert r.produced.tolist() == [4, 4, 2]
    assert r.draft_len.tolist() == [3, 3, 1]
    assert r.accepted.tolist() == [3, 3, 1]
    assert not r.rejected.any()
    assert r.n_rounds == 3 and r.tau == pytest.approx(10 / 3)


def test_greedy_rounds_all_rejected_is_plain_decoding():
    r = acc.greedy_rounds(np.zeros(6), gamma=4)
    assert r.produced.tolist() == [1] * 6
    # every round examines one draft token and rejects it, except the last (no draft left)
    assert r.rejected.tolist() == [True] * 5 + [False]
    assert r.draft_len[-1] == 0


def test_greedy_rounds_mixed_pattern():
    # betas 1 1 0 1 0 0 1 1 1 1 (N=10), gamma 2
    b = [1, 1, 0, 1, 0, 0, 1, 1, 1, 1]
    r = acc.greedy_rounds(b, gamma=2)
    # i=0: accept 2 -> +3 (i=3); i=3: accept 1, reject at 4 -> +2 (i=5);
    # i=5: reject -> +1 (i=6); i=6: accept 2 -> +3 (i=9); i=9: k=0 -> +1
    assert r.produced.tolist() == [3, 2, 1, 3, 1]
    assert r.rejected.tolist() == [False, True, True, False, False]


def test_greedy_rounds_cut_by_end_of_sequence():
    # 5 tokens generated of a budget of 20 (the target emitted EOS at position 4)
    r = acc.greedy_rounds([1, 1, 1, 1, 1], gamma=3, max_new_tokens=20)
    assert r.produced.tolist() == [4, 1]
    assert r.produced.sum() == 5


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.integers(0, 1), min_size=1, max_size=40), st.integers(1, 6),
       st.integers(0, 10))
def test_expected_rounds_equals_greedy_rounds_for_binary_betas(bits, gamma, extra):
    n = len(bits)
    assert acc.expected_rounds(bits, gamma, n + extra) == pytest.approx(
        acc.greedy_rounds(bits, gamma, n + extra).n_rounds)


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.integers(0, 1), min_size=1, max_size=40), st.integers(1, 6))
def test_rounds_from_accept_lengths_round_trips(bits, gamma):
    r = acc.greedy_rounds(bits, gamma)
    back = acc.rounds_from_accept_lengths(r.produced, gamma, len(bits))
    assert back.draft_len.tolist() == r.draft_len.tolist()
    assert back.accepted.tolist() == r.accepted.tolist()
    assert back.rejected.tolist() == r.rejected.tolist()


def test_expected_rounds_matches_monte_carlo_for_fractional_betas():
    rng = np.random.default_rng(1)
    b = rng.uniform(0.2, 0.95, size=30)
    want = acc.expected_rounds(b, 3)
    sims = [acc.greedy_rounds((rng.random(30) < b).astype(float), 3).n_rounds
            for _ in range(4000)]
    se = np.std(sims) / np.sqrt(len(sims))
    assert abs(np.mean(sims) - want) < 4 * se


@pytest.mark.parametrize("alpha,gamma", [(0.3, 2), (0.6, 3), (0.8, 5)])
def test_tau_from_constant_betas_tends_to_eq1(alpha, gamma):
    # no length cap effect: a long sequence, budget far away
    tau = acc.tau_from_betas(np.full(3000, alpha), gamma, max_new_tokens=10_000)
    assert tau == pytest.approx(theory.expected_tokens_per_step(alpha, gamma), rel=2e-3)


def test_tau_from_betas_pools_sequences_as_tokens_over_rounds():
    a, b = np.ones(8), np.zeros(4)
    want = 12 / (acc.expected_rounds(a, 2) + acc.expected_rounds(b, 2))
    assert acc.tau_from_betas([a, b], 2) == pytest.approx(want)


def test_tau_from_betas_keeps_order_unlike_iid():
    # same mean beta 0.5, same Eq. 1 value, different taus:
    clustered = np.array([1.0] * 20 + [0.0] * 20)   # 4 rounds of 5, then 20 rounds of 1
    alternating = np.array([1.0, 0.0] * 20)         # 20 rounds of accept 1 + correction
    assert acc.tau_from_betas(clustered, 4) == pytest.approx(40 / 24)
    assert acc.tau_from_betas(alternating, 4) == pytest.approx(2.0)
    iid = theory.expected_tokens_per_step(0.5, 4)
    assert acc.tau_from_betas(clustered, 4) < iid < acc.tau_from_betas(alternating, 4)


def test_alpha_from_rounds_counts_examined_tokens():
    b = [1, 1, 0, 1, 0, 0, 1, 1, 1, 1]
    r = acc.greedy_rounds(b, gamma=2)
    # accepted 2+1+0+2 = 5, rejections 2 -> 5/7 ; proposed 2+2+2+2+0 = 8 -> 5/8
    assert acc.alpha_from_rounds(r) == pytest.approx(r.accepted.sum() / (r.accepted.sum() + 2))
    assert acc.alpha_from_rounds(r) == pytest.approx(5 / 7)
    assert acc.draft_acceptance_rate(r) == pytest.approx(5 / 8)


def test_alpha_from_rounds_estimates_iid_alpha():
    rng = np.random.default_rng(0)
    rounds = [acc.greedy_rounds((rng.random(200) < 0.6).astype(float), 4) for _ in range(50)]
    assert acc.alpha_from_rounds(rounds) == pytest.approx(0.6, abs=0.02)
    # accepted / proposed is a different, lower quantity: (tau - 1) / gamma under i.i.d.
    assert acc.draft_acceptance_rate(rounds) < 0.5


def test_speedup_from_tau_is_theorem_3_8_with_eq1():
    tau = theory.expected_tokens_per_step(0.7, 4)
    assert acc.speedup_from_tau(tau, 4, 0.1) == pytest.approx(theory.walltime_speedup(0.7, 4, 0.1))
    with pytest.raises(ValueError, match="tau"):
        acc.speedup_from_tau(0.5, 4, 0.1)


def test_ratio_ci_contains_estimate_and_narrows_with_more_clusters():
    rng = np.random.default_rng(3)
    den = np.full(40, 64.0)
    num = rng.binomial(64, 0.5, size=40).astype(float)
    est, lo, hi = acc.ratio_ci(num, den)
    assert lo <= est <= hi and est == pytest.approx(num.sum() / den.sum())
    _, lo4, hi4 = acc.ratio_ci(num[:4], den[:4])
    assert hi4 - lo4 > hi - lo
    e1, l1, h1 = acc.ratio_ci([3.0], [4.0])
    assert e1 == 0.75 and np.isnan(l1) and np.isnan(h1)


def test_ratio_ci_rejects_bad_input():
    with pytest.raises(ValueError, match="denominators"):
        acc.ratio_ci([1, 2], [1, 0])
    with pytest.raises(ValueError, match="equal"):
        acc.ratio_ci([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="level"):
        acc.ratio_ci([1, 2], [1, 2], level=1.5)


@pytest.mark.parametrize("bad,match", [
    ([0.5, 1.2], "betas"),
    ([[1, 0], [0, 1]], "1-D"),
    ([], "at least one"),
])
def test_bad_betas_are_named(bad, match):
    with pytest.raises(ValueError, match=match):
        acc.expected_rounds(bad, 2)


def test_greedy_rounds_needs_binary_and_budget():
    with pytest.raises(ValueError, match="only 0 and 1"):
        acc.greedy_rounds([0.5, 1.0], 2)
    with pytest.raises(ValueError, match="max_new_tokens"):
        acc.greedy_rounds([1, 1, 1], 2, max_new_tokens=2)


def test_rounds_from_accept_lengths_rejects_impossible_chunks():
    with pytest.raises(ValueError, match="exceeds draft length"):
        acc.rounds_from_accept_lengths([5, 1], gamma=2, max_new_tokens=10)
    with pytest.raises(ValueError, match="max_new_tokens"):
        acc.rounds_from_accept_lengths([3, 3], gamma=2, max_new_tokens=5)


def test_expected_round_counts_match_greedy_rounds_on_0_1_betas():
    rng = np.random.default_rng(7)
    for _ in range(40):
        b = (rng.random(25) < 0.6).astype(float)
        g, m = int(rng.integers(1, 7)), int(rng.integers(25, 32))
        r = acc.greedy_rounds(b, g, m)
        assert acc.expected_round_counts(b, g, m) == (r.n_rounds, int(r.draft_len.sum()))


def test_expected_round_counts_with_constant_beta():
    # gamma 1, beta a everywhere, long sequence: rounds -> N / (1 + a), one draft token per round
    # except the last position (no draft there)
    a, n = 0.5, 4000
    rounds, drafted = acc.expected_round_counts(np.full(n, a), 1)
    assert rounds == pytest.approx(n / (1 + a), rel=1e-3)
    assert drafted == pytest.approx(rounds, abs=1.0)
