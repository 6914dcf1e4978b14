"""numpy and pandas values as plain JSON values: the one converter of the package.

:func:`plain` turns numpy scalars into the equal Python number (``np.int64(3)`` -> ``3``,
``np.float32(0.5)`` -> ``0.5``, ``np.bool_(True)`` -> ``True``), walks dicts, lists and tuples
(tuples become lists), and optionally turns NaN and ``pandas.NA`` into None (JSON has no NaN) and
numpy arrays into lists. :func:`columns` and :func:`records` apply it to a DataFrame. Anything
else is returned as it is (a caller that needs strict JSON checks it afterwards).

Layer L0: imports nothing from specnb; pandas only for the DataFrame helpers' input.
"""

from __future__ import annotations

import math

__all__ = ["plain", "columns", "records"]


def _is_numpy(value) -> bool:
    return type(value).__module__ == "numpy"


def _is_pd_na(value) -> bool:
    return type(value).__name__ == "NAType" and type(value).__module__.startswith("pandas")


def plain(value, *, nan_to_none: bool = False, arrays: bool = False):
    """``value`` with numpy scalars replaced by the equal Python numbers, recursively.

    Parameters
    ----------
    value : any
        A scalar, or dicts / lists / tuples of them (walked; tuples become lists; dict keys are
        kept as they are).
    nan_to_none : bool
        Also give None for a NaN float (numpy or Python) and for ``pandas.NA``; infinities stay.
    arrays : bool
        Also turn numpy arrays into (nested) lists of plain values; otherwise an array of one or
        more dimensions is returned as it is (a 0-d array is a scalar and is converted).

    Returns
    -------
    The converted value (a new container where one was walked).
    """
    if isinstance(value, dict):
        return {k: plain(v, nan_to_none=nan_to_none, arrays=arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, nan_to_none=nan_to_none, arrays=arrays) for v in value]
    if _is_numpy(value):
        shape = getattr(value, "shape", None)
        if shape == ():
            value = value.item()
        elif arrays and shape is not None:
            return plain(value.tolist(), nan_to_none=nan_to_none, arrays=arrays)
        else:
            return value
    if nan_to_none:
        if isinstance(value, float) and math.isnan(value):
            return None
        if _is_pd_na(value):
            return None
    return value


def columns(df, *, nan_to_none: bool = True) -> dict:
    """``{column: [plain values]}``: a pandas DataFrame as aligned JSON-able lists (NaN and NA
    -> None by default)."""
    return {k: [plain(v, nan_to_none=nan_to_none) for v in df[k].tolist()] for k in df.columns}


def records(df, *, nan_to_none: bool = True) -> list:
    """``[{column: plain value}, ...]``: a pandas DataFrame as one JSON-able dict per row
    (NaN and NA -> None by default)."""
    return [{k: plain(v, nan_to_none=nan_to_none) for k, v in row.items()}
            for row in df.to_dict(orient="records")]
