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


# ------------------------------------------------- how a run was made (issue 26, R2, R3)
from pathlib import Path

from specnb.vllm.bench import bench_setup, read_bench_console, server_acceptance_method

CASES = Path(__file__).resolve().parents[1] / "cases" / "vllm"


@pytest.mark.parametrize("version", ["0.25.1", "0.33.0"])
def test_console_namespace_of_vllm_bench_serve_is_read(version):
    # the oracle's own vllm bench serve console output (its first line prints the arguments)
    bench = CASES / version / "bench"
    console = read_bench_console((bench / "spec-k3.stdout.txt").read_text())
    argv = json.loads((bench / "inputs.jsonl").read_text().splitlines()[0])["argv"]
    assert console["dataset_name"] == argv[argv.index("--dataset-name") + 1]
    assert console["backend"] == argv[argv.index("--backend") + 1]
    assert console["ignore_eos"] is ("--ignore-eos" in argv)
    assert console["temperature"] == float(argv[argv.index("--temperature") + 1])
    # vLLM 0.33 then sets ignore_eos itself for a random dataset on an OpenAI backend
    setup = bench_setup(read_bench(bench / "spec-k3.json"), console)
    assert setup["ignore_eos"] is True and setup["ignore_eos_implied"] is True
    with pytest.raises(ValueError, match="Namespace"):
        read_bench_console("Successful requests: 12")


def test_setup_from_metadata_keys_and_a_real_dataset():
    setup = bench_setup({"dataset_name": "sharegpt", "ignore_eos": "true", "backend": "openai"})
    assert setup["ignore_eos"] is True and "ignore_eos_implied" not in setup
    assert "ignore_eos" not in bench_setup({"dataset_name": "sharegpt", "backend": "openai"})
    assert bench_setup({"dataset_name": "timed_trace"})["ignore_eos"] is True


@pytest.mark.parametrize("name, method", [("synthetic", "synthetic"), ("fly", "fly"),
                                          ("standard", None)])
def test_server_rejection_method_from_vllm_start_up_line(name, method):
    text = (CASES / "0.33.0" / "server" / f"non_default_args_{name}.log").read_text()
    assert server_acceptance_method(text) == method
    assert server_acceptance_method(
        "--speculative-config '{\"method\": \"ngram\", \"synthetic_acceptance_rates\": [0.5]}'"
    ) == "synthetic"


@pytest.mark.parametrize("key", ["mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
                                 "output_throughput", "request_throughput",
                                 "completed"])  # trial4 C6: completed 0 said "turn it on"
@pytest.mark.parametrize("value", [0, 0.0, -1.0, float("nan"), float("inf")])
def test_zero_negative_or_non_finite_tpot_or_throughput_is_refused(key, value):
    # R2: a TPOT of 0 in the ON file said "turn it on"
    run = {"output_throughput": 100.0, "median_tpot_ms": 10.0, "mean_tpot_ms": 10.0,
           "p99_tpot_ms": 12.0, "request_throughput": 1.0, key: value}
    with pytest.raises(ValueError, match=key):
        read_bench(run)
    with pytest.raises(ValueError, match=key):
        compare_bench(run, {**run, key: 5.0})
    assert read_bench({**run, key: 5.0, "std_tpot_ms": 0.0})["std_tpot_ms"] == 0.0


@pytest.mark.parametrize("key, value", [("mean_tpot_ms", 1e300), ("output_throughput", 1e16),
                                        ("completed", 1e300)])
def test_an_implausible_value_is_refused_not_printed_in_300_digits(key, value):
    """T4-K2: a 1e300 ms TPOT printed 300 digits; above MAX_VALUE (1e15) no run measures it."""
    from specnb.vllm.bench import MAX_VALUE

    run = {"output_throughput": 100.0, "mean_tpot_ms": 10.0, "completed": 8, key: value}
    with pytest.raises(ValueError, match=key):
        read_bench(run)
    with pytest.raises(ValueError, match=key):
        compare_bench(run, {**run, key: 5.0})
    assert read_bench({**run, key: MAX_VALUE})[key] == MAX_VALUE


K3 = sample_path("bench_mtp8.json")  # a published run: 104,880 drafts of 8 tokens


@pytest.mark.parametrize("edit, match", [
    ({"spec_decode_acceptance_length": 0.5},
     r"spec_decode_acceptance_length .* is 0\.5; it must be \[1, 9\] \(1 \+ draft tokens / "
     r"drafts = 1 \+ 839040 / 104880\)"),
    ({"spec_decode_acceptance_length": 9.5}, r"spec_decode_acceptance_length .* is 9\.5"),
    ({"spec_decode_accepted_tokens": 10 ** 8},
     r"spec_decode_accepted_tokens 1e\+08.*accepted tokens \(1e\+08\) exceed draft tokens "
     r"\(839040\)"),
    ({"spec_decode_per_position_acceptance_rates": [0.5, 0.9, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1]},
     r"spec_decode_per_position_acceptance_rates \[0\.5, 0\.9, .*accepted at position 1 "
     r"\(94392\) exceeds position 0 \(52440\).*cannot rise"),
    ({"spec_decode_acceptance_length": 3.0},  # inside [1, 9], not 1 + accepted / drafts
     r"spec_decode_acceptance_length is 3, but the counters beside it give 4\.40236"),
    ({"spec_decode_acceptance_rate": 90.0},
     r"spec_decode_acceptance_rate is 90, but the counters beside it give 42\.529"),
    ({"spec_decode_per_position_acceptance_rates": [0.5] * 7},  # 8 tokens a draft, 7 positions
     r"draft tokens / drafts = 8\.00 tokens per step exceeds the 7 per-position series"),
])
def test_impossible_spec_decode_keys_are_refused_naming_the_key(capsys, tmp_path, edit, match):
    """T8a-06: one rule for the counters (metrics.acceptance_stats, as `specnb metrics` reads
    them), and tau within [1, draft tokens / drafts + 1]; bench and plan both refuse, exit 2."""
    from specnb.cli import main

    d = {**json.loads(K3.read_text()), **edit}
    read_bench(K3)  # the published file itself reads
    bad = tmp_path / "on.json"
    bad.write_text(json.dumps(d))
    with pytest.raises(ValueError, match=match):
        read_bench(bad)
    capsys.readouterr()
    for argv in (["bench", str(bad), str(MTP1)],
                 ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
                  "--context", "1064", "--batch", "1", "16", "--gamma", "8",
                  "--calibrate-bench", str(bad), str(OFF)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "spec_decode_" in err and "missing" not in err  # the key is there: named


def test_a_tau_without_counters_is_bounded_by_the_rates_or_by_1(tmp_path):
    d = {k: v for k, v in json.loads(K3.read_text()).items()
         if k not in ("spec_decode_num_drafts", "spec_decode_draft_tokens",
                      "spec_decode_accepted_tokens")}
    assert read_bench({**d, "spec_decode_acceptance_length": 9.0})  # 8 rates: up to 9
    with pytest.raises(ValueError, match=r"is 9\.5; it must be \[1, 9\] \(the per-position"):
        read_bench({**d, "spec_decode_acceptance_length": 9.5})
    bare = {k: v for k, v in d.items() if k != "spec_decode_per_position_acceptance_rates"}
    with pytest.raises(ValueError, match=r"is 0\.9; it must be at least 1"):
        read_bench({**bare, "spec_decode_acceptance_length": 0.9})
