"""specnb.measure on the bundled pair: alpha by teacher forcing, assisted runs, prediction
beside measurement, losslessness, errors, and the ``specnb measure`` command."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb import acceptance as acc  # noqa: E402
from specnb import measure as M  # noqa: E402
from specnb import theory  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MAX_NEW = 32
GAMMAS = (1, 3)


@pytest.fixture(scope="module")
def models():
    torch.set_num_threads(2)
    target = M.load_model(M.BUNDLED_TARGET, device="cpu")
    drafts = {p.name: M.load_model(p, device="cpu", need_tokenizer=False)
              for p in M.BUNDLED_DRAFTS}
    return {"target": target, "drafts": drafts, "target_name": str(M.BUNDLED_TARGET)}


@pytest.fixture(scope="module")
def result(models):
    """One small measurement: 1 prompt per task, gammas 1 and 3, greedy, both drafts, PLD."""
    return M.measure(models=models, per_task=1, gammas=GAMMAS, temperatures=(0.0,),
                     max_new_tokens=MAX_NEW, repeats=1, warmup=1, progress=False)


def test_every_greedy_run_is_lossless(result):
    spec = result.runs[~result.runs["method"].isin(["plain", "plain_short"])]
    assert len(spec) == 3 * (2 * len(GAMMAS) + len(GAMMAS))
    assert spec["lossless"].tolist() == [True] * len(spec)
    assert result.lossless is True and result.summary["lossless"].all()


def test_greedy_rounds_from_teacher_forcing_match_the_streamed_rounds(result):
    # At T = 0 the teacher-forced betas determine every round of assisted decoding.
    runs = result.runs[result.runs["method"] == "assisted"]
    for _, run in runs.iterrows():
        b = result.betas[(result.betas["draft"] == run["draft"])
                         & (result.betas["prompt"] == run["prompt"])]["betas"].iloc[0]
        predicted = acc.greedy_rounds(b, int(run["gamma"]), MAX_NEW)
        assert predicted.produced.tolist() == list(run["accept_lengths"]), \
            (run["draft"], run["gamma"], run["prompt"])
        # one target forward per round; the draft runs k forwards per round
        assert run["target_forwards"] == predicted.n_rounds
        assert run["draft_forwards"] == predicted.draft_len.sum()


def test_tau_measured_matches_betas_and_iid_prediction(result):
    s = result.summary
    # without the i.i.d. assumption, the greedy prediction is exact
    np.testing.assert_allclose(s["tau_measured"], s["tau_betas"], rtol=1e-12)
    # Eq. 1 from alpha: within the tolerance the alpha interval and the finite-length and
    # non-i.i.d. effects allow (tau at the CI ends, widened by 15%)
    for _, row in s.iterrows():
        lo = theory.expected_tokens_per_step(row["alpha_ci_low"], row["gamma"])
        hi = theory.expected_tokens_per_step(row["alpha_ci_high"], row["gamma"])
        assert lo * 0.85 <= row["tau_measured"] <= hi * 1.15, row.to_dict()
        assert 1.0 <= row["tau_measured"] <= row["gamma"] + 1


def test_bigger_draft_has_higher_alpha(result):
    a = result.alpha[result.alpha["task"] == "all"].set_index("draft")["alpha"]
    assert a["draft-2x128"] > a["draft-1x64"] > 0.05
    for _, row in result.alpha.iterrows():
        if not np.isnan(row["ci_low"]):
            assert row["ci_low"] <= row["alpha"] <= row["ci_high"]


def test_alpha_counted_from_runs_agrees_with_teacher_forcing(result):
    for _, row in result.summary.iterrows():
        assert abs(row["alpha_counted"] - row["alpha"]) < 0.12, row.to_dict()


def test_predictions_and_timing_model_are_reported(result):
    s = result.summary
    for _, row in s.iterrows():
        assert row["speedup_predicted"] == pytest.approx(
            theory.walltime_speedup(row["alpha"], row["gamma"], row["c"]))
        assert row["speedup_measured"] > 0 and row["c"] > 0
    t = result.timing
    assert set(t["draft"]) == {"draft-2x128", "draft-1x64"}
    assert (t["t_target_forward"] > 0).all() and (t["c"] > 0).all()
    # one joint fit: the target's times are shared, and no fitted time is negative or NaN
    for col in ("t_call", "t_target", "t_round"):
        assert t[col].nunique() == 1
    fitted = t[["t_call", "t_target", "t_draft", "t_round"]].to_numpy()
    assert (fitted >= 0).all() and not np.isnan(fitted).any()
    assert t["warnings"].map(lambda w: isinstance(w, str)).all()
    assert (s["speedup_timing_model"] > 0).all()


def test_leave_one_gamma_out_prediction_is_reported(result):
    s = result.summary
    loo = s["speedup_predicted_loo"]
    assert loo.notna().all() and (loo > 0).all()
    # it is a prediction, not the in-sample fit: it differs from the timing model's own figure
    assert not np.allclose(loo, s["speedup_timing_model"])
    obj = json.loads(json.dumps(result.to_json()))
    assert len(obj["speedup_predicted_loo"]) == len(s)


def test_per_task_on_a_log_keeps_every_served_temperature():
    # the bundled log holds every prompt at T = 0 and at T = 1 (all T = 0 records first)
    records = M.load_prompts(M.BUNDLED_LOGGED, logged=True, per_task=1)
    assert [(r["task"], r["temperature"]) for r in records] == [
        (t, temp) for t in ("code-completion", "prose", "copy-edit") for temp in (0.0, 1.0)]
    assert len(M.load_prompts(M.BUNDLED_LOGGED, logged=True, per_task=2)) == 12
    # prompts without responses: per family, as before
    assert len(M.load_prompts(per_task=1)) == 3


def test_alpha_from_the_stored_logged_responses_matches_assisted_runs(models, tmp_path):
    tmodel, tok = models["target"]
    greedy = [r for r in M.load_prompts(M.BUNDLED_LOGGED, logged=True, per_task=1)
              if r["temperature"] == 0]
    log = tmp_path / "greedy.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in greedy))
    res = M.alpha_from_logged(models=models, prompts=log, gammas=(1, 3), timing=False)
    assert res.config["n_records"] == 3 and res.config["temperatures"] == [0.0]
    assert res.config["positions"] == 3 * 64
    records = M.load_prompts(log, logged=True)
    ids = M.encode_prompts(tok, records, max_new_tokens=0, context=None)
    for dname, (d, _) in models["drafts"].items():
        for g in (1, 3):
            rounds = []
            for x, r in zip(ids, records):
                run = M.run_generate(tmodel, x, draft=d, gamma=g,
                                     max_new_tokens=len(r["response_ids"]))
                rounds.append(acc.rounds_from_accept_lengths(run.accept_lengths, g,
                                                             len(r["response_ids"])))
            row = res.summary[(res.summary["draft"] == dname) & (res.summary["gamma"] == g)]
            assert abs(row["alpha_rounds"].iloc[0] - acc.alpha_from_rounds(rounds)) <= 0.02


def test_stored_logged_responses_have_provenance():
    recs = M.load_prompts(M.BUNDLED_LOGGED, logged=True)
    prompts = {p["id"]: p["prompt"] for p in M.load_prompts()}
    assert len(recs) == 2 * len(prompts)
    assert {r["temperature"] for r in recs} == {0.0, 1.0}
    for r in recs:
        assert r["prompt"] == prompts[r["id"]] and r["max_new_tokens"] == 64
        assert 1 <= len(r["response_ids"]) <= 64 and r["response"]
    readme = (ROOT / "data" / "prompts" / "README.md").read_text()
    assert "stdlib_heldout_responses.jsonl" in readme and "make_logged_responses.py" in readme


def test_prompt_lookup_runs_on_copy_heavy_prompts(result):
    p = result.pld.set_index(["gamma", "task"])
    assert p["lossless"].all()
    # copying prompts give prompt lookup something to copy
    assert p.loc[(3, "copy-edit"), "tau"] > 1.0


def test_json_keys(result):
    obj = json.loads(json.dumps(result.to_json()))
    for key in ("alpha", "gamma", "temperature", "tau_measured", "tau_predicted",
                "speedup_measured", "speedup_predicted", "c", "lossless"):
        assert key in obj and len(obj[key]) == len(result.summary)
    assert obj["lossless_all"] is True


def test_teacher_forcing_a_draft_against_itself_accepts_everything(models):
    tmodel, tok = models["target"]
    ids = torch.tensor(tok("def f(x):\n    return")["input_ids"])
    cont = M.generate_continuation(tmodel, ids, max_new_tokens=12)
    assert M.teacher_forced_betas(tmodel, tmodel, ids, cont, 0.0).tolist() == [1.0] * 12
    sampled = M.generate_continuation(tmodel, ids, max_new_tokens=12, temperature=1.0, seed=1)
    np.testing.assert_allclose(M.teacher_forced_betas(tmodel, tmodel, ids, sampled, 1.0), 1.0,
                               atol=1e-5)
    d = models["drafts"]["draft-1x64"][0]
    b = M.teacher_forced_betas(tmodel, d, ids, sampled, 1.0)
    assert b.shape == (12,) and ((b >= 0) & (b <= 1)).all() and b.mean() < 1


def test_sampling_assisted_run_counts(models):
    tmodel, tok = models["target"]
    d = models["drafts"]["draft-2x128"][0]
    ids = torch.tensor(tok("import os\n")["input_ids"])
    keys = ("num_assistant_tokens", "num_assistant_tokens_schedule",
            "assistant_confidence_threshold")
    before = {k: getattr(d.generation_config, k, None) for k in keys}
    run = M.run_generate(tmodel, ids, draft=d, gamma=3, max_new_tokens=20, temperature=1.0,
                         seed=3)
    assert sum(run.accept_lengths) == len(run.tokens)
    assert run.target_forwards == len(run.accept_lengths)
    # the fixed-gamma settings were put back as they were
    assert {k: getattr(d.generation_config, k, None) for k in keys} == before


def test_missing_model_path_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist.*specnb.train"):
        M.load_model(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="safetensors"):
        M.load_model(tmp_path / "empty")


def test_mismatched_vocabularies_are_refused(models, tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    other = GPT2LMHeadModel(GPT2Config(vocab_size=100, n_layer=1, n_embd=16, n_head=1,
                                       n_positions=64))
    with pytest.raises(ValueError, match="mismatched vocabularies.*vocab_size = 100"):
        M.check_pair(models["target"][0], other)


def test_prompt_longer_than_context_is_refused(models):
    tmodel, tok = models["target"]
    long = [{"id": "long", "task": "code-completion", "prompt": "x = 1\n" * 200}]
    with pytest.raises(ValueError, match="'long'.*has a context of 256 positions"):
        M.encode_prompts(tok, long, max_new_tokens=32, context=M.context_length(tmodel))


def test_load_prompts_validates_lines(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"task": "prose", "prompt": "ok"}\n{"prompt": "no task"}\n')
    with pytest.raises(ValueError, match=r"p.jsonl:2: .*'task'"):
        M.load_prompts(f)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        M.load_prompts(tmp_path / "none.jsonl")
    items = M.load_prompts(tasks=["prose"], per_task=2)
    assert [i["task"] for i in items] == ["prose", "prose"]
    with pytest.raises(ValueError, match="not in"):
        M.load_prompts(tasks=["poetry"])


def test_bad_arguments_are_named(models):
    with pytest.raises(ValueError, match="gammas"):
        M.measure(models=models, gammas=[0])
    with pytest.raises(ValueError, match="temperatures"):
        M.measure(models=models, temperatures=[-1])
    with pytest.raises(ValueError, match="device"):
        M.resolve_device("tpu")
    with pytest.raises(ValueError, match="dtype"):
        M.resolve_dtype("int8")


def test_cli_logged_text_report_keeps_both_temperatures_and_qualifies_the_speedup(capsys):
    from specnb.cli import main

    rc = main(["measure", "--logged", str(M.BUNDLED_LOGGED), "--draft", str(M.BUNDLED_DRAFTS[1]),
               "--per-task", "1", "--gamma", "1", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0 and "(6 records, T [0.0, 1.0])" in out
    # Theorem 3.8 with single-forward c says > 1x where the assisted runs measure < 1x: the
    # report says what the figure leaves out
    assert "leave out each round's fixed costs" in out


def test_cli_json_on_the_bundled_pair(capsys):
    from specnb.cli import main

    rc = main(["measure", "--draft", str(M.BUNDLED_DRAFTS[1]), "--per-task", "1", "--gamma", "2",
               "--temperature", "0", "--max-new-tokens", "16", "--repeats", "1", "--no-pld",
               "--json"])
    assert rc == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["gamma"] == [2] and obj["temperature"] == [0.0] and obj["lossless"] == [True]
    assert obj["speedup_predicted_loo"] == [None]  # one gamma: nothing to leave out
    assert obj["config"]["drafts"] == ["draft-1x64"]


@pytest.mark.parametrize("argv,msg", [
    (["--threads", "-1"], "--threads must be >= 0"),
    (["--per-task", "-1"], "--per-task must be >= 0 (0 = all prompts)"),
    (["--repeats", "0"], "--repeats must be >= 1"),
    (["--gamma", "2", "0"], "--gamma must be >= 1"),
])
def test_cli_flag_errors_name_the_flag(capsys, argv, msg):
    from specnb.cli import main

    assert main(["measure", *argv]) == 2
    assert msg in capsys.readouterr().err


def test_cli_help_documents_device_dtype_seed(capsys):
    from specnb.cli import main

    with pytest.raises(SystemExit):
        main(["measure", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "default auto: cuda when torch sees a GPU" in out
    assert "default auto: float32 on a CPU" in out
    assert "seed for sampling at T > 0" in out


def test_per_task_zero_means_all_prompts():
    assert M.load_prompts(per_task=0) == M.load_prompts()
    with pytest.raises(ValueError, match="per_task.*0 or None = all"):
        M.load_prompts(per_task=-1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a torch without a GPU")
def test_cuda_without_gpu_says_how_to_install_a_cuda_torch():
    with pytest.raises(ValueError, match="--device") as exc:
        M.resolve_device("cuda")
    if torch.version.cuda is None:
        assert "CUDA build" in str(exc.value) and "make TORCH= run" in str(exc.value)


def test_cli_missing_model_exits_with_message(capsys):
    from specnb.cli import main

    assert main(["measure", "--target", "data/models/none", "--json"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_without_torch_says_install_the_extra(tmp_path):
    # a sitecustomize that hides torch: `specnb --help` still works, `measure` explains
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nsys.modules['torch'] = None\nsys.modules['transformers'] = None\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    cmd = [sys.executable, "-m", "specnb"]
    help_ = subprocess.run(cmd + ["--help"], capture_output=True, text=True, env=env, timeout=60)
    assert help_.returncode == 0 and "measure" in help_.stdout
    proc = subprocess.run(cmd + ["measure"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 3
    assert "pip install -e '.[measure]'" in proc.stderr


def test_prompt_files_bom_non_utf8_and_a_cut_line(tmp_path):
    """A BOM is not data; bytes that are not UTF-8 and a truncated JSON line are named."""
    rec = {"task": "t", "prompt": "p", "response": " r", "temperature": 0}
    f = tmp_path / "bom.jsonl"
    f.write_text("\ufeff" + json.dumps(rec) + "\n", encoding="utf-8")
    assert M.load_prompts(f, logged=True)[0]["response"] == " r"
    f.write_bytes(json.dumps(rec).encode().replace(b" r", b"caf\xe9") + b"\n")
    with pytest.raises(ValueError, match=r"bom.jsonl: not UTF-8 text \(byte 0xe9 at offset"):
        M.load_prompts(f, logged=True)
    f.write_text(json.dumps(rec)[:-5] + "\n")
    with pytest.raises(ValueError, match=r"bom.jsonl:1: not valid JSON \(Unterminated string "
                                         r"starting at; column \d+\)"):
        M.load_prompts(f, logged=True)


def test_a_long_logged_prompt_is_not_blamed_on_max_new_tokens(models):
    tmodel, tok = models["target"]
    long = [{"id": "long", "task": "t", "prompt": "x = 1\n" * 200}]
    with pytest.raises(ValueError, match=r"'long' \(task 't'\) is \d+ tokens; it needs \d+ "
                                         r"positions.*: drop the record") as info:
        M.encode_prompts(tok, long, max_new_tokens=0, context=M.context_length(tmodel))
    assert "max-new-tokens" not in str(info.value)


def test_a_hub_id_that_cannot_be_loaded_gives_a_one_line_error(monkeypatch):
    """transformers' own message spans lines; the CLI prints one-line errors."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError) as info:
        M.load_model("nosuch-org/nosuch-model")
    assert "\n" not in str(info.value) and "HF_HUB_OFFLINE is set" in str(info.value)
