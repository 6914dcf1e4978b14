"""Unit tests for specnb.methods, specnb.batch, specnb.verify, specnb.nb and theory helpers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb import batch, methods, nb, theory, verify


# --- methods ---------------------------------------------------------------------------------

def test_table1_view_and_errors():
    t = methods.table1("Vicuna 13B", 0, "tau")
    assert list(t.columns) == [*methods.TASKS, "mean"]
    assert t.loc["EAGLE-3", "humaneval"] == 7.54
    with pytest.raises(ValueError, match="model"):
        methods.table1("GPT-5", 0)
    with pytest.raises(ValueError, match="temperature"):
        methods.table1("Vicuna 13B", 2)
    with pytest.raises(ValueError, match="value"):
        methods.table1("Vicuna 13B", 0, "latency")


def test_band_range_ladder():
    t = methods.table1()
    assert methods.speedup_band(t, ["SpS", "PLD"]) == (1.74, 1.92)
    assert methods.task_range(t, "PLD", exclude=("cnndm",)) == (1.16, 1.85)
    assert methods.is_increasing(t)
    assert not methods.is_increasing(t, ["EAGLE-3", "EAGLE"])
    with pytest.raises(ValueError, match="not in the table"):
        methods.speedup_band(t, ["HASS"])
    assert methods.methods_without_temperature(1, "LLaMA-Instruct 3.1 8B") == []


# --- batch -----------------------------------------------------------------------------------

def test_largest_and_first():
    b, r = [2, 4, 8, 16], [1.4, 1.1, 0.9, 1.05]
    assert batch.largest_paying_batch(b, r) == 16
    assert batch.first_losing_batch(b, r) == 8
    assert batch.largest_paying_batch([2], [0.5]) is None
    assert batch.first_losing_batch([2], [1.5]) is None
    with pytest.raises(ValueError, match="same length"):
        batch.largest_paying_batch([1, 2], [1.0])
    with pytest.raises(ValueError, match="ratios"):
        batch.largest_paying_batch([1], [0.0])
    with pytest.raises(ValueError, match="batch_sizes"):
        batch.largest_paying_batch([0], [1.2])


@pytest.mark.parametrize("ratio,shown", [(1.02, "1"), (1.38, "1.4"), (1.34, "1.3"), (0.93, "0.93"),
                                         (1.25, "1.3"), (0.999, "1.00"), (1.0, "1")])
def test_article_format(ratio, shown):
    assert batch.article_format(ratio) == shown


def test_ratio_table_names():
    with pytest.raises(ValueError, match="eagle3_table5_vllm_batch"):
        batch.ratio_table("eagle3_table1")


# --- verify ----------------------------------------------------------------------------------

def dists(v):
    return st.lists(st.floats(0.01, 1.0), min_size=v, max_size=v).map(lambda x: np.array(x) / np.sum(x))


@settings(max_examples=20, deadline=None)
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


# --- theory helpers --------------------------------------------------------------------------

def test_summary_tradeoff_latency():
    s = theory.summary(0.8, 5, 0.05)
    assert s["optimal_gamma"] == 8 and s["speedup"] == pytest.approx(2.951424)
    t = theory.gamma_tradeoff(0.8, 0.05, 5, 8)
    assert t["speed_gain"] == pytest.approx(0.04766, abs=1e-5)
    assert theory.latency_reduction(1.25) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="speedup"):
        theory.latency_reduction(0)


# --- nb --------------------------------------------------------------------------------------

def test_record_roundtrip_and_types(tmp_path, monkeypatch):
    import json

    import pandas as pd

    df = pd.DataFrame({"a": [1, 2]}, index=["x", "y"])
    payload = {"values": {"n": nb._jsonable(np.float64(1.5)), "df": nb._jsonable(df), "l": nb._jsonable((1, 2))}}
    cell = {"cell_type": "code", "outputs": [{"output_type": "display_data", "data": {nb.RECORD_MIME: payload}}]}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps({"cells": [cell]}))
    got = nb.read_records(path)
    assert got["n"] == 1.5 and got["l"] == [1, 2]
    assert got["df"].to_dict("list") == {"index": ["x", "y"], "a": [1, 2]}
    with pytest.raises(TypeError, match="cannot store"):
        nb._jsonable(object())
    with pytest.raises(ValueError, match="name"):
        nb.record("", 1)


def test_interact_headless_calls_the_function(monkeypatch):
    import ipywidgets as widgets

    monkeypatch.setenv("SPECNB_HEADLESS", "1")
    seen = {}

    def fn(x):
        seen["x"] = x
        return None

    nb.interact(fn, x=widgets.IntSlider(value=3))
    assert seen == {"x": 3}

    def broken(x):
        raise RuntimeError("must surface")

    with pytest.raises(RuntimeError, match="must surface"):
        nb.interact(broken, x=widgets.IntSlider(value=3))


def test_mixture_and_empirical():
    m = verify.mixture([0.5, 0.5], [1.0, 0.0], 0.5)
    assert m.tolist() == [0.75, 0.25]
    assert verify.empirical([0, 0, 1, 2], 3).tolist() == [0.5, 0.25, 0.25]
    with pytest.raises(ValueError, match="tokens"):
        verify.empirical([0, 5], 3)


def test_nearest_measured():
    assert batch.nearest_measured([2, 4, 64, 8], 20) == (8, 64)
    assert batch.nearest_measured([2, 4], 1) == (None, 2)
    assert batch.nearest_measured([2, 4], 128) == (4, None)
    assert batch.nearest_measured([2, 4], 4) == (4, 4)


def test_controls_never_clip():
    from specnb import nb

    s = nb.slider(1.7, 0.0, 1.0, 0.01, "alpha")
    assert s.value == 1.7 and s.track.max == 1.7  # the track widened to the value
    g = nb.slider(5, 1, 16, 1, "gamma")
    assert type(g.track).__name__ == "IntSlider" and g.value == 5 and isinstance(g.value, int)
    assert nb.slider(131072, 256, 32768, 256, "seq_len").value == 131072
    assert nb.log_slider(1e12, 7, 10, "params").value == 1e12
    assert nb.choice(128, [2, 64], "batch").options == (2, 64, 128)
    with pytest.raises(TypeError, match="alpha"):
        nb.slider(True, 0, 1, 1, "alpha")
    with pytest.raises(ValueError, match="params"):
        nb.log_slider(0.0, 7, 10, "params")


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
