"""The serving model's catalogues: GPUs (``data/gpus.csv``) and model shapes
(``data/model_architectures.csv`` or a Hugging Face ``config.json``, read by
:func:`specnb.hf_config.read_config`); names case-insensitive, aliases allowed.

:class:`GPU`, :func:`gpu`, :func:`gpu_names`, :func:`ridge_point`; :class:`Architecture`,
:func:`architecture`, :func:`architecture_names`, :func:`model_id`; :data:`DTYPES` (bytes per
weight); :data:`KV_CACHE_DTYPES` and :func:`kv_storage_dtype` (vLLM's ``--kv-cache-dtype``,
the one home of the KV dtype rule); :func:`gpu_alias_note`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _check, hf_config
from ..memory import DTYPE_BYTES, kv_cache_bytes_per_token
from . import moe as _moe
from .moe import MLA, MoE

__all__ = ["DTYPES", "QUANTIZED_DTYPES", "KV_CACHE_DTYPES", "kv_storage_dtype", "gpu_alias_note", "GPU", "gpu", "gpu_names", "ridge_point", "Architecture", "architecture", "checkpoint_dtype_of",
           "architecture_names", "resolve_architecture", "weight_bytes_of", "model_id", "published_active_params"]

#: Bytes per stored weight for each weight dtype the serving model takes: the one dtype table,
#: :data:`specnb.memory.DTYPE_BYTES`, without fp32 (not a serving dtype); int4 packs two per byte.
DTYPES: dict[str, float] = {k: v for k, v in DTYPE_BYTES.items() if k != "fp32"}

#: vLLM's ``--kv-cache-dtype`` values the model times (``CacheDType`` in
#: ``vllm/config/cache.py``, v0.33.0; vLLM lists more, e.g. fp8_inc and the fp4 / turboquant
#: layouts, which are not modelled), each with the :data:`DTYPES` key whose bytes per element
#: it stores. ``auto`` (vLLM's default) stores the model's activation dtype
#: (:func:`kv_storage_dtype`); specnb's short names ``bf16``, ``fp16``, ``fp8`` are taken too.
KV_CACHE_DTYPES: dict[str, str | None] = {
    "auto": None, "bfloat16": "bf16", "float16": "fp16", "fp8": "fp8", "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8", "bf16": "bf16", "fp16": "fp16"}


def kv_storage_dtype(kv_cache_dtype, dtype: str = "bf16") -> str:
    """The :data:`DTYPES` key the KV cache is stored in, for vLLM's ``--kv-cache-dtype`` and
    the weight ``dtype``: the one home of the rule. ``auto`` or None (vLLM's default) is the
    activation dtype: fp16 for fp16 weights, else bf16 (fp8, int8 and int4 checkpoints
    compute in bf16: quantized weights do not quantize the KV cache; vLLM needs
    ``--kv-cache-dtype fp8`` for that, which halves the KV bytes).

    Raises
    ------
    ValueError
        a kv_cache_dtype not in :data:`KV_CACHE_DTYPES`, or an unknown dtype.
    """
    _check.choice("dtype", dtype, DTYPES)
    key = "auto" if kv_cache_dtype is None else kv_cache_dtype
    _check.choice("kv_cache_dtype", key, KV_CACHE_DTYPES)
    stored = KV_CACHE_DTYPES[key]
    if stored is None:
        return "fp16" if dtype == "fp16" else "bf16"
    return stored


@dataclass(frozen=True)
class GPU:
    """One GPU's datasheet numbers (dense, without 2:4 sparsity).

    Attributes: ``name``; ``memory_bytes``; ``bandwidth`` (memory, bytes/s); ``bf16_flops``
    (dense BF16/FP16 tensor FLOP/s); ``fp8_flops`` (dense FP8 tensor FLOP/s, None without FP8
    tensor cores); ``link`` (GPU-to-GPU bytes/s: NVLink where present, else PCIe);
    ``layer_fixed_us`` (a fixed cost per layer per forward beyond the fitted defaults' fixed
    cost, microseconds: launches and small kernels on GPUs where it is published, 0 where
    not; ``data/gpus.csv`` says where each comes from); ``compute_capability`` (CUDA's
    ``"major.minor"``, https://developer.nvidia.com/cuda-gpus; ``""`` for a GPU that is not
    CUDA's, e.g. AMD's); ``source``; ``total_memory_bytes`` (the device's total as
    ``torch.cuda.mem_get_info()`` reports it, binary: an "80 GB" H100 reports 79.11 GiB =
    84.9e9 B; ``data/gpus.csv`` names where each was read; None where not found).
    ``memory_bytes`` is the datasheet's decimal figure (the source article's "80 GB"
    arithmetic); :attr:`device_memory_bytes` is what vLLM budgets from.
    """

    name: str
    memory_bytes: float
    bandwidth: float
    bf16_flops: float
    fp8_flops: float | None
    link: float
    source: str = ""
    layer_fixed_us: float = 0.0
    compute_capability: str = ""
    total_memory_bytes: float | None = None

    @property
    def device_memory_bytes(self) -> float:
        """The total vLLM's memory budget starts from (the one home of the rule): vLLM 0.33's
        ``request_memory`` (``v1/worker/utils.py``) takes ``gpu_memory_utilization x
        total_memory`` of the ``MemorySnapshot`` (``utils/mem_utils.py``:
        ``torch.cuda.mem_get_info()``'s total), i.e. :attr:`total_memory_bytes` where the
        catalogue has it, else the datasheet's ``memory_bytes`` (a fallback that
        ``data/gpus.csv`` marks NOT FOUND)."""
        return self.memory_bytes if self.total_memory_bytes is None else self.total_memory_bytes

    def flops(self, dtype: str = "bf16") -> float:
        """Peak dense FLOP/s for a weight dtype: FP8 tensor cores for ``fp8`` where the GPU
        has them, else BF16 (int8/int4 and fp8 without FP8 cores run as weight-only
        quantization with BF16 math)."""
        _check.choice("dtype", dtype, DTYPES)
        return self.fp8_flops if dtype == "fp8" and self.fp8_flops else self.bf16_flops


def _load(name: str):
    from .. import data

    return data.load(name)


@functools.lru_cache(maxsize=None)
def _catalogue(table: str, key: str) -> dict[str, dict]:
    """{lower-case name or alias: row} of a catalogue CSV (read once per process)."""
    rows = {}
    for rec in _load(table).to_dict("records"):
        names = [rec[key]] + [a for a in str(rec.get("aliases", "")).split(";") if a]
        for n in names:
            rows[n.strip().lower()] = rec
    return rows


def gpu_names() -> list[str]:
    """Catalogue GPU names (``data/gpus.csv``), in file order."""
    return list(dict.fromkeys(r["gpu"] for r in _catalogue("gpus", "gpu").values()))


def _blank(value) -> bool:
    """A CSV cell left empty (pandas reads it as NaN)."""
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def gpu(name) -> GPU:
    """A GPU from ``data/gpus.csv`` by name or alias, case-insensitive (``"h100-sxm"``,
    ``"H100"``, ``"A100"``). A :class:`GPU` is returned unchanged.

    Raises
    ------
    ValueError
        an unknown name; the message lists the known ones.
    """
    if isinstance(name, GPU):
        return name
    if not isinstance(name, str):
        raise TypeError(f"gpu must be a GPU name (str), got {type(name).__name__}")
    rec = _catalogue("gpus", "gpu").get(name.strip().lower())
    if rec is None:
        raise ValueError(f"unknown GPU {name!r}; known GPUs: {', '.join(gpu_names())} "
                         "(case-insensitive)")
    fp8 = rec["fp8_tflops"]
    fp8 = None if _blank(fp8) else float(fp8) * 1e12
    fixed = rec.get("layer_fixed_us", "")
    fixed = 0.0 if _blank(fixed) else float(fixed)
    cc = rec.get("compute_capability", "")
    total = rec.get("total_memory_bytes", "")
    return GPU(rec["gpu"], float(rec["memory_gb"]) * 1e9, float(rec["bandwidth_gb_s"]) * 1e9,
               float(rec["bf16_tflops"]) * 1e12, fp8, float(rec["link_gb_s"]) * 1e9,
               rec["source"], fixed, "" if _blank(cc) else f"{float(cc):.1f}",
               None if _blank(total) else float(total))


def gpu_alias_note(name) -> str | None:
    """A sentence when ``name`` is an alias that other catalogue GPUs' names also start with
    (``"H100"`` is read as H100-SXM, but H100-PCIe and H100-NVL differ in bandwidth), else
    None (an exact name, an unambiguous alias or a :class:`GPU`).

    Raises
    ------
    ValueError
        an unknown name, as :func:`gpu`.
    """
    if isinstance(name, GPU):
        return None
    g = gpu(name)
    given = name.strip().lower()
    if given == g.name.lower():
        return None
    others = [gpu(n) for n in gpu_names()
              if n != g.name and n.lower().replace(" ", "-").startswith(given.replace(" ", "-"))]
    if not others:
        return None
    tb = lambda x: f"{x.bandwidth / 1e12:.3g} TB/s, {x.memory_bytes / 1e9:g} GB"  # noqa: E731
    return (f"GPU {name!r} is read as {g.name} ({tb(g)}); the catalogue also has "
            + ", ".join(f"{o.name} ({tb(o)})" for o in others) + ": give the exact name")


def ridge_point(gpu_name, dtype: str = "bf16") -> float:
    """The roofline ridge point, FLOP per byte: peak dense FLOP/s / memory bandwidth.

    Below it a step is memory-bound. H100 SXM bf16: 989.4e12 / 3.35e12 = 295 FLOP/byte;
    A100 153; L40S 419 (``shared/reference/batch-model.md`` section 6.1, DERIVED).

    Raises
    ------
    ValueError
        unknown GPU or dtype.
    """
    g = gpu(gpu_name)
    return g.flops(dtype) / g.bandwidth


@dataclass(frozen=True)
class Architecture:
    """A decoder-only transformer's shape: dense (LLaMA / Mistral / Qwen family) or with
    mixture-of-experts layers and multi-head latent attention (DeepSeek-V3, Kimi-K2,
    Qwen3-MoE, gpt-oss, Mixtral).

    Attributes follow the Hugging Face config names: ``n_layers``, ``hidden_size``,
    ``n_heads``, ``n_kv_heads``, ``head_dim``, ``intermediate_size`` (gated MLP: 3 matrices),
    ``vocab_size``, ``tie_word_embeddings``, ``attention_bias`` (q/k/v biases),
    ``qk_norm`` (per-head q/k RMSNorm, Qwen3); ``params_published`` (the model card's count,
    None for a config file); ``source``; ``max_position_embeddings`` (the most positions the
    model takes, tokens: the config's ``max_position_embeddings``; None = unknown);
    ``sliding_window`` (tokens each position attends to, from a config whose
    ``sliding_window`` is set and ``use_sliding_window`` is not false, e.g. Mistral-7B-v0.1's
    4096; None = full attention). The step-time model always reads the full KV cache: see
    :func:`context_limit_notes`. ``moe`` (:class:`~specnb.serving.moe.MoE`: routed experts,
    experts per token, shared experts, expert width, leading dense layers; None = dense),
    ``mla`` (:class:`~specnb.serving.moe.MLA`: latent and rope dims; None = per-head K and V),
    ``mtp_layers`` (multi-token-prediction modules vLLM can draft with, DeepSeek-V3: 1; 0: none,
    vLLM refuses method mtp on it; None: unknown; a config.json's:
    :func:`specnb.hf_config.mtp_layers`),
    ``checkpoint_dtype`` (the :data:`DTYPES` key the published checkpoint stores its weights
    in when it is quantized, DeepSeek-V3: ``fp8``; a config.json's ``quantization_config``:
    :func:`checkpoint_dtype_of`; None = unquantized, the config's bf16 / fp16),
    ``attention_sinks`` (learned per-head attention sinks, gpt-oss: vLLM's ``GptOssAttention``
    ``make_attention_sink``; a config.json of ``model_type`` gpt_oss). Parameter counts, weights read per step, FLOPs and KV bytes come from
    :mod:`specnb.serving.moe` (dense shapes give the dense formulas).
    """

    name: str
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    qk_norm: bool = False
    params_published: float | None = None
    source: str = ""
    max_position_embeddings: int | None = None
    sliding_window: int | None = None
    moe: MoE | None = None
    mla: MLA | None = None
    mtp_layers: int | None = None
    checkpoint_dtype: str | None = None
    attention_sinks: bool = False

    @property
    def layer_params(self) -> int:
        """Parameters of one decoder layer (attention, 2 norms, biases, q/k norms, and the
        gated MLP; an MoE model's layer: router, shared and every routed expert)."""
        h = self.hidden_size
        mlp = 3 * h * self.intermediate_size
        if self.moe is not None:
            m = self.moe
            mlp = (m.n_routed_experts * h + (m.n_routed_experts + m.n_shared_experts)
                   * _moe.expert_params(h, m.moe_intermediate_size))
        return _moe.attention_params(self) + mlp + 2 * h

    @property
    def embedding_params(self) -> int:
        """``vocab_size x hidden_size`` (the input embedding; the LM head has the same shape)."""
        return self.vocab_size * self.hidden_size

    @property
    def params(self) -> int:
        """Total parameters: layers (all experts), embedding, LM head (unless tied), final
        norm; MTP modules not counted (model cards count them apart)."""
        return _moe.param_counts(self)["total"]

    @property
    def active_params(self) -> int:
        """Parameters one token uses (k routed + shared experts; = :attr:`params` for dense
        models), with the input embedding (see :func:`specnb.serving.moe.param_counts`)."""
        return _moe.param_counts(self)["active"]

    @property
    def step_params(self) -> int:
        """Parameters read by a one-token forward: every layer (an MoE layer: router, shared
        and k routed experts), the LM head and the final norm (the embedding lookup reads only
        one row per token). More tokens read more experts: :meth:`step_params_for`."""
        return int(round(float(_moe.step_weight_params(self, 1))))

    def step_params_for(self, tokens):
        """Parameters a forward over ``tokens`` query tokens reads (the routed experts they
        touch under uniform routing, an upper bound for skewed routing; dense models: the
        same for every token count). Number or array >= 1."""
        return _moe.step_weight_params(self, tokens)

    @property
    def matmul_params_per_token(self) -> int:
        """Weights multiplied per query token (layers' matrices, k routed + shared experts,
        router, LM head): 2 FLOPs each."""
        return _moe.matmul_params_per_token(self)

    def kv_bytes_per_token(self, dtype: str = "bf16") -> float:
        """KV-cache bytes per token: 2 x layers x kv_heads x head_dim x bytes per element
        (Llama-3.1-8B in bf16: 131,072 B = 128 KiB, reference section 6.2); MLA:
        layers x (kv_lora_rank + qk_rope_head_dim) x bytes (DeepSeek-V3: 70,272 B)."""
        _check.choice("dtype", dtype, DTYPES)
        if self.mla is None:  # the one GQA formula: specnb.memory
            return kv_cache_bytes_per_token(self.n_layers, self.n_kv_heads, self.head_dim, dtype)
        return _moe.kv_bytes_per_token(self, DTYPES[dtype])

    @property
    def routed_expert_params(self) -> int:
        """Parameters of every routed expert (0 for a dense model): what an MXFP4 checkpoint
        stores in 4.25 bits (:func:`weight_bytes_of`)."""
        if self.moe is None:
            return 0
        m = self.moe
        return (_moe.moe_layers(self) * m.n_routed_experts
                * _moe.expert_params(self.hidden_size, m.moe_intermediate_size))

    @property
    def vocab_params(self) -> int:
        """Parameters of the input embedding and the LM head (``vocab_size x hidden_size``
        each; once when ``tie_word_embeddings``): what vLLM keeps in bf16 when it quantizes
        the rest (:func:`weight_bytes_of`'s ``unquantized``)."""
        return self.embedding_params * (1 if self.tie_word_embeddings else 2)

    def weight_bytes(self, dtype: str = "bf16") -> float:
        """Bytes of all weights in ``dtype`` (:func:`weight_bytes_of`: fp8 / int8 / int4 keep
        the embedding and LM head (:attr:`vocab_params`) in bf16, as vLLM does; mxfp4 stores
        the routed experts in 4.25 bits, the rest bf16; quantization scales not counted).
        Llama-3.1-8B in fp8: 6.98e9 B + 1.05e9 x 2 B = 9.08e9 B (not 8.03e9)."""
        return weight_bytes_of(self.params, dtype, self.routed_expert_params, self.vocab_params)

    def one_layer(self, name: str | None = None) -> "Architecture":
        """One decoder layer of this model plus its LM head (an MoE model's: an MoE layer),
        the body of an EAGLE / MTP draft head; the heads' own parts (fc layers, EAGLE-3's
        draft vocabulary, MTP's projection) are added by :mod:`specnb.serving.heads`."""
        moe = None if self.moe is None else dataclasses.replace(self.moe, first_k_dense_layers=0)
        return dataclasses.replace(self, name=name or f"{self.name} (1 layer)", n_layers=1,
                                   tie_word_embeddings=True, params_published=None, moe=moe,
                                   mtp_layers=0)


#: The weight dtypes vLLM stores only some layers of in their width (a quantization
#: method's ``get_quant_method`` claims linear layers and routed experts, the rest stays in
#: the model's 16-bit dtype): :func:`weight_bytes_of`'s ``unquantized`` part is bf16 in them.
QUANTIZED_DTYPES = ("fp8", "int8", "int4", "mxfp4")


def weight_bytes_of(params, dtype: str, routed=0.0, unquantized=0.0):
    """Bytes of ``params`` weights in ``dtype``, ``routed`` of them routed-expert weights and
    ``unquantized`` of them the input embedding and LM head (the one home of the mixed
    width): ``params x DTYPES[dtype]`` for bf16 / fp16; for a quantized dtype
    (:data:`QUANTIZED_DTYPES`) the ``unquantized`` weights stay at bf16's 2 bytes: vLLM
    0.33's quantization methods claim only ``LinearBase`` layers and ``RoutedExperts``
    (``Fp8Config.get_quant_method`` in ``model_executor/layers/quantization/fp8.py``, the
    online path's ``resolve_quant_method_cls`` in ``quantization/online/base.py`` returning
    None for any other layer; AWQ / GPTQ, which int4 / int8 checkpoints are,
    ``auto_awq.py`` and ``utils/gptq_utils.py`` ``get_linear_quant_method``: the
    ``ParallelLMHead`` only when the checkpoint's config says ``lm_head: true``, default
    false), so ``VocabParallelEmbedding`` and ``ParallelLMHead`` get
    ``UnquantizedEmbeddingMethod`` (``vocab_parallel_embedding.py``) in the model's bf16.
    ``mxfp4``, a checkpoint layout (gpt-oss: "MoE weights ... quantized to 4.25 bits per
    parameter", the rest bf16; vLLM's ``Mxfp4Config`` quantizes only the fused MoE layers,
    ``model_executor/layers/quantization/mxfp4.py`` v0.33.0): ``routed`` at 4.25 bits (OCP
    MX: a shared 8-bit scale per 32 FP4 values), the rest at 2 bytes; a head or a dense
    model (routed 0) in mxfp4 is then bf16. Quantization scales (AWQ / GPTQ group scales,
    FP8 block scales) and the few unquantized linear layers (an MoE router gate) are not
    counted."""
    _check.choice("dtype", dtype, DTYPES)
    if dtype == "mxfp4":
        return (params - routed) * DTYPES["bf16"] + routed * DTYPES["mxfp4"]
    if dtype in QUANTIZED_DTYPES:
        return (params - unquantized) * DTYPES[dtype] + unquantized * DTYPES["bf16"]
    return params * DTYPES[dtype]


def architecture_names() -> list[str]:
    """Catalogue model names (``data/model_architectures.csv``), in file order."""
    return list(dict.fromkeys(r["model"] for r in _catalogue("model_architectures",
                                                             "model").values()))


def _as_bool(x) -> bool:
    if isinstance(x, str):
        return x.strip().lower() == "true"
    return bool(x)


def _optional_int(x) -> int | None:
    if x is None or (isinstance(x, float) and math.isnan(x)) or str(x).strip() == "":
        return None
    return int(x)


def _alias_max_positions(rec: dict, key: str) -> tuple[str, int | None]:
    """(name, max positions): the row's model and ``max_position_embeddings``, or the alias
    and its own value where ``max_position_embeddings_by_alias`` lists it
    (``Qwen2.5-7B-Instruct=32768``: an -Instruct or -Base config.json whose value differs
    from the row's model)."""
    for item in str(rec.get("max_position_embeddings_by_alias") or "").split(";"):
        alias, _, value = item.partition("=")
        if alias.strip().lower() == key and value.strip():
            return alias.strip(), int(value)
    return rec["model"], _optional_int(rec.get("max_position_embeddings"))


def _row_moe(rec: dict):
    """(MoE or None, MLA or None) from a catalogue row's MoE columns (empty for dense rows)."""
    get = lambda k: _optional_int(rec.get(k))  # noqa: E731
    moe = mla = None
    if get("n_routed_experts"):
        moe = MoE(get("n_routed_experts"), get("experts_per_token"),
                  get("n_shared_experts") or 0, get("moe_intermediate_size"),
                  get("first_k_dense_layers") or 0)
    if get("kv_lora_rank"):
        mla = MLA(get("kv_lora_rank"), get("qk_rope_head_dim"), get("qk_nope_head_dim"),
                  get("v_head_dim"), get("q_lora_rank"))
    return moe, mla


def published_active_params(arch: "Architecture") -> float | None:
    """The model card's active-parameter count of a catalogue MoE model (None otherwise)."""
    rec = _catalogue("model_architectures", "model").get(arch.name.lower())
    value = str((rec or {}).get("params_active_published", "")).strip()
    return float(value) if value else None


def architecture(name_or_config) -> Architecture:
    """A model shape by catalogue name (case-insensitive, aliases allowed), from a Hugging Face
    ``config.json`` (a file path or a folder holding one), or from a config dict.

    A config is read like transformers does for LLaMA-style models: ``num_hidden_layers``,
    ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads`` (default: heads),
    ``head_dim`` (default hidden / heads), ``intermediate_size``, ``vocab_size``,
    ``tie_word_embeddings`` (default False), ``attention_bias`` (default: True for
    ``model_type`` qwen2), q/k norm for ``model_type`` qwen3, ``max_position_embeddings``
    (absent: unknown, None); a multimodal config's ``text_config`` is used. MoE and MLA
    configs (DeepSeek-V3 / Kimi-K2, Qwen3-MoE, Mixtral, gpt-oss shapes) add their experts and
    latent dims (:func:`specnb.serving.moe.moe_from_config`); an MLA config's head_dim is
    ``qk_nope_head_dim + qk_rope_head_dim``.

    Raises
    ------
    ValueError
        unknown or empty name (the message lists the known ones); a config that is not JSON
        (line and column), lacks a key (named), holds a non-positive or non-integer size (0 is
        refused, not replaced by a default), a ``tie_word_embeddings`` / ``attention_bias``
        that is not a JSON boolean, attention heads that are not a multiple of the KV heads,
        an MoE layout the model cannot represent (:func:`specnb.serving.moe.moe_from_config`).
        A catalogue model's Hugging
        Face id (``meta-llama/Llama-3.1-8B``) names it unless such a local path exists; a
        UTF-8 BOM is skipped.
    FileNotFoundError
        a path that does not exist.
    """
    return resolve_architecture(name_or_config)[0]


def resolve_architecture(name_or_config) -> tuple[Architecture, dict | None]:
    """:func:`architecture` and the config it was read from: ``(Architecture, config dict)``,
    the dict None for a catalogue name or an Architecture. A config file is read once
    (:func:`specnb.hf_config.read_config`). Same parameters and errors as
    :func:`architecture`."""
    if isinstance(name_or_config, Architecture):
        return name_or_config, None
    if isinstance(name_or_config, dict):
        return _from_config(name_or_config, "config"), name_or_config
    if isinstance(name_or_config, os.PathLike):
        name_or_config = os.fspath(name_or_config)
    if not isinstance(name_or_config, str):
        raise TypeError("model must be a catalogue name, a config.json path or a dict, got "
                        f"{type(name_or_config).__name__}")
    text = name_or_config.strip()
    if not text:
        raise ValueError(f"model must not be empty; known models: "
                         f"{', '.join(architecture_names())} (case-insensitive), or give the "
                         "path of a Hugging Face config.json")
    rec = _catalogue("model_architectures", "model").get(text.lower())
    if rec is None and not Path(text).exists():  # a catalogue model's Hugging Face id
        rec = next((r for r in _catalogue("model_architectures", "model").values()
                    if str(r.get("hf_id", "")).lower() == text.lower()), None)
    if rec is not None:
        name, max_positions = _alias_max_positions(rec, text.lower())
        moe, mla = _row_moe(rec)
        return Architecture(
            name, int(rec["n_layers"]), int(rec["hidden_size"]), int(rec["n_heads"]),
            int(rec["n_kv_heads"]), int(rec["head_dim"]), int(rec["intermediate_size"]),
            int(rec["vocab_size"]), _as_bool(rec["tie_word_embeddings"]),
            _as_bool(rec["attention_bias"]), _as_bool(rec["qk_norm"]),
            float(rec["params_published"]), rec["source"], max_positions, None, moe, mla,
            _optional_int(rec.get("mtp_layers")),  # empty: unknown (T7-10)
            str(rec.get("checkpoint_dtype") or "").strip() or None,
            _as_bool(rec.get("attention_sinks") or False)), None
    path = Path(text)
    looks_like_path = path.suffix == ".json" or os.sep in text or path.exists()
    if not looks_like_path:
        raise ValueError(f"unknown model {name_or_config!r}; known models: "
                         f"{', '.join(architecture_names())} (case-insensitive), or give the "
                         "path of a Hugging Face config.json")
    cfg, path = hf_config.read_config(
        path, label="model config",
        hint=f"give a catalogue name: {', '.join(architecture_names())}; or a config.json")
    return _from_config(cfg, str(path)), cfg


def _from_config(cfg: dict, where: str) -> Architecture:
    ckpt_dtype = checkpoint_dtype_of(cfg)  # a multimodal config keeps it at the top level
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg["text_config"], "model_type": cfg["text_config"].get(
            "model_type", cfg.get("model_type"))}
    moe, mla, _ = _moe.moe_from_config(cfg, where)
    mtp = hf_config.mtp_layers(cfg)  # vLLM 0.33's reading (T7-10)

    def need(key):
        if key not in cfg or cfg[key] is None:
            mt = cfg.get("model_type")
            raise hf_config.MissingConfigKey(  # not a malformed value: T7-08
                f"{where}: missing key {key!r} (a Hugging Face config.json of a "
                             "decoder-only model has num_hidden_layers, hidden_size, "
                             "num_attention_heads, intermediate_size, vocab_size"
                             + (f"; model_type {mt!r} names its sizes differently: the serving "
                                "model covers LLaMA-style decoders (Llama, Mistral, Qwen2, "
                                "Qwen3)" if mt and key not in cfg else "") + ")")
        return cfg[key]

    def pos_int(key, value):  # bounded: hf_config.SIZE_LIMITS
        return hf_config.config_int(where, key, value)

    def flag(key, default):
        value = cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{where}: {key} must be true or false (a JSON boolean), got "
                             f"{value!r}")
        return bool(value)

    layers = pos_int("num_hidden_layers", need("num_hidden_layers"))
    hidden = pos_int("hidden_size", need("hidden_size"))
    heads = pos_int("num_attention_heads", need("num_attention_heads"))
    kv = cfg.get("num_key_value_heads")
    kv = pos_int("num_key_value_heads", heads if kv is None else kv)
    if heads % kv:
        raise ValueError(f"{where}: num_attention_heads ({heads}) must be a multiple of "
                         f"num_key_value_heads ({kv}): each KV head serves a whole group of "
                         "query heads (grouped-query attention)")
    hd = cfg.get("head_dim")
    if mla is not None:
        hd = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    hd = pos_int("head_dim", hidden // heads if hd is None else hd)  # transformers' default
    inter = pos_int("intermediate_size", need("intermediate_size"))
    vocab = pos_int("vocab_size", need("vocab_size"))
    mtype = str(cfg.get("model_type", "")).lower()
    bias = flag("attention_bias", mtype == "qwen2")
    name = cfg.get("_name_or_path") or where
    max_pos = cfg.get("max_position_embeddings")
    max_pos = None if max_pos is None else pos_int("max_position_embeddings", max_pos)
    window = cfg.get("sliding_window")
    window = (None if window is None or not flag("use_sliding_window", True)
              else pos_int("sliding_window", window))
    return Architecture(str(name), layers, hidden, heads, kv, hd, inter, vocab,
                        flag("tie_word_embeddings", False), bias,
                        mtype.startswith("qwen3"), None, where, max_pos, window, moe, mla, mtp,
                        ckpt_dtype, mtype == "gpt_oss")


#: ``quantization_config.quant_method`` values whose stored weight width specnb knows
#: without reading the tensors: FP8 checkpoints (DeepSeek-V3's block FP8, fbgemm) and AWQ
#: (always 4-bit); GPTQ by its ``bits``.
_QUANT_METHOD_DTYPE = {"fp8": "fp8", "fbgemm_fp8": "fp8", "awq": "int4", "awq_marlin": "int4"}


def checkpoint_dtype_of(cfg: dict) -> str | None:
    """The :data:`DTYPES` key a Hugging Face config's checkpoint stores its weights in, from
    its ``quantization_config`` (``quant_method`` fp8 -> ``fp8``, awq -> ``int4``, gptq with
    ``bits`` 4 / 8 -> ``int4`` / ``int8``, mxfp4 of a gpt-oss config (``model_type``
    gpt_oss: its experts; vLLM's ``GptOssMxfp4Config`` claims only those) -> ``mxfp4``);
    None without one (unquantized) or for a method whose width specnb does not read
    (compressed-tensors, modelopt, another model's mxfp4, ...)."""
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        return None
    method = str(q.get("quant_method", "")).lower()
    if method in ("mxfp4", "gpt_oss_mxfp4"):
        return "mxfp4" if cfg.get("model_type") == "gpt_oss" else None
    if method in ("gptq", "gptq_marlin"):
        return {4: "int4", 8: "int8"}.get(q.get("bits"))
    return _QUANT_METHOD_DTYPE.get(method)




def model_id(arch: Architecture) -> str:
    """What ``vllm serve`` / a draft ``model`` should name: the Hugging Face id of a catalogue
    model, or the folder of a config.json."""
    if arch.source and arch.source.endswith(".json"):  # vLLM loads a folder's config.json
        return os.path.dirname(arch.source) or "."
    try:
        rec = _catalogue("model_architectures", "model").get(arch.name.lower())
    except (ValueError, FileNotFoundError):
        rec = None
    return rec["hf_id"] if rec else arch.name
