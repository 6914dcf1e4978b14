"""The workload beside the model: partial proposals and how to read their rate, request lengths
(issue 16). The prefill and the end-to-end ratio are :func:`specnb.serving.prefill_ms` and
:func:`specnb.serving.end_to_end_speedup`.

Partial proposals (``shared/reference/engines.md`` section 2 item 1). vLLM's n-gram and suffix
proposers draft only for a sequence whose recent tokens match earlier text. With proposal
rate M (the share of sequence-steps that carry a draft, 0 < M <= 1), one verification step of
B sequences verifies ``B (1 + M gamma)`` tokens, not ``B (gamma + 1)`` (``B (1 + M L)`` when the
mean draft length L < gamma is known: suffix drafts stop early, vLLM verifies each request's
own draft; an acceptance profile gives L), and a sequence gains
``1 + M (tau - 1)`` tokens per step on average, tau being vLLM's mean acceptance length, which
counts per draft (accepted tokens per draft + 1). M = 1 gives today's numbers: B (gamma + 1)
and tau. How to read M from vLLM's counters: :func:`proposal_rate_from_counters`.

Prefill (item 2): ``vllm bench serve`` and offline ``LLM.generate`` time the prefill with the
decode; :func:`decode_context` is the mean context of a request's decode steps.

Units: times in ms; counts are counts; arrays broadcast.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _check, limits

__all__ = ["check_proposal_rate", "check_mean_draft_len", "verified_tokens", "tokens_per_sequence_step",
           "proposal_rate_from_counters", "PROPOSAL_RATE_HELP", "prefill_chunks",
           "decode_context", "DEFAULT_MAX_BATCHED_TOKENS", "gain", "query_tokens"]

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
    return limits.proposal_rate(proposal_rate)  # the rule's home, light


def verified_tokens(batch_size, gamma, proposal_rate=1.0, mean_draft_len=None):
    """Tokens one verification step scores: ``B (1 + M L)``, L the mean tokens per draft:
    gamma (every draft full length, the default), or ``mean_draft_len`` (vLLM's
    ``num_draft_tokens / num_drafts``: n-gram and suffix drafts stop where the match does,
    and vLLM verifies each request's own draft), at most gamma. batch_size >= 1 and gamma >= 0
    (ints or arrays); M in (0, 1]; mean_draft_len >= 1 or None."""
    b = _check.integer("batch_size", batch_size, lo=1).astype(float)
    g = _check.integer("gamma", gamma, lo=0).astype(float)
    m = check_proposal_rate(proposal_rate)
    if mean_draft_len is not None:
        mean_draft_len = check_mean_draft_len(mean_draft_len)
    b, g = _check.broadcast(batch_size=b, gamma=g)
    return _check.out(b * query_tokens(g, m, mean_draft_len))


def check_mean_draft_len(mean_draft_len) -> float:
    """L as a float, checked: a draft has at least one token, L >= 1 (finite)."""
    return _check.scalar_real("mean_draft_len", mean_draft_len, lo=1.0)


def query_tokens(gamma, proposal_rate, mean_draft_len=None):
    """Unchecked mean query tokens per sequence of a verification step, ``1 + M L`` with
    L = min(mean_draft_len, gamma), or gamma without a mean draft length (the one home of the
    verify-token rule)."""
    if mean_draft_len is None:
        return 1.0 + proposal_rate * gamma
    return 1.0 + proposal_rate * np.minimum(mean_draft_len, gamma)


def tokens_per_sequence_step(tau, proposal_rate=1.0):
    """Tokens a sequence gains per verification step: ``1 + M (tau - 1)``; tau >= 1 per draft
    (vLLM's mean acceptance length), M in (0, 1]. (The speedup uses the same rule on
    unchecked arrays: :func:`gain`.)"""
    t = _check.real("tau", tau, lo=1.0)
    return _check.out(gain(t, check_proposal_rate(proposal_rate)))


def gain(tau, proposal_rate):
    """Unchecked ``1 + M (tau - 1)`` on arrays (the one home of the rule)."""
    return 1.0 + proposal_rate * (tau - 1.0)


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


def decode_context(input_len, output_len):
    """Mean context of the decode steps of a request: ``input_len + output_len / 2`` (the KV
    grows by one token per output token). ints >= 0 (output_len >= 1)."""
    n = _check.integer("input_len", input_len, lo=0).astype(float)
    m = _check.integer("output_len", output_len, lo=1).astype(float)
    return _check.out(n + m / 2.0)
