"""specnb.advise.bench: speculation on against off, the verdict and its coded cautions
(bench pairs from data/samples/ and the field reports of tests/cases/field-reports/)."""

from __future__ import annotations

import json
import math

from specnb.advise import compare_bench
from specnb.notes import codes, messages
from specnb.vllm import sample_path


ON, OFF = sample_path("bench_on.json"), sample_path("bench_off.json")


MTP8, MTP1 = sample_path("bench_mtp8.json"), sample_path("bench_mtp1.json")


def cell(result, metric, stat=""):
    t = result.table
    return t[(t["metric"] == metric) & (t["stat"] == stat)].iloc[0]


def _run(**kw):
    base = {"output_throughput": 1000.0, "median_tpot_ms": 20.0, "median_ttft_ms": 100.0,
            "p99_tpot_ms": 30.0}
    base.update(kw)
    return base


def test_bench_own_input_flags_completed_dataset_and_tokens_per_request():
    base = {"output_throughput": 100.0, "median_tpot_ms": 10.0, "num_prompts": 200,
            "max_concurrency": 8, "request_rate": "inf"}
    off = {**base, "completed": 200, "total_output_tokens": 40000, "dataset_name": "sharegpt"}
    on = {**base, "completed": 180, "total_output_tokens": 36000, "dataset_name": "random",
          "output_throughput": 130.0, "median_tpot_ms": 8.0}
    r = compare_bench(on, off, goal="throughput")
    flags = " ".join(messages(r.comparability))
    assert r.verdict == "turn it on"
    assert codes(r.comparability) == ["runs-differ", "runs-differ"]
    assert "completed" in flags and "dataset_name" in flags
    # 200 output tokens per request in both runs; not a single request
    assert "output-tokens-differ" not in codes(r.comparability)
    assert "single-request" not in codes(r.comparability)
    r2 = compare_bench({**on, "total_output_tokens": 30000}, off, goal="throughput")
    assert "output-tokens-differ" in codes(r2.comparability)
    assert "200.0 vs 166.7 per request" in " ".join(messages(r2.comparability))


def test_pr_48892_deltas_as_printed():
    # vLLM PR #48892, GSM8K, concurrency 64: the PR prints these changes MTP 1 -> MTP 8
    r = compare_bench(MTP8, MTP1, goal="latency")
    printed = {("TPOT", "median"): "-26.1", ("TPOT", "p99"): "-16.2",
               ("TTFT", "median"): "+17.4", ("TTFT", "p99"): "+8.3",
               ("ITL", "median"): "+612.5", ("ITL", "p99"): "+12.4",
               ("output throughput", ""): "+30.5", ("request throughput", ""): "+28.2",
               ("duration", ""): "-21.9"}
    for (metric, stat), pct in printed.items():
        assert f"{cell(r, metric, stat)['change (%)']:+.1f}" == pct, (metric, stat)


def test_latency_verdict_rests_on_tpot_and_flags_itl():
    r = compare_bench(MTP8, MTP1, goal="latency")
    assert r.verdict == "turn it on"
    assert codes(r.reasons) == ["tpot-change"]
    assert {"itl-rose", "median-ttft-worse"} <= set(codes(r.cautions))
    assert "off-has-spec-counters" in codes(r.cautions)  # k=1 is not "off"
    assert r.acceptance["spec_decode_acceptance_length"] == 4.40


def test_throughput_verdict_and_cost_at_batch_1():
    r = compare_bench(ON, OFF, goal="throughput")
    assert r.verdict == "turn it on"
    row = cell(r, "output throughput")
    # EAGLE-3 / baseline = 2.357 (papers.md); cost per token 158.34 / 373.25 = 0.42 (article)
    assert f"{row['on/off']:.3f}" == "2.357"
    assert codes(r.reasons) == ["throughput-change"] and "x0.424" in r.reasons[0].message
    assert "no-spec-section" in codes(r.cautions)


def test_swapped_runs_say_keep_it_off():
    assert compare_bench(OFF, ON, goal="throughput").verdict == "keep it off"
    assert compare_bench(MTP1, MTP8, goal="latency").verdict == "keep it off"


def test_within_tolerance_is_no_clear_difference():
    r = compare_bench(_run(median_tpot_ms=19.5, spec_decode_acceptance_length=1.6), _run())
    assert r.verdict == "no clear difference"
    assert "acceptance-length-shrink" in codes(r.cautions)
    assert compare_bench(_run(median_tpot_ms=19.5), _run(), tolerance=0.01).verdict == \
        "turn it on"


def test_acceptance_caution_depends_on_gamma():
    # k = 1 (PR #48892): tau 1.84 < 2 is all gamma 1 allows; no "shrink" caution
    r = compare_bench(MTP1, MTP8)
    assert "gamma1-grow" in codes(r.cautions) and "acceptance-length-shrink" not in codes(r.cautions)
    text = " ".join(messages(r.cautions))
    assert "at gamma 1" in text and "try a larger" in text
    r = compare_bench(_run(spec_decode_acceptance_length=1.6, spec_decode_num_drafts=100,
                           spec_decode_draft_tokens=300), _run())
    assert any("1.60 < 2 at gamma 3: shrink" in c.message for c in r.cautions)  # reads right


def test_comparability_and_failures_are_flagged():
    r = compare_bench(_run(max_concurrency=8, failed=3), _run(max_concurrency=64))
    assert {"runs-differ", "failed-requests"} <= set(codes(r.cautions))
    text = " ".join(messages(r.cautions))
    assert "differ in max_concurrency" in text and "3 failed requests" in text


def test_missing_tpot_cannot_tell():
    r = compare_bench({"output_throughput": 2.0}, {"output_throughput": 1.0}, goal="latency")
    assert r.verdict == "cannot tell"


def test_percentiles_beyond_p99_are_kept():
    r = compare_bench(_run(**{"p99.9_tpot_ms": 40.0, "p50_tpot_ms": 19.0}),
                      _run(**{"p99.9_tpot_ms": 50.0, "p50_tpot_ms": 20.0}))
    stats = set(r.table[r.table["metric"] == "TPOT"]["stat"])
    assert {"median", "p50", "p99", "p99.9"} <= stats


def test_the_same_file_or_identical_results_twice_is_a_caution(tmp_path):
    # fault 40: `bench X X` said only "no clear difference"
    from specnb.notes import codes
    from specnb.vllm import sample_path

    on = sample_path("bench_on.json")
    same = compare_bench(on, on)
    assert codes(same.comparability)[0] == "same-file"
    assert "same-file" in codes(same.cautions)
    copy = tmp_path / "copy.json"
    copy.write_bytes(on.read_bytes())
    assert codes(compare_bench(on, copy).comparability)[0] == "identical-results"
    assert {"same-file", "identical-results"}.isdisjoint(
        codes(compare_bench(on, sample_path("bench_off.json")).cautions))


# ---------------------------------------------------------------- validity (issue 26, R3)
from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parents[1] / "cases" / "vllm" / "0.33.0"


def test_random_dataset_with_its_implied_ignore_eos_is_flagged_from_the_console():
    bench = CASES / "bench"
    r = compare_bench(bench / "spec-k3.json", bench / "baseline.json",
                      on_console=(bench / "spec-k3.stdout.txt").read_text(),
                      off_console=(bench / "baseline.stdout.txt").read_text())
    assert codes(r.validity) == ["random-dataset", "ignore-eos"]
    assert "[random-dataset]" in str(r)
    # without the console output the result JSON of vLLM 0.33 names no dataset
    assert compare_bench(bench / "spec-k3.json", bench / "baseline.json").validity == ()


@pytest.mark.parametrize("log, code", [("synthetic", "synthetic-acceptance"),
                                       ("fly", "lossy-acceptance"), ("standard", None)])
def test_server_with_synthetic_or_lossy_acceptance_is_flagged(log, code):
    text = (CASES / "server" / f"non_default_args_{log}.log").read_text()
    r = compare_bench(_run(median_tpot_ms=15.0), _run(), server_log=text)
    assert codes(r.validity) == ([code] if code else [])


def test_chat_model_without_template_and_reasoning_ttft_are_flagged():
    chat = {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "dataset_name": "sharegpt"}
    r = compare_bench(_run(**chat, backend="openai"), _run(**chat, backend="openai"))
    assert codes(r.validity) == ["no-chat-template"]
    assert compare_bench(_run(**chat, backend="openai-chat"),
                         _run(**chat, backend="openai-chat")).validity == ()
    assert codes(compare_bench(_run(**chat, backend="openai-chat", skip_chat_template=True),
                               _run(**chat, backend="openai-chat")).validity) == \
        ["no-chat-template"]
    # TTFT 900 of an end-to-end 1,000 ms on a chat endpoint: the reasoning phase in TTFT?
    slow = _run(backend="openai-chat", median_ttft_ms=900.0, median_e2el_ms=1000.0)
    assert codes(compare_bench(slow, _run(backend="openai-chat", median_e2el_ms=1000.0)
                               ).validity) == ["reasoning-in-ttft"]
    assert codes(compare_bench(_run(backend="openai-chat", model_id="deepseek-ai/DeepSeek-R1"),
                               _run()).validity) == ["reasoning-in-ttft"]


def test_output_lengths_that_differ_are_not_papered_over_with_ignore_eos():
    base = {"output_throughput": 100.0, "median_tpot_ms": 10.0, "completed": 100}
    r = compare_bench({**base, "total_output_tokens": 30000},
                      {**base, "total_output_tokens": 20000})
    note = [n for n in r.comparability if n.code == "output-tokens-differ"][0]
    assert "set --ignore-eos" not in note.message and "Do not" in note.message


def test_a_ttft_verdict_beside_tpot_and_throughput():
    # TPOT 20 -> 15 (-25 %), throughput 1000 -> 1300 (+30 %), TTFT 100 -> 120 (+20 %)
    on = _run(median_tpot_ms=15.0, output_throughput=1300.0, median_ttft_ms=120.0)
    r = compare_bench(on, _run())
    assert {g: v for g, (v, _) in r.verdicts.items()} == {
        "latency": "turn it on", "throughput": "turn it on", "ttft": "keep it off"}
    assert r.verdicts["ttft"][1].code == "ttft-change"
    assert compare_bench(on, _run(), goal="ttft").verdict == "keep it off"
    assert compare_bench(_run(median_ttft_ms=102.0), _run(), goal="ttft").verdict == \
        "no clear difference"
    assert "by TTFT: keep it off" in str(r)


def test_file_validity_flags_each_file_on_its_own_with_the_codes_of_validity(tmp_path):
    """file_validity (plan --calibrate-bench) gives each file the codes validity() gives that
    run as the ON side of a pair with a clean OFF run, without the ON/OFF prefix."""
    from specnb.advise.bench import file_validity, validity

    runs = {"random.json": _run(dataset_name="random", backend="openai"),
            "synthetic.json": _run(rejection_sample_method="synthetic"),
            "raw-chat.json": _run(model_id="meta-llama/Llama-3.1-8B-Instruct",
                                  skip_chat_template=True),
            "clean.json": _run()}
    paths = []
    for name, d in runs.items():
        (tmp_path / name).write_text(json.dumps(d))
        paths.append(str(tmp_path / name))
    got = file_validity(paths)
    assert list(got) == paths
    assert [codes(got[p]) for p in paths] == [
        ["random-dataset", "ignore-eos"], ["synthetic-acceptance"], ["no-chat-template"], []]
    for p, d in zip(paths, runs.values()):
        pair = validity(d, _run())
        assert codes(got[p]) == codes(pair)
        for mine, theirs in zip(got[p], pair):
            assert theirs.message.endswith(mine.message)
            assert not mine.message.startswith("ON run")
    # dicts are named by their place
    assert list(file_validity([_run(), _run()])) == ["run 1", "run 2"]


def test_a_simulated_run_is_flagged_as_a_forecast_not_a_measurement():
    from specnb.advise.bench import file_validity
    sim = {"backend": "specnb-simulate", "mean_tpot_ms": 10.0, "output_throughput": 100.0,
           "completed": 8}
    real = {"backend": "openai-chat", "mean_tpot_ms": 12.0, "output_throughput": 90.0,
            "completed": 8}
    v = file_validity([sim, real])
    assert [n.code for n in v["run 1"]] == ["simulated-run"] and v["run 2"] == []


def test_no_ratio_against_a_base_that_prints_as_zero():
    from specnb.advise.bench import _change

    assert all(math.isnan(x) for x in _change(0.004, 14.45) + _change(1e-13, 0.5))
    assert _change(2.0, 3.0) == (1.5, 50.0)
    # trial4 K5: the text table shows "-" where no ratio (or no OFF figure) exists, not NaN
    on, off = ({"median_itl_ms": itl, "median_tpot_ms": t, "output_throughput": 100.0}
               for itl, t in ((14.45, 5.0), (0.0, 6.0)))
    text = str(compare_bench(on, off))
    itl = next(line for line in text.splitlines() if line.strip().startswith("ITL"))
    assert "NaN" not in text and itl.split()[-2:] == ["-", "-"], text
