"""notebooks/06_what_to_turn_on.ipynb runs headless through the runner and reproduces the
printed values: the article's section 7 (recommendation table, n-gram example) and vLLM's method
table (section 4), with the published numbers behind them; a parameter outside a control's
range is used as given."""

from __future__ import annotations

import json
import shlex

import pandas as pd
import pytest

from specnb.article import agrees
from specnb.nb import read_records

pytestmark = pytest.mark.slow

NB = "06_what_to_turn_on"
NOTEBOOKS = [NB]

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
    """Values recorded by the notebook (executed once per session by conftest)."""
    return {name: records[name] for name in NOTEBOOKS}


def test_runs_headless(executed_notebooks):
    results = {n: executed_notebooks[n] for n in NOTEBOOKS}
    assert {n: r.status for n, r in results.items()} == {n: "ok" for n in NOTEBOOKS}, \
        {n: r.error for n, r in results.items()}


def test_06_method_table(rec):
    rows = rec["06_what_to_turn_on"]["methods.article_rows"]
    got = list(zip(rows["vllm_method"], rows["low_qps_gain"], rows["high_qps_gain"]))
    assert got == ARTICLE_METHOD_ROWS


def test_06_recommendation_table_from_situations(rec):
    r = rec["06_what_to_turn_on"]
    table = r["recommend.table"]
    assert list(table["article recommendation"]) == ARTICLE_RECOMMENDATIONS
    # the rules reproduce rows 1-5 from situation inputs, and part from the article in row 6
    assert list(table["advice agrees"]) == [True] * 5 + [False]
    assert list(table["recommendation"])[:5] == ARTICLE_RECOMMENDATIONS[:5]
    assert table["recommendation"].iloc[5] == "keep it off"
    assert r["recommend.rows_agreeing"] == 5
    assert all(table["rules"].str.len() > 0)
    rules = r["recommend.rules"]
    assert set(rules["rule"]) >= {"mtp", "eagle3", "copy", "draft_model", "creative", "sampling",
                                  "peak_batch"} and (rules["source"].str.len() > 20).all()
    configs = r["recommend.configs"]
    assert configs["vLLM accepts"].iloc[:5].all() and configs["speculative_config"].iloc[5] == \
        "(keep it off)"


def test_06_row5_reason_is_eagle1s(rec):
    """'measured below 1x at batch 24-64' holds for EAGLE-1 only (Tables 3 and 5)."""
    r = rec["06_what_to_turn_on"]
    ev = r["recommend.batch_evidence"]
    first = dict(zip(zip(ev["table"], ev["method"]), ev["first_below_1x"]))
    assert first[("SGLang, Table 3", "EAGLE")] == 24 and first[("vLLM, Table 5", "EAGLE")] == 32
    assert pd.isna(first[("SGLang, Table 3", "EAGLE-3")])
    assert pd.isna(first[("vLLM, Table 5", "EAGLE-3")])
    assert r["recommend.table"]["article reason holds"].iloc[4] == "no, for eagle3"


def test_06_row6_numbers(rec):
    r = rec["06_what_to_turn_on"]
    # the article's gamma table, row 1: 1.25x for 3.21x the operations
    assert agrees(r["recommend.low_acceptance"]["speedup"], 1.25, 2)
    assert agrees(r["recommend.low_acceptance"]["operations"], 3.21, 2)
    assert round(min(r["recommend.sampling_evidence"]["share_of_best"]), 2) == 0.93


def test_06_faq_draft_sizes(rec):
    # Leviathan Table 2 (T=0): the smallest draft is the fastest on both tasks
    sizes = rec["06_what_to_turn_on"]["faq.draft_size_speedups"]
    assert list(sizes["draft"]) == ["T5-small", "T5-base", "T5-large"]
    assert list(sizes["EnDe"]) == [3.4, 2.8, 1.7] and list(sizes["CNNDM"]) == [3.1, 3.0, 2.2]
    # "accepts the most (0.82 against 0.75) ... c more than five times the small draft's"
    faq = rec["06_what_to_turn_on"]["faq.draft_size_table"].set_index("draft")
    assert list(faq["EnDe alpha"]) == [0.75, 0.80, 0.82]
    assert faq.loc["T5-large", "c (Table 4)"] / faq.loc["T5-small", "c (Table 4)"] > 5


def test_06_answer_up_front_and_faq_in_the_html(executed_notebooks):
    page06 = executed_notebooks["06_what_to_turn_on"].html.read_text(encoding="utf-8")
    for phrase in ("Answer.", "same vocabulary size", "universal assisted decoding",
                   "two orders of magnitude", "OpenAI, Anthropic", "medium-to-low QPS"):
        assert phrase in page06, phrase
    # the slip table quotes vLLM's "<function loads ...>": escaped, or a browser hides it as a tag
    assert "<function loads" not in page06 and "the old rules" not in page06


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
    # the parameters cell describes copy-heavy output, drafter not checked (None): EAGLE-3 if
    # one exists (5.01x on CNN/DM against prompt lookup's 2.42x), else ngram or suffix (T5-M5)
    assert r["mine.recommendation"]["recommendation"] == "eagle3 (if a drafter exists)"
    assert r["mine.recommendation"]["alternatives"] == "ngram, suffix"
    assert r["mine.config"]["method"] == "eagle3"


def test_06_slip_table_is_split(executed_notebooks):
    """The slip table comes as two narrow tables (it overflowed 1,000 px as one)."""
    import nbformat

    nb = nbformat.read(executed_notebooks["06_what_to_turn_on"].output, as_version=4)
    (i,) = [k for k, c in enumerate(nb.cells) if 'record("ngram.slips"' in c.source]
    first = nb.cells[i].outputs[-1]["data"]["text/html"]
    second = nb.cells[i + 1].outputs[-1]["data"]["text/html"]
    assert "message" not in first and "column" in first
    assert "message" in second and "fix" in second and "line" not in second.split("</thead>")[0]


def test_06_controls_never_clip_a_parameter(tmp_path):
    """A parameter outside a control's range (peak batch 512 > the slider's 256, temperature 2.0
    > 1.5, a goal not among the options) is used as given, not clipped by ipywidgets."""
    import nbformat

    from specnb.runner import run_notebooks

    (result,) = run_notebooks(["06"], output_dir=tmp_path, progress=False, report=False,
                              parameters={"06": {"peak_batch": 512, "temperature": 2.0,
                                                 # no drafter: the copy rule's ngram 4 (an
                                                 # unchecked one is eagle3 at 3, T5-M5)
                                                 "eagle3_drafter": False}})
    assert result.status == "ok", result.error
    nb = nbformat.read(result.output, as_version=4)
    (cell,) = [c for c in nb.cells if "mine = interact(" in c.source]
    shown = "".join(o.get("text", "") for o in cell.outputs)
    assert "peak batch 512" in shown and "256" not in shown
    mine = read_records(result.output)["mine.recommendation"]
    # temperature 2.0 kept: sampling caps n-gram's starting 4 at 3, and the reasons say so
    assert mine["gamma"] == 3 and "sampling" in mine["rules"]
    assert "gamma 3: ngram starts at 4" in shown
