"""The bundled family's model card: ``MODEL_CARD.md`` rendered from ``training.json`` (what
:func:`specnb.measure.train.train_family` wrote) and the measured alpha."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["write_model_card"]


def write_model_card(models_dir, alpha_rows: list | None = None) -> Path:
    """Render ``models_dir/MODEL_CARD.md`` from ``models_dir/training.json`` (and measured alpha).

    Parameters
    ----------
    models_dir : folder written by :func:`specnb.measure.train.train_family`.
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
    lines = (_models(info) + _about(info) + _alpha(info.get("measured_alpha"))
             + _reproduce())
    path = models_dir / "MODEL_CARD.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _models(info: dict) -> list[str]:
    """Title, what the models are for, and one table row per model."""
    lines = [
        "# specnb bundled models: a GPT-2 target and two drafts sharing one tokenizer",
        "",
        "Small models trained on this repository's CPU by `python -m specnb.measure.train` "
        "(reproducible: fixed seed, corpus that ships with Python, recipe in "
        "`specnb/measure/train.py`). They exist so that `specnb measure` and "
        "`notebooks/08_measure_alpha.ipynb` measure a *real* acceptance rate alpha without a model hub. They are not useful language models.",
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
    return lines


def _about(info: dict) -> list[str]:
    """Shared config, tokenizer, corpus and training recipe."""
    r, c, v = info["recipe"], info["corpus"], info["versions"]
    return [
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
        + f"`torch.set_num_threads({info['machine']['torch_threads']})`, shared with other work "
        "(timings vary run to run). Total wall time "
        f"{info.get('total_time_s', 0) / 60:.1f} min.",
        f"- Versions: Python {v['python']}, torch {v['torch']}, transformers "
        f"{v['transformers']}, tokenizers {v['tokenizers']}, numpy {v['numpy']}.",
        "",
    ]


def _alpha(alpha) -> list[str]:
    """The measured-alpha section (none without measured alpha)."""
    lines = []
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
    return lines


def _reproduce() -> list[str]:
    """The commands that rebuild the family and the card."""
    return [
        "## Reproduce",
        "",
        "```bash",
        "python -m specnb.measure.train --out data/models          # tokenizer + 3 models, ~30-40 min on 2 cores",
        "python -m specnb.measure.train --card --out data/models   # re-measure alpha, rewrite this card",
        "python -m specnb.measure.train --prompts data/prompts/stdlib_heldout.jsonl",
        "python -m specnb.measure.train --smoke                    # seconds; what CI runs",
        "```",
        "",
        "Exact weights depend on the Python version (the corpus), library versions and the "
        "wall-clock budget; the recipe, seed and corpus fingerprint above pin everything else.",
        "",
    ]
