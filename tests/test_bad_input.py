"""Bad input, edge values and broken files: a clear error (parameter, value, what is allowed),
never a silent guess, never a traceback from the CLI, and the documented exit status."""

from __future__ import annotations

import io
import json
import sys
import time

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from specnb import article, batch, cost, memory, methods, runner, theory, verify
from specnb.cli import main
from specnb.theory import _tokens
from specnb.vllm import (
    ConfigSyntaxError,
    acceptance_stats,
    check_speculative_config,
    compare_bench,
    parse_speculative_config,
    python_snippet,
    read_bench,
    read_metrics,
    read_spec_decode_log,
    recommend,
    sample_path,
    serve_command,
    speculative_config,
    yaml_config,
)
from specnb.vllm.metrics import SpecDecodeCounts

NGRAM = '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, ' \
        '"prompt_lookup_max": 5}'


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def usage_exit(capsys, *argv):
    """argparse usage errors exit 2 through SystemExit; return the stderr text."""
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    assert info.value.code == 2
    return capsys.readouterr().err


def bytes_stdin(monkeypatch, data: bytes):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


# =========================================================================== numbers
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
    (lambda: cost.usd_per_million_tokens([1.0, 2.0], [1.0, 2.0, 3.0]), "usd_per_hour (2,)"),
    (lambda: cost.seconds_for_tokens([1.0, 2.0], [1.0, 2.0, 3.0]), "n_tokens (2,)"),
    (lambda: memory.kv_cache_bytes_per_token([32, 40], [8, 8, 8], 128), "n_kv_heads (3,)"),
    (lambda: memory.concurrent_sequences([1e9, 2e9], [1, 2, 3], 1.0), "seq_len (3,)"),
    (lambda: memory.sequences_displaced([4e10, 3e10], [2e9, 1e9, 1e9], 4096, 131072),
     "draft_weight_bytes (3,)"),
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
    assert memory.kv_cache_bytes_per_token(np.uint8(32), np.int16(8), np.int64(128)) == 131072.0


def test_huge_gamma_max_neither_allocates_nor_changes_the_answer():
    start = time.perf_counter()
    assert theory.optimal_gamma(0.8, 0.05, gamma_max=10 ** 9) == theory.optimal_gamma(0.8, 0.05)
    g, s = theory.optimal_gamma(np.linspace(0.0, 0.99, 2000), 0.01, gamma_max=10 ** 9)
    assert g.shape == (2000,) and g.max() < 200
    # alpha = 1 with c >= 1: the speedup never exceeds 1, so gamma 0 is known at once
    assert theory.optimal_gamma(1.0, 1.5, gamma_max=2 ** 53) == (0, 1.0)
    assert time.perf_counter() - start < 30


def _brute_force(alpha, c, gamma_max):
    g = np.arange(gamma_max + 1)[:, None]
    speed = _tokens(np.asarray(alpha)[None, :], g) / (g * np.asarray(c)[None, :] + 1.0)
    best = np.argmax(speed, axis=0)
    return best, speed[best, np.arange(len(alpha))]


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


def test_results_that_overflow_are_errors_not_inf_or_garbage():
    with pytest.raises(ValueError, match="usd_per_million_tokens overflows"):
        cost.usd_per_million_tokens(4.29, 1e-320)
    with pytest.raises(ValueError, match="beyond int64"):
        memory.concurrent_sequences(1e308, 1, 1e-300)


def test_scalar_helpers_refuse_arrays_and_bools():
    with pytest.raises(TypeError, match="value must be a single number"):
        article.agrees([3.2, 3.3], 3.2, 2)
    with pytest.raises(TypeError, match="ratio must be a single number"):
        batch.article_format([1.2, 1.3])
    with pytest.raises(ValueError, match="temperature must be one of 0, 1; got the boolean True"):
        methods.table1("Vicuna 13B", True)
    with pytest.raises(TypeError, match="computed must be a dict"):
        article.compare([("key", 1.0)])


def test_batch_pairs_must_be_one_dimensional_sequences():
    assert batch.largest_paying_batch((b for b in [1, 2]), [1.2, 1.1]) == 2
    with pytest.raises(TypeError, match="batch_sizes must be a 1-D sequence"):
        batch.largest_paying_batch("12", [1.2, 1.1])
    with pytest.raises(TypeError, match="batch_sizes must be a 1-D sequence"):
        batch.largest_paying_batch(4, 1.2)
    with pytest.raises(TypeError, match="ratios"):
        batch.first_losing_batch([1, 2], [[1.2, 1.1]])


def test_methods_as_a_single_string_is_named():
    with pytest.raises(TypeError, match="methods must be a list of method names"):
        methods.speedup_band(methods.table1(), "PLD")
    with pytest.raises(ValueError, match="column must be one of"):
        methods.is_increasing(methods.table1(), column="latency")


def test_verify_names_bad_tokens_and_rng():
    p = [0.5, 0.5]
    with pytest.raises(ValueError, match=r"tokens must be an integer in \[0, 1\], got 5"):
        verify.chi_square([5, 0], p)
    with pytest.raises(ValueError, match="tokens must be a non-empty 1-D array"):
        verify.total_variation([], p)
    with pytest.raises(ValueError, match="tokens must be a whole number"):
        verify.empirical([0.5, 1.0], 2)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        verify.chi_square([0, 0], [1.0, 0.0])
    with pytest.raises(TypeError, match="rng must be a numpy Generator"):
        verify.speculative_sample(p, p, 3, None)


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


@pytest.mark.parametrize("version", ["0.11", "0.11.0", "v0.11.0", "0.11.0rc1", "0.11.0+cu128",
                                     "0.10.1.1", "0.11.0.dev12+gabc123", " 0.11.0 "])
def test_real_version_strings_are_read(version):
    assert check_speculative_config(NGRAM, vllm_version=version).accepted


@pytest.mark.parametrize("version", ["0.11.0junk", "", "latest", "11", "0.x"])
def test_version_garbage_is_refused(version):
    with pytest.raises(ValueError, match="vllm_version must look like '0.11.0'"):
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


# =========================================================================== vLLM metrics
def _scrape(drafts, draft_tokens, accepted):
    return "".join(f"# TYPE vllm:spec_decode_num_{n} counter\nvllm:spec_decode_num_{n}_total {v}\n"
                   for n, v in (("drafts", drafts), ("draft_tokens", draft_tokens),
                                ("accepted_tokens", accepted)))


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


def test_advice_checks_c():
    stats = acceptance_stats(SpecDecodeCounts(10, 40, 20))
    with pytest.raises(TypeError, match="c must be a number"):
        stats.advice(c="0.1")
    with pytest.raises(ValueError, match="c must be in"):
        stats.advice(c=-1)


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


def test_recommend_wants_single_numbers():
    with pytest.raises(TypeError, match="alpha must be a single number"):
        recommend(alpha=[0.5, 0.6], c=0.1)
    with pytest.raises(TypeError, match="temperature must be a number"):
        recommend(temperature="hot")


# =========================================================================== CLI: config
def test_cli_check_edge_values(capsys):
    assert run(capsys, "config", "check", "")[0] == 0
    assert run(capsys, "config", "check", "   ")[0] == 1
    code, out, _ = run(capsys, "config", "check", "[" * 5000)
    assert code == 1 and "nested too deeply" in out
    code, out, _ = run(capsys, "config", "check", "42")
    assert code == 1 and "must be a JSON object" in out


def test_cli_check_non_utf8_stdin(capsys, monkeypatch):
    bytes_stdin(monkeypatch, b'\xff\xfe{"a": 1}')
    code, out, _ = run(capsys, "config", "check", "-")
    assert code == 1 and "0xff" in out


def test_cli_check_big_stdin(capsys, monkeypatch):
    bytes_stdin(monkeypatch, ('{"method": "' + "x" * 1_000_000 + '"}').encode())
    code, out, _ = run(capsys, "config", "check", "-")
    assert code == 1 and "unknown method" in out


def test_cli_check_version_garbage_is_a_usage_error(capsys):
    code, _, err = run(capsys, "config", "check", NGRAM, "--vllm-version", "0.11.0junk")
    assert code == 2 and "vllm_version must look like" in err


@pytest.mark.parametrize("argv,words", [
    (["--set", "method=eagle"], "give method with the METHOD argument"),
    (["--set", "num_speculative_tokens=5"], "give num_speculative_tokens with -k"),
    (["--set", "model=x"], "give model with --model"),
    (["--set", "=3"], "non-empty KEY"),
    (["--set", "prompt_lookup_min=2", "--set", "prompt_lookup_min=3"], "given twice"),
    (["--set", "x=" + "[" * 5000], "nested too deeply"),
])
def test_cli_build_set_conflicts_are_usage_errors(capsys, argv, words):
    code, _, err = run(capsys, "config", "build", "ngram", "-k", "4", *argv)
    assert code == 2 and words in err


def test_cli_build_blank_model_is_rejected(capsys):
    code, _, err = run(capsys, "config", "build", "eagle3", "-k", "3", "--model", "")
    assert code == 1 and "blank string" in err


# =========================================================================== CLI: metrics, bench
def test_cli_metrics_files(capsys, tmp_path, monkeypatch):
    empty = tmp_path / "empty.prom"
    empty.write_text("")
    binary = tmp_path / "bin.prom"
    binary.write_bytes(b"\xff\xfe\x00")
    after, before = sample_path("metrics_after.prom"), sample_path("metrics_before.prom")
    assert run(capsys, "metrics", str(tmp_path / "missing.prom"))[0] == 2
    code, _, err = run(capsys, "metrics", str(tmp_path))
    assert code == 2 and "Is a directory" in err
    code, _, err = run(capsys, "metrics", str(empty))
    assert code == 1 and "empty" in err
    code, _, err = run(capsys, "metrics", str(binary))
    assert code == 1 and "not UTF-8 text" in err
    code, _, err = run(capsys, "metrics", str(after), str(before))
    assert code == 1 and "swapped" in err
    assert run(capsys, "metrics", "-", "-")[0] == 2
    assert "positive integer" in usage_exit(capsys, "metrics", str(after), "-k", "0")


def test_cli_metrics_reports_skipped_log_lines(capsys, tmp_path):
    log = tmp_path / "mixed.log"
    log.write_text(sample_path("spec_decode_current.log").read_text()
                   + "INFO SpecDecoding metrics: Mean acceptance length: 2.00, Accepted: 1 tokens, "
                     "Drafted: 4 tokens, Per-position acceptance rate: 0.5,,0.3\n")
    code, out, _ = run(capsys, "metrics", str(log))
    assert code == 0 and "note: skipped unreadable spec-decode line(s) [2]" in out


def test_cli_bench_files(capsys, tmp_path):
    on = str(sample_path("bench_on.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"output_throughput": "fast"}')
    code, _, err = run(capsys, "bench", on, str(tmp_path))
    assert code == 2 and "Is a directory" in err
    code, _, err = run(capsys, "bench", on, str(bad))
    assert code == 1 and "output_throughput must be a finite number" in err
    assert "in [0, 1)" in usage_exit(capsys, "bench", on, on, "--tolerance", "2")
    assert "in [0, 1)" in usage_exit(capsys, "bench", on, on, "--tolerance", "nan")


# =========================================================================== CLI: run
@pytest.fixture(scope="module")
def one_nb(tmp_path_factory):
    d = tmp_path_factory.mktemp("nbs")
    nb = new_notebook(cells=[new_code_cell("alpha = 0.5", metadata={"tags": ["parameters"]})])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, d / "04_one.ipynb")
    return d


def test_a_plain_number_names_a_notebook(one_nb):
    assert runner.resolve(["4", "04", "one"], runner.find_notebooks(one_nb)) == ["04_one"]


@pytest.mark.parametrize("yaml_text,words", [
    ("- 1\n- 2\n", "must map notebook names"),
    ("true: {alpha: 1}\n", "True is not a notebook name"),
    ("04: {alpha: 2020-01-01}\n", "04.alpha is of type date"),
    ("04: {alpha: !!set {a, b}}\n", "04.alpha is of type set"),
    ("04: {alpha: [1, {2: 3}]}\n", "mapping keys must be strings"),
    ("99: {alpha: 1}\n", "parameters for notebook '99' matches no notebook"),
    ("04: {beta: 1}\n", "unknown parameter(s) beta"),
])
def test_cli_run_bad_parameters_files(capsys, tmp_path, one_nb, yaml_text, words):
    params = tmp_path / "p.yaml"
    params.write_text(yaml_text)
    code, _, err = run(capsys, "run", "--notebooks", str(one_nb), "--output",
                       str(tmp_path / "out"), "--parameters", str(params))
    assert code == 2 and words in err
    assert not (tmp_path / "out").exists()  # nothing ran


def test_cli_run_usage_errors(capsys, tmp_path, one_nb):
    code, _, err = run(capsys, "run", "--notebooks", str(one_nb), "--parameters", str(tmp_path))
    assert code == 2 and "cannot be read" in err
    code, _, err = run(capsys, "run", "--notebooks", str(tmp_path), "--output", str(tmp_path))
    assert code == 2 and "no notebooks named NN_slug.ipynb" in err
    code, _, err = run(capsys, "run", "--notebooks", str(one_nb), "--output", "/dev/null/x")
    assert code == 2 and "cannot create the output folder" in err
    assert "positive integer" in usage_exit(capsys, "run", "--cell-timeout", "0")
    with pytest.raises(ValueError, match="cell_timeout must be an integer >= 1"):
        runner.run_notebooks(notebook_dir=one_nb, cell_timeout=-1, output_dir=tmp_path)


# =========================================================================== CLI: pipes
def test_cli_output_into_a_closed_pipe_is_quiet(tmp_path):
    import subprocess

    big = tmp_path / "big.json"
    big.write_text('{"method": "' + "x" * 1_000_000 + '"}')  # output far beyond a pipe buffer
    with big.open("rb") as stdin:
        proc = subprocess.Popen([sys.executable, "-m", "specnb", "config", "check", "-"],
                                stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout.read(10) == b"error: met"
        proc.stdout.close()  # like `| head -c 10`
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err
