"""Cost per token and time per answer from throughput and a GPU's hourly price.

The article's formula (section 2): cost of 1M output tokens =
hourly price x 1,000,000 / (3,600 x tokens per second). All functions broadcast over numpy
arrays; scalars in give a Python float.
"""

from __future__ import annotations

import numpy as np

from . import _check

__all__ = ["usd_per_million_tokens", "seconds_for_tokens", "relative_cost", "saving", "describe_change"]


def usd_per_million_tokens(usd_per_hour, tokens_per_second):
    """USD to generate one million output tokens.

    ``usd_per_hour * 1e6 / (3600 * tokens_per_second)``; assumes the GPU is busy only with
    this work for the whole hour.

    Parameters
    ----------
    usd_per_hour : float or array, >= 0, USD/hour for the GPU(s) serving the model.
    tokens_per_second : float or array, > 0, output tokens/s sustained by those GPU(s).

    Returns
    -------
    float or ndarray, USD per 1,000,000 output tokens.

    Raises
    ------
    ValueError
        usd_per_hour negative; tokens_per_second <= 0; any NaN or infinity; shapes that do
        not broadcast; a result that overflows float64.
    TypeError
        a non-number (None, a bool, a string).
    """
    price = _check.real("usd_per_hour", usd_per_hour, lo=0.0)
    tps = _check.real("tokens_per_second", tokens_per_second, lo=0.0, lo_open=True)
    price, tps = _check.broadcast(usd_per_hour=price, tokens_per_second=tps)
    with np.errstate(over="ignore"):
        res = price * 1e6 / (3600.0 * tps)
    return _check.out(_check.finite_result("usd_per_million_tokens", res))


def seconds_for_tokens(n_tokens, tokens_per_second):
    """Seconds to generate ``n_tokens`` output tokens at a steady ``tokens_per_second``.

    Decode time only (no TTFT): ``n_tokens / tokens_per_second``.

    Parameters
    ----------
    n_tokens : float or array, >= 0, tokens.
    tokens_per_second : float or array, > 0, tokens/s.

    Returns
    -------
    float or ndarray, seconds.

    Raises
    ------
    ValueError
        n_tokens negative; tokens_per_second <= 0; any NaN or infinity; shapes that do not
        broadcast; a result that overflows float64.
    TypeError
        a non-number (None, a bool, a string).
    """
    n = _check.real("n_tokens", n_tokens, lo=0.0)
    tps = _check.real("tokens_per_second", tokens_per_second, lo=0.0, lo_open=True)
    n, tps = _check.broadcast(n_tokens=n, tokens_per_second=tps)
    with np.errstate(over="ignore"):
        res = n / tps
    return _check.out(_check.finite_result("seconds_for_tokens", res))


def relative_cost(throughput_ratio):
    """Cost per token with speculation relative to without: ``1 / throughput_ratio``.

    At a fixed price per GPU-hour, cost per token is inversely proportional to throughput, so a
    throughput ratio of 1.38 (EAGLE-3 at batch 64, EAGLE-3 paper Table 3) costs 0.725 of the
    baseline (a 27.5% saving) and a ratio of 0.88 costs 1.136 (13.6% more). The saving is
    ``1 - relative_cost(ratio)``; it does not depend on the price.

    Parameters
    ----------
    throughput_ratio : float or array, > 0, tokens/s with speculation / tokens/s without.

    Returns
    -------
    float or ndarray, relative cost per token (1.0 = same cost).

    Raises
    ------
    ValueError
        throughput_ratio <= 0, infinite or NaN.
    """
    r = _check.real("throughput_ratio", throughput_ratio, lo=0.0, lo_open=True)
    with np.errstate(over="ignore", divide="ignore"):
        res = 1.0 / r
    return _check.out(_check.finite_result("relative_cost", res))


def saving(throughput_ratio):
    """Fraction of the cost per token saved: ``1 - relative_cost(throughput_ratio)``.

    Negative when speculation lowers throughput (0.88 -> -0.136, 13.6% more expensive).

    Raises
    ------
    ValueError
        throughput_ratio <= 0, infinite or NaN.
    """
    return _check.out(1.0 - relative_cost(throughput_ratio))


def _percent(fraction: float) -> str:
    """``fraction`` (in (0, 1)) as a percentage with one decimal, or more where one decimal
    would read 0.0% or 100.0%."""
    for digits in range(1, 16):
        text = f"{fraction * 100.0:.{digits}f}"
        if float(text) not in (0.0, 100.0):
            return text + "%"
    return text + "%"


def describe_change(throughput_ratio) -> str:
    """The change in cost per token, in words, for one throughput ratio (on / off).

    A saving reads "57.6% cheaper per token"; a cost increase below 2x reads "13.6% more
    expensive per token"; from 2x on it reads as a multiple, "200.0x the cost per token"
    (throughput 10 tokens/s against 2,000), never as a saving of -19,900%. Percentages always
    have one decimal and multiples one decimal, except that a real change never reads as
    "0.0%" or a saving as "100.0%" (free): those get as many decimals as it takes, so
    ``describe_change(1.0004)`` reads "0.04% cheaper per token" and ``describe_change(1e6)``
    "99.9999% cheaper per token".

    Raises
    ------
    ValueError
        throughput_ratio <= 0, infinite or NaN.
    TypeError
        an array or a non-number.
    """
    r = _check.scalar_real("throughput_ratio", throughput_ratio, lo=0.0, lo_open=True)
    rel = float(relative_cost(r))
    if rel < 1.0:
        return f"{_percent(1.0 - rel)} cheaper per token"
    if rel == 1.0:
        return "the same cost per token"
    if rel < 2.0:
        return f"{_percent(rel - 1.0)} more expensive per token"
    return f"{rel:,.1f}x the cost per token"
