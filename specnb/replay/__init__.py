"""Acceptance replayed from a request log without a model (L2): the n-gram and suffix
proposers stepped as vLLM steps them, counted with vLLM's counters
(:mod:`specnb.acceptance_profile`). Never imports torch, :mod:`specnb.serving`,
:mod:`specnb.vllm` or :mod:`specnb.measure`.

``replay(log, "ngram", gammas=(1, 3, 5), context_edges=(2000, 8000))`` returns an
:class:`~specnb.acceptance_profile.AcceptanceProfile`; :data:`METHODS` maps each method to
its settings (vLLM's names and defaults) and its stepping function, so that a caller (the
CLI's dispatch table) can list and check them. Modules: :mod:`~specnb.replay.ngram` (vLLM's
n-gram rule), :mod:`~specnb.replay.suffix` (Arctic Inference's suffix trees),
:mod:`~specnb.replay.step` (stepping and counting).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _check
from .. import acceptance_profile as AP
from .. import request_log
from ..runners import RUNNERS, forced_env, model_runner
from .step import counters, ngram_steps, suffix_steps, teacher_forced_steps
from .suffix import BACKENDS as SUFFIX_BACKENDS
from .suffix import backend_label, make_cache, resolve_backend

__all__ = ["METHODS", "Method", "SUFFIX_BACKENDS", "check_params", "check_runner", "replay",
           "request_steps",
           "draft_profile", "table", "resolve_backend"]


@dataclass(frozen=True)
class Method:
    """A model-free method: vLLM's name, its settings with vLLM's defaults (``None`` = as
    vLLM resolves it), and what each setting allows."""

    name: str
    defaults: dict
    doc: str


METHODS = {
    "ngram": Method("ngram", {"prompt_lookup_min": None, "prompt_lookup_max": None,
                              "max_model_len": None},
                    "runner v2 (vLLM 0.33's default): NgramGPUSpeculator, longest suffix "
                    "n-gram in [min, max], its rightmost occurrence, gamma tokens every step "
                    "(padded with the last token); runner v1: NgramProposer (CPU), its "
                    "earliest occurrence, the tokens after it"),
    "ngram_gpu": Method("ngram_gpu", {"prompt_lookup_min": None, "prompt_lookup_max": None},
                        "runner v2: the same speculator as ngram; runner v1: "
                        "NgramProposerGPU, ngram's V1 rule without the max_model_len cap in "
                        "the kernel"),
    "suffix": Method("suffix", {"suffix_decoding_max_tree_depth": 24,
                                "suffix_decoding_max_spec_factor": 1.0,
                                "suffix_decoding_min_token_prob": 0.1,
                                "suffix_decoding_max_cached_requests": 10000,
                                "max_model_len": None},
                     "Arctic Inference's SuffixDecodingCache as vLLM's SuffixDecodingProposer "
                     "calls it (runner v1 only: Model Runner V2 does not run suffix)"),
}


def check_params(method: str, params: dict | None = None) -> dict:
    """``params`` completed with the method's defaults and resolved as vLLM resolves them
    (n-gram: both lookups 5 when neither is given, else the missing one equals the other).

    Raises
    ------
    ValueError
        An unknown method or setting; a lookup < 1 or min > max; a tree depth < 1; a spec
        factor < 0; a token probability outside [0, 1]; cached requests < -1; max_model_len
        < 2.
    """
    _check.choice("method", method, list(METHODS))
    m = METHODS[method]
    p = dict(m.defaults)
    for k, v in (params or {}).items():
        if k not in p:
            raise ValueError(f"{method} has no setting {k!r}; its settings are {list(p)}")
        if v is not None:
            p[k] = v
    if method.startswith("ngram"):
        lo, hi = (None if p[k] is None else _check.scalar_int(k, p[k], lo=1)  # each under
                  for k in ("prompt_lookup_min", "prompt_lookup_max"))  # its own name
        if lo is None and hi is None:
            lo = hi = 5
        lo = hi if lo is None else lo
        hi = lo if hi is None else hi
        if lo > hi:
            raise ValueError(f"prompt_lookup_min = {lo} must be <= prompt_lookup_max = {hi}")
        p["prompt_lookup_min"], p["prompt_lookup_max"] = lo, hi
    else:
        p["suffix_decoding_max_tree_depth"] = _check.scalar_int(
            "suffix_decoding_max_tree_depth", p["suffix_decoding_max_tree_depth"], lo=1)
        p["suffix_decoding_max_spec_factor"] = _check.scalar_real(
            "suffix_decoding_max_spec_factor", p["suffix_decoding_max_spec_factor"], lo=0.0)
        p["suffix_decoding_min_token_prob"] = _check.scalar_real(
            "suffix_decoding_min_token_prob", p["suffix_decoding_min_token_prob"], lo=0.0,
            hi=1.0)
        c = p["suffix_decoding_max_cached_requests"]
        if c != -1:
            c = _check.scalar_int("suffix_decoding_max_cached_requests (-1 = no limit)", c,
                                  lo=0)
        p["suffix_decoding_max_cached_requests"] = c
    if p.get("max_model_len") is not None:
        p["max_model_len"] = _check.scalar_int("max_model_len", p["max_model_len"], lo=2)
    return p


def _check_len(r, mml) -> None:
    n = r.prompt_len + r.response_len
    if mml is not None and n > mml:
        raise ValueError(f"request {r.id!r} (line {r.line}) holds {n} tokens, more than "
                         f"max_model_len = {mml}; a server with that limit could not "
                         "have served it")


def _one(cache, i, r, gammas, params, runner):
    """One request's ``{gamma: (T, d, a)}`` (``cache`` None: n-gram)."""
    mml = params.get("max_model_len")
    if cache is None:
        return ngram_steps(r.token_ids, r.prompt_len, gammas,
                           prompt_lookup_min=params["prompt_lookup_min"],
                           prompt_lookup_max=params["prompt_lookup_max"], max_model_len=mml,
                           runner=runner)
    return suffix_steps(cache, i, r.token_ids, r.prompt_len, gammas,
                        max_spec_factor=params["suffix_decoding_max_spec_factor"],
                        min_token_prob=params["suffix_decoding_min_token_prob"],
                        max_model_len=mml)


def _cache(method, params, backend):
    if method != "suffix":
        return None
    return make_cache(backend, params["suffix_decoding_max_tree_depth"],
                      params["suffix_decoding_max_cached_requests"])


_FORKED = {}  # what a forked worker reads (the log stays in the parent's memory, unpickled)


def _chunk(lo: int, hi: int) -> list:
    """A worker: requests lo..hi-1 of the forked log. Suffix decoding first brings its cache
    to the state it has before request lo: every earlier request started with an empty
    prompt, its whole response added, stopped, in log order (the global tree gets the same
    tokens in the same order, evictions included; the local trees are dropped anyway)."""
    log, method, gammas, params, backend, runner = (
        _FORKED[k] for k in ("log", "method", "gammas", "params", "backend", "runner"))
    cache = _cache(method, params, backend)
    reqs = log.requests
    if cache is not None:
        for i in range(lo):
            r = reqs[i]
            if hasattr(cache, "steps"):  # numba: the same calls in one compiled loop
                cache.steps(i, r.response_ids, 0, ())
                continue
            cache.start_request(i, [])
            cache.add_active_response(i, r.response_ids.tolist())
            cache.stop_request(i)
    return [_one(cache, i, reqs[i], gammas, params, runner) for i in range(lo, hi)]


def request_steps(log, method: str, gammas, params: dict, suffix_backend: str = "auto",
                  workers: int = 1, runner: str = "v2"):
    """Yield ``(request, {gamma: (T, d, a)})`` for each request of ``log`` (a
    :class:`~specnb.request_log.RequestLog`) in log order, ``params`` as
    :func:`check_params` returns them (see :mod:`specnb.replay.step` for the arrays);
    ``runner`` the model runner whose n-gram proposer steps (:func:`check_runner`);
    ``suffix_backend`` one of :data:`SUFFIX_BACKENDS` (:func:`specnb.replay.suffix.
    resolve_backend`); ``workers`` > 1: that many forked processes, each on a contiguous
    part of the log (the same arrays: suffix decoding's later parts first rebuild the cache
    from the earlier responses, about a tenth of a request's cost each)."""
    mml = params.get("max_model_len")
    if method == "suffix":
        suffix_backend = resolve_backend(suffix_backend, len(log))
    workers = max(1, min(int(workers), len(log)))
    if workers > 1:
        import multiprocessing as mp

        for r in log:
            _check_len(r, mml)
        cuts = [round(len(log) * w / workers) for w in range(workers + 1)]
        _FORKED.update(log=log, method=method, gammas=list(gammas), params=params,
                       backend=suffix_backend, runner=runner)
        try:
            with mp.get_context("fork").Pool(workers) as pool:
                parts = pool.starmap(_chunk, list(zip(cuts, cuts[1:])), chunksize=1)
        finally:
            _FORKED.clear()
        for r, steps in zip(log, (s for part in parts for s in part)):
            yield r, steps
        return
    cache = _cache(method, params, suffix_backend)
    for i, r in enumerate(log):
        _check_len(r, mml)
        yield r, _one(cache, i, r, gammas, params, runner)


from ..theory import MAX_GAMMA  # noqa: E402  (the one bound on gamma, with plan's)


def check_runner(method: str, runner: str | None) -> str:
    """The model runner a replay of ``method`` steps: ``runner`` (``"v2"`` or ``"v1"``), or
    vLLM 0.33's default for the method when None (:func:`specnb.runners.model_runner`: V2
    for ngram / ngram_gpu, V1 for suffix).

    Raises
    ------
    ValueError
        a runner other than v1 / v2; v2 for a method Model Runner V2 does not run (suffix:
        vLLM refuses to start).
    """
    if runner is None:
        return model_runner(method)
    _check.choice("runner", runner, list(RUNNERS))
    if model_runner(method, forced_env(runner)) != runner:
        raise ValueError(f"runner v2 does not run {method}: vLLM 0.33 refuses to start "
                         f"(\"Model Runner V2 does not yet support: speculative method "
                         f"'{method}'\"); {method} runs on runner v1")
    return runner


def replay(log=None, method: str = "ngram", *, gammas=(1, 3, 5), context_edges=(),
           params: dict | None = None, tokenizer=None, skip_bad: bool = False,
           suffix_backend: str = "auto", workers: int = 1,
           runner: str | None = None) -> AP.AcceptanceProfile:
    """The acceptance profile of ``method`` replayed on a request log.

    Parameters
    ----------
    log : path or :class:`~specnb.request_log.RequestLog`, optional
        The log (read with :func:`specnb.request_log.read`, ``tokenizer`` and ``skip_bad``
        passed on); default the bundled one.
    method : ``"ngram"``, ``"ngram_gpu"`` or ``"suffix"`` (:data:`METHODS`)
    gammas : ints in [1, :data:`MAX_GAMMA`], ``num_speculative_tokens`` values to replay
    context_edges : increasing ints > 0, the context buckets' edges (tokens before a step)
    params : the method's settings (vLLM's names, :func:`check_params`)
    suffix_backend : ``"auto"`` (default), ``"numba"``, ``"arctic"`` or ``"python"``
        suffix only: specnb's trees compiled by numba (the fastest; needs numba), Arctic
        Inference's own compiled ``SuffixDecodingCache`` (the library vLLM calls; ``make
        suffix-backend`` installs it) or specnb's exact restatement in Python (the slowest);
        ``"auto"``: the first of numba, arctic, python that imports, numba only for logs of
        :data:`~specnb.replay.suffix.AUTO_NUMBA_MIN_REQUESTS` requests or more (its one-time
        compile outweighs smaller logs). All give the same counters.
    workers : int >= 1, processes replaying contiguous parts of the log at once (Linux fork;
        default 1); the same counters for any number
    runner : ``"v2"``, ``"v1"`` or None (default: vLLM 0.33's for the method,
        :func:`check_runner`): which model runner's proposer is stepped. n-gram on V2 drafts
        gamma tokens at every step (proposal rate 1, padded drafts counted as vLLM counts
        them), on V1 only where a match is (``VLLM_USE_V2_MODEL_RUNNER=0``)

    Returns
    -------
    AcceptanceProfile, with ``runner`` set and ``source`` naming the log, its request count
    and skipped rows (suffix: and ``backend``, e.g. ``"numba 0.68.1"``,
    ``"arctic-inference 0.3.0"`` or ``"python"``).

    Raises
    ------
    ValueError
        A bad method, setting, gamma, edge, runner or backend ("numba" or "arctic" where it
        does not import; before the log is read); a bad log.
    """
    p = check_params(method, params)
    runner = check_runner(method, runner)
    _check.choice("suffix_backend", suffix_backend, list(SUFFIX_BACKENDS))
    workers = _check.scalar_int("workers", workers, lo=1)
    if method == "suffix":  # a backend that cannot run is refused before the log is read
        resolve_backend(suffix_backend)
    gs = sorted({int(g) for g in
                 _check.integer("gamma", list(gammas), lo=1, hi=MAX_GAMMA).tolist()})
    if not gs:
        raise ValueError("gamma must hold at least one value >= 1, got none")
    edges = [int(x) for x in context_edges]
    if edges:
        _check.integer("context_edges", edges, lo=1)
        if any(b <= a for a, b in zip(edges, edges[1:])):
            raise ValueError(f"context_edges must increase, got {edges}")
    if not isinstance(log, request_log.RequestLog):
        log = request_log.read(log, tokenizer=tokenizer, skip_bad=skip_bad)
    backend = resolve_backend(suffix_backend, len(log)) if method == "suffix" else None
    per = {g: [] for g in gs}
    lo, hi = math.inf, -math.inf  # the contexts the steps saw (tokens before a step)
    for r, steps in request_steps(log, method, gs, p, suffix_backend=backend or "auto",
                                  workers=workers, runner=runner):
        for g in gs:
            per[g].append((r.task, counters(steps[g], g, edges)))
            t = steps[g][0]
            if len(t):
                lo, hi = min(lo, int(np.min(t))), max(hi, int(np.max(t)))
    source = {"log": str(Path(log.path).name) if log.path else None,
              "requests": len(log), "skipped": len(log.skipped),
              "tokenizer": log.tokenizer,
              "context_range": None if hi < lo else [lo, hi]}
    if backend is not None:
        source["backend"] = backend_label(backend)
    return AP.build(method, per, context_edges=edges, tasks=log.tasks,
                    params={k: (None if isinstance(v, float) and math.isnan(v) else v)
                            for k, v in p.items()}, source=source, runner=runner)


def draft_profile(betas, log, *, gammas=(1, 3, 5), context_edges=(), model: str = "draft",
                  seed: int = 0) -> AP.AcceptanceProfile:
    """The acceptance profile of a draft model from its teacher-forced betas along a log's
    responses, stepped as vLLM steps a draft model (:func:`specnb.replay.step.
    teacher_forced_steps`: exact at T = 0, one seeded draw per position at T > 0).

    Parameters
    ----------
    betas : rows with ``prompt`` (the record's id), ``temperature`` and ``betas`` (one per
        response token), e.g. the ``betas`` frame of :func:`specnb.measure.alpha_from_logged`
        for one draft (an iterable of mappings or a pandas DataFrame)
    log : the :class:`~specnb.request_log.RequestLog` the betas were measured on (its prompt
        lengths place each step's context)
    model : the draft's name (the profile's ``params.model``)

    Raises
    ------
    ValueError
        a betas row whose (id, temperature) is not in the log, or whose length is not the
        response's.
    """
    rows = betas.to_dict("records") if hasattr(betas, "to_dict") else list(betas)
    by_key = {(r.id, r.temperature): r for r in log}
    gs = sorted({int(g) for g in
                 _check.integer("gamma", list(gammas), lo=1, hi=MAX_GAMMA).tolist()})
    rng = np.random.default_rng(seed)
    per = {g: [] for g in gs}
    for row in rows:
        key = (row["prompt"], float(row["temperature"]))
        r = by_key.get(key)
        if r is None:
            raise ValueError(f"betas for record {key[0]!r} at T = {key[1]:g} have no request in "
                             f"the log {log.path}")
        b = np.asarray(row["betas"], dtype=float)
        if b.size != r.response_len:
            raise ValueError(f"record {key[0]!r}: {b.size} betas for a {r.response_len}-token "
                             "response")
        st = teacher_forced_steps(b, r.prompt_len, gs, greedy=key[1] == 0.0, rng=rng)
        for g in gs:
            per[g].append((r.task, counters(st[g], g, context_edges)))
    return AP.build("draft_model", per, context_edges=context_edges, tasks=log.tasks,
                    params={"model": model},
                    source={"log": Path(log.path).name, "requests": len(rows),
                            "skipped": len(log.skipped), "tokenizer": log.tokenizer})


def table(profiles: dict):
    """Profiles side by side: a pandas DataFrame, one row per (label, gamma, task, context)
    entry (``task`` "all" and ``context`` "all" for the pooled ones), with ``requests``,
    ``steps``, ``drafts``, ``proposal_rate``, ``acceptance_rate`` (accepted / draft tokens,
    vLLM's), ``implied_alpha`` (Eq. 1's alpha at that gamma and tau), ``tau`` and its
    interval."""
    import pandas as pd

    out = []
    for label, prof in profiles.items():
        for e in prof.entries:
            c = e.counters
            ctx = "all" if e.context is None else (
                f"{e.context[0]}-" + ("" if e.context[1] is None else str(e.context[1])))
            out.append({"method": label, "gamma": e.gamma,
                        "task": "all" if e.task is None else e.task, "context": ctx,
                        "requests": e.num_requests, "steps": c.num_steps,
                        "drafts": c.num_drafts, "proposal_rate": c.proposal_rate,
                        "acceptance_rate": c.acceptance_rate,
                        "implied_alpha": c.implied_alpha, "tau": c.tau, "tau_ci_low": e.tau_ci[0],
                        "tau_ci_high": e.tau_ci[1]})
    return pd.DataFrame(out)
