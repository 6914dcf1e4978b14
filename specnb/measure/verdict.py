"""One verdict per measured method, from a measurement's own tables (pandas only, no torch):
the lines ``specnb measure`` ends with and notebook 08's verdict and Answer read, so that the
two never disagree with the numbers printed beside them.

A method pays when the 95 % interval of its best measured speedup (bootstrap over prompts,
:func:`specnb.measure.spread.speedup_interval`) lies above 1, does not pay when it lies below
1, and is "within noise" when it straddles 1; with one prompt (no interval) the speedup itself
decides and the line says so. Prompt lookup is judged on one task only when that task has at
least :data:`MIN_PROMPTS` prompts: a bootstrap over fewer (the default 2 per task) spans about
the prompts' own values, a range rather than a 95 % interval, and the best of every task and
gamma picked from such ranges would pass by chance; below it the verdict is the all-tasks row's
(every prompt), with the best task printed beside it as a range (trial 5 M4). Speedups print with :func:`~specnb.measure.spread.format_speedup`
(the decimals the interval supports), the one format of notebook 08's tables.

:func:`verdicts` -> list of :class:`Verdict`; :func:`verdict_text` (them in one paragraph,
for notebook 08's Answer); :func:`engine_like_loop` (which timed loop's
per-round overhead is closer to a serving engine's); :func:`loo_warning` (the leave-one-gamma-out
prediction with fewer than three gammas).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .spread import MIN_PROMPTS, format_speedup, is_range

__all__ = ["Verdict", "verdicts", "verdict_text", "engine_like_loop", "loo_warning", "PAYS", "LOSES",
           "NOISE"]

#: The three verdict words.
PAYS, LOSES, NOISE = "pays", "does not pay", "within noise"
#: What the prompt-lookup runs time: transformers' ``PromptLookupCandidateGenerator``
#: (``prompt_lookup_num_tokens = gamma``; ``max_matching_ngram_size`` 2 by default, n = 2 then
#: 1, the earliest match, no padded drafts), not vLLM's n-gram drafter (trial 9 T9-07).
PLD_LABEL = "transformers prompt lookup (n-grams up to 2)"
#: Where vLLM's own n-gram drafter is measured instead (vLLM 0.33 ``config/speculative.py``:
#: prompt_lookup_min / max 5 when neither is set; Model Runner V2's kernel takes the rightmost
#: match and drafts gamma tokens at every step, padded).
VLLM_NGRAM_POINTER = ("vLLM's own ngram drafter (vLLM 0.33: the Model Runner V2 kernel, "
                      "prompt_lookup 5/5 by default) drafts by other rules: `specnb replay` "
                      "on your request log gives its tau")


@dataclass(frozen=True)
class Verdict:
    """One method's verdict.

    Attributes: ``method`` (``"draft model"`` or ``"prompt lookup"``), ``loop``
    (``"transformers"`` or ``"reference"``; prompt lookup runs through transformers'
    ``generate``), ``name`` (the best draft; for prompt lookup the task judged, or ``"all"``
    when the verdict is over every prompt), ``gamma`` (its best gamma), ``where`` (the best
    setting: ``"draft-2x128 at gamma 3"``, ``"copy-edit prompts at gamma 5"``, or ``"all
    tasks (6 prompts) at gamma 3"``), ``temperature``, ``speedup``, ``ci_low``, ``ci_high``
    (NaN with one prompt), ``verdict`` (:data:`PAYS`, :data:`LOSES` or :data:`NOISE`),
    ``overall`` (prompt lookup: the other figure as text: over all tasks beside a task's
    verdict, or the best task's range beside the all-tasks verdict; else None) and ``line``
    (the one printed line; prompt lookup's names :data:`PLD_LABEL` and ends with
    :data:`VLLM_NGRAM_POINTER`).
    """

    method: str
    loop: str
    name: str
    gamma: int
    where: str
    temperature: float
    speedup: float
    ci_low: float
    ci_high: float
    verdict: str
    overall: str | None
    line: str


def _word(sp, lo, hi) -> str:
    if math.isfinite(lo) and math.isfinite(hi):
        return PAYS if lo > 1.0 else LOSES if hi < 1.0 else NOISE
    return PAYS if sp > 1.0 else LOSES


def _best(frame, col):
    return frame.loc[frame[col].idxmax()]


def verdicts(summary, pld=None, *, temperature=None) -> list[Verdict]:
    """One :class:`Verdict` per (method, loop) a measurement ran, at one temperature.

    Parameters
    ----------
    summary : a :class:`specnb.measure.Measurement`'s ``summary`` (columns ``loop``,
        ``draft``, ``gamma``, ``temperature``, ``speedup_measured``, ``speedup_ci_low``,
        ``speedup_ci_high``; ``loop`` optional, default transformers)
    pld : its ``pld`` table (``gamma``, ``temperature``, ``task`` incl. ``"all"``,
        ``speedup``, ``speedup_ci_low``, ``speedup_ci_high``), None or empty when prompt
        lookup was not run
    temperature : the temperature to judge at (default the lowest in ``summary``, greedy
        when it was run: what an output-preserving server setting is compared on)

    Returns
    -------
    list of Verdict: draft models per loop (the best draft and gamma of that loop), then
    prompt lookup (its best task, with the all-tasks figure beside it).

    Raises
    ------
    ValueError
        an empty summary, a missing column, or a temperature the summary does not hold.
    """
    need = {"draft", "gamma", "temperature", "speedup_measured", "speedup_ci_low",
            "speedup_ci_high"}
    if summary is None or len(summary) == 0:
        raise ValueError("summary must be a non-empty measurement summary")
    missing = need - set(summary.columns)
    if missing:
        raise ValueError(f"summary lacks the columns {sorted(missing)}")
    temps = sorted(float(t) for t in summary["temperature"].unique())
    t = temps[0] if temperature is None else float(temperature)
    if t not in temps:
        raise ValueError(f"temperature must be one the summary holds, {temps}, got {t:g}")
    at = summary[summary["temperature"] == t]
    loops = list(dict.fromkeys(at["loop"])) if "loop" in at.columns else ["transformers"]
    out = []
    for lp in loops:
        rows = at[at["loop"] == lp] if "loop" in at.columns else at
        r = _best(rows, "speedup_measured")
        sp, lo, hi = (float(r["speedup_measured"]), float(r["speedup_ci_low"]),
                      float(r["speedup_ci_high"]))
        word = _word(sp, lo, hi)
        where = f"{r['draft']} at gamma {int(r['gamma'])}"
        out.append(Verdict("draft model", lp, str(r["draft"]), int(r["gamma"]), where, t, sp, lo, hi, word, None,
                           f"verdict, draft models ({lp} loop, T = {t:g}): {word}: best "
                           f"{format_speedup(sp, lo, hi)}, {where}"))
    if pld is not None and len(pld):
        p = pld[pld["temperature"] == t]
        tasks = p[p["task"] != "all"]
        allr = p[p["task"] == "all"]
        if len(tasks):
            out.append(_pld_verdict(tasks, allr, t))
    return out


def _count(row) -> int | None:
    """The prompts behind a prompt-lookup row (None: a table without the ``prompts`` column)."""
    n = row.get("prompts")
    return None if n is None or n != n else int(n)


def _pld_verdict(tasks, allr, t) -> Verdict:
    """Prompt lookup's verdict: on its best task when that task has :data:`MIN_PROMPTS`
    prompts or more (or the table does not count them), else on the all-tasks row."""
    r = _best(tasks, "speedup")
    n_task = _count(r)
    fig = lambda x: format_speedup(x["speedup"], x["speedup_ci_low"], x["speedup_ci_high"])  # noqa: E731
    head = f"verdict, {PLD_LABEL} (T = {t:g}): "
    if len(allr) and n_task is not None and is_range(n_task):
        a = _best(allr, "speedup")
        n_all = _count(a)
        sp, lo, hi = float(a["speedup"]), float(a["speedup_ci_low"]), float(a["speedup_ci_high"])
        word = _word(sp, lo, hi)
        small = "" if n_all is None or not is_range(n_all) else ", a range, not a 95% interval"
        where = (f"all tasks ({n_all} prompts{small}) at gamma {int(a['gamma'])}"
                 if n_all is not None else f"all tasks at gamma {int(a['gamma'])}")
        other = (f"best task {r['task']} at gamma {int(r['gamma'])}: {fig(r)} on {n_task} "
                 f"prompt{'s' if n_task != 1 else ''}, a range, not a 95% interval (a task "
                 f"is judged alone from {MIN_PROMPTS} prompts)")
        return Verdict("prompt lookup", "transformers", "all", int(a["gamma"]), where, t, sp,
                       lo, hi, word, other,
                       f"{head}{word} over {where}: {fig(a)}; {other}. {VLLM_NGRAM_POINTER}")
    sp, lo, hi = float(r["speedup"]), float(r["speedup_ci_low"]), float(r["speedup_ci_high"])
    word = _word(sp, lo, hi)
    where = f"{r['task']} prompts at gamma {int(r['gamma'])}"
    overall = None
    if len(allr):
        a = _best(allr, "speedup")
        overall = f"{fig(a)} over all tasks at gamma {int(a['gamma'])}"
    return Verdict("prompt lookup", "transformers", str(r["task"]), int(r["gamma"]), where, t,
                   sp, lo, hi, word, overall,
                   f"{head}{word} on {where}: {format_speedup(sp, lo, hi)}"
                   + (f"; {overall}" if overall else "") + f". {VLLM_NGRAM_POINTER}")


def engine_like_loop(timing, engine_ratio: float | None = None):
    """The timed loop whose per-round host overhead, as a share of a target forward
    (``t_round / t_target`` of the fitted timing model), is closest to a serving engine's:
    by default SpecDecode-Bench's fit of vLLM v0.10.1 on an H100
    (``overhead_constant_per_step / target_c_fixed`` in
    ``data/specdecode_bench_predictor.csv``). Its speedup is the one to read as a forecast
    for a lean engine loop.

    Parameters
    ----------
    timing : a measurement's ``timing`` table (columns ``loop``, ``t_round``, ``t_target``)
    engine_ratio : float > 0, or None for vLLM's

    Returns
    -------
    (loop or None, {loop: ratio}, engine_ratio): None when no loop's ratio is finite.
    """
    if engine_ratio is None:
        from .. import data

        vc = data.load("specdecode_bench_predictor").set_index("constant")["value"]
        engine_ratio = float(vc["overhead_constant_per_step"] / vc["target_c_fixed"])
    if "loop" in timing.columns:
        per = timing.groupby("loop", sort=False)[["t_round", "t_target"]].first()
    else:
        per = timing[["t_round", "t_target"]].iloc[:1].set_axis(["transformers"])
    ratio = {str(k): float(v) for k, v in (per["t_round"] / per["t_target"]).items()}
    finite = {k: v for k, v in ratio.items() if math.isfinite(v)}
    best = min(finite, key=lambda k: abs(finite[k] - engine_ratio)) if finite else None
    return best, ratio, float(engine_ratio)


def loo_warning(summary) -> str | None:
    """The warning for ``speedup_predicted_loo`` from fewer than three gammas, else None:
    with two gammas the timing model fitted without one has a single gamma left, so it cannot
    separate the per-round overhead from the draft forward (docs/measure.md); with one there
    is no leave-one-out figure at all."""
    n = int(summary["gamma"].nunique())
    if n >= 3:
        return None
    if n == 2:
        return ("speedup_predicted_loo from 2 gammas: each fit without one gamma sees a single "
                "gamma, so it cannot separate the per-round overhead from the draft forward; "
                "run three or more gammas for a usable prediction")
    return "speedup_predicted_loo needs two or more gammas (three for a usable prediction)"


def verdict_text(found, trusted_loop: str | None = None) -> str:
    """:func:`verdicts` in sentences: every method the run measured with its figure, the loop
    to trust (``trusted_loop``, :func:`engine_like_loop`) named with its figure, and what
    follows: the draft model that pays in the trusted loop (or the only loop), n-gram drafting
    where transformers' prompt lookup pays (with :data:`VLLM_NGRAM_POINTER`: vLLM's drafter is
    another), else not to turn speculation on here.

    Raises
    ------
    ValueError
        no verdicts, or a trusted_loop none of them ran.
    """
    if not found:
        raise ValueError("verdict_text needs at least one Verdict")
    drafts = [v for v in found if v.method == "draft model"]
    loops = [v.loop for v in drafts]
    if trusted_loop is not None and trusted_loop not in loops:
        raise ValueError(f"trusted_loop must be one of the loops run, {loops}, got "
                         f"{trusted_loop!r}")
    fig = lambda v: format_speedup(v.speedup, v.ci_low, v.ci_high)  # noqa: E731
    t = found[0].temperature
    verb = {PAYS: "pays", LOSES: "does not pay", NOISE: "is within noise of plain decoding"}
    parts = [f"the best draft model {verb[v.verdict]} in the {v.loop} loop ({fig(v)}, "
             f"{v.where})" for v in drafts]
    pld = next((v for v in found if v.method == "prompt lookup"), None)
    if pld is not None:
        on = (f"over {pld.where.rsplit(' at gamma', 1)[0]}" if pld.name == "all"
              else f"on {pld.name} prompts")
        parts.append(f"{PLD_LABEL} {verb[pld.verdict]} {on} ({fig(pld)} at gamma "
                     f"{pld.gamma}" + (f"; {pld.overall}" if pld.overall else "") + ")")
    text = f"At T = {t:g}: " + "; ".join(parts) + "."
    trusted = next((v for v in drafts if v.loop == trusted_loop), None) if trusted_loop else (
        drafts[0] if len(drafts) == 1 else None)
    if trusted is not None and len(drafts) > 1:
        text += (f" The {trusted.loop} loop's per-round overhead is the closer to a serving "
                 f"engine's, so its {fig(trusted)} is the forecast for a lean engine loop on "
                 "these models.")
    todo = []
    if trusted is not None and trusted.verdict == PAYS:
        todo.append(f"the draft model {trusted.name} at gamma {trusted.gamma}")
    if pld is not None and pld.verdict == PAYS:
        todo.append(f"n-gram drafting (ngram) at gamma {pld.gamma}" +
                    ("" if pld.name == "all" else f" for traffic like the {pld.name} prompts"))
    if todo:
        text += " Turn on " + ", or ".join(todo) + "; measure on your own hardware first."
        if pld is not None and pld.verdict == PAYS:
            text += f" The n-gram figure is {PLD_LABEL}'s; {VLLM_NGRAM_POINTER}."
    else:
        text += " Nothing measured here pays beyond noise: do not turn it on on this machine."
    return text
