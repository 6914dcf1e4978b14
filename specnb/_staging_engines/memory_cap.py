"""The memory cap of a serving setup: how many sequences' KV caches fit once the weights are
loaded, with and without the draft (issue 16, staged).

vLLM allocates ``gpu_memory_utilization`` (default 0.9) of each GPU's memory; the target's
weights, then the draft's weights (a draft model or an EAGLE / MTP head), take their share,
and the rest holds KV blocks for the target and the draft (``shared/reference/engines.md``
section 2 item 5; the article's memory section). A batch whose KV cache does not fit cannot
run at once: vLLM preempts, so such a batch never pays. Activations, CUDA graphs and the
block granularity are not counted: the real room is smaller.
"""

from __future__ import annotations

import numpy as np

from .. import _check

__all__ = ["DEFAULT_GPU_MEMORY_UTILIZATION", "check_utilization", "kv_room_bytes",
           "memory_cap", "fits", "cap_ranges", "cap_schedule"]

#: vLLM's default ``gpu_memory_utilization`` (EngineArgs; vLLM docs "--gpu-memory-utilization
#: ... default 0.9").
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9


def check_utilization(gpu_memory_utilization) -> float:
    """The fraction, checked: 0 < u <= 1 (vLLM refuses values above 1)."""
    return _check.scalar_real("gpu_memory_utilization", gpu_memory_utilization, lo=0.0,
                              hi=1.0, lo_open=True)


def kv_room_bytes(memory_bytes, gpus, weight_bytes,
                  gpu_memory_utilization=DEFAULT_GPU_MEMORY_UTILIZATION) -> float:
    """Bytes left for KV caches over all GPUs: ``u x gpus x memory - weights`` (may be
    negative: the weights do not fit). memory_bytes > 0 per GPU, gpus >= 1,
    weight_bytes >= 0 (all weights on the GPUs)."""
    mem = _check.scalar_real("memory_bytes", memory_bytes, lo=0.0, lo_open=True)
    n = _check.scalar_int("gpus", gpus, lo=1)
    w = _check.scalar_real("weight_bytes", weight_bytes, lo=0.0)
    return check_utilization(gpu_memory_utilization) * n * mem - w


def memory_cap(memory_bytes, gpus, context, target_weight_bytes, target_kv_bytes_per_token,
               draft_weight_bytes=0.0, draft_kv_bytes_per_token=0.0, draft_kv_budget=None,
               gpu_memory_utilization=DEFAULT_GPU_MEMORY_UTILIZATION) -> dict:
    """Most sequences of ``context`` tokens that run at once, with and without the draft.

    Parameters
    ----------
    memory_bytes : float > 0, one GPU's memory
    gpus : int >= 1
    context : int or array >= 1, tokens per sequence (prompt + output)
    target_weight_bytes, draft_weight_bytes : float >= 0 (all GPUs together)
    target_kv_bytes_per_token, draft_kv_bytes_per_token : float (> 0 / >= 0), all GPUs
        together (a KV head replicated over GPUs counts once per copy)
    draft_kv_budget : int >= 1 or None, most tokens the draft caches per sequence
    gpu_memory_utilization : float in (0, 1], default 0.9

    Returns
    -------
    dict: ``max_batch`` (with the draft), ``max_batch_without_draft``, ``displaced`` (the
    difference: sequences the draft's weights and KV push out), ``room_bytes`` (KV room with
    the draft's weights loaded). Ints for a scalar context, int arrays otherwise; 0 when the
    weights alone do not fit.

    Raises
    ------
    ValueError
        a value out of range (utilization outside (0, 1], context < 1, negative bytes).
    """
    s = _check.integer("context", context, lo=1).astype(float)
    k_t = _check.scalar_real("target_kv_bytes_per_token", target_kv_bytes_per_token, lo=0.0,
                             lo_open=True)
    k_d = _check.scalar_real("draft_kv_bytes_per_token", draft_kv_bytes_per_token, lo=0.0)
    w_d = _check.scalar_real("draft_weight_bytes", draft_weight_bytes, lo=0.0)
    room0 = kv_room_bytes(memory_bytes, gpus, target_weight_bytes, gpu_memory_utilization)
    room = room0 - w_d
    ds = s if draft_kv_budget is None else np.minimum(
        s, _check.scalar_int("draft_kv_budget", draft_kv_budget, lo=1))
    per_seq0 = s * k_t
    per_seq = per_seq0 + ds * k_d
    without = np.floor(max(room0, 0.0) / per_seq0)
    with_d = np.floor(max(room, 0.0) / per_seq)
    cast = lambda x: int(x) if np.ndim(x) == 0 else x.astype(np.int64)  # noqa: E731
    return {"max_batch": cast(with_d), "max_batch_without_draft": cast(without),
            "displaced": cast(without - with_d), "room_bytes": room}


def fits(batch_size, max_batch):
    """Whether ``batch_size`` sequences fit: ``batch_size <= max_batch`` (broadcast; bools)."""
    b = _check.integer("batch_size", batch_size, lo=1)
    m = _check.integer("max_batch", max_batch, lo=0)
    b, m = _check.broadcast(batch_size=b, max_batch=m)
    out = b <= m
    return bool(out) if out.ndim == 0 else out



def cap_ranges(ranges, max_batch_in_memory: int) -> list[list[int]]:
    """Inclusive ``[first, last]`` batch ranges (``serving.paying_batches``' form) cut at the
    memory cap: a batch above ``max_batch_in_memory`` never pays (it cannot run at once).
    ``max_batch_in_memory`` int >= 0 (0: nothing fits, no range)."""
    cap = _check.scalar_int("max_batch_in_memory", max_batch_in_memory, lo=0)
    out = []
    for a, e in ranges:
        if a <= cap:
            out.append([int(a), int(min(e, cap))])
    return out


def cap_schedule(sched, max_batch_in_memory: int) -> list[list[int]]:
    """vLLM's ``num_speculative_tokens_per_batch_size`` entries ``[lo, hi, K]`` cut at the
    memory cap (the scheduler never runs more sequences than fit, so ``max_num_seqs`` stops
    there too). The first range still starts at 1, as vLLM requires; nothing fits (cap 0):
    ValueError, as there is no schedule to give.

    Raises
    ------
    ValueError
        a cap of 0 (the weights do not fit), a negative cap.
    """
    cap = _check.scalar_int("max_batch_in_memory", max_batch_in_memory, lo=0)
    if cap == 0:
        raise ValueError("max_batch_in_memory is 0: the weights leave no room for a KV cache, "
                         "so no batch runs and there is no schedule")
    return [[int(lo), int(min(hi, cap)), int(k)] for lo, hi, k in sched if lo <= cap]
