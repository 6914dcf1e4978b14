"""specnb._check: the input checks every public function shares. Each refusal names the
parameter, shows the value and says what is allowed; nothing is clipped or guessed."""

import math

import numpy as np
import pytest

from specnb import _check, _numbers


def test_real_returns_floats_and_refuses_out_of_range_naming_the_parameter():
    arr = _check.real("alpha", [0, 0.5, 1], lo=0, hi=1)
    assert arr.dtype == float and arr.tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match=r"^alpha must be in \[0, 1\] and finite, got 1\.5$"):
        _check.real("alpha", [0.5, 1.5], lo=0, hi=1)
    with pytest.raises(ValueError, match=r"^c must be in \(0, inf\) and finite, got 0\.0$"):
        _check.real("c", 0.0, lo=0, lo_open=True)
    with pytest.raises(ValueError, match=r"^x must be in \(-inf, inf\) and finite, got inf$"):
        _check.real("x", math.inf)  # no upper bound still means finite
    with pytest.raises(ValueError, match=r"^x must not be NaN, got nan$"):
        _check.real("x", math.nan)


@pytest.mark.parametrize("value,shown", [(None, "None"), (True, "the boolean True"),
                                         ("1", "'1'"), (1j, "1j"), ([1.0, False], "the boolean False")])
def test_real_refuses_non_numbers_with_a_type_error(value, shown):
    with pytest.raises(TypeError, match="^alpha must be a number") as info:
        _check.real("alpha", value)
    assert shown in str(info.value)


def test_integer_whole_numbers_only_and_exact_in_float64():
    assert _check.integer("gamma", [0, 3.0, 7]).tolist() == [0, 3, 7]
    assert _check.integer("gamma", 3).dtype == np.int64
    with pytest.raises(ValueError, match="^gamma must be a whole number, got 2.5$"):
        _check.integer("gamma", [1, 2.5])
    with pytest.raises(ValueError, match="^gamma must be an integer >= 1, got 0$"):
        _check.integer("gamma", 0, lo=1)
    with pytest.raises(ValueError, match=r"^k must be an integer in \[1, 8\], got 9$"):
        _check.integer("k", 9, lo=1, hi=8)
    with pytest.raises(ValueError, match=rf"2\*\*53 = {_check.MAX_EXACT_INT}.*got {2 ** 53 + 1}$"):
        _check.integer("n", 2 ** 53 + 1)  # a float64 would round it to 2**53


def test_scalar_checks_refuse_arrays_and_bools():
    assert _check.scalar_int("gamma", np.int32(4)) == 4 and type(_check.scalar_int("g", 4.0)) is int
    assert _check.scalar_real("alpha", np.float32(0.5), lo=0, hi=1) == 0.5
    with pytest.raises(TypeError, match="^gamma must be an integer, got True$"):
        _check.scalar_int("gamma", True)
    with pytest.raises(TypeError, match="^alpha must be a single number, not an array or list"):
        _check.scalar_real("alpha", [0.5])


def test_broadcast_names_every_shape():
    a, b = _check.broadcast(alpha=np.zeros(3), gamma=np.zeros((2, 1)))
    assert a.shape == b.shape == (2, 3)
    with pytest.raises(ValueError, match=r"^alpha, gamma and c must broadcast to one shape") as info:
        _check.broadcast(alpha=np.zeros(2), gamma=np.zeros(2), c=np.zeros(3))
    assert "alpha (2,), gamma (2,), c (3,)" in str(info.value)


def test_choice_lists_what_is_allowed():
    assert _check.choice("dtype", "bf16", ["bf16", "fp8"]) == "bf16"
    with pytest.raises(ValueError, match="^dtype must be one of 'bf16', 'fp8'; got 'int3'$"):
        _check.choice("dtype", "int3", ["bf16", "fp8"])
    with pytest.raises(ValueError, match="got the boolean True$"):
        _check.choice("temperature", True, [0, 1])  # True == 1, yet not allowed


def test_utf8_error_shows_the_byte_and_offset():
    try:
        b"ok\xff".decode("utf-8")
    except UnicodeDecodeError as exc:
        err = _check.utf8_error("config.json", exc, "save it as UTF-8")
    assert isinstance(err, ValueError)
    assert str(err) == "config.json: not UTF-8 text (byte 0xff at offset 2); save it as UTF-8"


def test_finite_result_and_out():
    assert _check.finite_result("speedup", 2.5) == 2.5
    with pytest.raises(ValueError, match="^cost overflows float64 \\(inf\\) for these inputs; "
                                         "check the units"):
        _check.finite_result("cost", np.array([1.0, np.inf]))
    assert type(_check.out(np.array(1.5))) is float
    assert _check.out(np.array([1.5, 2.0])).tolist() == [1.5, 2.0]


def test_an_integer_no_float_holds_is_too_large_not_a_ragged_shape():
    # trial 6 T6-C2: a 400-digit --context read "an array of them (a regular, non-ragged shape)"
    big = 10 ** 400
    for check, what in ((_check.integer, "an integer at most 2\\*\\*53"),
                        (_check.real, "a number at most about 1.8e308")):
        for value in (big, [1, big], np.array([1, big], dtype=object)):
            with pytest.raises(ValueError, match=rf"^n must be {what}.*, got 100000000000\.\.\."
                                                 r"0000 \(401 digits\): too large$") as info:
                check("n", value)
            assert isinstance(info.value, _check.ParamValueError) and info.value.param == "n"
    with pytest.raises(TypeError, match="non-ragged shape"):  # a ragged list is still that
        _check.integer("n", [1, [2, 3]])
    assert _check.number_text is _numbers.number_text  # one home, re-exported
