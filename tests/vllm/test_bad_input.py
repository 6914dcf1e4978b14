"""Bad input to specnb.vllm: a clear error (parameter, value, what is allowed), never a silent
guess."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specnb.advise import compare_bench
from specnb.vllm import (ConfigSyntaxError, acceptance_stats, check_speculative_config,
                         parse_speculative_config, python_snippet, read_bench, read_metrics,
                         sample_path, serve_command, speculative_config, yaml_config)
from specnb.vllm.logs import read_spec_decode_log
from specnb.vllm import SpecDecodeCounts


NGRAM = '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, ' \
        '"prompt_lookup_max": 5}'


# =========================================================================== vLLM metrics
def _scrape(drafts, draft_tokens, accepted):
    return "".join(f"# TYPE vllm:spec_decode_num_{n} counter\nvllm:spec_decode_num_{n}_total {v}\n"
                   for n, v in (("drafts", drafts), ("draft_tokens", draft_tokens),
                                ("accepted_tokens", accepted)))


# =========================================================================== vLLM config
@pytest.mark.parametrize("text", ["   ", "\n", " None", "None "])
def test_whitespace_is_not_an_empty_value_for_vllm(text):
    # vLLM's optional_type tests `val == "" or val == "None"` exactly; anything else is json.loads
    (f,) = check_speculative_config(text).errors
    assert "exactly '' or 'None'" in f.message and f.line == 1


@pytest.mark.parametrize("text,cause", [
    ("[" * 100000, "nested too deeply"),
    ('{"a": ' + "[" * 3000 + "]" * 3000 + "}", "nested too deeply"),
    ('{"method": "ngram", "num_speculative_tokens": ' + "9" * 5000 + "}", "more digits"),
    ("\ufeff" + NGRAM, "byte-order mark"),
    ('{"method": "ngram\x00", "num_speculative_tokens": 4}', "NUL character"),
    ("\udcff\udcfe{}", "the byte 0xff"),
])
def test_unparseable_text_gets_a_position_and_a_cause(text, cause):
    with pytest.raises(ConfigSyntaxError) as info:
        parse_speculative_config(text)
    assert cause in info.value.cause and info.value.line >= 1 and info.value.column >= 1
    (f,) = check_speculative_config(text).errors
    assert cause in f.message


def test_deep_python_dict_literal_is_diagnosed_not_crashed():
    result = check_speculative_config("{'a': " + "[" * 3000 + "]" * 3000 + "}")
    assert not result.accepted and "single quotes" in result.errors[0].message


def test_the_byte_order_mark_fix_is_the_config_without_it():
    (f,) = check_speculative_config("\ufeff" + NGRAM).errors
    assert json.loads(f.fix.removeprefix("use ")) == json.loads(NGRAM)


@pytest.mark.parametrize("version", ["0.33", "0.33.0", "v0.33.0", "0.33.0rc1", "0.33.0+cu128",
                                     "0.33.0.1", "0.33.0.dev12+gabc123", " 0.33.0 "])
def test_real_version_strings_are_read(version):
    assert check_speculative_config(NGRAM, vllm_version=version).accepted


@pytest.mark.parametrize("version", ["0.11.0junk", "", "latest", "11", "0.x"])
def test_version_garbage_is_refused(version):
    with pytest.raises(ValueError, match="vllm_version must be a release like '0.33.0'"):
        check_speculative_config(NGRAM, vllm_version=version)


def test_a_float_version_is_refused_because_0_10_reads_as_0_1():
    with pytest.raises(TypeError, match="0.10 would read as 0.1"):
        check_speculative_config(NGRAM, vllm_version=0.10)


def test_dict_values_must_be_json_and_keys_may_be_anything():
    with pytest.raises(TypeError, match=r"text_or_dict\['num_speculative_tokens'\].*int\(\)"):
        check_speculative_config({"method": "ngram", "num_speculative_tokens": np.int64(4)})
    result = check_speculative_config({1: 2, "method": "ngram", "num_speculative_tokens": 4})
    assert "1" in {f.key for f in result.errors}


def test_a_blank_model_is_an_error_where_vllm_loads_it():
    assert "model" in {f.key for f in check_speculative_config(
        {"model": "", "num_speculative_tokens": 4}).errors}
    with pytest.raises(ValueError, match="model is the blank string"):
        speculative_config("eagle3", 3, model="  ")
    # n-gram ignores model (a warning), so a blank one does not stop vLLM
    assert check_speculative_config({"method": "ngram", "model": "", "num_speculative_tokens": 4,
                                     "prompt_lookup_min": 2, "prompt_lookup_max": 5}).accepted


def test_nan_min_token_prob_is_rejected_like_vllm():
    # vLLM: `if not 0 <= suffix_decoding_min_token_prob <= 1: raise` -- NaN fails that test
    result = check_speculative_config({"method": "suffix", "num_speculative_tokens": 4,
                                       "suffix_decoding_min_token_prob": float("nan")})
    assert "suffix_decoding_min_token_prob" in {f.key for f in result.errors}


def test_builder_types():
    cfg = speculative_config("ngram", np.int64(4), prompt_lookup_min=np.int64(2),
                             prompt_lookup_max=5)
    assert cfg == {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2,
                   "prompt_lookup_max": 5}
    assert type(cfg["num_speculative_tokens"]) is int and type(cfg["prompt_lookup_min"]) is int
    for bad in ("4", 4.0, True):
        with pytest.raises(TypeError, match="num_speculative_tokens must be an int"):
            speculative_config("ngram", bad)
    with pytest.raises(TypeError, match=r"options\['prompt_lookup_min'\] must be a JSON value"):
        speculative_config("ngram", 4, prompt_lookup_min=object())


def test_renderers_write_plain_values():
    cfg = {"method": "ngram", "num_speculative_tokens": np.int64(4), "x": np.float64(0.5)}
    assert "np." not in python_snippet(cfg) and "np." not in yaml_config(cfg)
    assert '"num_speculative_tokens": 4' in serve_command(cfg, "m")
    with pytest.raises(TypeError, match="extra_args must be a list of words"):
        serve_command({"method": "ngram"}, "m", extra_args="--port 8001")


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-5"])
def test_a_counter_that_is_not_a_count_is_named(value):
    with pytest.raises(ValueError, match=rf"vllm:spec_decode_num_drafts_total.* is "):
        read_metrics(_scrape(value, 400, 100))


def test_an_empty_scrape_says_so():
    with pytest.raises(ValueError, match="text is empty"):
        read_metrics(" \n")


def test_inconsistent_counts_are_refused():
    with pytest.raises(ValueError, match=r"accepted tokens \(900\) exceed draft tokens \(400\)"):
        acceptance_stats(read_metrics(_scrape(100, 400, 900)))
    with pytest.raises(ValueError, match="accepted at position 0"):
        acceptance_stats(SpecDecodeCounts(10, 20, 15, (12, 3)))
    with pytest.raises(ValueError, match="counts.drafts must not be NaN"):
        acceptance_stats(SpecDecodeCounts(float("nan"), 10, 5))
    with pytest.raises(TypeError, match="counts.drafts must be a number"):
        acceptance_stats(SpecDecodeCounts("10", 10, 5))


def test_counters_that_decrease_name_the_cause():
    before, after = (sample_path(n).read_text() for n in ("metrics_before.prom",
                                                           "metrics_after.prom"))
    with pytest.raises(ValueError, match="decreased between the two scrapes"):
        read_metrics(before) - read_metrics(after)


def test_log_lines_with_bad_fields_are_named():
    v0 = ("Speculative metrics: Draft acceptance rate: 0.6, System efficiency: 0.6, Number of "
          "speculative tokens: 0, Number of accepted tokens: 1, Number of draft tokens: 2, "
          "Number of emitted tokens: 3")
    with pytest.raises(ValueError, match="line 1: 'Number of speculative tokens: 0' must be >= 1"):
        read_spec_decode_log(v0)
    gap = ("SpecDecoding metrics: Mean acceptance length: 2.00, Accepted: 100 tokens, Drafted: "
           "400 tokens, Per-position acceptance rate: 0.5,,0.3")
    with pytest.raises(ValueError, match="not a comma-separated list of numbers"):
        read_spec_decode_log(gap)
    over = gap.replace("0.5,,0.3", "1.5, 0.3")
    with pytest.raises(ValueError, match=r"fractions in \[0, 1\]"):
        read_spec_decode_log(over)


def test_no_draft_tokens_in_a_v0_line_is_not_a_division_by_zero():
    v0 = ("Speculative metrics: Draft acceptance rate: 0.0, System efficiency: 0.0, Number of "
          "speculative tokens: 3, Number of accepted tokens: 0, Number of draft tokens: 0, "
          "Number of emitted tokens: 0")
    assert np.isnan(read_spec_decode_log(v0)["mean_acceptance_length"][0])


# =========================================================================== bench, advise
@pytest.mark.parametrize("data,key", [({"output_throughput": "fast"}, "output_throughput"),
                                      ({"median_tpot_ms": float("nan")}, "median_tpot_ms"),
                                      ({"median_tpot_ms": -1}, "median_tpot_ms"),
                                      ({"median_tpot_ms": 10, "failed": float("inf")}, "failed"),
                                      ({"median_tpot_ms": 10, "spec_decode_acceptance_rate": "x"},
                                       "spec_decode_acceptance_rate")])
def test_bench_values_must_be_finite_numbers(data, key):
    with pytest.raises(ValueError, match=rf"{key} must be a finite number >= 0"):
        read_bench(data)


def test_bench_files_that_cannot_be_read(tmp_path):
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ValueError, match="not UTF-8 text"):
        read_bench(binary)
    with pytest.raises(IsADirectoryError):
        read_bench(tmp_path)
    with pytest.raises(ValueError, match="keys must be strings"):
        compare_bench({1: 2, "output_throughput": 3}, {"output_throughput": 3})
