"""specnb.cost and specnb.memory: the article's figures and bad input."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specnb import cost, memory


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


def test_weight_bytes_per_dtype():
    n = 1e9
    got = {d: memory.weight_bytes(n, d) for d in memory.DTYPE_BYTES}
    assert got == {"fp32": 4e9, "bf16": 2e9, "fp16": 2e9, "fp8": 1e9, "int8": 1e9, "int4": 0.5e9}


def test_kv_cache_llama31_8b():
    # 32 layers, 8 KV heads, head dim 128, bf16 -> 2 * 32 * 8 * 128 * 2 bytes
    assert memory.kv_cache_bytes_per_token(32, 8, 128, "bf16") == 131072.0


def test_concurrent_and_displaced_sequences():
    per_tok = memory.kv_cache_bytes_per_token(32, 8, 128)
    budget = 40e9
    n = memory.concurrent_sequences(budget, 4096, per_tok)
    assert n == math.floor(40e9 / (4096 * 131072))
    d = memory.sequences_displaced(budget, memory.weight_bytes(1e9), 4096, per_tok)
    assert d == n - math.floor(38e9 / (4096 * 131072))
    # a draft with its own KV cache displaces more
    d2 = memory.sequences_displaced(budget, memory.weight_bytes(1e9), 4096, per_tok,
                                    draft_kv_bytes_per_token=memory.kv_cache_bytes_per_token(16, 8, 64))
    assert d2 > d
    assert memory.sequences_displaced(budget, 0.0, 4096, per_tok) == 0


BAD = [
    (cost.usd_per_million_tokens, dict(usd_per_hour=-1, tokens_per_second=10), "usd_per_hour"),
    (cost.usd_per_million_tokens, dict(usd_per_hour=1, tokens_per_second=0), "tokens_per_second"),
    (cost.usd_per_million_tokens, dict(usd_per_hour=math.nan, tokens_per_second=10), "usd_per_hour"),
    (cost.seconds_for_tokens, dict(n_tokens=-5, tokens_per_second=10), "n_tokens"),
    (cost.seconds_for_tokens, dict(n_tokens=5, tokens_per_second=-10), "tokens_per_second"),
    (cost.relative_cost, dict(throughput_ratio=0), "throughput_ratio"),
    (cost.relative_cost, dict(throughput_ratio=math.inf), "throughput_ratio"),
    (memory.weight_bytes, dict(n_params=-1), "n_params"),
    (memory.weight_bytes, dict(n_params=1e9, dtype="bfloat16x"), "dtype"),
    (memory.kv_cache_bytes_per_token, dict(n_layers=0, n_kv_heads=8, head_dim=128), "n_layers"),
    (memory.kv_cache_bytes_per_token, dict(n_layers=32, n_kv_heads=8.5, head_dim=128), "n_kv_heads"),
    (memory.kv_cache_bytes_per_token, dict(n_layers=32, n_kv_heads=8, head_dim=-1), "head_dim"),
    (memory.concurrent_sequences, dict(kv_budget_bytes=-1, seq_len=10, kv_bytes_per_token=1), "kv_budget_bytes"),
    (memory.concurrent_sequences, dict(kv_budget_bytes=1e9, seq_len=0, kv_bytes_per_token=1), "seq_len"),
    (memory.concurrent_sequences, dict(kv_budget_bytes=1e9, seq_len=10, kv_bytes_per_token=0), "kv_bytes_per_token"),
    (memory.sequences_displaced, dict(kv_budget_bytes=1e9, draft_weight_bytes=-1, seq_len=10, kv_bytes_per_token=1), "draft_weight_bytes"),
    (memory.sequences_displaced, dict(kv_budget_bytes=1e9, draft_weight_bytes=1, seq_len=10, kv_bytes_per_token=1,
                                      draft_kv_bytes_per_token=-2), "draft_kv_bytes_per_token"),
]


@pytest.mark.parametrize("fn,kwargs,param", BAD, ids=[f"{f.__name__}-{p}" for f, _, p in BAD])
def test_bad_input_names_the_parameter(fn, kwargs, param):
    with pytest.raises(ValueError, match=param):
        fn(**kwargs)


def test_unknown_dtype_lists_the_valid_ones():
    with pytest.raises(ValueError) as info:
        memory.weight_bytes(1e9, "float16")
    for d in memory.DTYPE_BYTES:
        assert d in str(info.value)
