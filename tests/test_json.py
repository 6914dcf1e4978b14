"""specnb._json: numpy and pandas values as plain JSON values (the package's one converter)."""

import json
import math

import numpy as np
import pandas as pd

from specnb import _json


def test_numpy_scalars_become_the_equal_python_numbers():
    out = _json.plain({"i": np.int64(3), "f": np.float32(0.5), "b": np.bool_(True),
                       "z": np.array(2.5), "s": "x", "n": None})
    assert out == {"i": 3, "f": 0.5, "b": True, "z": 2.5, "s": "x", "n": None}
    assert [type(out[k]) for k in ("i", "f", "b", "z")] == [int, float, bool, float]


def test_containers_are_walked_and_tuples_become_lists():
    assert _json.plain((np.int32(1), [np.float64(2.0), {"k": (np.uint8(3),)}])) == \
        [1, [2.0, {"k": [3]}]]


def test_nan_and_na_only_on_request():
    assert math.isnan(_json.plain(np.float64("nan")))
    assert _json.plain([np.float64("nan"), float("nan"), pd.NA, np.inf],
                       nan_to_none=True) == [None, None, None, math.inf]
    assert _json.plain(pd.NA) is pd.NA


def test_arrays_only_on_request():
    a = np.array([[1, 2], [3, 4]])
    assert _json.plain(a) is a
    assert _json.plain(a, arrays=True) == [[1, 2], [3, 4]]
    assert _json.plain(np.array([1.0, np.nan]), arrays=True, nan_to_none=True) == [1.0, None]


def test_dataframe_columns_and_records_are_json():
    df = pd.DataFrame({"g": [1, 2], "alpha": [0.5, np.nan],
                       "ok": pd.Series([True, None], dtype=object)})
    cols = _json.columns(df)
    assert cols == {"g": [1, 2], "alpha": [0.5, None], "ok": [True, None]}
    assert _json.records(df) == [{"g": 1, "alpha": 0.5, "ok": True},
                                 {"g": 2, "alpha": None, "ok": None}]
    json.dumps(cols, allow_nan=False)  # strict JSON: no NaN left
    rec = _json.records(df, nan_to_none=False)
    assert math.isnan(rec[1]["alpha"]) and type(rec[0]["g"]) is int
