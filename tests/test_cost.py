"""specnb.cost: the article's figures and bad input."""

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specnb import cost


def test_usd_per_million_formula():
    # one hour at 1 token/s: 3600 tokens for the hourly price
    assert cost.usd_per_million_tokens(3.6, 1.0) == pytest.approx(1000.0)
    assert cost.seconds_for_tokens(500, 250.0) == 2.0


@given(st.floats(0.01, 100), st.floats(1, 10_000), st.floats(1.01, 10))
def test_saving_is_price_independent(price, tps, ratio):
    base = cost.usd_per_million_tokens(price, tps)
    fast = cost.usd_per_million_tokens(price, tps * ratio)
    assert fast / base == pytest.approx(cost.relative_cost(ratio))


def test_relative_cost_vectorized():
    out = cost.relative_cost(np.array([1.38, 0.88]))
    assert out.shape == (2,) and out[0] < 1 < out[1]


@pytest.mark.parametrize("on,off", [(10.0, 2000.0), (1.0, 158.34), (137.0, 158.34), (373.25, 158.34)])
def test_cost_change_never_a_negative_saving(on, off):
    text = cost.describe_change(on / off)
    rel = off / on
    assert "-" not in text
    if rel >= 2:
        assert text == f"{rel:,.1f}x the cost per token"
    elif rel > 1:
        assert text == f"{100 * (rel - 1):.1f}% more expensive per token"
    else:
        assert text == f"{100 * (1 - rel):.1f}% cheaper per token"
    assert re.search(r"\d\.\d[%x]", text)  # always one decimal


# --------------------------------------------------------------------------- bad input

BAD = [
    (cost.usd_per_million_tokens, dict(usd_per_hour=-1, tokens_per_second=10), "usd_per_hour"),
    (cost.usd_per_million_tokens, dict(usd_per_hour=1, tokens_per_second=0), "tokens_per_second"),
    (cost.usd_per_million_tokens, dict(usd_per_hour=math.nan, tokens_per_second=10), "usd_per_hour"),
    (cost.seconds_for_tokens, dict(n_tokens=-5, tokens_per_second=10), "n_tokens"),
    (cost.seconds_for_tokens, dict(n_tokens=5, tokens_per_second=-10), "tokens_per_second"),
    (cost.relative_cost, dict(throughput_ratio=0), "throughput_ratio"),
    (cost.relative_cost, dict(throughput_ratio=math.inf), "throughput_ratio"),
    (cost.describe_change, dict(throughput_ratio=0.0), "throughput_ratio"),
    (cost.describe_change, dict(throughput_ratio=float("nan")), "throughput_ratio"),
]


@pytest.mark.parametrize("fn,kwargs,param", BAD, ids=[f"{f.__name__}-{p}-{i}" for i, (f, _, p) in enumerate(BAD)])
def test_bad_input_names_the_parameter(fn, kwargs, param):
    with pytest.raises(ValueError, match=param):
        fn(**kwargs)


@pytest.mark.parametrize("call,names", [
    (lambda: cost.usd_per_million_tokens([1.0, 2.0], [1.0, 2.0, 3.0]), "usd_per_hour (2,)"),
    (lambda: cost.seconds_for_tokens([1.0, 2.0], [1.0, 2.0, 3.0]), "n_tokens (2,)"),
])
def test_shapes_that_do_not_broadcast_name_each_parameter(call, names):
    with pytest.raises(ValueError, match="must broadcast to one shape") as info:
        call()
    assert names in str(info.value)


def test_results_that_overflow_are_errors_not_inf_or_garbage():
    with pytest.raises(ValueError, match="usd_per_million_tokens overflows"):
        cost.usd_per_million_tokens(4.29, 1e-320)


@pytest.mark.parametrize("ratio, text", [
    (1.0004, "0.04% cheaper per token"),
    (0.9999, "0.01% more expensive per token"),
    (1e6, "99.9999% cheaper per token"),
    (1.5, "33.3% cheaper per token"),
])
def test_describe_change_never_rounds_a_real_change_to_none_or_free(ratio, text):
    # T8a-11: computed relative cost, printed with enough decimals to stay nonzero / below 100%
    assert cost.describe_change(ratio) == text
