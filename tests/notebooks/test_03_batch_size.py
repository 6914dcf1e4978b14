"""notebooks/03_batch_size.ipynb (executed once per session by tests/conftest.py): the largest
paying batches and the extra cost below 1x, from the published tables."""

import json

import pytest

from tests.notebooks.support import source
from tests.published import csv_rows

pytestmark = pytest.mark.slow  # reads the session's executed notebooks


def test_batch_largest_paying(records):
    df = records["03_batch_size"]["batch.largest_paying"].set_index("index")
    assert df.loc["SGLang (Table 3)"].tolist() == [16, 64]
    assert df.loc["vLLM (Table 5)"].tolist() == [24, 56]


def test_03_eagle_extra_cost_range_from_the_data(records, shown, executed_notebooks):
    rows = csv_rows("eagle3_table3_sglang_batch")
    extra = [100 * (1 / float(r["throughput_ratio"]) - 1) for r in rows
             if r["method"] == "EAGLE" and float(r["throughput_ratio"]) < 1]
    vllm = [100 * (1 / float(r["throughput_ratio"]) - 1) for r in csv_rows("eagle3_table5_vllm_batch")
            if r["method"] == "EAGLE" and float(r["throughput_ratio"]) < 1]
    got = records["03_batch_size"]["batch.below_1x_extra_cost_pct"].set_index(["table", "method"])
    assert got.loc[("SGLang (Table 3)", "EAGLE"), "min"] == pytest.approx(min(extra))
    assert got.loc[("SGLang (Table 3)", "EAGLE"), "max"] == pytest.approx(max(extra))
    assert got.loc[("vLLM (Table 5)", "EAGLE"), "max"] == pytest.approx(max(vllm))
    stated = f"{round(min(extra))}-{round(max(extra))}%"
    src = json.dumps(source("03_batch_size"))
    assert stated == "1-14%" and stated in src and "7-14%" not in src
    assert f"up to {max(vllm):.1f}%" in executed_notebooks["03_batch_size"].answer
