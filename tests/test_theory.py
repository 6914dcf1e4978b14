"""specnb.theory against Leviathan et al. (arXiv 2211.17192 v2) and the article's section 5;
the helpers (summary, trade-off, optimum beyond the search limit); bad input, edge values and
large gamma_max (a clear error naming the parameter, never a silent guess)."""

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb import theory
from specnb.theory import _tokens
from tests.tier import examples

alphas = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
alphas_open = st.floats(min_value=0.0, max_value=0.999, allow_nan=False)
gammas = st.integers(min_value=0, max_value=40)
costs = st.floats(min_value=0.0, max_value=5.0, allow_nan=False)


def eq1_by_sum(alpha, gamma):
    """Eq. 1 as the capped-geometric expectation sum_{k=0..gamma} alpha^k (independent form)."""
    return sum(alpha**k for k in range(gamma + 1))


@pytest.mark.parametrize("alpha,gamma", [(0.0, 0), (0.0, 5), (0.5, 3), (0.8, 8), (1.0, 4), (0.999999, 7)])
def test_expected_tokens_matches_geometric_sum(alpha, gamma):
    assert theory.expected_tokens_per_step(alpha, gamma) == pytest.approx(eq1_by_sum(alpha, gamma), rel=1e-9)


def test_alpha_one_limit_is_gamma_plus_one():
    assert theory.expected_tokens_per_step(1.0, 7) == 8.0
    assert theory.walltime_speedup(1.0, 7, 0.0) == 8.0


def test_vectorized_broadcasting_and_return_types():
    a = np.array([0.2, 0.6, 0.8])
    g = np.array([[3], [5]])
    out = theory.walltime_speedup(a, g, 0.05)
    assert isinstance(out, np.ndarray) and out.shape == (2, 3)
    assert out[1, 2] == pytest.approx(theory.walltime_speedup(0.8, 5, 0.05))
    assert isinstance(theory.walltime_speedup(0.8, 5, 0.05), float)


def test_leviathan_table4_expected_column_recomputed():
    """Leviathan Table 4's "Exp" column is Theorem 3.8 at the listed alpha, gamma, c.

    alpha and c are printed to 2 decimals, so Exp is checked against every value Theorem 3.8
    takes with alpha and c anywhere in their rounding intervals (+-0.005): the printed Exp (1
    decimal) must be reachable. With the rounded inputs themselves, 3 of 12 rows miss by up to
    0.06 (T5-base EnDe T=1: 2.35 vs 2.4), which is input rounding, not an error.
    """
    from specnb import article, data

    df = data.load("leviathan_table4_theory_vs_measured")
    for row in df.itertuples():
        a = np.linspace(row.alpha - 0.005, row.alpha + 0.005, 201)[:, None]
        c = np.linspace(max(row.c - 0.005, 0.0), row.c + 0.005, 41)[None, :]
        s = theory.walltime_speedup(a, row.gamma, c)
        lo, hi = s.min(), s.max()
        assert lo - 0.05 <= row.speedup_expected <= hi + 0.05, (row, lo, hi)
    exact = theory.walltime_speedup(df["alpha"].to_numpy(), df["gamma"].to_numpy(), df["c"].to_numpy())
    misses = [i for i, (e, p) in enumerate(zip(exact, df["speedup_expected"])) if not article.agrees(e, p, 1)]
    assert misses == [4, 5, 11]


def test_section_3_6_bigram_example():
    # alpha 0.2, c 0, gamma 3 -> 1.25X (Leviathan section 3.6)
    assert round(theory.walltime_speedup(0.2, 3, 0.0), 2) == 1.25


def test_optimal_gamma_examples():
    g, s = theory.optimal_gamma(0.8, 0.05)
    assert g == 8 and s == pytest.approx(theory.walltime_speedup(0.8, 8, 0.05))
    assert theory.optimal_gamma(0.1, 0.2) == (0, 1.0)  # alpha <= c: do not speculate
    assert theory.optimal_gamma(1.0, 0.0, gamma_max=10)[0] == 10


@settings(max_examples=examples(200), deadline=None)
@given(alphas, costs, st.integers(1, 30))
def test_optimal_gamma_is_the_argmax(alpha, c, gmax):
    g, s = theory.optimal_gamma(alpha, c, gamma_max=gmax)
    grid = [theory.walltime_speedup(alpha, k, c) for k in range(gmax + 1)]
    assert s == pytest.approx(max(grid))
    assert g == int(np.argmax(grid))


def test_optimal_gamma_vectorized():
    g, s = theory.optimal_gamma(np.array([0.5, 0.9]), 0.02)
    assert g.tolist() == [theory.optimal_gamma(0.5, 0.02)[0], theory.optimal_gamma(0.9, 0.02)[0]]
    assert s.shape == (2,)


@settings(max_examples=examples(300), deadline=None)
@given(alphas, gammas)
def test_expected_tokens_in_bounds(alpha, gamma):
    e = theory.expected_tokens_per_step(alpha, gamma)
    assert 1.0 - 1e-12 <= e <= gamma + 1 + 1e-9


@settings(max_examples=examples(300), deadline=None)
@given(alphas_open, gammas)
def test_speedup_at_zero_cost_bounded(alpha, gamma):
    """Section 3.6: with c = 0 the improvement is bounded by 1 / (1 - alpha)."""
    assert theory.walltime_speedup(alpha, gamma, 0.0) <= 1.0 / (1.0 - alpha) * (1 + 1e-12)


@settings(max_examples=examples(300), deadline=None)
@given(alphas, costs)
def test_corollary_3_9_gamma_one(alpha, c):
    assert theory.walltime_speedup(alpha, 1, c) == pytest.approx((1 + alpha) / (1 + c), rel=1e-12)


@settings(max_examples=examples(300), deadline=None)
@given(alphas, st.integers(1, 30))
def test_alpha_from_acceptance_length_inverts_eq1(alpha, gamma):
    tau = theory.expected_tokens_per_step(alpha, gamma)
    back = theory.alpha_from_acceptance_length(tau, gamma)
    # Eq. 1 is flat near alpha = 0 for the error in tau; compare in tau space and alpha space.
    assert theory.expected_tokens_per_step(back, gamma) == pytest.approx(tau, rel=1e-12, abs=1e-12)
    assert back == pytest.approx(alpha, abs=1e-6)


@settings(max_examples=examples(200), deadline=None)
@given(alphas, alphas, st.integers(1, 30), costs)
def test_monotonic_in_alpha(a1, a2, gamma, c):
    lo, hi = sorted((a1, a2))
    assert theory.expected_tokens_per_step(lo, gamma) <= theory.expected_tokens_per_step(hi, gamma) + 1e-12
    assert theory.walltime_speedup(lo, gamma, c) <= theory.walltime_speedup(hi, gamma, c) + 1e-12
    assert theory.operations_factor(lo, gamma, c) >= theory.operations_factor(hi, gamma, c) - 1e-12


def test_alpha_from_acceptance_length_vllm_sample():
    # vLLM metrics sample (shared/reference/vllm.md 3.5): tau 4.50 at gamma 5 -> alpha 0.88338
    a = theory.alpha_from_acceptance_length(4.5, 5)
    assert theory.expected_tokens_per_step(a, 5) == pytest.approx(4.5)
    assert theory.alpha_from_acceptance_length(1.0, 3) == 0.0
    assert theory.alpha_from_acceptance_length(4.0, 3) == 1.0


BAD = [
    (theory.expected_tokens_per_step, dict(alpha=1.5, gamma=3), "alpha"),
    (theory.expected_tokens_per_step, dict(alpha=-0.1, gamma=3), "alpha"),
    (theory.expected_tokens_per_step, dict(alpha=math.nan, gamma=3), "alpha"),
    (theory.expected_tokens_per_step, dict(alpha=0.5, gamma=-1), "gamma"),
    (theory.expected_tokens_per_step, dict(alpha=0.5, gamma=2.5), "gamma"),
    (theory.expected_tokens_per_step, dict(alpha=0.5, gamma=math.nan), "gamma"),
    (theory.walltime_speedup, dict(alpha=0.5, gamma=3, c=-0.1), "c"),
    (theory.walltime_speedup, dict(alpha=0.5, gamma=3, c=math.nan), "c"),
    (theory.walltime_speedup, dict(alpha=np.array([0.5, 2.0]), gamma=3, c=0), "alpha"),
    (theory.operations_factor, dict(alpha=0.5, gamma=3, c_hat=-1), "c_hat"),
    (theory.optimal_gamma, dict(alpha=0.5, c=-0.2), "c"),
    (theory.optimal_gamma, dict(alpha=0.5, c=0.1, gamma_max=0), "gamma_max"),
    (theory.alpha_from_acceptance_length, dict(tau=0.5, gamma=3), "tau"),
    (theory.alpha_from_acceptance_length, dict(tau=4.5, gamma=3), "tau"),
    (theory.alpha_from_acceptance_length, dict(tau=2.0, gamma=0), "gamma"),
    (theory.alpha_from_acceptance_length, dict(tau=math.nan, gamma=3), "tau"),
]


@pytest.mark.parametrize("fn,kwargs,param", BAD, ids=[f"{f.__name__}-{p}-{i}" for i, (f, _, p) in enumerate(BAD)])
def test_bad_input_names_the_parameter(fn, kwargs, param):
    with pytest.raises(ValueError) as info:
        fn(**kwargs)
    msg = str(info.value)
    assert msg.startswith(param + " ") or f" {param} " in msg or msg.startswith(param)
    assert param in msg


def test_non_number_is_a_type_error():
    with pytest.raises(TypeError, match="alpha"):
        theory.walltime_speedup("high", 3, 0.1)
    with pytest.raises(TypeError, match="gamma"):
        theory.walltime_speedup(0.5, True, 0.1)


# --- alpha_from_acceptance_length: the vectorized Newton inversion of Eq. 1 ----------------------

def _alpha_by_bisection(tau, gamma):
    """Independent reference: bisection on the geometric sum itself (no cancellation near 1),
    in plain Python, until the bracket stops shrinking."""
    if tau <= 1.0:
        return 0.0
    if tau >= gamma + 1:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        s = math.fsum(mid ** k for k in range(gamma + 1))
        lo, hi = (mid, hi) if s < tau else (lo, mid)
    return 0.5 * (lo + hi)


alphas_wide = st.one_of(
    alphas,
    st.floats(min_value=-16, max_value=0).map(lambda e: 1.0 - 10.0 ** e),  # close to 1
    st.floats(min_value=-16, max_value=0).map(lambda e: 10.0 ** e),        # close to 0
)


@settings(max_examples=examples(400), deadline=None)
@given(alphas_wide, st.integers(1, 1000))
def test_alpha_inversion_round_trip_exact(alpha, gamma):
    """alpha -> Eq. 1 -> inverse gives alpha back to ~1e-12 wherever Eq. 1 resolves it."""
    tau = theory.expected_tokens_per_step(alpha, gamma)
    back = theory.alpha_from_acceptance_length(tau, gamma)
    assert 0.0 <= back <= 1.0
    # tau is rounded to a double; the alphas that Eq. 1 maps to that same double are all
    # correct answers. Its slope is at least 1, so they lie within a few ulps of tau.
    assert abs(back - alpha) <= 1e-12 + 4 * np.spacing(tau)
    assert theory.expected_tokens_per_step(back, gamma) == pytest.approx(tau, rel=1e-14, abs=0)


@settings(max_examples=examples(300), deadline=None)
@given(st.floats(min_value=0.0, max_value=1.0), st.integers(1, 200))
def test_alpha_inversion_matches_bisection(frac, gamma):
    tau = 1.0 + frac * gamma  # anywhere in [1, gamma + 1]
    got = theory.alpha_from_acceptance_length(tau, gamma)
    assert got == pytest.approx(_alpha_by_bisection(tau, gamma), abs=1e-12)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.floats(min_value=0.0, max_value=1.0), st.integers(1, 64)),
                min_size=1, max_size=50))
def test_alpha_inversion_vectorized_equals_scalar(points):
    taus = np.array([1.0 + f * g for f, g in points])
    gammas = np.array([g for _, g in points])
    vec = theory.alpha_from_acceptance_length(taus, gammas)
    assert isinstance(vec, np.ndarray) and vec.shape == taus.shape
    for v, t, g in zip(vec, taus, gammas):
        assert v == theory.alpha_from_acceptance_length(float(t), int(g))


@settings(max_examples=examples(200), deadline=None)
@given(st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=1.0),
       st.integers(1, 100))
def test_alpha_inversion_monotonic(f1, f2, gamma):
    lo, hi = sorted((f1, f2))
    a_lo = theory.alpha_from_acceptance_length(1 + lo * gamma, gamma)
    a_hi = theory.alpha_from_acceptance_length(1 + hi * gamma, gamma)
    assert a_lo <= a_hi + 1e-15


def test_alpha_inversion_edges_and_shapes():
    g = np.array([[1], [4], [1000]])
    out = theory.alpha_from_acceptance_length(np.array([1.0, 2.0]), g)
    assert out.shape == (3, 2)
    assert out[:, 0].tolist() == [0.0, 0.0, 0.0]
    assert out[0, 1] == 1.0                      # tau = gamma + 1 at gamma 1
    assert out[1, 1] == pytest.approx(_alpha_by_bisection(2.0, 4), abs=1e-15)
    assert theory.alpha_from_acceptance_length(np.nextafter(5.0, 0), 4) == pytest.approx(1.0, abs=1e-12)
    assert theory.alpha_from_acceptance_length(np.nextafter(1.0, 2), 4) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("tau,gamma,param", [
    (np.array([2.0, 5.5]), 3, "tau"),            # above gamma + 1 inside an array
    (np.array([2.0, np.nan]), 3, "tau"),
    (2.0, np.array([2, 0]), "gamma"),
    (2.0, 1.5, "gamma"),
    (np.inf, 3, "tau"),
])
def test_alpha_inversion_bad_arrays(tau, gamma, param):
    with pytest.raises(ValueError, match=param):
        theory.alpha_from_acceptance_length(tau, gamma)


def test_tau_from_rates_is_eq1_for_geometric_rates_and_the_survival_sum_otherwise():
    from specnb.theory import tau_from_rates

    alpha = 0.7
    rates = [alpha ** i for i in range(1, 6)]
    got = tau_from_rates(rates, np.arange(6))
    assert np.allclose(got, theory.expected_tokens_per_step(alpha, np.arange(6)), rtol=1e-12)
    assert tau_from_rates([0.8, 0.5, 0.25], 2) == pytest.approx(2.3)
    assert tau_from_rates([0.8], 0) == 1.0
    with pytest.raises(ValueError, match="gamma 3 needs 3 acceptance rates, got 2"):
        tau_from_rates([0.8, 0.5], 3)
    with pytest.raises(ValueError, match="acceptance_rates"):
        tau_from_rates([1.2], 1)
    with pytest.raises(TypeError, match="1-D"):
        tau_from_rates(0.5, 1)
    assert tau_from_rates([0.5, 0.6], 2) == pytest.approx(2.1)  # order checked only on request
    with pytest.raises(ValueError, match="must not increase.*positions 1 and 2"):
        tau_from_rates([0.5, 0.6], 2, non_increasing=True)
# --- helpers: summary, trade-off, latency, the optimum beyond the search limit ---------------

def test_summary_tradeoff_latency():
    s = theory.summary(0.8, 5, 0.05)
    assert s["optimal_gamma"] == 8 and s["speedup"] == pytest.approx(2.951424)
    t = theory.gamma_tradeoff(0.8, 0.05, 5, 8)
    assert t["speed_gain"] == pytest.approx(0.04766, abs=1e-5)
    assert theory.latency_reduction(1.25) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="speedup"):
        theory.latency_reduction(0)


@settings(max_examples=examples(200), deadline=None)
@given(st.floats(0.0, 0.95), st.floats(0.001, 1.0), st.integers(1, 40))
def test_optimum_beyond_limit_matches_a_wider_search(alpha, c, gmax):
    g_wide, _ = theory.optimal_gamma(alpha, c, gamma_max=400)
    assert theory.optimum_beyond_limit(alpha, c, gmax) == (g_wide > gmax)


def test_optimum_beyond_limit_edges():
    assert theory.optimum_beyond_limit(1.0, 0.3, 16)        # rises for ever
    assert theory.optimum_beyond_limit(0.99, 0.0, 64)
    assert not theory.optimum_beyond_limit(1.0, 1.0, 16)    # (g + 1) / (g + 1): flat
    assert not theory.optimum_beyond_limit(0.8, 0.05, 16)   # optimum 8
    s = theory.summary(1.0, 5, 0.3, gamma_max=16)
    assert s["optimal_gamma"] == 16 and s["optimum_beyond_limit"] is True


@pytest.mark.parametrize("call,param", [
    (lambda: theory.optimum_beyond_limit(1.5, 0.1, 16), "alpha"),
    (lambda: theory.optimum_beyond_limit(0.5, -0.1, 16), "c"),
    (lambda: theory.optimum_beyond_limit(0.5, 0.1, 0), "gamma_max"),
])
def test_new_helpers_name_the_bad_parameter(call, param):
    with pytest.raises(ValueError, match=param):
        call()


# --- bad input, edge values, large gamma_max ---------------------------------------------------

def _brute_force(alpha, c, gamma_max):
    g = np.arange(gamma_max + 1)[:, None]
    speed = _tokens(np.asarray(alpha)[None, :], g) / (g * np.asarray(c)[None, :] + 1.0)
    best = np.argmax(speed, axis=0)
    return best, speed[best, np.arange(len(alpha))]


@pytest.mark.parametrize("value,kind", [
    (None, "None"), ("0.5", "'0.5'"), (True, "boolean True"), (np.True_, "boolean"),
    ([0.5, True], "boolean True"), ([0.5, None], "None"), (0.5 + 1j, "0.5+1j"),
    (np.array(["0.5"]), "'0.5'"), ([[0.5], [0.6, 0.7]], "non-ragged"),
])
def test_a_non_number_is_a_type_error_naming_the_parameter(value, kind):
    with pytest.raises(TypeError, match="alpha") as info:
        theory.expected_tokens_per_step(value, 3)
    assert kind in str(info.value)


def test_nan_is_reported_with_its_position_not_the_whole_array():
    alpha = [0.5] * 5000 + [float("nan")]
    with pytest.raises(ValueError, match=r"alpha must not be NaN, got nan at index 5000") as info:
        theory.expected_tokens_per_step(alpha, 3)
    assert len(str(info.value)) < 100


@pytest.mark.parametrize("gamma,shown", [(10 ** 30, "1000000000000000000000000000000"),
                                         (2 ** 53 + 1, "9007199254740993"), (1e300, "1e+300")])
def test_a_gamma_beyond_float_precision_is_refused_not_wrapped(gamma, shown):
    with pytest.raises(ValueError, match=r"gamma must be an integer in \[0, 2\*\*53") as info:
        theory.expected_tokens_per_step(0.5, gamma)
    assert shown in str(info.value)


def test_integer_errors_show_the_value_as_given():
    with pytest.raises(ValueError, match="gamma_max must be an integer >= 1, got 0$"):
        theory.optimal_gamma(0.5, 0.1, gamma_max=0)


@pytest.mark.parametrize("call,names", [
    (lambda: theory.expected_tokens_per_step([0.5, 0.6], [1, 2, 3]), "alpha (2,), gamma (3,)"),
    (lambda: theory.walltime_speedup([0.5, 0.6], 3, [0.1, 0.2, 0.3]), "c (3,)"),
    (lambda: theory.operations_factor([0.5, 0.6], 3, [0.1, 0.2, 0.3]), "c_hat (3,)"),
    (lambda: theory.optimal_gamma([0.5, 0.6], [0.1, 0.2, 0.3]), "alpha (2,), c (3,)"),
    (lambda: theory.alpha_from_acceptance_length([1.5, 2.0], [1, 2, 3]), "tau (2,), gamma (3,)"),
])
def test_shapes_that_do_not_broadcast_name_each_parameter(call, names):
    with pytest.raises(ValueError, match="must broadcast to one shape") as info:
        call()
    assert names in str(info.value)


@pytest.mark.parametrize("alpha,gamma,tokens", [(0.0, 0, 1.0), (0.0, 7, 1.0), (1.0, 0, 1.0),
                                                (1.0, 7, 8.0), (-0.0, 3, 1.0)])
def test_alpha_exactly_0_and_1(alpha, gamma, tokens):
    assert theory.expected_tokens_per_step(alpha, gamma) == tokens
    assert theory.walltime_speedup(alpha, gamma, 0.0) == tokens
    assert theory.operations_factor(alpha, gamma, 0.0) == (gamma + 1) / tokens


@pytest.mark.parametrize("gamma", [1, 3, 8])
def test_tau_exactly_1_and_gamma_plus_1(gamma):
    assert theory.alpha_from_acceptance_length(1.0, gamma) == 0.0
    assert theory.alpha_from_acceptance_length(gamma + 1.0, gamma) == 1.0
    with pytest.raises(ValueError, match=rf"tau must be in \[1, gamma \+ 1\] = \[1, {gamma + 1}\]"):
        theory.alpha_from_acceptance_length(np.nextafter(gamma + 1.0, np.inf), gamma)


def test_numpy_integer_types_are_numbers():
    assert theory.expected_tokens_per_step(0.5, np.int64(3)) == 1.875
    default = theory.optimal_gamma(0.8, 0.05)
    assert theory.optimal_gamma(0.8, 0.05, gamma_max=np.int32(64)) == default


def test_huge_gamma_max_neither_allocates_nor_changes_the_answer():
    start = time.perf_counter()
    assert theory.optimal_gamma(0.8, 0.05, gamma_max=10 ** 9) == theory.optimal_gamma(0.8, 0.05)
    g, s = theory.optimal_gamma(np.linspace(0.0, 0.99, 2000), 0.01, gamma_max=10 ** 9)
    assert g.shape == (2000,) and g.max() < 200
    # alpha = 1 with c >= 1: the speedup never exceeds 1, so gamma 0 is known at once
    assert theory.optimal_gamma(1.0, 1.5, gamma_max=2 ** 53) == (0, 1.0)
    assert time.perf_counter() - start < 30


def test_chunked_search_equals_evaluating_every_gamma():
    rng = np.random.default_rng(7)
    alpha = np.concatenate([rng.uniform(0, 1, 2000), [0.0, 1.0, 1.0, 1.0, 0.999999]])
    c = np.concatenate([rng.uniform(0, 5, 2000), [0.0, 0.0, 0.5, 1.0, 0.0]])
    c[::9] = 0.0
    for gamma_max in (1, 64, 700):  # 700 x 2005 gammas run over several chunks
        want_g, want_s = _brute_force(alpha, c, gamma_max)
        g, s = theory.optimal_gamma(alpha, c, gamma_max=gamma_max)
        assert np.array_equal(g, want_g) and np.array_equal(s, want_s)


def test_summary_takes_scalars_only():
    with pytest.raises(TypeError, match="alpha must be a single number"):
        theory.summary([0.8, 0.7], 5, 0.05)
    with pytest.raises(TypeError, match="gamma must be an integer"):
        theory.summary(0.8, "5", 0.05)


def test_tau_by_gamma_reads_one_tau_at_the_first_gamma_and_carries_it_by_eq1():
    """T5-W6: one tau with several gammas is measured at the first gamma; the others follow
    Eq. 1 at its alpha (plan and simulate share this rule)."""
    from specnb.theory import TAU_AT_FIRST_GAMMA, tau_by_gamma

    taus, alpha, note = tau_by_gamma(1.8, [1, 3])
    assert round(alpha, 3) == 0.8  # 1 + alpha = 1.8 at gamma 1
    assert [round(t, 3) for t in taus] == [1.8, round((1 - 0.8 ** 4) / 0.2, 3)]  # 2.952
    assert note.code == TAU_AT_FIRST_GAMMA and "2.95 at gamma 3" in note.message
    # the first listed gamma, not the smallest
    taus, alpha, _ = tau_by_gamma([2.95], [3, 1])
    assert round(taus[0], 2) == 2.95 and round(taus[1], 3) == round(1 + alpha, 3)
    assert round(alpha, 3) == round(float(theory.alpha_from_acceptance_length(2.95, 3)), 3)
    # one per gamma: as given, no note; one gamma: no note
    taus, alpha, note = tau_by_gamma([2.0, 3.0], [1, 3])
    assert list(taus) == [2.0, 3.0] and alpha is None and note is None
    assert tau_by_gamma(2.5, [3])[2] is None
    # tau = gamma + 1 at the first gamma: every draft accepted, alpha 1
    taus, alpha, _ = tau_by_gamma(2.0, [1, 3])
    assert alpha == 1.0 and list(taus) == [2.0, 4.0]
    with pytest.raises(ValueError, match=r"tau must be in \[1, gamma \+ 1\] = \[1, 2\]"):
        tau_by_gamma(2.5, [1, 3])
    with pytest.raises(ValueError, match="one per gamma"):
        tau_by_gamma([2.0, 2.0], [1, 2, 3])
