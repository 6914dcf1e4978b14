"""Input checks shared by every public function.

Each check raises :class:`ValueError` (or :class:`TypeError` for a non-number) whose
message names the parameter, shows the offending value and says what is allowed.
Nothing is clipped or guessed. The errors are :class:`ParamValueError` /
:class:`ParamTypeError`: their ``param`` attribute is the parameter's name as the caller gave
it (the message starts with it), so that a command line can name its own flag instead
(:func:`specnb.cli.message`).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ._numbers import MAX_EXACT_INT, number_text  # noqa: F401  (re-exported: the checks' names)

_OK = object()


class ParamError(Exception):
    """Mixin of the checks' errors: ``param`` is the name of the parameter checked (the
    message starts with it)."""

    def __init__(self, message: str, param: str):
        super().__init__(message)
        self.param = param

    def __reduce__(self):  # picklable (worker processes raise these too)
        return type(self), (str(self), self.param)


class ParamValueError(ParamError, ValueError):
    """A value out of range, NaN, not whole, not one of the choices: ``param`` names it."""


class ParamTypeError(ParamError, TypeError):
    """Not a number (None, a bool, a string, a ragged list...): ``param`` names it."""


def _first_bad(arr: np.ndarray, bad: np.ndarray):
    value = arr[bad].flat[0] if arr.ndim else arr[()]
    return value.item() if hasattr(value, "item") else value


def _shown(x):
    """A value for an error message: whole floats as ints (0.0 -> 0), no array dumps."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 2 ** 63:
        return int(x)
    return x


def _non_number(value):
    """The first element of ``value`` that is not a real number (a bool, None, a string, a
    complex...), or ``_OK``. numpy would silently turn these into 1.0/0.0, NaN or a parsed
    float."""
    if isinstance(value, (list, tuple)):
        for v in value:
            bad = _non_number(v)
            if bad is not _OK:
                return bad
        return _OK
    if value is None or isinstance(value, (bool, np.bool_, str, bytes, complex,
                                           np.complexfloating, np.str_, np.bytes_)):
        return value
    if hasattr(value, "__array__") and not isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype.kind in "iuf":
            return _OK
        if arr.dtype.kind == "O":
            for v in arr.flat:
                bad = _non_number(v)
                if bad is not _OK:
                    return bad
            return _OK
        return arr.flat[0] if arr.size else _OK
    return _OK


def _too_large(value):
    """The first integer in ``value`` (a number, a list, an object array) that no float holds
    (more than 308 digits), or None."""
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray)
                                            and value.dtype.kind == "O"):
        for v in (value.flat if isinstance(value, np.ndarray) else value):
            found = _too_large(v)
            if found is not None:
                return found
        return None
    return value if isinstance(value, numbers.Integral) and not finite(value) else None


def _as_floats(name: str, value, what: str) -> np.ndarray:
    bad = _non_number(value)
    if bad is not _OK:
        kind = "the boolean " if isinstance(bad, (bool, np.bool_)) else ""
        if bad is value or np.ndim(value) == 0:
            raise ParamTypeError(f"{name} must be {what}, got {kind}{bad!r}", name)
        raise ParamTypeError(f"{name} must be {what} or an array of them, got an array "
                             f"holding {kind}{bad!r}", name)
    try:
        return np.asarray(value, dtype=float)
    except OverflowError:
        huge = _too_large(value)
        if huge is None:
            raise
        top = "at most 2**53" if what == "an integer" else "at most about 1.8e308 (a float64)"
        raise ParamValueError(f"{name} must be {what} {top}, got {number_text(huge)}: too "
                              "large", name) from None
    except (TypeError, ValueError):
        shown = repr(value)
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        raise ParamTypeError(f"{name} must be {what} or an array of them (a regular, "
                             f"non-ragged shape), got {shown}", name) from None


def _no_nan(name: str, arr: np.ndarray) -> None:
    nan = np.isnan(arr)
    if nan.any():
        if arr.ndim == 0:
            raise ParamValueError(f"{name} must not be NaN, got nan", name)
        i = np.unravel_index(int(np.flatnonzero(nan)[0]), arr.shape)
        where = i[0] if len(i) == 1 else i
        raise ParamValueError(f"{name} must not be NaN, got nan at index {where}", name)


def real(name: str, value, *, lo: float | None = None, hi: float | None = None,
         lo_open: bool = False, hi_open: bool = False) -> np.ndarray:
    """Return ``value`` as a float array after checking it is finite and within range.

    Raises TypeError for anything that is not a real number (None, bools, strings, complex,
    ragged lists), also inside lists and arrays; ValueError for NaN, infinity or a value out
    of range. Messages name ``name``, the offending value and the allowed range.
    """
    arr = _as_floats(name, value, "a number")
    _no_nan(name, arr)
    bad = _outside(arr, lo, hi, lo_open, hi_open)
    if bad.any():
        left = "(" if lo_open or lo is None else "["
        right = ")" if hi_open or hi is None else "]"  # no upper bound: inf is refused
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "inf" if hi is None else f"{hi:g}"
        shown = _first_bad(arr, bad)
        raise ParamValueError(f"{name} must be in {left}{lo_s}, {hi_s}{right} and finite, got "
                              f"{shown!r}", name)
    return arr


def _outside(v, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
             hi_open: bool = False):
    """Where ``v`` fails :func:`real`'s range: not finite (NaN, +-inf), below ``lo`` (or at it,
    ``lo_open``), above ``hi`` (or at it, ``hi_open``). The one rule for arrays (``v`` a float
    array: a bool array) and for :func:`scalar_real`'s fast path (``v`` a float: a bool, with
    no numpy call)."""
    bad = (abs(v) < math.inf) ^ True  # NaN and +-inf; ^ (not ~ or `not`) suits bools and arrays
    if lo is not None:
        bad |= (v <= lo) if lo_open else (v < lo)
    if hi is not None:
        bad |= (v >= hi) if hi_open else (v > hi)
    return bad


def _int_top(hi: int | None) -> int:
    """The largest whole number :func:`integer` accepts: ``hi``, at most 2**53."""
    return MAX_EXACT_INT if hi is None else min(hi, MAX_EXACT_INT)


def integer(name: str, value, *, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """Return ``value`` as an int64 array after checking it holds whole numbers >= ``lo``.

    Whole numbers above 2**53 are refused: they are not exact in float64.
    """
    arr = _as_floats(name, value, "an integer")
    _no_nan(name, arr)
    frac = ~np.isfinite(arr) | (arr != np.round(arr))
    if frac.any():
        raise ParamValueError(f"{name} must be a whole number, got {_first_bad(arr, frac)!r}",
                              name)
    top = _int_top(hi)
    bad = (arr < lo) | (arr > top)
    shown = _shown(_first_bad(arr, bad)) if bad.any() else None
    if isinstance(value, numbers.Integral) and not lo <= int(value) <= top:
        bad, shown = np.ones(arr.shape, dtype=bool), int(value)  # 2**53 + 1 rounds to 2**53
    if bad.any():
        allowed = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        if hi is None and shown > top:
            allowed = f"in [{lo}, 2**53 = {MAX_EXACT_INT}] (larger values are not exact)"
        raise ParamValueError(f"{name} must be an integer {allowed}, got {shown!r}", name)
    return arr.astype(np.int64)


def scalar_int(name: str, value, *, lo: int = 0, hi: int | None = None) -> int:
    """A single Python int (no arrays), checked like :func:`integer`. A plain ``int`` in range
    returns at once (no numpy: loops that check their arguments per call stay cheap)."""
    if type(value) is int and lo <= value <= _int_top(hi):
        return value
    if not isinstance(value, (numbers.Integral, float, np.floating)) or isinstance(
            value, (bool, np.bool_)):
        raise ParamTypeError(f"{name} must be an integer, got {value!r}", name)
    return int(integer(name, value, lo=lo, hi=hi))


def scalar_real(name: str, value, **bounds) -> float:
    """A single Python float (no arrays, no lists), checked like :func:`real`. A plain finite
    ``float`` in range returns at once (no numpy)."""
    if type(value) is float and not _outside(value, **bounds):
        return value
    if np.ndim(value) != 0 and not isinstance(value, str):
        raise ParamTypeError(f"{name} must be a single number, not an array or list, got "
                             f"{type(value).__name__} of shape {np.shape(value)}", name)
    return float(real(name, value, **bounds))


def broadcast(**arrays) -> list[np.ndarray]:
    """``np.broadcast_arrays`` of the named arrays, with an error that names them.

    Raises
    ------
    ValueError
        the shapes do not broadcast (numpy's rules); the message gives each name and shape.
    """
    try:
        return np.broadcast_arrays(*arrays.values())
    except ValueError:
        shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in arrays.items())
        names = list(arrays)
        joined = ", ".join(names[:-1]) + " and " + names[-1]
        raise ValueError(f"{joined} must broadcast to one shape (scalars, or "
                         f"arrays whose dimensions are equal or 1), got shapes {shapes}") from None


def choice(name: str, value, allowed) -> str:
    """Check that ``value`` is one of ``allowed`` (strings)."""
    allowed = list(allowed)
    if isinstance(value, (bool, np.bool_)) and not any(isinstance(a, bool) for a in allowed):
        raise ParamValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got the "
                              f"boolean {value!r}", name)
    if value not in allowed:
        raise ParamValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got "
                              f"{value!r}", name)
    return value


def finite(value) -> bool:
    """True for a finite float or an int that converts to one: a JSON or Prometheus integer
    of more than 308 digits is not (``math.isfinite`` raises OverflowError on it)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def utf8_error(where: str, exc: UnicodeDecodeError, hint: str) -> ValueError:
    """The ValueError for input ``where`` that is not UTF-8: the first bad byte, its offset,
    and ``hint`` (what the input should be)."""
    return ValueError(f"{where}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                      f"{exc.start}); {hint}")


def finite_result(what: str, x, hint: str = "check the units of the inputs"):
    """Raise ValueError if a computed result overflowed float64 (inf); return it unchanged."""
    arr = np.asarray(x)
    if arr.dtype.kind == "f" and np.isinf(arr).any():
        raise ValueError(f"{what} overflows float64 (inf) for these inputs; {hint}")
    return x


def out(x: np.ndarray):
    """Return a Python float for 0-d results, the array otherwise."""
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x
