"""vLLM V1's scheduler, stepped on a workload, each step timed by the serving model's mixed
step (:func:`specnb.serving.mixed_step_ms`).

The rules follow ``vllm/v1/core/sched/scheduler.py`` and ``vllm/v1/core/kv_cache_manager.py``
@ v0.33.0 (synchronous scheduling, FCFS, chunked prefill on, prefix caching off unless a hit
rate is given), checked step for step against vLLM's own ``Scheduler`` on the fixtures of
``tests/cases/vllm/0.33.0/scheduler/`` (``oracle/drive_scheduler.py``):

* a token budget of ``max_num_batched_tokens`` per step; RUNNING requests first, in order:
  each is given ``num_tokens + len(spec_token_ids) - num_computed_tokens`` tokens (its
  prefill chunk, 1 decode token or 1 + k verify tokens), cut to the budget left, to the input
  budget less the method's draft slots (1 per request for a draft model) and to
  ``max_model_len - num_computed - 1``; its KV slots (``cdiv(computed + new + lookahead,
  block_size)`` blocks, lookahead k for EAGLE / draft models, k + 1 for DFlash) are
  allocated from ``num_gpu_blocks - 1`` (the pool keeps one null block), preempting the LAST
  running request (recompute: its KV freed, its computed
  tokens reset, put first in the waiting queue) until they fit or it preempts itself;
* then, only if nothing was preempted this step, WAITING requests while budget is left and
  fewer than ``max_num_seqs`` run: a new or resumed request is given all its tokens not yet
  computed (cut to the budget: a prefill chunk), admitted only if its whole sequence's blocks
  are free (``scheduler_reserve_full_isl``, on by default) and its slots fit;
* after the step each request that finished its prefill samples 1 + accepted tokens
  (accepted drawn against the draft it verified), rolls its computed tokens back by the
  rejected ones, and stops at its output length (``ignore_eos``); the drafter then proposes
  K tokens for every scheduled request that is not mid-prefill: K = the policy's (static, or
  vLLM's ``num_speculative_tokens_per_batch_size`` lookup at the number of requests
  scheduled this step; n-gram / suffix propose on a share M of them).

With ``EngineConfig.chunked_prefill`` False, vLLM V0's scheduler without chunked prefill
(``vllm/core/scheduler.py`` ``_schedule_default``): whole prompts of waiting requests first,
and a step that prefills runs no decode or verify tokens (and no drafting). Its verify step is
V0's batch expansion (``vllm/spec_decode/batch_expansion.py``: k + 1 one-token sequences per
proposing request), so the step's scored tokens are V0's decode batch, which the ``vllm-v0``
profile's CUDA-graph cap (256 sequences, ``worker/model_runner.py``) applies to in the step
rule (:class:`specnb.serving.moe.EngineStep`).

The host drafter (vLLM's CPU n-gram proposer, :mod:`specnb.simulate.host`) adds its time to
each speculating step: it runs between two forwards, outside async scheduling. A method that
turns vLLM V1's async scheduling off (``ngram``, ``suffix``: ``vllm/config/vllm.py``; the
plain run keeps it on by default) also pays, on every step of a policy that configures
speculation (drafting or not at that step's batch), the host time async scheduling would
hide: ``HostCost.sync_us_per_request`` per scheduled request (vLLM PR #23914, DERIVED).

Not modelled: async scheduling's step order (the same; the plain run's hidden host time is
taken as fully hidden, i.e. shorter than the forward), priorities, LoRA, encoders, KV connectors, the padding of a new request's first decode
step to 1 + k tokens (a request whose prompt is all cached but one token), the watermark
(0 by default).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .. import _check
from .. import serving as S
from .host import HostCost, _host_ms, _sync_ms, host_cost

__all__ = ["EngineConfig", "engine_config", "v0_engine_config", "default_batch_limits",
           "kv_blocks", "Policy", "policy", "min_request_steps", "Trace", "run", "BLOCK_SIZE"]

#: vLLM's default KV-cache block size on CUDA (tokens per block).
BLOCK_SIZE = 16


def default_batch_limits(gpu, usage: str = "serve") -> tuple[int, int]:
    """vLLM 0.33's defaults ``(max_num_batched_tokens, max_num_seqs)`` by GPU memory and usage
    context (``EngineArgs.get_batch_defaults``): >= 160 GiB (B200, B300): 16384 and 1024;
    >= 70 GiB and not an A100 (H100, H200): 8192 for ``vllm serve`` (16384 for the ``LLM``
    class) and 1024; others: 2048 for ``vllm serve`` (8192 for ``LLM``) and 256.
    ``usage``: ``"serve"`` or ``"llm"``."""
    _check.choice("usage", usage, ("serve", "llm"))
    g = S.gpu(gpu)
    gib = g.device_memory_bytes / 2 ** 30  # vLLM: current_platform.get_device_total_memory()
    if gib >= 160:
        return 16384, 1024
    if gib >= 70 and "a100" not in g.name.lower():
        return (8192 if usage == "serve" else 16384), 1024
    return (2048 if usage == "serve" else 8192), 256


def kv_blocks(st, block_size: int = BLOCK_SIZE) -> int:
    """KV-cache blocks the setup holds: sequences of ``block_size`` tokens that fit beside
    the weights in ``gpu_memory_utilization`` of the GPUs (:func:`specnb.serving.memory_cap`,
    the draft's weights and KV counted, from the total the device reports). vLLM's non-torch
    memory, activation peak and CUDA graphs are not subtracted (:func:`specnb.serving.memory_cap`)."""
    return int(S.memory_cap(st, block_size)["max_batch"])


@dataclass(frozen=True)
class EngineConfig:
    """The scheduler's settings (vLLM's names). Build with :func:`engine_config`."""

    max_num_seqs: int
    max_num_batched_tokens: int
    num_gpu_blocks: int
    max_model_len: int
    block_size: int = BLOCK_SIZE
    prefix_cache_hit_rate: float = 0.0
    chunked_prefill: bool = True
    host: HostCost = HostCost()


def engine_config(st, *, max_num_seqs=None, max_num_batched_tokens=None,
                  num_gpu_blocks=None, max_model_len=None, block_size: int = BLOCK_SIZE,
                  prefix_cache_hit_rate: float = 0.0, usage: str = "serve",
                  chunked_prefill: bool = True, host: HostCost | None = None) -> EngineConfig:
    """Scheduler settings for a setup: vLLM's defaults (:func:`default_batch_limits`, blocks
    from :func:`kv_blocks`, ``max_model_len`` the target's ``max_position_embeddings``, else
    131072) where not given. ``chunked_prefill`` False: vLLM V0's scheduler without chunked
    prefill (``vllm/core/scheduler.py`` ``_schedule_default``: waiting requests' whole
    prompts first, within the token budget, and no decode or verify step beside them; the
    steps that prefill draft nothing, V0 skipping speculation on prompt steps), for V0-era
    published runs. ``host``: the drafter's host time per step (:class:`HostCost`; default
    :func:`specnb.simulate.host.host_cost` of the setup: vLLM's CPU n-gram proposer for
    ``ngram``, nothing otherwise; ``HostCost()`` leaves it out).

    As vLLM 0.33 (``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args``), a
    ``max_num_seqs`` not given is the default capped at ``max_num_batched_tokens``; a budget
    below a given ``max_num_seqs`` is refused, as ``SchedulerConfig.verify_max_model_len``
    refuses it.

    Raises
    ------
    ValueError
        a count < 1; ``max_num_batched_tokens`` below ``max_num_seqs``; a hit rate outside
        [0, 1); no room for one KV block.
    TypeError
        ``host`` not a :class:`HostCost`.
    """
    tok, seqs = default_batch_limits(st.gpu, usage)
    tok = tok if max_num_batched_tokens is None else _check.scalar_int(
        "max_num_batched_tokens", max_num_batched_tokens, lo=1)
    # vLLM's defaults (EngineArgs._set_default_max_num_seqs_and_batched_tokens_args): a
    # max_num_seqs not given is capped at the token budget; given both, SchedulerConfig
    # (verify_max_model_len) refuses a budget below max_num_seqs
    seqs = min(seqs, tok) if max_num_seqs is None else _check.scalar_int(
        "max_num_seqs", max_num_seqs, lo=1)
    if tok < seqs:
        raise ValueError(f"max_num_batched_tokens {tok} is below max_num_seqs {seqs}: vLLM "
                         "requires max_num_batched_tokens >= max_num_seqs (give a budget "
                         f">= {seqs} or max_num_seqs <= {tok})")
    bs = _check.scalar_int("block_size", block_size, lo=1)
    blocks = kv_blocks(st, bs) if num_gpu_blocks is None else _check.scalar_int(
        "num_gpu_blocks", num_gpu_blocks, lo=1)
    if blocks < 1:
        raise ValueError(f"the weights of {st.target.name}"
                         + (f" and the draft {st.draft.name}" if st.draft.kind != "none" else "")
                         + f" leave no room for a KV block on {st.gpus} x {st.gpu.name} at "
                         f"gpu_memory_utilization {st.memory_fraction:g}")
    mml = (st.target.max_position_embeddings or 131072) if max_model_len is None else \
        _check.scalar_int("max_model_len", max_model_len, lo=2)
    hit = _check.scalar_real("prefix_cache_hit_rate", prefix_cache_hit_rate, lo=0.0, hi=1.0,
                             hi_open=True)
    hc = host_cost(st) if host is None else host
    if not isinstance(hc, HostCost):
        raise TypeError(f"host must be a HostCost, got {type(hc).__name__}")
    return EngineConfig(seqs, tok, blocks, mml, bs, float(hit), bool(chunked_prefill), hc)


#: vLLM V0 (v0.6.x, ``vllm/engine/arg_utils.py`` ``EngineArgs.create_engine_config`` @ v0.6.3):
#: chunked prefill not set turns on for a model whose ``max_model_len`` is above this on a
#: GPU, unless a speculative model (or a sliding window, LoRA, prompt adapters, a multimodal
#: model) is configured; its token budget is then :data:`V0_CHUNKED_BUDGET`.
V0_LONG_CONTEXT = 32768
#: V0's ``max_num_batched_tokens`` with chunked prefill (``config.py`` ``SchedulerConfig``,
#: single-step scheduling @ v0.6.3); without it the budget is ``max(max_model_len, 2048)``.
V0_CHUNKED_BUDGET = 512
#: V0's default ``max_num_seqs`` (``EngineArgs.max_num_seqs`` @ v0.6.3).
V0_MAX_NUM_SEQS = 256


def v0_engine_config(st, *, speculative: bool, max_model_len=None, **kw) -> EngineConfig:
    """vLLM V0's scheduler defaults (v0.6.x) for one run of ``st``: chunked prefill on, with
    a 512-token budget, when the model's ``max_model_len`` is above 32K and the run does not
    speculate (``speculative`` False); else V0's prefill-first scheduler
    (``chunked_prefill=False``, budget ``max(max_model_len, 2048)``); ``max_num_seqs`` 256.
    So a plain run of a long-context model (Llama-3.1-70B: 131,072) and its speculative twin
    schedule differently under V0's defaults (:data:`V0_LONG_CONTEXT`). ``max_model_len``
    None: the target's ``max_position_embeddings``. Other keywords go to
    :func:`engine_config`.

    Raises
    ------
    ValueError
        as :func:`engine_config`; a ``max_num_batched_tokens`` below ``max_model_len`` without
        chunked prefill (a speculating run, or any run at <= 32K positions), which V0 refuses
        to build: v0.6.3 ``config.py`` ``SchedulerConfig._verify_args`` ("max_num_batched_tokens
        (N) is smaller than max_model_len (M)"); a ``ParamValueError`` naming
        ``max_num_batched_tokens``.
    """
    mml = (st.target.max_position_embeddings or 131072) if max_model_len is None else \
        _check.scalar_int("max_model_len", max_model_len, lo=2)
    chunked = mml > V0_LONG_CONTEXT and not speculative
    kw.setdefault("max_num_seqs", V0_MAX_NUM_SEQS)
    budget = V0_CHUNKED_BUDGET if chunked else max(mml, 2048)
    kw.setdefault("max_num_batched_tokens", budget)
    tok = kw["max_num_batched_tokens"]
    if tok is not None and not chunked and _check.scalar_int("max_num_batched_tokens", tok,
                                                                lo=1) < mml:
        run = "a speculating run" if speculative else f"a run at {mml} positions"
        raise _check.ParamValueError(
            f"max_num_batched_tokens {tok} is below max_model_len {mml} (the target "
            f"{st.target.name}'s) without chunked prefill ({run}): vLLM V0 refuses to start "
            "(v0.6.3 SchedulerConfig: max_num_batched_tokens must be >= max_model_len unless "
            f"chunked prefill is on, and V0 turns it off with speculative decoding); give "
            f"max_num_batched_tokens >= {mml}", "max_num_batched_tokens")
    return engine_config(st, max_model_len=mml, chunked_prefill=chunked, **kw)


@dataclass(frozen=True)
class Policy:
    """How many draft tokens each step proposes: ``name`` (``off``, ``k=3``, ``schedule``,
    ``disable_by_batch_size``), ``lookup`` (K by batch size, element 0 unused; None = ``k``
    always), ``k`` (the largest K), ``schedule`` (vLLM's ranges, where one applies)."""

    name: str
    k: int
    lookup: tuple | None = None
    schedule: tuple | None = None

    def k_at(self, batch: int) -> int:
        if self.lookup is None:
            return self.k
        return self.lookup[min(batch, len(self.lookup) - 1)]


def policy(kind, *, k: int | None = None, schedule=None, max_batch: int | None = None,
           max_num_seqs: int = 1024) -> Policy:
    """A :class:`Policy`: ``"off"``; ``"static"`` (k draft tokens every step); ``"schedule"``
    (vLLM's ``num_speculative_tokens_per_batch_size`` ranges, K at a step = the lookup at the
    number of requests scheduled in it, :func:`specnb.vllm.schedule_lookup`'s rule; k =
    ``num_speculative_tokens``, default the largest K); ``"disable_by_batch_size"`` (k up to
    ``max_batch`` requests, 0 above: V0's rule, removed from vLLM in PR #35060, written as the
    schedule ``[[1, max_batch, k], [max_batch + 1, max_num_seqs, 0]]``).

    Raises
    ------
    ValueError
        an unknown kind; k < 1 where needed; a schedule vLLM refuses; max_batch < 1.
    """
    from ..vllm import schedule_lookup, validate_schedule

    _check.choice("policy", kind, ("off", "static", "schedule", "disable_by_batch_size"))
    seqs = _check.scalar_int("max_num_seqs", max_num_seqs, lo=1)
    if kind == "off":
        return Policy("off", 0)
    if kind == "schedule":
        rows = validate_schedule(schedule)
        top = max(r[2] for r in rows) if k is None else _check.scalar_int("k", k, lo=1)
        if top < 1:
            return Policy("schedule", 0, tuple([0] * (seqs + 1)), tuple(map(tuple, rows)))
        return Policy("schedule", top, tuple(schedule_lookup(rows, top, seqs)),
                      tuple(map(tuple, rows)))
    kk = _check.scalar_int("k", k, lo=1)
    if kind == "static":
        return Policy(f"k={kk}", kk)
    mb = _check.scalar_int("max_batch", max_batch, lo=1)
    rows = [[1, mb, kk]] + ([[mb + 1, max(seqs, mb + 1), 0]])
    return Policy("disable_by_batch_size", kk, tuple(schedule_lookup(rows, kk, seqs)),
                  tuple(map(tuple, rows)))


def min_request_steps(output_lens, policies) -> float:
    """A lower bound on the request-steps (one request scheduled in one engine step) a
    simulation of ``policies`` takes: per policy, each request's ``ceil(output_len / (1 + K))``
    sampling steps at the policy's largest K (every draft accepted). ``output_lens``: ints
    >= 1, one per request.

    Raises
    ------
    ValueError
        an output length < 1; a policy that is not a :class:`Policy`.
    """
    out = np.atleast_1d(_check.integer("output_lens", output_lens, lo=1)).astype(np.int64)
    total = 0
    for p in policies:
        if not isinstance(p, Policy):
            raise ValueError(f"policies must be Policy objects (policy(...)), got "
                             f"{type(p).__name__}")
        total += int((-(-out // (1 + p.k))).sum())
    return float(total)


@dataclass
class Trace:
    """What a run did. Per request (arrays of n): ``send_s`` (sent: arrival, or when a
    concurrency slot freed), ``first_token_s``, ``finish_s``, ``input_len``, ``output_len``,
    ``chunks`` (list per request of the times its tokens were streamed, one per step that
    produced tokens) ; per step: ``step_ms`` and ``batch`` (requests scheduled), ``tokens``
    (tokens scheduled), ``prefill`` (of them, prompt tokens: chunks of requests not yet
    decoding, recomputation after a preemption included), ``generated`` (tokens sampled, the
    decode token and accepted drafts of each request that sampled); counters ``num_drafts``, ``num_draft_tokens``,
    ``num_accepted_tokens``, ``accepted_per_pos``, ``num_preemptions``; ``steps`` (with
    ``record=True``: per step the scheduled ``[request, tokens, spec tokens]``, the
    preempted and finished requests, for the oracle fixtures)."""

    send_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    chunks: list
    step_ms: list
    batch: list
    tokens: list
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    accepted_per_pos: list = field(default_factory=list)
    num_preemptions: int = 0
    steps: list | None = None
    k: int = 0
    prefill: list = field(default_factory=list)
    generated: list = field(default_factory=list)


def _cdiv(a, b):
    return -(-a // b)


def run(st, workload, pol: Policy, acc=None, *, config: EngineConfig | None = None,
        seed: int = 0, record: bool = False, accepted=None, drafts=None,
        max_steps: int = 5_000_000) -> Trace:
    """Serve ``workload`` on ``st`` with policy ``pol``: the scheduler of the module
    docstring, each step's time from :class:`specnb.serving.MixedStep`.

    Parameters
    ----------
    st : :class:`specnb.serving.Setup`
    workload : :class:`specnb.simulate.Workload`
    pol : :class:`Policy`
    acc : :class:`specnb.simulate.acceptance.Acceptance` (needed unless the policy is off or
        ``accepted`` is given)
    config : :class:`EngineConfig` (default :func:`engine_config` of the setup)
    seed : the numpy Generator seed of the draws (acceptance, n-gram proposals)
    record : keep the per-step schedule in ``Trace.steps``
    accepted : optional ``{request: [accepted, ...]}``: accepted counts to use instead of
        draws, in order of the request's verifications (the oracle fixtures' values)
    drafts : optional ``{request: [k, ...]}``: draft lengths proposed after each of the
        request's sampling steps, instead of the policy's (fixtures of n-gram runs)

    Raises
    ------
    ValueError
        a budget below one verify step (1 + k tokens) or below the draft slots; a request
        longer than ``max_model_len``; a request whose blocks can never fit in the KV cache
        (naming it); a policy drafting more tokens than the acceptance has.
    """
    cfg = engine_config(st) if config is None else config
    k_top = pol.k
    if k_top > 0 and st.draft.kind == "none" and st.draft.method not in ("ngram", "suffix"):
        raise ValueError("the setup has no drafter")
    if k_top > 0 and acc is not None:
        for kk in sorted(set(pol.lookup or (k_top,))):
            if kk > 0:
                acc.check_gamma(kk)
    elif k_top > 0 and accepted is None:
        raise ValueError("a speculating policy needs an acceptance (tau, rates or a profile)")
    method = st.draft.method
    draft_slots = (1 if method == "draft_model" else 0) if k_top else 0
    lookahead = 0
    if k_top:
        lookahead = k_top + 1 if method == "dflash" else (
            k_top if (st.draft.kind in ("head", "model", "self")) else 0)
    M = cfg.max_num_batched_tokens
    if M <= max(draft_slots, lookahead if method == "dflash" else 0) or M < 1 + k_top:
        raise ValueError(f"max_num_batched_tokens {M} is below one request's verify step "
                         f"(1 + {k_top} tokens" + (f", + {draft_slots} draft slot"
                                                   if draft_slots else "") + ")")
    bs, mml, blocks_total = cfg.block_size, cfg.max_model_len, cfg.num_gpu_blocks
    v0 = not cfg.chunked_prefill
    n = workload.num_prompts
    prompt = workload.input_len.astype(np.int64).tolist()
    out_len = workload.output_len.astype(np.int64).tolist()
    for i in range(n):
        if prompt[i] + out_len[i] > mml:
            raise ValueError(f"request {i}: {prompt[i]} + {out_len[i]} tokens exceed "
                             f"max_model_len {mml}")
        if v0 and prompt[i] > M:
            raise ValueError(f"request {i}: its {prompt[i]}-token prompt exceeds "
                             f"max_num_batched_tokens {M}: without chunked prefill a prompt "
                             "is prefilled in one step")
        if _cdiv(prompt[i] + out_len[i] + lookahead, bs) > blocks_total - 1:
            raise ValueError(f"request {i}: {prompt[i] + out_len[i]} tokens need "
                             f"{_cdiv(prompt[i] + out_len[i] + lookahead, bs)} KV blocks, the "
                             f"cache holds {blocks_total - 1} (and vLLM's null block)")
    rng = np.random.default_rng(seed)
    mixed = S.MixedStep(st)
    host = cfg.host
    hit = cfg.prefix_cache_hit_rate
    arrival = workload.arrival_s.tolist()
    conc = workload.max_concurrency or n
    comp = [0] * n
    outn = [0] * n
    spec = [0] * n
    spec_k = [0] * n  # the gamma a profile draft was proposed at (spec: its own length)
    held = [0] * n
    fresh = [True] * n
    send = [math.nan] * n
    first = [math.nan] * n
    fin = [math.nan] * n
    chunks = [[] for _ in range(n)]
    acc_iter = {r: iter(v) for r, v in (accepted or {}).items()}
    draft_iter = {r: iter(v) for r, v in (drafts or {}).items()}
    running: list = []
    waiting: deque = deque()
    free = blocks_total - 1  # the block pool holds one null block (BlockPool.null_block)
    nxt, in_flight, done = 0, 0, 0
    # when each concurrency slot last freed (vllm bench serve's semaphore: a request starts its
    # clock at its arrival when a slot is free, else when one frees); FIFO, so times ascend
    slot_free = deque([0.0] * min(conc, n))
    t = 0.0
    trace = Trace(np.zeros(0), np.zeros(0), np.zeros(0), workload.input_len,
                  workload.output_len, chunks, [], [], [], accepted_per_pos=[0] * max(k_top, 1),
                  steps=[] if record else None, k=k_top)
    step_ms, batch_l, tokens_l = trace.step_ms, trace.batch, trace.tokens
    prefill_l, gen_l = trace.prefill, trace.generated
    per_pos = trace.accepted_per_pos
    steps = 0
    while done < n:
        while nxt < n and in_flight < conc and arrival[nxt] <= t + 1e-12:
            send[nxt] = max(arrival[nxt], slot_free.popleft())
            waiting.append(nxt)
            nxt += 1
            in_flight += 1
        if not running and not waiting:
            t = max(t, arrival[nxt])
            continue
        steps += 1
        if steps > max_steps:
            raise RuntimeError(f"more than {max_steps} steps: the load does not drain")
        budget = M
        in_budget = M
        sched = []  # [request, tokens, spec tokens scheduled]
        preempted = []
        if v0 and waiting:
            # V0 without chunked prefill: whole prompts first (one that does not fit the
            # budget waits), and a step that prefills schedules no decode
            while waiting and len(running) < cfg.max_num_seqs:
                r = waiting[0]
                new = prompt[r] + outn[r]
                need = _cdiv(min(new + lookahead, mml), bs)
                if new > budget or need > free:
                    break
                waiting.popleft()
                fresh[r] = False
                comp[r] = 0
                free -= need
                held[r] = need
                running.append(r)
                sched.append([r, new, 0])
                budget -= new
        i = len(running) if sched else 0  # V0: no decode beside a prefill
        while i < len(running) and budget > 0:
            if in_budget <= draft_slots:
                break
            r = running[i]
            ntok = prompt[r] + outn[r]
            new = ntok + spec[r] - comp[r]
            new = min(new, budget, in_budget - draft_slots, mml - comp[r] - 1)
            if new <= 0:
                i += 1
                continue
            need = _cdiv(min(comp[r] + new + lookahead, mml), bs) - held[r]
            ok = True
            while need > free:
                victim = running.pop()
                free += held[victim]
                held[victim] = 0
                comp[victim] = 0
                spec[victim] = 0
                waiting.appendleft(victim)
                preempted.append(victim)
                trace.num_preemptions += 1
                if victim == r:
                    ok = False
                    break
            if not ok:
                break
            if need > 0:
                free -= need
                held[r] += need
            s = 0
            if spec[r]:
                s = max(0, min(spec[r], new + comp[r] - ntok))
                spec[r] = 0
            sched.append([r, new, s])
            budget -= new
            in_budget -= new + draft_slots
            i += 1
        if not preempted and not v0:
            while budget > 0 and waiting:
                if in_budget <= draft_slots or len(running) >= cfg.max_num_seqs:
                    break
                r = waiting[0]
                ntok = prompt[r] + outn[r]
                c0 = 0
                if hit and fresh[r]:
                    c0 = min(int(prompt[r] * hit) // bs * bs, ((prompt[r] - 1) // bs) * bs)
                new = min(ntok - c0, budget, in_budget - draft_slots)
                full = _cdiv(min(ntok, mml), bs)
                if full > free:
                    break
                need = _cdiv(min(c0 + new + lookahead, mml), bs)
                if need > free:
                    break
                waiting.popleft()
                fresh[r] = False
                comp[r] = c0
                free -= need
                held[r] = need
                running.append(r)
                sched.append([r, new, 0])
                budget -= new
                in_budget -= new + draft_slots
        if not sched:
            if not running and waiting:
                r = waiting[0]
                raise ValueError(f"request {r} cannot be scheduled: {prompt[r] + outn[r]} "
                                 f"tokens need {_cdiv(prompt[r] + outn[r], bs)} KV blocks, "
                                 f"{free} of {blocks_total} are free")
            # nothing schedulable now (e.g. every running request at its limit): wait
            t = max(t, arrival[nxt]) if nxt < n else t
            continue
        # drafts proposed this step: K at this step's batch size
        k_next = pol.k_at(len(sched)) if k_top else 0
        ctx = np.empty(len(sched))
        q = np.empty(len(sched))
        kd = np.zeros(len(sched))
        lg = np.empty(len(sched))  # logit rows: the last scheduled token + the verified drafts
        pre = 0
        for j, (r, new, s) in enumerate(sched):
            ctx[j] = comp[r]
            q[j] = new
            lg[j] = min(1 + s, new)
            if comp[r] < prompt[r] + outn[r] - 1:  # not decoding: a prompt chunk
                pre += new
            comp[r] += new
        # which sample, which draft next
        spec_idx = [j for j, (r, new, s) in enumerate(sched) if s > 0]
        draws = {}
        if spec_idx:
            by_k: dict = {}
            for j in spec_idx:
                r, s = sched[j][0], sched[j][2]
                if r in acc_iter:
                    draws[j] = next(acc_iter[r])
                else:
                    by_k.setdefault(spec_k[r] or s, []).append(j)
            for s, js in by_k.items():
                lens = [sched[j][2] for j in js]
                a = acc.draw(rng, s, [ctx[j] for j in js],
                             lengths=lens if any(x != s for x in lens) else None)
                for j, v in zip(js, a):
                    draws[j] = int(v)
        if k_next:
            for j, (r, new, s) in enumerate(sched):
                if comp[r] >= prompt[r] + outn[r]:  # not mid-prefill: it will sample
                    kd[j] = k_next
        # V0 runs a prompt step without speculation: its drafts come with the next step's
        drafting = not (v0 and pre)
        dt = mixed.ms(ctx, q, kd if drafting else np.zeros(len(sched)), lg)["total_ms"]
        if k_next and drafting and host.kind != "none":
            # the host drafter scans each sampling request's tokens before the next forward
            # (synchronous: host.py); its tokens so far are its computed ones
            cs = np.array([comp[r] for j, (r, _, _) in enumerate(sched) if kd[j]], dtype=float)
            if cs.size:
                m = acc.proposal_rate(k_next, float(cs.mean())) if acc is not None else 1.0
                dt += _host_ms(host, cs, m)
        if k_top and host.sync_us_per_request:
            # speculation configured with a method that turns async scheduling off: every
            # step's host time (scheduler, input prep, output processing) runs in series
            # (host.py), drafting or not; the plain run hides it
            dt += _sync_ms(host, len(sched))
        dt /= 1e3
        t += dt
        step_ms.append(dt * 1e3)
        batch_l.append(len(sched))
        tokens_l.append(int(q.sum()))
        prefill_l.append(pre)
        finished = []
        made = 0
        for j, (r, new, s) in enumerate(sched):
            if comp[r] < prompt[r] + outn[r]:
                continue  # a prefill chunk: no token yet
            a = draws.get(j, 0)
            if s:
                trace.num_drafts += 1
                trace.num_draft_tokens += s
                trace.num_accepted_tokens += a
                for p in range(a):
                    per_pos[p] += 1
                comp[r] -= s - a
            gen = min(1 + a, out_len[r] - outn[r])
            outn[r] += gen
            made += gen
            if math.isnan(first[r]):
                first[r] = t
            chunks[r].append(t)
            if outn[r] >= out_len[r]:
                fin[r] = t
                finished.append(r)
                free += held[r]
                held[r] = 0
                done += 1
                in_flight -= 1
                slot_free.append(t)
            elif kd[j]:
                if r in draft_iter:
                    spec[r] = next(draft_iter[r])
                elif st.draft.kind == "none" and acc is not None:
                    m = acc.proposal_rate(int(kd[j]), comp[r])
                    spec[r] = int(kd[j]) if (m >= 1.0 or rng.random() < m) else 0
                    if spec[r] and acc.kind == "profile":  # the draft's own length (T8a-14)
                        spec_k[r] = spec[r]
                        spec[r] = acc.draft_length(rng, spec_k[r], comp[r])
                else:
                    spec[r] = int(kd[j])
        gen_l.append(made)
        if finished:
            gone = set(finished)
            running = [r for r in running if r not in gone]
        if record:
            trace.steps.append({"scheduled": [list(x) for x in sched],
                                "preempted": list(preempted), "finished": sorted(finished),
                                "k": k_next})
    trace.send_s = np.array(send)
    trace.first_token_s = np.array(first)
    trace.finish_s = np.array(fin)
    return trace
