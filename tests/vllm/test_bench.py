"""specnb.vllm.bench: vllm bench serve --save-result files read into numbers."""

from __future__ import annotations

import json

import pytest

from specnb.advise import compare_bench
from specnb.vllm import read_bench, sample_path


ON, OFF = sample_path("bench_on.json"), sample_path("bench_off.json")


MTP8, MTP1 = sample_path("bench_mtp8.json"), sample_path("bench_mtp1.json")


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="goal must be one of"):
        compare_bench(ON, OFF, goal="speed")
    with pytest.raises(ValueError, match="tolerance"):
        compare_bench(ON, OFF, tolerance=1.5)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        read_bench(broken)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="vllm bench serve"):
        read_bench(other)
    with pytest.raises(FileNotFoundError):
        read_bench(tmp_path / "missing.json")
    assert "goal: latency" in str(compare_bench(MTP8, MTP1))


def test_samples_say_where_their_numbers_come_from():
    for path in (ON, OFF, MTP8, MTP1):
        assert read_bench(path)["label"].startswith("CONSTRUCTED from")


def test_bench_summary_lists_one_run():
    from specnb.vllm import bench_summary

    df = bench_summary(MTP1)
    got = {(m, s): v for m, s, v in zip(df["metric"], df["stat"], df["value"])}
    assert got[("TPOT", "median")] == 37.18 and got[("TTFT", "p99")] == 1437.07
    assert got[("output throughput", "")] == 1646.15
