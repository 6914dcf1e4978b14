"""Tiny targets and heads of every format, written as checkpoints (tests of
specnb.measure.heads, head_replay and the reference loop's head drafter).

``bigram`` targets have zero attention and MLP outputs, embedding rows of unit RMS and unit
norm weights, so the next token is a function of the current one; a head copied from that
path (fc / eh_proj picking the embedding, zero block outputs, the target's lm_head) predicts
exactly what the target predicts."""

from __future__ import annotations

import json

import torch

VOCAB, H = 61, 32


def _zero_outputs(layer) -> None:
    """Zero what a decoder layer adds to its residual stream (attention and MLP outputs)."""
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if name.endswith(("o_proj.weight", "down_proj.weight", "experts.down_proj")):
                p.zero_()


def _unit_rms_embeddings(model) -> None:
    with torch.no_grad():
        e = model.get_input_embeddings().weight
        e.div_(e.pow(2).mean(-1, keepdim=True).sqrt())


def llama_target(layers: int = 4, bigram: bool = False, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=H, intermediate_size=64,
                      num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=256, tie_word_embeddings=False, eos_token_id=None,
                      bos_token_id=None, pad_token_id=None)
    m = LlamaForCausalLM(cfg).eval()
    if bigram:
        for layer in m.model.layers:
            _zero_outputs(layer)
        _unit_rms_embeddings(m)
    m.generation_config.eos_token_id = None
    return m


def deepseek_target(folder, bigram: bool = False, seed: int = 0, mtp: bool = True):
    """A 1-layer DeepSeek-V3 (MLA + MoE from layer 1 on) saved to ``folder`` with one MTP
    layer (``model.layers.1.*`` in mtp.safetensors) when ``mtp``."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    from specnb.measure import heads

    torch.manual_seed(seed)
    cfg = DeepseekV3Config(vocab_size=VOCAB, hidden_size=H, intermediate_size=64,
                           moe_intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                           num_key_value_heads=2, n_routed_experts=4, num_experts_per_tok=2,
                           n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1,
                           kv_lora_rank=16, q_lora_rank=None, qk_rope_head_dim=8,
                           qk_nope_head_dim=8, v_head_dim=16, max_position_embeddings=256,
                           tie_word_embeddings=False, eos_token_id=None, bos_token_id=None,
                           pad_token_id=None)
    m = DeepseekV3ForCausalLM(cfg).eval()
    if bigram:
        for layer in m.model.layers:
            _zero_outputs(layer)
        _unit_rms_embeddings(m)
    m.generation_config.eos_token_id = None
    m.save_pretrained(folder)
    conf = json.loads((folder / "config.json").read_text())
    conf["num_nextn_predict_layers"] = 1 if mtp else 0
    (folder / "config.json").write_text(json.dumps(conf))
    if mtp:
        head = heads.new_head(conf, m)
        if bigram:
            copy_next_token_path(head, m)
        heads.save_head(head, folder, conf, filename="mtp.safetensors")
    return m


def copy_next_token_path(head, target) -> None:
    """Make ``head`` predict what a bigram ``target`` predicts: its input projection picks the
    token embedding, its blocks add nothing, and its output uses the target's head."""
    with torch.no_grad():
        proj = head.fc if head.method == "eagle" else head.eh_proj
        proj.weight.zero_()
        proj.weight[:, :H] = torch.eye(H)
        for layer in getattr(head, "layers", [getattr(head, "block", None)]):
            _zero_outputs(layer)
        if head.lm_head is not target.get_output_embeddings():
            head.lm_head.weight.copy_(target.get_output_embeddings().weight)


def eagle1_config(layers: int = 1) -> dict:
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
            "intermediate_size": 64, "num_hidden_layers": layers, "num_attention_heads": 2,
            "num_key_value_heads": 2, "vocab_size": VOCAB, "rms_norm_eps": 1e-6,
            "max_position_embeddings": 256}
