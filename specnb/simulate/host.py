"""Host (CPU) time an n-gram drafter adds to an engine step, on the critical path.

The serving model times the GPU's work (:class:`specnb.serving.MixedStep`); vLLM's n-gram
proposer runs on the host between two forwards, and the engine waits for it:

* **vLLM V1** (``vllm/v1/spec_decode/ngram_proposer.py``, ``NgramProposer.batch_propose``):
  after each step, for every request that sampled, a KMP scan of the request's whole token
  history (``token_ids_cpu[i, :num_tokens_no_spec]``, prompt and output) for the longest
  suffix n-gram in ``[prompt_lookup_min, prompt_lookup_max]``: O(context) per request per
  step, in numba over ``prange`` of the requests on ``min(8, cpus // 2 // tp, requests)``
  threads (PR #24986 caps them at 8). The CPU proposer cannot run under async scheduling
  (vLLM PR #31998 turns async scheduling on by default only for EAGLE / MTP; PR #29184 adds a
  GPU n-gram, ``ngram_gpu``, for that), so the scan sits between the forwards. Time per token
  per thread: :data:`NGRAM_SCAN_NS_PER_TOKEN`.
* **vLLM V0** (``vllm/spec_decode/ngram_worker.py``, ``NGramWorker.sampler_output``, v0.6 as
  the vLLM blog of 2024-10-17 ran it): a Python loop over the batch's sequences; each turns
  its token list into a tensor (on the CPU below 3,072 tokens) and, for each n-gram size from
  ``ngram_prompt_lookup_max`` down to ``ngram_prompt_lookup_min``, compares a sliding window
  over the whole sequence and reads the result with ``.item()``, stopping at the first match.
  Time: :data:`V0_NGRAM_CONVERT` once and :data:`V0_NGRAM_PASS` per size tried, per sequence.

* **Async scheduling turned off (vLLM V1).** vLLM 0.33 runs a plain engine with async
  scheduling by default (PR #27614; with EAGLE / MTP since PR #31998, 2026-01-08): the
  scheduler, input preparation and output processing of the next step overlap the forward
  of this one. A method the V1 model runner cannot overlap turns it off for the whole engine
  (``vllm/config/vllm.py`` ``VllmConfig.__post_init__``, ``v1_async_sched_incompat``: any
  ``speculative_config.method`` outside :data:`specnb.runners.ASYNC_COMPATIBLE_METHODS`;
  here ``ngram`` and ``suffix``), so every step of such a run, whether it proposes or not, pays that host time
  in series while the plain run hides it. Time: :data:`SYNC_HOST_US_PER_REQUEST` per
  scheduled request per step (:func:`sync_host_us_per_request`, DERIVED from vLLM PR
  #23914's sync / async runs). In vLLM's 2025 releases async scheduling was opt-in
  (``--async-scheduling``, PR #19970, 2025-06) and refused speculative decoding (EAGLE
  allowed from PR #24799, 2025-09; the CPU n-gram never): there both runs paid the host time
  and the term is 0 (``host_cost(..., async_plain=False)``).

:class:`HostCost`, :func:`host_cost`, :func:`ngram_host_ms`, :func:`sync_host_ms`. Not
modelled: growth of that host time with the scheduled tokens or the context (input
preparation is numpy over the scheduled tokens; PR #23914 measured decode batches only), the
rejection sampler (GPU, part of the verify step), suffix decoding's tree updates, the
GPU-side ops of a V0 proposal (one-hot of the vocabulary per proposed sequence). V0 also
disables async output processing under speculation (vllm/config.py
``verify_async_output_proc``), which the ``vllm-v0`` profile's fit on EAGLE-3 Table 5 already
carries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check
from ..runners import (ASYNC_COMPATIBLE_METHODS, RUNNERS, model_runner, runner_env,
                       v1_async_incompat)

__all__ = ["NGRAM_SCAN_NS_PER_TOKEN", "NGRAM_MAX_THREADS", "V0_NGRAM_CONVERT", "V0_NGRAM_PASS",
           "ASYNC_COMPATIBLE_METHODS", "SYNC_HOST_US_PER_REQUEST", "sync_host_us_per_request",
           "HostCost", "host_cost", "ngram_host_ms", "sync_host_ms"]

#: vLLM V1's n-gram KMP scan, ns per token scanned per thread: vLLM PR #56732's
#: microbenchmark (batch 512 x 129,536-token contexts = 66.3M tokens per step in 70.28 ms on
#: one thread per rank, 4x H100 host): 70.28 ms / 66.3M = 1.06 ns (DERIVED).
NGRAM_SCAN_NS_PER_TOKEN = 1.06

#: Most numba threads vLLM V1's batched n-gram proposer uses (PR #24986: "the threads are
#: capped at 8"; ``max(1, cpu_count // 2 // tp)`` below that).
NGRAM_MAX_THREADS = 8

#: vLLM V0's n-gram worker, once per sequence per step: the token list to a tensor,
#: ``(us, ns per token)``. MEASURED by ``scripts/measure_ngram_host.py`` (torch 2.13 CPU,
#: process CPU time, a shared 2-core VM under load: UNVERIFIED for the blog's host and torch
#: 2.4; a dedicated server core is likely faster).
V0_NGRAM_CONVERT = (5.5, 88.9)

#: vLLM V0's n-gram worker, per n-gram size tried per sequence: window compare, ``all``,
#: ``max`` and ``.item()``, ``(us, ns per token)``. Same measurement as
#: :data:`V0_NGRAM_CONVERT`.
V0_NGRAM_PASS = (25.3, 23.8)


def sync_host_us_per_request() -> float:
    """Host time per scheduled request per step that vLLM V1's async scheduling hides, us: the
    least-squares slope through the origin of the per-step time saved, batch x (1 / sync tps -
    1 / async tps) (one decode token per request per step), against the batch, over the
    ``pr23914`` rows of ``data/vllm_async_scheduling.csv`` (vLLM PR #23914: A100, TP 2, batch
    32-256, 1-5 % faster async; per row 10.6-13.3 us). DERIVED from a published measurement;
    fitted on no speculative run. UNVERIFIED for other hosts (the PR names neither the model
    nor the CPU)."""
    from .. import data

    d = data.load("vllm_async_scheduling")
    d = d[d["series"] == "pr23914"]
    b = d["batch_size"].to_numpy(float)
    saved_ms = b * (1.0 / d["sync_tps"].to_numpy(float)
                    - 1.0 / d["async_tps"].to_numpy(float)) * 1e3
    return float(np.sum(b * saved_ms) / np.sum(b * b) * 1e3)


#: :func:`sync_host_us_per_request` at its printed precision, us (pinned against the CSV by
#: tests/simulate/test_host.py).
SYNC_HOST_US_PER_REQUEST = 12.8


@dataclass(frozen=True)
class HostCost:
    """The host drafter of a setup: ``kind`` ``"none"`` (no host drafter), ``"v1-ngram"`` or
    ``"v0-ngram"``; ``threads`` (V1: numba threads); ``sizes`` (V0: n-gram sizes from
    ``prompt_lookup_max`` down to ``prompt_lookup_min``); ``sync_us_per_request`` (us >= 0:
    host time per scheduled request that every step of a speculating run pays in series
    because its method turns vLLM V1's async scheduling off while the plain run keeps it,
    :func:`sync_host_ms`; 0: none)."""

    kind: str = "none"
    threads: int = NGRAM_MAX_THREADS
    sizes: int = 4
    sync_us_per_request: float = 0.0


def host_cost(st, *, prompt_lookup_min: int = 1, prompt_lookup_max: int = 4,
              cpus: int | None = None, async_plain: bool = True,
              runner: str | None = None, method: str | None = None) -> HostCost:
    """The :class:`HostCost` of setup ``st``: vLLM's CPU n-gram proposer for ``ngram`` drafts
    (V0's worker under the ``vllm-v0`` engine profile, V1's batched scan otherwise), nothing
    for other drafts (their proposers run on the GPU, timed by the serving model). Under the
    ``vllm`` (V1) profile a method Model Runner V1 runs with async scheduling off
    (:func:`specnb.runners.v1_async_incompat`: ``ngram``, ``suffix``) also
    carries :data:`SYNC_HOST_US_PER_REQUEST` (async scheduling off for it, on for the plain
    run) when ``async_plain`` (default True: vLLM 0.33's default since PR #27614);
    ``async_plain=False`` reads a 2025 release, where async scheduling was opt-in and both
    runs scheduled synchronously.

    ``runner``: the vLLM model runner (``"v1"`` / ``"v2"``; None: vLLM 0.33's default for the
    method, :func:`specnb.runners.model_runner`). On Model Runner V2 (vLLM 0.33's default for
    ``ngram``) the n-gram drafts come from a GPU kernel (``NgramGPUSpeculator``) and async
    scheduling stays on (``config/vllm.py`` computes the V1 incompatibility only ``if not
    self.use_v2_model_runner``): no host term at all (the kernel's GPU time is not modelled).
    ``method``: vLLM's method served (default ``st.draft.method``); ``ngram_gpu`` (V1's GPU
    n-gram proposer, an n-gram draft in the serving model) keeps async scheduling and has no
    host scan.

    ``prompt_lookup_min`` / ``prompt_lookup_max``: the n-gram sizes (V0's
    ``ngram_prompt_lookup_min`` / ``_max``; default 1 and 4, the vLLM blog's example). ``cpus``:
    host CPU cores (V1's threads are ``max(1, min(8, cpus // 2 // gpus))``); default None:
    enough for 8 threads.

    Raises
    ------
    ValueError
        a size < 1, max below min, cpus < 1, ``async_plain`` not a bool, a runner other than
        v1 / v2.
    """
    lo = _check.scalar_int("prompt_lookup_min", prompt_lookup_min, lo=1)
    hi = _check.scalar_int("prompt_lookup_max", prompt_lookup_max, lo=1)
    if hi < lo:
        raise ValueError(f"prompt_lookup_max {hi} is below prompt_lookup_min {lo}")
    if not isinstance(async_plain, bool):
        raise ValueError(f"async_plain must be True or False, got {async_plain!r}")
    if runner is not None:
        _check.choice("runner", runner, list(RUNNERS))
    method = st.draft.method if method is None else method
    if runner is None:
        runner = model_runner(method)
    if st.engine.family == "vllm" and runner == "v2":  # V2: a GPU n-gram kernel, async kept
        return HostCost()
    sync_us = SYNC_HOST_US_PER_REQUEST if (
        async_plain and st.engine.family == "vllm"
        and v1_async_incompat(method, runner_env(method, runner)) is not None) else 0.0
    if method != "ngram":
        return HostCost(sync_us_per_request=sync_us)
    if st.engine.family == "vllm-v0":
        return HostCost("v0-ngram", 1, hi - lo + 1)
    threads = NGRAM_MAX_THREADS
    if cpus is not None:
        n = _check.scalar_int("cpus", cpus, lo=1)
        threads = max(1, min(NGRAM_MAX_THREADS, n // 2 // st.gpus))
    return HostCost("v1-ngram", threads, hi - lo + 1, sync_us)


def ngram_host_ms(hc: HostCost, contexts, proposal_rate: float = 1.0) -> float:
    """Host time, ms, of one step's n-gram proposals.

    Parameters
    ----------
    hc : :class:`HostCost`
    contexts : ints >= 0, shape (n,): the token count (prompt + output so far) of each
        request the drafter runs on this step (the requests that sampled)
    proposal_rate : float in [0, 1]: the share of them that find a match (V0 stops at the
        first size that matches: a match is ASSUMED at the middle size on average,
        ``(sizes + 1) / 2`` sizes tried; no match tries all)

    V1: ``1.06 ns x max(sum(contexts) / threads, max(contexts))`` (the scan of every request,
    spread over the threads, at least its longest one). V0: per sequence
    ``convert + passes x pass`` with :data:`V0_NGRAM_CONVERT` and :data:`V0_NGRAM_PASS`.

    Raises
    ------
    ValueError
        a context < 0; a rate outside [0, 1].
    """
    c = np.atleast_1d(_check.integer("contexts", contexts, lo=0)).astype(float)
    m = _check.scalar_real("proposal_rate", proposal_rate, lo=0.0, hi=1.0)
    return _host_ms(hc, c, m)


def sync_host_ms(hc: HostCost, batch: int) -> float:
    """Host time, ms, that a step of ``batch`` scheduled requests (int >= 0) pays in series
    when speculation turns vLLM V1's async scheduling off: ``hc.sync_us_per_request x batch /
    1000`` (0 when the method keeps async scheduling or the engine has none).

    Raises
    ------
    ValueError
        batch < 0.
    """
    return _sync_ms(hc, _check.scalar_int("batch", batch, lo=0))


def _sync_ms(hc: HostCost, batch: int) -> float:
    """Unchecked :func:`sync_host_ms` (the simulator's inner loop)."""
    return hc.sync_us_per_request * batch * 1e-3


def _host_ms(hc: HostCost, c: np.ndarray, m: float) -> float:
    """Unchecked :func:`ngram_host_ms` (the simulator's inner loop)."""
    if hc.kind == "none" or c.size == 0:
        return 0.0
    if hc.kind == "v1-ngram":
        return NGRAM_SCAN_NS_PER_TOKEN * 1e-6 * max(float(c.sum()) / hc.threads, float(c.max()))
    passes = m * (hc.sizes + 1) / 2.0 + (1.0 - m) * hc.sizes
    (a, b), (p, q) = V0_NGRAM_CONVERT, V0_NGRAM_PASS
    n, tokens = float(c.size), float(c.sum())
    return 1e-3 * (a * n + b * 1e-3 * tokens + passes * (p * n + q * 1e-3 * tokens))
