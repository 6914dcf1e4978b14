"""GPU memory of a draft model and what it takes from the target's KV cache.

Bytes are bytes (1 GB = 1e9 bytes, as the article counts: "a 1B draft in bf16 is about 2 GB").
Scalars in give a Python float or int; arrays broadcast.
"""

from __future__ import annotations

import numpy as np

from . import _check

__all__ = [
    "DTYPE_BYTES",
    "TORCH_DTYPES",
    "bytes_per_element",
    "weight_bytes",
    "kv_cache_bytes_per_token",
    "concurrent_sequences",
    "sequences_displaced",
]

#: Bytes per element of each supported storage dtype. int4 packs two values per byte.
#: ``mxfp4`` (OCP Microscaling v1.0: 32 FP4 e2m1 values share one 8-bit e8m0 scale, 4.25 bits
#: each; the gpt-oss model card: "MoE weights ... quantized to 4.25 bits per parameter") is a
#: checkpoint's layout, not a flat width: only the routed experts are MXFP4, every other
#: weight bf16 (:func:`specnb.serving.weight_bytes_of`); here its bytes per MXFP4 element.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "mxfp4": 4.25 / 8,
}

#: The torch / transformers names of the dtypes above that a model is loaded in (what
#: ``specnb measure --dtype`` accepts besides ``auto``), each mapped to its :data:`DTYPE_BYTES`
#: key. :mod:`specnb.measure` turns the names into torch dtypes.
TORCH_DTYPES: dict[str, str] = {
    "float32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
}


def bytes_per_element(dtype: str) -> float:
    """Bytes per stored value for ``dtype``, one of :data:`DTYPE_BYTES`.

    Raises
    ------
    ValueError
        ``dtype`` is not one of fp32, bf16, fp16, fp8, int8, int4, mxfp4.
    """
    return DTYPE_BYTES[_check.choice("dtype", dtype, DTYPE_BYTES)]


def weight_bytes(n_params, dtype: str = "bf16"):
    """Bytes of model weights: ``n_params * bytes_per_element(dtype)``.

    Ignores quantization scales and non-weight buffers. 1e9 parameters in bf16 are 2.0e9 bytes
    (the article's "about 2 GB"); 135e6 are 0.27e9 bytes ("about 0.27 GB"). The article's flat
    count: every parameter at the dtype's width. A vLLM server quantizing to fp8 / int8 / int4
    keeps the embedding and LM head in bf16 (:func:`specnb.serving.weight_bytes_of`).

    Parameters
    ----------
    n_params : float or array, >= 0, number of parameters.
    dtype : str, one of fp32, bf16, fp16, fp8, int8, int4.

    Returns
    -------
    float or ndarray, bytes.

    Raises
    ------
    ValueError
        n_params negative, infinite or NaN; unknown dtype.
    """
    n = _check.real("n_params", n_params, lo=0.0)
    with np.errstate(over="ignore"):
        res = n * bytes_per_element(dtype)
    return _check.out(_check.finite_result("weight_bytes", res))


def kv_cache_bytes_per_token(n_layers, n_kv_heads, head_dim, dtype: str = "bf16"):
    """KV-cache bytes one token occupies: ``2 (K and V) * layers * kv_heads * head_dim * bytes``.

    For LLaMA 3.1 8B (32 layers, 8 KV heads, head dim 128, bf16) this is 131,072 bytes.

    Parameters
    ----------
    n_layers : int or array, >= 1
    n_kv_heads : int or array, >= 1, key/value heads (grouped-query attention counts the groups).
    head_dim : int or array, >= 1
    dtype : str, KV-cache dtype, one of fp32, bf16, fp16, fp8, int8, int4.

    Returns
    -------
    float or ndarray, bytes per token.

    Raises
    ------
    ValueError
        any count < 1 or fractional; unknown dtype; shapes that do not broadcast.
    """
    layers = _check.integer("n_layers", n_layers, lo=1)
    heads = _check.integer("n_kv_heads", n_kv_heads, lo=1)
    dim = _check.integer("head_dim", head_dim, lo=1)
    layers, heads, dim = _check.broadcast(n_layers=layers, n_kv_heads=heads, head_dim=dim)
    with np.errstate(over="ignore"):
        res = 2.0 * layers * heads * dim * bytes_per_element(dtype)
    return _check.out(_check.finite_result("kv_cache_bytes_per_token", res))


def concurrent_sequences(kv_budget_bytes, seq_len, kv_bytes_per_token):
    """How many sequences of ``seq_len`` tokens fit in a KV-cache budget (whole sequences).

    ``floor(kv_budget_bytes / (seq_len * kv_bytes_per_token))``.

    Parameters
    ----------
    kv_budget_bytes : float or array, >= 0, bytes left for KV cache.
    seq_len : int or array, >= 1, tokens per sequence (prompt + output).
    kv_bytes_per_token : float or array, > 0, bytes (see :func:`kv_cache_bytes_per_token`).

    Returns
    -------
    int or ndarray of int64, sequences.

    Raises
    ------
    ValueError
        negative budget, seq_len < 1, kv_bytes_per_token <= 0, NaN or infinity; shapes that
        do not broadcast; a count beyond int64 (inputs in the wrong units).
    """
    budget = _check.real("kv_budget_bytes", kv_budget_bytes, lo=0.0)
    length = _check.integer("seq_len", seq_len, lo=1)
    per_tok = _check.real("kv_bytes_per_token", kv_bytes_per_token, lo=0.0, lo_open=True)
    budget, length, per_tok = _check.broadcast(kv_budget_bytes=budget, seq_len=length,
                                               kv_bytes_per_token=per_tok)
    with np.errstate(over="ignore", divide="ignore"):
        n = np.floor(budget / (length * per_tok))
    if (n >= 2.0 ** 63).any():
        raise ValueError("concurrent_sequences: kv_budget_bytes / (seq_len * kv_bytes_per_token) "
                         "is beyond int64 (>= 2**63 sequences); check the units (bytes, tokens, "
                         "bytes per token)")
    n = n.astype(np.int64)
    return int(n) if n.ndim == 0 else n


def sequences_displaced(kv_budget_bytes, draft_weight_bytes, seq_len, kv_bytes_per_token,
                        draft_kv_bytes_per_token=0.0):
    """How many fewer sequences run at once when a draft model shares the GPU.

    The draft's weights come out of the KV-cache budget, and each sequence also needs the
    draft's own KV cache for its tokens::

        before = floor(B / (L * k_target))
        after  = floor(max(B - W_draft, 0) / (L * (k_target + k_draft)))
        displaced = before - after

    Parameters
    ----------
    kv_budget_bytes : float or array, >= 0, KV-cache bytes without a draft.
    draft_weight_bytes : float or array, >= 0, bytes of draft weights (:func:`weight_bytes`).
    seq_len : int or array, >= 1, tokens per sequence.
    kv_bytes_per_token : float or array, > 0, target KV bytes per token.
    draft_kv_bytes_per_token : float or array, >= 0, draft KV bytes per token (0 for n-gram,
        suffix decoding, or MTP layers already counted in the target).

    Returns
    -------
    int or ndarray of int64, sequences displaced (>= 0).

    Raises
    ------
    ValueError
        any value out of range, NaN or infinite; shapes that do not broadcast.
    TypeError
        a non-number (None, a bool, a string).
    """
    budget = _check.real("kv_budget_bytes", kv_budget_bytes, lo=0.0)
    draft = _check.real("draft_weight_bytes", draft_weight_bytes, lo=0.0)
    draft_kv = _check.real("draft_kv_bytes_per_token", draft_kv_bytes_per_token, lo=0.0)
    per_tok = _check.real("kv_bytes_per_token", kv_bytes_per_token, lo=0.0, lo_open=True)
    length = _check.integer("seq_len", seq_len, lo=1)
    budget, draft, draft_kv, per_tok, seq_len = _check.broadcast(
        kv_budget_bytes=budget, draft_weight_bytes=draft, draft_kv_bytes_per_token=draft_kv,
        kv_bytes_per_token=per_tok, seq_len=length)
    before = np.asarray(concurrent_sequences(budget, seq_len, per_tok))
    after = np.asarray(concurrent_sequences(np.maximum(budget - draft, 0.0), seq_len,
                                            per_tok + draft_kv))
    d = before - after
    return int(d) if d.ndim == 0 else d
