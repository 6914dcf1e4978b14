"""What to watch after launch, with every threshold derived or sourced.

:func:`gamma1_verdict` judges a gamma-1 run by Leviathan et al.'s Corollary 3.9 instead of a
fixed acceptance-rate bar: at gamma 1 the mean acceptance length is tau = 1 + alpha exactly, and
Theorem 3.8 gives a speedup of (1 + alpha) / (1 + c), above 1 exactly when alpha > c.
:func:`watch_table` is the after-launch watch list (:data:`specnb.vllm.metrics.WATCH`) with
that rule in its first row, TTFT stated as something to explain rather than a known cause, and
vLLM's per-request acceptance metrics (the article's checklist step 3) added. :func:`advice`
reads an :class:`~specnb.vllm.metrics.AcceptanceStats` the same way, and states Theorem 3.8 as
what Leviathan et al.'s own Table 4 shows it to be: measurements land on either side of it.
"""

from __future__ import annotations

__all__ = ["gamma1_verdict", "watch_table", "advice"]

#: vLLM's per-request acceptance metrics (docs/features/speculative_decoding/
#: acceptance_metrics.md @ 02cf515f; ../shared/reference/vllm.md section 3.4).
PER_REQUEST = ("per-request acceptance",
               "--per-request-spec-decode-metrics summary|detailed: "
               "metrics.speculative_decoding in each response (mean_acceptance_length, "
               "draft_acceptance_rate; n == 1 only)",
               "some kinds of request accept far less than the average: the mean hides them, "
               "so look before changing gamma for everyone")


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
        return "grow", (f"{head}; alpha > c, so it pays (Corollary 3.9), and gamma {g} would "
                        f"give {best:.2f}x by Theorem 3.8 if acceptance stayed i.i.d. (later "
                        "positions usually accept less): try a larger num_speculative_tokens "
                        "and measure")
    return "ok", f"{head}; alpha > c and gamma 1 is already the best by Theorem 3.8"


def watch_table():
    """The after-launch watch list as a DataFrame (what, where, act when).

    Rows of :data:`specnb.vllm.metrics.WATCH`, with two rows restated: the mean acceptance
    length (at gamma 1 judged by :func:`gamma1_verdict`, not by a fixed rate) and TTFT (a rise
    to explain, not a known cause); then :data:`PER_REQUEST`.
    """
    import pandas as pd

    from .metrics import MIN_ACCEPTANCE_LENGTH, WATCH

    restated = {
        "mean acceptance length": (
            f"below {MIN_ACCEPTANCE_LENGTH:g} at gamma >= 2: shrink num_speculative_tokens or "
            "change method (the article's checklist step 3). At gamma 1, tau = 1 + acceptance "
            "rate <= 2 always: it pays while the acceptance rate is above c (Corollary 3.9: "
            "(1 + alpha) / (1 + c) > 1); gamma1_verdict says whether a longer draft would pay"),
        "TTFT p99": ("a rise: find out why before blaming the draft (drafting in the prefill "
                     "step, more queueing at the same load, different prompts)"),
    }
    rows = [(what, where, restated.get(what, act)) for what, where, act in WATCH]
    rows.append(PER_REQUEST)
    return pd.DataFrame(rows, columns=["what", "where", "act when"])


def advice(stats, c: float | None = None) -> list[str]:
    """What measured acceptance says to do: :meth:`AcceptanceStats.advice`, with two lines
    restated so that each rule has its source.

    * gamma 1 with ``c``: the acceptance-rate judgement becomes :func:`gamma1_verdict`
      (Corollary 3.9: gamma 1 pays exactly when alpha > c), not a fixed 50% bar;
    * with ``c`` and an implied alpha: Theorem 3.8 at this gamma and at the best gamma, followed
      by :func:`specnb.vllm.advise.theorem_sentence` (measured speedups land on either side of
      the theorem in Leviathan et al.'s Table 4), instead of "an upper bound".

    Every other line (no accepted token, a thin window, the article's "tau below 2" from gamma 2
    on, tail positions that do not pay) is kept as :meth:`AcceptanceStats.advice` writes it.

    Parameters
    ----------
    stats : AcceptanceStats
        From :func:`specnb.vllm.acceptance_stats` (or any reader).
    c : float >= 0 or None
        Draft / target time per forward.

    Raises
    ------
    ValueError, TypeError
        ``c`` negative, NaN, infinite or not a single number.
    """
    from .. import _check
    from ..theory import optimal_gamma, walltime_speedup
    from .advise import theorem_sentence
    from .metrics import acceptance_length_advice

    if c is not None:
        c = _check.scalar_real("c", c, lo=0.0)
    lines = list(stats.advice(c))
    k = stats.num_speculative_tokens
    tau = stats.mean_acceptance_length
    if k == 1 and c is not None and tau == tau:
        old = acceptance_length_advice(tau, 1, stats.acceptance_rate)[1]
        lines = [gamma1_verdict(stats.acceptance_rate, c)[1] if line == old else line
                 for line in lines]
    if c is not None and stats.alpha is not None and k:
        prefix = f"at alpha {stats.alpha:.3f} and c {c:g}, Theorem 3.8 gives"
        lines = [line for line in lines if not line.startswith(prefix)]
        if k > 1:
            g, best = optimal_gamma(stats.alpha, c)
            now = walltime_speedup(stats.alpha, k, c)
            head = (f"at the implied alpha {stats.alpha:.3f} and c {c:g}, Theorem 3.8 gives "
                    f"{now:.2f}x at gamma {k}")
            if g == 0:
                lines.append(f"{head}; no gamma beats plain decoding (alpha <= c): turn it off")
            elif g == k:
                lines.append(f"{head}, already the best gamma; {theorem_sentence()}")
            else:
                lines.append(f"{head} and {best:.2f}x at gamma {g}; {theorem_sentence()}")
    return lines
