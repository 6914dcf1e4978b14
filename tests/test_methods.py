"""specnb.methods: EAGLE-3's Table 1 views, bands, ranges and the hidden-state ladder, the
Spec-Bench cross-check from the CSVs, later-revision rows, and bad input."""

import pytest

from specnb import methods
from tests.published import csv_rows


def test_table1_view_and_errors():
    t = methods.table1("Vicuna 13B", 0, "tau")
    assert list(t.columns) == [*methods.TASKS, "mean"]
    assert t.loc["EAGLE-3", "humaneval"] == 7.54
    with pytest.raises(ValueError, match="model"):
        methods.table1("GPT-5", 0)
    with pytest.raises(ValueError, match="temperature"):
        methods.table1("Vicuna 13B", 2)
    with pytest.raises(ValueError, match="value"):
        methods.table1("Vicuna 13B", 0, "latency")


def test_band_range_ladder():
    t = methods.table1()
    assert methods.speedup_band(t, ["SpS", "PLD"]) == (1.74, 1.92)
    assert methods.task_range(t, "PLD", exclude=("cnndm",)) == (1.16, 1.85)
    assert methods.is_increasing(t)
    assert not methods.is_increasing(t, ["EAGLE-3", "EAGLE"])
    with pytest.raises(ValueError, match="not in the table"):
        methods.speedup_band(t, ["HASS"])
    assert methods.methods_without_temperature(1, "LLaMA-Instruct 3.1 8B") == []


def test_specbench_cross_check_from_the_csvs():
    sb = {r["method"]: float(r["speedup"]) for r in csv_rows("specbench_a100")
          if r["model"] == "Vicuna-13B-v1.3" and r["task"] == "overall"}
    t1 = {r["method"]: float(r["speedup"]) for r in csv_rows("eagle3_table1")
          if r["model"] == "Vicuna 13B" and r["temperature"] == "0" and r["task"] == "mean"}
    got = methods.specbench_cross_check()
    for sb_name, t1_name in methods.SPECBENCH_NAMES.items():
        assert got.loc[t1_name, "Spec-Bench overall (x)"] == sb[sb_name]
        assert got.loc[t1_name, "Table 1 mean (x)"] == t1[t1_name]
    assert list(got.index) == [m for m in t1 if m in got.index]


def test_hass_rows_are_labelled_as_later_revision():
    later = {r["method"] for r in csv_rows("eagle3_table1") if r["arxiv_version"].startswith("later revision only")}
    assert later == set(methods.later_revision_methods()) == {"HASS"}
    t = methods.table1("LLaMA-Instruct 3.1 8B", 0, label_revisions=True)
    assert "HASS" + methods.LATER_REVISION in t.index and "HASS" not in t.index
    assert "HASS" in methods.table1("LLaMA-Instruct 3.1 8B", 0).index  # unlabelled by default


# --------------------------------------------------------------------------- bad input

def test_new_helpers_name_the_bad_parameter():
    with pytest.raises(ValueError, match="specbench_model"):
        methods.specbench_cross_check(specbench_model="Vicuna-70B")


def test_scalar_helpers_refuse_arrays_and_bools():
    with pytest.raises(ValueError, match="temperature must be one of 0, 1; got the boolean True"):
        methods.table1("Vicuna 13B", True)


def test_methods_as_a_single_string_is_named():
    with pytest.raises(TypeError, match="methods must be a list of method names"):
        methods.speedup_band(methods.table1(), "PLD")
    with pytest.raises(ValueError, match="column must be one of"):
        methods.is_increasing(methods.table1(), column="latency")
