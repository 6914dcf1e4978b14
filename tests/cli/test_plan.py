"""`specnb plan`: the text table, --json keys, the schedule, and exit 2 for every bad input."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from specnb import serving as S
from specnb.cli import main
from specnb.cli.plan import KV_CACHE_CHOICES
from specnb.vllm import check_speculative_config, validate_schedule

BASE = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
        "--context", "1000", "8000", "--batch", "1", "16", "64", "256", "--gamma", "1", "2", "3",
        "4"]


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_text_output_marks_the_best_gamma_and_prints_schedule_and_serve_line(capsys):
    code, out, err = run(capsys, *BASE, "--alpha", "0.7")
    assert code == 0, err
    assert "context 1000 tokens" in out and "context 8000 tokens" in out
    assert "*" in out and "g=4" in out
    serve = next(line for line in out.splitlines() if line.startswith("vllm serve"))
    words = shlex.split(serve)
    cfg = json.loads(words[words.index("--speculative-config") + 1])
    assert check_speculative_config(cfg).accepted
    assert "num_speculative_tokens_per_batch_size" in cfg
    assert "+21.6%" in out  # the reported cost of the schedule


def test_json_output(capsys):
    code, out, _ = run(capsys, *BASE, "--tau", "1.7", "2.1", "2.4", "2.6", "--json")
    assert code == 0
    res = json.loads(out)
    assert {"rows", "best", "schedule", "config"} <= set(res)
    assert len(res["rows"]) == 2 * 4 * 4
    assert set(res["rows"][0]) == {"batch_size", "context", "gamma", "tau", "speedup",
                                   "t_plain_ms", "t_verify_ms", "t_draft_ms", "bound",
                                   "fits", "t_engine_ms"}  # issue 16: memory cap, engine
    assert {r["bound"] for r in res["rows"]} <= {"memory", "compute"}
    assert [r["tau"] for r in res["rows"][:4]] == [1.7, 2.1, 2.4, 2.6]
    assert len(res["best"]) == 8
    best = {(b["batch_size"], b["context"]): b for b in res["best"]}
    for (b, s), rec in best.items():
        sp = {r["gamma"]: r["speedup"] for r in res["rows"]
              if r["batch_size"] == b and r["context"] == s}
        fits = {r["fits"] for r in res["rows"] if r["batch_size"] == b and r["context"] == s}
        top = max(sp, key=sp.get)
        # issue 16: a batch whose KV cache does not fit never pays
        assert rec["gamma"] == (top if sp[top] > 1 and fits == {True} else 0)
        assert fits == {b <= res["max_batch_in_memory"][str(s)]}
    sched = res["schedule"]
    cap = max(res["max_batch_in_memory"].values())  # the most that fit at any context
    assert sched[0][0] == 1 and sched[-1][1] == min(cap, 256) == res["max_num_seqs"]
    assert [list(r) for r in validate_schedule(
        sched, res["config"]["num_speculative_tokens"])] == sched
    assert res["config"]["num_speculative_tokens_per_batch_size"] == sched


def test_acceptance_rates_and_calibration_file(capsys, tmp_path):
    p = tmp_path / "m.csv"
    true = S.Efficiency(bandwidth=0.8, compute=0.6, fixed_ms=2.5)
    rows = ["role,batch_size,context,query_tokens,ms"]
    for b in (1, 8, 32):
        for q in (1, 4):
            ms = S.step_time_ms("Llama-3.1-8B", "H200", b, 2000, q, efficiency=true)
            rows.append(f"target,{b},2000,{q},{ms:.3f}")
    p.write_text("\n".join(rows) + "\n")
    code, out, err = run(capsys, "plan", "--gpu", "h200", "--model", "llama-3.1-8b", "--draft",
                         "ngram", "--context", "2000", "--batch", "1", "32", "--gamma", "2", "3",
                         "--acceptance-rates", "0.35", "0.29", "0.26", "--calibrate", str(p),
                         "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["calibration"]["rows"] == 6 and res["calibration"]["max_abs_error"] < 0.01
    assert [r["tau"] for r in res["rows"][:2]] == pytest.approx([1.64, 1.90])


def test_context_beyond_the_model_maximum_is_a_prominent_note(capsys):
    # Llama-2-7B takes 4,096 positions: at 16,000 the plan still runs (exit 0), says so first
    # in the text and in --json (notes and context_limit_notes), and names the 32K variant
    argv = ["plan", "--gpu", "A100", "--gpus", "8", "--model", "Llama-2-7B", "--draft",
            "eagle3", "--context", "2000", "16000", "--batch", "32", "--gamma", "2", "--tau",
            "2.17"]
    code, out, _ = run(capsys, *argv)
    lines = out.splitlines()
    assert code == 0 and lines[1].startswith("NOTE: context 16000 exceeds the target "
                                             "Llama-2-7B's maximum of 4096 positions")
    assert "LLaMA-2-7B-32K, 32768 positions" in lines[1]
    assert sum("exceeds the target" in line for line in lines) == 1  # not repeated below
    code, js, _ = run(capsys, *argv, "--json")
    res = json.loads(js)
    assert code == 0 and res["setup"]["max_position_embeddings"] == 4096
    (note,) = res["context_limit_notes"]
    assert res["context_limit_note_codes"] == ["context-over-max-positions"]
    i = res["note_codes"].index("context-over-max-positions")
    assert res["notes"][i] == note and "context 16000 exceeds" in note
    # within the maximum, or the 32K variant: no such note
    assert argv[6] == "Llama-2-7B" and argv[10:12] == ["2000", "16000"]
    code, js, _ = run(capsys, *argv[:6], "LLaMA-2-7B-32K", *argv[7:], "--json")
    assert code == 0 and json.loads(js)["context_limit_notes"] == []
    code, out, _ = run(capsys, *argv[:10], "4096", *argv[12:])
    assert code == 0 and "NOTE:" not in out and "exceeds" not in out


def test_self_draft_with_kv_budget_and_a_draft_model(capsys):
    code, out, _ = run(capsys, "plan", "--gpu", "A100", "--gpus", "8", "--model",
                       "LLaMA-2-7B-32K", "--draft", "TinyLlama-1.1B", "--draft-kv-budget", "512",
                       "--context", "16000", "--batch", "32", "--gamma", "2", "--tau", "2.17",
                       "--json")
    assert code == 0
    res = json.loads(out)
    assert res["config"]["method"] == "draft_model"
    assert res["config"]["model"] == "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
    assert "--tensor-parallel-size" in res["serve"]
    code, out, _ = run(capsys, "plan", "--gpu", "H100", "--model", "Llama-3.1-8B", "--draft",
                       "self", "--draft-kv-budget", "2049", "--context", "32000", "--batch", "32",
                       "--gamma", "4", "--alpha", "0.8")
    assert code == 0 and "sparse-KV" in out


def test_nothing_pays_prints_no_schedule(capsys):
    code, out, _ = run(capsys, "plan", "--gpu", "H100", "--model", "Llama-3.1-8B", "--draft",
                       "Llama-3.2-1B", "--context", "100", "--batch", "1", "512", "--gamma", "1",
                       "--alpha", "0.05", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["schedule"] is None and res["config"] is None
    assert all(b["gamma"] == 0 and b["verdict"] == "does not pay" for b in res["best"])


def test_paying_only_from_a_larger_batch_is_not_called_never_paying(capsys):
    # long context, draft with a KV budget: loses at batch 1, pays at the batches asked for
    argv = ["plan", "--gpu", "A100", "--gpus", "8", "--model", "LLaMA-2-7B-32K", "--draft",
            "TinyLlama-1.1B", "--draft-kv-budget", "512", "--context", "16000", "--batch", "32",
            "64", "--gamma", "2", "--tau", "2.17"]
    # MagicDec's engine, not vLLM: the model's defaults alone (on vLLM an A100 runs
    # FlashAttention-2, whose unsplit walk a multi-head target pays at every step)
    code, out, _ = run(capsys, *argv, "--engine", "specdecode-bench")
    assert code == 0 and "does not pay even at batch 1" not in out
    code, js, _ = run(capsys, *argv, "--json", "--engine", "specdecode-bench")
    res = json.loads(js)
    (first, last), = res["paying_batches"]["16000"]
    assert res["crossover_batch"]["16000"] == 0 and 1 < first <= 32 and last == 64
    lose = "1" if first == 2 else f"1-{first - 1}"
    assert f"does not pay at batch {lose}; pays at batch {first}-64" in out
    # with a context where nothing pays, the schedule (worst context) is none, and says why
    # (the model's defaults alone: with vLLM V1's fitted overhead context 1024 pays from 47)
    code, out, _ = run(capsys, *argv[:-9], "--context", "1024", "16000", *argv[-7:],
                       "--engine", "specdecode-bench")
    assert code == 0 and "schedule: none (no gamma pays at every context at once)" in out
    assert "speculation pays at context 16000" in out
    assert "no gamma pays at any batch size" not in out


@pytest.mark.parametrize("model", ["Llama-3.1-8B", "Qwen3-8B"])
def test_mtp_on_a_target_without_mtp_layers_is_bad_input(capsys, model):
    """T7-10: the catalogue's mtp_layers 0 (model_type llama / qwen3, which vLLM 0.33 maps to
    no MTP draft: "Unsupported speculative method: 'mtp'"): no verdict and no line, exit 2
    naming --draft, the target and the targets that ship MTP layers."""
    code, out, err = run(capsys, "plan", "--gpu", "H100", "--model", model, "--draft", "mtp",
                         "--context", "100", "--batch", "1", "--gamma", "1", "--alpha", "0.5")
    assert code == 2 and out == "" and "vllm serve" not in err
    assert "--draft mtp" in err and model in err and "DeepSeek-V3" in err


def test_mtp_plan_notes_a_target_whose_mtp_layers_are_unknown(capsys, tmp_path):
    """T7-10: a config.json of a model_type specnb does not judge, declaring no MTP layers:
    unknown, so the line with the note ``mtp-needs-target-layers``."""
    cfg = {"model_type": "some_new_arch", "num_hidden_layers": 32, "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
           "vocab_size": 128256}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, out, err = run(capsys, "plan", "--gpu", "H100", "--model", str(tmp_path / "config.json"),
                         "--draft", "mtp", "--context", "2000", "--batch", "1", "--gamma", "1",
                         "--alpha", "0.7", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert '"method": "mtp"' in data["serve"]
    assert "mtp-needs-target-layers" in data["note_codes"]
    cfg["model_type"] = "llama"  # vLLM maps llama to no MTP draft: known 0
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, out, err = run(capsys, "plan", "--gpu", "H100", "--model", str(tmp_path / "config.json"),
                         "--draft", "mtp", "--context", "2000", "--batch", "1", "--gamma", "1",
                         "--alpha", "0.7")
    assert code == 2 and "--draft mtp" in err


def test_config_json_as_model(capsys, tmp_path):
    cfg = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
           "vocab_size": 128256}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, out, err = run(capsys, "plan", "--gpu", "L40S", "--model",
                         str(tmp_path / "config.json"), "--draft", "eagle", "--context", "500",
                         "--batch", "1", "8", "--gamma", "2", "--alpha", "0.7", "--json")
    assert code == 0, err
    assert json.loads(out)["serve"].split()[2] == str(tmp_path)


@pytest.mark.parametrize("extra, match", [
    (["--gpu", "V100"], "unknown GPU 'V100'; known GPUs: H100-SXM"),
    (["--model", "gpt-9"], "unknown model 'gpt-9'; known models: Llama-3.1-8B"),
    (["--draft", "Qwen3-0.6B"], "cannot be verified"),
    (["--draft", "medusa9"], "unknown draft 'medusa9'"),
    (["--tau", "4.5"], r"--tau must be in \[1, gamma \+ 1\] = \[1, 2\] for gamma = 1, got 4.5"),
    (["--tau", "2", "2"], "--tau takes one value or one per --gamma"),
    (["--alpha", "1.5"], r"--alpha must be in \[0, 1\]"),
    (["--acceptance-rates", "0.8", "1.2", "0.5", "0.4"], r"--acceptance-rates must be in \[0, 1\]"),
    (["--acceptance-rates", "0.8", "0.7"], "gamma 4 needs 4 acceptance rates, got 2"),
    (["--gamma", "0"], "--gamma must be >= 1, got 0"),
    (["--batch", "0"], "--batch must be >= 1, got 0"),
    (["--batch", "4", "4"], "--batch lists a value twice"),
    (["--gpus", "0"], "--gpus must be >= 1, got 0"),
    (["--draft", "ngram", "--draft-kv-budget", "512"], "reads no KV cache"),
])
def test_bad_input_exits_2(capsys, extra, match):
    """A valid command line with one flag replaced by ``extra``."""
    given = {e for e in extra if e.startswith("--")}
    defaults = {"--gpu": ["H100"], "--model": ["Llama-3.1-8B"], "--draft": ["eagle3"],
                "--context": ["1000"], "--batch": ["1", "8"],
                "--gamma": ["1"] if "--tau" in given else ["1", "2", "3", "4"]}
    args = ["plan"]
    for flag, values in defaults.items():
        if flag not in given:
            args += [flag, *values]
    if not given & {"--alpha", "--tau", "--acceptance-rates"}:
        args += ["--alpha", "0.7"]
    args += extra
    code, out, err = run(capsys, *args)
    assert code == 2, (args, out, err)
    assert err.startswith("specnb plan: error:") and re.search(match, err), err
    assert out == ""


@pytest.mark.parametrize("text, match", [
    ("role,batch_size,context,ms\ntarget,1,10,5\n", "missing column"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,0\n", "ms must be a positive time"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,-2.5\n", "ms must be a positive"),
])
def test_bad_calibration_file_exits_2(capsys, tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    code, out, err = run(capsys, *BASE, "--alpha", "0.7", "--calibrate", str(p))
    assert code == 2 and match in err and out == ""
    code, _, err = run(capsys, *BASE, "--alpha", "0.7", "--calibrate", str(tmp_path / "no.csv"))
    assert code == 2 and "no.csv" in err


def test_argparse_usage_errors_exit_2(capsys):
    # no acceptance given (optional since --calibrate-bench can give tau): exit 2, named
    assert main(BASE) == 2
    assert "give one of --alpha, --tau or --acceptance-rates" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:  # two acceptance sources
        main([*BASE, "--alpha", "0.7", "--tau", "2"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main([*BASE, "--alpha", "0.7", "--dtype", "fp4"])
    assert info.value.code == 2
    capsys.readouterr()


# ----------------------------------------------------------------- edge and bad input (r2)
@pytest.mark.parametrize("extra, match", [
    (["--gpus", "3"], r"gpus = 3 does not divide the target Llama-3.1-8B's num_attention_heads"),
    (["--model", ""], "model must not be empty; known models"),
    (["--batch", "1", "65537"], r"--batch must be <= 65536, got 65537"),
    (["--draft", "ngram", "--draft-dtype", "fp8"], "--draft-dtype applies to model drafts; ngram "
                                                   "drafting has no weights"),
    # issue 16
    (["--draft", "ngram", "--proposal-rate", "0"], r"--proposal-rate must be in \(0, 1\]"),
    (["--draft", "ngram", "--proposal-rate", "1.5"], r"--proposal-rate must be in \(0, 1\]"),
    (["--draft", "ngram", "--proposal-rate", "nan"], r"--proposal-rate must not be NaN"),
    (["--proposal-rate", "0.5"], "--proposal-rate 0.5 applies to ngram / suffix"),
    (["--input-len", "-1", "--output-len", "10"], "--input-len must be >= 0, got -1"),
    (["--input-len", "10", "--output-len", "0"], "--output-len must be >= 1, got 0"),
    (["--input-len", "10"], "--input-len and --output-len go together"),
    (["--gpu-memory-utilization", "0"], r"--gpu-memory-utilization must be in \(0, 1\]"),
    (["--gpu-memory-utilization", "1.2"], r"--gpu-memory-utilization must be in \(0, 1\]"),
    (["--engine", "trtllm"], "engine must be one of vllm, vllm-v0, sglang"),
    (["--draft-config", "/nonexistent/config.json"], "--draft-config '/nonexistent/config.json' "
                                                     "does not exist"),
    (["--draft", "ngram", "--draft-config", "/x.json"], "--draft-config applies to eagle and "
                                                         "eagle3"),
])
def test_more_bad_input_exits_2(capsys, extra, match):
    test_bad_input_exits_2(capsys, extra, match)


def test_hugging_face_id_of_a_catalogue_model(capsys):
    code, out, err = run(capsys, "plan", "--gpu", "H100", "--model", "meta-llama/Llama-3.1-8B",
                         "--draft", "eagle3", "--context", "1000", "--batch", "1",
                         "--gamma", "2", "--alpha", "0.7", "--json")
    assert code == 0, err
    assert json.loads(out)["setup"]["model"] == "Llama-3.1-8B"


def test_text_output_shows_calibration_notes_and_a_context_no_sequence_fits(capsys, tmp_path):
    p = tmp_path / "one.csv"
    p.write_text("role,batch_size,context,query_tokens,ms\ntarget,1,1024,1,7.1\n")
    # 131072 tokens (the model's maximum) of Llama-3.1-8B KV: 17.2 GB, 6.0 GB left on a 4090
    code, out, err = run(capsys, "plan", "--gpu", "RTX-4090", "--model", "Llama-3.1-8B",
                         "--draft", "ngram", "--context", "1024", "131072", "--batch", "1", "8",
                         "--gamma", "2", "--alpha", "0.7", "--calibrate", str(p))
    assert code == 0, err
    assert "calibration note: target: only 1 distinct" in out  # the fit is underdetermined
    assert "context 131072: not even one sequence" in out


def test_the_cli_batch_cap_is_the_serving_models():
    from specnb.cli import plan as plan_cli

    assert plan_cli.MAX_BATCH == S.MAX_BATCH_SEARCH
    assert plan_cli.MAX_GRID_CELLS == S.MAX_GRID_CELLS


def test_a_grid_too_large_for_memory_exits_2(capsys):
    contexts = [str(1000 * i) for i in range(1, 41)]  # 65,536 x 40 x 8 > 2**24 cells
    code, out, err = run(capsys, "plan", "--gpu", "H100", "--model", "Llama-3.1-8B", "--draft",
                         "eagle3", "--context", *contexts, "--batch", "1", "65536", "--gamma",
                         *map(str, range(1, 9)), "--alpha", "0.7")
    assert code == 2 and out == ""
    assert "= 20,971,520 model cells, above 16,777,216" in err
    with pytest.raises(ValueError, match="MAX_GRID_CELLS"):
        S.evaluate(S.setup("H100", "Llama-3.1-8B", "eagle3"), range(1, 70000), range(300),
                   [1])


def test_a_context_beyond_the_configs_positions_is_noted(capsys, tmp_path):
    cfg = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
           "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
           "vocab_size": 1000, "max_position_embeddings": 2048}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, out, err = run(capsys, "plan", "--gpu", "H200", "--model", str(tmp_path), "--draft",
                         "ngram", "--context", "1024", "4096", "--batch", "1", "--gamma", "2",
                         "--alpha", "0.9", "--json")
    assert code == 0, err
    res = json.loads(out)
    notes = [n for n, c in zip(res["notes"], res["note_codes"])
             if c == "context-over-max-positions"]
    assert len(notes) == 1 and notes[0].startswith("context 4096 exceeds the target")
    assert "maximum of 2048" in notes[0] and "context 1024 " not in notes[0], notes
    assert not any("context 1024 " in n for n in res["notes"]), res["notes"]
    assert S.architecture(tmp_path).max_position_embeddings == 2048
    assert S.architecture("Llama-3.1-8B").max_position_embeddings == 131072


def test_a_sliding_window_config_is_noted_above_its_window(tmp_path):
    cfg = {"model_type": "mistral", "num_hidden_layers": 2, "hidden_size": 64,
           "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
           "vocab_size": 1000, "max_position_embeddings": 32768, "sliding_window": 4096}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    arch = S.architecture(tmp_path)
    assert arch.sliding_window == 4096
    assert S.context_limit_notes(arch and str(tmp_path), [4096]) == []
    notes = S.context_limit_notes(str(tmp_path), [8192])
    assert [n.code for n in notes] == ["sliding-window-modelled-full"]
    assert "sliding-window attention over the last 4096" in notes[0].message
    # Qwen2-style configs carry a window but switch it off
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "use_sliding_window": False}))
    assert S.architecture(tmp_path).sliding_window is None
    assert S.context_limit_notes(str(tmp_path), [8192]) == []
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "sliding_window": "4k"}))
    with pytest.raises(ValueError, match="sliding_window must be an integer >= 1"):
        S.architecture(tmp_path)


def test_dtype_flags_take_the_serving_models_dtypes():
    from specnb.cli.plan import DTYPE_CHOICES

    assert DTYPE_CHOICES == ("bf16", "fp16", "fp8", "int8", "int4")
    assert tuple(S.DTYPES) == DTYPE_CHOICES + ("mxfp4",)  # a checkpoint's own, not a flag


def test_calibration_on_one_row_says_1_row(capsys, tmp_path):
    # fault 40: "(1 rows)" -> "(1 row)"
    p = tmp_path / "one.csv"
    p.write_text("role,batch_size,context,query_tokens,ms\ntarget,1,2000,1,7.5\n")
    code, out, err = run(capsys, "plan", "--gpu", "h200", "--model", "llama-3.1-8b", "--draft",
                         "ngram", "--context", "2000", "--batch", "1", "--gamma", "2",
                         "--acceptance-rates", "0.35", "0.29", "--calibrate", str(p))
    assert code == 0, err
    assert f"calibrated on {p} (1 row): " in out and "1 rows" not in out


# ---------------------------------------------------------------- --calibrate-bench
MAGICDEC = ["plan", "--gpu", "A100-SXM-80GB", "--gpus", "8", "--model", "LLaMA-2-7B-32K",
            "--draft", "TinyLlama-1.1B", "--draft-kv-budget", "512", "--context", "4000"]


def _bench_files(tmp_path, source, keep=lambda d: True):
    paths = []
    for i, d in enumerate(S.published_bench_results(source)):
        if keep(d):
            p = tmp_path / f"run{i:02d}.json"
            p.write_text(json.dumps(d))
            paths.append(str(p))
    return paths


def test_calibrate_bench_prints_each_files_error_and_predicts_concurrencies_not_run(
        capsys, tmp_path):
    """MagicDec Table 3(a) at context 4000 as bench files: fit on concurrency 32 and 48,
    --batch 64 and 128 are predicted; the printed errors are the fit's, to their decimals."""
    files = _bench_files(tmp_path, "magicdec-table3a",
                         lambda d: d["max_concurrency"] in (32, 48)
                         and d["total_input_tokens"] / d["completed"] == 4000 - 128)
    assert len(files) == 4
    code, out, err = run(capsys, *MAGICDEC, "--batch", "32", "48", "64", "128", "--gamma", "2",
                         "--calibrate-bench", *files)
    assert code == 0, err
    code, js, _ = run(capsys, *MAGICDEC, "--batch", "32", "48", "64", "128", "--gamma", "2",
                      "--calibrate-bench", *files, "--json")
    res = json.loads(js)
    c = res["calibration_bench"]
    assert res["setup"]["acceptance"] == {"tau": [pytest.approx(2.19)]}  # from the files
    assert [r["concurrency"] for r in c["runs"]] == [32, 32, 48, 48]
    for r in c["runs"]:
        assert f"{r['tpot_error']:+.1%}" in out
        line = next(ln for ln in out.splitlines() if ln.startswith(r["file"]))
        assert r["speculation"] in line.split()
    assert sorted({p["concurrency"] for p in c["predicted"]}) == [64, 128]
    assert "predicted at the --batch values not run" in out
    p64 = next(p for p in c["predicted"] if p["concurrency"] == 64)
    assert f"{p64['speedup']:.2f}" in out.split("predicted at the --batch values not run")[1]
    assert f"TPOT error median {100 * c['median_abs_tpot_error']:.1f} %" in out


def test_calibrate_bench_labels_and_bad_files(capsys, tmp_path):
    files = _bench_files(tmp_path, "vllm-i20780-eagle3")
    base = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
            "--context", "256", "--batch", "1", "8"]
    code, _, err = run(capsys, *base, "--gamma", "2", "5", "--calibrate-bench", *files)
    assert code == 0, err
    # a --gamma no run was made at, and no --tau: refused
    code, _, err = run(capsys, *base, "--gamma", "8", "--calibrate-bench", *files)
    assert code == 2 and "--gamma 8: no bench run with speculation on" in err
    # files without spec keys (an older vLLM): --label on, tau and gamma from --tau / --gamma
    bare = tmp_path / "bare.json"
    d = json.loads(open(files[2]).read())
    for k in [k for k in d if k.startswith("spec_decode")]:
        del d[k]
    bare.write_text(json.dumps(d))
    code, _, err = run(capsys, *base, "--gamma", "3", "--calibrate-bench", files[0], str(bare))
    assert code == 2 and "every run has speculation off" in err
    code, _, err = run(capsys, *base, "--gamma", "3", "--tau", "2.79", "--calibrate-bench",
                       files[0], str(bare), "--label", "off", "on")
    assert code == 0, err
    code, _, err = run(capsys, *base, "--gamma", "3", "--calibrate-bench", files[0],
                       "--label", "on", "off")
    assert code == 2 and "--label takes one value per --calibrate-bench file (1), got 2" in err
    # a bench file without the keys needed; mixed models
    thin = tmp_path / "thin.json"
    thin.write_text(json.dumps({"mean_tpot_ms": 5.0, "output_throughput": 100.0}))
    code, _, err = run(capsys, *base, "--gamma", "3", "--calibrate-bench", files[0], str(thin))
    assert code == 2 and "thin.json: no max_concurrency, completed" in err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(open(files[1]).read()), "model_id": "Qwen/Qwen3-8B"}))
    code, _, err = run(capsys, *base, "--gamma", "2", "--calibrate-bench", files[0], str(other))
    assert code == 2 and "mixed models in one calibration set" in err
    code, _, err = run(capsys, *base, "--gamma", "2")
    assert code == 2 and "give one of --alpha, --tau or --acceptance-rates" in err
    code, _, err = run(capsys, *base, "--gamma", "2", "--alpha", "0.6", "--label", "on")
    assert code == 2 and "--label applies to --calibrate-bench files" in err



def test_calibrate_bench_shows_each_files_validity_flags_with_codes(capsys, tmp_path):
    """Issue 26: the files --calibrate-bench fits on carry specnb bench's validity flags (a
    random dataset with its implied ignore-eos, synthetic acceptance, a chat model without its
    template), each file with its codes, in the text and the JSON; clean files say so."""
    from specnb.advise.bench import file_validity

    files = _bench_files(tmp_path, "vllm-i20780-eagle3")
    base = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
            "--context", "256", "--batch", "1", "8", "--gamma", "2"]
    code, out, err = run(capsys, *base, "--calibrate-bench", *files)
    assert code == 0, err
    assert f"bench validity: no flags on the {len(files)} file(s)" in out
    edits = {0: {"dataset_name": "random", "backend": "openai"},
             1: {"rejection_sample_method": "synthetic"}, 2: {"skip_chat_template": True}}
    for i, extra in edits.items():
        d = json.loads(open(files[i]).read())
        open(files[i], "w").write(json.dumps({**d, **extra}))
    code, out, err = run(capsys, *base, "--calibrate-bench", *files)
    assert code == 0, err
    code, js, _ = run(capsys, *base, "--calibrate-bench", *files, "--json")
    valid = json.loads(js)["calibration_bench"]["validity"]
    expected = file_validity(files)
    assert {f: [n["code"] for n in v] for f, v in valid.items()} == \
        {f: [n.code for n in v] for f, v in expected.items()}
    assert [n["code"] for n in valid[files[0]]] == ["random-dataset", "ignore-eos"]
    assert [n["code"] for n in valid[files[1]]] == ["synthetic-acceptance"]
    assert [n["code"] for n in valid[files[2]]] == ["no-chat-template"]
    assert all(valid[f] == [] for f in files[3:])
    assert f"bench validity: 3 of {len(files)} file(s)" in out
    for f in files[:3]:
        for n in valid[f]:
            assert f"! {f}: [{n['code']}] {n['message']}" in out
    assert not any(ln.startswith(f"  ! {f}:") for f in files[3:] for ln in out.splitlines())



# ----------------------------------------------------------------- issue 16
def test_memory_cap_in_rows_schedule_and_serve_line(capsys):
    # the example: EAGLE-3 on one H100 at context 2000 with --max-num-seqs 512
    argv = ["plan", "--gpu", "H100", "--model", "Llama-3.1-8B", "--draft", "eagle3",
            "--context", "2000", "--batch", "1", "64", "512", "--gamma", "3", "--alpha", "0.7"]
    code, out, err = run(capsys, *argv)
    cap = S.max_batch_in_memory(S.setup("H100", "Llama-3.1-8B", "eagle3"), 2000)
    assert code == 0, err
    assert (f"pays at every batch size that fits in memory (up to {cap}); from batch {cap + 1} "
            "on the KV cache does not fit") in out  # fault N14: not "not at {cap + 1}"
    assert "pays at every batch size up to 512" not in out
    assert out.count(f"--max-num-seqs {cap}") == 1 and f"--max-num-seqs at {cap}" in out
    assert "the draft's weights and KV cache take the room of 10 sequences" in out
    code, js, _ = run(capsys, *argv, "--json")
    res = json.loads(js)
    assert [r["fits"] for r in res["rows"]] == [True, True, False]
    assert res["max_num_seqs"] == cap and res["displaced"] == {"2000": 10}
    assert "draft-displaces-sequences" in res["note_codes"]
    assert res["schedule"][-1][1] == cap
    # --gpu-memory-utilization moves the cap and reaches the serve line
    code, js, _ = run(capsys, *argv, "--json", "--gpu-memory-utilization", "0.95")
    res2 = json.loads(js)
    assert res2["max_num_seqs"] > cap and "--gpu-memory-utilization 0.95" in res2["serve"]


def test_engine_proposal_rate_and_end_to_end(capsys):
    base = ["plan", "--gpu", "H100", "--gpus", "4", "--model", "Llama-3.1-70B", "--draft",
            "ngram", "--context", "2000", "--batch", "1", "64", "128", "--gamma", "4",
            "--tau", "1.8"]
    code, js, _ = run(capsys, *base, "--json")
    full = json.loads(js)
    assert full["setup"]["engine"] == "vllm" and full["setup"]["proposal_rate"] == 1.0
    code, js, _ = run(capsys, *base, "--json", "--proposal-rate", "1")
    assert [r["speedup"] for r in json.loads(js)["rows"]] == [r["speedup"] for r in full["rows"]]
    code, out, _ = run(capsys, *base, "--proposal-rate", "0.3")
    assert code == 0 and "proposal rate 0.3" in out
    assert "Model Runner V2" not in out.splitlines()[1]  # N23: no help line once M is given
    # T8a-01: M < 1 is Model Runner V1's CPU proposer, so the line runs V1
    assert "VLLM_USE_V2_MODEL_RUNNER=0 vllm serve" in out and "model-runner-env" not in out
    code, out, _ = run(capsys, *base)
    assert "NOTE: ngram on Model Runner V2 (vLLM 0.33's default) drafts gamma" in out
    assert "VLLM_USE_V2_MODEL_RUNNER" not in out.split("vllm serve")[0].splitlines()[-1]
    code, out, _ = run(capsys, *base[:8], "suffix", *base[9:])
    assert "NOTE: proposal rate M = 1 assumed" in out and "overstates the gain" in out
    code, js, _ = run(capsys, *base, "--json", "--proposal-rate", "0.3")
    part = json.loads(js)
    # M < 1 is V1's CPU proposer: fewer tokens verified, but synchronous scheduling's host
    # time on every speculative step (T9-01); at batch 128 the latter outweighs the former
    assert "v1-sync-scheduling" in part["note_codes"]
    assert "v1-sync-scheduling" not in full["note_codes"]
    assert part["rows"][2]["t_engine_ms"] > full["rows"][2]["t_engine_ms"]
    code, js, _ = run(capsys, *base, "--json", "--input-len", "1000", "--output-len", "200")
    rows = json.loads(js)["rows"]
    assert all(1 <= r["speedup_end_to_end"] < r["speedup"] for r in rows if r["speedup"] > 1)
    code, out, _ = run(capsys, *base, "--input-len", "1000", "--output-len", "200")
    assert "e2e g=4" in out and "prefill of 1000" in out
    code, js, _ = run(capsys, *base, "--json", "--engine", "sglang")
    assert json.loads(js)["setup"]["engine"] == "sglang"


def test_moe_target_and_head_config(capsys, tmp_path):
    code, out, err = run(capsys, "plan", "--gpu", "H200", "--gpus", "8", "--dtype", "fp8",
                         "--model", "DeepSeek-V3", "--draft", "mtp", "--context", "4096",
                         "--batch", "1", "16", "256", "--gamma", "1", "3", "--tau", "1.8",
                         "2.9", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["setup"]["moe"]["n_routed_experts"] == 256
    assert res["setup"]["mla"]["kv_lora_rank"] == 512
    head = tmp_path / "head"
    head.mkdir()
    (head / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096,
        "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
        "vocab_size": 128256, "draft_vocab_size": 64000}))
    code, out, err = run(capsys, *BASE, "--alpha", "0.7", "--json", "--draft-config", str(head))
    assert code == 0, err
    assert json.loads(out)["setup"]["draft_lm_head_vocab"] == 64000
    code, out, err = run(capsys, *BASE[:6], "eagle", *BASE[7:], "--alpha", "0.7",
                         "--draft-config", str(head))
    assert code == 2 and "describes an eagle3 head, not eagle" in err


def test_acceptance_profile_from_replay(capsys, tmp_path):
    prof = tmp_path / "p.json"
    assert main(["replay", "--gamma", "1", "3", "--context-buckets", "64", "--out", str(prof),
                 "--json"]) == 0
    capsys.readouterr()
    argv = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "ngram",
            "--context", "32", "1000", "--batch", "1", "16", "--gamma", "1", "3",
            "--acceptance-profile", str(prof)]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    d = json.loads(out)
    ap = d["setup"]["acceptance_profile"]
    assert ap["method"] == "ngram" and set(ap["tau_by_context"]) == {"32", "1000"}
    saved = json.loads(prof.read_text())
    want = [e["tau"] for e in saved["entries"] if e["task"] is None and e["context"] == [0, 64]]
    assert ap["tau_by_context"]["32"] == pytest.approx(want)
    code, out, err = run(capsys, *argv)
    assert code == 0 and "acceptance profile" in out and "vllm serve" in out
    code, out, err = run(capsys, *argv, "--proposal-rate", "0.5")
    assert code == 2 and "the profile gives the proposal rate" in err
    code, out, err = run(capsys, *argv[:-1], str(tmp_path / "none.json"))
    assert code == 2 and "does not exist" in err


TREE = ["plan", "--gpu", "H100", "--gpus", "4", "--model", "Qwen3-30B-A3B", "--draft", "eagle3",
        "--engine", "sglang", "--context", "512", "--batch", "1", "32", "--gamma", "4",
        "--tau", "2.55"]


def test_sglang_tree_flags_cost_the_tree_and_name_sglangs_keys(capsys):
    code, out, err = run(capsys, *TREE, "--topk", "4", "--num-draft-tokens", "16", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["setup"]["topk"] == 4 and res["setup"]["num_draft_tokens"] == 16
    assert res["setup"]["engine"] == "sglang-moe"  # the profile fitted on MoE targets
    tree = res["tree"]
    assert (tree["steps"], tree["topk"], tree["num_draft_tokens"]) == (4, 4, 16)
    st = S.setup("H100", "Qwen3-30B-A3B", "eagle3", gpus=4, engine="sglang")
    for r in tree["rows"]:
        want = S.tree_speedup(st, r["batch_size"], 512, 4, topk=4, num_draft_tokens=16,
                              tau=2.55)
        assert r["speedup"] == pytest.approx(float(want))
        assert r["verdict"] == S.verdict(r["speedup"])
    # a wider tree verifies more tokens per sequence: a dearer verification than the chain's
    _, chain, _ = run(capsys, *TREE, "--num-draft-tokens", "5", "--json")
    c = json.loads(chain)["tree"]["rows"]
    assert all(t["t_verify_ms"] > ch["t_verify_ms"] for t, ch in zip(tree["rows"], c))
    code, text, _ = run(capsys, *TREE, "--topk", "4", "--num-draft-tokens", "16")
    assert code == 0 and "--speculative-eagle-topk 4 --speculative-num-draft-tokens 16" in text


@pytest.mark.parametrize("extra, words", [
    (["--topk", "0"], "--topk must be >= 1"),
    (["--topk", "2", "--engine", "vllm"], "verifies chains only"),
    (["--topk", "2", "--num-draft-tokens", "16"], "--num-draft-tokens must be <= 15"),
    (["--topk", "2", "--num-draft-tokens", "1"], "--num-draft-tokens must be >= 2"),
    (["--routing-skew", "0.99"], "--routing-skew must be in [0, 0.95]"),
    (["--routing-skew", "-0.1"], "--routing-skew must be in [0, 0.95]"),
])
def test_tree_and_skew_bad_input_is_one_line_and_exit_2(capsys, extra, words):
    argv = list(TREE)
    for flag in set(extra) & {"--engine"}:  # a flag given twice is refused (T5-C1)
        del argv[argv.index(flag):argv.index(flag) + 2]
    code, out, err = run(capsys, *argv, *extra)
    assert code == 2 and out == ""
    assert words in err and len(err.strip().splitlines()) == 1


def test_sglang_tree_beyond_its_candidates_is_refused_and_a_topk1_count_is_run_as_sglang_does(
        capsys):
    """T5-W3: steps 3 x topk 4 score 4 + 2 x 16 = 36 candidates (SGLang's
    organize_draft_results), so 200 draft tokens fail at SGLang's start: exit 2 naming the
    flag and the bound; with topk 1 SGLang runs steps + 1 (server_args.py): the plan costs and
    launches 4, with a coded note."""
    base = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
            "--engine", "sglang", "--context", "2000", "--batch", "1", "8", "--gamma", "3",
            "--tau", "3.2"]
    code, out, err = run(capsys, *base, "--topk", "4", "--num-draft-tokens", "200")
    assert code == 2 and out == "" and "--num-draft-tokens must be <= 37" in err
    assert "organize_draft_results" in err and len(err.strip().splitlines()) == 1
    code, out, err = run(capsys, *base, "--topk", "4", "--num-draft-tokens", "37", "--json")
    assert code == 0, err
    code, out, err = run(capsys, *base, "--topk", "1", "--num-draft-tokens", "8", "--json")
    assert code == 0, err
    res = json.loads(out)
    tree = res["tree"]
    assert (tree["num_draft_tokens"], tree["num_draft_tokens_given"]) == (4, 8)
    assert "sglang-num-draft-tokens-adjusted" in res["note_codes"]
    assert "--speculative-num-draft-tokens 4" in res["serve"]
    st = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3", engine="sglang")
    for r in tree["rows"]:  # costed as the chain SGLang runs, 4 tokens verified
        want = S.tree_speedup(st, r["batch_size"], 2000, 3, topk=1, num_draft_tokens=4, tau=3.2)
        assert round(r["speedup"], 2) == round(float(want), 2)
    code, text, _ = run(capsys, *base, "--topk", "1", "--num-draft-tokens", "8")
    launch = [ln for ln in text.splitlines() if ln.startswith("python -m sglang.launch_server")]
    assert code == 0 and len(launch) == 1
    assert launch[0].endswith("--speculative-eagle-topk 1 --speculative-num-draft-tokens 4")
    assert "note: SGLang runs --speculative-num-draft-tokens 4, not 8" in text


def test_routing_skew_reaches_the_step_model(capsys):
    base = ["plan", "--gpu", "H200", "--gpus", "8", "--model", "DeepSeek-V3", "--draft", "mtp",
            "--dtype", "fp8", "--context", "2000", "--batch", "16", "--gamma", "3", "--tau",
            "2.4", "--json"]
    _, out0, _ = run(capsys, *base)
    _, out1, _ = run(capsys, *base, "--routing-skew", "0.5")
    r0, r1 = json.loads(out0), json.loads(out1)
    assert r0["setup"]["routing_skew"] == 0.0 and r1["setup"]["routing_skew"] == 0.5
    # skewed routing touches fewer experts: a cheaper plain step
    assert r1["rows"][0]["t_plain_ms"] < r0["rows"][0]["t_plain_ms"]


def test_kv_cache_dtype_is_an_input_in_the_header_and_serve_line(capsys):
    # fault N2: fp8 weights do not imply an fp8 KV cache (vLLM's default is auto)
    argv = ["plan", "--gpu", "H200", "--gpus", "8", "--model", "DeepSeek-V3", "--dtype", "fp8",
            "--draft", "mtp", "--context", "4000", "--batch", "1", "8", "64", "256", "--gamma",
            "1", "2", "3", "--alpha", "0.8"]
    code, out, _ = run(capsys, *argv)
    auto = S.max_batch_in_memory(S.setup("H200", "DeepSeek-V3", "mtp", gpus=8, dtype="fp8"), 4000)
    fp8 = S.max_batch_in_memory(S.setup("H200", "DeepSeek-V3", "mtp", gpus=8, dtype="fp8",
                                        kv_dtype="fp8"), 4000)
    assert code == 0 and "(fp8, KV cache auto (bf16))" in out.splitlines()[0]
    assert f"--max-num-seqs {auto} " in out and "--kv-cache-dtype" not in out.split("note:")[0]
    assert f"{fp8} sequences at context 4000 instead of {auto}" in out  # kv-cache-dtype note
    code, js, _ = run(capsys, *argv, "--kv-cache-dtype", "fp8", "--json")
    res = json.loads(js)
    assert res["setup"]["kv_cache_dtype"] == "fp8" and res["max_batch_in_memory"]["4000"] == fp8
    assert res["serve"].endswith("--kv-cache-dtype fp8")
    assert "kv-cache-dtype" not in res["note_codes"]
    assert KV_CACHE_CHOICES == tuple(k for k in S.KV_CACHE_DTYPES if k not in ("bf16", "fp16"))


@pytest.mark.parametrize("argv, code_", [
    (["--gpu", "RTX-3090", "--model", "Llama-3.1-70B", "--draft", "eagle3", "--context", "4000",
      "--batch", "1", "8", "--gamma", "3", "--alpha", "0.7"], "weights-do-not-fit"),
    (["--gpu", "H200", "--gpus", "8", "--model", "DeepSeek-V3", "--draft", "mtp", "--context",
      "4000", "--batch", "1", "8", "--gamma", "3", "--alpha", "0.7", "--dtype", "bf16"],
     "weights-do-not-fit"),  # T6-M1: bf16 only when asked; the checkpoint's fp8 fits
    (["--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3", "--context", "4000",
      "--batch", "1", "8", "--gamma", "3", "--alpha", "0.7", "--gpu-memory-utilization", "0.1"],
     "weights-do-not-fit"),
    (["--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3", "--context",
      "99999999999", "--batch", "1", "8", "--gamma", "3", "--alpha", "0.7"],
     "no-context-within-max-positions"),  # T5-C2: beyond 131072 positions vLLM serves nothing
    (["--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3", "--context",
      "200000", "--batch", "1", "--gamma", "3", "--alpha", "0.7"],
     "no-context-within-max-positions"),  # the trial's command
    (["--gpu", "RTX-4090", "--model", "Llama-3.1-8B", "--draft", "eagle3", "--context",
      "131072", "--batch", "1", "8", "--gamma", "3", "--alpha", "0.7"], "no-sequence-fits"),
])
def test_nothing_fits_is_said_first_with_no_on_off_advice(capsys, argv, code_):
    # fault N3; T5-C2: contexts above max_position_embeddings follow the same rule
    code, out, _ = run(capsys, "plan", *argv)
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("NOTE: nothing can be served") and "change --" in first
    assert (" GB" in first) == (code_ != "no-context-within-max-positions")
    assert "schedule: none (nothing can be served: see the first line)" in out
    for advice in ("leave speculative decoding off", "does not pay", "pays at", "vllm serve"):
        assert advice not in out
    code, js, _ = run(capsys, "plan", *argv, "--json")
    res = json.loads(js)
    assert res["cannot_serve_code"] == code_ and res["serve"] is None
    assert res["schedule"] is None and "no-gamma-pays" not in res["note_codes"]
    assert {b["verdict"] for b in res["best"]} == {"does not fit"}


def test_end_to_end_figure_decides_when_lengths_are_given(capsys):
    # fault N4: e2e below 1 at every batch: no star, no "pays", no schedule or serve line
    argv = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "Llama-3.2-1B",
            "--context", "8000", "--batch", "1", "16", "--gamma", "2", "--alpha", "0.7"]
    code, js, _ = run(capsys, *argv, "--input-len", "8000", "--output-len", "16", "--json")
    res = json.loads(js)
    rows = res["rows"]
    assert all(r["speedup"] > 1 > r["speedup_end_to_end"] for r in rows)
    assert res["config"] is None and res["serve"] is None
    assert all(b["gamma"] == 0 for b in res["best"])
    assert "loses-end-to-end" in res["note_codes"]
    code, out, _ = run(capsys, *argv, "--input-len", "8000", "--output-len", "16")
    assert "*" not in out.split("schedule")[0].split("e2e =")[1]
    assert "end to end: does not pay at any batch size up to 16" in out
    # without the lengths the decode figure decides and it pays
    code, js, _ = run(capsys, *argv, "--json")
    assert json.loads(js)["serve"] is not None
    # with lengths where e2e pays, the best gamma follows e2e: the largest e2e per batch
    code, js, _ = run(capsys, *argv[:-4], "--gamma", "1", "2", "3", "4", "--alpha", "0.8",
                      "--input-len", "200", "--output-len", "2000", "--json")
    res = json.loads(js)
    for b in res["best"]:
        mine = [r for r in res["rows"] if r["batch_size"] == b["batch_size"]]
        top = max(mine, key=lambda r: r["speedup_end_to_end"])
        assert b["gamma"] == top["gamma"] and b["speedup"] == top["speedup_end_to_end"]


def test_input_len_above_the_context_is_refused(capsys):
    # fault N5: the e2e column used a prefill of 50,000 at a context of 4,000
    code, out, err = run(capsys, "plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                         "--draft", "ngram", "--context", "4000", "--batch", "1", "64",
                         "--gamma", "3", "--alpha", "0.7", "--input-len", "50000",
                         "--output-len", "10")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "input_len 50000 is above the context 4000" in err and "50005" in err


def test_an_ambiguous_gpu_alias_is_noted(capsys):
    # fault N21
    argv = ["plan", "--model", "Llama-3.1-8B", "--draft", "eagle3", "--context", "4000",
            "--batch", "1", "--gamma", "3", "--alpha", "0.7"]
    code, out, _ = run(capsys, *argv, "--gpu", "H100")
    assert code == 0 and "NOTE: GPU 'H100' is read as H100-SXM" in out
    code, out, _ = run(capsys, *argv, "--gpu", "H100-SXM")
    assert "is read as" not in out


def test_sglang_gets_a_launch_line_not_a_vllm_serve_line_or_schedule(capsys):
    from specnb.cli import main

    argv = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--engine", "sglang",
            "--draft", "eagle3", "--topk", "4", "--num-draft-tokens", "8", "--gamma", "3",
            "--tau", "3.5", "--context", "2000", "--batch", "1", "8"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "vllm serve" not in out and "schedule (num_speculative_tokens_per_batch_size)" not in out
    launch = [ln for ln in out.splitlines() if ln.startswith("python -m sglang.launch_server")]
    assert len(launch) == 1 and "--speculative-algorithm EAGLE3" in launch[0]
    assert "--speculative-eagle-topk 4 --speculative-num-draft-tokens 8" in launch[0]
    assert "the table above is the chain" in out
    assert "--max-running-requests" not in launch[0]  # batch 8: within SGLang's default 48


def test_sglang_launch_line_lifts_the_speculative_request_cap_for_large_batches(capsys):
    """SGLang admits at most 48 running requests with speculation on unless told otherwise
    (server_args.py; its DeepSeek guide's note on MTP beyond batch 48): a plan up to batch 64
    carries --max-running-requests and --cuda-graph-max-bs at its --max-num-seqs."""
    from specnb.cli import main
    from specnb.advise.plan import SGLANG_SPEC_MAX_RUNNING_REQUESTS

    argv = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--engine", "sglang",
            "--draft", "eagle3", "--gamma", "3", "--tau", "3.5", "--context", "2000",
            "--batch", "1", "64", "--json"]
    assert main(argv) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["max_num_seqs"] == 64 > SGLANG_SPEC_MAX_RUNNING_REQUESTS
    assert res["serve"].endswith("--max-running-requests 64 --cuda-graph-max-bs 64")


def test_a_gamma_above_specnbs_bound_is_refused_as_replay_refuses_it(capsys):
    from specnb.cli import main
    from specnb.theory import MAX_GAMMA

    argv = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
            "--context", "4000", "--batch", "1", "--alpha", "0.7", "--gamma"]
    for big in (MAX_GAMMA + 1, 10 ** 20):  # trial4 C7: 10**20 was told a bound of 2**53
        assert main(argv + [str(big)]) == 2
        err = capsys.readouterr().err
        assert f"--gamma must be in [1, {MAX_GAMMA}]" in err and str(big) in err
    assert main(argv + [str(MAX_GAMMA)]) == 0


def test_calibrate_bench_reads_each_file_once(capsys, tmp_path, monkeypatch):
    """Trial 3 (noticed): --calibrate-bench read every file twice (once for the fit, once for
    its validity flags). The reader of bench files is patched to count its calls per file."""
    from collections import Counter

    from specnb.vllm import bench as B

    files = _bench_files(tmp_path, "vllm-i20780-eagle3")[:3]
    reads = Counter()
    real = B.read_bench_results

    def counting(path):
        reads[str(path)] += 1
        return real(path)

    monkeypatch.setattr(B, "read_bench_results", counting)
    code, out, err = run(capsys, "plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                         "--draft", "eagle3", "--context", "256", "--batch", "1", "8",
                         "--gamma", "2", "--calibrate-bench", *files)
    assert code == 0, err
    assert dict(reads) == {f: 1 for f in files}
    code, _, err = run(capsys, "plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                       "--draft", "eagle3", "--context", "256", "--batch", "1", "--gamma", "2",
                       "--calibrate-bench", files[0], files[0])
    assert code == 2 and "--calibrate-bench lists a file twice" in err


def test_one_tau_with_several_gammas_is_read_at_the_first_gamma_as_simulate_does(capsys):
    """T5-W6: --gamma 1 3 --tau 1.8 is the draft whose Eq. 1 alpha is 0.8 at gamma 1, so the
    table is --alpha 0.8's (gamma 3 wins, 1.88 vs 1.46), with the note that says so; before,
    1.8 was used at gamma 3 too and gamma 1 always won."""
    base = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
            "--context", "2000", "--batch", "1", "16", "--gamma", "1", "3"]
    code, out, err = run(capsys, *base, "--tau", "1.8", "--json")
    assert code == 0, err
    one = json.loads(out)
    _, out, _ = run(capsys, *base, "--alpha", "0.8", "--json")
    eq1 = json.loads(out)
    assert [round(r["speedup"], 2) for r in one["rows"]] == \
        [round(r["speedup"], 2) for r in eq1["rows"]]
    assert [b["gamma"] for b in one["best"]] == [3, 3]
    assert "tau-read-at-first-gamma" in one["note_codes"]
    assert one["setup"]["acceptance"]["tau"] == pytest.approx([1.8, 2.952])
    # the first listed gamma: 2.95 at gamma 3 (was refused as a tau for gamma 1)
    code, out, err = run(capsys, *base[:-2], "3", "1", "--tau", "2.95")
    assert code == 0, err
    assert "note: tau 2.95 is read as measured at the first gamma listed (3)" in out


def test_a_one_row_calibration_the_defaults_match_leaves_the_plan_as_it_was(capsys, tmp_path):
    """T5-M7: the trial's one-row file (6.0 ms where the model says 5.99) cut batch 16 from
    1.58x to 1.03x while the note said unfitted directions keep their defaults."""
    p = tmp_path / "c1.csv"
    p.write_text("role,batch_size,context,query_tokens,ms\ntarget,1,2000,1,6.0\n")
    argv = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
            "--context", "2000", "--batch", "1", "16", "--gamma", "3", "--alpha", "0.7"]
    _, out, _ = run(capsys, *argv, "--json")
    plain = [round(r["speedup"], 2) for r in json.loads(out)["rows"]]
    code, out, err = run(capsys, *argv, "--calibrate", str(p), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert [round(r["speedup"], 2) for r in res["rows"]] == plain == [1.62, 1.58]
    assert "fit-underdetermined" in res["calibration"]["note_codes"]


def test_a_suffix_profile_charges_each_draft_its_mean_length_of_verification(capsys, tmp_path):
    """T5-M8: the default log's suffix replay at gamma 5 drafts 1.73 tokens a draft; the plan
    verifies 1 + M x 1.73 tokens per sequence, not 1 + M x 5."""
    prof = tmp_path / "s.json"
    assert main(["replay", "--method", "suffix", "--gamma", "5", "--out", str(prof),
                 "--json"]) == 0
    capsys.readouterr()
    saved = json.loads(prof.read_text())
    (whole,) = [e for e in saved["entries"] if e["task"] is None and e["context"] is None]
    mean_len = whole["num_draft_tokens"] / whole["num_drafts"]
    assert round(mean_len, 2) == 1.73
    code, out, err = run(capsys, "plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                         "--draft", "suffix", "--context", "200", "--batch", "1", "64",
                         "--gamma", "5", "--acceptance-profile", str(prof), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert "profile-mean-draft-length" in res["note_codes"]
    (lens,) = res["setup"]["acceptance_profile"]["mean_draft_len_by_context"].values()
    e = next(x for x in saved["entries"] if x["task"] is None and x["context"]
             and x["context"][0] <= 200 and (x["context"][1] is None or 200 < x["context"][1]))
    assert lens == [pytest.approx(e["num_draft_tokens"] / e["num_drafts"])]
    from specnb.advise.plan import with_sync_host

    st, _ = with_sync_host(S.setup("H100-SXM", "Llama-3.1-8B", "suffix",  # V1: T9-01
                                   proposal_rate=e["num_drafts"] / e["num_steps"],
                                   mean_draft_len=lens[0]), "v1")
    tau = 1 + e["num_accepted_tokens"] / e["num_drafts"]
    for r in res["rows"]:
        want = float(S.speedup(st, r["batch_size"], 200, 5, tau=tau))
        assert round(r["speedup"], 2) == round(want, 2)


@pytest.mark.parametrize("draft", ["suffix", "eagle3", "dflash"])
def test_engine_vllm_v0_refuses_a_draft_v0_never_had(capsys, draft):
    """T7-07: vLLM V0 (v0.6.3's spec_decode proposers) had n-gram, draft models, EAGLE-1,
    Medusa and MLP speculators: no verdict for suffix / eagle3 / dflash, exit 2 naming the
    draft and the V0 drafts allowed; eagle and ngram still plan."""
    argv = ["plan", "--engine", "vllm-v0", "--gpu", "A100", "--model", "Llama-3.1-8B",
            "--context", "2000", "--batch", "1", "8", "--gamma", "2", "--alpha", "0.5"]
    code, out, err = run(capsys, *argv, "--draft", draft)
    assert code == 2 and out == ""
    assert f"--draft {draft} on engine vllm-v0" in err and "ngram, eagle" in err
    for ok in ("ngram", "eagle"):
        code, out, err = run(capsys, *argv, "--draft", ok, "--json")
        assert code == 0, err
        assert json.loads(out)["setup"]["engine"] == "vllm-v0"


def test_sglang_ngram_launch_line_is_the_planned_chain(capsys):
    """T7-13: the trial's command: no --speculative-eagle-topk / --speculative-num-steps
    (SGLang overwrites / derives them for NGRAM), breadth 1 and gamma + 1 draft tokens."""
    code, out, err = run(capsys, "plan", "--engine", "sglang", "--gpu", "H100-SXM", "--model",
                         "Qwen3-8B", "--draft", "ngram", "--context", "2000", "--batch", "1",
                         "8", "--gamma", "3", "--alpha", "0.5", "--json")
    assert code == 0, err
    data = json.loads(out)
    w = shlex.split(data["serve"])
    assert "--speculative-eagle-topk" not in w and "--speculative-num-steps" not in w
    assert w[w.index("--speculative-ngram-max-bfs-breadth") + 1] == "1"
    assert w[w.index("--speculative-num-draft-tokens") + 1] == "4"
    assert "sglang-ngram-matcher" in data["note_codes"]


def test_sglang_plan_has_no_vllm_max_model_len_note(capsys):
    """T7-03: SGLang's memory share and --context-length, not vLLM's 0.92 and refusal."""
    code, out, err = run(capsys, "plan", "--engine", "sglang", "--gpu", "RTX-4090", "--model",
                         "Llama-3.1-8B", "--dtype", "fp8", "--draft", "ngram", "--context",
                         "4000", "--batch", "1", "4", "--gamma", "2", "--alpha", "0.7", "--json")
    assert code == 0, err
    data = json.loads(out)
    from specnb import limits, serving as S

    assert data["setup"]["gpu_memory_utilization"] == limits.sglang_mem_fraction_static(
        S.gpu("RTX-4090").device_memory_bytes, 1)
    assert "--context-length 4000" in data["serve"] and "--max-model-len" not in data["serve"]
    assert "sglang-context-length-set" in data["note_codes"]
    assert "max-model-len-set" not in data["note_codes"]


def test_a_profiles_runner_reaches_the_serve_line(capsys, tmp_path):
    """T8a-01: a V1 replay (the CPU proposer) plans a line that runs V1; the default V2 replay
    (a draft at every step: proposal rate 1) a plain line, and its figures fall with the batch
    as padded drafts cost verification."""
    from specnb import acceptance_profile as AP
    from specnb import replay as R

    base = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "ngram",
            "--context", "2000", "--batch", "1", "64", "--gamma", "5", "--json"]
    out = {}
    for runner in ("v1", "v2"):
        f = tmp_path / f"{runner}.json"
        AP.save(R.replay(gammas=[5], runner=runner), f)
        code, js, err = run(capsys, *base, "--acceptance-profile", str(f))
        assert code == 0, err
        out[runner] = json.loads(js)
    assert out["v1"]["serve"].startswith("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve ")
    assert "model-runner-env" in out["v1"]["note_codes"]
    assert out["v2"]["serve"].startswith("vllm serve ")
    sp = {k: [r["speedup"] for r in v["rows"]] for k, v in out.items()}
    assert sp["v2"][1] < 1 < sp["v1"][1]  # batch 64: V2's padded drafts lose, V1's pay


def test_an_ngram_gpu_v1_profile_is_served_as_ngram_gpu_with_async_scheduling(capsys, tmp_path):
    """T9-04: V1's GPU n-gram proposer keeps async scheduling: the line keeps its method name
    and no synchronous-scheduling time is charged, unlike ngram's CPU proposer."""
    from specnb import acceptance_profile as AP
    from specnb import replay as R

    f = tmp_path / "g.json"
    AP.save(R.replay(method="ngram_gpu", gammas=[3], runner="v1"), f)
    code, js, err = run(capsys, "plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                        "--draft", "ngram", "--context", "100", "--batch", "1", "64", "--gamma",
                        "3", "--acceptance-profile", str(f), "--json")
    assert code == 0, err
    res = json.loads(js)
    assert res["serve"].startswith("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve ")
    assert '"method": "ngram_gpu"' in res["serve"]
    assert "v1-sync-scheduling" not in res["note_codes"]
    assert all(r["t_engine_ms"] == 0 for r in res["rows"])
