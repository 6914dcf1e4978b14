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

__all__ = ["printed", "agrees", "rounded", "compare"]


def printed():
    """The article's printed values as a DataFrame indexed by ``key``.

    ``printed`` is the value as a float; ``printed_text`` is the string exactly as the CSV
    (and the article) writes it ("1.6", "1", "0.93"), with ``decimals`` its precision.
    """
    import pandas as pd

    from . import data

    df = data.load("article_values").set_index("key")
    df["loose"] = df["loose"].astype(str).str.lower().eq("true")
    text = pd.read_csv(data.path("article_values"), dtype=str, keep_default_na=False)
    df["printed_text"] = text.set_index("key")["printed"].str.strip()
    return df


def rounded(value, decimals: int) -> str:
    """``value`` written at ``decimals`` decimals, rounding half away from zero, as the
    article rounds (1.6167 -> "1.62" at 2, "1.6" at 1; 2.5 -> "3" at 0).

    Raises
    ------
    ValueError
        NaN or infinite ``value``, negative ``decimals``.
    TypeError
        an array or a non-number.
    """
    from decimal import ROUND_HALF_UP, Decimal

    v = _check.scalar_real("value", value)
    d = _check.scalar_int("decimals", decimals, lo=0)
    q = Decimal(repr(v)).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)
    return f"{q:.{d}f}"


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
    DataFrame with columns key, quantity, printed (the article's string, "1.6"), decimals
    (its precision), ``at printed precision`` (the exact value rounded the same way, a
    string), exact (float), agrees, loose, note.

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
        nan = math.isnan(float(value))
        rows.append({
            "key": key,
            "quantity": r["quantity"],
            "printed": r["printed_text"],
            "decimals": dec,
            "at printed precision": "nan" if nan else rounded(float(value), dec),
            "exact": float(value),
            "agrees": agrees(value, r["printed"], dec) if not nan else False,
            "loose": bool(r["loose"]),
            "note": r["note"],
        })
    return pd.DataFrame(rows)
