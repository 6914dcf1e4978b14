"""The checks against the target and the draft checkpoint's config.json."""

from __future__ import annotations

import os
from pathlib import Path

from ...hf_config import (MTP_LAYER_KEYS, architectures, is_mtp_type, model_type, mtp_layers,
                          read_config)
from ..findings import Finding
from .context import NO_DRAFT_BRANCH, Context, as_int


def mtp_target_finding(what: str) -> Finding:
    """The one finding for method ``mtp`` (no ``model``) on a target without MTP layers vLLM
    can draft with, ``what`` naming how that is known (its config.json, or the catalogue's
    ``mtp_layers`` 0, passed in by the caller): vLLM 0.33 ``SpeculativeConfig.__post_init__``
    keeps method mtp only when the target's model_type maps to one of ``MTPModelTypes``
    (``hf_config_override``), else raises "Unsupported speculative method: 'mtp'" (trial 7,
    T7-10). Code ``mtp-target-without-mtp``, an error."""
    return Finding("error", "method", "method 'mtp' without 'model' drafts with the target's "
                   f"own MTP layers, and {what} declares none: vLLM raises "
                   "\"Unsupported speculative method: 'mtp'\"", "serve a model with MTP "
                   "layers, or use another method (ngram, a draft_model, an EAGLE head)",
                   code="mtp-target-without-mtp")


def target(ctx: Context) -> None:
    """vLLM's checks against the target and the draft's config.json for methods that load a
    draft (``SpeculativeConfig.__post_init__`` @ vLLM 0.33.0: ``_verify_and_get_draft_tp``,
    ``_maybe_override_draft_max_model_len``, ``verify_equal_vocab_size_if_draft_model``, the
    draft ``ModelConfig`` a missing local path fails)."""
    if ctx.target is None and not ctx.serve:
        return
    cfg, ch, target = ctx.keys, ctx, ctx.target
    tp, served_len = ctx.serve.get("tensor_parallel_size"), ctx.serve.get("max_model_len")
    method, model = cfg.get("method"), cfg.get("model")
    if method is None:
        method = "ngram" if model in ("ngram", "[ngram]") else "draft_model"
    if method in NO_DRAFT_BRANCH or method == "[ngram]":
        return
    draft = ch.draft
    if isinstance(model, str) and (model.startswith(("/", "./", "../", "~")) or (
            "/" in model and len(model.split("/")) > 2)):  # a local path, not a hub id
        path = Path(os.path.expanduser(model))
        if not path.exists():
            ch.add("draft-path-missing", "error", "model", f"model {model!r} is a local path "
                   "that does not exist: vLLM stops with 'Invalid repository ID or local "
                   "directory specified'", "give the draft checkpoint's folder (with its "
                   "config.json) or a Hugging Face id")
            return
        if draft is None and (path / "config.json").is_file():
            draft = ch.draft = read_config(path, label="draft config")[0]
    if method in ch.table.mtp and model is None and target is not None:
        text = target.get("text_config") if isinstance(target.get("text_config"), dict) else {}
        layers = [c.get(k) for c in (target, text) for k in MTP_LAYER_KEYS]
        if mtp_layers(target) == 0 or (not any(isinstance(x, int) and x > 0 for x in layers)
                                       and not is_mtp_type(model_type(target))):
            f = mtp_target_finding(f"the target's config.json (model_type "
                                   f"{model_type(target)!r})")
            ch.add(f.code, f.severity, f.key, f.message, f.fix)  # with its line and column
            return
    if draft is None and method in ch.table.mtp:
        draft = target
    if draft is not None and method in ("medusa", "mlp_speculator") and \
            model_type(draft) != method:
        mlp = method == "mlp_speculator"
        ch.add("checkpoint-not-method", "error" if mlp else "warning", "method", f"method "
               f"'{method}' on a checkpoint whose config.json says model_type "
               f"{model_type(draft)!r}" + (": vLLM re-detects the method from it, finds none and "
               f"raises \"Unsupported speculative method: '{method}'\"" if mlp else ", not a "
               "Medusa head: vLLM accepts it and loads it as one (expect a load error or no "
               "acceptance)"), "use the method the checkpoint was trained for (draft_model for "
               "a plain causal LM)")
        if mlp:
            return
    if draft is not None and cfg.get("num_speculative_tokens") is None and \
            method not in ch.table.mtp and method != "dspark" and draft.get("n_predict") is None:
        ch.add("no-n-predict", "error", "num_speculative_tokens", "not set, and the draft's "
               "config.json has no n_predict: vLLM raises 'A speculative model was provided, "
               "but `num_speculative_tokens` was not provided'", "add \"num_speculative_tokens\"")
    if (dtp := as_int(cfg.get("draft_tensor_parallel_size"))) is not None:
        ttp = tp if tp is not None else 1
        if dtp not in (1, ttp):
            ch.add("draft-tp-vs-target", "error", "draft_tensor_parallel_size",
                   f"speculative_draft_tensor_parallel_size={dtp} cannot be other value than 1 "
                   f"or target model tensor_parallel_size (the target runs with "
                   f"--tensor-parallel-size {ttp})", f"use 1 or {ttp}")
        ch.drop("draft-tensor-parallel-size")
    tmax = served_len if served_len is not None else (target or {}).get("max_position_embeddings")
    dmax = (draft or {}).get("max_position_embeddings")
    if (mml := as_int(cfg.get("max_model_len"))) is not None:
        if isinstance(dmax, int) and mml > dmax:
            ch.add("max-model-len-above-draft", "error", "max_model_len",
                   f"speculative_max_model_len={mml} cannot be larger than "
                   f"draft_max_model_len={dmax}", f"use at most {dmax}")
        elif isinstance(tmax, int) and mml > tmax:
            ch.add("max-model-len-above-target", "error", "max_model_len",
                   f"speculative_max_model_len={mml} cannot be larger than "
                   f"target_max_model_len={tmax}", f"use at most {tmax}")
    if method == "draft_model" and not ch.values.get("use_heterogeneous_vocab") and target \
            and draft:
        tv, dv = target.get("vocab_size"), draft.get("vocab_size")
        if isinstance(tv, int) and isinstance(dv, int) and tv != dv:
            ch.add("vocab-size-differs", "error", "model", "Target and draft model should have "
                   f"the same vocabulary size. Target model vocab_size={tv}. Draft model "
                   f"vocab_size={dv}.", "use a draft with the target's tokenizer, or set "
                   "\"use_heterogeneous_vocab\": true (greedy drafting only)")
    if method == "eagle" and "eagle3" in " ".join(architectures(draft)).lower():
        ch.add("eagle-on-eagle3-head", "error", "method", "method 'eagle' on an EAGLE-3 head "
               f"(config.json architectures {architectures(draft)}): vLLM wraps it as "
               "'Eagle' + the architecture, which no model class implements", "write "
               "\"method\": \"eagle3\"")
