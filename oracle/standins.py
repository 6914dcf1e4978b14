"""Stand-in checkpoints for the oracle: config.json files only (no weights).

Each stand-in is a small Hugging Face config that vLLM's config code reads where
a real checkpoint would be read: the serve target, a draft model, an EAGLE head,
an MTP-capable target. Hub ids are served from a local offline cache
(``HF_HUB_OFFLINE=1``), local paths from a folder. Runs under any Python (stdlib).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

_LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 32000,
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16",
    "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False,
}


def _llama(**over):
    cfg = dict(_LLAMA)
    cfg.update(over)
    return cfg


_DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
    "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
    "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 1, "topk_group": 1,
    "kv_lora_rank": 64, "q_lora_rank": 64, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
    "v_head_dim": 32, "vocab_size": 32000, "max_position_embeddings": 4096,
    "num_nextn_predict_layers": 1, "rms_norm_eps": 1e-6, "torch_dtype": "bfloat16",
    "routed_scaling_factor": 1.0, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
    "norm_topk_prob": True, "bos_token_id": 0, "eos_token_id": 1,
}

#: name -> (kind, config). kind says what a checkpoint of this shape is for vLLM.
STANDINS: dict[str, tuple[str, dict]] = {
    # serve targets (local paths)
    "target-llama": ("target", _llama()),
    "target-llama-ctx2048": ("target", _llama(max_position_embeddings=2048)),
    "target-deepseek-mtp": ("target", _DEEPSEEK_V3),
    # draft models
    "draft-llama": ("draft_model", _llama(num_hidden_layers=1)),
    "draft-llama-vocab50k": ("draft_model", _llama(num_hidden_layers=1, vocab_size=50000)),
    "draft-llama-ctx1024": ("draft_model", _llama(num_hidden_layers=1, max_position_embeddings=1024)),
    # EAGLE-1 head: a one-layer llama whose path says "eagle-"
    "EAGLE-llama-head": ("eagle", _llama(num_hidden_layers=1)),
    # EAGLE-3 head
    "llama-eagle3-head": ("eagle3", _llama(architectures=["LlamaForCausalLMEagle3"],
                                           num_hidden_layers=1, draft_vocab_size=32000)),
}

#: Hub ids (as the docs and the cases spell them) -> the stand-in served for them.
HUB_IDS: dict[str, str] = {
    "Qwen/Qwen3-0.6B": "draft-llama",
    "Qwen/Qwen3-8B": "target-llama",
    "meta-llama/Llama-3.2-1B-Instruct": "draft-llama",
    "HuggingFaceTB/SmolLM2-135M-Instruct": "draft-llama-vocab50k",
    "amd/PARD-Qwen3-0.6B": "draft-llama",
    "yuhuili/EAGLE-LLaMA3-Instruct-8B": "EAGLE-llama-head",
    "yuhuili/EAGLE-LLaMA3.1-Instruct-8B": "EAGLE-llama-head",
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B": "llama-eagle3-head",
    "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3": "llama-eagle3-head",
}

_FAKE_SHA = "0" * 40


def build(root: str | os.PathLike) -> dict[str, str]:
    """Write every stand-in under ``root``; return {name or hub id: path or id}.

    ``root/local/<name>/config.json`` for local paths and
    ``root/hf/hub/models--<org>--<name>/snapshots/<sha>/config.json`` (with
    ``refs/main``) for hub ids; point ``HF_HOME`` at ``root/hf``.
    """
    root = Path(root)
    out: dict[str, str] = {}
    for name, (_, cfg) in STANDINS.items():
        d = root / "local" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps(cfg, indent=1, sort_keys=True))
        out[name] = str(d)
    for hub_id, name in HUB_IDS.items():
        repo = root / "hf" / "hub" / ("models--" + hub_id.replace("/", "--"))
        snap = repo / "snapshots" / _FAKE_SHA
        snap.mkdir(parents=True, exist_ok=True)
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(_FAKE_SHA)
        (snap / "config.json").write_text(json.dumps(STANDINS[name][1], indent=1, sort_keys=True))
        out[hub_id] = hub_id
    return out
