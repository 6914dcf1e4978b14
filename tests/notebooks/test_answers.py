"""The report's Answers are computed from the run they sit in: run notebooks with other
``--parameters`` and check that the Answer (in the executed notebook and in index.html) gives
the figures for those parameters, computed here with specnb, and not the defaults' figures."""

import html

import pytest

from specnb import cost, data, theory
from specnb.nb import read_answer
from specnb.runner import run_notebooks

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def parameterised(tmp_path_factory):
    out = tmp_path_factory.mktemp("answers")
    params = {"02": {"usd_per_hour": 2.5, "answer_tokens": 1000},
              "04": {"alpha": 0.7, "c": 0.1, "c_hat": 0.1, "gamma_max": 12}}
    results = run_notebooks(["02", "04"], out, parameters=params, progress=False)
    assert all(r.status == "ok" for r in results), [r.error for r in results]
    return out, {r.name: r for r in results}


def test_cost_answer_follows_the_price_and_answer_length(parameterised):
    out, results = parameterised
    answer = results["02_cost_per_token"].answer
    assert answer == read_answer(out / "02_cost_per_token.ipynb") and answer.startswith("**Answer.**")
    bs1 = data.load("eagle3_table4_sglang_bs1").set_index("method")["throughput_tokens_per_s"]
    off, on = float(bs1["none"]), float(bs1["EAGLE-3"])
    usd = cost.usd_per_million_tokens(2.5, [off, on])
    secs = cost.seconds_for_tokens(1000, [off, on])
    assert "At 2.5 USD per GPU-hour" in answer
    assert f"from {usd[0]:.2f} to {usd[1]:.2f} USD" in answer
    assert f"a 1,000-token answer from {secs[0]:.2f} s to {secs[1]:.2f} s" in answer
    # the default run's figures (4.29 USD/hour, 500 tokens) are gone
    assert "4.29" not in answer and "7.53" not in answer and "500-token" not in answer


def test_draft_length_answer_follows_alpha_and_c(parameterised):
    out, results = parameterised
    answer = results["04_draft_length"].answer
    s = {g: theory.walltime_speedup(0.7, g, 0.1) for g in (3, 5, 8)}
    o = {g: theory.operations_factor(0.7, g, 0.1) for g in (3, 5, 8)}
    assert "At acceptance rate 0.7 and draft cost c = 0.1" in answer
    assert f"{s[3]:.2f}x at gamma 3, {s[5]:.2f}x at 5 and {s[8]:.2f}x at 8" in answer
    assert f"{o[3]:.2f}x, {o[5]:.2f}x, {o[8]:.2f}x" in answer
    g_best, s_best = theory.optimal_gamma(0.7, 0.1, gamma_max=12)
    assert f"The best gamma up to 12 is {int(g_best)} ({s_best:.2f}x)" in answer
    assert "2.57x" not in answer and "acceptance rate 0.8" not in answer  # the defaults' answer


def test_index_shows_the_parameterised_answers(parameterised):
    out, results = parameterised
    index = (out / "index.html").read_text(encoding="utf-8")
    for r in results.values():
        body = r.answer.removeprefix("**Answer.** ")
        assert html.escape(body[:60], quote=False) in index
