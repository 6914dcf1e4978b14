"""specnb.measure.args: the checks ``specnb measure`` runs before torch loads (models, prompt
files, gamma bounds), and that the module and the package face import no torch."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specnb.measure import args as A

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_face_and_the_checks_loads_no_torch():
    code = ("import sys, specnb.measure, specnb.measure.args, specnb.measure.spread; "
            "sys.exit(1 if {'torch', 'transformers'} & set(sys.modules) else 0)")
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_model_names(tmp_path, monkeypatch):
    assert A.check_model_name(A.BUNDLED_TARGET) == "local"
    with pytest.raises(FileNotFoundError, match="does not exist .*not looked up on the model hub"):
        A.check_model_name(tmp_path / "nosuch", "--target")
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(FileNotFoundError, match="must be a folder holding config.json"):
        A.check_model_name(tmp_path / "f.txt")
    monkeypatch.setattr(A, "_in_hub_cache", lambda name: False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match="--draft 'someorg/nosuch' .*HF_HUB_OFFLINE is set"):
        A.check_model_name("someorg/nosuch", "--draft")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(A, "hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(FileNotFoundError, match="model hub cannot be reached"):
        A.check_model_name("someorg/nosuch")
    monkeypatch.setattr(A, "hub_reachable", lambda timeout=3.0: True)
    assert A.check_model_name("someorg/nosuch") == "hub"


def test_prompt_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="is a folder; give the JSON-lines file"):
        A.check_prompts_file(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist; the bundled one is"):
        A.check_prompts_file(tmp_path / "nosuch.jsonl")
    assert A.check_prompts_file(A.BUNDLED_PROMPTS) == A.BUNDLED_PROMPTS


def test_gamma_bounds_name_the_reason():
    A.check_gammas([1, 47], max_new_tokens=48)
    with pytest.raises(ValueError, match="--gamma 48 is more than any round can draft: with "
                                         "max_new_tokens 48 a round drafts at most 47"):
        A.check_gammas([1, 48], max_new_tokens=48, flag="--gamma")
    ctx = json.loads((A.BUNDLED_TARGET / "config.json").read_text())["n_positions"]
    assert A.local_context(A.BUNDLED_TARGET) == ctx
    A.check_gammas([ctx - 2], context=ctx)
    with pytest.raises(ValueError, match=f"context of {ctx} positions"):
        A.check_gammas([ctx - 1], context=ctx)
    assert A.local_context("someorg/model") is None


def test_bundled_log_is_recognised():
    assert A.is_bundled_log(A.BUNDLED_LOGGED)
    assert not A.is_bundled_log(A.BUNDLED_PROMPTS)
