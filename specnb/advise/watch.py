"""What to watch after launch, with every threshold derived or sourced.

:func:`gamma1_verdict` judges a gamma-1 run by Leviathan et al.'s Corollary 3.9 instead of a
fixed acceptance-rate bar: at gamma 1 the mean acceptance length is tau = 1 + alpha exactly, and
Theorem 3.8 gives a speedup of (1 + alpha) / (1 + c), above 1 exactly when alpha > c.
:func:`theorem_advice` states Theorem 3.8 at a run's gamma and at the best gamma, as what
Leviathan et al.'s own Table 4 shows it to be: measurements land on either side of it.
:class:`~specnb.vllm.metrics.AcceptanceStats` ``.advice``, ``compare_bench``'s cautions and
``specnb metrics`` use both. :func:`watch_table` is the after-launch watch list
(:data:`specnb.vllm.metrics.WATCH`: Corollary 3.9's rule in its first row, TTFT stated as
something to explain rather than a known cause, and vLLM's per-request acceptance metrics for
the article's checklist step 3 in its last) as a DataFrame; :func:`advice` is
``stats.advice(c)``.
"""

from __future__ import annotations

__all__ = ["gamma1_verdict", "theorem_advice", "watch_table", "advice"]


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
    followed by :func:`specnb.vllm.advise.theorem_sentence` (Leviathan et al.'s Table 4:
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
    from .advise import theorem_sentence

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
    """The after-launch watch list, :data:`specnb.vllm.metrics.WATCH`, as a DataFrame with
    columns what, where, act when (at gamma 1 the rule is :func:`gamma1_verdict`'s)."""
    import pandas as pd

    from .metrics import WATCH

    return pd.DataFrame(list(WATCH), columns=["what", "where", "act when"])


def advice(stats, c: float | None = None) -> list[str]:
    """What measured acceptance says to do: ``stats.advice(c)``
    (:meth:`~specnb.vllm.metrics.AcceptanceStats.advice`), kept as a function for notebooks.

    At gamma 1 the acceptance-rate judgement is :func:`gamma1_verdict` (Corollary 3.9: gamma 1
    pays exactly when alpha > c; without ``c`` the assumed c is named); from gamma 2 on, with
    ``c``, :func:`theorem_advice` states Theorem 3.8 at this gamma and the best one, with what
    Leviathan et al.'s Table 4 shows of it.

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
    return stats.advice(c)
