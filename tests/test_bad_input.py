"""Bad input, edge values and broken files: a clear error (parameter, value, what is allowed),
never a silent guess, never a traceback from the CLI, and the documented exit status."""

from __future__ import annotations

import time

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from specnb import article, batch, cost, memory, methods, runner, theory, verify
from specnb.theory import _tokens


def _brute_force(alpha, c, gamma_max):
    g = np.arange(gamma_max + 1)[:, None]
    speed = _tokens(np.asarray(alpha)[None, :], g) / (g * np.asarray(c)[None, :] + 1.0)
    best = np.argmax(speed, axis=0)
    return best, speed[best, np.arange(len(alpha))]


# =========================================================================== CLI: run
@pytest.fixture(scope="module")
def one_nb(tmp_path_factory):
    d = tmp_path_factory.mktemp("nbs")
    nb = new_notebook(cells=[new_code_cell("alpha = 0.5", metadata={"tags": ["parameters"]})])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, d / "04_one.ipynb")
    return d


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


def test_a_plain_number_names_a_notebook(one_nb):
    assert runner.resolve(["4", "04", "one"], runner.find_notebooks(one_nb)) == ["04_one"]
