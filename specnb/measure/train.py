"""Train specnb's bundled model family: one byte-level BPE tokenizer, one GPT-2 target and
two smaller GPT-2 drafts that share it (same ``vocab_size``), on the Python standard library's
own source code.

This is the project's reproducible training script (``python -m specnb.measure.train``); the
corpus and the evaluation prompts it trains and evaluates on are :mod:`specnb.measure.corpus`.

Full run (what produced ``data/models/``; about 30-40 minutes on 2 CPU cores)::

    python -m specnb.measure.train --out data/models

Smoke run (seconds; what CI runs through ``tests/measure/test_train.py``)::

    python -m specnb.measure.train --smoke --out /tmp/specnb-smoke

A larger pair on a GPU in a few minutes (:data:`GPU`: a 12 x 768 GPT-2 target and a 2 x 256
draft, bf16 autocast, the wall-clock budget split over the models in proportion to their
``budget_s``)::

    python -m specnb.measure.train --recipe gpu --device cuda --minutes 3 --out /tmp/gpu-pair

Corpus: the standard library's ``.py`` files, with the files of
:data:`specnb.measure.corpus.HELD_OUT` held out *whole* (validation loss and every evaluation
prompt in ``data/prompts/``; the tokenizer never sees them).

Tokenizer and model recipe follow ``transformers`` 5.x (see the project's reference notes on
assisted decoding, section 4): both configs get exactly ``vocab_size = len(tokenizer)`` and the
tokenizer's ``<|endoftext|>`` id as bos/eos/pad, so ``generate(assistant_model=...)`` takes the
shared-tokenizer path.
"""


from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import _json
from .card import write_model_card
from .corpus import EXCLUDED_DIRS, corpus_files, corpus_fingerprint, read_corpus, stdlib_dir, \
    write_prompts

__all__ = [
    "EOT", "ModelSpec", "Recipe", "FULL", "SMOKE", "GPU", "RECIPES", "scale_budget",
    "train_tokenizer", "train_family", "main",
]

#: Where the bundled family lives (the default ``--out``).
_DEFAULT_OUT = Path(__file__).resolve().parents[2] / "data" / "models"

#: The one special token: end of text; also bos and pad.
EOT = "<|endoftext|>"


@dataclass(frozen=True)
class ModelSpec:
    """One GPT-2 of the family: ``n_layer`` blocks of width ``n_embd`` with ``n_head`` heads."""

    name: str
    n_layer: int
    n_embd: int
    n_head: int
    lr: float
    max_steps: int
    budget_s: float  # wall-clock cap; training stops at max_steps or here, whichever is first


@dataclass(frozen=True)
class Recipe:
    """Everything that decides a training run besides the corpus."""

    vocab_size: int
    n_positions: int
    block: int
    batch: int
    warmup: int
    eval_windows: int
    seed: int
    models: tuple[ModelSpec, ...]
    max_train_files: int | None = None  # smoke runs use the first few files only
    extra: dict = field(default_factory=dict)


#: The bundled family. Calibration (2 CPU cores): target 1,500 steps ~ 21 minutes.
FULL = Recipe(
    vocab_size=2048, n_positions=256, block=256, batch=16, warmup=60, eval_windows=48, seed=0,
    models=(
        ModelSpec("target-4x256", n_layer=4, n_embd=256, n_head=4, lr=1.5e-3, max_steps=1500,
                  budget_s=27 * 60),
        ModelSpec("draft-2x128", n_layer=2, n_embd=128, n_head=2, lr=3e-3, max_steps=1500,
                  budget_s=6 * 60),
        ModelSpec("draft-1x64", n_layer=1, n_embd=64, n_head=1, lr=4e-3, max_steps=1500,
                  budget_s=3 * 60),
    ),
)

#: A seconds-long run of the same code path (CI).
SMOKE = Recipe(
    vocab_size=320, n_positions=64, block=64, batch=4, warmup=2, eval_windows=4, seed=0,
    max_train_files=6,
    models=(
        ModelSpec("target", n_layer=1, n_embd=32, n_head=2, lr=3e-3, max_steps=8, budget_s=60),
        ModelSpec("draft", n_layer=1, n_embd=16, n_head=1, lr=3e-3, max_steps=8, budget_s=60),
    ),
)

#: A larger pair for a GPU, trained in minutes (time-capped: ``max_steps`` is far off, so the
#: wall-clock budget ends training; scale it with ``--minutes``). 12 x 768 is GPT-2 small's
#: shape (about 87M parameters with this vocabulary); the draft has about 1/40 of them.
GPU = Recipe(
    vocab_size=2048, n_positions=1024, block=512, batch=32, warmup=100, eval_windows=64, seed=0,
    models=(
        ModelSpec("target-12x768", n_layer=12, n_embd=768, n_head=12, lr=6e-4, max_steps=100_000,
                  budget_s=120),
        ModelSpec("draft-2x256", n_layer=2, n_embd=256, n_head=4, lr=2e-3, max_steps=100_000,
                  budget_s=40),
    ),
)

#: ``--recipe`` names.
RECIPES = {"full": FULL, "smoke": SMOKE, "gpu": GPU}


def scale_budget(recipe: Recipe, minutes: float) -> Recipe:
    """``recipe`` with its models' wall-clock budgets scaled so that they add up to
    ``minutes`` (training only; tokenizer, encoding and evaluation come on top).

    Raises
    ------
    ValueError
        minutes not > 0.
    """
    from dataclasses import replace

    if not (isinstance(minutes, (int, float)) and minutes > 0 and math.isfinite(minutes)):
        raise ValueError(f"minutes must be a number > 0, got {minutes!r}")
    total = sum(m.budget_s for m in recipe.models)
    k = 60.0 * minutes / total
    return replace(recipe, models=tuple(replace(m, budget_s=m.budget_s * k)
                                        for m in recipe.models))


def train_tokenizer(texts, vocab_size: int):
    """Train a byte-level BPE ``tokenizers.Tokenizer`` (GPT-2 style) with the one special token
    :data:`EOT` (id 0). Returns the ``tokenizers.Tokenizer``; ``vocab_size`` includes it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=[EOT], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


# --------------------------------------------------------------------------- training (torch)

def _fast_tokenizer(tok, max_length: int):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=EOT, eos_token=EOT, pad_token=EOT,
        model_max_length=max_length,
    )


def _encode(tok, texts, eot_id):
    import numpy as np

    chunks = []
    for enc in tok.encode_batch(texts):
        chunks.append(np.asarray([eot_id] + enc.ids, dtype=np.int32))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)


def _val_windows(ids, block, n):
    import numpy as np

    count = len(ids) // block
    if count == 0:
        raise ValueError(f"held-out text has {len(ids)} tokens, fewer than one block of {block}")
    pick = np.linspace(0, count - 1, num=min(n, count)).round().astype(int)
    return np.stack([ids[i * block:(i + 1) * block] for i in pick]).astype(np.int64)


def _autocast(device):
    import contextlib

    import torch

    if str(device).startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _evaluate(model, val, device="cpu"):
    import torch

    model.eval()
    with torch.no_grad(), _autocast(device):
        losses = []
        for i in range(0, len(val), 8):
            x = torch.from_numpy(val[i:i + 8]).to(device)
            losses.append(float(model(input_ids=x, attention_mask=torch.ones_like(x),
                                       labels=x).loss))
    model.train()
    return sum(losses) / len(losses)


def _windows(rng, ids, block: int, batch: int):
    """``batch`` training windows of ``block`` tokens of ``ids`` at starts drawn from ``rng``
    (a numpy Generator), as a LongTensor (batch, block) on the CPU."""
    import numpy as np
    import torch

    starts = rng.integers(0, len(ids) - block, size=batch)
    return torch.from_numpy(np.stack([ids[s:s + block] for s in starts]).astype(np.int64))


def _fit(params, opt, loss_of, next_batch, *, lr: float, warmup: int, max_steps: int,
         budget_s: float, name: str, log, show_lr: bool = True):
    """The training loop of every bundled model (the family's GPT-2s, :func:`_train_one`, and
    the EAGLE-3 head, :func:`specnb.measure.train_head.train_head`): until ``max_steps`` steps
    or ``budget_s`` seconds of wall clock, whichever comes first, the learning rate ``lr`` with
    a linear warm-up over ``warmup`` steps and a cosine decay to a tenth of it (by the larger
    of the step and the time fractions); per step ``loss_of(next_batch())``, gradients clipped
    to norm 1, one ``opt`` step; the loss logged (``[name] step N loss L [lr X] Ts``) and kept
    in the history at step 1 and every 50th.

    Returns
    -------
    (steps, last loss, history [{"step", "train_loss", "elapsed_s"}], training seconds)
    """
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
        loss = loss_of(next_batch())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        loss_v = float(loss.detach())
        if step % 50 == 0 or step == 1:
            history.append({"step": step, "train_loss": round(loss_v, 4),
                            "elapsed_s": round(time.perf_counter() - t0, 1)})
            log(f"[{name}] step {step} loss {loss_v:.3f}"
                + (f" lr {rate:.2e}" if show_lr else "") + f" {time.perf_counter() - t0:.0f}s")
    return step, loss_v, history, time.perf_counter() - t0


def _train_one(spec: ModelSpec, recipe: Recipe, ids, val, vocab_size, eot_id, out_dir: Path,
               tokenizer, log, device="cpu"):
    import numpy as np
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(recipe.seed)
    rng = np.random.default_rng(recipe.seed)
    config = GPT2Config(
        vocab_size=vocab_size, n_positions=recipe.n_positions, n_embd=spec.n_embd,
        n_layer=spec.n_layer, n_head=spec.n_head, resid_pdrop=0.0, embd_pdrop=0.0,
        attn_pdrop=0.0, bos_token_id=eot_id, eos_token_id=eot_id, pad_token_id=eot_id,
    )
    model = GPT2LMHeadModel(config).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=spec.lr, betas=(0.9, 0.95), weight_decay=0.1)
    model.train()

    def loss_of(x):
        with _autocast(device):
            return model(input_ids=x, labels=x).loss

    step, loss_v, history, train_s = _fit(
        list(model.parameters()), opt, loss_of,
        lambda: _windows(rng, ids, recipe.block, recipe.batch).to(device),
        lr=spec.lr, warmup=recipe.warmup, max_steps=spec.max_steps, budget_s=spec.budget_s,
        name=spec.name, log=log)
    val_loss = _evaluate(model, val, device)
    log(f"[{spec.name}] done: {step} steps in {train_s:.0f}s, val loss {val_loss:.3f}")
    model.eval().to("cpu")
    dest = out_dir / spec.name
    model.save_pretrained(dest, safe_serialization=True)
    tokenizer.save_pretrained(dest)
    return {
        "name": spec.name, "architecture": "GPT2LMHeadModel", "n_layer": spec.n_layer,
        "n_embd": spec.n_embd, "n_head": spec.n_head, "n_positions": recipe.n_positions,
        "vocab_size": vocab_size, "parameters": int(n_params), "lr": spec.lr,
        "max_steps": spec.max_steps, "budget_s": round(spec.budget_s, 1), "steps": step,
        "device": str(device),
        "tokens_seen": step * recipe.batch * recipe.block, "train_time_s": round(train_s, 1),
        "final_train_loss": round(loss_v, 4), "val_loss": round(val_loss, 4),
        "history": history,
    }


def train_family(recipe: Recipe, out_dir, *, root: Path | None = None, log=print,
                 device: str = "cpu") -> dict:
    """Train the tokenizer and every model of ``recipe``; save them under ``out_dir``.

    Writes ``out_dir/tokenizer/`` and one folder per :class:`ModelSpec` (``model.safetensors``,
    ``config.json``, ``generation_config.json``, ``tokenizer.json``, ``tokenizer_config.json``),
    plus ``out_dir/training.json`` with everything the model card needs. On a CPU two threads
    (``torch.set_num_threads(2)``); on ``device="cuda"`` bf16 autocast (weights kept and saved
    in float32). Seeded with ``recipe.seed``.

    Returns the dictionary written to ``training.json``.
    """
    import numpy as np
    import tokenizers
    import torch
    import transformers

    if str(device).startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} (--device) was asked for but torch "
                             f"{torch.__version__} sees no GPU; use --device cpu")
        torch.backends.cuda.matmul.allow_tf32 = True
    elif device != "cpu":
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    else:
        torch.set_num_threads(2)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    root = Path(root) if root is not None else stdlib_dir()
    t_start = time.perf_counter()
    train_paths, held_paths = corpus_files(root)
    if recipe.max_train_files is not None:
        train_paths = train_paths[: recipe.max_train_files]
        held_paths = held_paths[:2]
    train_texts, held_texts = read_corpus(train_paths), read_corpus(held_paths)
    tok = train_tokenizer(train_texts, recipe.vocab_size)
    fast = _fast_tokenizer(tok, recipe.n_positions)
    fast.save_pretrained(out_dir / "tokenizer")
    eot_id = tok.token_to_id(EOT)
    vocab_size = tok.get_vocab_size()
    ids = _encode(tok, train_texts, eot_id)
    val = _val_windows(_encode(tok, held_texts, eot_id), recipe.block, recipe.eval_windows)
    log(f"corpus: {len(train_paths)} training files, {len(ids):,} tokens; "
        f"{len(held_paths)} held-out files, {val.size:,} validation tokens; vocab {vocab_size}")
    info = {
        "recipe": {k: v for k, v in asdict(recipe).items() if k != "models"},
        "corpus": {
            "source": "Python standard library source (.py files)",
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "stdlib_dir": str(root),
            "excluded_dirs": sorted(EXCLUDED_DIRS),
            "train_files": len(train_paths),
            "train_tokens": int(len(ids)),
            "train_sha256": corpus_fingerprint(train_paths, root),
            "held_out_files": [p.relative_to(root).as_posix() for p in held_paths],
            "held_out_sha256": corpus_fingerprint(held_paths, root),
            "validation_tokens": int(val.size),
        },
        "tokenizer": {"type": "byte-level BPE (tokenizers)", "vocab_size": vocab_size,
                      "special_tokens": [EOT], "eot_id": eot_id},
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "numpy": np.__version__,
                     "python": sys.version.split()[0]},
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                    "torch_threads": torch.get_num_threads(), "device": str(device),
                    "gpu": (torch.cuda.get_device_name(device)
                            if str(device).startswith("cuda") else None)},
        "models": [],
    }
    for spec in recipe.models:
        info["models"].append(_train_one(spec, recipe, ids, val, vocab_size, eot_id, out_dir,
                                         fast, log, device))
        info["total_time_s"] = round(time.perf_counter() - t_start, 1)
        (out_dir / "training.json").write_text(json.dumps(info, indent=1) + "\n")
    return info


def _card(out: Path) -> Path:
    """Measure alpha of every draft by teacher forcing on all bundled prompts; write the card."""
    from .logged import alpha_by_teacher_forcing

    info = json.loads((out / "training.json").read_text())
    names = [m["name"] for m in info["models"]]
    alpha, _ = alpha_by_teacher_forcing(out / names[0], [out / n for n in names[1:]],
                                        temperatures=(0.0, 1.0), max_new_tokens=64,
                                        device="cpu")
    return write_model_card(out, _json.records(alpha, nan_to_none=False))


def main(argv=None) -> int:
    """``python -m specnb.measure.train [--smoke] [--out DIR]``."""
    ap = argparse.ArgumentParser(prog="python -m specnb.measure.train", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="output folder (default: data/models, or a temp "
                    "folder with --smoke)")
    ap.add_argument("--smoke", action="store_true", help="seconds-long run of the same code "
                    "(the same as --recipe smoke)")
    ap.add_argument("--recipe", choices=sorted(RECIPES), default=None,
                    help="full (the bundled family, ~35 min on 2 CPU cores; default), smoke "
                         "(seconds) or gpu (a 12 x 768 target and a 2 x 256 draft, for --device "
                         "cuda)")
    ap.add_argument("--device", default="cpu", metavar="DEVICE",
                    help="cpu (default), cuda or cuda:N (bf16 autocast on a GPU)")
    ap.add_argument("--minutes", type=float, default=None, metavar="M",
                    help="total training wall-clock budget in minutes, split over the models in "
                         "proportion to the recipe's budgets (default: the recipe's own)")
    ap.add_argument("--prompts", metavar="FILE", default=None,
                    help="only (re)write the evaluation prompts from the held-out files to FILE "
                         "(the bundled ones: data/prompts/stdlib_heldout.jsonl) and exit")
    ap.add_argument("--card", action="store_true",
                    help="only measure alpha of the trained drafts and (re)write MODEL_CARD.md")
    args = ap.parse_args(argv)
    if args.card:
        out = Path(args.out) if args.out else _DEFAULT_OUT
        print(f"wrote {_card(out)}")
        return 0
    if args.prompts:
        items = write_prompts(args.prompts)
        print(f"wrote {len(items)} prompts to {args.prompts}")
        return 0
    if args.smoke and args.recipe not in (None, "smoke"):
        ap.error(f"--smoke and --recipe {args.recipe} contradict each other; pass one")
    name = "smoke" if args.smoke else (args.recipe or "full")
    recipe = RECIPES[name]
    if args.minutes is not None:
        try:
            recipe = scale_budget(recipe, args.minutes)
        except ValueError:  # the flag named, as argparse names it (an infinite one included)
            ap.error(f"--minutes must be a finite number > 0, got {args.minutes:g}")
    if args.out is None:
        if name != "full":  # only the full recipe may (re)write the bundled data/models
            import tempfile
            args.out = tempfile.mkdtemp(prefix=f"specnb-{name}-")
        else:
            args.out = str(_DEFAULT_OUT)

    def log(msg):
        print(msg, flush=True)

    try:
        info = train_family(recipe, args.out, log=log, device=args.device)
    except ValueError as exc:
        print(f"python -m specnb.measure.train: error: {exc}", file=sys.stderr)
        return 2
    write_model_card(args.out)
    print(json.dumps({"out": args.out, "total_time_s": info["total_time_s"],
                      "val_loss": {m["name"]: m["val_loss"] for m in info["models"]}}))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
