"""specnb.vllm.rules.values: pydantic's lax-mode coercions, as pydantic 2.14 (the vLLM 0.33.0
wheel's) does them; each expected value below was read from pydantic's TypeAdapter in the
oracle's virtualenv (.venv-vllm-0.33.0), and the end-to-end verdicts are in
tests/cases/vllm/0.33.0/strings.jsonl (tests/vllm/test_check.py)."""

from __future__ import annotations

import pytest

from specnb.vllm.rules.values import coerce, json_values

# (kind, input, pydantic's value or None for a ValidationError)
PYDANTIC = [
    ("int", "3", 3), ("int", "3.0", 3), ("int", "3.00", 3), ("int", "1_0", 10),
    ("int", " 3 ", 3), ("int", "+3", 3), ("int", "-3", -3), ("int", "007", 7),
    ("int", "1_000", 1000), ("int", "1_0.0", 10), ("int", "-3.0", -3), ("int", 3.0, 3),
    ("int", True, 1), ("int", "3.5", None), ("int", "0x10", None), ("int", "1e3", None),
    ("int", "1.", None), ("int", ".5", None), ("int", "_1", None), ("int", "1__0", None),
    ("int", "\uff11", None), ("int", "true", None), ("int", 3.5, None), ("int", "", None),
    ("int", float("nan"), None),
    ("float", "0.5", 0.5), ("float", "1_0.5", 10.5), ("float", "1e3", 1000.0),
    ("float", ".5", 0.5), ("float", "1.", 1.0), ("float", "Infinity", float("inf")),
    ("float", True, 1.0), ("float", 2, 2.0), ("float", "0x10", None), ("float", "_1", None),
    ("float", "\uff11", None), ("float", "yes", None),
    ("bool", "true", True), ("bool", "TRUE", True), ("bool", "yes", True), ("bool", "on", True),
    ("bool", "t", True), ("bool", "Y", True), ("bool", "N", False), ("bool", "off", False),
    ("bool", "0", False), ("bool", 1, True), ("bool", 0.0, False), ("bool", 2, None),
    ("bool", 0.5, None),
    # a 400-digit int (trial 6): pydantic 2.14 keeps it for an int, refuses it for a float
    # (float_type; checked with pydantic 2.14's BaseModel in the shared venv)
    ("int", 10 ** 400, 10 ** 400), ("float", 10 ** 400, None),
]


@pytest.mark.parametrize("kind,value,expected", PYDANTIC)
def test_coerce_reads_values_as_pydantic_does(kind, value, expected):
    got, how = coerce(kind, value)
    if expected is None:
        assert (got, how) == (None, "refused")
    else:
        assert got == expected and type(got).__name__ == kind and how in (None, "coerced")


def test_values_of_the_right_type_are_not_coerced():
    assert coerce("int", 4) == (4, None) and coerce("float", 0.5) == (0.5, None)
    assert coerce("bool", False) == (False, None)


def test_json_values_names_the_first_bad_value():
    with pytest.raises(TypeError, match=r"cfg\['a'\]\[1\]"):
        json_values({"a": [1, {1, 2}]}, "cfg")
