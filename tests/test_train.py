"""The bundled-model training script: a seconds-long smoke run of the same code, the corpus
split, the prompts, and the committed models' card and files."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specnb import train

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "data" / "models"
PROMPTS = ROOT / "data" / "prompts" / "stdlib_heldout.jsonl"


def test_corpus_split_holds_out_whole_files():
    tr, held = train.corpus_files()
    root = train.stdlib_dir()
    held_names = {p.relative_to(root).as_posix() for p in held}
    assert held_names == set(train.HELD_OUT) & held_names and len(held) >= 15
    assert not set(tr) & set(held)
    assert all(not ({"test", "tests", "idlelib"} & set(p.relative_to(root).parts)) for p in tr)


def test_corpus_files_rejects_missing_root(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a folder"):
        train.corpus_files(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="held-out"):
        train.corpus_files(tmp_path)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke")
    proc = subprocess.run([sys.executable, "-m", "specnb.train", "--smoke", "--out", str(out)],
                          capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, json.loads(proc.stdout.strip().splitlines()[-1])


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


@pytest.fixture
def same_stdlib():
    """The bundled prompts were cut from one exact standard library; skip elsewhere."""
    info = json.loads((MODELS / "training.json").read_text())
    _, held = train.corpus_files()
    if train.corpus_fingerprint(held) != info["corpus"]["held_out_sha256"]:
        pytest.skip("this Python's held-out standard-library files differ from the ones the "
                    f"bundled prompts were cut from (Python {info['corpus']['python']})")


def test_prompts_come_from_held_out_files_only(same_stdlib):
    items = [json.loads(line) for line in PROMPTS.read_text().splitlines()]
    assert {i["task"] for i in items} == set(train.TASKS)
    root = train.stdlib_dir()
    for i in items:
        fname = i["source"].split(":")[0]
        assert fname in train.HELD_OUT, i["id"]
        text = (root / fname).read_text()
        if i["task"] != "copy-edit":
            assert i["prompt"] in text, i["id"]
        else:  # the original function is verbatim, the edit follows it
            assert i["prompt"].split("\n\n")[0] in text, i["id"]


def test_prompts_file_is_what_build_prompts_gives(same_stdlib):
    # the committed file regenerates from the held-out files (same Python minor version)
    items = [json.loads(line) for line in PROMPTS.read_text().splitlines()]
    per_family = len(items) // len(train.TASKS)
    assert items == train.build_prompts(per_family)


def test_build_prompts_rejects_bad_counts():
    with pytest.raises(ValueError, match="per_family"):
        train.build_prompts(0)


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
