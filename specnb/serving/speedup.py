"""Times and speedup on a Setup, grids and the decisions read from them: tokens per
step (tau), the speedup (MagicDec eq. 2 with a per-step overhead), :class:`Grid` /
:func:`evaluate`, the best gamma, the crossover batch and the batch sizes that pay.

:func:`t_plain_ms`, :func:`t_verify_ms`, :func:`t_draft_ms`, :func:`tokens_per_step`,
:func:`speedup`, :func:`per_token_latency_ms`, :func:`verdict`, :class:`Grid`, :func:`evaluate`,
:func:`best_gamma`, :func:`batch_range_grid`, :func:`crossover_batch`, :func:`crossover_of`,
:func:`paying_batches`, :func:`paying_of`, :func:`describe_paying`; :data:`NGRAM_DRAFT_FRACTION`,
:data:`MAX_BATCH_SEARCH`, :data:`MAX_GRID_CELLS`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check, theory
from ..theory import tokens_per_step  # the one rule; a light module (plan checks before this import)
from .setup import Setup
from .catalogue import weight_bytes_of
from . import workload
from .setup import memory_cap
from .step import _prep, _step, decode_walk, multi_token_attention

__all__ = ["NGRAM_DRAFT_FRACTION", "MAX_BATCH_SEARCH", "MAX_GRID_CELLS", "t_plain_ms",
           "t_verify_ms", "t_draft_ms", "tokens_per_step", "speedup", "per_token_latency_ms",
           "verdict", "Grid", "check_axis", "evaluate", "best_gamma", "batch_range_grid",
           "crossover_batch", "crossover_of", "paying_batches", "paying_of", "describe_paying",
           "t_engine_ms", "prefill_ms", "end_to_end_speedup", "check_tree", "tree_parts",
           "tree_speedup", "multi_token_note", "max_tree_tokens", "sglang_tree_shape",
           "SGLANG_TREE_SOURCE"]

#: n-gram / suffix drafting time as a fraction of the verification time: SpecDecode-Bench's
#: ``ngram_draft_percentage`` (0.005875; same source).
NGRAM_DRAFT_FRACTION = 0.005875

#: Largest ``max_batch`` of :func:`crossover_batch` and ``advise.plan.plan_schedule``, which
#: evaluate every batch size 1..max_batch: 65,536 x 8 gammas x 4 contexts is about 2 million cells
#: (well under a second); 10**8 took 5 minutes and 10**9 exhausted memory. vLLM's
#: ``max_num_seqs`` defaults to 256-1,024.
MAX_BATCH_SEARCH = 65536

#: Largest grid :func:`evaluate` builds (batch sizes x contexts x gammas): 65,536 x 16 x 8 =
#: 2**23 cells took 1.4 s and 0.47 GB at peak, so 2**24 stays near 1 GB; 65,536 batch sizes
#: x 1,000 contexts x 8 gammas would need about 30 GB.
MAX_GRID_CELLS = 2 ** 24


def _target_kw(st: Setup) -> dict:
    return dict(dtype=st.dtype, kv_dtype=st.kv_dtype, gpus=st.gpus,
                efficiency=st.target_efficiency)


def _draft_kw(st: Setup) -> dict:
    d = st.draft
    return dict(dtype=d.dtype or st.draft_dtype or st.dtype, kv_dtype=st.kv_dtype,
                gpus=st.gpus, efficiency=st.draft_efficiency, kv_budget=d.kv_budget)


def _bsg(batch_size, context, gamma=None):
    b = _check.integer("batch_size", batch_size, lo=1).astype(float)
    s = _check.integer("context", context, lo=0).astype(float)
    if gamma is None:
        return _check.broadcast(batch_size=b, context=s)
    g = _check.integer("gamma", gamma, lo=1).astype(float)
    return _check.broadcast(batch_size=b, context=s, gamma=g)


def draft_forwards(d, gamma):
    """Draft forwards one proposal of ``gamma`` tokens takes: gamma (one token each), 1 for a
    block drafter (``dflash``), 0 without a model (n-gram, suffix). Unchecked, broadcasts."""
    if d.kind == "none":
        return 0.0 * gamma
    return 1.0 + 0.0 * gamma if d.method == "dflash" else gamma


class _Times:
    """Prepared (checked) arguments for the target and draft steps of a Setup."""

    def __init__(self, st: Setup, tree=None):
        self.st = st
        self.tgt = _prep(st.target, st.gpu, st.dtype, st.kv_dtype, st.gpus,
                         st.target_efficiency)
        d = st.draft
        self.drf = None if d.kind == "none" else _prep(
            d.arch, st.gpu, d.dtype or st.draft_dtype or st.dtype, st.kv_dtype, st.gpus,
            st.draft_efficiency)
        self.m = float(st.proposal_rate)
        # the engine's step costs (EngineStep; None: the uniform-routing weight read alone)
        self.moe = st.engine.engine_step() if st.engine.step else None
        self.tree = tree  # (topk, num_draft_tokens) of an SGLang tree, or None (a chain)
        # FlashAttention-2's cost of a step with multi-token queries ((1, 0): not this engine)
        self.multi = multi_token_attention(self.tgt[0], self.tgt[1], self.tgt[5], self.moe,
                                           self.tgt[4])
        # a plain decode step's own unsplit walk (MHA on FlashAttention-2; 0 otherwise)
        walk = decode_walk(self.tgt[0], self.tgt[1], self.tgt[5], self.moe, self.tgt[4])
        self.single = (1.0, walk) if walk else None

    def _q(self, g):
        """Query tokens per sequence of a verification: 1 + M gamma (1 + M min(L, gamma)
        with the setup's mean draft length L), or a tree's N."""
        if self.tree is not None:
            return float(self.tree[1]) + 0.0 * g
        return workload.query_tokens(g, self.m, self.st.mean_draft_len)

    def plain(self, b, s):
        return _step(*self.tgt, b, s, 1.0, engine_step=self.moe, multi=self.single)[0]

    def verify(self, b, s, g):
        """T_V at ``1 + M gamma`` query tokens per sequence (M = the proposal rate), or at a
        tree's ``num_draft_tokens`` (tree attention: every node reads the context). On an
        engine that runs FlashAttention-2 (:func:`~specnb.serving.step.multi_token_attention`)
        a step where some sequence verifies drafts loses the decode path: with proposal rate
        M, that is a share ``1 - (1 - M)^B`` of the steps, which take the multi-token
        attention time; the rest the decode path's."""
        q = self._q(g)
        if self.multi == (1.0, 0.0):
            return _step(*self.tgt, b, s, q, engine_step=self.moe, multi=self.single)
        t_multi, cb_multi = _step(*self.tgt, b, s, q, engine_step=self.moe, multi=self.multi)
        if self.m >= 1.0:  # every step has a verifying sequence: no decode-path share
            return t_multi, cb_multi
        t, cb = _step(*self.tgt, b, s, q, engine_step=self.moe, multi=self.single)
        share = 1.0 - (1.0 - self.m) ** b
        return share * t_multi + (1.0 - share) * t, np.where(share >= 0.5, cb_multi, cb)

    def _extra_ms(self, params, b):
        """Time of ``params`` more weights read and multiplied by b tokens (a head's fc
        layers and wider q/k/v, MTP's projection), at the draft's efficiency."""
        if not params:
            return 0.0
        arch, g, eff, dtype, _, n = self.drf
        bw, fl = eff.bandwidth * g.bandwidth, eff.compute * g.flops(dtype)
        return (weight_bytes_of(params, dtype) / n / bw * 1e3
                + 2.0 * params * b / n / fl * 1e3)

    def draft(self, b, s, g, t_v):
        """gamma x T_D (one-token draft forwards, plus what a head's shape adds), or the
        n-gram fraction of T_V."""
        if self.drf is None:
            return NGRAM_DRAFT_FRACTION * t_v
        moe = self.moe  # the draft's own MoE layers (an MTP block) and the graph cap
        first, rest = self.st.draft.extra_params
        if self.st.draft.method == "dflash":  # one forward of 1 + gamma tokens: the block
            return (_step(*self.drf, b, s, 1.0 + g, self.st.draft.kv_budget,
                          engine_step=moe)[0] + self._extra_ms(first, b))
        one = _step(*self.drf, b, s, 1.0, self.st.draft.kv_budget, engine_step=moe)[0]
        if self.tree is not None and self.tree[0] > 1:
            # SGLang's tree drafting: the first step expands the root (one token per
            # sequence), every later step runs the topk branches (topk tokens per sequence)
            k = float(self.tree[0])
            wide = _step(*self.drf, b, s, k, self.st.draft.kv_budget, engine_step=moe)[0]
            return (one + (g - 1.0) * wide + self._extra_ms(first, b)
                    + (g - 1.0) * self._extra_ms(rest, b * k))
        return g * one + self._extra_ms(first, b) + (g - 1.0) * self._extra_ms(rest, b)

    def engine(self, b, g):
        """The engine profile's costs beyond the model (:mod:`specnb.serving.engines`): per
        draft forward, per draft token x LM-head rows, per verified token; and the setup's
        host time per sequence that a speculative step pays in series
        (``Setup.sync_host_us_per_seq``)."""
        p, d = self.st.engine, self.st.draft
        steps = 0.0 if d.kind == "none" else p.draft_step(d.method) * draft_forwards(d, g)
        drafted = g if self.tree is None else 1.0 + (g - 1.0) * float(self.tree[0])
        logits = p.draft_logits_ns * b * drafted * d.lm_head_vocab / 1000.0 * 1e-6
        return (steps + logits + p.verify_token_us * b * self._q(g) * 1e-3
                + self.st.sync_host_us_per_seq * b * 1e-3)

    def parts(self, b, s, g, tau):
        tp = self.plain(b, s)
        tv, cb = self.verify(b, s, g)
        td = self.draft(b, s, g, tv)
        te = self.engine(b, g)
        cost = td + tv + self.st.sd_overhead_ms + te
        gain = workload.gain(tau, self.m)  # tokens a sequence gains per step
        return tp, tv, td, cost, gain * tp / cost, cb, te, gain

    def prefill(self, b, n, chunk, draft=False):
        """Prefill of b prompts of n tokens in ceil(b n / chunk) steps (target, or the draft's
        own prefill), ms; see :func:`prefill_ms`."""
        k = np.ceil(b * n / chunk)
        q = np.where(k > 0, b * n / np.maximum(k, 1.0), 0.0)
        prep = self.drf if draft else self.tgt
        if prep is None or n == 0:
            return 0.0 * b
        t = _step(*prep, 1.0, np.floor(n / 2.0), np.maximum(q, 1.0))[0]
        return np.where(k > 0, k * t, 0.0)


#: Where SGLang's tree rules are read (sgl-project/sglang, main of 2026): the EAGLE tree
#: builder ``python/sglang/srt/speculative/eagle_utils.py`` ``organize_draft_results`` keeps
#: ``torch.topk(score_list, num_draft_tokens - 1)`` of the candidates the draft steps scored:
#: ``topk`` at the first step, ``topk**2`` at each later one (``select_top_k_tokens``), so
#: ``topk + (steps - 1) topk**2`` in all (more raises "selected index k out of range" when the
#: CUDA graphs are captured, at start); ``python/sglang/srt/server_args.py``
#: ``_handle_speculative_decoding``: "speculative_num_draft_tokens is adjusted to
#: speculative_num_steps + 1 when speculative_eagle_topk == 1".
SGLANG_TREE_SOURCE = ("SGLang's eagle_utils.organize_draft_results (topk over "
                      "topk + (steps - 1) topk^2 candidates) and server_args.py "
                      "_handle_speculative_decoding (topk 1: steps + 1)")


def max_tree_tokens(steps, topk) -> int:
    """The most tokens SGLang can verify per sequence for ``steps`` draft steps of ``topk``
    branches: the root plus every candidate the steps score, ``1 + topk + (steps - 1) topk**2``
    (:data:`SGLANG_TREE_SOURCE`); steps + 1 for a chain (topk 1). Ints >= 1."""
    g = _check.scalar_int("steps", steps, lo=1)
    k = _check.scalar_int("topk", topk, lo=1)
    return 1 + k + (g - 1) * k * k


def sglang_tree_shape(steps, topk, num_draft_tokens):
    """The tree SGLang runs for its three flags: ``(num_draft_tokens, note)``, where
    num_draft_tokens is what SGLang verifies per sequence and ``note`` a
    :class:`~specnb.notes.Note` (code ``sglang-num-draft-tokens-adjusted``) when SGLang
    rewrites the value given, else None. With topk 1 SGLang sets num_draft_tokens to
    steps + 1 whatever was given (server_args.py); with topk > 1 it keeps it.

    Raises
    ------
    ValueError (``param`` num_draft_tokens)
        num_draft_tokens above :func:`max_tree_tokens` (SGLang fails at start: its tree builder
        takes the top num_draft_tokens - 1 of fewer candidates), or below 2 (a tree of the
        root alone drafts nothing; with topk 1 SGLang would rewrite it, but 1 is no draft);
        steps, topk below 1.
    """
    from ..notes import Note

    g = _check.scalar_int("steps", steps, lo=1)
    k = _check.scalar_int("topk", topk, lo=1)
    n = _check.scalar_int("num_draft_tokens", num_draft_tokens, lo=1)
    top = max_tree_tokens(g, k)
    if n < 2:
        raise _check.ParamValueError(
            f"num_draft_tokens must be >= 2 (the root and at least one draft token), got {n}",
            "num_draft_tokens")
    if k == 1:
        if n == g + 1:
            return n, None
        return g + 1, Note("sglang-num-draft-tokens-adjusted", (
            f"SGLang runs --speculative-num-draft-tokens {g + 1}, not {n}: with "
            f"--speculative-eagle-topk 1 it sets it to steps + 1 (server_args.py "
            "_handle_speculative_decoding: 'speculative_num_draft_tokens is adjusted to "
            "speculative_num_steps + 1 when speculative_eagle_topk == 1'); costed and "
            f"launched as {g + 1}"))
    if n > top:
        raise _check.ParamValueError(
            f"num_draft_tokens must be <= {top} for steps {g} and topk {k}, got {n}: SGLang's "
            f"tree builder keeps the top num_draft_tokens - 1 of topk + (steps - 1) topk^2 = "
            f"{top - 1} scored candidates (eagle_utils.organize_draft_results) and fails at "
            "start above that", "num_draft_tokens")
    return n, None


def multi_token_note(st: Setup, contexts):
    """The coded note ``fa2-multi-token-attention`` when the setup's engine runs
    FlashAttention-2 on its GPU (:func:`~specnb.serving.step.multi_token_attention`: vLLM V1
    on compute capability 8.x / 12.x, a target with per-head K and V), else None: a verify
    step there reads ``n_heads / n_kv_heads`` times its KV and walks the longest context
    unsplit; the message gives the walk at the longest of ``contexts`` (tokens) and the
    upstream fixes, so a user sees why the same plan differs from an H100's.
    """
    from ..notes import Note

    arch, g = st.target, st.gpu
    es = st.engine.engine_step() if st.engine.step else None
    from .catalogue import kv_storage_dtype

    factor, walk = multi_token_attention(arch, g, st.gpus, es,
                                         kv_storage_dtype(st.kv_dtype, st.dtype))
    if not walk:
        return None
    top = int(max(np.atleast_1d(contexts)))
    what = (f"a step that verifies drafts reads {factor:g}x its KV bytes and walks"
            if factor > 1 else "with one KV head per query head there is nothing to pack, so "
            "every step, plain decode too, walks")
    return Note("fa2-multi-token-attention",
                f"on {g.name} (compute capability {g.compute_capability}) vLLM runs "
                "FlashAttention-2, which splits the KV and packs a KV head's query heads only "
                f"when every query is one token: {what} the longest context unsplit, about "
                f"{walk * top:.2f} ms "
                f"a step at context {top:,} at an RTX 3090's walk rate (vllm-project/"
                "flash-attention PR #193's timing; UNVERIFIED on this GPU; its PRs #176 / #190 "
                "would lift it); the model includes it; --kv-cache-dtype fp8 moves vLLM to "
                "FlashInfer, which this rule does not cover")


def check_tree(st: Setup, steps, topk, num_draft_tokens) -> tuple[int, int, int]:
    """SGLang's tree flags checked against the setup: ``steps`` (``--speculative-num-steps``,
    int >= 1), ``topk`` (``--speculative-eagle-topk``, int >= 1), ``num_draft_tokens``
    (``--speculative-num-draft-tokens``: the verified tree's nodes, the root counted, in
    [2, :func:`max_tree_tokens`]; a chain, topk 1, has exactly steps + 1: SGLang rewrites any
    other value, :func:`sglang_tree_shape` says to what). A tree (topk > 1) needs an engine
    that drafts trees (:data:`specnb.serving.engines.TREE_ENGINES`) and a draft model or head.

    Raises
    ------
    ValueError
        a count below its minimum; num_draft_tokens above the tree's candidates or, with
        topk 1, other than steps + 1; topk > 1 on an engine without trees or with n-gram /
        suffix drafting.
    """
    g = _check.scalar_int("steps", steps, lo=1)
    k = _check.scalar_int("topk", topk, lo=1)
    n, note = sglang_tree_shape(g, k, num_draft_tokens)
    if note is not None:
        raise _check.ParamValueError(
            f"num_draft_tokens must be steps + 1 = {g + 1} with topk 1, got "
            f"{num_draft_tokens}: SGLang rewrites it to {g + 1} (read what it runs with "
            "sglang_tree_shape)", "num_draft_tokens")
    if k > 1 and not st.engine.trees:
        raise _check.ParamValueError(
            f"topk {k} drafts a tree: the engine {st.engine.name!r} verifies chains only; "
            "trees need --engine sglang (or topk 1)", "topk")
    if k > 1 and st.draft.kind == "none":
        raise _check.ParamValueError(f"topk {k} needs a draft model or head; {st.draft.name} "
                                     "drafts chains of matched tokens", "topk")
    return g, k, n


def tree_parts(st: Setup, batch_size, context, steps, *, topk: int, num_draft_tokens: int):
    """The times of one SGLang speculative step with a draft tree, ms: dict ``t_plain_ms``,
    ``t_verify_ms`` (the target over ``num_draft_tokens`` query tokens per sequence, tree
    attention: every node reads the sequence's context), ``t_draft_ms`` (``steps`` draft
    forwards: the first over one token per sequence, the others over ``topk``), ``t_engine_ms``
    (the profile's costs, per-verified-token over the tree's nodes), ``cost_ms`` (all of it
    with ``sd_overhead_ms``). batch_size, context: ints or arrays (broadcast).

    Raises
    ------
    ValueError
        as :func:`check_tree`; batch < 1, context < 0.
    """
    g, k, n = check_tree(st, steps, topk, num_draft_tokens)
    b, s = _bsg(batch_size, context)
    tm = _Times(st, tree=(k, n))
    gg = float(g) + 0.0 * b
    tp = tm.plain(b, s)
    tv = tm.verify(b, s, gg)[0]
    td = tm.draft(b, s, gg, tv)
    te = tm.engine(b, gg)
    out = {"t_plain_ms": tp, "t_verify_ms": tv, "t_draft_ms": td, "t_engine_ms": te,
           "cost_ms": tv + td + te + st.sd_overhead_ms}
    return {key: _check.out(v + 0.0 * b) for key, v in out.items()}


def tree_speedup(st: Setup, batch_size, context, steps, *, topk: int, num_draft_tokens: int,
                 tau):
    """Throughput ratio of SGLang tree speculation at a fixed batch: ``tau x T_plain / cost``
    (:func:`tree_parts`). ``tau`` is the acceptance length as SGLang reports it (``accept
    len``: tokens per verification per request, the bonus token included), the same count
    as vLLM's mean acceptance length; in [1, d + 1], d = min(steps, num_draft_tokens - 1)
    (the accepted path is at most ``steps`` deep and holds at most num_draft_tokens - 1
    drafts).

    Raises
    ------
    ValueError
        as :func:`tree_parts`; tau outside [1, d + 1].
    """
    p = tree_parts(st, batch_size, context, steps, topk=topk,
                   num_draft_tokens=num_draft_tokens)
    depth = min(int(steps), int(num_draft_tokens) - 1)  # the deepest path the tree can hold
    t = tokens_per_step(depth, tau=tau)
    return _check.out(np.asarray(t) * np.asarray(p["t_plain_ms"]) / np.asarray(p["cost_ms"]))


def t_plain_ms(st: Setup, batch_size, context):
    """Plain decoding step of the target, ms: one query token per sequence (T_AR).
    batch_size >= 1 and context >= 0, ints or arrays (broadcast)."""
    b, s = _bsg(batch_size, context)
    return _check.out(_Times(st).plain(b, s) + 0.0 * b)


def t_verify_ms(st: Setup, batch_size, context, gamma):
    """Verification step of the target, ms: gamma + 1 query tokens per sequence (T_V), or
    1 + M gamma with the setup's proposal rate M < 1 (n-gram / suffix). gamma: int >= 1
    (broadcasts)."""
    b, s, g = _bsg(batch_size, context, gamma)
    return _check.out(_Times(st).verify(b, s, g)[0] + 0.0 * b)


def t_draft_ms(st: Setup, batch_size, context, gamma):
    """Drafting time of one speculative step, ms: gamma draft forwards of one token per
    sequence (gamma x T_D; the draft reads min(context, kv_budget) tokens; a head adds what
    its shape reads beyond one layer and its LM head: EAGLE-1's fc every forward, EAGLE-3's
    fc on the first and its wider q/k/v, MTP's projection). DFlash: one forward of its layers
    over 1 + gamma query tokens per sequence, plus its fc. n-gram / suffix:
    :data:`NGRAM_DRAFT_FRACTION` x T_V. The engine profile's costs are apart
    (:func:`t_engine_ms`). gamma: int >= 1."""
    b, s, g = _bsg(batch_size, context, gamma)
    tm = _Times(st)
    return _check.out(tm.draft(b, s, g, tm.verify(b, s, g)[0]) + 0.0 * b)


def t_engine_ms(st: Setup, batch_size, context, gamma):
    """The engine profile's cost of one speculative step beyond the model, ms (per draft
    forward, per draft token x LM-head rows, per verified token; the per-verification
    overhead is ``st.sd_overhead_ms``, apart): :mod:`specnb.serving.engines`."""
    b, s, g = _bsg(batch_size, context, gamma)
    return _check.out(_Times(st).engine(b, g) + 0.0 * b + 0.0 * s)


def prefill_ms(st: Setup, batch_size, input_len: int, *, draft: bool = False,
               max_batched_tokens: int = workload.DEFAULT_MAX_BATCHED_TOKENS):
    """Time to prefill ``batch_size`` prompts of ``input_len`` tokens, ms (the target's; the
    draft's own prefill with ``draft=True``: a draft model's or a head's, 0 for n-gram).

    The B N prompt tokens run in ``k = ceil(B N / max_batched_tokens)`` steps of ``B N / k``
    query tokens, each at the prompt's mean context N / 2 (causal attention: B N^2 / 2 score
    FLOPs; the weights read k times): ``P = k x step(1, N / 2, B N / k)``.
    ``max_batched_tokens``: vLLM's ``max_num_batched_tokens`` (8192, its V1 default for online
    serving on H100-class GPUs, ASSUMED; pass the value the server logs).

    Raises
    ------
    ValueError
        batch_size < 1, input_len < 0, max_batched_tokens < 1.
    """
    b = _check.integer("batch_size", batch_size, lo=1).astype(float)
    n = _check.scalar_int("input_len", input_len, lo=0)
    c = _check.scalar_int("max_batched_tokens", max_batched_tokens, lo=1)
    return _check.out(_Times(st).prefill(b, float(n), float(c), draft=draft) + 0.0 * b)


def end_to_end_speedup(prefill_ms_, decode_plain_ms, decode_speedup, draft_prefill_ms=0.0):
    """End-to-end ratio with / without speculation when the run's time includes the prefill
    (``vllm bench serve``, offline ``LLM.generate``): ``(P + D) / (P + P_draft + D / S)``
    (engines.md section 2 item 2): P the target's prefill, D the plain decode time, S the
    decode speedup, P_draft the draft's own prefill. P = 0 gives S; P >> D about 1.
    Arrays broadcast; P, P_draft >= 0; D, S > 0."""
    p = _check.real("prefill_ms", prefill_ms_, lo=0.0)
    d = _check.real("decode_plain_ms", decode_plain_ms, lo=0.0, lo_open=True)
    sp = _check.real("decode_speedup", decode_speedup, lo=0.0, lo_open=True)
    pd_ = _check.real("draft_prefill_ms", draft_prefill_ms, lo=0.0)
    p, d, sp, pd_ = _check.broadcast(prefill_ms=p, decode_plain_ms=d, decode_speedup=sp,
                                     draft_prefill_ms=pd_)
    return _check.out((p + d) / (p + pd_ + d / sp))


def speedup(st: Setup, batch_size, context, gamma, *, alpha=None, tau=None,
            acceptance_rates=None):
    """Throughput ratio with / without speculation at a fixed batch (= per-token latency
    ratio): ``(1 + M (tau - 1)) x T_plain / (gamma T_D + T_V + sd_overhead_ms + engine)``
    (MagicDec eq. 2 with a per-step overhead and the engine profile's costs; M = the setup's
    proposal rate, 1 but for n-gram / suffix; tau per draft, as vLLM counts it). Arrays
    broadcast (e.g. batch[:, None, None], context[None, :, None],
    gamma[None, None, :]). Give exactly one of alpha, tau, acceptance_rates
    (:func:`tokens_per_step`).

    Raises
    ------
    ValueError
        as :func:`tokens_per_step` and :func:`step_breakdown`.
    """
    b, s, g = _bsg(batch_size, context, gamma)
    tau_ = np.asarray(tokens_per_step(g.astype(np.int64), alpha=alpha, tau=tau,
                                      acceptance_rates=acceptance_rates))
    return _check.out(_Times(st).parts(b, s, g, tau_)[4])


def per_token_latency_ms(st: Setup, batch_size, context, gamma, **acceptance):
    """Time per generated token per sequence with speculation, ms:
    ``(gamma T_D + T_V + overhead + engine) / (1 + M (tau - 1))`` (without:
    :func:`t_plain_ms`). ``acceptance``: one of alpha, tau, acceptance_rates."""
    b, s, g = _bsg(batch_size, context, gamma)
    tau_ = np.asarray(tokens_per_step(g.astype(np.int64), **acceptance))
    parts = _Times(st).parts(b, s, g, tau_)
    return _check.out(parts[3] / parts[7])


def verdict(speedup_value, tolerance: float = 0.0):
    """``"pays"`` when speedup > 1 + tolerance, ``"does not pay"`` when < 1 - tolerance, else
    ``"break-even"``. tolerance in [0, 1) (0.05 = 5 % counted as noise). Arrays give arrays
    of str."""
    s = _check.real("speedup", speedup_value, lo=0.0, lo_open=True)
    tol = _check.scalar_real("tolerance", tolerance, lo=0.0, hi=1.0, hi_open=True)
    out = np.where(s > 1 + tol, "pays", np.where(s < 1 - tol, "does not pay", "break-even"))
    if tol == 0.0:
        out = np.where(s > 1, "pays", "does not pay")
    return str(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------- grids
@dataclass
class Grid:
    """Model values on a batch x context x gamma grid (arrays of shape (B, S, G)).

    Attributes: ``batch_sizes``, ``contexts``, ``gammas`` (1-D int arrays); ``tau``,
    ``speedup``, ``t_plain_ms``, ``t_verify_ms``, ``t_draft_ms`` (gamma x T_D),
    ``latency_ms`` (per token with speculation), ``compute_bound`` (bool: the verification
    step's compute roofline exceeds its memory roofline); property ``bound`` gives
    ``"memory"`` / ``"compute"`` strings; ``t_engine_ms`` (the engine profile's cost per
    step); ``fits`` (bool, (B, S, G): the batch's KV cache fits beside the weights, see
    :func:`specnb.serving.memory_cap`; a batch that does not fit never pays in
    :func:`best_gamma`, :func:`crossover_of`, :func:`paying_of`) and ``max_batch_in_memory``
    (per context); ``speedup_end_to_end`` (with the prefill of ``input_len`` tokens and
    ``output_len`` - 1 decode steps per sequence (the first token comes with the prefill),
    :func:`end_to_end_speedup`; None without
    them) and ``prefill_ms`` (the target's). The arrays are read-only broadcast views (copy
    one before changing it).
    """

    batch_sizes: np.ndarray
    contexts: np.ndarray
    gammas: np.ndarray
    tau: np.ndarray
    speedup: np.ndarray
    t_plain_ms: np.ndarray
    t_verify_ms: np.ndarray
    t_draft_ms: np.ndarray
    latency_ms: np.ndarray
    compute_bound: np.ndarray
    t_engine_ms: np.ndarray | None = None
    fits: np.ndarray | None = None
    max_batch_in_memory: np.ndarray | None = None
    speedup_end_to_end: np.ndarray | None = None
    prefill_ms: np.ndarray | None = None

    @property
    def bound(self) -> np.ndarray:
        return np.where(self.compute_bound, "compute", "memory")

    @property
    def deciding(self) -> np.ndarray:
        """The speedup every verdict on this grid reads (:func:`best_gamma`,
        :func:`crossover_of`, :func:`paying_of`, the schedule): ``speedup_end_to_end`` when
        the grid has it (input and output lengths given: the run's time with the prefill),
        else the decode ``speedup``. Shape (B, S, G)."""
        return self.speedup if self.speedup_end_to_end is None else self.speedup_end_to_end

    def best(self):
        """(best gamma, its speedup), each (B, S); gamma 0 where no gamma beats plain
        decoding (speedup then 1.0). Ties go to the smaller gamma."""
        return best_gamma(self)

    def frame(self):
        """A tidy pandas DataFrame, one row per (batch_size, context, gamma), with columns
        batch_size, context, gamma, tau, speedup, t_plain_ms, t_verify_ms, t_draft_ms,
        latency_ms, bound, t_engine_ms, fits, and speedup_end_to_end and prefill_ms where the
        grid has them."""
        import pandas as pd

        B, S, G = np.meshgrid(self.batch_sizes, self.contexts, self.gammas, indexing="ij")
        cols = {
            "batch_size": B.ravel(), "context": S.ravel(), "gamma": G.ravel(),
            "tau": self.tau.ravel(), "speedup": self.speedup.ravel(),
            "t_plain_ms": self.t_plain_ms.ravel(), "t_verify_ms": self.t_verify_ms.ravel(),
            "t_draft_ms": self.t_draft_ms.ravel(), "latency_ms": self.latency_ms.ravel(),
            "bound": self.bound.ravel()}
        shape = B.shape
        for name in ("t_engine_ms", "fits", "speedup_end_to_end", "prefill_ms"):
            value = getattr(self, name)
            if value is not None:
                cols[name] = np.broadcast_to(value, shape).ravel()
        return pd.DataFrame(cols)


def check_axis(name, values, lo, hi=None):
    """A grid axis checked: a non-empty 1-D int array of values in [``lo``, ``hi``] (a range
    is taken). ValueError naming ``name`` otherwise."""
    if isinstance(values, range):
        values = list(values)
    arr = _check.integer(name, values, lo=lo, hi=hi)
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D list of integers, got shape "
                         f"{arr.shape}")
    return arr


def evaluate(st: Setup, batch_sizes, contexts, gammas, *, alpha=None, tau=None,
             acceptance_rates=None, input_len=None, output_len=None,
             max_batched_tokens: int = workload.DEFAULT_MAX_BATCHED_TOKENS) -> Grid:
    """The model on every (batch, context, gamma): a :class:`Grid` of shape (B, S, G).

    ``tau`` may be a scalar or one value per gamma. A 1,024 x 64 x 8 grid takes tens of ms
    (``benchmarks/bench_serving_model.py``). With ``input_len`` and ``output_len`` (tokens
    per sequence; both or neither) the grid also holds ``speedup_end_to_end``: the prefill
    of ``input_len`` tokens per sequence (:func:`prefill_ms`, chunks of
    ``max_batched_tokens``) and ``output_len`` - 1 decode steps at each context counted (the
    first output token comes with the prefill, so ``output_len`` 1 has no decode to speed
    up: at most 1), as ``vllm bench serve`` and offline ``LLM.generate`` time a run.

    Raises
    ------
    ValueError
        empty or non-integer axes, batch < 1, context < 0, gamma < 1; more than
        :data:`MAX_GRID_CELLS` cells; acceptance errors as :func:`tokens_per_step`; only one
        of input_len / output_len, input_len < 0, output_len < 1, input_len above a context.
    """
    b = check_axis("batch_sizes", batch_sizes, 1)
    s = check_axis("contexts", contexts, 0)
    g = check_axis("gammas", gammas, 1, theory.MAX_GAMMA)
    if b.size * s.size * g.size > MAX_GRID_CELLS:
        raise ValueError(f"the grid would have {b.size:,} batch sizes x {s.size:,} contexts x "
                         f"{g.size:,} gammas = {b.size * s.size * g.size:,} cells, above "
                         f"MAX_GRID_CELLS = {MAX_GRID_CELLS:,} (about 1 GB of memory); evaluate "
                         "fewer values or in parts")
    tau_g = np.asarray(tokens_per_step(g, alpha=alpha, tau=tau,
                                       acceptance_rates=acceptance_rates), dtype=float)
    tau_g = np.broadcast_to(tau_g, g.shape)
    B = b.astype(float)[:, None, None]
    S = s.astype(float)[None, :, None]
    G = g.astype(float)[None, None, :]
    T = tau_g[None, None, :]
    if (input_len is None) != (output_len is None):
        raise ValueError("give input_len and output_len together (tokens per sequence: the "
                         "prompt prefilled, the tokens decoded), or neither")
    if input_len is not None:
        input_len = _check.scalar_int("input_len", input_len, lo=0)
        output_len = _check.scalar_int("output_len", output_len, lo=1)
        if input_len > s.min():
            raise ValueError(
                f"input_len {input_len} is above the context {int(s.min())}: a sequence "
                "decodes with at least its prompt in the KV cache, so every context must be "
                f">= input_len: give contexts of at least {input_len}, e.g. "
                f"{input_len + (output_len + 1) // 2} = input_len + output_len / 2 (rounded "
                "up), the mean decode context (serving.workload.decode_context)")
    tm = _Times(st)
    tp, tv, td, cost, sp, cb, te, gain = tm.parts(B, S, G, T)
    shape = (b.size, s.size, g.size)
    full = lambda x: np.broadcast_to(x, shape)  # noqa: E731
    cap = np.atleast_1d(np.asarray(memory_cap(st, s)["max_batch"]))
    fits = B <= cap[None, :, None].astype(float)
    e2e = pre = None
    if input_len is not None:
        chunk = float(_check.scalar_int("max_batched_tokens", max_batched_tokens, lo=1))
        pre = tm.prefill(B, float(input_len), chunk)
        pre_d = tm.prefill(B, float(input_len), chunk, draft=True)
        steps = output_len - 1.0  # the first output token comes with the prefill
        e2e = full((pre + steps * tp) / (pre + pre_d + steps * tp / sp))
        pre = full(pre + 0.0 * S + 0.0 * G)
    return Grid(b, s, g, full(T), full(sp), full(tp), full(tv), full(td), full(cost / gain),
                full(cb), full(te), full(fits), cap, e2e, pre)


def best_gamma(grid: Grid):
    """Best draft length per (batch, context) of a :class:`Grid`: (gamma, speedup) arrays of
    shape (B, S); 0 and 1.0 where no gamma pays, or where the batch does not fit in memory
    (``grid.fits``). Ties go to the smaller gamma. The speedup is :attr:`Grid.deciding`: the
    end-to-end figure when the grid has one."""
    speed = grid.deciding
    i = np.argmax(speed, axis=2)
    sp = np.take_along_axis(speed, i[..., None], axis=2)[..., 0]
    gam = grid.gammas[i]
    pays = sp > 1.0
    if grid.fits is not None:
        pays &= grid.fits[..., 0]
    return np.where(pays, gam, 0), np.where(pays, sp, 1.0)


def crossover_batch(st: Setup, contexts, gammas, *, max_batch: int = 1024, alpha=None,
                    tau=None, acceptance_rates=None):
    """For each context, the largest batch size B <= max_batch such that speculation (with its
    best gamma) pays at every batch 1..B. 0 = it does not pay even at batch 1; ``max_batch``
    = it still pays there (the crossover lies beyond the range). At long contexts the
    speedup can rise with batch (MagicDec), so the answer is "pays up to max_batch".

    Returns
    -------
    ndarray of int, one per context (a Python int for a scalar context).

    Raises
    ------
    ValueError
        max_batch < 1 or above :data:`MAX_BATCH_SEARCH`; as :func:`evaluate`.
    """
    grid = batch_range_grid(st, np.atleast_1d(contexts), gammas, max_batch, alpha=alpha,
                             tau=tau, acceptance_rates=acceptance_rates)
    first = crossover_of(grid)
    return int(first[0]) if np.ndim(contexts) == 0 else first


def batch_range_grid(st: Setup, contexts, gammas, max_batch, hi=MAX_BATCH_SEARCH,
                     **acceptance) -> Grid:
    """:func:`evaluate` on every batch size 1..max_batch (checked: 1 to ``hi``; ValueError
    outside), the grid behind :func:`crossover_batch`, :func:`paying_batches` and
    ``specnb.advise.plan.plan_schedule``: evaluate it once and read all three from it
    (:func:`crossover_of`, :func:`paying_of`). ``acceptance``: one of alpha, tau,
    acceptance_rates."""
    mb = _check.scalar_int("max_batch", max_batch, lo=1, hi=hi)
    return evaluate(st, np.arange(1, mb + 1), contexts, gammas, **acceptance)


def crossover_of(grid: Grid) -> np.ndarray:
    """:func:`crossover_batch` of a :func:`batch_range_grid`, one per context."""
    _, sp = best_gamma(grid)
    losing = ~(sp > 1.0)  # (B, S)
    return np.where(losing.any(axis=0), np.argmax(losing, axis=0), grid.batch_sizes.size)


def paying_of(grid: Grid) -> list[list[list[int]]]:
    """:func:`paying_batches` of a :func:`batch_range_grid`, one list per context."""
    _, sp = best_gamma(grid)
    out = []
    for pays in (sp > 1.0).T:
        edges = np.diff(np.concatenate([[0], pays.astype(np.int8), [0]]))
        starts, ends = np.flatnonzero(edges == 1) + 1, np.flatnonzero(edges == -1)
        out.append([[int(a), int(e)] for a, e in zip(starts, ends)])
    return out


def paying_batches(st: Setup, contexts, gammas, *, max_batch: int = 1024, alpha=None,
                   tau=None, acceptance_rates=None) -> list[list[list[int]]]:
    """For each context, the batch sizes 1..max_batch at which speculation (with its best
    gamma) pays, as inclusive ``[first, last]`` ranges. :func:`crossover_batch` stops at the
    first batch that loses; at long contexts speculation can lose at batch 1 and pay from a
    larger batch (MagicDec: the speedup rises with batch once KV reads dominate), which
    ``crossover_batch`` alone reports as 0 ("does not pay even at batch 1").

    Returns
    -------
    list (one entry per context) of lists of ``[first, last]`` (empty: it pays nowhere up to
    ``max_batch``); a single list of ranges for a scalar context.

    Raises
    ------
    ValueError
        max_batch < 1; as :func:`evaluate`.
    """
    grid = batch_range_grid(st, np.atleast_1d(contexts), gammas, max_batch, hi=None,
                             alpha=alpha, tau=tau, acceptance_rates=acceptance_rates)
    out = paying_of(grid)
    return out[0] if np.ndim(contexts) == 0 else out


def describe_paying(ranges, max_batch: int, fits_up_to: int | None = None) -> str:
    """:func:`paying_batches`' ranges for one context in words: "pays at every batch size up
    to 256", "pays up to batch 153, not at 154", "does not pay at any batch size up to 256",
    or "does not pay at batch 1-3; pays at batch 4-64".

    ``fits_up_to`` (the most sequences whose KV cache fits, :func:`max_batch_in_memory`)
    below ``max_batch`` ends the words at the cap instead of calling the batch beyond it a
    loss: "pays at every batch size that fits in memory (up to 101); from batch 102 on the KV
    cache does not fit"; 0: "not even one sequence fits in memory"."""
    mb = _check.scalar_int("max_batch", max_batch, lo=1)
    if fits_up_to is not None:
        cap = _check.scalar_int("fits_up_to", fits_up_to, lo=0)
        if cap == 0:
            return "not even one sequence fits in memory at this context"
        if cap < mb:
            inside = [[a, min(e, cap)] for a, e in ranges if a <= cap]
            head = ("pays at every batch size that fits in memory (up to "
                    f"{cap})" if inside == [[1, cap]] else describe_paying(inside, cap))
            return f"{head}; from batch {cap + 1} on the KV cache does not fit"
    spans = [f"{a}" if a == e else f"{a}-{e}" for a, e in ranges]
    if not ranges:
        return f"does not pay at any batch size up to {mb}"
    if ranges == [[1, mb]]:
        return f"pays at every batch size up to {mb}"
    if len(ranges) == 1 and ranges[0][0] == 1:
        return f"pays up to batch {ranges[0][1]}, not at {ranges[0][1] + 1}"
    lose = ", ".join(f"{a}" if a == e else f"{a}-{e}" for a, e in _gaps(ranges, mb))
    return f"does not pay at batch {lose}; pays at batch {', '.join(spans)}"


def _gaps(ranges, mb):
    out, nxt = [], 1
    for a, e in ranges:
        if a > nxt:
            out.append([nxt, a - 1])
        nxt = e + 1
    if nxt <= mb:
        out.append([nxt, mb])
    return out
