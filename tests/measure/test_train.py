"""specnb.measure.train: a seconds-long smoke run of the same code, the budget split, the GPU
recipe's error without a GPU, and the committed models' card and files."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")  # specnb.measure imports torch
pytest.importorskip("transformers")

from specnb.measure import train  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "data" / "models"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke")
    proc = subprocess.run([sys.executable, "-m", "specnb.measure.train", "--smoke", "--out",
                           str(out)], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_smoke_training_writes_loadable_family(smoke):
    out, summary = smoke
    from transformers import AutoModelForCausalLM, AutoTokenizer

    info = json.loads((out / "training.json").read_text())
    names = [m.name for m in train.SMOKE.models]
    assert [m["name"] for m in info["models"]] == names
    tok = AutoTokenizer.from_pretrained(out / "tokenizer")
    for name in names:
        folder = out / name
        assert (folder / "model.safetensors").is_file()
        assert not list(folder.glob("*.bin")), "safetensors only"
        model = AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True)
        assert model.config.vocab_size == len(tok) == info["tokenizer"]["vocab_size"]
        assert model.config.eos_token_id == tok.eos_token_id
    for m in info["models"]:
        assert 0 < m["steps"] <= m["max_steps"]
        assert m["val_loss"] == summary["val_loss"][m["name"]]
        assert m["val_loss"] < 10


def test_bundled_models_share_tokenizer_and_are_small():
    info = json.loads((MODELS / "training.json").read_text())
    vocab = info["tokenizer"]["vocab_size"]
    sizes = []
    for m in info["models"]:
        cfg = json.loads((MODELS / m["name"] / "config.json").read_text())
        assert cfg["vocab_size"] == vocab
        assert (MODELS / m["name"] / "tokenizer.json").read_bytes() == \
            (MODELS / "tokenizer" / "tokenizer.json").read_bytes()
        sizes.append(m["parameters"])
    assert sizes == sorted(sizes, reverse=True) and len(sizes) >= 3  # target, then 2+ drafts
    total = sum(p.stat().st_size for p in MODELS.rglob("*") if p.is_file())
    assert total < 30e6
    card = (MODELS / "MODEL_CARD.md").read_text()
    for m in info["models"]:
        assert m["name"] in card and f"{m['val_loss']:.3f}" in card
    assert info["corpus"]["python"] in card


def test_scale_budget_splits_the_minutes_in_proportion():
    r = train.scale_budget(train.GPU, 2.0)
    assert sum(m.budget_s for m in r.models) == pytest.approx(120.0)
    ratio = [m.budget_s / o.budget_s for m, o in zip(r.models, train.GPU.models)]
    assert ratio[0] == pytest.approx(ratio[1])
    with pytest.raises(ValueError, match="minutes must be a number > 0"):
        train.scale_budget(train.GPU, 0)


def test_gpu_recipe_without_a_gpu_exits_2(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert train.main(["--recipe", "gpu", "--device", "cuda", "--minutes", "0.1",
                       "--out", str(tmp_path)]) == 2
    assert "sees no GPU" in capsys.readouterr().err
    assert not (tmp_path / "training.json").exists()
