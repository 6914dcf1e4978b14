"""The spread of a measured speedup, and rounding to what that spread supports (numpy only, no
torch: the CLI uses it for printing).

A speedup measured on a few prompts moves between identical runs (prompt lookup on one task moved
27 % between two runs of notebook 08), so it is reported with a 95 % interval from a paired
bootstrap over prompts (each prompt's median wall time over the repeats, with and without
speculation, resampled together) and printed with as many decimals as the interval supports.
Below :data:`MIN_PROMPTS` prompts such a bootstrap returns about the prompts' own lowest and
highest values: :func:`is_range` is that rule and :func:`interval_label` the words a table or
verdict prints for it.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _check

__all__ = ["speedup_interval", "format_speedup", "decimals_for", "MIN_PROMPTS", "is_range",
           "interval_label"]

#: Fewest prompts whose bootstrap interval is read as a 95 % interval. Over fewer it is about
#: the prompts' range: with 3 prompts (1/3)^3 = 3.7 % of the resamples repeat the lowest one,
#: so the 2.5 % quantile is that prompt's value.
MIN_PROMPTS = 5


def speedup_interval(tokens, wall_s, tokens_base, wall_s_base, *, level: float = 0.95,
                     n_boot: int = 2000, seed: int = 0):
    """Speedup = (sum tokens / sum wall) / (sum tokens_base / sum wall_base) over prompts, with
    a paired bootstrap interval over prompts.

    Parameters
    ----------
    tokens, wall_s : 1-D sequences (one entry per prompt): new tokens and seconds, speculative.
    tokens_base, wall_s_base : the same prompts' plain decoding, aligned.
    level : float in (0, 1); n_boot : int >= 100; seed : int >= 0.

    Returns
    -------
    (speedup, low, high) : floats; low and high NaN with fewer than 2 prompts.

    Raises
    ------
    ValueError
        Empty or misaligned inputs, negative values, a zero total wall time.
    """
    t = _check.real("tokens", tokens, lo=0.0)
    w = _check.real("wall_s", wall_s, lo=0.0)
    tb = _check.real("tokens_base", tokens_base, lo=0.0)
    wb = _check.real("wall_s_base", wall_s_base, lo=0.0)
    lv = float(_check.real("level", level, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    nb = _check.scalar_int("n_boot", n_boot, lo=100)
    sd = _check.scalar_int("seed", seed, lo=0)
    if len({a.shape for a in (t, w, tb, wb)}) != 1 or t.ndim != 1 or t.size == 0:
        raise ValueError("tokens, wall_s, tokens_base and wall_s_base must be non-empty 1-D "
                         f"sequences of one length (one entry per prompt), got shapes "
                         f"{[a.shape for a in (t, w, tb, wb)]}")
    if not (w.sum() > 0 and wb.sum() > 0):
        raise ValueError("wall_s and wall_s_base must not sum to 0 seconds")
    est = float((t.sum() / w.sum()) / (tb.sum() / wb.sum()))
    if t.size < 2:
        return est, float("nan"), float("nan")
    idx = np.random.default_rng(sd).integers(0, t.size, size=(nb, t.size))
    boots = (t[idx].sum(1) / w[idx].sum(1)) / (tb[idx].sum(1) / wb[idx].sum(1))
    lo, hi = np.quantile(boots, [(1 - lv) / 2, (1 + lv) / 2])
    return est, float(lo), float(hi)


def decimals_for(low, high, most: int = 3) -> int:
    """Decimals an interval [low, high] supports: the first decimal place of its half-width
    (half-width 0.13 -> 1, 0.02 -> 2), at most ``most``; ``most`` when the interval is NaN."""
    half = (float(high) - float(low)) / 2
    if not math.isfinite(half) or half <= 0:
        return most
    return int(min(most, max(0, -math.floor(math.log10(half)))))


def format_speedup(value, low, high) -> str:
    """``"0.7x (0.6-0.8)"``: the speedup and its 95 % interval, rounded to what the interval
    supports; ``"0.71x (one prompt: no interval)"`` without one (two decimals: one run of
    one prompt supports no more)."""
    if not (math.isfinite(float(low)) and math.isfinite(float(high))):
        return f"{float(value):.2f}x (one prompt: no interval)"
    d = decimals_for(low, high)
    return f"{float(value):.{d}f}x ({float(low):.{d}f}-{float(high):.{d}f})"


def is_range(prompts) -> bool:
    """True when a bootstrap interval over ``prompts`` prompts (int >= 0) is their range, not a
    95 % interval: fewer than :data:`MIN_PROMPTS`."""
    return int(prompts) < MIN_PROMPTS


def interval_label(prompts) -> str:
    """What the bootstrap intervals of a table are, from its rows' prompt counts ``prompts``
    (an int, or one int per row): ``"95% CI over prompts"`` when every row has
    :data:`MIN_PROMPTS` or more; ``"range of 3 prompts, not a 95% CI"`` (or ``"range of 2-3
    prompts per row, ..."``) when none has; ``"95% CI over prompts; range where a row has under
    5 prompts"`` when some have. Rows of one prompt (no interval) count only when all are."""
    counts = [int(n) for n in ([prompts] if np.ndim(prompts) == 0 else prompts)
              if n == n and n > 0]
    if not counts:
        return "no interval (no prompts)"
    if max(counts) == 1:
        return "one prompt: no interval"
    counts = [n for n in counts if n > 1]
    if not any(is_range(n) for n in counts):
        return "95% CI over prompts"
    if all(is_range(n) for n in counts):
        lo, hi = min(counts), max(counts)
        n = f"{lo} prompts" if lo == hi else f"{lo}-{hi} prompts per row"
        return f"range of {n}, not a 95% CI"
    return f"95% CI over prompts; range where a row has under {MIN_PROMPTS} prompts"
