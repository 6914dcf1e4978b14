"""specnb.advise.article: the article's section 7 table as situation inputs, beside the rules."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from specnb.article import agrees
from specnb.advise import (ARTICLE_SITUATIONS, RULES, compare_with_article, recommend,
                           recommendation_table)
from specnb.vllm import check_speculative_config
from specnb.advise import batch_evidence, workload_evidence


#: The article's section 7 table as printed (../shared/reference/article-tables.md), in order.
PRINTED = ["eagle3 (if a drafter exists)", "mtp", "start with ngram or suffix", "draft_model",
           "measure on and off under real load", "small gamma, 2-3"]


PRINTED_WHY = ["longest acceptance on code, small batches",
               "the draft layers are in the checkpoint",
               "output copies the input, accepted without training",
               "no training, large low-QPS gain", "measured below 1x at batch 24-64",
               "low acceptance, long drafts waste compute"]


#: Inputs that describe a situation (no label, no method, no gamma can be passed in).
SITUATION_FACTS = {"workload", "target_has_mtp", "eagle3_drafter", "small_draft_model",
                   "spare_memory", "peak_batch", "temperature", "goal"}


def test_the_situations_are_the_articles_rows_in_order():
    assert [s.printed for s in ARTICLE_SITUATIONS] == PRINTED
    assert [s.printed_why for s in ARTICLE_SITUATIONS] == PRINTED_WHY


@pytest.mark.parametrize("situation", ARTICLE_SITUATIONS, ids=lambda s: s.situation)
def test_inputs_describe_the_situation_only(situation):
    assert set(situation.inputs) <= SITUATION_FACTS
    rec = recommend(**situation.inputs)
    assert rec.rules, "every piece of advice names the rules that produced it"
    names = {r.name for r in RULES}
    assert set(rec.rules) <= names
    assert all(r.source for r in RULES)
    if rec.config is not None:
        assert check_speculative_config(rec.config).accepted


def test_rules_reproduce_rows_1_to_5_and_not_row_6():
    df = recommendation_table()
    assert list(df["article recommendation"]) == PRINTED
    assert list(df["advice agrees"]) == [True, True, True, True, True, False]
    assert list(df["method"])[:5] == ["eagle3", "mtp", "ngram", "draft_model", "eagle3"]
    assert list(df["recommendation"])[:5] == PRINTED[:5]
    # row 6, creative writing with nothing but n-gram available: keep it off, not n-gram gamma 2
    creative = df.iloc[5]
    assert creative["recommendation"] == "keep it off" and pd.isna(creative["method"])
    assert "2-3" in creative["differs because"]


def test_row_5_reason_holds_for_eagle1_only():
    """'measured below 1x at batch 24-64' is true of EAGLE-1, not of the EAGLE-3 recommended."""
    ev = batch_evidence().set_index(["table", "method"])
    assert ev.loc[("SGLang, Table 3", "EAGLE"), "first_below_1x"] == 24
    assert ev.loc[("vLLM, Table 5", "EAGLE"), "first_below_1x"] == 32
    assert ev["first_below_1x"].isna().tolist() == [False, True, False, True]
    assert agrees(ev.loc[("SGLang, Table 3", "EAGLE-3"), "lowest"], 1.32, 2)
    assert agrees(ev.loc[("vLLM, Table 5", "EAGLE-3"), "lowest"], 1.01, 2)
    row = recommendation_table().iloc[4]
    assert row["method"] == "eagle3" and row["article reason holds"] == "no, for eagle3"
    assert "EAGLE-3 never did" in row["evidence"] and "1.01x at batch 56" in row["evidence"]


def test_reasons_of_rows_1_3_6_hold_by_the_numbers():
    code, copy = workload_evidence("code"), workload_evidence("copy-heavy")
    assert code["eagle3_best_task"] == "humaneval" and agrees(code["eagle3"], 6.47, 2)
    assert copy["pld_best_task"] == "cnndm" and agrees(copy["pld"], 2.42, 2)
    # the article: PLD 1.16-1.85x on the other four tasks
    assert agrees(copy["pld_others"][0], 1.16, 2) and agrees(copy["pld_others"][1], 1.85, 2)
    df = recommendation_table()
    assert list(df["article reason holds"]) == ["yes", "not a number", "yes", "not a number",
                                                "no, for eagle3", "yes"]


def test_row_details():
    by = {s.printed: recommend(**s.inputs) for s in ARTICLE_SITUATIONS}
    assert by["mtp"].config == {"method": "mtp", "num_speculative_tokens": 1}
    ngram = by["start with ngram or suffix"]
    # the article's n-gram example, same values as vLLM's docs
    assert json.dumps(ngram.config) == ('{"method": "ngram", "num_speculative_tokens": 4, '
                                        '"prompt_lookup_min": 2, "prompt_lookup_max": 5}')
    assert ngram.alternatives == ("suffix",)
    assert by["draft_model"].gamma == 5  # vLLM's draft-model examples use 5
    (same,) = [r for r in by["draft_model"].reasons if r.code == "draft-model-same-vocabulary"]
    assert "tokenizer and vocabulary" in same.message and "two orders" in same.message
    assert by["measure on and off under real load"].measure_first
    assert by["eagle3 (if a drafter exists)"].alternatives == ("ngram",)


def test_compare_with_article_uses_the_claims():
    s = ARTICLE_SITUATIONS[5]
    on = compare_with_article(s, recommend(workload="creative", temperature=1.0,
                                           eagle3_drafter=True))
    assert on["advice agrees"] and on["differs because"] == ""
