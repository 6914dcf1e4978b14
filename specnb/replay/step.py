"""Stepping a logged request as vLLM steps it, and counting with vLLM's counters.

The first output token comes from the prefill; from then on each engine step proposes a draft
from all the tokens so far (prompt + output), verifies it, and appends the accepted tokens and
one more (the target's own). Replaying a log, the target's tokens are the logged response: a
draft token is accepted when it equals the response's token at its position (and every token
before it was), never past the response's end, and the step appends accepted + 1 tokens. So
every step's tokens are a prefix of prompt + response, and step s of a request is the tuple
(context T = tokens before it, draft length d, accepted a), with T growing by a + 1 from
prompt length + 1 until it reaches prompt + response length.

At T > 0 a logged response is one sample of the target: exact-match replay of a
deterministic proposer (n-gram, suffix) gives the acceptance of that sample path, which has
the distribution speculative sampling gives (a one-hot draft token x is accepted with
probability p(x), and a rejected one is never emitted), so counters over many requests
estimate what the server would count.
"""

from __future__ import annotations

import gc

import numpy as np

from ..acceptance_profile import Counters
from .ngram import NgramTable

__all__ = ["ngram_steps", "suffix_steps", "teacher_forced_steps", "counters"]


def ngram_steps(full, prompt_len: int, gammas, *, prompt_lookup_min: int,
                prompt_lookup_max: int, max_model_len: int | None = None,
                runner: str = "v2") -> dict:
    """``{gamma: (T, d, a)}`` int64 arrays, one entry per decode step of the request whose
    prompt + response is ``full`` (``prompt_len`` prompt tokens), n-gram drafts
    (:mod:`specnb.replay.ngram`) as ``runner`` proposes them: ``"v2"`` (Model Runner V2, vLLM
    0.33's default: the rightmost match, gamma tokens at every step, padded with the last
    token) or ``"v1"`` (the CPU proposer: the earliest match, only the tokens after it, at most
    ``max_model_len - T``); with ``max_model_len`` at most ``max_model_len - T - 1`` draft
    tokens are scheduled on either (vLLM's ``Scheduler.schedule``: ``num_new_tokens <=
    max_model_len - num_computed_tokens - 1``)."""
    full = np.asarray(full, dtype=np.int64)
    n_tok = full.size
    v2 = runner == "v2"
    table = NgramTable(full, prompt_lookup_min, prompt_lookup_max, rightmost=v2)
    every = np.arange(n_tok + 1)
    out = {}
    for g in gammas:
        lens = (np.full(every.shape, g, dtype=np.int64) if v2
                else table.lengths(every, g, max_model_len))
        if max_model_len is not None:  # the scheduler's cap on scheduled draft tokens
            lens = np.clip(np.minimum(lens, max_model_len - every - 1), 0, None)
        acc = np.minimum((table.padded_agreement if v2 else table.agreement)(g), lens)
        nxt = (every + acc + 1).tolist()  # the step at context T appends accepted + 1
        path = []
        T = prompt_len + 1
        while T < n_tok:
            path.append(T)
            T = nxt[T]
        ts = np.array(path, dtype=np.int64)
        out[g] = (ts, lens[ts], acc[ts])
    return out


def suffix_steps(cache, req_id, full, prompt_len: int, gammas, *,
                 max_spec_factor: float = 1.0, min_token_prob: float = 0.1,
                 max_model_len: int | None = None) -> dict:
    """:func:`ngram_steps` for suffix decoding: the request's trees built in ``cache`` (a
    :class:`~specnb.replay.suffix.SuffixCache`, :class:`~specnb.replay.suffix.ArcticCache` or
    :class:`~specnb.replay.suffix_jit.NumbaCache`, which runs this loop compiled)
    as vLLM's ``SuffixDecodingProposer`` builds them (its prompt, then its output step by
    step), the whole response added to the global tree by the end (later requests see it).
    One pass serves every gamma: the trees at a prefix do not depend on gamma (speculate only
    reads them), so each gamma speculates at its own steps on the same trees that a replay of
    that gamma alone would hold there (the request's tokens up to T in the local tree and in
    the global one, after the earlier requests' responses). Where several gammas step at the
    same T, the largest speculates first, and its draft serves a smaller k when it is no
    longer than k: with a smaller cap every match length's draft is a prefix of its draft
    (its score no higher), so the winning match (and the winning tree) stays the same; only
    a longer draft calls speculate again. The cyclic
    garbage collector is paused meanwhile: the trees hold no cycles (reference counting frees
    them), and its passes over their millions of nodes took a third of the Python backend's
    time."""
    if hasattr(cache, "steps"):  # the numba backend: the same loop, compiled
        return cache.steps(req_id, full, prompt_len, gammas, max_spec_factor=max_spec_factor,
                           min_token_prob=min_token_prob, max_model_len=max_model_len)
    was = gc.isenabled()
    gc.disable()
    try:
        return _suffix_steps(cache, req_id, full, prompt_len, gammas, max_spec_factor,
                             min_token_prob, max_model_len)
    finally:
        if was:
            gc.enable()


def _suffix_steps(cache, req_id, full, prompt_len, gammas, max_spec_factor, min_token_prob,
                  max_model_len):
    full = full.tolist() if isinstance(full, np.ndarray) else [int(x) for x in full]
    n_tok, depth = len(full), cache.max_tree_depth
    cache.start_request(req_id, full[:prompt_len])
    have = min(prompt_len + 1, n_tok)
    cache.add_active_response(req_id, full[prompt_len:have])
    gl = list(gammas)
    cap = (1 << 62) if max_model_len is None else max_model_len - 1
    nxt = [prompt_len + 1] * len(gl)
    rec = [([], [], []) for _ in gl]
    order = sorted(range(len(gl)), key=lambda j: -gl[j])
    add, spec = cache.add_active_response, cache.speculate
    while True:
        T = min(nxt)
        if T >= n_tok:
            break
        if T > have:
            add(req_id, full[have:T])
            have = T
        ctx = full[T - depth:T] if T > depth else full[:T]
        draft = None  # the last draft speculated at T (for the smallest k so far)
        for j in order:  # the gammas due here, largest first
            if nxt[j] != T:
                continue
            k = min(gl[j], cap - T)  # min(num_speculative_tokens, max_model_len - T - 1)
            if k <= 0:
                draft = ()
            elif draft is None or len(draft) > k:
                draft = spec(req_id, ctx, k, max_spec_factor, 0.0, min_token_prob)[0]
            # else: the draft for a larger max_spec_tokens, no longer than k, is k's own
            a = 0
            for x in draft:  # the draft's agreement with the response (never past its end)
                if T + a >= n_tok or x != full[T + a]:
                    break
                a += 1
            ts, ds, acc = rec[j]
            ts.append(T)
            ds.append(len(draft))
            acc.append(a)
            nxt[j] = T + a + 1
    if have < n_tok:
        add(req_id, full[have:])
    cache.stop_request(req_id)
    return {g: tuple(np.array(x, dtype=np.int64) for x in rec[j]) for j, g in enumerate(gl)}


def teacher_forced_steps(betas, prompt_len: int, gammas, *, greedy: bool, rng=None) -> dict:
    """:func:`ngram_steps` for a draft model from its teacher-forced acceptance along the
    logged response (``betas[j]`` for response token j, :func:`specnb.measure.
    teacher_forced_betas`): every step drafts gamma tokens; greedy (T = 0: betas are 0 or
    1, the draft's argmax against the logged token) the accepted prefix is the leading run of
    ones, exactly what the draft model's own round would accept; at T > 0 position i is
    accepted with probability ``betas[j + i]`` given the ones before (one seeded draw of
    ``rng``, a numpy Generator)."""
    b = np.asarray(betas, dtype=np.float64)
    n = b.size
    out = {}
    for g in gammas:
        ok = (b >= 1.0) if greedy else (rng.random(n) < b)
        ts, acc = [], []
        j = 1  # the first response token comes from the prefill
        while j < n:
            a = 0
            while a < g and j + a < n and ok[j + a]:
                a += 1
            ts.append(prompt_len + j)
            acc.append(a)
            j += a + 1
        T = np.array(ts, dtype=np.int64)
        out[g] = (T, np.full(T.size, g, dtype=np.int64), np.array(acc, dtype=np.int64))
    return out


def counters(steps, gamma: int, context_edges=()) -> dict:
    """``{bucket index: Counters, None: Counters}`` of one request's steps ``(T, d, a)`` at
    draft length ``gamma``; a step falls in the bucket of its context T (bucket i =
    ``[edges[i-1], edges[i])``, the first from 0, the last unbounded)."""
    T, d, a = steps
    edges = np.asarray(context_edges, dtype=np.int64)
    nb = edges.size + 1
    b = np.searchsorted(edges, T, side="right") if edges.size else np.zeros(T.size, np.int64)
    cols = [np.bincount(b, minlength=nb), np.bincount(b, d > 0, nb), np.bincount(b, d, nb),
            np.bincount(b, a, nb)]
    acc = [np.bincount(b, a > i, nb) for i in range(gamma)]
    has = [np.bincount(b, d > i, nb) for i in range(gamma)]
    out = {}
    for i in np.flatnonzero(cols[0]).tolist():
        out[i] = Counters(*(int(c[i]) for c in cols), tuple(int(x[i]) for x in acc),
                          tuple(int(x[i]) for x in has))
    out[None] = Counters(*(int(c.sum()) for c in cols), tuple(int(x.sum()) for x in acc),
                         tuple(int(x.sum()) for x in has))
    return out
