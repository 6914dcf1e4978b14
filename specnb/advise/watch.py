"""Every verdict on measured acceptance, with every threshold derived or sourced.

:func:`gamma1_verdict` judges a gamma-1 run by Leviathan et al.'s Corollary 3.9 instead of a
fixed acceptance-rate bar: at gamma 1 the mean acceptance length is tau = 1 + alpha exactly, and
Theorem 3.8 gives a speedup of (1 + alpha) / (1 + c), above 1 exactly when alpha > c.
:func:`theorem_advice` states Theorem 3.8 at a run's gamma and at the best gamma, as what
Leviathan et al.'s own Table 4 shows it to be: measurements land on either side of it.
:func:`acceptance_length_advice` is the article's step-3 rule made to depend on gamma;
:func:`acceptance_advice` reads a window's :class:`specnb.vllm.AcceptanceStats` into coded
:class:`~specnb.notes.Note` s (``specnb metrics`` prints them);
:func:`specnb.advise.compare_bench` uses :func:`acceptance_length_advice` for its cautions.
:func:`watch_table` is the after-launch watch list (:data:`WATCH`: Corollary 3.9's rule in its
first row, TTFT stated as something to explain rather than a known cause, and vLLM's
per-request acceptance metrics for the article's checklist step 3 in its last) as a DataFrame.

Note codes of :func:`acceptance_advice`: ``no-accepted-tokens``, ``window-size-unknown``,
``thin-window``, ``thin-window-drafts-unknown``, ``tau-needs-k``, the
:func:`acceptance_length_advice` codes (``acceptance-length-ok``, ``acceptance-length-shrink``,
``gamma1-off``, ``gamma1-grow``, ``gamma1-ok``), ``shorter-draft-pays``,
``no-draft-length-pays``, ``every-position-pays``, ``theorem-at-alpha``.
"""

from __future__ import annotations

import math

import numpy as np

from ..vllm import PROMQL
from .evidence import (EVIDENCE_HALF_WIDTH, MIN_DRAFTS, drafts_unknown_sentence,
                       theorem_sentence, thin_window)
from ..notes import Note

__all__ = ["MIN_ACCEPTANCE_LENGTH", "TAIL_DRAFT_COST", "WATCH", "gamma1_verdict",
           "theorem_advice", "acceptance_length_advice", "best_draft_length",
           "acceptance_advice", "watch_table"]

#: The article's threshold (checklist step 3): below 2 tokens per verification, shrink gamma
#: or change method. It applies from gamma = 2 on: at gamma = 1, tau = 1 + acceptance rate
#: can never exceed 2 and gamma cannot go lower, so there Leviathan et al.'s Corollary 3.9
#: decides (gamma 1 pays while the acceptance rate is above c; see
#: :func:`gamma1_verdict` and :func:`acceptance_length_advice`).
MIN_ACCEPTANCE_LENGTH = 2.0
#: Draft/target cost per forward assumed when none is measured, by the per-position tail rule
#: and the gamma-1 verdict (the advice says so and asks for the measured c): Leviathan et al.
#: (arXiv 2211.17192 v2), Definition 3.7: c "was always less than 0.05" in their experiments.
#: A costlier draft makes the best draft length shorter still.
TAIL_DRAFT_COST = 0.05

#: What to watch after launch: (what, where, act when). Sources: the article's checklist,
#: vLLM's metrics (``vllm/v1/spec_decode/metrics.py``), ``vllm bench serve`` keys, and vLLM's
#: per-request acceptance metrics (docs/features/speculative_decoding/acceptance_metrics.md @
#: 02cf515f; ``../shared/reference/vllm.md`` section 3.4). At gamma 1 the rule is Leviathan et
#: al.'s Corollary 3.9 (:func:`gamma1_verdict`), not a fixed acceptance rate.
WATCH = (
    ("mean acceptance length", PROMQL["mean acceptance length"],
     f"below {MIN_ACCEPTANCE_LENGTH:g} at gamma >= 2: shrink num_speculative_tokens or change "
     "method (the article's checklist step 3). At gamma 1, tau = 1 + acceptance rate <= 2 "
     "always: it pays while the acceptance rate is above c (Corollary 3.9: "
     "(1 + alpha) / (1 + c) > 1); gamma1_verdict says whether a longer draft would pay"),
    ("per-position acceptance", PROMQL["per-position acceptance"],
     "the last positions near 0: those draft tokens are wasted work; lower gamma"),
    ("acceptance rate", PROMQL["acceptance rate"],
     "a drop after a traffic change (e.g. more chat, less code): retune"),
    ("TPOT p50/p99 (latency goal)", "vllm bench serve: median_tpot_ms, p99_tpot_ms",
     "no better than with speculation off: turn it off (judge TPOT, not ITL)"),
    ("output tokens/s at peak (throughput goal)", "vllm bench serve: output_throughput",
     "below the off run at the peak batch: turn it off or use dynamic speculation"),
    ("TTFT p99", "vllm bench serve: p99_ttft_ms",
     "a rise: find out why before blaming the draft (drafting in the prefill step, more "
     "queueing at the same load, different prompts)"),
    ("per-request acceptance",
     "--per-request-spec-decode-metrics summary|detailed: metrics.speculative_decoding in each "
     "response (mean_acceptance_length, draft_acceptance_rate; n == 1 only)",
     "some kinds of request accept far less than the average: the mean hides them, so look "
     "before changing gamma for everyone"),
)



def _gamma(g: int) -> str:
    """'gamma g', saying so when g is :func:`specnb.theory.optimal_gamma`'s search limit (64):
    near alpha 1 the optimum of Theorem 3.8 may lie beyond it (at alpha 1 it always does)."""
    from inspect import signature

    from ..theory import optimal_gamma

    limit = signature(optimal_gamma).parameters["gamma_max"].default
    return (f"gamma {g} (optimal_gamma's search limit; the optimum may lie beyond it)"
            if g >= limit else f"gamma {g}")


def gamma1_verdict(acceptance_rate: float, c: float) -> tuple[str, str]:
    """Judge a ``num_speculative_tokens`` = 1 run: ``(action, sentence)``.

    At gamma 1, tau = 1 + alpha (one draft token, accepted with probability alpha), so the
    article's "tau below 2" rule cannot apply. Theorem 3.8 at gamma 1 gives (1 + alpha) / (1 + c);
    Corollary 3.9: it beats plain decoding exactly when alpha > c.

    * ``"off"``: alpha <= c, no gain at any gamma: change method or turn speculation off;
    * ``"grow"``: alpha > c and :func:`specnb.theory.optimal_gamma` is above 1: try that gamma
      and measure;
    * ``"ok"``: alpha > c and gamma 1 is already the best.

    Parameters
    ----------
    acceptance_rate : float in [0, 1]
        Accepted / draft tokens of the run (at gamma 1 this is alpha).
    c : float >= 0
        Draft / target time per forward (Definition 3.7).

    Raises
    ------
    ValueError, TypeError
        a value outside its range, NaN, infinity, or not a single number.
    Source: Leviathan, Kalman, Matias, arXiv 2211.17192 v2, Theorem 3.8 and Corollary 3.9.
    """
    from .. import _check
    from ..theory import optimal_gamma, walltime_speedup

    a = _check.scalar_real("acceptance_rate", acceptance_rate, lo=0.0, hi=1.0)
    c = _check.scalar_real("c", c, lo=0.0)
    now = walltime_speedup(a, 1, c)
    head = (f"gamma 1, acceptance rate {100 * a:.1f}%, c {c:g}: Theorem 3.8 gives "
            f"(1 + {a:.3f}) / (1 + {c:g}) = {now:.2f}x")
    if a <= c:
        return "off", (f"{head}; alpha <= c, so no gamma pays (Corollary 3.9): change method or "
                       "turn speculation off")
    g, best = optimal_gamma(a, c)
    if g > 1:
        return "grow", (f"{head}; alpha > c, so it pays (Corollary 3.9), and {_gamma(g)} would "
                        f"give {best:.2f}x by Theorem 3.8 if acceptance stayed i.i.d. (later "
                        "positions usually accept less): try a larger num_speculative_tokens "
                        "and measure")
    return "ok", f"{head}; alpha > c and gamma 1 is already the best by Theorem 3.8"


def theorem_advice(alpha: float, gamma: int, c: float) -> str:
    """Theorem 3.8 at a run's implied alpha: its speedup at ``gamma`` and at the best gamma,
    followed by :func:`specnb.advise.evidence.theorem_sentence` (Leviathan et al.'s Table 4:
    measured speedups land on either side of the theorem, so it is a guide, not a bound).

    Parameters
    ----------
    alpha : float in [0, 1]
        The acceptance rate implied by the run (Eq. 1 inverted at gamma).
    gamma : int >= 1
        The run's ``num_speculative_tokens``.
    c : float >= 0
        Draft / target time per forward (Definition 3.7).

    Returns
    -------
    str: one sentence; "turn it off" when no gamma beats plain decoding (alpha <= c,
    Corollary 3.9).

    Raises
    ------
    ValueError, TypeError
        a value outside its range, NaN, infinity, or not a single number.
    Source: Leviathan, Kalman, Matias, arXiv 2211.17192 v2, Theorem 3.8, Corollary 3.9, Table 4.
    """
    from .. import _check
    from ..theory import optimal_gamma, walltime_speedup

    a = _check.scalar_real("alpha", alpha, lo=0.0, hi=1.0)
    k = _check.scalar_int("gamma", gamma, lo=1)
    c = _check.scalar_real("c", c, lo=0.0)
    g, best = optimal_gamma(a, c)
    head = (f"at the implied alpha {a:.3f} and c {c:g}, Theorem 3.8 gives "
            f"{walltime_speedup(a, k, c):.2f}x at gamma {k}")
    if g == 0:
        return f"{head}; no gamma beats plain decoding (alpha <= c, Corollary 3.9): turn it off"
    if g == k:
        return f"{head}, already the best gamma; {theorem_sentence()}"
    return f"{head} and {best:.2f}x at {_gamma(g)}; {theorem_sentence()}"


def watch_table():
    """The after-launch watch list, :data:`WATCH`, as a DataFrame with columns what, where,
    act when (at gamma 1 the rule is :func:`gamma1_verdict`'s)."""
    import pandas as pd

    return pd.DataFrame(list(WATCH), columns=["what", "where", "act when"])


def acceptance_length_advice(tau: float, gamma: int | None = None,
                             acceptance_rate: float | None = None,
                             c: float | None = None) -> tuple[str, str]:
    """The article's step-3 rule made to depend on gamma: ``(action, sentence)``.

    * gamma >= 2 (or unknown): tau below :data:`MIN_ACCEPTANCE_LENGTH` -> ``"shrink"`` (shrink
      num_speculative_tokens or change method), else ``"ok"``;
    * gamma = 1: tau = 1 + acceptance rate <= 2 always and gamma cannot go lower, so the
      article's rule cannot apply; Leviathan et al.'s Corollary 3.9 decides, through
      :func:`gamma1_verdict`: ``"off"`` (acceptance rate <= c: no gamma
      pays; change method or turn speculation off), ``"grow"`` (it pays and a longer draft
      would pay more by Theorem 3.8: try it and measure) or ``"ok"`` (gamma 1 is the best).
      Without a measured ``c`` the verdict assumes :data:`TAIL_DRAFT_COST` (0.05, Leviathan et
      al. Definition 3.7) and says so.

    Parameters
    ----------
    tau : mean acceptance length (tokens per verification, bonus token included).
    gamma : num_speculative_tokens, or None when unknown.
    acceptance_rate : accepted / draft tokens (fraction); at gamma 1 it defaults to tau - 1.
    c : draft / target cost per forward (>= 0), used at gamma 1; None = not measured.

    Raises
    ------
    ValueError, TypeError
        at gamma 1: an acceptance rate outside [0, 1] or a negative ``c`` (as
        :func:`gamma1_verdict`).
    """
    if gamma == 1:
        rate = tau - 1.0 if acceptance_rate is None else acceptance_rate
        action, sentence = gamma1_verdict(rate, TAIL_DRAFT_COST if c is None else c)
        if c is None:
            sentence += (f" (c not measured: {TAIL_DRAFT_COST:g} assumed, Leviathan et al. "
                         "Definition 3.7, which says c was below 0.05 in its runs; its Table 4 "
                         "has 0.11 for T5-large; pass the measured c)")
        return action, (f"{sentence}; at gamma 1, tau = 1 + acceptance rate <= 2, so the "
                        f"article's 'tau < {MIN_ACCEPTANCE_LENGTH:g}' rule does not apply")
    if tau < MIN_ACCEPTANCE_LENGTH:
        at = f" at gamma {gamma}" if gamma is not None else ""
        return "shrink", (f"mean acceptance length {tau:.2f} < {MIN_ACCEPTANCE_LENGTH:g}{at}: "
                          "shrink num_speculative_tokens or change method")
    most = f" (at most {gamma + 1} at gamma {gamma})" if gamma is not None else ""
    return "ok", (f"mean acceptance length {tau:.2f} >= {MIN_ACCEPTANCE_LENGTH:g}: each "
                  f"verification fixes {tau:.2f} tokens on average{most}")


def best_draft_length(per_position, c: float = TAIL_DRAFT_COST) -> tuple[int, float]:
    """The draft length that pays best for measured per-position acceptance: (k, speedup).

    k maximises tau(k) / (1 + k c) over k = 0 .. len(per_position), with tau(k) = 1 + the sum
    of the first k per-position rates: Leviathan et al.'s cost model (arXiv 2211.17192 v2,
    Theorem 3.8: k draft forwards at c each plus one target forward per step) with the measured
    rates in place of the i.i.d. alpha; the AL(k) / time form vLLM's dynamic-SD manager uses.
    Acceptance is prefix-based, so the rate at a position does not depend on later positions
    and shortening the draft keeps the earlier rates. Ties go to the shorter draft.

    Parameters
    ----------
    per_position : sequence of fractions in [0, 1] (position 0 first).
    c : draft/target cost per forward, >= 0 (default :data:`TAIL_DRAFT_COST`).

    Returns
    -------
    (k, speedup): the best k (0 = speculation does not pay) and tau(k) / (1 + k c), an upper
    bound on the walltime gain (no batching or verification overhead).

    Raises
    ------
    ValueError
        a rate outside [0, 1] or NaN; c negative or NaN.
    """
    from .. import _check
    from ..acceptance import speedup_from_tau
    from ..theory import tau_from_rates

    rates = [float(r) for r in _check.real("per_position", list(per_position), lo=0.0, hi=1.0)]
    c = _check.scalar_real("c", c, lo=0.0)
    if not rates:
        return 0, 1.0
    ks = np.arange(len(rates) + 1)
    values = speedup_from_tau(tau_from_rates(rates, ks), ks, c)
    best_k, best = 0, 1.0
    for k in range(1, len(rates) + 1):
        if values[k] > best + 1e-12:
            best_k, best = k, float(values[k])
    return best_k, best



def acceptance_advice(stats, c: float | None = None) -> list[Note]:
    """What these numbers say to do, most important first.

    1. No accepted token at all -> a misconfiguration (wrong method for the checkpoint, a
       draft with another tokenizer, a dummy or random-weight draft), not a tuning matter;
       nothing else is advised.
    2. A thin window (:func:`~specnb.advise.evidence.thin_window`: fewer than
       :data:`MIN_DRAFTS` drafts) -> it cannot support a verdict; the 95% interval on the
       acceptance rate is given. With draft tokens but no draft count (v0.8 lines, no
       ``-k``): the drafts the tokens make at k = 1-:data:`~specnb.advise.evidence.MAX_PLAUSIBLE_K`
       and the largest k that would reach MIN_DRAFTS.
    3. :func:`acceptance_length_advice` at this gamma: the article's "tau below 2: shrink
       gamma" from gamma 2 on; at gamma 1 (where tau <= 2 always) Corollary 3.9 through
       :func:`gamma1_verdict`: gamma 1 pays while the acceptance rate is
       above ``c`` (:data:`TAIL_DRAFT_COST` assumed, and said, without ``c``). Without tau
       (no draft count, no gamma): say that tau needs k.
    4. Per-position rates: when a shorter draft pays better, name it
       (:func:`best_draft_length` with ``c``, else :data:`TAIL_DRAFT_COST`), with the
       positions that do not pay and the rule.
    5. With ``c`` and gamma >= 2: Theorem 3.8 at this gamma and at the gamma that
       maximises it at the implied alpha (:func:`theorem_advice`), with
       what Leviathan et al.'s Table 4 shows of the theorem against measurement (either
       side of it). At gamma 1 the verdict of item 3 already names the best gamma.

    Parameters
    ----------
    stats : AcceptanceStats
        From :func:`specnb.vllm.acceptance_stats` or :func:`specnb.vllm.read_acceptance`.
    c : float or None
        Draft/target cost per forward (>= 0).

    Returns
    -------
    list of :class:`~specnb.notes.Note`, codes as in the module docstring.

    Raises
    ------
    ValueError, TypeError
        ``c`` negative, NaN, infinite or not a single number.
    """
    from .. import _check

    if c is not None:
        c = _check.scalar_real("c", c, lo=0.0)
    out = _misconfigured(stats.counts) + _window_notes(stats)
    if stats.counts.accepted_tokens == 0:
        return out
    tau, k = stats.mean_acceptance_length, stats.num_speculative_tokens
    if tau != tau:
        out.append(Note("tau-needs-k", f"acceptance rate {100 * stats.acceptance_rate:.1f}%; "
                        "the mean acceptance length tau needs the number of drafts, which this "
                        "input does not print: pass num_speculative_tokens (-k) to get drafts = "
                        "draft tokens / k and tau"))
    else:
        action, sentence = acceptance_length_advice(tau, k, stats.acceptance_rate, c)
        out.append(Note(f"gamma1-{action}" if k == 1 else f"acceptance-length-{action}",
                        sentence))
    if stats.per_position and k:
        out.append(_tail_note(stats.per_position, k, c))
    if c is not None and stats.alpha is not None and k and k > 1:
        out.append(Note("theorem-at-alpha", theorem_advice(stats.alpha, k, c)))
    return out


def _misconfigured(counts) -> list[Note]:
    """``no-accepted-tokens`` when nothing was accepted: a misconfiguration, not tuning."""
    if counts.accepted_tokens != 0:
        return []
    # V0 counts accepted = emitted - steps (prefix tokens); its own "accepted" count also
    # holds tokens after a rejection, so it can print 1 where no prefix was kept
    v0 = counts.source.startswith("log (V0")
    what = (f"no draft token was accepted as a prefix ({counts.draft_tokens:,.0f} drafted; V0 "
            "may still print a few accepted tokens after a rejection, which produce no output)"
            if v0 else f"no draft token was accepted ({counts.draft_tokens:,.0f} drafted)")
    return [Note("no-accepted-tokens", f"{what}: that points to a misconfiguration, not to "
                 "tuning -- a method that does not match the draft checkpoint (e.g. an EAGLE "
                 "head run as draft_model; check it with `specnb config check`), a draft with "
                 "another tokenizer or vocabulary, or a dummy / random-weight draft")]


def _window_notes(stats) -> list[Note]:
    """``thin-window``, ``thin-window-drafts-unknown`` or ``window-size-unknown`` when the
    window cannot support a verdict (:func:`~specnb.advise.evidence.thin_window`)."""
    if not thin_window(stats):
        return []
    counts, ci = stats.counts, stats.acceptance_rate_ci
    if counts.drafts != counts.drafts and counts.draft_tokens != counts.draft_tokens:
        return [Note("window-size-unknown", "this input prints no counts, so the window's size "
                     "is unknown and it cannot support a verdict; read a log with counts or "
                     "scrape /metrics")]
    interval = (f"; acceptance rate {100 * stats.acceptance_rate:.1f}%, 95% CI "
                f"{100 * ci[0]:.1f}-{100 * ci[1]:.1f}% (Wilson, tokens taken as "
                "independent; the real interval is wider)" if ci else "")
    need = (f"{MIN_DRAFTS}, the drafts for a 95% interval of "
            f"+-{100 * EVIDENCE_HALF_WIDTH:.0f} points on the acceptance rate")
    if counts.drafts == counts.drafts:
        return [Note("thin-window", f"only {counts.drafts:,.0f} drafts in this window "
                     f"(< {need}): it cannot support a verdict{interval}; measure a longer "
                     "window")]
    k_ok = math.floor(counts.draft_tokens / MIN_DRAFTS)
    return [Note("thin-window-drafts-unknown",
                 f"{drafts_unknown_sentence(counts.draft_tokens)}; a verdict needs {need}, "
                 "which these tokens reach " + (f"only if k <= {k_ok}" if k_ok >= 1 else
                                                "at no k")
                 + f"; without k the window cannot support a verdict{interval}; pass -k for "
                 "the draft count, or measure a longer window")]


def _tail_note(per_position, k, c) -> Note:
    """``shorter-draft-pays``, ``no-draft-length-pays`` or ``every-position-pays``: the
    per-position rule (:func:`best_draft_length`, c = :data:`TAIL_DRAFT_COST` unless given)."""
    cost = TAIL_DRAFT_COST if c is None else c
    best, gain = best_draft_length(per_position, cost)
    if best >= len(per_position):
        return Note("every-position-pays", f"the last draft position is accepted in "
                    f"{100 * per_position[-1]:.1f}% of steps; every position pays at c = "
                    f"{cost:g}")
    tail = per_position[best:]
    where = (f"positions {best + 1}-{len(per_position)}" if len(tail) > 1
             else f"position {best + 1}")
    rates = ", ".join(f"{100 * r:.1f}%" for r in tail)
    src = ("measured c" if c is not None else
           "c = 0.05, Leviathan et al. Definition 3.7's bound; pass your c")
    what = ("no draft length pays: turn speculation off or change method" if best == 0
            else f"consider num_speculative_tokens = {best} (now {k})")
    return Note("no-draft-length-pays" if best == 0 else "shorter-draft-pays",
                f"draft {where} of {len(per_position)} are accepted in only {rates} of steps: "
                f"{what}. Rule: the k that maximises (1 + sum of the first k per-position "
                f"rates) / (1 + k c) (Leviathan et al. Theorem 3.8's cost model with measured "
                f"per-position rates; {src}), {gain:.2f}x at k = {best}")
