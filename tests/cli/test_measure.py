"""``specnb measure`` (specnb/cli/measure.py): text and JSON reports on the bundled pair, flag
errors that name the flag, --logged conflicts, --draft-head's, --help, and the message
without torch; a head that does not fit the target exits 2 naming its config (slow)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb import measure as M  # noqa: E402
from specnb.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_cli_logged_text_report_keeps_both_temperatures_and_qualifies_the_speedup(capsys):
    rc = main(["measure", "--logged", str(M.BUNDLED_LOGGED), "--draft", str(M.BUNDLED_DRAFTS[1]),
               "--per-task", "1", "--gamma", "1", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0 and "(6 records, T [0.0, 1.0])" in out
    # Theorem 3.8 with single-forward c says > 1x where the assisted runs measure < 1x: the
    # report says what the figure leaves out
    assert "leave out each round's fixed costs" in out


@pytest.mark.slow
def test_cli_json_on_the_bundled_pair(capsys):
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
    assert main(["measure", *argv]) == 2
    assert msg in capsys.readouterr().err


def test_cli_help_documents_device_dtype_seed(capsys):
    with pytest.raises(SystemExit):
        main(["measure", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "default auto: cuda when torch sees a GPU" in out
    assert "default auto: float32 on a CPU" in out
    assert "seed for sampling at T > 0" in out


def test_cli_missing_model_exits_with_message(capsys):
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


def test_cli_logged_flag_conflicts_exit_2(capsys):
    assert main(["measure", "--logged", str(M.BUNDLED_LOGGED), "--temperature", "0"]) == 2
    assert "each record gives the temperature" in capsys.readouterr().err
    assert main(["measure", "--logged", "x.jsonl", "--prompts", "y.jsonl"]) == 2


@pytest.mark.parametrize("extra, match", [
    (["--max-new-tokens", "5"], "--max-new-tokens does not apply with --logged"),
    (["--repeats", "3", "--no-pld"], "--repeats, --no-pld do not apply with --logged"),
    (["--gamma", "1", "1"], "--gamma lists a value twice: 1 1"),
    (["--loop", "reference"], "--loop does not apply with --logged"),
    (["--draft", "d", "d"], "--draft lists a value twice: d d"),
])
def test_cli_logged_flags_that_would_be_ignored_or_repeated_exit_2(capsys, extra, match):
    """Flags --logged has no use for are refused like --temperature, not dropped silently;
    a repeated gamma or draft would print the same row twice (or merge two drafts)."""
    assert main(["measure", "--logged", str(M.BUNDLED_LOGGED), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specnb measure: error:") and match in err, err


def _without_torch(tmp_path):
    """Environment whose python cannot import torch or transformers (a sitecustomize hides them):
    a flag error that comes back with exit 2 was checked before torch was needed."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nsys.modules['torch'] = None\nsys.modules['transformers'] = None\n")
    return {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "HF_HUB_OFFLINE": "1"}


@pytest.mark.fast_sample(every=13)  # a subprocess each: make check runs a sample
@pytest.mark.parametrize("argv, match", [
    (["--repeats", "0"], "--repeats must be >= 1"),
    (["--temperature", "-1"], "--temperature must be >= 0"),
    (["--temperature", "0", "inf"], "--temperature must be finite"),  # trial4 C9: after torch
    (["--gamma", "10000"], "--gamma 10000 is more than any round can draft: with "
                           "max_new_tokens 48 a round drafts at most 47"),
    (["--gamma", "9", "--max-new-tokens", "8"], "a round drafts at most 7 tokens"),
    (["--logged", str(M.BUNDLED_LOGGED), "--gamma", "300"], "context of 256 positions"),
    (["--prompts", "nosuch.jsonl"], "--prompts file 'nosuch.jsonl' does not exist"),
    (["--prompts", "data"], "--prompts file 'data' is a folder; give the JSON-lines file"),
    (["--target", "someorg/nosuch-model"], "HF_HUB_OFFLINE is set"),
    (["--draft", "data/models/nosuch"], "--draft 'data/models/nosuch' does not exist"),
    (["--logged", str(M.BUNDLED_LOGGED), "--target", str(M.BUNDLED_DRAFTS[0])],
     "holds the bundled target's responses, not --target"),
    (["--draft-head", "data/models/nosuch"], "--draft-head data/models/nosuch: not a head folder"),
    (["--draft-head", str(M.BUNDLED_EAGLE3_HEAD), "--loop", "transformers", "reference"],
     "--draft-head runs in the reference loop only"),
    (["--logged", str(M.BUNDLED_LOGGED), "--draft-head", str(M.BUNDLED_EAGLE3_HEAD)],
     "--draft-head does not apply with --logged"),
])
def test_cli_checks_every_argument_before_torch(tmp_path, argv, match):
    """Faults 13, 22, 23 and 8: each refused with exit 2 and a message naming the flag, by a
    python without torch (so before torch could load) and without waiting on the hub."""
    proc = subprocess.run([sys.executable, "-m", "specnb", "measure", *argv], cwd=ROOT,
                          capture_output=True, text=True, env=_without_torch(tmp_path), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert match in " ".join(proc.stderr.split())


def test_cli_loop_flag(capsys):
    with pytest.raises(SystemExit):
        main(["measure", "--loop", "vllm"])
    assert "invalid choice: 'vllm'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["measure", "--help"])
    assert "reference loop" in " ".join(capsys.readouterr().out.split())


@pytest.mark.slow
def test_cli_both_loops_print_spread_and_overhead(capsys):
    rc = main(["measure", "--draft", str(M.BUNDLED_DRAFTS[1]), "--per-task", "1", "--gamma", "1",
               "3", "--temperature", "0", "--max-new-tokens", "16", "--repeats", "1", "--no-pld",
               "--loop", "transformers", "reference", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "speedup_with_overhead" in out
    # T8a-10: 3 prompts (one per task) make a range, not a 95% CI, and the tables say so
    from specnb.measure.spread import interval_label, is_range

    n = int(re.search(r"prompts \S+ \((\d+)\)", out).group(1))
    assert is_range(n) and f"speedup ({interval_label(n)})" in out and "(95% CI" not in out
    assert f"alpha by teacher forcing (ci_low-ci_high: {interval_label(n)}):" in out
    assert out.count("reference") >= 3 and "t_round_ms" in out
    # fault N12: one verdict line per method and loop, as notebook 08; N13: the two-gamma warning
    lines = out.splitlines()
    assert sum(x.startswith("verdict, draft models (") for x in lines) == 2
    assert "warning: speedup_predicted_loo from 2 gammas" in out
    assert "read its speedup as the forecast for a lean engine loop" in out


def test_tables_show_temperatures_as_given():
    # fault 40: temperatures were printed as 0.000 and 1000000000.000
    import pandas as pd

    from specnb.cli.measure import _table

    text = _table(pd.DataFrame({"temperature": [0.0, 0.7, 1e9], "alpha": [0.5, 0.25, 0.125]}))
    lines = [line.split() for line in text.splitlines()[1:]]
    assert [row[0] for row in lines] == ["0", "0.7", "1e+09"]
    assert [row[1] for row in lines] == ["0.500", "0.250", "0.125"]


def test_negative_zero_temperature_is_greedy_zero():
    # trial4 K3: --temperature -0.0 printed "T = -0" in the verdict
    import argparse
    import math

    from specnb.cli import measure as CM

    sub = argparse.ArgumentParser().add_subparsers()
    args = CM.register(sub).parse_args(["--temperature", "-0.0", "0.7", "--no-pld"])
    bad = CM._check_flags(args)
    assert bad is None or "temperature" not in bad
    assert [math.copysign(1, t) for t in args.temperature] == [1.0, 1.0]
    assert [f"{t:g}" for t in args.temperature] == ["0", "0.7"]


@pytest.mark.slow
def test_cli_head_of_another_target_exits_2(capsys, tmp_path):
    """A head whose hidden size is not the target's: one line naming its config.json."""
    cfg = json.loads((M.BUNDLED_EAGLE3_HEAD / "config.json").read_text())
    cfg["target_hidden_size"] = 512
    bad = tmp_path / "head"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps(cfg))
    (bad / "model.safetensors").write_bytes((M.BUNDLED_EAGLE3_HEAD / "model.safetensors")
                                            .read_bytes())
    assert main(["measure", "--draft-head", str(bad), "--per-task", "1", "--gamma", "1",
                 "--temperature", "0", "--max-new-tokens", "4", "--repeats", "1",
                 "--no-progress", "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "config.json" in err and "512" in err and "256" in err and len(err.splitlines()) == 1


# ------------------------------------------------ fast refusals (issue 26, R8, N20)
FAST_BAD = [("--prompts", "", "no prompts"), ("--prompts", b"\x89PNG\x00\xff", "not UTF-8"),
            ("--logged", '{"task": "a"', "not valid JSON"),
            ("--prompts", '{"x": 1}\n', "'task'"),
            ("--logged", '{"task": "a", "prompt": "p"}\n', "'response'")]


@pytest.mark.parametrize("flag, content, match", FAST_BAD)
def test_bad_file_contents_are_refused_before_torch(tmp_path, capsys, flag, content, match):
    from specnb.cli import main

    path = tmp_path / "f.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert main(["measure", flag, str(path)]) == 2
    assert match in capsys.readouterr().err


def test_device_cuda_on_a_cpu_torch_is_refused_without_torch(monkeypatch):
    from specnb.measure import args as A

    monkeypatch.setattr(A, "_torch_build", lambda: {"__version__": "2.13.0+cpu", "cuda": None,
                                                    "hip": None})
    with pytest.raises(ValueError, match="CPU build"):
        A.check_device("cuda")
    A.check_device("cpu")
    monkeypatch.setattr(A, "_torch_build", lambda: None)
    A.check_device("cuda")  # no torch: the import that follows says so


@pytest.mark.slow
def test_refusals_take_under_3_s_and_never_import_torch(tmp_path):
    import subprocess
    import sys
    import time

    path = tmp_path / "empty.jsonl"
    path.write_text("")
    code = ("import sys; from specnb.cli import main; rc = main(sys.argv[1:]); "
            "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)")
    from specnb.measure.args import _torch_build

    cases = [["measure", "--prompts", str(path)]]
    if (_torch_build() or {}).get("cuda", "x") is None:  # a CPU torch: cuda is refused
        cases.append(["measure", "--device", "cuda"])
    for argv in cases:
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                              text=True, timeout=60)
        took = time.perf_counter() - t0
        assert done.returncode == 2 and "torch imported" not in done.stderr, done.stderr
        assert took < 3.0, (argv, took)
