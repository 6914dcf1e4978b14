"""specnb.vllm.schedule: the one schedule validator and lookup, as the serving plan uses
them; the schedule tax from data/."""

from __future__ import annotations

import numpy as np
import pytest

from specnb import serving as S
from specnb.vllm import describe_schedule, schedule_lookup, validate_schedule
from specnb.vllm.schedule import schedule_tax, schedule_tax_source


def test_schedule_lookup_follows_vllm_semantics():
    # vLLM's code comment: [(1,16,3),(32,128,2)] maps 17-31 to K = 3; past the last range -> last
    lk = np.array(schedule_lookup([[1, 16, 3], [32, 128, 2]], 3, 200)[1:])  # index 0 = batch 1
    assert (lk[16:31] == 3).all() and (lk[31:128] == 2).all() and (lk[128:] == 2).all()
    # clamped to num_speculative_tokens
    assert (np.array(schedule_lookup([[1, 64, 5]], 3, 10)[1:]) == 3).all()


@pytest.mark.parametrize("sched, nst, match", [
    ([], None, "must not be empty"),
    ([[1, 64]], None, r"\[range_start, range_end, K\]"),
    ([[1, 64, True]], None, "3 integers"),
    ([[0, 64, 3]], None, "must be positive"),
    ([[1, 64, 3], [70, 65, 1]], None, "range_start must be <= range_end"),
    ([[1, 64, -1]], None, "K must be >= 0"),
    ([[1, 64, 3], [64, 128, 1]], None, "must not overlap"),
    ([[2, 64, 3]], None, "start at batch size 1"),
    ([[1, 64, 5]], 3, "every K must be <= num_speculative_tokens = 3"),
])
def test_bad_schedules(sched, nst, match):
    with pytest.raises(ValueError, match=match):
        validate_schedule(sched, nst)


def test_schedule_tax_matches_the_report():
    (c_lo, off_lo, on_lo), (c_hi, off_hi, on_hi) = schedule_tax()
    assert (c_lo, c_hi) == (2, 189)
    lo, hi = on_lo / off_lo - 1, on_hi / off_hi - 1
    # printed +6.56 % and +21.58 %; 93.820 / 77.164 - 1 = 0.215852 (the report truncates)
    assert round(100 * lo, 2) == 6.56 and int(100 * hi * 100) / 100 == 21.58
    assert "#49548" in schedule_tax_source()


def test_check_schedule_takes_integer_arrays_and_context_zero_is_quiet():
    assert validate_schedule(np.array([[1, 8, 3], [9, 16, 0]])) == [(1, 8, 3), (9, 16, 0)]
    with pytest.raises(ValueError, match="with 3 integers"):
        validate_schedule(np.array([[1.0, 8.0, 3.0]]))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert S.max_batch_in_memory(S.setup("H100", "Llama-3.1-8B", "eagle3"), 0) == 2 ** 53


def test_schedule_lookup_follows_vllms_table():
    # gaps carry the previous K, sizes past the last range take the last K, K is clamped
    table = schedule_lookup([[1, 16, 3], [32, 128, 2]], num_speculative_tokens=4, max_num_seqs=200)
    assert table[1] == table[16] == 3 and table[17] == table[31] == 3
    assert table[32] == table[128] == table[200] == 2
    assert schedule_lookup([[1, 4, 9]], 2, 8)[1:] == [2] * 8
    assert validate_schedule([[65, 512, 0], [1, 64, 3]]) == [(1, 64, 3), (65, 512, 0)]
    assert "K=3 for the gap 17-31" in describe_schedule([[1, 16, 3], [32, 128, 2]])
    with pytest.raises(ValueError, match="first range must start at batch size 1"):
        validate_schedule([[2, 8, 1]])
    with pytest.raises(ValueError, match="max_num_seqs"):
        schedule_lookup([[1, 16, 5], [17, 32, 4], [33, 64, 3], [65, 128, 1], [129, 512, 0]], 5, 0)


def test_the_model_runner_and_the_dropped_schedule_follow_vllm_033():
    # trial 7 T7-05: vLLM 0.33 config/vllm.py use_v2_model_runner and
    # _maybe_disable_dynamic_sd_for_v1 / _for_data_parallel
    from specnb.vllm.schedule import model_runner, schedule_dropped

    v2, v1 = {"VLLM_USE_V2_MODEL_RUNNER": "1"}, {"VLLM_USE_V2_MODEL_RUNNER": "0"}
    assert [model_runner(m) for m in ("suffix", "custom_class", "eagle3", "ngram", "medusa")] \
        == ["v1", "v1", "v2", "v2", "v2"]
    assert model_runner("suffix", v2) == "refused" and model_runner("eagle3", v1) == "v1"
    # not an int: vLLM's bool(int(value)) fails (trial 9, T9-03)
    assert model_runner("suffix", {"VLLM_USE_V2_MODEL_RUNNER": "x"}) == "refused"
    assert schedule_dropped("suffix", 4) is not None and "=4" in schedule_dropped("suffix", 4)
    for method in ("ngram", "eagle", "eagle3", "mtp", "draft_model", "dflash"):
        assert schedule_dropped(method) is None and schedule_dropped(method, env=v1) is None
    assert schedule_dropped("medusa") is None and schedule_dropped("medusa", env=v1)
    assert schedule_dropped("eagle3", data_parallel_size=2) is not None


def test_the_schedule_cost_says_where_it_was_measured():
    # trial 7 T7-11: #49548 is Model Runner V1's (piecewise graphs forced); V2 not measured
    from specnb.vllm.schedule import schedule_tax_text

    text = schedule_tax_text()
    assert text.startswith("on Model Runner V1") and "Model Runner V2" in text
    assert "+6.6%" in text and "+21.6%" in text
