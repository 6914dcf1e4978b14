"""Train the bundled EAGLE-3 head for the bundled target (``data/models/target-4x256``) on
the CPU: ``python -m specnb.measure.train_head`` writes
``data/models/eagle3-head-target-4x256/`` (speculators format) and its model card.

Recipe (the family's, :mod:`specnb.measure.train`: the standard library's source with the
held-out files out, the bundled tokenizer, fixed seed, AdamW with warm-up and a cosine decay,
a wall-clock budget): the target is frozen; each step takes ``batch`` windows of ``block``
tokens, one target pass gives its hidden states at the layers the head reads and its
next-token distributions, and the head is unrolled ``depth`` steps as vLLM chains it
(:meth:`specnb.measure.heads.Head.unroll`: step 1 on the target's states, steps 2.. on its
own, EAGLE-3's training-time test); the loss is the cross-entropy of the head's distribution
against the target's at every step and position (distillation, as EAGLE-3 trains). The draft
vocabulary is the ``draft_vocab_size`` most frequent tokens of the training text (``d2t``),
as EAGLE-3 and SpecForge build it.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

_MODELS = Path(__file__).resolve().parents[2] / "data" / "models"
#: The bundled head's folder (its name says it is an EAGLE-3 head and for which target).
HEAD_NAME = "eagle3-head-target-4x256"

#: The recipe (a wall-clock budget of 13 minutes of training on one thread; about 15 minutes
#: in all with loading and validation).
RECIPE = {"layer_ids": [1, 2, 3], "draft_vocab_size": 1024, "intermediate_size": 768,
          "num_heads": 4, "block": 128, "batch": 8, "depth": 2, "lr": 3e-3, "warmup": 20,
          "max_steps": 4000, "budget_s": 13 * 60, "seed": 0, "eval_windows": 24, "threads": 1}
SMOKE = {**RECIPE, "block": 32, "batch": 2, "max_steps": 3, "budget_s": 60, "eval_windows": 2,
         "max_train_files": 4}


def _draft_vocab(ids, vocab: int, size: int):
    """The ``size`` most frequent ids of ``ids`` (sorted) and their d2t offsets."""
    import numpy as np

    counts = np.bincount(ids, minlength=vocab)
    keep = np.sort(np.argsort(-counts, kind="stable")[:size])
    return keep, keep - np.arange(size)


def _loss(head, target, x, aux_layers, depth, keep):
    """Mean cross-entropy of the head's unrolled steps against the target's distributions,
    both over the draft vocabulary ``keep`` (target ids; the target's renormalised there)."""
    import torch

    from .heads import target_states

    with torch.no_grad():
        out, final, aux = target_states(target, x, aux_layers=aux_layers, keep_batch=True)
        p = torch.softmax(out.logits.float()[..., keep], -1)
    steps = head.unroll(x, final, aux, depth)
    n = x.shape[1]
    total = 0.0
    for j, lg in enumerate(steps, 1):
        rows = n - 1 - j  # row i predicts x_{i+j+1}: the target's distribution at i + j
        logq = torch.log_softmax(lg[:, :rows, keep].float(), -1)
        total = total - (p[:, j:j + rows] * logq).sum(-1).mean()
    return total / len(steps)


def _acceptance(head, target, val, aux_layers, depth):
    """Step-wise T = 0 agreement with the target's argmax on validation windows."""
    import torch

    from .heads import target_states

    agree = [[0, 0] for _ in range(depth)]
    with torch.inference_mode():
        for w in val:
            x = torch.from_numpy(w)[None]
            out, final, aux = target_states(target, x, aux_layers=aux_layers)
            best = out.logits[0].argmax(-1)
            for j, lg in enumerate(head.teacher_force(x[0], final, aux, depth), 1):
                rows = x.shape[1] - 1 - j
                agree[j - 1][0] += int((lg[:rows].argmax(-1) == best[j:j + rows]).sum())
                agree[j - 1][1] += rows
    return [a / b for a, b in agree]


def train_head(out_dir, *, recipe: dict = RECIPE, target=None, log=print) -> dict:
    """Train an EAGLE-3 head for the bundled target (or ``target``, a folder) and write it to
    ``out_dir`` with ``training.json``; returns what it wrote there."""
    import numpy as np
    import torch
    import transformers
    from tokenizers import Tokenizer

    from . import heads
    from .corpus import corpus_files, read_corpus
    from .load import BUNDLED_TARGET, load_model
    from .train import EOT, _encode, _fit, _val_windows, _windows

    torch.manual_seed(recipe["seed"])
    torch.set_num_threads(recipe.get("threads", 1))  # a shared machine: one thread stalls least
    rng = np.random.default_rng(recipe["seed"])
    tpath = Path(target) if target is not None else BUNDLED_TARGET
    tmodel, _ = load_model(tpath, device="cpu", need_tokenizer=False)
    for prm in tmodel.parameters():
        prm.requires_grad_(False)
    tok = Tokenizer.from_file(str(tpath / "tokenizer.json"))
    eot = tok.token_to_id(EOT)
    train_paths, held = corpus_files()
    if recipe.get("max_train_files"):
        train_paths, held = train_paths[:recipe["max_train_files"]], held[:2]
    ids = _encode(tok, read_corpus(train_paths), eot)
    val = _val_windows(_encode(tok, read_corpus(held), eot), recipe["block"],
                       recipe["eval_windows"])
    V = int(tmodel.config.vocab_size)
    dvs = min(recipe["draft_vocab_size"], V)
    keep, d2t = _draft_vocab(ids, V, dvs)
    cfg = heads.eagle3_config(tmodel.config, layer_ids=recipe["layer_ids"],
                              draft_vocab_size=dvs,
                              intermediate_size=recipe["intermediate_size"],
                              num_heads=recipe["num_heads"],
                              max_position_embeddings=int(tmodel.config.n_positions))
    cfg["speculators_config"]["verifier"]["name_or_path"] = f"data/models/{tpath.name}"
    head = heads.new_head(cfg, tmodel)
    with torch.no_grad():
        head.d2t.copy_(torch.from_numpy(d2t))
        head.lm_head.weight.copy_(tmodel.get_output_embeddings().weight[torch.from_numpy(keep)])
    for prm in head.embed.parameters():
        prm.requires_grad_(False)
    params = [p for p in head.parameters() if p.requires_grad]
    keep_t = torch.from_numpy(keep)
    opt = torch.optim.AdamW(params, lr=recipe["lr"], betas=(0.9, 0.95), weight_decay=0.0)
    head.train()
    B, T = recipe["batch"], recipe["block"]
    step, loss_v, hist, train_s = _fit(
        params, opt, lambda x: _loss(head, tmodel, x, head.aux_layers, recipe["depth"], keep_t),
        lambda: _windows(rng, ids, T, B), lr=recipe["lr"], warmup=recipe["warmup"],
        max_steps=recipe["max_steps"], budget_s=recipe["budget_s"], name=HEAD_NAME, log=log,
        show_lr=False)
    head.eval()
    acc = _acceptance(head, tmodel, val, head.aux_layers, recipe["depth"])
    out = Path(out_dir)
    heads.save_head(head, out, cfg)
    info = {"name": out.name, "target": f"data/models/{tpath.name}", "format":
            "EAGLE-3, speculators layout", "recipe": {k: v for k, v in recipe.items()},
            "parameters": int(sum(p.numel() for p in params)), "steps": step,
            "tokens_seen": step * B * T, "train_time_s": round(train_s, 1),
            "final_train_loss": round(loss_v, 4),
            "validation_agreement_by_step": [round(a, 4) for a in acc],
            "validation_windows": int(len(val)), "validation_tokens": int(val.size),
            "history": hist,
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "python": sys.version.split()[0]},
            "machine": {"platform": platform.platform(), "torch_threads":
                        torch.get_num_threads()}}
    (out / "training.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    log(f"[{HEAD_NAME}] done: {step} steps in {train_s:.0f}s; validation agreement by step "
        f"{[round(a, 3) for a in acc]}")
    return info


def main(argv=None) -> int:
    """``python -m specnb.measure.train_head [--smoke] [--out DIR]``."""
    ap = argparse.ArgumentParser(prog="python -m specnb.measure.train_head",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help=f"output folder (default: data/models/"
                    f"{HEAD_NAME}; a temporary one with --smoke)")
    ap.add_argument("--smoke", action="store_true", help="a seconds-long run of the same code")
    ap.add_argument("--card", action="store_true", help="only (re)write the head's MODEL_CARD.md")
    args = ap.parse_args(argv)
    if args.card:
        print(f"wrote {write_card(args.out)}")
        return 0
    out = args.out
    if out is None:
        if args.smoke:
            import tempfile
            out = tempfile.mkdtemp(prefix="specnb-head-smoke-")
        else:
            out = str(_MODELS / HEAD_NAME)
    info = train_head(out, recipe=SMOKE if args.smoke else RECIPE,
                      log=lambda m: print(m, flush=True))
    if not args.smoke:
        write_card(out)
    print(json.dumps({"out": out, "train_time_s": info["train_time_s"],
                      "validation_agreement_by_step": info["validation_agreement_by_step"]}))
    return 0



def write_card(folder=None) -> Path:
    """(Re)write the head's ``MODEL_CARD.md`` from its ``training.json`` and a replay of the
    bundled logged responses (held-out text; :func:`specnb.measure.head_replay.replay_head`)
    at gammas 1, 3, 5, per served temperature."""
    from .. import request_log
    from .head_replay import replay_head

    out = Path(folder) if folder is not None else _MODELS / HEAD_NAME
    info = json.loads((out / "training.json").read_text(encoding="utf-8"))
    log = request_log.read(None, tokenizer=_MODELS / "tokenizer")
    rows = []
    for t in sorted({float(r.temperature or 0.0) for r in log}):
        sub = request_log.RequestLog(log.path, tuple(r for r in log
                                                    if float(r.temperature or 0.0) == t),
                                     (), log.tokenizer)
        prof, _ = replay_head(sub, method="eagle3", head=out, gammas=(1, 3, 5))
        for g in prof.gammas:
            e = prof.entry(g)
            rows.append(f"| {t:g} | {g} | {e.counters.acceptance_rate:.3f} | "
                        f"{e.counters.implied_alpha:.3f} | {e.tau:.2f} "
                        f"({e.tau_ci[0]:.2f} to {e.tau_ci[1]:.2f}) | {e.num_requests} |")
    r = info["recipe"]
    agree = ", ".join(f"{a:.3f}" for a in info["validation_agreement_by_step"])
    text = f"""# {info['name']}: an EAGLE-3 head for the bundled target

An EAGLE-3 draft head (speculators layout: `config.json` with `speculators_model_type: eagle3`,
`model.safetensors` with `fc`, `layers.0.*`, `norm`, `lm_head`, `d2t`, `t2d`; the embedding is
the target's) for `{info['target']}`, so that `specnb replay --method eagle3` and
`specnb measure --draft-head` show a head's alpha next to the bundled drafts on a CPU. Toy
scale, like the family it belongs to (`data/models/MODEL_CARD.md`).

* reads the target's hidden states after layers {r['layer_ids']} (of 4); one Llama decoder
  layer of width 256 ({r['num_heads']} heads, MLP {r['intermediate_size']}); draft vocabulary
  {r['draft_vocab_size']} of 2048 tokens (the most frequent in the training text); about
  {info['parameters'] / 1e6:.2f}M trained parameters.
* trained by `python -m specnb.measure.train_head` ({Path(__file__).name}): the family's corpus
  (the standard library, held-out files out), the target frozen, the head unrolled
  {r['depth']} steps as vLLM chains it, cross-entropy against the target's distributions;
  seed {r['seed']}, {info['steps']} steps of {r['batch']} x {r['block']} tokens
  ({info['tokens_seen']:,} tokens) in **{info['train_time_s'] / 60:.1f} minutes** of CPU
  ({info['machine']['torch_threads']} thread, a shared 2-core machine;
  {info['versions']['python']}, torch {info['versions']['torch']}, transformers
  {info['versions']['transformers']}).

## Validation acceptance

Agreement with the target's greedy token on {info['validation_windows']} held-out windows
({info['validation_tokens']:,} tokens), by draft step (step 1 on the target's states, step 2 on
the head's own): {agree}.

Replay of the bundled logged responses (`{Path(log.path).name}`: the target's own responses to
the held-out prompts), stepped and counted as vLLM counts (`specnb replay --method eagle3`).
The acceptance rate is vLLM's, accepted / draft tokens; Eq. 1 alpha is the per-token alpha for
which Leviathan's Eq. 1 at that gamma gives the tau (what `specnb plan --alpha` means):

| temperature | gamma | acceptance rate | Eq. 1 alpha | tau (95% CI) | requests |
|---:|---:|---:|---:|---|---:|
""" + "\n".join(rows) + """

## Reproduce

```bash
nice -n 10 python -m specnb.measure.train_head              # ~15 min on one CPU thread
python -m specnb.measure.train_head --card                 # only this card
python -m specnb.measure.train_head --smoke                # seconds
```

Training stops at a wall-clock budget (the recipe's `budget_s`), so the number of steps, and with
it the exact weights, depend on the machine's load; seed, corpus and recipe pin the rest.
"""
    (out / "MODEL_CARD.md").write_text(text, encoding="utf-8")
    return out / "MODEL_CARD.md"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
