"""Train specnb's bundled model family: one byte-level BPE tokenizer, one GPT-2 target and
two smaller GPT-2 drafts that share it (same ``vocab_size``), on the Python standard library's
own source code.

This is the project's reproducible training script (``python -m specnb.train``). It is the only
module besides :mod:`specnb.measure` that imports torch and transformers, and it imports them
inside functions, so ``import specnb.train`` is cheap and its corpus helpers are torch-free.

Full run (what produced ``data/models/``; about 30-40 minutes on 2 CPU cores)::

    python -m specnb.train --out data/models

Smoke run (seconds; what CI runs through ``tests/test_train.py``)::

    python -m specnb.train --smoke --out /tmp/specnb-smoke

A larger pair on a GPU in a few minutes (:data:`GPU`: a 12 x 768 GPT-2 target and a 2 x 256
draft, bf16 autocast, the wall-clock budget split over the models in proportion to their
``budget_s``)::

    python -m specnb.train --recipe gpu --device cuda --minutes 3 --out /tmp/gpu-pair

Corpus: every ``.py`` file of the running interpreter's standard library
(``sysconfig.get_paths()["stdlib"]``) except tests, ``idlelib``, ``lib2to3``, ``ensurepip``,
``encodings`` (mapping tables), ``site-packages`` and build configuration. The files in
:data:`HELD_OUT` are held out *whole*: they give the validation loss and every evaluation
prompt (``data/prompts/``), and the tokenizer never sees them.

Tokenizer and model recipe follow ``transformers`` 5.x (see the project's reference notes on
assisted decoding, section 4): both configs get exactly ``vocab_size = len(tokenizer)`` and the
tokenizer's ``<|endoftext|>`` id as bos/eos/pad, so ``generate(assistant_model=...)`` takes the
shared-tokenizer path.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "EOT", "HELD_OUT", "EXCLUDED_DIRS", "ModelSpec", "Recipe", "FULL", "SMOKE", "GPU", "RECIPES",
    "scale_budget",
    "stdlib_dir", "corpus_files", "read_corpus", "corpus_fingerprint",
    "train_tokenizer", "train_family", "TASKS", "build_prompts", "write_prompts", "write_model_card",
    "main",
]

#: Where the bundled family lives (the default ``--out``).
_DEFAULT_OUT = Path(__file__).resolve().parent.parent / "data" / "models"

#: The one special token: end of text; also bos and pad.
EOT = "<|endoftext|>"

#: Standard-library files held out whole (paths relative to the stdlib folder). They give the
#: validation loss and all evaluation prompts; neither the tokenizer nor the models train on them.
HELD_OUT = (
    "bisect.py", "calendar.py", "colorsys.py", "difflib.py", "fnmatch.py", "fractions.py",
    "ftplib.py", "gettext.py", "glob.py", "graphlib.py", "heapq.py", "netrc.py", "numbers.py",
    "pprint.py", "queue.py", "sched.py", "shlex.py", "statistics.py", "string.py", "textwrap.py",
)

#: Folder names whose files are not part of the corpus at all.
EXCLUDED_DIRS = frozenset({
    "test", "tests", "idlelib", "lib2to3", "ensurepip", "encodings", "site-packages",
    "__pycache__", "turtledemo", "lib-dynload",
})


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


# --------------------------------------------------------------------------- corpus (no torch)

def stdlib_dir() -> Path:
    """The running interpreter's standard-library folder (``sysconfig`` ``stdlib`` path)."""
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_files(root: Path | None = None) -> tuple[list[Path], list[Path]]:
    """Split the standard library's ``.py`` files into (training files, held-out files).

    Parameters
    ----------
    root : Path, optional
        Standard-library folder; defaults to :func:`stdlib_dir`.

    Returns
    -------
    (train, held_out) : two sorted lists of absolute paths. ``held_out`` holds the files of
    :data:`HELD_OUT` that exist under ``root`` (all of them on CPython 3.11-3.13).

    Raises
    ------
    FileNotFoundError
        ``root`` is not a folder, or none of :data:`HELD_OUT` is in it.
    """
    root = Path(root) if root is not None else stdlib_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"root must be the standard-library folder; {root} is not a folder")
    held = set(HELD_OUT)
    train, held_out = [], []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root)
        if any(part in EXCLUDED_DIRS or part.startswith("config-") for part in rel.parts[:-1]):
            continue
        if rel.name.startswith("_sysconfigdata"):
            continue
        (held_out if rel.as_posix() in held else train).append(p)
    if not held_out:
        raise FileNotFoundError(f"none of the held-out files {HELD_OUT} is under {root}")
    return train, held_out


def read_corpus(paths) -> list[str]:
    """The text of each file (UTF-8; undecodable bytes replaced), in the given order."""
    return [Path(p).read_text(encoding="utf-8", errors="replace") for p in paths]


def corpus_fingerprint(paths, root: Path | None = None) -> str:
    """SHA-256 over relative names and contents of ``paths``: identifies the corpus version."""
    root = Path(root) if root is not None else stdlib_dir()
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(Path(p).read_bytes())
    return h.hexdigest()


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


# --------------------------------------------------------------------------- prompts (no torch)

#: The three prompt families of ``data/prompts/``.
TASKS = ("code-completion", "prose", "copy-edit")


def _functions(tree):
    import ast

    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _prompt_candidates(rel: str, text: str, max_chars: int) -> dict:
    """Candidate prompts of each family from one held-out file (deterministic, source order)."""
    import ast
    import re

    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)
    out = {t: [] for t in TASKS}

    def src(a, b):  # 1-based inclusive line range
        return "".join(lines[a - 1:b])

    for fn in sorted(_functions(tree), key=lambda n: n.lineno):
        start = min([d.lineno for d in fn.decorator_list] + [fn.lineno])
        end = fn.end_lineno
        body = fn.body
        doc = ast.get_docstring(fn, clean=False)
        first_code = body[1] if doc is not None and len(body) > 1 else body[0]
        # code completion: header (+ docstring) + 2 lines of code; the rest is the answer
        cut = first_code.lineno + 2
        if doc is None or len(doc) < 300:
            if end - cut >= 6:
                p = src(start, cut - 1)
                if len(p) <= max_chars:
                    out["code-completion"].append(
                        {"prompt": p, "reference": src(cut, min(end, cut + 15)),
                         "source": f"{rel}:{start}-{cut - 1}"})
        # prose: a docstring of 4+ lines; prompt ends after its first line
        if doc is not None and doc.count("\n") >= 4:
            d0 = body[0]
            p = src(start, d0.lineno)
            if len(p) <= max_chars and d0.end_lineno - d0.lineno >= 4:
                out["prose"].append({"prompt": p,
                                     "reference": src(d0.lineno + 1, min(d0.end_lineno, d0.lineno + 12)),
                                     "source": f"{rel}:{start}-{d0.lineno}"})
        # copy-edit: a short function repeated with a renamed function or argument
        whole = src(start, end)
        if 4 <= end - fn.lineno <= 14 and len(whole) <= max_chars * 0.55:
            head_end = body[0].lineno - 1
            head, rest = src(start, head_end), src(head_end + 1, end)
            args = [a.arg for a in fn.args.args if a.arg not in ("self", "cls")]
            k = len(out["copy-edit"])
            if k % 2 == 1 and args and re.search(rf"\b{args[0]}\b", rest):
                old, new = args[0], args[0] + "_value"
                edit = f"# the same, with the argument {old!r} renamed to {new!r}\n"
                new_head = re.sub(rf"\b{old}\b", new, head)
                new_rest = re.sub(rf"\b{old}\b", new, rest)
            else:
                edit = f"# the same, renamed to {fn.name}_copy\n"
                new_head = re.sub(rf"\b{fn.name}\b", fn.name + "_copy", head, count=1)
                new_rest = rest
            indent = re.match(r"[ \t]*", lines[fn.lineno - 1]).group(0)
            p = whole + "\n" + indent + edit + new_head
            out["copy-edit"].append({"prompt": p, "reference": new_rest,
                                     "source": f"{rel}:{start}-{end}"})
    # prose: comment blocks of 3+ lines; prompt = 3 lines of code before + first comment line
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("#"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("#"):
                j += 1
            if j - i >= 3 and i >= 3:
                p = "".join(lines[i - 3:i + 1])
                if len(p) <= max_chars:
                    out["prose"].append({"prompt": p, "reference": "".join(lines[i + 1:j]),
                                         "source": f"{rel}:{i - 2}-{i + 1}"})
            i = j
        else:
            i += 1
    return out


def build_prompts(per_family: int = 12, *, root: Path | None = None, max_chars: int = 480) -> list[dict]:
    """Evaluation prompts from the held-out files only, ``per_family`` of each of :data:`TASKS`.

    * ``code-completion``: a function's header (and short docstring) and first two lines of
      code; the answer continues the function.
    * ``prose``: a docstring cut after its first line, or a comment block cut after its first
      line (with three lines of code before it); the answer is English.
    * ``copy-edit``: a short function, then a comment asking for the same function renamed (or
      with an argument renamed) and the edited ``def`` line; the answer repeats the body.

    Candidates are taken round-robin over the held-out files, in source order, so the result is
    deterministic for a given standard library. Prompts end on a line's last character (the
    newline goes to the reference). Each item: ``id``, ``task``, ``prompt``,
    ``reference`` (the file's own continuation, or the edited body), ``source``
    (``file:first-last line`` of the prompt).

    Raises
    ------
    ValueError
        per_family < 1 or max_chars < 100.
    """
    if not isinstance(per_family, int) or per_family < 1:
        raise ValueError(f"per_family must be an integer >= 1, got {per_family!r}")
    if max_chars < 100:
        raise ValueError(f"max_chars must be >= 100, got {max_chars!r}")
    root = Path(root) if root is not None else stdlib_dir()
    _, held = corpus_files(root)
    per_file = [_prompt_candidates(p.relative_to(root).as_posix(), t, max_chars)
                for p, t in zip(held, read_corpus(held))]
    items = []
    for task in TASKS:
        queues = [list(c[task]) for c in per_file]
        picked = []
        while len(picked) < per_family and any(queues):
            for q in queues:
                if q and len(picked) < per_family:
                    # spread picks through the file: take from the middle of what is left
                    picked.append(q.pop(len(q) // 2))
        for n, item in enumerate(picked):
            # End on the last character of a line, not on "\n": the byte-level BPE merges a
            # newline with the next line's indentation ("\n        "), so a prompt ending in a
            # bare "\n" would promise a line at column 0 (the prompt-boundary problem).
            prompt = item["prompt"].rstrip("\n")
            tail = item["prompt"][len(prompt):]
            items.append({"id": f"{task}-{n:02d}", "task": task, "prompt": prompt,
                          "reference": tail + item["reference"], "source": item["source"]})
    return items


def write_prompts(path, per_family: int = 12, *, root: Path | None = None) -> list[dict]:
    """:func:`build_prompts` written as JSON lines to ``path`` (one object a line)."""
    items = build_prompts(per_family, root=root)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")
    return items


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
    t0 = time.perf_counter()
    step, loss_v, history = 0, float("nan"), []
    while True:
        elapsed = time.perf_counter() - t0
        progress = max(step / spec.max_steps, elapsed / spec.budget_s)
        if progress >= 1.0:
            break
        warm = min(1.0, (step + 1) / max(1, recipe.warmup))
        lr = spec.lr * warm * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))
        for g in opt.param_groups:
            g["lr"] = lr
        starts = rng.integers(0, len(ids) - recipe.block, size=recipe.batch)
        x = torch.from_numpy(np.stack([ids[s:s + recipe.block] for s in starts]).astype(np.int64))
        x = x.to(device)
        with _autocast(device):
            loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        loss_v = float(loss.detach())
        if step % 50 == 0 or step == 1:
            history.append({"step": step, "train_loss": round(loss_v, 4),
                            "elapsed_s": round(time.perf_counter() - t0, 1)})
            log(f"[{spec.name}] step {step} loss {loss_v:.3f} lr {lr:.2e} "
                f"{time.perf_counter() - t0:.0f}s")
    train_s = time.perf_counter() - t0
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


def write_model_card(models_dir, alpha_rows: list | None = None) -> Path:
    """Render ``models_dir/MODEL_CARD.md`` from ``models_dir/training.json`` (and measured alpha).

    Parameters
    ----------
    models_dir : folder written by :func:`train_family`.
    alpha_rows : list of dict, optional
        Teacher-forced alpha per draft and temperature (keys draft, temperature, task, alpha,
        ci_low, ci_high, prompts, positions), stored in ``training.json`` under
        ``measured_alpha``; when None the stored ones (if any) are used.

    Returns the card's path.
    """
    models_dir = Path(models_dir)
    info = json.loads((models_dir / "training.json").read_text())
    if alpha_rows is not None:
        info["measured_alpha"] = alpha_rows
        (models_dir / "training.json").write_text(json.dumps(info, indent=1) + "\n")
    r, c, v = info["recipe"], info["corpus"], info["versions"]
    lines = [
        "# specnb bundled models: a GPT-2 target and two drafts sharing one tokenizer",
        "",
        "Small models trained on this repository's CPU by `python -m specnb.train` (reproducible: "
        "fixed seed, corpus that ships with Python, recipe in `specnb/train.py`). They exist so "
        "that `specnb measure` and `notebooks/08_measure_alpha.ipynb` measure a *real* "
        "acceptance rate alpha without a model hub. They are not useful language models.",
        "",
        "## Models",
        "",
        "| model | architecture | layers x width (heads) | parameters | steps (cap) | tokens seen "
        "| training time | final train loss | validation loss |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for m in info["models"]:
        lines.append(
            f"| `{m['name']}` | {m['architecture']} | {m['n_layer']} x {m['n_embd']} "
            f"({m['n_head']}) | {m['parameters']:,} | {m['steps']:,} ({m['max_steps']:,}) | "
            f"{m['tokens_seen']:,} | {m['train_time_s'] / 60:.1f} min | "
            f"{m['final_train_loss']:.3f} | {m['val_loss']:.3f} |")
    lines += [
        "",
        f"All share `vocab_size = {info['tokenizer']['vocab_size']}`, `n_positions = "
        f"{r['n_positions']}` and the tokenizer's `<|endoftext|>` (id "
        f"{info['tokenizer']['eot_id']}) as bos/eos/pad, so transformers' "
        "`generate(assistant_model=...)` takes its shared-tokenizer path. Weights: "
        "`model.safetensors` (float32) only; each folder also holds the tokenizer.",
        "",
        "## Tokenizer",
        "",
        f"Byte-level BPE trained with the `tokenizers` library ({v['tokenizers']}) on the "
        f"training files only: {info['tokenizer']['vocab_size']} tokens including one special "
        "token `<|endoftext|>`; no prefix space; no special tokens added on encoding. "
        "`tokenizer/` holds it alone.",
        "",
        "## Corpus",
        "",
        f"- Source: the standard library of {c['implementation']} {c['python']} (`.py` files "
        f"under `{c['stdlib_dir']}`), excluding the folders {', '.join(c['excluded_dirs'])} and "
        "build configuration.",
        f"- Training: {c['train_files']} files, {c['train_tokens']:,} tokens, files separated by "
        f"`<|endoftext|>`; SHA-256 of names + contents `{c['train_sha256'][:16]}...`.",
        f"- Held out whole ({len(c['held_out_files'])} files, {c['validation_tokens']:,} "
        f"validation tokens; SHA-256 `{c['held_out_sha256'][:16]}...`): "
        + ", ".join(f"`{f}`" for f in c["held_out_files"]) + ". They give the validation loss "
        "and every prompt in `data/prompts/`; neither the tokenizer nor the models saw them.",
        "",
        "## Training",
        "",
        f"- Seed {r['seed']} (torch and numpy); windows of {r['block']} tokens drawn uniformly "
        f"from the training stream, batch {r['batch']} ({r['block'] * r['batch']:,} tokens a step).",
        "- AdamW (betas 0.9/0.95, weight decay 0.1), gradient clip 1.0, no dropout; learning rate "
        f"warm-up over {r['warmup']} steps, then cosine decay to 10% over "
        "max(step / max_steps, elapsed / time budget), so a run that meets its wall-clock budget "
        "still ends its schedule. The steps actually taken are in the table.",
        f"- Validation loss: mean cross-entropy (nats/token) over {r['eval_windows']} evenly "
        "spaced windows of the held-out files.",
        f"- Machine: {info['machine']['platform']}, {info['machine']['cpu_count']} CPUs, "
        + (f"GPU {info['machine']['gpu']} (bf16 autocast), " if info["machine"].get("gpu") else "")
        + 
        f"`torch.set_num_threads({info['machine']['torch_threads']})`, shared with other work "
        "(timings vary run to run). Total wall time "
        f"{info.get('total_time_s', 0) / 60:.1f} min.",
        f"- Versions: Python {v['python']}, torch {v['torch']}, transformers "
        f"{v['transformers']}, tokenizers {v['tokenizers']}, numpy {v['numpy']}.",
        "",
    ]
    alpha = info.get("measured_alpha")
    if alpha:
        lines += [
            "## Measured acceptance rate alpha (teacher forcing)",
            "",
            "alpha of each draft against the target on all prompts of "
            "`data/prompts/stdlib_heldout.jsonl`: the target generates each continuation "
            "(greedy at T = 0, sampled at T = 1), and one forward of each model over it gives "
            "beta per position (T = 0: argmax agreement; T = 1: sum of min(p, q), Leviathan et "
            "al. Corollary 3.6). 95% cluster-bootstrap interval over prompts "
            "(`specnb.measure.alpha_by_teacher_forcing`).",
            "",
            "| draft | temperature | task | alpha | 95% CI | prompts | positions |",
            "|---|---:|---|---:|---|---:|---:|",
        ]
        for a in alpha:
            lines.append(f"| `{a['draft']}` | {a['temperature']:g} | {a['task']} | "
                         f"{a['alpha']:.3f} | {a['ci_low']:.3f} to {a['ci_high']:.3f} | "
                         f"{a['prompts']} | {a['positions']} |")
        lines.append("")
    lines += [
        "## Reproduce",
        "",
        "```bash",
        "python -m specnb.train --out data/models          # tokenizer + 3 models, ~30-40 min on 2 cores",
        "python -m specnb.train --card --out data/models   # re-measure alpha, rewrite this card",
        "python -m specnb.train --prompts data/prompts/stdlib_heldout.jsonl",
        "python -m specnb.train --smoke                    # seconds; what CI runs",
        "```",
        "",
        "Exact weights depend on the Python version (the corpus), library versions and the "
        "wall-clock budget; the recipe, seed and corpus fingerprint above pin everything else.",
        "",
    ]
    path = models_dir / "MODEL_CARD.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _card(out: Path) -> Path:
    """Measure alpha of every draft by teacher forcing on all bundled prompts; write the card."""
    from . import measure as M

    info = json.loads((out / "training.json").read_text())
    names = [m["name"] for m in info["models"]]
    alpha, _ = M.alpha_by_teacher_forcing(out / names[0], [out / n for n in names[1:]],
                                          temperatures=(0.0, 1.0), max_new_tokens=64,
                                          device="cpu")
    return write_model_card(out, [{k: (v.item() if hasattr(v, "item") else v)
                                   for k, v in row.items()}
                                  for row in alpha.to_dict(orient="records")])


def main(argv=None) -> int:
    """``python -m specnb.train [--smoke] [--out DIR]``."""
    ap = argparse.ArgumentParser(prog="python -m specnb.train", description=__doc__.split("\n\n")[0])
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
        print(f"python -m specnb.train: error: {exc}", file=sys.stderr)
        return 2
    write_model_card(args.out)
    print(json.dumps({"out": args.out, "total_time_s": info["total_time_s"],
                      "val_loss": {m["name"]: m["val_loss"] for m in info["models"]}}))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
