"""The measurement: :func:`measure` runs teacher forcing, single-forward times, timed plain,
assisted and prompt-lookup ``generate`` calls, fits one timing model to the runs, and puts
prediction (Eq. 1, Theorem 3.8, the betas, the timing model, leave one gamma out) beside
measurement in a :class:`Measurement`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import transformers

from .. import _check, _json, theory, timing
from .. import acceptance as acc
from .args import check_gammas
from .generate import _seed_for, forward_time, run_generate
from .load import _as_list, _load_models, _run_settings, model_contexts
from .logged import _teacher_forcing
from .prompts import _prompt_items, encode_prompts
from .reference import reference_generate
from .spread import speedup_interval

__all__ = ["Measurement", "measure", "LOOPS"]

#: The speculative loops :func:`measure` can time, and the ``runs`` method of each:
#: ``"transformers"``, transformers' assisted decoding (``generate(assistant_model=...)``), and
#: ``"reference"``, :func:`specnb.measure.reference.reference_generate`.
LOOPS = {"transformers": "assisted", "reference": "reference"}


def _loops(loop) -> list:
    """``loop`` as a list of loop names (one or both of :data:`LOOPS`), checked."""
    names = [loop] if isinstance(loop, str) else list(loop) if loop is not None else []
    bad = [x for x in names if x not in LOOPS]
    if not names or bad or len(set(names)) != len(names):
        raise ValueError(f"loop must be one of {sorted(LOOPS)} or a list of them without "
                         f"repeats (--loop on the command line), got {loop!r}")
    return names


@dataclass
class Measurement:
    """Everything :func:`measure` found (pandas DataFrames, one row per ...).

    * ``betas``: (draft, temperature, prompt): task, positions, sum of betas, the sequence.
    * ``alpha``: (draft, temperature, task incl. ``"all"``): alpha, 95% CI, prompts, positions.
    * ``runs``: every generate call: method (plain / plain_short / assisted / reference / pld;
      plain_short is plain decoding of max_new_tokens // 2 tokens, timed only for the timing
      model; assisted is transformers' loop, reference the reference loop), loop, draft, gamma,
      temperature, prompt, repeat, wall_s, new_tokens, target/draft forwards, rounds, tau,
      lossless (greedy only).
    * ``summary``: (loop, draft, gamma, temperature): alpha, alpha_counted, tau_measured,
      tau_predicted (Eq. 1), tau_betas (no i.i.d.), speedup_measured, speedup_predicted
      (Thm 3.8 with c), speedup_betas, speedup_timing_model (the fitted timing model's
      predicted wall times of the same calls, per-call cost included), speedup_predicted_loo
      (leave one gamma out: the timing model fitted without this gamma's runs, applied to the
      rounds the teacher-forced betas imply at this gamma; what a user can predict before
      running a gamma; NaN with a single gamma), speedup_ci_low / speedup_ci_high (95 %
      paired bootstrap over prompts of speedup_measured), t_round (the loop's per-round host
      overhead from its timing model, s), speedup_with_overhead (Theorem 3.8 with that
      overhead: tau by Eq. 1 from alpha, a round costing t_target + t_round + gamma t_draft as
      fitted; NaN where the fit did not identify t_target), c, lossless.
    * ``pld``: (gamma, temperature, task incl. ``"all"``): prompts, tau, speedup, its 95 % interval
      (speedup_ci_low / high, bootstrap over prompts), lossless.
    * ``timing``: (loop, draft): per loop, the timing model fitted jointly to all drafts' runs
      of that loop and the plain runs
      (:func:`specnb.timing.fit_timing_models`: t_call, t_target and t_round shared, t_draft
      per draft, all >= 0, in s), c_fit, r2, ``warnings`` (what the runs could not identify,
      "" when nothing); and the directly timed forwards t_target_forward, t_draft_forward, c.
    * ``config``: the arguments, model paths, device, dtype and library versions.
    """

    betas: pd.DataFrame
    alpha: pd.DataFrame
    runs: pd.DataFrame
    summary: pd.DataFrame
    pld: pd.DataFrame
    timing: pd.DataFrame
    config: dict = field(default_factory=dict)

    @property
    def lossless(self) -> bool | None:
        """True when every greedy assisted / prompt-lookup output equalled plain greedy output
        (None when no greedy run was made)."""
        v = self.runs.loc[self.runs["method"] != "plain", "lossless"].dropna()
        return None if v.empty else bool(v.all())

    def for_loop(self, loop: str) -> "Measurement":
        """This measurement seen through one loop: ``summary`` and ``timing`` rows of ``loop``,
        and ``runs`` without the other loop's speculative runs (plain and prompt lookup kept).

        Raises
        ------
        ValueError
            A loop this measurement did not run.
        """
        ran = list(self.summary["loop"].unique())
        if loop not in ran:
            raise ValueError(f"loop must be one this measurement ran, {ran}, got {loop!r}")
        other = [LOOPS[x] for x in ran if x != loop]
        pick = lambda f: f[f["loop"] == loop].reset_index(drop=True)  # noqa: E731
        return Measurement(betas=self.betas, alpha=self.alpha,
                           runs=self.runs[~self.runs["method"].isin(other)].reset_index(drop=True),
                           summary=pick(self.summary), pld=self.pld, timing=pick(self.timing),
                           config={**self.config, "loops": [loop]})

    def to_json(self) -> dict:
        """One JSON-able object. The keys ``draft``, ``gamma``, ``temperature``, ``alpha``,
        ``alpha_counted``, ``tau_measured``, ``tau_predicted``, ``tau_betas``,
        ``speedup_measured``, ``speedup_predicted``, ``speedup_betas``,
        ``speedup_timing_model``, ``speedup_predicted_loo``, ``c`` and ``lossless`` are aligned
        lists, one entry per summary row (draft x gamma x temperature); ``lossless_all`` is the
        overall verdict; ``alpha_by_task``, ``pld`` and ``timing`` are lists of records;
        ``config`` as run."""
        obj = _json.columns(self.summary)
        obj["lossless_all"] = self.lossless
        obj["alpha_by_task"] = _json.records(self.alpha)
        obj["pld"] = _json.records(self.pld)
        obj["timing"] = _json.records(self.timing)
        obj["config"] = self.config
        return obj


def measure(target=None, drafts=None, *, prompts=None, tasks=None, per_task: int | None = 2,
            gammas=(1, 2, 3, 5), temperatures=(0.0, 1.0), max_new_tokens: int = 48,
            device: str = "auto", dtype: str = "auto", repeats: int = 2, warmup: int = 1,
            pld: bool = True, chat_template="auto", seed: int = 0, progress: bool = True,
            cpu_threads: int | None = 1, models: dict | None = None,
            loop="transformers", draft_heads=None) -> Measurement:
    """Measure alpha, tau and speedup of ``drafts`` against ``target`` on ``prompts``.

    Parameters
    ----------
    target : str or Path, optional
        Local folder or hub id; defaults to the bundled :data:`BUNDLED_TARGET`.
    drafts : str, Path or list of them, optional
        One or more drafts sharing the target's vocabulary; defaults to the bundled drafts
        (two sizes, for Leviathan's draft-size trade), or to none when ``draft_heads`` are
        given for a target other than the bundled one.
    prompts : str, Path or list of dict, optional
        A JSON-lines file (see :func:`load_prompts`) or already loaded prompts; defaults to the
        bundled held-out prompts.
    tasks, per_task : see :func:`load_prompts` (``per_task`` 2 by default; 0 or None = all).
    gammas : ints >= 1
        Draft lengths (``num_assistant_tokens`` / ``num_speculative_tokens``).
    temperatures : floats >= 0
        0 = greedy. Timings, the timing model and the losslessness check use every
        temperature's runs; lossless is checked at 0 only.
    max_new_tokens : int >= 1
    device : ``"auto"``, ``"cpu"``, ``"cuda"``; dtype : ``"auto"``, ``"float32"``,
        ``"bfloat16"``, ``"float16"``.
    repeats : int >= 1, timed runs per prompt and setting (median kept).
    warmup : int >= 0, untimed calls of each setting on the first prompt first.
    pld : bool, also run prompt lookup decoding (``prompt_lookup_num_tokens = gamma``).
    chat_template : ``"auto"``, True or False (see :func:`encode_prompts`).
    seed : int >= 0, seeds sampling (each prompt and temperature gets its own derived seed).
    progress : bool, show a tqdm progress bar.
    cpu_threads : int >= 1 or None
        torch's CPU threads while measuring (restored afterwards), on a CPU and on CUDA. 1 by
        default: with tiny models a decoding step is overhead-bound, so more threads gain
        little, and when other processes share the cores a multi-threaded forward stalls at
        every OpenMP barrier (we saw single calls slow down 100x on a shared 2-core machine).
        On CUDA the host only launches kernels; the H200 runs with 1 thread (and fp32) cost
        9-15 ms a round, those with torch's default 16 threads (and bf16) 28-39 ms
        (``data/measured/h200_measure/``), so 1 is the default there too (costless if threads
        are not the cause; ``scripts/gpu_notebook.sh`` varies both). None keeps torch's
        setting.
    models : dict, optional
        Already loaded ``{"target": (model, tokenizer), "drafts": {name: (model, tok)}}``, to
        skip loading (the notebook and tests reuse them).
    loop : ``"transformers"`` (default), ``"reference"``, or a list of both
        Which speculative loop the assisted runs use: transformers' assisted decoding, or the
        reference loop (:mod:`specnb.measure.reference`: no ``generate()`` per round; at
        T > 0 it applies no logits processors, so a target whose ``generation_config`` sets
        any is refused for it). With both, the summary and timing tables hold one block per
        loop (column ``loop``).
    draft_heads : str, Path or list of them, optional
        EAGLE / EAGLE-3 / MTP heads for the target (:mod:`specnb.measure.heads`; an MTP
        head's path is the target's own folder), measured beside the drafts as drafters of the
        reference loop (:class:`specnb.measure.head_drafter.HeadDrafter`); they need
        ``loop="reference"``. Their teacher-forced alpha is the first draft's.

    Returns
    -------
    Measurement

    Raises
    ------
    ValueError
        Bad gammas/temperatures/max_new_tokens/repeats (a gamma above max_new_tokens - 1, which
        no round can draft); an unknown loop; mismatched vocabularies; a prompt too long for
        the target's context (see :func:`encode_prompts`); loop ``"reference"`` with a target
        whose generation_config sets logits processors; draft heads without loop
        ``"reference"`` only, or a head that does not fit the target.
    FileNotFoundError
        A missing model folder or prompts file.
    """
    loops = _loops(loop)
    gam = [int(g) for g in _check.integer("gammas", _as_list(gammas, "gammas"), lo=1)]
    temps = [float(t) for t in _check.real("temperatures", _as_list(temperatures, "temperatures"),
                                           lo=0.0)]
    mnt = _check.scalar_int("max_new_tokens", max_new_tokens, lo=1)
    check_gammas(gam, max_new_tokens=mnt, flag="gammas")
    reps = _check.scalar_int("repeats", repeats, lo=1)
    warm = _check.scalar_int("warmup", warmup, lo=0)
    seed = _check.scalar_int("seed", seed, lo=0)
    prompt_items, prompts_src = _prompt_items(prompts, tasks, per_task)  # before any model loads
    heads = _as_list(draft_heads, "draft_heads") if draft_heads is not None else []
    if heads and loops != ["reference"]:
        raise ValueError("draft heads run in the reference loop only (transformers' assisted "
                         "decoding takes no EAGLE / MTP head): use loop='reference' "
                         "(--loop reference)")
    if heads and drafts is None and models is None and target is not None:
        from .load import BUNDLED_TARGET, load_model, resolve_device, resolve_dtype
        if Path(target).expanduser().resolve() != BUNDLED_TARGET.resolve():
            # a head of another target: no default drafts (the bundled ones do not fit it)
            d = resolve_device(device)
            models = {"target": load_model(target, device=d, dtype=resolve_dtype(dtype, d)),
                      "drafts": {}, "target_name": str(target)}
    tmodel, ttok, dmodels, target_name, (dev, torch_dtype) = _load_models(target, drafts, models,
                                                                          device, dtype)
    if heads:  # the drafter seam: heads beside the drafts
        from .head_drafter import HeadDrafter
        from .load import short_names
        labels = short_names([*dmodels, *map(str, heads)])[len(dmodels):]
        for label, path in zip(labels, heads):
            dmodels[label] = (HeadDrafter.load(path, tmodel), None)
    ids = encode_prompts(ttok, prompt_items, max_new_tokens=mnt,
                         context=model_contexts(tmodel, dmodels), chat_template=chat_template)
    n_p = len(prompt_items)
    n_calls = len(temps) * n_p * (1 + len(dmodels)) + reps * len(temps) * n_p * (
        1 + (mnt >= 4) + len(loops) * len(dmodels) * len(gam) + (len(gam) if pld else 0))
    with _progress(n_calls, progress) as tick:
        with _run_settings(dev, cpu_threads, "cpu_threads (--threads on the command line, "
                                              "where 0 = torch's setting)"):
            config = dict(processing={}, target=target_name, drafts=list(dmodels),
                          prompts=prompts_src, n_prompts=n_p,
                          tasks=list(dict.fromkeys(p["task"] for p in prompt_items)),
                          gammas=gam, temperatures=temps, max_new_tokens=mnt, repeats=reps,
                          warmup=warm, device=dev, dtype=str(torch_dtype).replace("torch.", ""),
                          seed=seed, chat_template=chat_template, loops=loops,
                          versions={"torch": torch.__version__,
                                    "transformers": transformers.__version__},
                          torch_threads=torch.get_num_threads())
            return _measure(tmodel, dmodels, prompt_items, ids, gam, temps, mnt, reps, warm, pld,
                            seed, tick, config, loops)


@contextlib.contextmanager
def _progress(total: int, show: bool):
    """A tqdm bar of ``total`` calls when ``show``; yields the function that advances it by one
    (a no-op without a bar)."""
    bar = None
    if show:
        from tqdm.auto import tqdm
        bar = tqdm(total=total, desc="specnb measure", unit="call")
    try:
        yield (lambda: bar.update(1)) if bar is not None else (lambda: None)
    finally:
        if bar is not None:
            bar.close()


def _fit_timing(runs, is_assisted):
    """:func:`specnb.timing.fit_timing_models` on plain and assisted ``runs`` (draft
    forwards, rounds and draft name count for the assisted ones only)."""
    return timing.fit_timing_models(runs["wall_s"], runs["target_forwards"],
                                    np.where(is_assisted, runs["draft_forwards"], 0),
                                    np.where(is_assisted, runs["rounds"], 0),
                                    drafts=np.where(is_assisted,
                                                    runs["draft"].fillna("").astype(str), ""))


def _plain_rate(model, runs, t):
    """tokens/s the timing model predicts for the plain calls at temperature ``t``."""
    plain = runs[(runs["method"] == "plain") & (runs["temperature"] == t)]
    return plain["new_tokens"].sum() / model.predict(plain["target_forwards"], 0, 0).sum()


def _model_speedup(model, assisted_runs, runs, t):
    """tokens/s the timing model predicts for these assisted calls over what it predicts for the
    plain calls at temperature ``t`` (the per-call cost included, like the measured speedup)."""
    if model is None:
        return np.nan
    pa = model.predict(assisted_runs["target_forwards"], assisted_runs["draft_forwards"],
                       assisted_runs["rounds"]).sum()
    return float((assisted_runs["new_tokens"].sum() / pa) / _plain_rate(model, runs, t))


def _loo_speedup(model, betas, runs, dname, gamma, t, mnt):
    """Speedup at ``gamma`` predicted by a timing model fitted without that gamma's runs: the
    target forwards and draft forwards come from the teacher-forced betas
    (:func:`specnb.acceptance.expected_round_counts`; exact greedy rounds at T = 0), the plain
    rate from the plain runs (which every gamma shares)."""
    seqs = [b for b in betas[(betas["draft"] == dname) & (betas["temperature"] == t)]["betas"]
            if len(b)]
    if not seqs:
        return np.nan
    counts = [acc.expected_round_counts(b, gamma, mnt) for b in seqs]
    tokens = sum(len(b) for b in seqs)
    wall = sum(float(model.predict(r, d, r)) for r, d in counts)
    return float((tokens / wall) / _plain_rate(model, runs, t))


def _measure(tmodel, dmodels, prompts, ids, gammas, temps, mnt, reps, warm, pld, seed, tick,
             config, loops=("transformers",)) -> Measurement:
    """The steps of :func:`measure` on loaded models and encoded prompts."""
    # 1. continuations and teacher-forced betas
    conts, betas, alpha = _teacher_forcing(tmodel, dmodels, prompts, ids, temps, mnt, seed, tick,
                                           config["processing"])
    procs = {t: p for t, p in config["processing"].items() if p}
    if "reference" in loops and procs:
        raise ValueError(
            "loop 'reference' applies no logits processors, and this target's generation_config "
            f"sets some ({procs}): measure it with loop 'transformers' (--loop transformers)")
    # 2. c: decoding-step forward times, measured side by side
    fwd = forward_time([tmodel] + [dm for dm, _ in dmodels.values()], ids[0])
    t_target, t_draft = fwd[0], dict(zip(dmodels, fwd[1:]))
    # 3. timed runs; per prompt and setting the median wall time over repeats
    runs = _timed_runs(tmodel, dmodels, prompts, ids, gammas, temps, mnt, reps, warm, pld, seed,
                       conts, tick, loops)
    med = _medians(runs)
    # 4. per loop one timing model for all drafts; 4b. leave one gamma out
    timings, summaries = [], []
    for lp in loops:
        method = LOOPS[lp]
        fitted = runs[runs["method"].isin(["plain", "plain_short", method])]
        is_a = (fitted["method"] == method).to_numpy()
        timing, models_fit = _timing_table(fitted, is_a, dmodels, t_target, t_draft)
        timings.append(timing.assign(loop=lp)[["loop", *timing.columns]])
        loo = _leave_one_gamma_out(fitted, is_a, dmodels, gammas, temps, betas, runs, mnt)
        # 5. prediction beside measurement
        summaries.append(_summary(dmodels, gammas, temps, mnt, betas, alpha, runs, med, t_target,
                                  t_draft, models_fit, loo, lp))
    timing = pd.concat(timings, ignore_index=True)
    summary = pd.concat(summaries, ignore_index=True)
    summary["lossless"] = summary["lossless"].astype(object)
    # 6. prompt lookup decoding by task
    pld_df = _pld_table(runs, med, gammas, temps) if pld else pd.DataFrame([])
    return Measurement(betas=betas, alpha=alpha, runs=runs, summary=summary, pld=pld_df,
                       timing=timing, config=config)


def _settings(dmodels, gammas, mnt: int, pld: bool, loops=("transformers",)) -> list:
    """``(method, draft, gamma)`` of every timed setting, in run order."""
    settings = [("plain", None, None)]
    if mnt >= 4:  # plain calls of two lengths separate the per-call cost from t_target
        settings.append(("plain_short", None, None))
    settings += [(LOOPS[lp], d, g) for d in dmodels for g in gammas for lp in loops]
    if pld:
        settings += [("pld", None, g) for g in gammas]
    return settings


def _call(tmodel, dmodels, ids, method, dname, g, pi, t, ti, mnt, seed):
    """One timed ``generate`` call of a setting on prompt ``pi`` at temperature ``t``."""
    kw = dict(max_new_tokens=mnt, temperature=t, seed=_seed_for(seed, ti, pi))
    if method == "assisted":
        return run_generate(tmodel, ids[pi], draft=dmodels[dname][0], gamma=g, **kw)
    if method == "reference":
        return reference_generate(tmodel, dmodels[dname][0], ids[pi], gamma=g, **kw)
    if method == "pld":
        return run_generate(tmodel, ids[pi], prompt_lookup=g, **kw)
    if method == "plain_short":
        kw["max_new_tokens"] = mnt // 2
    return run_generate(tmodel, ids[pi], **kw)


def _run_row(run, method, dname, g, t, p, r, greedy_tokens) -> dict:
    """One ``runs`` row: counts, tau and (greedy speculative runs) losslessness against the
    plain greedy ``greedy_tokens``.

    Raises
    ------
    RuntimeError
        The streamed rounds and the counted target forwards disagree (an internal check).
    """
    plain = method in ("plain", "plain_short")
    lossless = None
    if t == 0 and not plain:
        lossless = run.tokens == greedy_tokens
    rounds = len(run.accept_lengths)
    if not plain and rounds != run.target_forwards:
        raise RuntimeError(
            f"internal check failed: {rounds} streamed rounds but "
            f"{run.target_forwards} target forwards ({method}, gamma {g})")
    loop = {v: k for k, v in LOOPS.items()}.get(method)
    return dict(
        method=method, loop=loop, draft=dname, gamma=g, temperature=t, prompt=p["id"],
        task=p["task"], repeat=r, wall_s=run.wall_s, new_tokens=len(run.tokens),
        target_forwards=run.target_forwards, draft_forwards=run.draft_forwards,
        rounds=rounds if not plain else 0,
        tau=len(run.tokens) / rounds if rounds else float("nan"),
        accept_lengths=run.accept_lengths, lossless=lossless)


def _timed_runs(tmodel, dmodels, prompts, ids, gammas, temps, mnt, reps, warm, pld, seed, conts,
                tick, loops=("transformers",)) -> pd.DataFrame:
    """Warm-up calls of every setting on the first prompt, then the timed runs, interleaved:
    repeat -> temperature -> prompt -> setting; one row each (:func:`_run_row`)."""
    settings = _settings(dmodels, gammas, mnt, pld, loops)
    for _ in range(warm):
        for method, dname, g in settings:
            _call(tmodel, dmodels, ids, method, dname, g, 0, temps[0], 0, mnt, seed)
    run_rows = []
    for r in range(reps):
        for ti, t in enumerate(temps):
            for pi, p in enumerate(prompts):
                for method, dname, g in settings:
                    run = _call(tmodel, dmodels, ids, method, dname, g, pi, t, ti, mnt, seed)
                    tick()
                    run_rows.append(_run_row(run, method, dname, g, t, p, r,
                                             conts[(t, pi)]))
    runs = pd.DataFrame(run_rows)
    runs["lossless"] = runs["lossless"].astype(object)
    return runs


def _medians(runs: pd.DataFrame) -> pd.DataFrame:
    """Per prompt and setting: the median wall time and new tokens over repeats."""
    key = ["method", "draft", "gamma", "temperature", "prompt", "task"]
    return (runs.assign(draft=runs["draft"].fillna(""), gamma=runs["gamma"].fillna(0))
            .groupby(key, sort=False)
            .agg(wall_s=("wall_s", "median"), new_tokens=("new_tokens", "median"))
            .reset_index())


def _tok_per_s(frame) -> float:
    return float(frame["new_tokens"].sum() / frame["wall_s"].sum())


def _all_lossless(frame):
    """True when every greedy run in ``frame`` was lossless; None when it holds none."""
    ll = frame["lossless"].dropna()
    return bool(ll.all()) if len(ll) else None


def _base_rate(med, t, task=None) -> float:
    """Plain decoding's tokens/s at temperature ``t`` (on ``task``'s prompts), from medians."""
    f = med[(med["method"] == "plain") & (med["temperature"] == t)]
    if task is not None:
        f = f[f["task"] == task]
    return _tok_per_s(f)


def _timing_table(fitted, is_a, dmodels, t_target, t_draft):
    """The joint timing model (all temperatures; plain + assisted runs: shared target-side
    times, one draft time per draft, all >= 0) as one row per draft beside the directly timed
    forwards; and ``{draft: TimingModel}`` of the drafts whose t_target was identified."""
    fit = _fit_timing(fitted, is_a)
    timing_rows, models_fit = [], {}
    for dname in dmodels:
        row = dict(draft=dname, t_target_forward=t_target, t_draft_forward=t_draft[dname],
                   c=t_draft[dname] / t_target)
        m = fit.model(dname)
        if m.t_target > 0:
            models_fit[dname] = m
        row.update(t_call=m.t_call, t_target=m.t_target, t_draft=m.t_draft,
                   t_round=m.t_round, c_fit=m.c, r2=m.r2, warnings="; ".join(m.warnings))
        timing_rows.append(row)
    return pd.DataFrame(timing_rows), models_fit


def _leave_one_gamma_out(fitted, is_a, dmodels, gammas, temps, betas, runs, mnt) -> dict:
    """``{(draft, gamma, T): speedup}``: for each gamma, the timing model fitted without that
    gamma's runs predicts its speedup from the rounds the teacher-forced betas imply at that
    gamma (no run at that gamma used); empty with a single gamma."""
    loo = {}
    if len(gammas) > 1:
        for g in gammas:
            keep = ~(is_a & (fitted["gamma"] == g).to_numpy())
            fit_g = _fit_timing(fitted[keep], is_a[keep])
            for dname in dmodels:
                if dname not in fit_g.t_draft:
                    continue
                m = fit_g.model(dname)
                if not m.t_target > 0:
                    continue
                for t in temps:
                    loo[(dname, g, t)] = _loo_speedup(m, betas, runs, dname, g, t, mnt)
    return loo


def _summary(dmodels, gammas, temps, mnt, betas, alpha, runs, med, t_target, t_draft,
             models_fit, loo, loop="transformers") -> pd.DataFrame:
    """One row per (draft, temperature, gamma) of one loop: prediction beside measurement."""
    method = LOOPS[loop]
    summary_rows = []
    for dname in dmodels:
        c = t_draft[dname] / t_target
        for t in temps:
            bseq = list(betas[(betas["draft"] == dname) & (betas["temperature"] == t)]["betas"])
            a_row = alpha[(alpha["draft"] == dname) & (alpha["temperature"] == t)
                          & (alpha["task"] == "all")].iloc[0]
            for g in gammas:
                fr = runs[(runs["method"] == method) & (runs["draft"] == dname)
                          & (runs["gamma"] == g) & (runs["temperature"] == t)]
                fm = med[(med["method"] == method) & (med["draft"] == dname)
                         & (med["gamma"] == g) & (med["temperature"] == t)]
                summary_rows.append({"loop": loop, **_summary_row(
                    dname, g, t, c, mnt, a_row, bseq, fr, fm, med, runs, models_fit, loo)})
    summary = pd.DataFrame(summary_rows)
    summary["lossless"] = summary["lossless"].astype(object)
    return summary


def _summary_row(dname, g, t, c, mnt, a_row, bseq, fr, fm, med, runs, models_fit, loo) -> dict:
    """The summary row of one draft, gamma and temperature: alpha (teacher forcing and counted
    from the runs' rounds), tau measured / by Eq. 1 / from the betas, speedup measured / by
    Theorem 3.8 / from the betas / by the timing model / left one gamma out."""
    rounds = [acc.rounds_from_accept_lengths(al, g, mnt) for al in fr["accept_lengths"]]
    tau_b = acc.tau_from_betas(bseq, g, mnt)
    rate, rate_plain = _tok_per_s(fm), _base_rate(med, t)
    _, ci_lo, ci_hi = _interval(fm, med, t)
    tau_eq1 = theory.expected_tokens_per_step(a_row["alpha"], g)
    tm = models_fit.get(dname)
    return dict(
        draft=dname, gamma=g, temperature=t, alpha=a_row["alpha"],
        alpha_ci_low=a_row["ci_low"], alpha_ci_high=a_row["ci_high"],
        alpha_counted=acc.alpha_from_rounds(rounds),
        draft_acceptance_rate=acc.draft_acceptance_rate(rounds),
        tau_measured=float(fr["new_tokens"].sum() / fr["rounds"].sum()),
        tau_predicted=tau_eq1, tau_betas=tau_b,
        speedup_measured=rate / rate_plain,
        speedup_predicted=theory.walltime_speedup(a_row["alpha"], g, c),
        speedup_betas=acc.speedup_from_tau(tau_b, g, c),
        speedup_timing_model=_model_speedup(models_fit.get(dname), fr, runs, t),
        speedup_predicted_loo=loo.get((dname, g, t), np.nan),
        speedup_ci_low=ci_lo, speedup_ci_high=ci_hi,
        t_round=tm.t_round if tm is not None else np.nan,
        speedup_with_overhead=float(tm.speedup(tau_eq1, g)) if tm is not None else np.nan,
        c=c, tokens_per_s=rate, tokens_per_s_plain=rate_plain,
        target_forwards=int(fr["target_forwards"].sum()),
        draft_forwards=int(fr["draft_forwards"].sum()),
        lossless=_all_lossless(fr))


def _interval(fm, med, t, task=None):
    """:func:`speedup_interval` of the per-prompt medians ``fm`` against plain decoding's
    medians on the same prompts at temperature ``t``."""
    base = med[(med["method"] == "plain") & (med["temperature"] == t)]
    if task is not None:
        base = base[base["task"] == task]
    both = fm.merge(base, on="prompt", suffixes=("", "_base"))
    return speedup_interval(both["new_tokens"], both["wall_s"], both["new_tokens_base"],
                            both["wall_s_base"])


def _pld_table(runs, med, gammas, temps) -> pd.DataFrame:
    """Prompt lookup decoding per (gamma, temperature, task incl. ``"all"``): the prompts
    behind the row, tau, speedup over plain decoding on the same prompts, lossless."""
    pld_rows = []
    for t in temps:
        for g in gammas:
            fr = runs[(runs["method"] == "pld") & (runs["gamma"] == g)
                      & (runs["temperature"] == t)]
            fm = med[(med["method"] == "pld") & (med["gamma"] == g)
                     & (med["temperature"] == t)]
            for task in [*dict.fromkeys(fr["task"]), "all"]:
                sel = fr if task == "all" else fr[fr["task"] == task]
                selm = fm if task == "all" else fm[fm["task"] == task]
                _, lo, hi = _interval(selm, med, t, None if task == "all" else task)
                pld_rows.append(dict(
                    gamma=g, temperature=t, task=task, prompts=int(selm["prompt"].nunique()),
                    tau=float(sel["new_tokens"].sum() / sel["rounds"].sum()),
                    speedup=_tok_per_s(selm) / _base_rate(med, t, None if task == "all"
                                                          else task),
                    speedup_ci_low=lo, speedup_ci_high=hi,
                    lossless=_all_lossless(sel)))
    return pd.DataFrame(pld_rows)
