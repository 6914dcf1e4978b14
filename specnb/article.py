"""The source article's printed values, and comparison at the printed precision.

``data/article_values.csv`` lists every number the article prints that specnb reproduces:
a key, the value as printed, its number of decimals, unit, article section and what it is.
Rows marked ``loose`` are ones where the article's wording does not follow from the numbers
(e.g. "latency falls 25%" for a 1.25x speedup); for those the exact value is shown and tested,
not the printed one.
"""

from __future__ import annotations

import math

from . import _check

__all__ = ["printed", "agrees", "compare"]


def printed():
    """The article's printed values as a DataFrame indexed by ``key``."""
    from . import data

    df = data.load("article_values").set_index("key")
    df["loose"] = df["loose"].astype(str).str.lower().eq("true")
    return df


def agrees(value, printed_value, decimals: int) -> bool:
    """True when ``value`` rounds (half away from zero) to ``printed_value`` at ``decimals``.

    Compares ``|value - printed| <= 0.5 * 10**-decimals`` with a 1e-9 relative slack for
    binary floating point, so 3.2051 agrees with a printed 3.21 and 3.2049 does not.

    Raises
    ------
    ValueError
        NaN or infinite values, negative ``decimals``.
    TypeError
        an array or a non-number where a single number is expected.
    """
    v = _check.scalar_real("value", value)
    p = _check.scalar_real("printed_value", printed_value)
    d = _check.scalar_int("decimals", decimals, lo=0)
    half = 0.5 * 10.0 ** (-d)
    return abs(v - p) <= half * (1 + 1e-9) + 1e-12 * max(1.0, abs(p))


def compare(computed: dict):
    """Table of computed values beside the article's printed ones.

    Parameters
    ----------
    computed : dict
        {key of data/article_values.csv: exact computed value}.

    Returns
    -------
    DataFrame with columns key, quantity, printed, exact, agrees, loose, note.

    Raises
    ------
    KeyError
        a key the article table does not have.
    TypeError
        ``computed`` is not a dict.
    """
    import pandas as pd

    if not isinstance(computed, dict):
        raise TypeError(f"computed must be a dict {{key: value}}, got {type(computed).__name__}")
    ref = printed()
    unknown = sorted(map(str, set(computed) - set(ref.index)))
    if unknown:
        raise KeyError(f"keys not in data/article_values.csv: {', '.join(unknown)}")
    rows = []
    for key, value in computed.items():
        r = ref.loc[key]
        dec = int(r["decimals"])
        rows.append({
            "key": key,
            "quantity": r["quantity"],
            "printed": float(r["printed"]),
            "exact": float(value),
            "agrees": agrees(value, r["printed"], dec) if not math.isnan(float(value)) else False,
            "loose": bool(r["loose"]),
            "note": r["note"],
        })
    return pd.DataFrame(rows)
