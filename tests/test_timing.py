"""specnb.timing: the generate-call timing model, fitted by non-negative least squares."""

import numpy as np
import pytest

from specnb import theory, timing


def test_fit_timing_model_recovers_known_times():
    rng = np.random.default_rng(0)
    true = dict(t_call=0.02, t_target=0.004, t_draft=0.0015, t_round=0.003)
    rows = []
    for _ in range(10):  # plain calls of 64 tokens
        rows.append((64, 0, 0))
    for gamma in (1, 2, 3, 5):
        for _ in range(10):
            rounds = int(rng.integers(20, 50))
            rows.append((rounds, rounds * gamma, rounds))
    tf, df, ar = (np.array(c, dtype=float) for c in zip(*rows))
    wall = (true["t_call"] + true["t_target"] * tf + true["t_draft"] * df + true["t_round"] * ar
            + rng.normal(0, 1e-4, size=tf.size))
    m = timing.fit_timing_model(wall, tf, df, ar)
    for k, v in true.items():
        assert getattr(m, k) == pytest.approx(v, rel=0.1)
    assert m.r2 > 0.99 and m.c == pytest.approx(0.375, rel=0.1)
    np.testing.assert_allclose(m.predict(tf, df, ar), wall, atol=1e-3)
    # steady state: tau tokens cost tau * t_target plain, one round speculative
    assert m.speedup(3.0, 2) == pytest.approx(
        3 * m.t_target / (m.t_target + m.t_round + 2 * m.t_draft))


def test_timing_model_optimal_gamma():
    m = timing.TimingModel(t_call=0.0, t_target=1.0, t_draft=0.05, t_round=0.0, r2=1.0, n_runs=0)
    # without per-round overhead the model is Theorem 3.8 with c = t_draft / t_target
    assert m.optimal_gamma(0.8, gamma_max=64) == pytest.approx(theory.optimal_gamma(0.8, 0.05))
    # an overhead of half a target forward per round makes a weak draft not worth running
    slow = timing.TimingModel(0.0, 1.0, 0.3, 0.5, 1.0, 0)
    assert slow.optimal_gamma(0.4) == (0, 1.0)
    g, sp = slow.optimal_gamma(0.9)
    assert g >= 1 and sp == pytest.approx(max(
        float(slow.speedup(theory.expected_tokens_per_step(0.9, k), k)) for k in range(1, 17)))
    with pytest.raises(ValueError, match="alpha"):
        m.optimal_gamma(1.5)


def test_fit_timing_model_single_gamma_warns_and_stays_non_negative():
    # plain calls plus a single gamma: rounds and draft forwards move together, so t_round
    # cannot be told apart from t_draft; it is fixed at 0 with a warning, t_draft absorbs it
    tf = np.array([48.0, 48, 48, 30, 25, 28, 33])
    df = np.array([0.0, 0, 0, 90, 75, 84, 99])
    ar = np.where(df > 0, tf, 0)
    wall = 0.01 + 0.003 * tf + 0.001 * df + 0.002 * ar
    m = timing.fit_timing_model(wall, tf, df, ar)
    assert m.t_round == 0.0
    assert any("t_round" in w and "single gamma" in w for w in m.warnings)
    assert m.t_draft == pytest.approx(0.001 + 0.002 / 3)
    assert m.t_call == pytest.approx(0.01) and m.t_target == pytest.approx(0.003)
    # no assisted call at all: nothing to fit a draft time to
    with pytest.raises(ValueError, match="draft_forwards"):
        timing.fit_timing_model([0.1, 0.2], [10, 20], [0, 0], [0, 0])


def test_fit_timing_model_constrains_negative_terms_to_zero():
    # calls that the unconstrained fit explains with a negative per-call cost
    tf = np.array([48.0, 48, 20, 30, 20, 30])
    df = np.array([0.0, 0, 20, 30, 60, 90])
    ar = np.where(df > 0, tf, 0)
    wall = -0.02 + 0.004 * tf + 0.001 * df + 0.002 * ar  # exact fit needs t_call < 0
    free = np.linalg.lstsq(np.column_stack([np.ones_like(tf), tf, df, ar]), wall, rcond=None)[0]
    assert free.min() < 0
    m = timing.fit_timing_model(wall, tf, df, ar)
    assert min(m.t_call, m.t_target, m.t_draft, m.t_round) >= 0.0 and m.t_call == 0.0
    assert any("t_call" in w and "negative" in w for w in m.warnings)
    assert m.r2 > 0.9  # still a good fit, with the per-call cost held at 0


def test_fit_timing_models_shares_target_times_across_drafts():
    rng = np.random.default_rng(1)
    t_call, t_target, t_round = 0.01, 0.003, 0.0015
    t_draft = {"big": 0.0015, "small": 0.0008}
    rows = [(48, 0, 0, "")] * 6
    for d in t_draft:
        for g in (1, 3):
            for _ in range(6):
                r = int(rng.integers(15, 40))
                rows.append((r, g * r, r, d))
    tf, df, ar = (np.array(c, dtype=float) for c in list(zip(*rows))[:3])
    labels = [r[3] for r in rows]
    wall = (t_call + t_target * tf + t_round * ar
            + np.array([t_draft.get(d, 0.0) for d in labels]) * df
            + rng.normal(0, 2e-5, size=tf.size))
    fit = timing.fit_timing_models(wall, tf, df, ar, drafts=labels)
    assert fit.warnings == ()
    assert fit.t_target == pytest.approx(t_target, rel=0.05)
    assert fit.t_round == pytest.approx(t_round, rel=0.1)
    for d, v in t_draft.items():
        assert fit.t_draft[d] == pytest.approx(v, rel=0.1)
        assert fit.model(d).t_target == fit.t_target  # one target, one target time
    assert fit.model("small").c < fit.model("big").c
    with pytest.raises(ValueError, match="draft must be one of"):
        fit.model("other")
    with pytest.raises(ValueError, match="one label per call"):
        timing.fit_timing_models(wall, tf, df, ar, drafts=labels[:-1])


def test_nnls_matches_brute_force():
    import itertools
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.normal(size=(15, 4)), rng.normal(size=15)
        x = timing.nnls(a, b)
        assert (x >= 0).all()
        best = np.inf
        for r in range(5):
            for s in itertools.combinations(range(4), r):
                z = np.zeros(4)
                if s:
                    z[list(s)] = np.linalg.lstsq(a[:, s], b, rcond=None)[0]
                if (z >= 0).all():
                    best = min(best, np.linalg.norm(a @ z - b))
        assert np.linalg.norm(a @ x - b) == pytest.approx(best, rel=1e-9)
    with pytest.raises(ValueError, match="shapes"):
        timing.nnls(np.ones((3, 2)), np.ones(4))


def test_timing_model_without_target_time_refuses_to_predict():
    m = timing.TimingModel(0.0, 0.0, 0.001, 0.0, float("nan"), 0)
    assert np.isnan(m.c)
    with pytest.raises(ValueError, match="t_target"):
        m.speedup(2.0, 1)
