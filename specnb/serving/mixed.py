"""The mixed step of continuous batching: prefill chunks, decode tokens, verify tokens and
draft forwards in one engine step (the seam ``specnb.simulate`` calls; docs/interfaces.md).

:class:`MixedStep`, :func:`mixed_step_ms`. The target's time comes from
:func:`specnb.serving.step._step_totals` (the one home of the step physics) on the step's
totals; the draft's from the same rule on the draft's forwards, as vLLM V1's proposers run
them (``vllm/v1/spec_decode/eagle.py`` / ``draft_model.py`` / ``dflash.py`` @ v0.33.0):

* self-speculation (the target with a sparse KV budget, MagicDec): k forwards of one token per
  speculating sequence over the target's own KV cache (no draft prefill);
* draft models and EAGLE / EAGLE-3 / MTP heads: the first draft forward runs over every token
  the target scored this step (so a prefill chunk is also prefilled in the draft or the head,
  whose KV the later forwards read), then ``k - 1`` forwards of one token over the sequences
  that speculate (k = the most draft tokens any sequence gets);
* DFlash: the fc over the step's tokens (the context K/V it stores) and ONE forward of
  ``1 + k`` query tokens per speculating sequence;
* n-gram / suffix: :data:`specnb.serving.NGRAM_DRAFT_FRACTION` of the target's time when some
  sequence speculates.

On an engine that runs FlashAttention-2 (vLLM V1 on compute capability 8.x / 12.x), a step in
which any query has more than one token (a verify or a prefill chunk) runs the target's
attention off the decode path for every sequence in it: :func:`specnb.serving.step.
multi_token_attention`; so does the draft's first forward, which carries the same query lengths
(and DFlash's block forward, always), on the draft's own shape; its later one-token forwards keep
the decode path.

With the step's logit rows given (``logit_tokens``; the simulator gives them), the LM head
runs only where vLLM computes logits: each request's last scheduled token and its verified
drafts for the target, one row per request in the draft's first forward; a prefill chunk's
other tokens skip it (``MixedStep._forward_ms``).

The engine part is what ``speedup._Times.engine`` charges a steady step (the per-verification
overhead ``sd_overhead_ms``, per draft forward, per draft token x LM-head rows, per verified
token), counted on this step's mix; 0 when no sequence speculates.
"""

from __future__ import annotations

import numpy as np

from .. import _check
from .setup import Setup
from .speedup import NGRAM_DRAFT_FRACTION, _Times, draft_forwards
from .step import _step_totals, multi_token_attention

__all__ = ["MixedStep", "mixed_step_ms"]


def _walk(multi, contexts, query_tokens):
    """``_forward_ms``'s ``(kv_read_factor, kv_floor_ms)`` from
    :func:`~specnb.serving.step.multi_token_attention`'s ``(factor, ms per KV token)``: the
    unsplit walk's floor at the step's longest context, when a query is longer than one token
    and the walk applies (ms per token > 0); else None (the decode path)."""
    factor, per_token = multi
    if not per_token or float(np.max(query_tokens)) <= 1.0:
        return None
    return factor, per_token * float(np.max(contexts))


class _ArchCache:
    """An Architecture whose derived numbers (properties, KV bytes per token) are computed
    once: ``_step_totals`` reads them every call, and a simulator calls it per step. The
    values are the architecture's own; methods other than ``kv_bytes_per_token`` pass
    through."""

    def __init__(self, arch):
        self._arch = arch
        self._kv: dict = {}

    def kv_bytes_per_token(self, dtype="bf16"):
        if dtype not in self._kv:
            self._kv[dtype] = self._arch.kv_bytes_per_token(dtype)
        return self._kv[dtype]

    def __getattr__(self, name):
        value = getattr(self._arch, name)
        if not callable(value):
            setattr(self, name, value)
        return value


class MixedStep:
    """A setup prepared for many mixed steps (checked once; :meth:`ms` does no checks).

    ``MixedStep(setup).ms(contexts, query_tokens, draft_tokens)`` is
    :func:`mixed_step_ms` without the input checks, for a simulator's inner loop.
    """

    def __init__(self, st: Setup):
        if not isinstance(st, Setup):
            raise TypeError(f"setup must be a specnb.serving.Setup (serving.setup(...)), got "
                            f"{type(st).__name__}")
        self.st = st
        self.times = _Times(st)
        for role in ("tgt", "drf"):  # the same physics, its shape's numbers computed once
            prep = getattr(self.times, role)
            if prep is not None:
                setattr(self.times, role, (_ArchCache(prep[0]),) + tuple(prep[1:]))
        d = st.draft
        self.kind, self.method = d.kind, d.method
        self.kv_budget = d.kv_budget
        self.first_extra, self.rest_extra = d.extra_params
        self.engine_step = self.times.moe  # the engine's MoE / CUDA-graph step costs
        self.multi = self.times.multi  # FlashAttention-2's multi-token-query attention
        drf = self.times.drf  # the draft's own forwards: the same rule on its shape
        self.drf_multi = (1.0, 0.0) if drf is None else multi_token_attention(
            drf[0], drf[1], drf[5], self.engine_step, drf[4])

    def _att(self, c, q):
        # query x context pairs of a causal chunk of q tokens after c cached tokens
        return float(np.dot(q, c + (q - 1.0) / 2.0))

    def _forward_ms(self, prep, tokens, kv, att, rows=None, kv_walk=None):
        """``_step_totals``'s time of one forward over ``tokens`` query tokens whose LM head
        runs on ``rows`` of them only (None: all). vLLM V1 computes logits only at
        ``logits_indices`` (``gpu_model_runner._prepare_inputs``: the last scheduled token of
        each request, a prefill chunk's too, plus its draft positions; the proposers' first
        forward, ``eagle.py`` / ``draft_model.py``, at ``last_token_indices``, one per
        request), so a prefill chunk's other tokens skip the head's
        ``2 x vocab x hidden`` FLOPs each. The step's time less those FLOPs' matmul time, as
        ``_step_totals`` combines it (``max + (1 - overlap) min`` of weight and matmul time),
        and at least the eager launch floor it applies beyond the CUDA-graph cap. ``kv_walk``:
        ``(kv_read_factor, kv_floor_ms)`` of a step off FlashAttention-2's decode path, the
        floor already for this step's longest context (:func:`_walk`), or None."""
        es = self.engine_step
        kw = {} if kv_walk is None else {"kv_read_factor": kv_walk[0], "kv_floor_ms": kv_walk[1]}
        if rows is None or rows >= tokens:
            return float(_step_totals(*prep, tokens, kv, att, engine_step=es, **kw)[0])
        arch, g, eff, dtype, n = prep[0], prep[1], prep[2], prep[3], prep[5]
        p = _step_totals(*prep, tokens, kv, att, parts=True, engine_step=es, **kw)
        fl = eff.compute * g.flops(dtype)
        t_w = float(p["w"]) / (eff.bandwidth * g.bandwidth) * 1e3
        t_lin = float(p["f_lin"]) * 1e3 / fl
        cut = 2.0 * arch.vocab_size * arch.hidden_size / n * (tokens - rows) * 1e3 / fl
        o = 1.0 - eff.overlap
        saved = (max(t_w, t_lin) + o * min(t_w, t_lin)
                 - max(t_w, t_lin - cut) - o * min(t_w, t_lin - cut))
        total = float(p["total"]) - saved
        if es is not None and es.graph_cap_tokens and es.eager_layer_us \
                and tokens > es.graph_cap_tokens:
            total = max(total, arch.n_layers * es.eager_layer_us * 1e-3)
        return total

    def _draft_ms(self, c, q, k, t_target, rows=None):
        spec = k > 0
        n_spec = int(spec.sum())
        if n_spec == 0 or self.kind == "none":
            return NGRAM_DRAFT_FRACTION * t_target if n_spec else 0.0
        drf = self.times.drf
        kmax = int(k.max())
        ctx = c if self.kv_budget is None else np.minimum(c, self.kv_budget)
        tokens = float(q.sum())
        fm, walk = self.drf_multi
        if self.method == "dflash":
            cs = ctx[spec] + q[spec]
            block = 1.0 + kmax
            kw = {} if not walk else {"kv_read_factor": fm, "kv_floor_ms": walk * float(cs.max())}
            t = _step_totals(*drf, block * n_spec, float(cs.sum()),
                             float(block * cs.sum() + n_spec * block * (block - 1) / 2.0),
                             engine_step=self.engine_step, **kw)[0]
            return float(t) + self.times._extra_ms(self.first_extra, tokens)
        if self.kind == "self":
            # self-speculation (MagicDec, arXiv 2408.11049 section 4): the draft is the
            # target's own weights over a sparse view (StreamingLLM / SnapKV budget) of the
            # TARGET's KV cache, which the target's forward has just written for every token
            # it scored: there is no draft prefill of the step's tokens; each of the k
            # forwards runs one token per speculating sequence (the steady rule,
            # speedup.t_draft_ms, charges the same)
            b = float(n_spec)
            kv = float(ctx[spec].sum())
            t = float(_step_totals(*drf, b, kv, kv, engine_step=self.engine_step)[0])
        else:
            # first forward: every token the target scored (the draft's own prefill); its
            # LM head on one row per sequence when the step's logit rows are given
            # (it carries the step's query lengths, so on FlashAttention-2 a verify or a
            # prefill chunk takes it off the decode path as the target's forward)
            t = self._forward_ms(drf, tokens, float(ctx.sum()), self._att(ctx, q),
                                 None if rows is None else float(len(q)),
                                 _walk(self.drf_multi, ctx, q))
            t += self.times._extra_ms(self.first_extra, tokens)
        if kmax > 1:
            base = ctx[spec] + q[spec]
            if self.kv_budget is not None:
                base = np.minimum(base, self.kv_budget)
            for j in range(1, kmax):
                live = k[spec] > j
                b = float(live.sum())
                kv = float(base[live].sum()) + (j - 1) * b
                t += float(_step_totals(*drf, b, kv, kv, engine_step=self.engine_step)[0])
                t += self.times._extra_ms(self.rest_extra, b)
        return t

    def _engine_ms(self, q, k):
        spec = k > 0
        if not spec.any():
            return 0.0
        p, d = self.st.engine, self.st.draft
        kmax = float(k.max())
        steps = p.draft_step(d.method) * float(draft_forwards(d, kmax))
        logits = p.draft_logits_ns * float(k.sum()) * d.lm_head_vocab / 1000.0 * 1e-6
        verified = float((1.0 + k[spec]).sum())
        return self.st.sd_overhead_ms + steps + logits + p.verify_token_us * verified * 1e-3

    def ms(self, contexts, query_tokens, draft_tokens, logit_tokens=None) -> dict:
        """Unchecked :func:`mixed_step_ms` on 1-D float arrays of one length."""
        c = np.asarray(contexts, dtype=float)
        q = np.asarray(query_tokens, dtype=float)
        k = np.asarray(draft_tokens, dtype=float)
        rows = None if logit_tokens is None else float(np.sum(logit_tokens))
        walk = _walk(self.multi, c, q)
        if walk is None and self.times.single is not None:  # MHA on FA2: no split at q = 1
            walk = (1.0, self.times.single[1] * float(c.max()))
        t_target = self._forward_ms(self.times.tgt, float(q.sum()), float(c.sum()),
                                    self._att(c, q), rows, walk)
        t_draft = float(self._draft_ms(c, q, k, t_target, rows))
        t_engine = float(self._engine_ms(q, k))
        return {"target_ms": t_target, "draft_ms": t_draft, "engine_ms": t_engine,
                "total_ms": t_target + t_draft + t_engine}


def mixed_step_ms(setup: Setup, contexts, query_tokens, draft_tokens,
                  logit_tokens=None) -> dict:
    """Time of one continuous-batching step, ms, from its per-sequence mix.

    Parameters
    ----------
    setup : :class:`specnb.serving.Setup`
    contexts : ints >= 0, shape (n,): tokens already in each scheduled sequence's KV cache
    query_tokens : ints >= 1, shape (n,): tokens scheduled for it this step (a prefill chunk,
        1 decode token, or 1 + k verify tokens)
    draft_tokens : ints >= 0, shape (n,): draft tokens proposed for it this step (0: it does
        not speculate next step)
    logit_tokens : optional ints in [1, query_tokens], shape (n,): the tokens whose logits the
        target computes (vLLM V1: 1 for a prefill chunk or a decode token, 1 + k for a verify
        step); None: every query token (the LM head charged to all of them). Given, the
        target's LM head runs on those rows only and the draft's first forward on one row
        per sequence (``MixedStep._forward_ms``)

    The target forward is ``_step_totals`` on the step's totals: query tokens ``sum q``, KV
    tokens read ``sum c``, attention pairs ``sum q (c + (q - 1) / 2)`` (a causal chunk after c
    cached tokens; ``c`` for one decode token, so B alike decoding sequences give exactly
    :func:`specnb.serving.t_plain_ms`). The draft and engine parts: the module docstring.

    Returns
    -------
    dict of floats: ``target_ms``, ``draft_ms``, ``engine_ms`` (per-verification overhead and
    the engine profile's costs), ``total_ms`` (their sum).

    Raises
    ------
    ValueError
        arrays of different lengths, empty or not 1-D; a context < 0, a query count < 1, a
        draft count < 0, a logit count outside [1, query count], fractional counts.
    TypeError
        setup is not a Setup.
    """
    c = np.atleast_1d(_check.integer("contexts", contexts, lo=0))
    q = np.atleast_1d(_check.integer("query_tokens", query_tokens, lo=1))
    k = np.atleast_1d(_check.integer("draft_tokens", draft_tokens, lo=0))
    if c.ndim != 1 or c.size == 0:
        raise ValueError(f"contexts must be a non-empty 1-D list (one per scheduled sequence), "
                         f"got shape {c.shape}")
    if q.shape != c.shape or k.shape != c.shape:
        raise ValueError(f"contexts, query_tokens and draft_tokens must have one entry per "
                         f"scheduled sequence, got lengths {c.size}, {q.size}, {k.size}")
    lg = None
    if logit_tokens is not None:
        lg = np.atleast_1d(_check.integer("logit_tokens", logit_tokens, lo=1))
        if lg.shape != c.shape:
            raise ValueError(f"logit_tokens must have one entry per scheduled sequence, got "
                             f"length {lg.size} for {c.size}")
        if np.any(lg > q):
            j = int(np.argmax(lg > q))
            raise ValueError(f"logit_tokens[{j}] = {int(lg[j])} exceeds query_tokens[{j}] = "
                             f"{int(q[j])}")
    return MixedStep(setup).ms(c, q, k, lg)

