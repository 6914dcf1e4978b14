"""Partial proposals, prefill and end-to-end ratios (issue 16, staged).

Partial proposals (``shared/reference/engines.md`` section 2 item 1). vLLM's n-gram and suffix
proposers draft only for a sequence whose recent tokens match earlier text. With proposal
rate M (the share of sequence-steps that carry a draft, 0 < M <= 1), one verification step of
B sequences verifies ``B (1 + M gamma)`` tokens, not ``B (gamma + 1)``, and a sequence gains
``1 + M (tau - 1)`` tokens per step on average, tau being vLLM's mean acceptance length, which
counts per draft (accepted tokens per draft + 1). M = 1 gives today's numbers: B (gamma + 1)
and tau. How to read M from vLLM's counters: :func:`proposal_rate_from_counters`.

Prefill (item 2). ``vllm bench serve`` and offline ``LLM.generate`` time the prefill with the
decode. With prefill time P and plain decode time D, a decode speedup S gives the end-to-end
ratio ``(P + D) / (P + P_draft + D / S)`` (P_draft: the draft's own prefill, 0 for n-gram), pulled
toward 1 most where prompts are long and batches large.

Units: times in ms; counts are counts; arrays broadcast.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _check

__all__ = ["check_proposal_rate", "verified_tokens", "tokens_per_sequence_step",
           "proposal_rate_from_counters", "PROPOSAL_RATE_HELP", "prefill_chunks",
           "prefill_time_ms", "decode_context", "end_to_end_speedup",
           "DEFAULT_MAX_BATCHED_TOKENS", "speedup_from_times"]

#: How to read M, for the text output of ``specnb plan``.
PROPOSAL_RATE_HELP = (
    "proposal rate M = drafts / decode sequence-steps: from vLLM's Prometheus counters, "
    "M = vllm:spec_decode_num_drafts_total / (vllm:generation_tokens_total - "
    "vllm:spec_decode_num_accepted_tokens_total - requests) over the same window (each "
    "sequence-step emits one token plus the accepted drafts; a request's first token comes "
    "from its prefill); vLLM's mean acceptance length (1 + accepted / drafts) is the tau to "
    "give with it")

#: vLLM V1's default ``max_num_batched_tokens`` for online serving with chunked prefill on
#: an H100-class GPU (the token budget of one scheduler step). ASSUMED default of the chunk
#: size in :func:`prefill_time_ms`; vLLM picks it by usage context and hardware (2,048 to
#: 16,384 across versions): pass the value your server logs.
DEFAULT_MAX_BATCHED_TOKENS = 8192


def check_proposal_rate(proposal_rate) -> float:
    """M as a float, checked: 0 < M <= 1.

    Raises
    ------
    ValueError
        M outside (0, 1] (0 would mean speculation never runs: turn it off instead), NaN.
    TypeError
        not a number.
    """
    return _check.scalar_real("proposal_rate", proposal_rate, lo=0.0, hi=1.0, lo_open=True)


def verified_tokens(batch_size, gamma, proposal_rate=1.0):
    """Tokens one verification step scores: ``B (1 + M gamma)``. batch_size >= 1 and
    gamma >= 0 (ints or arrays); M in (0, 1]."""
    b = _check.integer("batch_size", batch_size, lo=1).astype(float)
    g = _check.integer("gamma", gamma, lo=0).astype(float)
    m = check_proposal_rate(proposal_rate)
    b, g = _check.broadcast(batch_size=b, gamma=g)
    return _check.out(b * (1.0 + m * g))


def tokens_per_sequence_step(tau, proposal_rate=1.0):
    """Tokens a sequence gains per verification step: ``1 + M (tau - 1)``; tau >= 1 per draft
    (vLLM's mean acceptance length), M in (0, 1]."""
    t = _check.real("tau", tau, lo=1.0)
    m = check_proposal_rate(proposal_rate)
    return _check.out(1.0 + m * (t - 1.0))


def proposal_rate_from_counters(num_drafts, generation_tokens, accepted_tokens,
                                requests=0):
    """M from vLLM's counters over one window: drafts / decode sequence-steps, with
    sequence-steps = generation tokens - accepted draft tokens - requests (each decode
    sequence-step emits one token plus its accepted drafts; each request's first token comes
    from its prefill, which drafts nothing). See :data:`PROPOSAL_RATE_HELP`.

    Raises
    ------
    ValueError
        a negative count; no decode sequence-step (generation <= accepted + requests); more
        drafts than sequence-steps (M > 1: counters from different windows).
    """
    d = _check.scalar_real("num_drafts", num_drafts, lo=0.0)
    gen = _check.scalar_real("generation_tokens", generation_tokens, lo=0.0)
    acc = _check.scalar_real("accepted_tokens", accepted_tokens, lo=0.0)
    req = _check.scalar_real("requests", requests, lo=0.0)
    steps = gen - acc - req
    if steps <= 0:
        raise ValueError(f"generation_tokens ({gen:g}) must exceed accepted_tokens + requests "
                         f"({acc + req:g}): no decode sequence-step in the window")
    m = d / steps
    if m > 1 + 1e-9:
        raise ValueError(f"num_drafts ({d:g}) exceeds the decode sequence-steps ({steps:g}): "
                         "M would be above 1; read all counters over the same window")
    if m == 0:
        raise ValueError("num_drafts is 0: no sequence drafted in the window (M = 0); "
                         "speculation did not run")
    return min(m, 1.0)


def prefill_chunks(batch_size: int, input_len: int,
                   max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS) -> int:
    """Scheduler steps the prefill of ``batch_size`` prompts of ``input_len`` tokens takes with
    a token budget of ``max_batched_tokens`` per step (chunked prefill packs prompts):
    ``ceil(B N / budget)``; 0 when N = 0."""
    b = _check.scalar_int("batch_size", batch_size, lo=1)
    n = _check.scalar_int("input_len", input_len, lo=0)
    c = _check.scalar_int("max_batched_tokens", max_batched_tokens, lo=1)
    return math.ceil(b * n / c)


def prefill_time_ms(step_ms, batch_size: int, input_len: int,
                    max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS) -> float:
    """Time to prefill ``batch_size`` prompts of ``input_len`` tokens, ms.

    The B N prompt tokens run in ``k = ceil(B N / max_batched_tokens)`` steps of ``B N / k``
    query tokens each, every step at the prompt's mean context N / 2 (causal attention:
    query token i attends to i keys, so the attention FLOPs total B N^2 / 2 and the weights
    are read k times)::

        P = k x step_ms(1, N / 2, B N / k)

    Parameters
    ----------
    step_ms : callable (batch_size, context, query_tokens) -> ms, the model's forward time
        (``serving.step_time_ms`` with the target's setup bound)
    batch_size : int >= 1
    input_len : int >= 0 (0: no prefill, 0.0 ms)
    max_batched_tokens : int >= 1, vLLM's ``max_num_batched_tokens``
        (default :data:`DEFAULT_MAX_BATCHED_TOKENS`, ASSUMED)

    Raises
    ------
    ValueError
        a count below its minimum; a negative or non-finite time from ``step_ms``.
    """
    k = prefill_chunks(batch_size, input_len, max_batched_tokens)
    if k == 0:
        return 0.0
    b, n = int(batch_size), int(input_len)
    q = b * n / k
    t = float(step_ms(1, n // 2, int(math.ceil(q))))
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"step_ms returned {t!r}; it must give a time >= 0 in ms")
    return k * t


def decode_context(input_len, output_len):
    """Mean context of the decode steps of a request: ``input_len + output_len / 2`` (the KV
    grows by one token per output token). ints >= 0 (output_len >= 1)."""
    n = _check.integer("input_len", input_len, lo=0).astype(float)
    m = _check.integer("output_len", output_len, lo=1).astype(float)
    return _check.out(n + m / 2.0)


def end_to_end_speedup(prefill_ms, decode_plain_ms, decode_speedup, draft_prefill_ms=0.0):
    """End-to-end ratio with / without speculation when the run's time includes the prefill:
    ``(P + D) / (P + P_draft + D / S)``.

    Parameters
    ----------
    prefill_ms : float or array >= 0, P (the target's prefill of the run)
    decode_plain_ms : float or array > 0, D (the plain decode time of the run)
    decode_speedup : float or array > 0, S (the decode-only speedup)
    draft_prefill_ms : float or array >= 0, the draft's prefill (a draft model's or a head's;
        0 for n-gram / suffix)

    P = 0 gives S (with P_draft = 0); P >> D gives about 1.
    """
    p = _check.real("prefill_ms", prefill_ms, lo=0.0)
    d = _check.real("decode_plain_ms", decode_plain_ms, lo=0.0, lo_open=True)
    s = _check.real("decode_speedup", decode_speedup, lo=0.0, lo_open=True)
    pd_ = _check.real("draft_prefill_ms", draft_prefill_ms, lo=0.0)
    p, d, s, pd_ = _check.broadcast(prefill_ms=p, decode_plain_ms=d, decode_speedup=s,
                                    draft_prefill_ms=pd_)
    return _check.out((p + d) / (p + pd_ + d / s))


def speedup_from_times(tau, t_plain_ms, cost_ms, proposal_rate=1.0):
    """Decode speedup at a fixed batch from the step times: tokens a sequence gains per
    speculative step over the plain step's one, per time::

        S = (1 + M (tau - 1)) x T_plain / cost

    with ``cost`` the speculative step (gamma T_D + T_V at ``1 + M gamma`` query tokens per
    sequence + overheads + the engine profile's extra). M = 1 gives ``tau T_plain / cost``
    (MagicDec eq. 2). Arrays broadcast; times > 0 ms; tau >= 1; M in (0, 1]."""
    tp = _check.real("t_plain_ms", t_plain_ms, lo=0.0, lo_open=True)
    c = _check.real("cost_ms", cost_ms, lo=0.0, lo_open=True)
    gain = np.asarray(tokens_per_sequence_step(tau, proposal_rate))
    gain, tp, c = _check.broadcast(tau=gain, t_plain_ms=tp, cost_ms=c)
    return _check.out(gain * tp / c)
