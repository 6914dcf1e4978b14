"""specnb.vllm.recommend: the article's recommendation table, row by row, from inputs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb.theory import optimal_gamma
from specnb.vllm import (
    ARTICLE_SITUATIONS,
    MEASURE_BATCH,
    check_speculative_config,
    recommend,
    recommendation_table,
)

#: The article's section 7 table as printed (../shared/reference/article-tables.md), in order.
PRINTED = ["eagle3 (if a drafter exists)", "mtp", "start with ngram or suffix", "draft_model",
           "measure on and off under real load", "small gamma, 2-3"]


def test_the_situations_are_the_articles_rows_in_order():
    assert [s.printed for s in ARTICLE_SITUATIONS] == PRINTED


@pytest.mark.parametrize("situation", ARTICLE_SITUATIONS, ids=lambda s: s.situation)
def test_recommend_reproduces_each_row(situation):
    rec = recommend(**situation.inputs)
    assert rec.label == situation.printed
    assert check_speculative_config(rec.config).accepted


def test_row_details():
    by = {s.printed: recommend(**s.inputs) for s in ARTICLE_SITUATIONS}
    assert by["mtp"].config == {"method": "mtp", "num_speculative_tokens": 1}
    ngram = by["start with ngram or suffix"]
    # the article's n-gram example, same values as vLLM's docs
    assert json.dumps(ngram.config) == ('{"method": "ngram", "num_speculative_tokens": 4, '
                                        '"prompt_lookup_min": 2, "prompt_lookup_max": 5}')
    assert ngram.alternatives == ("suffix",)
    assert by["draft_model"].gamma == 5  # vLLM's draft-model examples use 5
    creative = by["small gamma, 2-3"]
    assert creative.gamma_range == (2, 3) and 2 <= creative.gamma <= 3
    assert by["measure on and off under real load"].measure_first
    assert by["eagle3 (if a drafter exists)"].alternatives == ("ngram",)


def test_table_matches_every_row():
    df = recommendation_table()
    assert df["matches"].all() and len(df) == 6


def test_measured_alpha_sets_gamma_through_the_theory():
    rec = recommend(eagle3_drafter=True, alpha=0.8, c=0.05)
    assert rec.gamma == 8  # the article: at alpha 0.8 gamma 8 reaches only 3.09x
    assert rec.gamma == optimal_gamma(0.8, 0.05)[0]
    assert "3.09x" in " ".join(rec.reasons)
    off = recommend(alpha=0.05, c=0.1)
    assert off.method is None and off.config is None and off.label == "keep it off"


def test_model_ids_go_into_the_config():
    rec = recommend(small_draft_model=True, spare_memory=True, draft_model="Qwen/Qwen3-0.6B")
    assert rec.config["model"] == "Qwen/Qwen3-0.6B"
    assert recommend(eagle3_drafter=True, eagle3_model="a/b.eagle3").config["model"] == \
        "a/b.eagle3"


def test_no_spare_memory_means_no_draft_model():
    rec = recommend(small_draft_model=True, spare_memory=False)
    assert rec.method == "ngram"
    assert any("KV cache" in r for r in rec.reasons)


@pytest.mark.parametrize("kwargs,match", [
    ({"target_has_mtp": "yes"}, "target_has_mtp must be True or False"),
    ({"eagle3_drafter": 1}, "eagle3_drafter must be True, False or None"),
    ({"peak_batch": 0}, "peak_batch"),
    ({"temperature": -1}, "temperature"),
    ({"goal": "speed"}, "goal must be one of"),
    ({"alpha": 0.8}, "alpha and c go together"),
    ({"alpha": 1.5, "c": 0.1}, "alpha"),
    ({"draft_model": ""}, "draft_model must be a checkpoint"),
])
def test_bad_inputs_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        recommend(**kwargs)


@settings(max_examples=150, deadline=None)
@given(st.booleans(), st.sampled_from([True, False, None]), st.booleans(), st.booleans(),
       st.booleans(), st.integers(1, 512), st.floats(0, 2), st.sampled_from(["latency",
                                                                             "throughput"]))
def test_every_situation_gets_a_config_vllm_accepts(mtp, eagle, small, spare, copy, batch,
                                                    temp, goal):
    rec = recommend(target_has_mtp=mtp, eagle3_drafter=eagle, small_draft_model=small,
                    spare_memory=spare, copy_heavy=copy, peak_batch=batch, temperature=temp,
                    goal=goal)
    assert check_speculative_config(rec.config).accepted
    assert rec.gamma >= 1 and rec.config["num_speculative_tokens"] == rec.gamma
    assert rec.measure_first == (batch >= MEASURE_BATCH)
    if mtp:
        assert rec.method == "mtp"


def test_measure_threshold_is_where_the_paper_measured_a_loss():
    from specnb import batch

    ratios = batch.ratio_table("eagle3_table3_sglang_batch")
    assert batch.first_losing_batch(ratios.index, ratios["EAGLE"]) == MEASURE_BATCH
