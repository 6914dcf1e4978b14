"""specnb.measure.train: a seconds-long smoke run of the same code, the budget split, the GPU
recipe's error without a GPU, and the committed models' card and files."""

import json
import re
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


def _loop_as_it_was(model, opt, rng, ids, *, lr, warmup, max_steps, budget_s, block, batch,
                    params=None):
    """The training loop as ``_train_one`` and ``train_head`` each wrote it out before they
    shared :func:`specnb.measure.train._fit` (the loop that trained the bundled weights, the
    head's included), verbatim but for the names: the oracle the shared helper must match."""
    import math
    import time

    import numpy as np
    import torch

    t0 = time.perf_counter()
    step, loss_v, history = 0, float("nan"), []
    while True:
        elapsed = time.perf_counter() - t0
        progress = max(step / max_steps, elapsed / budget_s)
        if progress >= 1.0:
            break
        warm = min(1.0, (step + 1) / max(1, warmup))
        rate = lr * warm * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))
        for g in opt.param_groups:
            g["lr"] = rate
        starts = rng.integers(0, len(ids) - block, size=batch)
        x = torch.from_numpy(np.stack([ids[s:s + block] for s in starts]).astype(np.int64))
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters() if params is None else params, 1.0)
        opt.step()
        step += 1
        loss_v = float(loss.detach())
        if step % 50 == 0 or step == 1:
            history.append({"step": step, "train_loss": round(loss_v, 4)})
    return step, loss_v, history


@pytest.mark.slow
def test_the_shared_training_loop_is_bitwise_the_one_that_trained_the_bundled_weights():
    """Duplicate D6: train.py and train_head.py share ``_fit`` (step, schedule, clip, log).
    A seeded tiny GPT-2, 60 steps (warm-up, cosine decay, the step-50 log), once through the
    old inline loop and once through ``_fit`` (all parameters, as _train_one; a subset, as the
    head's frozen embedding): losses, history and every weight bitwise equal."""
    import numpy as np
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    ids = np.random.default_rng(1).integers(0, 64, size=4000).astype(np.int32)
    kw = dict(lr=3e-3, warmup=5, max_steps=60, budget_s=600.0)

    def fresh(subset):
        torch.manual_seed(0)
        m = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=16, n_layer=1,
                                       n_head=2, resid_pdrop=0.0, embd_pdrop=0.0,
                                       attn_pdrop=0.0))
        if subset:
            m.transformer.wpe.weight.requires_grad_(False)
        params = [p for p in m.parameters() if p.requires_grad]
        return m, params, torch.optim.AdamW(params, lr=kw["lr"], betas=(0.9, 0.95),
                                            weight_decay=0.1)

    torch.set_num_threads(1)
    for subset in (False, True):
        m0, p0, opt0 = fresh(subset)
        old = _loop_as_it_was(m0, opt0, np.random.default_rng(0), ids, block=16, batch=4,
                              params=p0 if subset else None, **kw)
        m1, p1, opt1 = fresh(subset)
        rng, logged = np.random.default_rng(0), []
        new = train._fit(p1, opt1, lambda x: m1(input_ids=x, labels=x).loss,
                         lambda: train._windows(rng, ids, 16, 4), name="tiny",
                         log=logged.append, **kw)
        assert new[0] == old[0] == 60
        assert new[1] == old[1]  # the last loss, to the bit
        assert [{k: h[k] for k in ("step", "train_loss")} for h in new[2]] == old[2]
        assert [h["step"] for h in new[2]] == [1, 50] and len(logged) == 2
        assert re.match(r"\[tiny\] step 1 loss [\d.]+ lr [\d.e+-]+ \d+s$", logged[0]), logged
        s0, s1 = m0.state_dict(), m1.state_dict()
        assert list(s0) == list(s1)
        assert all(torch.equal(s0[k], s1[k]) for k in s0)
