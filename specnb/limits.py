"""Ranges of the serving model's and the simulated load's scalar inputs, in a light module.

The one home of each rule: :mod:`specnb.serving` and :mod:`specnb.simulate` check these
values through the functions here, and the command line calls the same functions before it
imports either (seconds of imports and catalogue loading), so that a bad flag answers at once.
Only :mod:`specnb._check` (numpy) is imported.

Each function returns the value as a float, or raises :class:`specnb._check.ParamValueError`
(:class:`~specnb._check.ParamTypeError` for a non-number) whose ``param`` names the parameter.
"""

from __future__ import annotations

import math
import numbers

from . import _check

__all__ = ["RATIO_NOISE", "better", "ROUTING_SKEW_RANGE", "DEFAULT_GPU_MEMORY_UTILIZATION", "routing_skew",
           "proposal_rate", "gpu_memory_utilization", "request_rate",
           "sglang_mem_fraction_static", "SGLANG_MEMORY_SOURCE"]

#: vLLM's default ``gpu_memory_utilization`` (the share of each GPU's memory vLLM takes): 0.92
#: since vLLM 0.20.0 (``CacheConfig.gpu_memory_utilization = Field(default=0.92, gt=0, le=1)``,
#: ``vllm/config/cache.py:215`` at 0.33.0); 0.9 before, as the flag tables
#: ``specnb/vllm/flags/<v>.json`` record.
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92

#: Where :func:`sglang_mem_fraction_static` is read from.
SGLANG_MEMORY_SOURCE = ("sgl-project/sglang python/sglang/srt/arg_groups/memory_hook.py "
                        "handle_gpu_memory_settings @ a82da8da")


def sglang_mem_fraction_static(gpu_memory_bytes: float, tp: int = 1) -> float:
    """SGLang's default ``--mem-fraction-static`` (weights + KV pool over the GPU's memory) on
    a GPU of ``gpu_memory_bytes`` at tensor parallelism ``tp``: the one home of SGLang's
    memory share, as vLLM's is :data:`DEFAULT_GPU_MEMORY_UTILIZATION` (trial 7, T7-03).

    SGLang computes it at start (:data:`SGLANG_MEMORY_SOURCE`), ``gpu_mem`` in MiB:
    ``chunked_prefill_size`` and the decode CUDA-graph ``max_bs`` by memory (< 20 GiB: 2048 /
    8; < 35 GiB: 4096 / 48, 160 at tp >= 4; < 60 GiB: 4096 / 32, 160; < 160 GiB: 8192 / 256,
    512; else 16384 / 512), ``reserved = 512 + 1.5 max(chunked_prefill_size, 2048) + tp / 8 x
    1024 + 2 max_bs`` MiB, at least 10 GiB on a GPU over 60 GiB, and ``round((gpu_mem -
    reserved) / gpu_mem, 3)``. Left out (each only lowers SGLang's share): the prefill
    CUDA-graph reserve (8 MiB per captured size; 1.5 GiB with an MLA backend), DP attention,
    DeepEP buffers, multimodal models, post-capture KV sizing. H100 at the total torch reports
    (79.11 GiB, 81,009 MiB; :attr:`specnb.serving.GPU.device_memory_bytes`), tp 1: reserved
    13,440 MiB, share 0.834."""
    gpu_mem = float(gpu_memory_bytes) / 2 ** 20
    tp = int(tp)
    wide = tp >= 4
    for cap, cps, bs in ((20, 2048, 8), (35, 4096, 160 if wide else 48),
                         (60, 4096, 160 if wide else 32), (160, 8192, 512 if wide else 256)):
        if gpu_mem < cap * 1024:
            break
    else:
        cps, bs = 16384, 512
    reserved = 512 + 1.5 * max(cps, 2048) + tp / 8 * 1024 + 2 * bs
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mem - reserved) / gpu_mem, 3)


#: Range of the mixture-of-experts ``routing_skew`` (:class:`specnb.serving.EngineStep`): 0 is
#: uniform routing (the upper bound on the experts a step touches), values towards 1
#: concentrate the tokens on fewer experts.
ROUTING_SKEW_RANGE = (0.0, 0.95)


def routing_skew(value) -> float:
    """``value`` checked as a routing skew: a number in :data:`ROUTING_SKEW_RANGE`.

    Raises
    ------
    ValueError
        outside [0, 0.95], NaN or infinite (``param`` ``routing_skew``).
    TypeError
        not a number.
    """
    lo, hi = ROUTING_SKEW_RANGE
    return _check.scalar_real("routing_skew", value, lo=lo, hi=hi)


def proposal_rate(value) -> float:
    """``value`` checked as a proposal rate M: the share of sequence-steps that carry a draft
    (n-gram, suffix), in (0, 1].

    Raises
    ------
    ValueError
        outside (0, 1] or NaN (``param`` ``proposal_rate``).
    TypeError
        not a number.
    """
    return _check.scalar_real("proposal_rate", value, lo=0.0, hi=1.0, lo_open=True)


def gpu_memory_utilization(value) -> float:
    """``value`` checked as vLLM's ``gpu_memory_utilization``: the share of each GPU's memory
    vLLM may use, in (0, 1].

    Raises
    ------
    ValueError
        outside (0, 1] or NaN (``param`` ``gpu_memory_utilization``).
    TypeError
        not a number.
    """
    return _check.scalar_real("gpu_memory_utilization", value, lo=0.0, hi=1.0, lo_open=True)


def request_rate(value) -> float:
    """``value`` checked as a request rate, requests per second: > 0, or ``inf``, ``vllm bench
    serve``'s default (vLLM 0.33 ``benchmarks/serve.py``: ``--request-rate`` defaults to
    ``float("inf")``, "all the requests are sent at time 0"; its ``get_request`` delays each
    by 0 at an infinite rate; trial 7, T7-04).

    Raises
    ------
    ValueError
        <= 0 (also -inf) or NaN (``param`` ``request_rate``).
    TypeError
        not a number.
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if value == math.inf:
            return math.inf
        if not value > 0:  # <= 0, -inf, NaN: one message that allows inf
            raise _check.ParamValueError(
                f"request_rate must be > 0 requests/s, or inf (every request at t = 0, vllm "
                f"bench serve's default), got {value}", "request_rate")
    return _check.scalar_real("request_rate", value, lo=0.0, lo_open=True)


#: The noise band of an on / off ratio: within 5 % either way the runs are "the same"
#: (``specnb bench``'s default tolerance; ``simulate``'s verdict uses the same rule, T8a-07).
RATIO_NOISE = 0.05


def better(ratio: float, lower_is_better: bool, tol: float = RATIO_NOISE) -> str:
    """Which run an on / off ``ratio`` favours: "on", "off", "same" (within ``tol``) or ""
    (NaN or None). The one rule of :func:`specnb.advise.bench.compare_bench` and
    ``simulate``'s verdict."""
    if ratio is None or math.isnan(ratio):
        return ""
    if abs(ratio - 1) <= tol:
        return "same"
    return "on" if (ratio < 1) == lower_is_better else "off"
