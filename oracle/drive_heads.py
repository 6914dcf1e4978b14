"""vLLM's own EAGLE-3 head code run on the CPU (``make oracle-heads``): the glue of
``vllm/model_executor/models/llama_eagle3.py`` (``Eagle3LlamaForCausalLM.combine_hidden_states``
and ``compute_logits``, its ``LlamaDecoderLayer.forward`` with ``norm_before_residual`` both
ways, ``LlamaModel``'s final ``norm(hidden, residual)``) and ``llama.py``'s ``LlamaAttention.
forward`` and ``LlamaMLP``, on vLLM's own layers (``RMSNorm``, ``QKVParallelLinear``,
``MergedColumnParallelLinear``, ``RowParallelLinear``, ``ReplicatedLinear``, ``ParallelLMHead``,
``LogitsProcessor``, the rotary embedding from ``get_rope``), their weights loaded by vLLM's own
weight loaders (shards q / k / v and gate / up), on one process of a world of one.

vLLM's ``Attention`` layer needs its forward context (the paged KV cache and the attention
backend's metadata), so each case is a single query over a single key: the attention's output
is then its value, whatever the backend (softmax over one score is 1), and that one function
stands in for ``self.attn``; everything around it is vLLM's code. Writes, per variant, a
speculators-format head (``config.json``, ``model.safetensors``: random weights, seed 0) and
``cases.safetensors`` (``ids`` (n, 2): the last verified token and the input token, ``aux``
(n, 3H), and vLLM's ``logits`` (n, V target) and ``prenorm`` (n, H)) under
``tests/cases/vllm/<version>/heads/<variant>/``; ``tests/measure/test_heads.py`` loads the head
with specnb and must reproduce them.

    .venv-vllm-0.33.0/bin/python oracle/drive_heads.py --out tests/cases/vllm/0.33.0/heads
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

import torch  # noqa: E402
from torch import nn  # noqa: E402

H, V, DV, HEADS, KV_HEADS, FF, N_AUX, CASES = 32, 61, 40, 4, 2, 64, 3, 12


def _process(mod):
    for m in mod.modules():
        qm = getattr(m, "quant_method", None)
        if qm is not None and hasattr(qm, "process_weights_after_loading"):
            qm.process_weights_after_loading(m)


def drive(out: Path, norm_before_residual: bool, port: int) -> dict:
    import vllm
    from transformers import LlamaConfig
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel

    with set_current_vllm_config(VllmConfig()):
        from vllm.distributed import parallel_state
        if not parallel_state.model_parallel_is_initialized():
            init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                         distributed_init_method=f"tcp://127.0.0.1:{port}")
            initialize_model_parallel(1, 1)
        from vllm.model_executor.layers.layernorm import RMSNorm
        from vllm.model_executor.layers.linear import (QKVParallelLinear, ReplicatedLinear,
                                                       RowParallelLinear)
        from vllm.model_executor.layers.logits_processor import LogitsProcessor
        from vllm.model_executor.layers.rotary_embedding import get_rope
        from vllm.model_executor.layers.vocab_parallel_embedding import (
            ParallelLMHead, VocabParallelEmbedding)
        from vllm.model_executor.models import llama, llama_eagle3

        g = torch.Generator().manual_seed(0)
        rnd = lambda *s: torch.randn(*s, generator=g) * 0.2  # noqa: E731
        hd = H // HEADS
        w = {"embed_tokens.weight": rnd(V, H), "fc.weight": rnd(H, N_AUX * H),
             "layers.0.input_layernorm.weight": 1 + rnd(H),
             "layers.0.hidden_norm.weight": 1 + rnd(H),
             "layers.0.post_attention_layernorm.weight": 1 + rnd(H),
             "layers.0.self_attn.q_proj.weight": rnd(HEADS * hd, 2 * H),
             "layers.0.self_attn.k_proj.weight": rnd(KV_HEADS * hd, 2 * H),
             "layers.0.self_attn.v_proj.weight": rnd(KV_HEADS * hd, 2 * H),
             "layers.0.self_attn.o_proj.weight": rnd(H, HEADS * hd),
             "layers.0.mlp.gate_proj.weight": rnd(FF, H), "layers.0.mlp.up_proj.weight":
             rnd(FF, H), "layers.0.mlp.down_proj.weight": rnd(H, FF),
             "norm.weight": 1 + rnd(H), "lm_head.weight": rnd(DV, H)}
        keep = torch.randperm(V, generator=g)[:DV].sort().values
        w["d2t"] = keep - torch.arange(DV)
        t2d = torch.zeros(V, dtype=torch.bool)
        t2d[keep] = True
        w["t2d"] = t2d
        eps = 1e-6

        from vllm.model_executor.model_loader.weight_utils import default_weight_loader

        def load(param, tensor, shard=None):  # as AutoWeightsLoader calls the loaders
            loader = getattr(param, "weight_loader", default_weight_loader)
            loader(param, tensor) if shard is None else loader(param, tensor, shard)

        class Attn(nn.Module):  # vLLM's LlamaAttention.forward around a one-key attention
            forward = llama.LlamaAttention.forward

        class Layer(nn.Module):  # vLLM's EAGLE-3 decoder layer 0
            forward = llama_eagle3.LlamaDecoderLayer.forward
            _norm_before_residual = llama_eagle3.LlamaDecoderLayer._norm_before_residual
            _norm_after_residual = llama_eagle3.LlamaDecoderLayer._norm_after_residual

        att = Attn()
        att.q_size, att.kv_size = HEADS * hd, KV_HEADS * hd
        att.qkv_proj = QKVParallelLinear(2 * H, hd, HEADS, KV_HEADS, bias=False)
        for s in ("q", "k", "v"):
            load(att.qkv_proj.weight, w[f"layers.0.self_attn.{s}_proj.weight"], s)
        att.o_proj = RowParallelLinear(HEADS * hd, H, bias=False)
        load(att.o_proj.weight, w["layers.0.self_attn.o_proj.weight"])
        att.rotary_emb = get_rope(hd, max_position=256, is_neox_style=True,
                                  rope_parameters={"rope_type": "default",
                                                   "rope_theta": 10000.0})

        def one_key(q, k, v):  # softmax over a single key: the value, per query head
            return v.view(-1, KV_HEADS, hd).repeat_interleave(HEADS // KV_HEADS, 1).flatten(1)

        att.attn = one_key
        layer = Layer()
        layer.layer_idx = 0
        layer.self_attn = att
        layer.mlp = llama.LlamaMLP(H, FF, "silu")
        load(layer.mlp.gate_up_proj.weight, w["layers.0.mlp.gate_proj.weight"], 0)
        load(layer.mlp.gate_up_proj.weight, w["layers.0.mlp.up_proj.weight"], 1)
        load(layer.mlp.down_proj.weight, w["layers.0.mlp.down_proj.weight"])
        for name in ("input_layernorm", "hidden_norm", "post_attention_layernorm"):
            setattr(layer, name, RMSNorm(H, eps=eps))
            load(getattr(layer, name).weight, w[f"layers.0.{name}.weight"])
        layer._residual_norm = (layer._norm_before_residual if norm_before_residual
                                else layer._norm_after_residual)
        model = nn.Module()  # Eagle3LlamaForCausalLM's parts its methods read
        model.model = nn.Module()
        m = model.model
        m.use_aux_hidden_state, m.norm_before_fc, m.fc_norm = True, False, None
        m.num_aux_hidden_states = N_AUX
        m.fc = ReplicatedLinear(N_AUX * H, H, bias=False, return_bias=False)
        load(m.fc.weight, w["fc.weight"])
        m.embed_tokens = VocabParallelEmbedding(V, H)
        load(m.embed_tokens.weight, w["embed_tokens.weight"])
        m.norm = RMSNorm(H, eps=eps)
        load(m.norm.weight, w["norm.weight"])
        model.lm_head = ParallelLMHead(DV, H)
        load(model.lm_head.weight, w["lm_head.weight"])
        model.logits_processor = LogitsProcessor(DV, scale=1.0)
        model.draft_id_to_target_id = nn.Parameter(w["d2t"].clone(), requires_grad=False)
        model.config = LlamaConfig(vocab_size=V, hidden_size=H, draft_vocab_size=DV)
        for mod in (att, layer, m, model):
            _process(mod)

        ids = torch.randint(0, V, (CASES, 2), generator=g)
        aux = torch.randn(CASES, N_AUX * H, generator=g)
        with torch.inference_mode():
            hid = llama_eagle3.Eagle3LlamaForCausalLM.combine_hidden_states(model, aux)
            emb = m.embed_tokens(ids[:, 1])
            pos = torch.zeros(CASES, dtype=torch.long)  # each case: position 0, its own sequence
            h, residual = layer(positions=pos, embeds=emb, hidden_states=hid, residual=None)
            normed, prenorm = m.norm(h, residual)
            logits = llama_eagle3.Eagle3LlamaForCausalLM.compute_logits(model, normed)
        from safetensors.torch import save_file

        variant = "speculators" if norm_before_residual else "specforge"
        dest = out / f"eagle3-{variant}"
        dest.mkdir(parents=True, exist_ok=True)
        layer_cfg = {"model_type": "llama", "hidden_size": H, "intermediate_size": FF,
                     "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
                     "head_dim": hd, "num_hidden_layers": 1, "vocab_size": V,
                     "rms_norm_eps": eps, "max_position_embeddings": 256,
                     "rope_theta": 10000.0, "hidden_act": "silu"}
        if norm_before_residual:
            cfg = {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
                   "transformer_layer_config": layer_cfg, "draft_vocab_size": DV,
                   "target_hidden_size": H, "norm_before_residual": True,
                   "eagle_aux_hidden_state_layer_ids": [1, 2, 3]}
            names = w
        else:
            cfg = {**layer_cfg, "architectures": ["LlamaForCausalLMEagle3"],
                   "draft_vocab_size": DV, "eagle_config": {
                       "eagle_aux_hidden_state_layer_ids": [1, 2, 3],
                       "use_aux_hidden_state": True}}
            names = {k.replace("layers.0.", "midlayer."): v for k, v in w.items()}
        (dest / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
        save_file({k: v.contiguous() for k, v in names.items()}, str(dest / "model.safetensors"))
        save_file({"ids": ids, "aux": aux, "logits": logits.contiguous(),
                   "prenorm": prenorm.contiguous()}, str(dest / "cases.safetensors"))
        (dest / "README.md").write_text(
            f"vLLM {vllm.__version__}'s EAGLE-3 head code on {CASES} one-key cases "
            f"(norm_before_residual {norm_before_residual}); written by oracle/drive_heads.py, "
            "read by tests/measure/test_heads.py.\n")
        return {"variant": variant, "cases": CASES, "vllm": vllm.__version__,
                "finite_logits_per_row": int(torch.isfinite(logits[0]).sum())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="tests/cases/vllm/0.33.0/heads")
    args = ap.parse_args(argv)
    out = Path(args.out)
    for i, nbr in enumerate((True, False)):
        print(json.dumps(drive(out, nbr, 29540 + i)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
