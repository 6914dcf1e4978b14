"""Throughput ratio (with / without speculation) against batch size: where speculation stops
paying. Data: EAGLE-3 paper (arXiv 2503.01840 v3) Table 3 (SGLang) and Table 5 (vLLM).
"""

from __future__ import annotations

import math

import numpy as np

from . import _check

__all__ = ["ratio_table", "largest_paying_batch", "first_losing_batch", "nearest_measured",
           "article_format"]


def ratio_table(name: str = "eagle3_table3_sglang_batch"):
    """batch_size x method DataFrame of throughput ratios from a published batch table.

    Raises
    ------
    ValueError
        ``name`` is not a batch table (eagle3_table3_sglang_batch, eagle3_table5_vllm_batch).
    """
    from . import data

    _check.choice("name", name, ["eagle3_table3_sglang_batch", "eagle3_table5_vllm_batch"])
    df = data.load(name)
    order = list(dict.fromkeys(df["method"]))
    return df.pivot(index="batch_size", columns="method", values="throughput_ratio")[order]


def largest_paying_batch(batch_sizes, ratios):
    """Largest batch size whose throughput ratio is above 1 (speculation still pays there).

    Returns None when no batch size pays. Batch sizes need not be sorted.

    Raises
    ------
    ValueError
        mismatched lengths, a ratio <= 0 or NaN, a batch size < 1.
    TypeError
        not 1-D sequences of numbers.
    """
    b, r = _pairs(batch_sizes, ratios)
    paying = [bs for bs, x in zip(b, r) if x > 1.0]
    return max(paying) if paying else None


def first_losing_batch(batch_sizes, ratios):
    """Smallest batch size whose throughput ratio is below 1 (speculation costs throughput).

    Returns None when none is below 1.

    Raises
    ------
    ValueError, TypeError
        as :func:`largest_paying_batch`.
    """
    b, r = _pairs(batch_sizes, ratios)
    losing = [bs for bs, x in zip(b, r) if x < 1.0]
    return min(losing) if losing else None


def nearest_measured(batch_sizes, batch: int):
    """The measured batch sizes just below and just above ``batch`` (None where there is none).

    Nothing is interpolated: throughput ratios are not linear in batch size (EAGLE-3 Table 3
    goes 1.32 -> 1.38 -> 1.34 -> 1.38 from batch 32 to 64), so a value between two measured
    batches is not made up.

    Raises
    ------
    ValueError
        a batch size < 1 or fractional.
    """
    sizes = sorted(int(x) for x in _check.integer("batch_sizes", list(batch_sizes), lo=1))
    b = _check.scalar_int("batch", batch, lo=1)
    below = [s for s in sizes if s <= b]
    above = [s for s in sizes if s >= b]
    return (below[-1] if below else None), (above[0] if above else None)


def _pairs(batch_sizes, ratios):
    seqs = []
    for name, seq in (("batch_sizes", batch_sizes), ("ratios", ratios)):
        if not hasattr(seq, "__len__") and hasattr(seq, "__iter__"):
            seq = list(seq)  # a generator or other one-shot iterable
        seqs.append(seq)
        if isinstance(seq, (str, bytes)) or np.ndim(seq) != 1:
            raise TypeError(f"{name} must be a 1-D sequence of numbers (list, tuple or array), "
                            f"got {type(seq).__name__} of shape {np.shape(seq)}")
    b = [int(x) for x in _check.integer("batch_sizes", seqs[0], lo=1)]
    r = [float(x) for x in _check.real("ratios", seqs[1], lo=0.0, lo_open=True)]
    if len(b) != len(r):
        raise ValueError(f"batch_sizes and ratios must have the same length, got {len(b)} and {len(r)}")
    return b, r


def article_format(ratio: float) -> str:
    """The article's print convention for a throughput ratio (section 3).

    Values of 1 and above to one decimal, values below 1 to two decimals, and a value that
    rounds to exactly 1.0 as "1" (batch 16 EAGLE, 1.02, prints as "1").

    Raises
    ------
    ValueError
        ratio negative, NaN or infinite.
    TypeError
        not a single number.
    """
    x = _check.scalar_real("ratio", ratio, lo=0.0)
    if x < 1.0:
        return f"{x:.2f}"
    s = f"{math.floor(x * 10 + 0.5) / 10:.1f}"
    return "1" if s == "1.0" else s
