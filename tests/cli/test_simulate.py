"""`specnb simulate`: --json keys, bench-format files that `specnb bench` and
`specnb plan --calibrate-bench` read, the text table, and exit 2 with one line per bad input."""

from __future__ import annotations

import json

import pytest

from specnb.cli import main
from specnb.vllm import bench_point

BASE = ["simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
        "--gamma", "3", "--tau", "2.6", "--input-len", "500", "--output-len", "40",
        "--num-prompts", "24"]  # BASE[:-2]: without --num-prompts (given twice is refused)


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_has_the_issues_keys_and_ratios_of_the_files(capsys, tmp_path):
    code, out, err = run(capsys, *BASE, "--concurrency", "8", "--json",
                         "--save-result", str(tmp_path))
    assert code == 0, err
    r = json.loads(out)
    assert {"policies", "off", "on", "output_throughput_ratio", "tpot_ratio",
            "ttft_ratio"} <= set(r)
    assert r["tpot_ratio"] == pytest.approx(r["on"]["mean_tpot_ms"] / r["off"]["mean_tpot_ms"])
    assert "ttfts" not in r["off"]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["k3.json", "off.json"]
    on = bench_point(tmp_path / "k3.json")
    assert on["speculation"] and on["gamma"] == 3 and on["concurrency"] == 8
    assert json.loads((tmp_path / "off.json").read_text())["ttfts"]
    # specnb bench reads them as a real on / off pair
    code, out, err = run(capsys, "bench", str(tmp_path / "k3.json"), str(tmp_path / "off.json"))
    assert code == 0, err
    assert "TPOT" in out
    code, out, err = run(capsys, "plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                         "--draft", "eagle3", "--context", "520", "--batch", "8", "16",
                         "--gamma", "3", "--calibrate-bench", str(tmp_path / "k3.json"),
                         str(tmp_path / "off.json"), "--json")
    assert code == 0, err
    assert json.loads(out)["calibration_bench"]["tau"]["3"] == pytest.approx(on["tau"])


def test_text_table_and_rate_mode_with_a_schedule_and_disable_by_batch_size(capsys):
    code, out, err = run(capsys, *BASE[:7], "--gamma", "3", "1", "--tau", "2.6",
                         "--input-len", "300",
                         "--output-len", "30", "--num-prompts", "20", "--request-rate", "20",
                         "--schedule", "[[1, 4, 3], [5, 1024, 1]]",
                         "--disable-by-batch-size", "4")
    assert code == 0, err
    # the table's latencies are means (specnb bench judges by medians): the headers say which
    assert "policy" in out and "mean TTFT ms" in out and "mean TPOT ms" in out
    assert "mean TPOT x" in out
    for name in ("off", "k=1", "k=3", "schedule", "disable_by_batch_size"):
        assert name in out
    assert "goal latency: best policy" in out


@pytest.mark.parametrize("extra, match", [
    (["--concurrency", "0"], "--concurrency must be >= 1"),
    (["--request-rate", "0"], "--request-rate must be > 0 requests/s, or inf"),
    (["--request-rate", "-2"], "--request-rate must be > 0 requests/s, or inf"),
    (["--request-rate", "nan"], "--request-rate must be > 0 requests/s, or inf"),
    ([], "give --concurrency (closed loop) or --request-rate"),
    (["--concurrency", "2", "--max-num-batched-tokens", "3"],
     "--max-num-batched-tokens 3 is below one request's verify step"),
    (["--concurrency", "2", "--max-num-batched-tokens", "10", "--max-num-seqs", "256"],
     "--max-num-batched-tokens 10 is below --max-num-seqs 256"),
    (["--concurrency", "2", "--max-num-seqs", "9000"],
     "--max-num-batched-tokens 8192 (vLLM's default on H100-SXM) is below --max-num-seqs 9000"),
])
def test_bad_input_exits_2_with_one_line(capsys, extra, match):
    code, out, err = run(capsys, *BASE, *extra)
    assert code == 2 and match in err and len(err.strip().splitlines()) == 1


def test_bad_lengths_logs_and_profiles(capsys, tmp_path):
    base = [a for a in BASE if a not in ("--input-len", "500", "--output-len", "40")]
    code, _, err = run(capsys, *base, "--input-len", "0", "--output-len", "5",
                       "--concurrency", "2")
    assert code == 2 and "--input-len must be >= 1" in err
    log = tmp_path / "log.jsonl"
    log.write_text('{"prompt_len": 10, "output_len": 3}\n{"prompt_len": 5}\n')
    code, _, err = run(capsys, *base, "--requests", str(log), "--concurrency", "2")
    assert code == 2 and "log.jsonl:2: a row needs the served response" in err
    from specnb import acceptance_profile as AP

    c = AP.Counters(10, 5, 10, 5, (3, 2), (5, 5))
    AP.save(AP.build("eagle3", {2: [(None, {None: c})]}), tmp_path / "p.json")
    args = [a for a in base if a not in ("--tau", "2.6")]
    code, _, err = run(capsys, *args, "--acceptance-profile", str(tmp_path / "p.json"),
                       "--input-len", "100", "--output-len", "5", "--concurrency", "2",
                       "--no-schedule")
    assert code == 2 and "has gammas [2] but the policy drafts 3" in err


def test_save_result_on_a_file_exits_2_before_simulating(capsys, tmp_path):
    f = tmp_path / "taken"
    f.write_text("x")  # an existing file once gave a FileExistsError traceback
    code, out, err = run(capsys, *BASE, "--concurrency", "2", "--save-result", str(f))
    assert code == 2 and out == "" and "--save-result" in err and "directory" in err
    assert len(err.strip().splitlines()) == 1 and f.read_text() == "x"



def test_a_huge_num_prompts_is_refused_with_an_estimate_before_simulating(capsys):
    from specnb.cli import simulate as C

    code, out, err = run(capsys, *BASE[:-2], "--concurrency", "8", "--num-prompts", "100000000")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--num-prompts 100000000" in err and "to simulate" in err
    assert "16.7 h to simulate" in err  # 1e8 x (40 + 10 + 10) / 100,000 a second
    # the largest count it names is accepted by the same rule
    most = int(err.split("give --num-prompts <= ")[1].split(" ")[0].replace(",", ""))
    args = C.register(__import__("argparse").ArgumentParser().add_subparsers()).parse_args(
        BASE[1:-2] + ["--concurrency", "8", "--num-prompts", str(most)])
    assert C.estimate_seconds(args)[1] <= C.MAX_SIM_S
    args.num_prompts = most + 2
    assert C.estimate_seconds(args)[1] > C.MAX_SIM_S


def test_a_long_simulation_is_warned_with_its_estimate(capsys, monkeypatch):
    from specnb.cli import simulate as C

    monkeypatch.setattr(C, "WARN_SIM_S", 0.0)  # any load warns: the run itself is the usual
    code, out, err = run(capsys, *BASE, "--concurrency", "8", "--no-schedule")
    assert code == 0, err
    assert "warning: --num-prompts 24: at least" in err and "over 2 policies" in err
    # 24 requests x (40 + ceil(40 / 4)) steps: the lower bound the message prints
    assert "1.2e+03 request-steps" in err


def test_range_ratio_is_checked_by_the_library_and_named_as_the_flag(capsys):
    code, out, err = run(capsys, *BASE, "--concurrency", "2", "--range-ratio", "1.5")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--range-ratio must be in [0, 1)" in err and "1.5" in err


def test_estimate_counts_the_policies_the_run_compares(capsys):
    from specnb import simulate as M
    from specnb.cli import simulate as C

    args = C.register(__import__("argparse").ArgumentParser().add_subparsers()).parse_args(
        BASE[1:] + ["--concurrency", "8", "--gamma", "2", "4", "--disable-by-batch-size", "4",
                    "--schedule", "[[1, 8, 4], [9, 1024, 2]]"])
    pols = C._policies(args, M, 1024, json.loads(args.schedule))
    assert [p.name for p in pols] == ["off", "k=2", "k=4", "schedule", "disable_by_batch_size"]
    steps, _, n = C.estimate_seconds(args)
    assert n == 5 and steps == M.min_request_steps([40] * 24, pols)
    code, out, err = run(capsys, *BASE, "--concurrency", "8", "--schedule", "[[1, 8")
    assert code == 2 and "--schedule is not JSON" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra, match", [
    (["--schedule", "[[1,8,3]]", "--no-schedule"], "contradict"),  # trial4 M2: was silent
    (["--schedule", "null"], "--schedule null"),  # trial4 C3: was read as no schedule
])
def test_a_schedule_the_run_would_drop_is_refused(capsys, extra, match):
    code, out, err = run(capsys, *BASE[:-2], "--num-prompts", "4", "--concurrency", "2", *extra)
    assert code == 2 and match in err and not out and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("schedule,match", [
    ('[[2,8,3]]', "first range must start at batch size 1"),  # config check's own rule
    ('[[1,8,-1]]', "K must be >= 0"),  # (a K above --gamma is clamped, as vLLM: T9-08)
])
def test_a_schedule_is_checked_by_the_one_schedule_rule_even_when_it_is_one_k(
        capsys, schedule, match):
    code, out, err = run(capsys, *BASE[:-2], "--num-prompts", "4", "--concurrency", "2",
                         "--schedule", schedule)
    assert code == 2 and match in err and "--schedule" in err and not out


def test_a_one_k_schedule_says_it_is_the_static_row_and_disable_says_it_was_removed(capsys):
    code, out, err = run(capsys, *BASE[:-2], "--num-prompts", "4", "--concurrency", "2",
                         "--schedule", "[[1,8,3]]", "--disable-by-batch-size", "2")
    assert code == 0, err
    assert "the static policy of that K above" in out and "schedule simulated" not in out
    assert "removed from vLLM in PR #35060" in out


def test_a_load_whose_requests_cannot_fit_is_refused_with_the_reason(capsys):
    argv = [*BASE[:-2], "--num-prompts", "4", "--concurrency", "2"]
    argv[argv.index("--input-len") + 1] = "1000000"
    code, out, err = run(capsys, *argv)
    assert code == 2 and "nothing can be served" in err and "NoneType" not in err and not out


def test_a_folder_given_as_the_request_log_is_named_a_folder(capsys, tmp_path):
    argv = [a for a in BASE if a not in ("--input-len", "500", "--output-len", "40",
                                         "--num-prompts", "24")]
    code, out, err = run(capsys, *argv, "--requests", str(tmp_path), "--concurrency", "2")
    assert code == 2 and "is a folder" in err and not out


def test_a_small_budget_alone_caps_max_num_seqs_as_vllm_does(capsys):
    """vLLM runs --max-num-batched-tokens 10 alone (its default max_num_seqs capped at 10,
    EngineArgs._set_default_max_num_seqs_and_batched_tokens_args): so does simulate."""
    short = {"500": "30", "40": "4", "24": "4"}  # --input-len, --output-len, --num-prompts
    code, out, err = run(capsys, *[short.get(a, a) for a in BASE], "--concurrency", "2",
                         "--max-num-batched-tokens", "10", "--no-schedule", "--json")
    assert code == 0, err
    r = json.loads(out)["setup"]
    assert r["max_num_seqs"] == 10 and r["max_num_batched_tokens"] == 10


def test_notes_for_a_profile_beyond_its_log_and_a_lockstep_ttft(capsys, tmp_path):
    # trial 5 C9: a load whose contexts pass the profile's log says so, as plan does;
    # C10: a fixed-length closed loop's TTFT ratio far from 1 carries notebook 10's caveat
    from specnb import acceptance_profile as AP

    c = AP.Counters(10, 5, 10, 5, (3, 2, 1), (5, 5, 5))
    AP.save(AP.build("eagle3", {3: [(None, {None: c})]}, source={"context_range": [20, 200]}),
            tmp_path / "p.json")
    args = [a for a in BASE if a not in ("--tau", "2.6")]
    code, out, err = run(capsys, *args, "--acceptance-profile", str(tmp_path / "p.json"),
                         "--concurrency", "8", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert "profile-context-extrapolated" in r["note_codes"]
    # 500 + 40 tokens: the last step drafts at context 539 (replay's count of contexts)
    assert "context 539 is beyond" in r["notes"][r["note_codes"].index("profile-context-extrapolated")]
    code, out, _ = run(capsys, *BASE, "--concurrency", "8", "--json")
    r = json.loads(out)
    lock = "ttft-closed-loop-lockstep" in r["note_codes"]
    assert lock == (r["ttft_ratio"] < 0.9)
    # trial 6 M2: a TTFT that got worse is a real cost, not the lockstep: no such note
    code, out, _ = run(capsys, "simulate", "--gpu", "A40", "--model", "Llama-3.1-8B", "--draft",
                       "eagle3", "--gamma", "3", "--tau", "2.6", "--input-len", "4000",
                       "--output-len", "128", "--num-prompts", "32", "--concurrency", "16",
                       "--json")
    r = json.loads(out)
    assert r["ttft_ratio"] > 1.1 and "ttft-closed-loop-lockstep" not in r["note_codes"]
    code, out, _ = run(capsys, *BASE, "--request-rate", "4", "--json")  # open loop: never
    assert "ttft-closed-loop-lockstep" not in json.loads(out)["note_codes"]


def test_engine_vllm_v0_schedules_each_run_with_v0s_defaults(capsys):
    # V0 turned chunked prefill on by default above 32K positions only without speculation
    # (simulate.v0_engine_config): the off run chunks, the speculating run prefills first
    argv = ["simulate", "--gpu", "H100-SXM", "--gpus", "4", "--model", "Llama-3.1-70B",
            "--draft", "ngram", "--gamma", "4", "--tau", "3.3", "--input-len", "800",
            "--output-len", "30", "--num-prompts", "12", "--request-rate", "4",
            "--no-schedule", "--json"]
    code, out, err = run(capsys, *argv, "--engine", "vllm-v0")
    assert code == 0, err
    r = json.loads(out)
    assert "v0-defaults-per-run" in r["note_codes"]
    assert r["setup"]["max_num_batched_tokens"] == 131072  # the speculating run's budget
    code, out, _ = run(capsys, *argv)  # V1: one scheduler for both runs, no such note
    assert "v0-defaults-per-run" not in json.loads(out)["note_codes"]


def test_plan_and_simulate_say_when_flash_attention_2_costs_the_verify_steps(capsys):
    code, out, _ = run(capsys, "plan", "--gpu", "L40S", "--model", "Llama-3.1-8B", "--draft",
                       "eagle3", "--context", "2000", "--batch", "1", "4", "--gamma", "3",
                       "--alpha", "0.7", "--json")
    assert code == 0 and "fa2-multi-token-attention" in json.loads(out)["note_codes"]
    argv = [a if a != "H100-SXM" else "L40S" for a in BASE]
    code, out, _ = run(capsys, *argv, "--concurrency", "4", "--json")
    assert code == 0 and "fa2-multi-token-attention" in json.loads(out)["note_codes"]
    code, out, _ = run(capsys, *BASE, "--concurrency", "4", "--json")
    assert "fa2-multi-token-attention" not in json.loads(out)["note_codes"]


def test_one_tau_with_several_gammas_is_read_at_the_first_gamma_as_plan_does(capsys):
    """T5-W6: simulate and plan share specnb.theory.tau_by_gamma; simulate says so too."""
    from specnb.theory import tau_by_gamma

    code, out, err = run(capsys, *BASE[:7], "--gamma", "1", "3", "--tau", "1.8",
                         "--input-len", "200", "--output-len", "16", "--num-prompts", "4",
                         "--concurrency", "1", "--json")
    assert code == 0, err
    res = json.loads(out)
    i = res["note_codes"].index("tau-read-at-first-gamma")
    assert res["notes"][i] == tau_by_gamma(1.8, [1, 3])[2].message
    assert "alpha 0.800" in res["setup"]["acceptance"]


def test_simulate_serves_the_acceptance_profiles_ngram_window_as_plan_does(capsys, tmp_path):
    """T6-W8: the profile's tau is its (5, 5) window's; the serve line must run that window
    (one home: advise.plan.setup_config), not NGRAM_OPTIONS' (2, 5)."""
    from specnb import acceptance_profile as AP

    c = AP.Counters(10, 8, 30, 20, (8, 7, 5), (8, 8, 8))
    AP.save(AP.build("ngram", {3: [(None, {None: c})]}, source={"context_range": [20, 2000]},
                     params={"prompt_lookup_min": 5, "prompt_lookup_max": 5}),
            tmp_path / "p.json")
    code, out, err = run(capsys, "simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                         "--draft", "ngram", "--gamma", "3", "--acceptance-profile",
                         str(tmp_path / "p.json"), "--input-len", "500", "--output-len", "40",
                         "--num-prompts", "16", "--concurrency", "4", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["verdict"] == "pays", r["verdict"]
    cfg = json.loads(r["serve"].split("--speculative-config ")[1].split("'")[1])
    assert (cfg["prompt_lookup_min"], cfg["prompt_lookup_max"]) == (5, 5)
    code, out, _ = run(capsys, "plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                       "--draft", "ngram", "--gamma", "3", "--acceptance-profile",
                       str(tmp_path / "p.json"), "--context", "540", "--batch", "1", "4",
                       "--json")
    assert code == 0
    p = json.loads(out)["config"]
    assert (p["prompt_lookup_min"], p["prompt_lookup_max"]) == (5, 5)


def test_engine_sglang_prints_sglangs_launch_line_as_plan_does(capsys):
    """T6-W13: SGLang's figures get SGLang's launch line (advise.plan.sglang_launch_line, the
    one plan prints), no vLLM schedule; a method without an SGLang name gets none, coded."""
    from specnb import serving as S
    from specnb.advise.plan import sglang_launch_line

    argv = [*BASE[:-2], "--num-prompts", "16", "--concurrency", "4", "--engine", "sglang",
            "--json"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    r = json.loads(out)
    assert r["verdict"] == "pays" and r["schedule"] is None
    assert set(r["policies"]) == {"off", "k=3"}
    st = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3", engine="sglang")
    # at most --concurrency 4 in flight: SGLang's default cap of 48 holds them, no flag
    want = sglang_launch_line(st, {"num_speculative_tokens": 3, "model": "<eagle3-checkpoint>"},
                              max_num_seqs=4)
    assert r["serve"] == want and want.startswith("python -m sglang.launch_server")
    assert "--max-running-requests" not in want
    assert "--speculative-num-draft-tokens 4" in want and "sglang-launch-line" in r[
        "serve_note_codes"]
    code, out, _ = run(capsys, "plan", "--engine", "sglang", "--gpu", "H100-SXM", "--model",
                       "Llama-3.1-8B", "--draft", "eagle3", "--gamma", "3", "--tau", "2.6",
                       "--context", "540", "--batch", "1", "4", "--json")
    assert json.loads(out)["serve"] == sglang_launch_line(
        st, {"num_speculative_tokens": 3, "model": "<eagle3-checkpoint>"}, max_num_seqs=4)
    suffix = [a if a != "eagle3" else "suffix" for a in argv]
    code, out, _ = run(capsys, *suffix)
    r = json.loads(out)
    assert r["verdict"] == "pays"  # suffix pays here, but SGLang has no such algorithm
    assert r["serve"] is None and r["serve_note_codes"] == ["sglang-no-algorithm"]
    code, out, err = run(capsys, *argv, "--schedule", "[[1, 4, 3]]")
    assert code == 2 and "--schedule with --engine sglang" in err


def test_engine_vllm_v0_refuses_a_budget_v0_cannot_build_naming_the_flag(capsys):
    """T6-W11: the library's rule (simulate.v0_engine_config), the flag in the message."""
    code, out, err = run(capsys, "simulate", "--engine", "vllm-v0", "--gpu", "H100-SXM",
                         "--model", "Llama-3.1-8B", "--draft", "ngram", "--gamma", "3", "--tau",
                         "1.6", "--input-len", "1000", "--output-len", "64", "--num-prompts",
                         "16", "--concurrency", "4", "--max-num-batched-tokens", "4096")
    assert code == 2 and out == ""
    assert err.startswith("specnb simulate: error: --max-num-batched-tokens 4096 is below "
                          "max_model_len 131072")
    assert "give --max-num-batched-tokens >= 131072" in err


def test_a_suffix_schedule_is_simulated_as_the_static_k_vllm_runs(capsys):
    # trial 7 T7-05: vLLM 0.33 drops suffix's schedule and runs num_speculative_tokens (a
    # warning, it starts): the run simulates that static K, with a coded note
    code, out, _ = run(capsys, "simulate", "--gpu", "L4", "--model", "Llama-3.1-8B", "--draft",
                       "suffix", "--gamma", "4", "--tau", "2", "--input-len", "100",
                       "--output-len", "20", "--num-prompts", "8", "--concurrency", "4",
                       "--schedule", "[[1, 8, 4], [9, 1024, 0]]", "--json")
    r = json.loads(out)
    assert code == 0 and "schedule" not in r["policies"] and "k=4" in r["policies"]
    assert "dynamic-schedule-disabled-for-method" in r["note_codes"]
    assert r["schedule"] == [[1, r["setup"]["max_num_seqs"], 4]]


def test_request_rate_inf_is_the_benchs_default_all_at_once(capsys):
    """T7-04: vllm bench serve's --request-rate defaults to inf ("all the requests are sent
    at time 0", vLLM 0.33 benchmarks/serve.py), no --max-concurrency: the same run as a
    closed loop holding every prompt."""
    code, out, err = run(capsys, *BASE, "--request-rate", "inf", "--json")
    assert code == 0, err
    inf = json.loads(out)
    code, out, err = run(capsys, *BASE, "--concurrency", "24", "--json")
    assert code == 0, err
    closed = json.loads(out)
    assert inf["off"]["request_rate"] == "inf"
    for key in ("mean_tpot_ms", "mean_ttft_ms", "output_throughput"):
        assert inf["on"][key] == pytest.approx(closed["on"][key])
        assert inf["off"][key] == pytest.approx(closed["off"][key])


@pytest.mark.parametrize("draft", ["suffix", "eagle3"])
def test_engine_vllm_v0_refuses_a_draft_v0_never_had(capsys, draft):
    """T7-07: the same rule as plan's (specnb.advise.plan.check_v0_draft)."""
    argv = ["simulate", "--engine", "vllm-v0", "--gpu", "A100", "--model", "Llama-3.1-8B",
            "--gamma", "2", "--tau", "1.5", "--input-len", "10", "--output-len", "10",
            "--num-prompts", "3", "--concurrency", "1"]
    code, out, err = run(capsys, *argv, "--draft", draft)
    assert code == 2 and out == "" and f"--draft {draft} on engine vllm-v0" in err
    code, _, err = run(capsys, *argv, "--draft", "ngram")
    assert code == 0, err


def test_a_profile_of_another_method_or_without_drafts_is_refused_naming_it(capsys, tmp_path):
    """T8a-04: plan's method rule (advise.plan.check_profile_method) also in simulate;
    T8a-09: a gamma whose entry proposed no draft names the profile and the gamma."""
    from specnb import acceptance_profile as AP

    c = AP.Counters(10, 8, 30, 20, (8, 7, 5), (8, 8, 8))
    AP.save(AP.build("ngram", {3: [(None, {None: c})]}), tmp_path / "ng.json")
    AP.save(AP.build("ngram", {3: [(None, {None: AP.Counters(10, 0, 0, 0, (0, 0, 0),
                                                                 (0, 0, 0))})]}),
            tmp_path / "zero.json")
    base = ["simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--gamma", "3",
            "--input-len", "100", "--output-len", "20", "--num-prompts", "8",
            "--concurrency", "4"]
    code, _, err = run(capsys, *base, "--draft", "eagle3", "--acceptance-profile",
                       str(tmp_path / "ng.json"))
    assert code == 2 and "replays ngram, the simulation's draft is eagle3" in err
    code, _, err = run(capsys, *base, "--draft", "ngram", "--acceptance-profile",
                       str(tmp_path / "zero.json"))
    assert code == 2 and "zero.json has no drafts at gamma 3" in err
    assert "--tau" not in err and len(err.strip().splitlines()) == 1


def test_the_profiles_model_runner_sets_the_host_terms_and_is_named(capsys, tmp_path):
    """T8a-01: a V2 replay (vLLM 0.33's default for ngram) is simulated on Model Runner V2
    (no host proposer, async scheduling kept), a V1 replay on V1 (the CPU proposer's scan and
    synchronous scheduling); the header names the runner."""
    from specnb import acceptance_profile as AP
    from specnb import replay as R
    from specnb import simulate as M
    from specnb import serving as S

    got = {}
    for runner in ("v1", "v2"):
        f = tmp_path / f"{runner}.json"
        AP.save(R.replay(gammas=[3], runner=runner), f)
        code, out, err = run(capsys, "simulate", "--gpu", "H100-SXM", "--model",
                             "Llama-3.1-8B", "--draft", "ngram", "--gamma", "3",
                             "--acceptance-profile", str(f), "--input-len", "100",
                             "--output-len", "32", "--num-prompts", "8", "--concurrency", "4")
        assert code == 0, err
        got[runner] = out
        assert f"engine vllm (Model Runner {runner.upper()})" in out.splitlines()[0]
    st = S.setup("H100-SXM", "Llama-3.1-8B", "ngram", engine="vllm")
    assert M.host_cost(st, runner="v1").kind == "v1-ngram"
    assert M.host_cost(st) == M.HostCost()  # what the V2 run was charged
def test_engine_sglang_on_a_moe_target_is_sglang_moe_and_behaves_as_sglang(capsys):
    """A mixture-of-experts target under --engine sglang runs the sglang-moe profile
    (EngineProfile.family 'sglang'): SGLang's launch line and no vLLM schedule, as for
    a dense target (the test once read engine.name == 'sglang' and planned vLLM's schedule)."""
    from specnb import serving as S
    from specnb.advise.plan import sglang_launch_line

    argv = ["simulate", "--gpu", "H100-SXM", "--model", "Qwen3-30B-A3B", "--draft", "eagle3",
            "--gamma", "3", "--tau", "3.8", "--input-len", "500", "--output-len", "40",
            "--num-prompts", "16", "--concurrency", "4", "--engine", "sglang", "--json"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    r = json.loads(out)
    assert r["setup"]["engine"] == "sglang-moe"
    assert r["schedule"] is None and set(r["policies"]) == {"off", "k=3"}
    st = S.setup("H100-SXM", "Qwen3-30B-A3B", "eagle3", engine="sglang")
    assert st.engine.name == "sglang-moe" and st.engine.family == "sglang"
    assert r["verdict"] == "pays"
    want = sglang_launch_line(st, {"num_speculative_tokens": 3, "model": "<eagle3-checkpoint>"},
                              max_num_seqs=4)
    assert r["serve"] == want and "sglang-launch-line" in r["serve_note_codes"]
    code, out, err = run(capsys, *argv, "--schedule", "[[1, 4, 3]]")
    assert code == 2 and "--schedule with --engine sglang" in err


def test_requests_reads_replays_logs_ids_iso_times_and_the_bundled_log(capsys, tmp_path):
    """T8a-08: replay a log, then simulate that log with its profile (the bundled text log,
    encoded with the bundled tokenizer as replay's default); id rows; ISO-8601 times."""
    from specnb import request_log

    prof = tmp_path / "ng.json"
    code, _, err = run(capsys, "replay", "--method", "ngram", "--gamma", "3", "--out", str(prof))
    assert code == 0, err
    sim = ["simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "ngram",
           "--gamma", "3", "--no-schedule"]
    code, out, err = run(capsys, *sim, "--acceptance-profile", str(prof), "--requests",
                         str(request_log.BUNDLED_LOGGED), "--concurrency", "4", "--json")
    assert code == 0, err
    r = json.loads(out)
    log = request_log.read()
    assert r["off"]["num_prompts"] == len(log) == 72
    assert r["off"]["total_input_tokens"] == sum(x.prompt_len for x in log)
    assert "log-text-bundled-tokenizer" not in r["note_codes"]  # the bundled log's own
    # the last step drafts at context in + out - 1: inside the profile's log, no note
    assert "profile-context-extrapolated" not in r["note_codes"]
    ids = tmp_path / "ids.jsonl"
    ids.write_text("\n".join(json.dumps({"prompt_ids": [1, 2, 3, 4], "response_ids": [5] * 6,
                                         "arrival_time": i}) for i in range(3)))
    code, out, err = run(capsys, *sim, "--tau", "1.5", "--requests", str(ids), "--json")
    assert code == 0, err  # every row timed: no --concurrency / --request-rate needed
    r = json.loads(out)
    assert r["off"]["total_input_tokens"] == 12 and r["off"]["total_output_tokens"] == 18
    iso = tmp_path / "iso.jsonl"
    iso.write_text("\n".join(json.dumps({"prompt_tokens": 100, "completion_tokens": 20,
                                         "created": f"2026-12-03T08:00:0{i}Z"})
                             for i in range(2)))
    code, out, err = run(capsys, *sim, "--tau", "1.5", "--requests", str(iso), "--json")
    assert code == 0, err
    assert json.loads(out)["off"]["num_prompts"] == 2
    text = tmp_path / "text.jsonl"
    text.write_text(json.dumps({"prompt": "hello there", "response": "general kenobi"}))
    code, out, err = run(capsys, *sim, "--tau", "1.5", "--requests", str(text),
                         "--concurrency", "1", "--json")
    assert code == 0, err
    assert "log-text-bundled-tokenizer" in json.loads(out)["note_codes"]
    code, out, err = run(capsys, *sim, "--tau", "1.5", "--requests", str(text),
                         "--concurrency", "1", "--tokenizer", str(request_log.BUNDLED_TOKENIZER),
                         "--json")
    assert code == 0, err
    assert "log-text-bundled-tokenizer" not in json.loads(out)["note_codes"]
    code, out, err = run(capsys, *sim, "--tau", "1.5", "--requests", str(text),
                         "--concurrency", "1", "--tokenizer", str(tmp_path))
    assert code == 2 and "no tokenizer.json there" in err
    code, _, err = run(capsys, *sim, "--tau", "1.5", "--input-len", "9", "--output-len", "9",
                       "--concurrency", "1", "--tokenizer", str(tmp_path))
    assert code == 2 and "--tokenizer encodes the text rows of --requests LOG" in err


def test_a_schedule_k_above_the_largest_gamma_is_clamped_as_vllm_does(capsys):
    # trial 9, T9-08: vLLM 0.33 build_dynamic_sd_schedule_lookup stores
    # min(num_speculative_tokens, K) (config check warns schedule-k-clamped); simulate ran
    # nothing ("every K must be <= num_speculative_tokens"): it runs the clamped schedule
    argv = ["simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "ngram",
            "--gamma", "3", "--tau", "1.2", "--input-len", "100", "--output-len", "20",
            "--num-prompts", "8", "--concurrency", "4", "--json", "--schedule"]
    code, out, err = run(capsys, *argv, "[[1, 2, 5], [3, 8, 1]]")
    assert code == 0, err
    clamped = json.loads(out)
    code, out, err = run(capsys, *argv, "[[1, 2, 3], [3, 8, 1]]")
    assert code == 0, err
    given = json.loads(out)
    assert clamped["schedule"] == given["schedule"] == [[1, 2, 3], [3, 8, 1]]
    assert "schedule-k-clamped" in clamped["note_codes"]
    assert "schedule-k-clamped" not in given["note_codes"]
    assert clamped["policies"]["schedule"] == given["policies"]["schedule"]


def test_a_proposal_rate_for_a_draft_that_always_drafts_is_refused_as_plan_does(capsys):
    # trial 9, T9-08: one rule (serving.setup): plan refused it, simulate ran it
    tail = ["--draft", "eagle3", "--gamma", "3", "--tau", "2", "--proposal-rate", "0.5"]
    code, _, err = run(capsys, "simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                       "--input-len", "100", "--output-len", "20", "--num-prompts", "8",
                       "--concurrency", "4", *tail)
    code_plan, _, err_plan = run(capsys, "plan", "--gpu", "H100-SXM", "--model",
                                 "Llama-3.1-8B", "--context", "2000", "--batch", "1", "16",
                                 *tail)
    assert code == code_plan == 2
    msg = "--proposal-rate 0.5 applies to ngram / suffix drafting"
    assert msg in err and msg in err_plan
