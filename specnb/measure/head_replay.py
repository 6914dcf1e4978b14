"""Acceptance of an EAGLE, EAGLE-3 or MTP head on a request log, without a server: one target
pass per request (its hidden states and next-token distributions), then the head teacher-forced
along the logged response at every round start at once (:meth:`specnb.measure.heads.Head.
teacher_force`: step 1 on the target's states, steps 2..gamma on the head's own, as vLLM
chains them), stepped as a server steps the request and counted with vLLM's counters
(:mod:`specnb.acceptance_profile`).

Stepping (one request of prompt length P and response r_0 .. r_{R-1}), as ``specnb replay``
steps every method (:mod:`specnb.replay.step`): r_0 comes from the prefill; with n tokens
generated (1 <= n < R) a decode step drafts gamma tokens (vLLM drafts gamma to the end),
accepts a prefix (never past the response's end) and appends accepted + 1 tokens; its context
is P + n tokens. ``cap_at_end=True`` drafts min(gamma, R - 1 - n) instead, as transformers'
assisted decoding and the reference loop cap drafts at their token budget, so that replaying
a reference-loop run gives its counters exactly.

* **T = 0**: draft j is accepted while the head's argmax equals the logged token (agreement
  with the logged text; the target's own greedy output when the log is the target's).
* **T > 0**: the probability that draft j is accepted given the logged path is
  ``beta = sum_x min(p_T(x), q_T(x)) = E_{x ~ q}[min(1, p(x) / q(x))]`` (Leviathan et al.,
  Corollary 3.6; what ``specnb measure --logged`` uses), p the target's and q the head's
  temperature-T distributions (pure temperature sampling, no other processing, as vLLM's
  proposer samples); each draft's acceptance is one seeded draw with that probability, so the
  counters are integers whose expectation the betas give.
"""

from __future__ import annotations

import bisect
import time
from pathlib import Path

import numpy as np
import torch

from .. import _check
from ..acceptance_profile import Counters, build
from . import heads as H
from .args import BUNDLED_EAGLE3_HEAD  # one home: torch-free args

__all__ = ["request_counters", "step_counters", "replay_head", "BUNDLED_EAGLE3_HEAD"]


def step_counters(accept, gamma: int, prompt_len: int, response_len: int, *,
                  context_edges=(), rng=None, cap_at_end: bool = False) -> dict:
    """Counters of one request from its per-round-start acceptance.

    Parameters
    ----------
    accept : array (R - 1, depth >= gamma): row n - 1 is the round after n generated tokens;
        entry j - 1 whether (bool, T = 0) or with which probability (float, T > 0) draft j is
        accepted given drafts 1..j-1 were.
    gamma : int >= 1; prompt_len, response_len : P >= 1 and R >= 1.
    context_edges : bucket edges (see :func:`specnb.acceptance_profile.build`).
    rng : numpy Generator for T > 0's draws (None: accept is boolean).
    cap_at_end : draft min(gamma, R - 1 - n) (the reference loop's cap) instead of gamma.

    Returns
    -------
    ``{None: Counters, bucket index: Counters, ...}`` (buckets only with edges).
    """
    g = int(gamma)
    edges = list(context_edges)
    acc = np.asarray(accept)
    by = {}
    n = 1
    while n < response_len:
        k = min(g, response_len - 1 - n) if cap_at_end else g
        row = acc[n - 1, :k]
        if rng is not None:
            ok = rng.random(k) < row
        else:
            ok = row.astype(bool)
        a = int(np.cumprod(ok).sum()) if k else 0
        c = Counters(1, int(k > 0), k, a, tuple(int(i < a) for i in range(g)),
                     tuple(int(i < k) for i in range(g)))
        keys = [None] + ([bisect.bisect_right(edges, prompt_len + n)] if edges else [])
        for key in keys:
            by[key] = by.get(key, Counters.zero(g)) + c
        n += a + 1
    if None not in by:
        by[None] = Counters.zero(g)
    return by


def _accept_matrix(head, steps, ids, target_logits, start: int, temperature: float):
    """(rows, depth) acceptance of every round start from the teacher-forced steps: T = 0
    agreement with the logged tokens, T > 0 ``sum min(p, q)``; rows past the end False / 0."""
    n = ids.numel()
    rows = n - 1 - start
    i = torch.arange(start, n - 1)
    cols = []
    for j, lg in enumerate(steps, 1):
        tgt = i + j + 1
        valid = tgt < n
        if temperature == 0:
            col = (lg.argmax(-1) == ids[torch.clamp(tgt, max=n - 1)]) & valid
        else:
            q = torch.softmax(lg.float() / temperature, -1)
            p = torch.softmax(target_logits[torch.clamp(tgt - 1, max=n - 1)].float()
                              / temperature, -1)
            col = torch.minimum(p, q).sum(-1).clamp(0.0, 1.0) * valid
        cols.append(col[:rows])
    return torch.stack(cols, 1).cpu().numpy()


@torch.inference_mode()
def request_counters(target, head, prompt_ids, response_ids, *, temperature: float, gammas,
                     context_edges=(), seed: int = 0, cap_at_end: bool = False) -> dict:
    """``{gamma: {bucket or None: Counters}}`` of one request: one target pass over prompt +
    response, the head teacher-forced at every round start (see the module docstring).

    Parameters
    ----------
    target : transformers causal LM; head : :class:`specnb.measure.heads.Head` for it.
    prompt_ids, response_ids : 1-D LongTensors (P >= 1, R >= 1).
    temperature : float >= 0; gammas : ints >= 1; context_edges : increasing ints.
    seed : int >= 0, seeds T > 0's draws; cap_at_end : see :func:`step_counters`.
    """
    dev = next(target.parameters()).device
    ids = torch.cat([prompt_ids, response_ids]).to(dev)
    P, R = prompt_ids.numel(), response_ids.numel()
    depth = max(gammas)
    out, final, aux = H.target_states(target, ids[None], aux_layers=head.aux_layers)
    start = P - 1
    steps = head.teacher_force(ids, final, aux, depth, start)
    acc = _accept_matrix(head, steps, ids, out.logits[0], start, float(temperature))
    # row r = round start i = P - 1 + r, i.e. after n = r + 1 generated tokens
    res = {}
    for g in gammas:
        rng = np.random.default_rng([seed, int(g)]) if temperature > 0 else None
        res[int(g)] = step_counters(acc[:, :g], g, P, R, context_edges=context_edges, rng=rng,
                                    cap_at_end=cap_at_end)
    return res


def replay_head(log=None, *, method: str = "eagle3", head=None, target=None, gammas=(1, 3, 5),
                context_edges=(), tokenizer=None, skip_bad: bool = False, device: str = "auto",
                dtype: str = "auto", seed: int = 0, cpu_threads: int | None = 1,
                models: dict | None = None):
    """Replay a request log through a head: an acceptance profile
    (:class:`specnb.acceptance_profile.AcceptanceProfile`) with vLLM's counters by gamma, task
    and context bucket.

    Parameters
    ----------
    log : a request log (:mod:`specnb.request_log`: text, token-id or chat rows; a path, or a
        :class:`~specnb.request_log.RequestLog` already read); default the bundled logged
        responses. A row without ``temperature`` is replayed at T = 0.
    method : ``eagle``, ``eagle3`` or ``mtp`` (vLLM's method names).
    head : the head's folder; default for ``eagle3`` with the bundled target the bundled head
        (:data:`BUNDLED_EAGLE3_HEAD`), for ``mtp`` the target's own folder.
    target : the target's folder (default the bundled target).
    gammas : ints >= 1; context_edges : increasing ints > 0.
    tokenizer, skip_bad : as :func:`specnb.request_log.read` (default tokenizer: the target
        folder's when it holds tokenizer.json, else the bundled one).
    device, dtype, cpu_threads : as in :func:`specnb.measure.alpha_from_logged`.
    seed : int >= 0 (T > 0 draws).
    models : ``{"target": model, "head": Head}`` already loaded (tests, notebook, benchmark).

    Returns
    -------
    (profile, info) : the profile (``method`` the vLLM name) and a dict with ``requests``,
    ``positions``, ``target_passes`` (one per request), ``seconds`` and ``tokens_per_s``.

    Raises
    ------
    ValueError
        a bad method, gamma or edge; a bad log row (before any model loads); a head that does
        not fit the target (:func:`specnb.measure.heads.head_config`); no head given for a
        target other than the bundled one; a request longer than the target's context.
    """
    from .. import request_log
    from .load import (BUNDLED_TARGET, _run_settings, context_length, load_model,
                       resolve_device, resolve_dtype)

    _check.choice("method", method, H.METHODS)
    gam = sorted({int(g) for g in _check.integer("gammas", list(gammas), lo=1)})
    edges = [int(e) for e in context_edges]
    if any(e < 1 for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"context_edges must be increasing ints >= 1, got {edges}")
    _check.scalar_int("seed", seed, lo=0)
    tpath = Path(target) if target is not None else BUNDLED_TARGET
    if isinstance(log, request_log.RequestLog):
        rlog = log
    else:
        tok = tokenizer if tokenizer is not None else (
            tpath if (tpath / "tokenizer.json").is_file() else None)
        rlog = request_log.read(log, tokenizer=tok, skip_bad=skip_bad)  # before any model
    if models is None:
        head_path = _default_head(method, head, tpath)
        from transformers import AutoConfig
        # the config-level checks before any weight (target's or head's) is read
        H.head_config(head_path, AutoConfig.from_pretrained(str(tpath), local_files_only=True),
                      method=method)
        dev = resolve_device(device)
        tmodel, _ = load_model(tpath, device=dev, dtype=resolve_dtype(dtype, dev),
                               need_tokenizer=False)
        hmodel = H.load_head(head_path, tmodel, method=method)
    else:
        tmodel, hmodel = models["target"], models["head"]
        head_path = hmodel.hc.path
    ctx = context_length(tmodel)
    V = int(tmodel.config.get_text_config().vocab_size)
    for r in rlog:
        n = r.prompt_len + r.response_len
        if ctx is not None and n > ctx:
            raise ValueError(f"{rlog.path}:{r.line}: request {r.id!r} is {n} tokens (prompt "
                             f"{r.prompt_len} + response {r.response_len}), longer than the "
                             f"target's context of {ctx}")
        if max(int(r.prompt_ids.max()), int(r.response_ids.max())) >= V:
            raise ValueError(f"{rlog.path}:{r.line}: request {r.id!r} has a token id beyond the "
                             f"target's vocabulary ({V})")
    per = {g: [] for g in gam}
    t0 = time.perf_counter()
    with _run_settings(str(next(tmodel.parameters()).device), cpu_threads, "cpu_threads"):
        for i, r in enumerate(rlog):
            c = request_counters(tmodel, hmodel, torch.from_numpy(r.prompt_ids.copy()),
                                 torch.from_numpy(r.response_ids.copy()),
                                 temperature=float(r.temperature or 0.0), gammas=gam,
                                 context_edges=edges, seed=seed + i)
            for g in gam:
                per[g].append((r.task, c[g]))
    secs = time.perf_counter() - t0
    positions = int(sum(r.response_len for r in rlog))
    prof = build(method, per, context_edges=edges, tasks=rlog.tasks,
                 params={"head": str(head_path), "format": hmodel.hc.fmt,
                         "draft_vocab_size": hmodel.hc.draft_vocab_size,
                         "aux_layers": list(hmodel.aux_layers) or None},
                 source={"log": rlog.path, "requests": len(rlog), "skipped": len(rlog.skipped),
                         "tokenizer": rlog.tokenizer, "target": str(tpath)})
    info = {"requests": len(rlog), "positions": positions, "target_passes": len(rlog),
            "seconds": secs, "tokens_per_s": positions / secs if secs > 0 else float("nan"),
            "head": str(head_path), "format": hmodel.hc.fmt}
    return prof, info


def _default_head(method: str, head, target_path: Path):
    """The head folder: as given; for ``mtp`` the target's own; for ``eagle3`` on the bundled
    target the bundled head."""
    from .load import BUNDLED_TARGET

    if head is not None:
        return Path(head)
    if method == "mtp":
        return target_path
    if method == "eagle3" and target_path.resolve() == Path(BUNDLED_TARGET).resolve():
        return BUNDLED_EAGLE3_HEAD
    raise ValueError(f"method {method!r} needs a head (--head PATH): the bundled EAGLE-3 head "
                     f"({BUNDLED_EAGLE3_HEAD.name}) fits only the bundled target")
