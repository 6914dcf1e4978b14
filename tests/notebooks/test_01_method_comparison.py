"""notebooks/01_method_comparison.ipynb (executed once per session by tests/conftest.py): the
hidden-state ladder, the methods without temperature 1, and the Spec-Bench cross-check it
records, recomputed from specnb.methods."""

import json

import pytest

from specnb import methods
from tests.notebooks.support import source

pytestmark = pytest.mark.slow  # reads the session's executed notebooks


def test_method_comparison_claims(records):
    r = records["01_method_comparison"]
    assert r["methods.hidden_state_ladder_increasing"] is True
    assert r["methods.without_temperature_1"] == ["PLD", "Medusa", "Lookahead", "Hydra"]


def test_01_specbench_cross_check_recorded(records, shown):
    got = records["01_method_comparison"]["methods.specbench_cross_check"]
    cross = methods.specbench_cross_check()
    assert got["eagle3_specbench"] == cross.loc["EAGLE-3", "Spec-Bench overall (x)"]
    assert got["eagle3_table1"] == cross.loc["EAGLE-3", "Table 1 mean (x)"]
    tf = cross.loc[list(methods.TRAINING_FREE), "Spec-Bench overall (x)"]
    assert (got["training_free_specbench_low"], got["training_free_specbench_high"]) == (tf.min(), tf.max())
    assert got["every_method_lower"] is True and got["first"] == ["EAGLE-3", "EAGLE-3"]
    t1, sb = cross["Table 1 mean (x)"], cross["Spec-Bench overall (x)"]
    swaps = sorted(f"{m} / {n}" for i, m in enumerate(cross.index) for n in cross.index[i + 1:]
                   if (t1[m] - t1[n]) * (sb[m] - sb[n]) < 0)
    assert sorted(got["swapped_pairs"]) == swaps
    for pair in swaps:  # the markdown names the swapped pairs
        assert pair in json.dumps(source("01_method_comparison"))
    assert "HASS" + methods.LATER_REVISION in shown["01"][1]
