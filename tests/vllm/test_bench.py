"""specnb.vllm.bench: vllm bench serve --save-result files read into numbers."""

from __future__ import annotations

import json

import numpy as np

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


# ------------------------------------------------------------ bench_point (calibration)
_RUN = {"model_id": "m/x", "max_concurrency": 8, "completed": 80, "total_input_tokens": 8000,
        "total_output_tokens": 20480, "mean_tpot_ms": 9.5, "mean_ttft_ms": 40.0,
        "output_throughput": 800.0}
_SPEC = {"spec_decode_num_drafts": 500, "spec_decode_draft_tokens": 1500,
         "spec_decode_accepted_tokens": 900, "spec_decode_acceptance_length": 2.8,
         "spec_decode_acceptance_rate": 60.0}


def test_bench_point_reads_state_tau_and_gamma_from_the_keys(tmp_path):
    from specnb.vllm import bench_point, bench_points

    off = bench_point(dict(_RUN))
    assert off["speculation"] is False and off["concurrency"] == 8
    assert off["input_len"] == 100 and off["output_len"] == 256
    on = bench_point({**_RUN, **_SPEC})
    assert on["speculation"] is True and on["tau"] == 2.8 and on["gamma"] == 3
    rates = bench_point({**_RUN, **_SPEC, "spec_decode_per_position_acceptance_rates":
                         [0.8, 0.6, 0.4, 0.2]})
    assert rates["gamma"] == 4  # num_speculative_tokens = the number of positions
    labelled = bench_point(dict(_RUN), label="on")  # an older vLLM writes no spec keys
    assert labelled["speculation"] is True and np.isnan(labelled["tau"])
    p = tmp_path / "r.json"
    p.write_text(json.dumps({**_RUN, **_SPEC}))
    df = bench_points([p, p], ["auto", "on"])
    assert list(df["speculation"]) == [True, True] and df["file"][0] == str(p)


@pytest.mark.parametrize("run, label, match", [
    ({k: v for k, v in _RUN.items() if k != "max_concurrency"}, None,
     "no max_concurrency \\(max_concurrency: the batch size"),
    ({**_RUN, "max_concurrency": None}, None, "no max_concurrency"),
    ({k: v for k, v in _RUN.items() if k not in ("mean_tpot_ms", "mean_ttft_ms")}, None,
     "no mean_tpot_ms, mean_ttft_ms"),
    ({**_RUN, "max_concurrency": 2.5}, None, "max_concurrency must be an integer >= 1"),
    ({**_RUN, "completed": 0}, None, "completed is 0"),
    ({**_RUN, **_SPEC}, "off", "labelled off, but its spec-decode counters show 500 drafts"),
    (dict(_RUN), "maybe", "label must be 'on' or 'off'"),
])
def test_bench_point_bad_input(run, label, match):
    from specnb.vllm import bench_point

    with pytest.raises(ValueError, match=match):
        bench_point(run, label=label)


def test_bench_points_label_count():
    from specnb.vllm import bench_points

    with pytest.raises(ValueError, match="one label per bench file: 1 file\\(s\\), 2 label"):
        bench_points([dict(_RUN)], ["on", "off"])
