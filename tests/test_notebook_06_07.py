"""Notebooks 06 (what to turn on) and 07 (turning it on in vLLM) run headless through the runner
and reproduce the printed values: the article's section 7 (recommendation table, n-gram
example), vLLM's method table, and the published numbers behind the bundled samples
(vLLM PR #48892 via ../shared/reference/vllm.md section 3.5, EAGLE-3 Table 4)."""

from __future__ import annotations

import json
import shlex

import pytest

from specnb.article import agrees
from specnb.nb import read_records

pytestmark = pytest.mark.slow

NOTEBOOKS = ["06_what_to_turn_on", "07_vllm_turn_it_on"]

#: article section 7, as printed (../shared/reference/article-tables.md)
ARTICLE_RECOMMENDATIONS = ["eagle3 (if a drafter exists)", "mtp", "start with ngram or suffix",
                           "draft_model", "measure on and off under real load",
                           "small gamma, 2-3"]
ARTICLE_NGRAM_JSON = ('{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, '
                      '"prompt_lookup_max": 5}')
#: article section 4 (vLLM's method table), rows as printed: method, low QPS, high QPS
ARTICLE_METHOD_ROWS = [("eagle3", "high", "medium to high"), ("mtp", "high", "medium to high"),
                       ("draft_model", "high", "medium"), ("ngram", "low to medium", "medium"),
                       ("suffix", "low to medium", "medium")]


@pytest.fixture(scope="module")
def rec(records):
    """Values recorded by notebooks 06 and 07 (executed once per session by conftest)."""
    return {name: records[name] for name in NOTEBOOKS}


def test_both_run_headless(executed_notebooks):
    results = {n: executed_notebooks[n] for n in NOTEBOOKS}
    assert {n: r.status for n, r in results.items()} == {n: "ok" for n in NOTEBOOKS}, \
        {n: r.error for n, r in results.items()}


def test_06_method_table(rec):
    rows = rec["06_what_to_turn_on"]["methods.article_rows"]
    got = list(zip(rows["vllm_method"], rows["low_qps_gain"], rows["high_qps_gain"]))
    assert got == ARTICLE_METHOD_ROWS


def test_06_recommendation_table_row_by_row(rec):
    table = rec["06_what_to_turn_on"]["recommend.table"]
    assert list(table["recommendation"]) == ARTICLE_RECOMMENDATIONS
    assert list(table["article recommendation"]) == ARTICLE_RECOMMENDATIONS
    assert table["matches"].all()
    assert rec["06_what_to_turn_on"]["recommend.rows_matching"] == 6
    assert rec["06_what_to_turn_on"]["recommend.configs"]["vLLM accepts"].all()


def test_06_ngram_example(rec):
    r = rec["06_what_to_turn_on"]
    assert r["ngram.json"] == ARTICLE_NGRAM_JSON
    words = shlex.split(r["ngram.serve_line"])
    assert words[:2] == ["vllm", "serve"] and words[3] == "--speculative-config"
    assert words[4] == ARTICLE_NGRAM_JSON
    assert r["ngram.accepted"] is True and r["ngram.findings"] == 0
    slips = r["ngram.slips"]
    assert not slips["vLLM accepts"].any() and (slips["line"] >= 1).all()


def test_06_reader_situation(rec):
    r = rec["06_what_to_turn_on"]
    # the parameters cell describes copy-heavy output without a drafter
    assert r["mine.recommendation"]["recommendation"] == "start with ngram or suffix"
    assert r["mine.config"] == json.loads(ARTICLE_NGRAM_JSON)  # records come back key-sorted


def test_07_acceptance_from_the_scrape_pair(rec):
    r = rec["07_vllm_turn_it_on"]
    # vllm.md section 3.5 / PR #48892: 43.71 %, 4.50, per position 76.17 ... 23.65 %
    assert agrees(r["metrics.acceptance_rate_pct"], 43.71, 2)
    assert agrees(r["metrics.mean_acceptance_length"], 4.50, 2)
    printed = [76.17, 61.58, 51.25, 42.43, 36.40, 30.94, 27.22, 23.65]
    assert all(agrees(v, p, 2) for v, p in zip(r["metrics.per_position_pct"], printed))
    assert 0 < r["metrics.alpha"] < 1
    assert agrees(r["log.mean_acceptance_length"], 4.50, 2)
    # the same PR's k = 1 run: 83.39 % and 1.83
    assert agrees(r["log.k1.acceptance_rate_pct"], 83.39, 2)
    assert agrees(r["log.k1.mean_acceptance_length"], 1.83, 2)


def test_07_bench_comparisons(rec):
    r = rec["07_vllm_turn_it_on"]
    # PR #48892 prints these changes (MTP 1 -> MTP 8, concurrency 64)
    assert agrees(r["bench.peak.tpot_median_change_pct"], -26.1, 1)
    assert agrees(r["bench.peak.itl_median_change_pct"], 612.5, 1)
    assert agrees(r["bench.peak.ttft_median_change_pct"], 17.4, 1)
    assert agrees(r["bench.peak.output_throughput_change_pct"], 30.5, 1)
    assert r["bench.peak.verdict"] == "turn it on"
    # the article: cost per token 158.34 / 373.25 = 0.42 at batch 1
    assert agrees(1 / r["bench.batch1.throughput_ratio"], 0.42, 2)
    # the article's FAQ: EAGLE below 1x from batch 24 (SGLang); EAGLE-3 never
    assert r["batch.first_losing"] == {"EAGLE": 24, "EAGLE-3": None}


def test_07_k1_run_is_not_told_to_shrink(rec):
    # gamma 1: tau 1.83 < 2 is all gamma 1 allows; 83 % acceptance means try a longer draft
    first = rec["07_vllm_turn_it_on"]["log.k1.advice"][0]
    assert "shrink" not in first and "gamma 1" in first and "try a larger" in first


def test_06_controls_never_clip_a_parameter(tmp_path):
    """A parameter outside a control's range (peak batch 512 > the slider's 256, temperature 2.0
    > 1.5, a goal not among the options) is used as given, not clipped by ipywidgets."""
    import nbformat

    from specnb.runner import run_notebooks

    (result,) = run_notebooks(["06"], output_dir=tmp_path, progress=False, report=False,
                              parameters={"06": {"peak_batch": 512, "temperature": 2.0}})
    assert result.status == "ok", result.error
    nb = nbformat.read(result.output, as_version=4)
    (cell,) = [c for c in nb.cells if "mine = interact(" in c.source]
    shown = "".join(o.get("text", "") for o in cell.outputs)
    assert "peak batch 512" in shown and "256" not in shown
    mine = read_records(result.output)["mine.recommendation"]
    assert mine["gamma"] == 2  # temperature 2.0 kept: a high temperature keeps drafts short


def test_07_checklist_steps(rec):
    r = rec["07_vllm_turn_it_on"]
    assert r["mine.label"] == "measure on and off under real load"
    assert r["mine.config"] == {"method": "mtp", "num_speculative_tokens": 1}
    assert r["lossless.synthetic_flagged"] and r["lossless.recommended_is_standard"]
    assert r["retune.gamma_from_measured_alpha"] >= 1
    assert len(r["watch"]) >= 4
    baseline = r["baseline.concurrency64"]
    assert {"TTFT", "TPOT"} <= set(baseline["metric"])
