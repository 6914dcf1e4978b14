"""Input checks shared by every public function.

Each check raises :class:`ValueError` (or :class:`TypeError` for a non-number) whose
message names the parameter, shows the offending value and says what is allowed.
Nothing is clipped or guessed.
"""

from __future__ import annotations

import numbers

import numpy as np


def _first_bad(arr: np.ndarray, bad: np.ndarray):
    value = arr[bad].flat[0] if arr.ndim else arr[()]
    return value.item() if hasattr(value, "item") else value


def real(name: str, value, *, lo: float | None = None, hi: float | None = None,
         lo_open: bool = False, hi_open: bool = False) -> np.ndarray:
    """Return ``value`` as a float array after checking it is finite and within range."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number, got the boolean {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}") from None
    nan = np.isnan(arr)
    if nan.any():
        raise ValueError(f"{name} must not be NaN, got {value!r}")
    bad = np.zeros(arr.shape, dtype=bool)
    if lo is not None:
        bad |= (arr <= lo) if lo_open else (arr < lo)
    if hi is not None:
        bad |= (arr >= hi) if hi_open else (arr > hi)
    if hi is None:
        bad |= np.isinf(arr)
    if bad.any():
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "inf" if hi is None else f"{hi:g}"
        shown = _first_bad(arr, bad)
        raise ValueError(f"{name} must be in {left}{lo_s}, {hi_s}{right} and finite, got {shown!r}")
    return arr


def integer(name: str, value, *, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """Return ``value`` as an int64 array after checking it holds whole numbers >= ``lo``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got the boolean {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an integer or an array of integers, got {value!r}") from None
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not be NaN, got {value!r}")
    frac = ~np.isfinite(arr) | (arr != np.round(arr))
    if frac.any():
        raise ValueError(f"{name} must be a whole number, got {_first_bad(arr, frac)!r}")
    bad = arr < lo
    if hi is not None:
        bad |= arr > hi
    if bad.any():
        allowed = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be an integer {allowed}, got {_first_bad(arr, bad)!r}")
    return arr.astype(np.int64)


def scalar_int(name: str, value, *, lo: int = 0, hi: int | None = None) -> int:
    """A single Python int (no arrays), checked like :func:`integer`."""
    if not isinstance(value, (numbers.Integral, float, np.floating)) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(integer(name, value, lo=lo, hi=hi))


def choice(name: str, value, allowed) -> str:
    """Check that ``value`` is one of ``allowed`` (strings)."""
    allowed = list(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def out(x: np.ndarray):
    """Return a Python float for 0-d results, the array otherwise."""
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x
