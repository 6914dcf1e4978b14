"""Teacher forcing and logged traffic: beta per position of each draft along a continuation (the
target's own, or a served response from a request log), alpha per task family with a
cluster-bootstrap CI over prompts, and the (draft x gamma) grid that logged traffic gives from
one forward pass per model (Leviathan et al., section 3.1 and Corollary 3.6).

The logits go through the processing ``generate`` applies
(:func:`specnb.measure.generate.generation_processing`); rounds, tau and speedup at any gamma
come from :mod:`specnb.acceptance` and :mod:`specnb.theory`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import transformers

from .. import _check, _json, theory
from .. import acceptance as acc
from .generate import Processing, _seed_for, forward_time, generate_continuation, \
    generation_processing
from .load import (_as_list, _load_models, _run_settings, _sync, _vocab_size, context_length,
                   model_contexts)
from .prompts import BUNDLED_LOGGED, _prompt_items, encode_prompts, encode_responses, \
    load_prompts

__all__ = ["teacher_forced_betas", "teacher_forced_betas_all", "alpha_by_teacher_forcing",
           "processing_note", "LoggedAlpha", "alpha_from_logged", "logged_responses"]

#: Processors that look at the scores only (not at the prefix): applied to all positions at once.
_PREFIX_FREE = frozenset({
    "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper", "MinPLogitsWarper",
    "TypicalLogitsWarper", "EpsilonLogitsWarper", "EtaLogitsWarper",
    "SuppressTokensLogitsProcessor", "InfNanRemoveLogitsProcessor",
})


def _process(procs: list, full, logits, p0: int):
    """Apply ``procs`` to ``logits`` (n, V) float32, row i predicting ``full[0, p0 + i]`` from
    the prefix ``full[:, :p0 + i]``, as generate applies them one step at a time."""
    if not procs:
        return logits
    n = logits.shape[0]
    full = full.to(logits.device)
    if all(type(p).__name__ in _PREFIX_FREE for p in procs):
        x = logits.clone()
        prefix = full[:, :p0].expand(n, -1)
        for p in procs:
            x = p(prefix, x)
        return x
    rows = []
    for i in range(n):
        x = logits[i:i + 1].clone()
        for p in procs:
            x = p(full[:, :p0 + i], x)
        rows.append(x)
    return torch.cat(rows)



@torch.inference_mode()
def teacher_forced_betas(target, draft, input_ids, continuation, temperature: float = 0.0, *,
                         processing: Processing | None = None):
    """Per-position acceptance beta of ``draft`` along the target's ``continuation``.

    One forward of each model over prompt + continuation (Leviathan et al., section 3.1):

    * T = 0: ``beta_i = 1`` when the draft's argmax at position i equals the target's token
      ``continuation[i]`` (its greedy choice), else 0;
    * T > 0: ``beta_i = sum_x min(p(x), q(x))`` with p, q the target's and the draft's
      next-token distributions (Corollary 3.6: the acceptance probability of speculative
      sampling given the prefix).

    With ``processing`` (:func:`generation_processing`) the logits go through the same
    processors generation and verification apply (the draft's list for the draft, the target's
    for the target; at T > 0 that list holds the temperature and top-k / top-p warpers); without
    it, p and q are the plain softmaxes of logits / T (argmax at T = 0).

    Parameters
    ----------
    target, draft : causal LMs sharing one vocabulary.
    input_ids : 1-D LongTensor, the prompt (P tokens).
    continuation : sequence of N >= 1 token ids (the target's output, or a logged response).
    temperature : float >= 0
    processing : Processing, optional

    Returns
    -------
    ndarray, shape (N,), float64 in [0, 1].

    Raises
    ------
    ValueError
        Empty continuation or negative temperature.
    """
    return teacher_forced_betas_all(target, {"d": draft}, input_ids, continuation, temperature,
                                    processing=processing)["d"]


@torch.inference_mode()
def teacher_forced_betas_all(target, drafts: dict, input_ids, continuation,
                             temperature: float = 0.0, *, processing: Processing | None = None):
    """:func:`teacher_forced_betas` for several drafts at once: at T > 0 the target's forward
    pass and distributions are computed once and shared; at T = 0 the target is not run at all
    (its tokens are the continuation). ``drafts`` maps labels to models; returns
    ``{label: betas}``."""
    t = float(_check.real("temperature", temperature, lo=0.0))
    cont = torch.as_tensor(list(continuation), dtype=torch.long)
    if cont.numel() == 0:
        raise ValueError("continuation must hold at least one token, got none")
    full = torch.cat([input_ids.cpu(), cont])[None, :]
    p0, n = input_ids.numel(), cont.numel()
    proc = processing if processing is not None and not processing.empty else None
    p = None
    if t > 0:
        dev = target.device
        lt = target(input_ids=full.to(dev), attention_mask=torch.ones_like(full).to(dev)
                    ).logits[0, p0 - 1:p0 - 1 + n].float()
        lt = _process(proc.target, full, lt, p0) if proc else lt / t
        p = torch.softmax(lt, dim=-1)
    out = {}
    for name, draft in drafts.items():
        dev = draft.device
        ld = draft(input_ids=full.to(dev), attention_mask=torch.ones_like(full).to(dev)
                   ).logits[0, p0 - 1:p0 - 1 + n].float()
        if proc:
            ld = _process(proc.draft, full, ld, p0)
        elif t > 0:
            ld = ld / t
        if t == 0:
            # the greedy continuation IS the target's (processed) argmax: no target forward
            beta = (ld.argmax(-1) == cont.to(ld.device)).double()
        else:
            q = torch.softmax(ld.to(p.device), dim=-1)
            beta = torch.minimum(p, q).sum(-1).double().clamp(0.0, 1.0)
        out[name] = beta.cpu().numpy()
    return out



def _teacher_forcing(tmodel, dmodels, prompts, ids, temps, mnt, seed, tick, processing=None):
    """Continuations, betas (processed as generation processes), alpha per task. Appends the
    processors used at each temperature to ``processing`` (a dict) when given."""
    conts, beta_rows = {}, []
    drafts = {name: dm for name, (dm, _) in dmodels.items()}
    for ti, t in enumerate(temps):
        for pi, p in enumerate(prompts):
            conts[(t, pi)] = generate_continuation(tmodel, ids[pi], max_new_tokens=mnt,
                                                   temperature=t, seed=_seed_for(seed, ti, pi))
            tick()
            for row in _beta_rows(tmodel, drafts, p, ids[pi], conts[(t, pi)], t, mnt,
                                  processing):
                beta_rows.append(row)
                tick()
    betas = pd.DataFrame(beta_rows)
    return conts, betas, _alpha_table(betas, ["draft", "temperature"], seed)


def _beta_rows(tmodel, drafts: dict, item: dict, prompt_ids, continuation, t: float,
               max_new_tokens: int, processing: dict | None) -> list[dict]:
    """One betas row per draft for one prompt and its continuation at temperature ``t``, the
    logits processed as ``generate`` processes them (:func:`generation_processing`, noted per
    temperature in ``processing`` when given). An empty continuation (the target ended at
    once: an end-of-sequence token first) gives rows with no position."""
    proc = generation_processing(tmodel, prompt_ids, temperature=t,
                                 max_new_tokens=max_new_tokens)
    if processing is not None:
        processing.setdefault(f"{t:g}", proc.describe())
    if len(continuation):
        bs = teacher_forced_betas_all(tmodel, drafts, prompt_ids, continuation, t,
                                      processing=proc)
    else:
        bs = {name: np.zeros(0) for name in drafts}
    return [dict(draft=dname, temperature=t, prompt=item["id"], task=item["task"],
                 positions=int(b.size), beta_sum=float(b.sum()), betas=b)
            for dname, b in bs.items()]


def _alpha_table(betas: pd.DataFrame, keys: list, seed: int) -> pd.DataFrame:
    """alpha per ``keys`` and task (and ``"all"``) with a cluster-bootstrap 95% CI over prompts;
    prompts with no position are left out (NaN when none is left)."""
    rows = []
    for key, g in betas.groupby(keys, sort=False):
        g = g[g["positions"] > 0]
        for task, gg in [*g.groupby("task", sort=False), ("all", g)]:
            if len(gg):
                est, lo, hi = acc.ratio_ci(gg["beta_sum"], gg["positions"], seed=seed)
            else:
                est = lo = hi = float("nan")
            rows.append(dict(zip(keys, key if isinstance(key, tuple) else (key,)), task=task,
                             alpha=est, ci_low=lo, ci_high=hi, prompts=len(gg),
                             positions=int(gg["positions"].sum())))
    return pd.DataFrame(rows)


def alpha_by_teacher_forcing(target=None, drafts=None, *, prompts=None, tasks=None,
                             per_task: int | None = None, temperatures=(0.0, 1.0),
                             max_new_tokens: int = 48, device: str = "auto", dtype: str = "auto",
                             seed: int = 0, models: dict | None = None):
    """Step 1 of :func:`measure` alone: alpha per draft, temperature and task family by teacher
    forcing (no timed runs). Arguments as in :func:`measure`.

    Returns
    -------
    (alpha, betas) : DataFrames as in :class:`Measurement` (``alpha`` with a 95% cluster-bootstrap
    CI over prompts).
    """
    temps = [float(t) for t in _check.real("temperatures", _as_list(temperatures, "temperatures"),
                                           lo=0.0)]
    mnt = _check.scalar_int("max_new_tokens", max_new_tokens, lo=1)
    seed = _check.scalar_int("seed", seed, lo=0)
    items, _ = _prompt_items(prompts, tasks, per_task)
    tmodel, ttok, dmodels, _, _ = _load_models(target, drafts, models, device, dtype)
    ids = encode_prompts(ttok, items, max_new_tokens=mnt, context=model_contexts(tmodel, dmodels))
    _, betas, alpha = _teacher_forcing(tmodel, dmodels, items, ids, temps, mnt, seed, lambda: None)
    return alpha, betas



def processing_note(config: dict) -> str:
    """One sentence saying which logits processing (from the target's ``generation_config``)
    a :class:`Measurement` or :class:`LoggedAlpha` applied, per temperature."""
    proc = config.get("processing") or {}
    if not any(proc.values()):
        return ("logits processing from the target's generation_config: none (plain argmax at "
                "T = 0, pure temperature sampling at T > 0)")
    return ("logits processing from the target's generation_config, applied identically in "
            "generation and teacher forcing (min length on the target only, as transformers' "
            "assistant drops it): " + "; ".join(f"T={t}: {', '.join(v) or 'none'}"
                                                for t, v in proc.items()))


@dataclass
class LoggedAlpha:
    """What :func:`alpha_from_logged` found (pandas DataFrames).

    * ``betas``: (draft, temperature, prompt): task, positions, sum of betas, the sequence.
    * ``alpha``: (draft, temperature, task incl. ``"all"``): alpha, 95% CI over prompts.
    * ``summary``: (draft, gamma, temperature): alpha with its CI; ``alpha_rounds`` (T = 0: the
      accepted / examined draft tokens of the exact greedy rounds the betas imply at this gamma,
      what counting assisted-decoding runs gives; NaN at T > 0, where runs draw their own
      path); ``tau_betas`` (expected tokens per target forward from the betas, no i.i.d.
      assumption); ``tau_predicted`` (Eq. 1); with timing, ``c`` (single-forward times),
      ``speedup_predicted`` (Theorem 3.8) and ``speedup_betas``.
    * ``config``: arguments, processing applied, seconds spent in the forward passes.
    """

    betas: pd.DataFrame
    alpha: pd.DataFrame
    summary: pd.DataFrame
    config: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """Aligned lists, one entry per summary row (``draft``, ``gamma``, ``temperature``,
        ``alpha``, ``alpha_ci_low``, ``alpha_ci_high``, ``alpha_rounds``, ``tau_betas``,
        ``tau_predicted``, ...), plus ``alpha_by_task`` records and ``config``."""
        obj = _json.columns(self.summary)
        obj["alpha_by_task"] = _json.records(self.alpha)
        obj["config"] = self.config
        return obj


def alpha_from_logged(target=None, drafts=None, *, prompts=None, tasks=None,
                      per_task: int | None = None, gammas=(1, 2, 3, 5), device: str = "auto",
                      dtype: str = "auto", chat_template="auto", timing: bool = True,
                      seed: int = 0, cpu_threads: int | None = 1,
                      models: dict | None = None) -> LoggedAlpha:
    """alpha of every draft, at every gamma, from logged traffic: one forward pass of each
    model over each logged prompt + response, no generation.

    How to measure alpha on real traffic: the request log already holds what the target served.
    Along that path (the served tokens), teacher forcing gives beta per position (Leviathan et
    al., section 3.1; Corollary 3.6): at T = 0 the served token is the target's greedy choice,
    so only the drafts run (beta = draft's processed argmax equals the served token); at T > 0
    one target pass gives p, shared by all drafts (beta = sum min(p, q)). The target's
    ``generation_config`` processing is applied as in generation (:func:`generation_processing`).
    Rounds at any gamma follow from the betas (:mod:`specnb.acceptance`), so the whole
    (draft x gamma) grid costs one pass per model. Logged responses at T = 0 that were not the
    target's own greedy output (another model, other processing) measure agreement with that
    text instead.

    Parameters
    ----------
    target, drafts : as in :func:`measure`.
    prompts : str or Path, optional
        JSON lines with ``task``, ``prompt``, ``response``, ``temperature`` (optionally
        ``response_ids``), see :func:`load_prompts`; defaults to :data:`BUNDLED_LOGGED`.
    tasks, per_task : see :func:`load_prompts` (all records by default).
    gammas : ints >= 1.
    device, dtype, chat_template : as in :func:`measure` (the prompt must be encoded as it was
        served: the chat template is applied when the tokenizer has one, unless False).
    timing : bool, also time single forwards for c and Theorem 3.8's speedup.
    seed : int >= 0 (bootstrap); cpu_threads : as in :func:`measure`; models : as in
        :func:`measure`.

    Returns
    -------
    LoggedAlpha

    Raises
    ------
    ValueError
        Bad gammas; a bad record (empty response, missing temperature, ...), found before any
        model loads; a response with ids outside the vocabulary or longer than a model's
        context; mismatched vocabularies.
    FileNotFoundError
        A missing model folder or file.
    """
    gam = [int(g) for g in _check.integer("gammas", _as_list(gammas, "gammas"), lo=1)]
    seed = _check.scalar_int("seed", seed, lo=0)
    src = Path(prompts) if prompts is not None else BUNDLED_LOGGED
    items = load_prompts(src, tasks=tasks, per_task=per_task, logged=True)  # before loading
    tmodel, ttok, dmodels, target_name, (dev, torch_dtype) = _load_models(target, drafts, models,
                                                                          device, dtype)
    contexts = model_contexts(tmodel, dmodels)
    ids = encode_prompts(ttok, items, max_new_tokens=0, context=contexts,
                         chat_template=chat_template)
    resp = encode_responses(ttok, items, ids, context=contexts, vocab_size=_vocab_size(tmodel))
    drafts_m = {name: dm for name, (dm, _) in dmodels.items()}
    processing = {}
    with _run_settings(dev, cpu_threads, "cpu_threads"):
        rows, pass_s = _logged_betas(tmodel, drafts_m, items, ids, resp, processing, dev)
        c = {}
        if timing:
            fwd = forward_time([tmodel] + list(drafts_m.values()), ids[0])
            c = {d: fwd[1 + i] / fwd[0] for i, d in enumerate(drafts_m)}
    betas = pd.DataFrame(rows)
    alpha = _alpha_table(betas, ["draft", "temperature"], seed)
    summary = _logged_summary(betas, alpha, gam, c if timing else None)
    config = dict(mode="logged", target=target_name, drafts=list(dmodels), prompts=str(src),
                  n_records=len(items), tasks=list(dict.fromkeys(i["task"] for i in items)),
                  temperatures=sorted({float(i["temperature"]) for i in items}), gammas=gam,
                  device=dev, dtype=str(torch_dtype).replace("torch.", ""),
                  chat_template=chat_template, processing=processing,
                  forward_pass_s=pass_s, positions=int(betas["positions"].sum()) // max(1, len(drafts_m)),
                  versions={"torch": torch.__version__, "transformers": transformers.__version__})
    return LoggedAlpha(betas=betas, alpha=alpha, summary=summary, config=config)


def _logged_betas(tmodel, drafts: dict, items, ids, resp, processing: dict, dev):
    """Betas rows of every draft along every logged response (one forward pass per model and
    record, at the record's temperature), and the seconds those passes took."""
    rows = []
    _sync(dev)
    t0 = time.perf_counter()
    for it, pids, rids in zip(items, ids, resp):
        t = float(it["temperature"])
        rows += _beta_rows(tmodel, drafts, it, pids, rids, t, rids.numel(), processing)
    _sync(dev)
    return rows, time.perf_counter() - t0


def _logged_summary(betas: pd.DataFrame, alpha: pd.DataFrame, gammas, c: dict | None
                    ) -> pd.DataFrame:
    """One row per (draft, temperature, gamma): alpha with its CI, alpha_rounds (T = 0),
    tau_betas, tau_predicted (Eq. 1); with ``c`` ({draft: c}), Theorem 3.8's speedup_predicted
    and speedup_betas."""
    summary = []
    for (dname, t), g in betas.groupby(["draft", "temperature"], sort=False):
        a = alpha[(alpha["draft"] == dname) & (alpha["temperature"] == t)
                  & (alpha["task"] == "all")].iloc[0]
        seqs = list(g["betas"])
        for gamma in gammas:
            row = dict(draft=dname, gamma=gamma, temperature=t, alpha=a["alpha"],
                       alpha_ci_low=a["ci_low"], alpha_ci_high=a["ci_high"],
                       alpha_rounds=(acc.alpha_from_rounds([acc.greedy_rounds(b, gamma)
                                                            for b in seqs])
                                     if t == 0 else np.nan),
                       tau_betas=acc.tau_from_betas(seqs, gamma),
                       tau_predicted=theory.expected_tokens_per_step(a["alpha"], gamma))
            if c is not None:
                row.update(c=c[dname],
                           speedup_predicted=theory.walltime_speedup(a["alpha"], gamma, c[dname]),
                           speedup_betas=acc.speedup_from_tau(row["tau_betas"], gamma, c[dname]))
            summary.append(row)
    return pd.DataFrame(summary)


def logged_responses(target, tokenizer, prompts, *, temperatures=(0.0, 1.0),
                     max_new_tokens: int = 64, seed: int = 0, chat_template="auto") -> list[dict]:
    """The target's own responses to ``prompts`` as a request log would hold them: one record
    per prompt and temperature, the prompt's fields plus ``response`` (decoded text),
    ``response_ids`` (the served ids), ``temperature``, ``max_new_tokens`` and ``seed``
    (greedy at T = 0, seeded pure temperature sampling otherwise, as :func:`measure`).

    Raises
    ------
    ValueError
        Bad temperatures or max_new_tokens; prompts too long for the context.
    """
    temps = [float(t) for t in _check.real("temperatures", _as_list(temperatures, "temperatures"),
                                           lo=0.0)]
    mnt = _check.scalar_int("max_new_tokens", max_new_tokens, lo=1)
    ids = encode_prompts(tokenizer, prompts, max_new_tokens=mnt, context=context_length(target),
                         chat_template=chat_template)
    out = []
    for ti, t in enumerate(temps):
        for pi, (p, x) in enumerate(zip(prompts, ids)):
            sd = _seed_for(seed, ti, pi)
            toks = generate_continuation(target, x, max_new_tokens=mnt, temperature=t, seed=sd)
            if not toks:
                continue
            out.append({**{k: v for k, v in p.items() if k not in ("reference",)},
                        "response": tokenizer.decode(toks), "response_ids": toks,
                        "temperature": t, "max_new_tokens": mnt, "seed": sd})
    return out
