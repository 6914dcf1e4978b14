"""specnb.memory: weight and KV-cache bytes (the one dtype table), sequences that fit and that a
draft displaces, and bad input."""

import math

import numpy as np
import pytest

from specnb import memory


def test_weight_bytes_per_dtype():
    n = 1e9
    got = {d: memory.weight_bytes(n, d) for d in memory.DTYPE_BYTES}
    assert got == {"fp32": 4e9, "bf16": 2e9, "fp16": 2e9, "fp8": 1e9, "int8": 1e9, "int4": 0.5e9,
                   "mxfp4": 0.53125e9}


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


def test_numpy_integer_types_are_numbers():
    assert memory.kv_cache_bytes_per_token(np.uint8(32), np.int16(8), np.int64(128)) == 131072.0


# --------------------------------------------------------------------------- bad input

BAD = [
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


@pytest.mark.parametrize("call,names", [
    (lambda: memory.kv_cache_bytes_per_token([32, 40], [8, 8, 8], 128), "n_kv_heads (3,)"),
    (lambda: memory.concurrent_sequences([1e9, 2e9], [1, 2, 3], 1.0), "seq_len (3,)"),
    (lambda: memory.sequences_displaced([4e10, 3e10], [2e9, 1e9, 1e9], 4096, 131072),
     "draft_weight_bytes (3,)"),
])
def test_shapes_that_do_not_broadcast_name_each_parameter(call, names):
    with pytest.raises(ValueError, match="must broadcast to one shape") as info:
        call()
    assert names in str(info.value)


def test_results_that_overflow_are_errors_not_inf_or_garbage():
    with pytest.raises(ValueError, match="beyond int64"):
        memory.concurrent_sequences(1e308, 1, 1e-300)
