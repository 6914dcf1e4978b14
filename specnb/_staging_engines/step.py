"""One forward's bytes, FLOPs and time for dense, MoE and MLA models (issue 16, staged).

The roofline of ``serving.step_breakdown`` (``shared/reference/batch-model.md`` section 1),
generalised: the weights a step reads depend on how many tokens it carries (the routed experts
they touch, :func:`specnb._staging_engines.moe.experts_touched`, an upper bound for skewed
routing); MLA caches a latent per token, replicated on every tensor-parallel rank, and its
attention FLOPs follow the absorbed decode path. Per GPU, with n = ``gpus``::

    W   = step_weight_params(N = B q) x bytes / n      # experts split n ways, as TP or EP
    KV  = B S x kv_bytes_per_token / kv_split_ways(n)
    F   = 2 matmul_params_per_token / n x B q  +  attention_flops / n x B q S
    t   = fixed + comb(W, F_lin) + comb(KV, F_att) + token_us x B q + all-reduces

Expert parallelism (vLLM ``--enable-expert-parallel``) places whole experts on GPUs instead of
slicing each one: in expectation every GPU reads the same bytes as under tensor parallelism,
so the roofline is the same; what differs (all-to-all instead of all-reduce, the slowest
GPU's share under uneven routing) is not modelled. For dense shapes every number equals
``serving.step_breakdown``'s (tests check it).
"""

from __future__ import annotations

import numpy as np

from .. import memory
from . import moe as M

__all__ = ["step_parts"]


def step_parts(shape: M.ModelShape, gpu, eff, dtype: str, kv_dtype: str, gpus: int, b, s, q,
               kv_budget=None) -> dict:
    """Unchecked core (float arrays that broadcast) of one forward.

    Parameters
    ----------
    shape : ModelShape (dense, MoE and/or MLA)
    gpu : an object with ``bandwidth`` (bytes/s), ``flops(dtype)`` and ``link`` (bytes/s)
        (``serving.GPU``)
    eff : an object with ``bandwidth``, ``compute``, ``fixed_ms``, ``token_us``,
        ``allreduce_us``, ``overlap`` (``serving.Efficiency``)
    dtype, kv_dtype : weight and KV-cache dtypes (``specnb.memory.DTYPE_BYTES``; fp8 weights
        use FP8 tensor cores where the GPU has them)
    gpus : tensor-parallel (or expert-parallel) GPUs
    b, s, q : batch size, context, query tokens per sequence (q may be a fractional mean)
    kv_budget : most context tokens read, or None

    Returns
    -------
    dict of arrays: ``w``, ``kv`` (bytes per GPU), ``f_lin``, ``f_att`` (FLOPs per GPU),
    ``mem``, ``cmp`` (roofline times, ms), ``comm``, ``fixed``, ``total`` (ms), ``tokens``.
    """
    if kv_budget is not None:
        s = np.minimum(s, kv_budget)
    n = int(gpus)
    tokens = b * q
    weight_bytes, kv_bytes = memory.bytes_per_element(dtype), memory.bytes_per_element(kv_dtype)
    w = np.asarray(M.step_weight_params(shape, np.maximum(tokens, 1.0))) * weight_bytes / n
    kv = b * s * (M.kv_bytes_per_token(shape, kv_bytes) / M.kv_split_ways(shape, n))
    f_lin = (2.0 * M.matmul_params_per_token(shape) / n) * tokens
    f_att = (M.attention_flops_per_token_per_context(shape) / n) * tokens * s
    bw = eff.bandwidth * gpu.bandwidth
    fl = eff.compute * gpu.flops(dtype)
    t_w, t_lin = w / bw * 1e3, f_lin * (1e3 / fl)
    t_kv, t_att = kv * (1e3 / bw), f_att * (1e3 / fl)
    fixed = eff.fixed_ms + (eff.token_us * 1e-3) * tokens
    if eff.overlap == 0.0:
        total = fixed + t_w + t_lin + t_kv + t_att
    else:
        o = 1.0 - eff.overlap
        total = (fixed + np.maximum(t_w, t_lin) + o * np.minimum(t_w, t_lin)
                 + np.maximum(t_kv, t_att) + o * np.minimum(t_kv, t_att))
    comm = 0.0
    if n > 1:
        comm = 2 * shape.n_layers * (eff.allreduce_us * 1e-3
                                     + 2.0 * (n - 1) / n * shape.hidden_size * 2.0 / gpu.link
                                     * 1e3 * tokens)
        total = total + comm
    return dict(w=w, kv=kv, f_lin=f_lin, f_att=f_att, mem=t_w + t_kv, cmp=t_lin + t_att,
                comm=comm, fixed=fixed, total=total, tokens=tokens)
