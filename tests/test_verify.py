"""specnb.verify: the standard rule reproduces p, the lenient rule follows the mixture,
Lemma 3.3, the chi-square z, and bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb import verify
from tests.tier import examples


def dists(v):
    return st.lists(st.floats(0.01, 1.0), min_size=v, max_size=v).map(lambda x: np.array(x) / np.sum(x))


@settings(max_examples=examples(20), deadline=None)
@given(st.integers(3, 12).flatmap(lambda v: st.tuples(dists(v), dists(v))), st.integers(0, 2**32 - 1))
def test_standard_rule_reproduces_p(pq, seed):
    p, q = pq
    rng = np.random.default_rng(seed)
    tokens, acc = verify.speculative_sample(p, q, 40_000, rng)
    assert abs(verify.chi_square(tokens, p)["z"]) < 6
    assert acc.mean() == pytest.approx(verify.acceptance_probability(p, q), abs=0.02)


def test_lenient_rule_follows_the_mixture():
    rng = np.random.default_rng(1)
    p = np.array([0.7, 0.2, 0.1])
    q = np.array([0.1, 0.2, 0.7])
    tokens, _ = verify.lenient_sample(p, q, 0.5, 50_000, rng)
    assert verify.chi_square(tokens, p)["z"] > 50
    assert abs(verify.chi_square(tokens, 0.5 * p + 0.5 * q)["z"]) < 6
    same, acc = verify.speculative_sample(p, p, 1000, rng)
    assert acc.all()


def test_lemma_3_3():
    p = np.array([0.5, 0.5, 0.0])
    q = np.array([0.0, 0.5, 0.5])
    assert verify.acceptance_probability(p, q) == 0.5


@pytest.mark.parametrize("kwargs,param", [
    (dict(p=[0.5, 0.6], q=[0.5, 0.5]), "p"),
    (dict(p=[0.5, 0.5], q=[1.0, 0.0, 0.0]), "same vocabulary"),
    (dict(p=[1.0], q=[1.0]), "at least 2"),
    (dict(p=[0.5, 0.5], q=[-0.5, 1.5]), "q"),
])
def test_verify_bad_distributions(kwargs, param):
    with pytest.raises(ValueError, match=param):
        verify.acceptance_probability(**kwargs)


def test_lenient_weight_range():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="w"):
        verify.lenient_sample([0.5, 0.5], [0.5, 0.5], 0.0, 10, rng)
    with pytest.raises(ValueError, match="n"):
        verify.speculative_sample([0.5, 0.5], [0.5, 0.5], 0, rng)


def test_mixture_and_empirical():
    m = verify.mixture([0.5, 0.5], [1.0, 0.0], 0.5)
    assert m.tolist() == [0.75, 0.25]
    assert verify.empirical([0, 0, 1, 2], 3).tolist() == [0.5, 0.25, 0.25]
    with pytest.raises(ValueError, match="tokens"):
        verify.empirical([0, 5], 3)


@pytest.mark.parametrize("tail", [1e-2, 1e-4, 1e-6, 1e-9])
def test_chi_square_z_matches_the_exact_tail_at_dof_2(tail):
    # dof 2: P(chi2 > x) = exp(-x / 2) exactly. Build counts whose statistic is x = -2 ln(tail)
    # and check the cube-root z against the normal deviate of the same tail probability.
    from statistics import NormalDist
    x = -2.0 * np.log(tail)
    n = 1_000_000
    # three equally likely tokens: chi2 = (d^2 + d^2 + 4 d^2) / (n/3) for counts n/3 + d, n/3 + d, n/3 - 2d
    d = np.sqrt(x * (n / 3) / 6.0)
    counts = np.rint([n / 3 + d, n / 3 + d, n / 3 - 2 * d]).astype(int)
    tokens = np.repeat(np.arange(3), counts)
    res = verify.chi_square(tokens, np.full(3, 1 / 3))
    assert res["dof"] == 2
    exact_z = NormalDist().inv_cdf(1.0 - np.exp(-res["chi2"] / 2.0))
    # Wilson-Hilferty is close in the tail at dof 2 (within 8%: 5.57 for 6.00 at 1e-9), where the
    # plain (chi2 - dof) / sqrt(2 dof) gives 19.7
    assert res["z"] == pytest.approx(exact_z, rel=0.08)
    plain = (res["chi2"] - 2) / 2
    assert abs(res["z"] - exact_z) < abs(plain - exact_z)


def test_verify_names_bad_tokens_and_rng():
    p = [0.5, 0.5]
    with pytest.raises(ValueError, match=r"tokens must be an integer in \[0, 1\], got 5"):
        verify.chi_square([5, 0], p)
    with pytest.raises(ValueError, match="tokens must be a non-empty 1-D array"):
        verify.total_variation([], p)
    with pytest.raises(ValueError, match="tokens must be a whole number"):
        verify.empirical([0.5, 1.0], 2)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        verify.chi_square([0, 0], [1.0, 0.0])
    with pytest.raises(TypeError, match="rng must be a numpy Generator"):
        verify.speculative_sample(p, p, 3, None)
