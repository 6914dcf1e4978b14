"""Will speculation pay at my batch size and context length? A step-time model of speculative
decoding on a GPU, by batch size B, context length S and draft length gamma.

The physics (``shared/reference/batch-model.md`` section 1; MagicDec, arXiv 2408.11049): one
forward over B sequences with context S and q query tokens each (q = 1 decoding, q = gamma + 1
verifying) moves every weight once plus B x S x (KV bytes per token), and does about
2 x params FLOPs per query token plus attention, 4 x layers x heads x head_dim FLOPs per query
token per context token. Each part runs at the slower of memory and compute (a roofline with
efficiency factors), plus a fixed cost per step and, under tensor parallelism, two all-reduces
per layer. Speculation pays while ``tau x T_plain > gamma x T_draft + T_verify + overhead``
(MagicDec eq. 2 with a per-step overhead).

API summary
-----------
Catalogues (``data/gpus.csv``, ``data/model_architectures.csv``; names case-insensitive)
    :func:`gpu` -> :class:`GPU`; :func:`gpu_names`;
    :func:`architecture` (catalogue name or a Hugging Face ``config.json`` path / dict)
    -> :class:`Architecture`; :func:`architecture_names`; :func:`ridge_point`.
Step time
    :class:`Efficiency` (bandwidth and compute fractions of peak, fixed per-step cost,
    per-token cost, all-reduce latency, memory/compute overlap); :data:`DEFAULT_EFFICIENCY`
    (from SpecDecode-Bench's fitted constants), :data:`DEFAULT_HEAD_EFFICIENCY`,
    :func:`default_efficiency_sources`; :func:`step_breakdown` (bytes, FLOPs, times, bound);
    :func:`step_time_ms`.
Drafts and the setup
    :class:`Draft` / :func:`draft` (``ngram``, ``suffix``, ``eagle``, ``eagle3``, ``mtp``, a
    catalogue name or ``config.json``, ``self``; optional KV budget); :class:`Setup` /
    :func:`setup` (GPU, GPUs, target, dtypes, draft, efficiencies);
    :func:`max_batch_in_memory`; :func:`context_limit_notes` (contexts beyond the model's
    ``max_position_embeddings``).
Times and speedup (arrays broadcast: batch x context x gamma)
    :func:`t_plain_ms`, :func:`t_verify_ms`, :func:`t_draft_ms`, :func:`tokens_per_step`,
    :func:`speedup`, :func:`per_token_latency_ms`, :func:`verdict`.
Grids and decisions
    :func:`evaluate` -> :class:`Grid` (``.frame()``, ``.best()``); :func:`best_gamma`;
    :func:`crossover_batch`, :func:`paying_batches`, :func:`describe_paying`; :func:`schedule`, :func:`schedule_gammas`,
    :func:`plan_schedule`, :func:`check_schedule`, :func:`schedule_lookup` (vLLM's per-batch K),
    :func:`schedule_config`, :func:`setup_config` (config + notes for a setup),
    :func:`model_id`; :data:`SCHEDULE_TAX` (measured cost of turning the schedule on).
Calibration
    :func:`read_measurements` (CSV ``role, batch_size, context, query_tokens, ms``);
    :func:`calibrate` -> :class:`Calibration` (``.setup``, ``.report``, ``.notes``);
    :func:`predict_measurements` (the model beside measured rows it was not fitted on).
Reference tables (``data/magicdec_steps.csv``)
    :data:`MAGICDEC_TABLES`, :func:`magicdec_table`, :func:`magicdec_setup`,
    :func:`table_measurements` (rows -> calibration format), :func:`predict_table`,
    :func:`fit_and_predict` (calibrate on some rows, predict all);
    :func:`batch_table_comparison` (EAGLE-3 Tables 3 and 5 beside the model, tau assumed).

Units: times in milliseconds (``_ms``), bytes in bytes, FLOP/s and bytes/s in SI units.
Scalars give Python floats; arrays broadcast with numpy's rules.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import _check

__all__ = [
    "GPU", "Architecture", "Efficiency", "Draft", "Setup", "Grid", "Calibration",
    "DEFAULT_EFFICIENCY", "DEFAULT_HEAD_EFFICIENCY", "DTYPES", "DRAFT_METHODS",
    "SD_OVERHEAD_MS", "NGRAM_DRAFT_FRACTION", "SCHEDULE_TAX", "MAX_BATCH_SEARCH",
    "MAX_GRID_CELLS",
    "gpu", "gpu_names", "architecture", "architecture_names", "ridge_point",
    "step_breakdown", "step_time_ms",
    "draft", "setup", "max_batch_in_memory", "context_limit_notes",
    "t_plain_ms", "t_verify_ms", "t_draft_ms", "tokens_per_step", "speedup",
    "per_token_latency_ms", "verdict",
    "evaluate", "best_gamma", "crossover_batch", "paying_batches", "describe_paying",
    "schedule", "schedule_gammas", "plan_schedule", "check_schedule", "schedule_lookup",
    "schedule_config", "setup_config", "model_id",
    "read_measurements", "calibrate", "predict_measurements", "MEASURED_COLUMNS", "OVERLAP_GRID",
    "FIT_EFFICIENCY_RANGE", "default_efficiency_sources",
    "MAGICDEC_TABLES", "MAGICDEC_SNAPKV_BUDGET", "magicdec_table", "magicdec_setup",
    "table_measurements", "predict_table", "fit_and_predict",
    "EAGLE3_BATCH_TABLES", "batch_table_comparison",
]

#: Bytes per stored weight for each supported weight dtype (int4 packs two per byte).
DTYPES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}

#: Draft methods that are not a model name: no model (``ngram``, ``suffix``), one decoder layer
#: of the target plus its LM head (``eagle``, ``eagle3``, ``mtp``), the target itself (``self``).
DRAFT_METHODS = ("ngram", "suffix", "eagle", "eagle3", "mtp", "self")

#: Per-verification system overhead, ms: SpecDecode-Bench's ``overhead_constant_per_step``
#: (1.20683946e-03 s; arXiv 2601.11580, predictor.py ``Llama8BH100``; vLLM on 1x H100).
#: MagicDec's Table 3 rows show the same size of gap: Omega x T_SD exceeds gamma T_D + T_V by
#: 1.3-1.4 ms (e.g. S 1024, B 32: 2.19 x 8.70 - (8.21 + 9.55) = 1.29 ms).
SD_OVERHEAD_MS = 1.20683946

#: n-gram / suffix drafting time as a fraction of the verification time: SpecDecode-Bench's
#: ``ngram_draft_percentage`` (0.005875; same source).
NGRAM_DRAFT_FRACTION = 0.005875

#: The measured cost of turning vLLM's ``num_speculative_tokens_per_batch_size`` on, even with
#: K = 0 everywhere: TPOT +6.56 % at concurrency 2 (14.374 -> 15.317 ms) and +21.58 % at 189
#: (77.164 -> 93.820 ms); gemma-4-31B FP8 on 1x H100 NVL, vLLM 0.27.1, piecewise CUDA graphs
#: (Model Runner V1). Source: vLLM issue #49548, comment by seongyun1104
#: (``shared/reference/batch-model.md`` section 5.4). Not applied by the model; reported.
SCHEDULE_TAX = {"concurrency": (2, 189), "tpot_increase": (0.0656, 0.2158),
                "source": "vLLM issue #49548 (comment by seongyun1104), vLLM 0.27.1, 1x H100 "
                          "NVL, piecewise CUDA graphs"}

#: Largest ``max_batch`` of :func:`crossover_batch` and :func:`plan_schedule`, which evaluate
#: every batch size 1..max_batch: 65,536 x 8 gammas x 4 contexts is about 2 million cells
#: (well under a second); 10**8 took 5 minutes and 10**9 exhausted memory. vLLM's
#: ``max_num_seqs`` defaults to 256-1,024.
MAX_BATCH_SEARCH = 65536

#: Largest grid :func:`evaluate` builds (batch sizes x contexts x gammas): 65,536 x 16 x 8 =
#: 2**23 cells took 1.4 s and 0.47 GB at peak, so 2**24 stays near 1 GB; 65,536 batch sizes
#: x 1,000 contexts x 8 gammas would need about 30 GB.
MAX_GRID_CELLS = 2 ** 24


# --------------------------------------------------------------------------- catalogues
@dataclass(frozen=True)
class GPU:
    """One GPU's datasheet numbers (dense, without 2:4 sparsity).

    Attributes: ``name``; ``memory_bytes``; ``bandwidth`` (memory, bytes/s); ``bf16_flops``
    (dense BF16/FP16 tensor FLOP/s); ``fp8_flops`` (dense FP8 tensor FLOP/s, None without FP8
    tensor cores); ``link`` (GPU-to-GPU bytes/s: NVLink where present, else PCIe); ``source``.
    """

    name: str
    memory_bytes: float
    bandwidth: float
    bf16_flops: float
    fp8_flops: float | None
    link: float
    source: str = ""

    def flops(self, dtype: str = "bf16") -> float:
        """Peak dense FLOP/s for a weight dtype: FP8 tensor cores for ``fp8`` where the GPU
        has them, else BF16 (int8/int4 and fp8 without FP8 cores run as weight-only
        quantization with BF16 math)."""
        _check.choice("dtype", dtype, DTYPES)
        return self.fp8_flops if dtype == "fp8" and self.fp8_flops else self.bf16_flops


def _load(name: str):
    from . import data

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
    fp8 = None if fp8 == "" or fp8 is None or (isinstance(fp8, float) and math.isnan(fp8)) \
        else float(fp8) * 1e12
    return GPU(rec["gpu"], float(rec["memory_gb"]) * 1e9, float(rec["bandwidth_gb_s"]) * 1e9,
               float(rec["bf16_tflops"]) * 1e12, fp8, float(rec["link_gb_s"]) * 1e9,
               rec["source"])


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
    """A dense decoder-only transformer's shape (LLaMA / Mistral / Qwen family).

    Attributes follow the Hugging Face config names: ``n_layers``, ``hidden_size``,
    ``n_heads``, ``n_kv_heads``, ``head_dim``, ``intermediate_size`` (gated MLP: 3 matrices),
    ``vocab_size``, ``tie_word_embeddings``, ``attention_bias`` (q/k/v biases),
    ``qk_norm`` (per-head q/k RMSNorm, Qwen3); ``params_published`` (the model card's count,
    None for a config file); ``source``; ``max_position_embeddings`` (the most positions the
    model takes, tokens: the config's ``max_position_embeddings``; None = unknown);
    ``sliding_window`` (tokens each position attends to, from a config whose
    ``sliding_window`` is set and ``use_sliding_window`` is not false, e.g. Mistral-7B-v0.1's
    4096; None = full attention). The step-time model always reads the full KV cache: see
    :func:`context_limit_notes`.
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

    @property
    def layer_params(self) -> int:
        """Parameters of one decoder layer (attention, gated MLP, 2 norms, biases, q/k norms)."""
        h, hd = self.hidden_size, self.head_dim
        q, kv = self.n_heads * hd, self.n_kv_heads * hd
        n = h * q + 2 * h * kv + q * h + 3 * h * self.intermediate_size + 2 * h
        if self.attention_bias:
            n += q + 2 * kv
        if self.qk_norm:
            n += 2 * hd
        return n

    @property
    def embedding_params(self) -> int:
        """``vocab_size x hidden_size`` (the input embedding; the LM head has the same shape)."""
        return self.vocab_size * self.hidden_size

    @property
    def params(self) -> int:
        """Total parameters: layers, embedding, LM head (unless tied), final norm."""
        head = 0 if self.tie_word_embeddings else self.embedding_params
        return self.n_layers * self.layer_params + self.embedding_params + head + self.hidden_size

    @property
    def step_params(self) -> int:
        """Parameters read by one forward: every layer, the LM head and the final norm (the
        embedding lookup reads only one row per token)."""
        return self.n_layers * self.layer_params + self.embedding_params + self.hidden_size

    @property
    def matmul_params_per_token(self) -> int:
        """Weights multiplied per query token (layers' matrices + LM head): 2 FLOPs each."""
        h, hd = self.hidden_size, self.head_dim
        per_layer = (2 * h * self.n_heads * hd + 2 * h * self.n_kv_heads * hd
                     + 3 * h * self.intermediate_size)
        return self.n_layers * per_layer + self.embedding_params

    def kv_bytes_per_token(self, dtype: str = "bf16") -> float:
        """KV-cache bytes per token: 2 x layers x kv_heads x head_dim x bytes per element.
        Llama-3.1-8B in bf16: 131,072 B = 128 KiB (reference section 6.2)."""
        _check.choice("dtype", dtype, DTYPES)
        return 2.0 * self.n_layers * self.n_kv_heads * self.head_dim * DTYPES[dtype]

    def weight_bytes(self, dtype: str = "bf16") -> float:
        """Bytes of all weights in ``dtype`` (scales of quantized formats not counted)."""
        _check.choice("dtype", dtype, DTYPES)
        return self.params * DTYPES[dtype]

    def one_layer(self, name: str | None = None) -> "Architecture":
        """The shape of an EAGLE / MTP draft head: one decoder layer of this model plus its
        LM head (the issue's definition; EAGLE's input fc and a reduced draft vocabulary are
        not modelled)."""
        return dataclasses.replace(self, name=name or f"{self.name} (1 layer)", n_layers=1,
                                   tie_word_embeddings=True, params_published=None)


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


def architecture(name_or_config) -> Architecture:
    """A model shape by catalogue name (case-insensitive, aliases allowed), from a Hugging Face
    ``config.json`` (a file path or a folder holding one), or from a config dict.

    A config is read like transformers does for LLaMA-style models: ``num_hidden_layers``,
    ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads`` (default: heads),
    ``head_dim`` (default hidden / heads), ``intermediate_size``, ``vocab_size``,
    ``tie_word_embeddings`` (default False), ``attention_bias`` (default: True for
    ``model_type`` qwen2), q/k norm for ``model_type`` qwen3, ``max_position_embeddings``
    (absent: unknown, None); a multimodal config's ``text_config`` is used.

    Raises
    ------
    ValueError
        unknown or empty name (the message lists the known ones); a config that is not JSON
        (line and column), lacks a key (named), holds a non-positive or non-integer size (0 is
        refused, not replaced by a default), a ``tie_word_embeddings`` / ``attention_bias``
        that is not a JSON boolean, attention heads that are not a multiple of the KV heads,
        or describes a mixture-of-experts model (not modelled). A catalogue model's Hugging
        Face id (``meta-llama/Llama-3.1-8B``) names it unless such a local path exists; a
        UTF-8 BOM is skipped.
    FileNotFoundError
        a path that does not exist.
    """
    if isinstance(name_or_config, Architecture):
        return name_or_config
    if isinstance(name_or_config, dict):
        return _from_config(name_or_config, "config")
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
        return Architecture(
            name, int(rec["n_layers"]), int(rec["hidden_size"]), int(rec["n_heads"]),
            int(rec["n_kv_heads"]), int(rec["head_dim"]), int(rec["intermediate_size"]),
            int(rec["vocab_size"]), _as_bool(rec["tie_word_embeddings"]),
            _as_bool(rec["attention_bias"]), _as_bool(rec["qk_norm"]),
            float(rec["params_published"]), rec["source"], max_positions)
    path = Path(text)
    looks_like_path = path.suffix == ".json" or os.sep in text or path.exists()
    if not looks_like_path:
        raise ValueError(f"unknown model {name_or_config!r}; known models: "
                         f"{', '.join(architecture_names())} (case-insensitive), or give the "
                         "path of a Hugging Face config.json")
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"model config {str(path)!r} does not exist (give a catalogue "
                                f"name: {', '.join(architecture_names())}; or a config.json)")
    try:
        raw = path.read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not data
    except UnicodeDecodeError as exc:
        raise _check.utf8_error(str(path), exc, "give a Hugging Face config.json") from None
    try:
        cfg = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg} (a Hugging Face config.json is one JSON object)") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: a config.json must hold a JSON object, got "
                         f"{type(cfg).__name__}")
    return _from_config(cfg, str(path))


def _from_config(cfg: dict, where: str) -> Architecture:
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg["text_config"], "model_type": cfg["text_config"].get(
            "model_type", cfg.get("model_type"))}
    if cfg.get("num_experts") or cfg.get("num_local_experts") or cfg.get("n_routed_experts"):
        raise ValueError(f"{where}: a mixture-of-experts config (num_experts / "
                         "num_local_experts); the serving model covers dense models only")

    def need(key):
        if key not in cfg or cfg[key] is None:
            mt = cfg.get("model_type")
            raise ValueError(f"{where}: missing key {key!r} (a Hugging Face config.json of a "
                             "decoder-only model has num_hidden_layers, hidden_size, "
                             "num_attention_heads, intermediate_size, vocab_size"
                             + (f"; model_type {mt!r} names its sizes differently: the serving "
                                "model covers LLaMA-style decoders (Llama, Mistral, Qwen2, "
                                "Qwen3)" if mt and key not in cfg else "") + ")")
        return cfg[key]

    def pos_int(key, value):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
                or value < 1:
            raise ValueError(f"{where}: {key} must be a positive integer, got {value!r}")
        return int(value)

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
                        mtype.startswith("qwen3"), None, where, max_pos, window)


# --------------------------------------------------------------------------- step time
@dataclass(frozen=True)
class Efficiency:
    """How far a serving system falls short of the datasheet roofline.

    Attributes
    ----------
    bandwidth : float in (0, 1.5]
        Achieved / peak memory bandwidth for weights and KV.
    compute : float in (0, 1.5]
        Achieved / peak dense tensor FLOP/s.
    fixed_ms : float >= 0
        Fixed cost per forward, ms (launches, scheduling, sampling, Python).
    token_us : float >= 0
        Extra cost per query token in the step, microseconds (sampling, norms, rotary: work
        the two rooflines do not count).
    allreduce_us : float >= 0
        Latency of one all-reduce under tensor parallelism, microseconds (two per layer).
    overlap : float in [0, 1]
        How memory and compute time combine within one part (weights vs matmuls, KV vs
        attention): ``max(m, c) + (1 - overlap) min(m, c)``. 1 is the ideal roofline
        (perfect overlap), 0 the additive form ``m + c`` that SpecDecode-Bench fitted to vLLM
        (and SmartSpec's regression uses).
    """

    bandwidth: float = 0.996
    compute: float = 0.722
    fixed_ms: float = 1.39
    token_us: float = 0.0
    allreduce_us: float = 33.0
    overlap: float = 0.0

    def __post_init__(self):
        for name in ("bandwidth", "compute"):
            _check.scalar_real(name, getattr(self, name), lo=0.0, hi=1.5, lo_open=True)
        for name in ("fixed_ms", "token_us", "allreduce_us"):
            _check.scalar_real(name, getattr(self, name), lo=0.0)
        _check.scalar_real("overlap", self.overlap, lo=0.0, hi=1.0)


#: Defaults from published data (``shared/reference/batch-model.md`` section 4.1): the
#: SpecDecode-Bench simulator's fit for Llama-3.1-8B on 1x H100 with vLLM (arXiv 2601.11580,
#: predictor.py ``Llama8BH100``), restated in this model's terms: KV streams at
#: 131072 B / 3.926e-8 s = 3.34 TB/s = 0.996 of 3.35 TB/s; the per-token cost 2.101e-5 s
#: carries 2 x 7.50e9 matmul FLOPs (layers + LM head) at 714 TFLOP/s = 0.722 of 989.4 (the
#: reference's 77 % counts all 8.03e9 parameters); the fixed 5.886 ms less the weight read
#: per step (15.01 GB, the input embedding is not read in full, at 3.34 TB/s = 4.50 ms) leaves
#: 1.39 ms. ``overlap`` 0 (memory and compute times add) is the form of that fit, so with these
#: defaults the target step equals the simulator's up to attention FLOPs. The all-reduce
#: latency (33 us, two per layer under TP) is DERIVED from MagicDec appendix Table 4 (8x H100,
#: TP8, Llama-3.1-8B, S 32000): the mean of its three T_AR rows less the modelled weight, KV
#: and fixed costs, over 64 all-reduces. See :func:`default_efficiency_sources`.
DEFAULT_EFFICIENCY = Efficiency()

#: Default for EAGLE / EAGLE-3 / MTP heads: as :data:`DEFAULT_EFFICIENCY` but a fixed cost of
#: 0.26 ms per draft forward, DERIVED from SpecDecode-Bench's ``draft_c_fixed`` (2.135 ms),
#: read as the cost of one proposal round of k = 3 drafts (the simulator's setting): 0.712 ms
#: per forward less the head's bf16 weight read (one Llama-3.1-8B layer + LM head, 1.49 GB at
#: 3.34 TB/s = 0.45 ms). Reading it per forward instead would make EAGLE lose at batch 1,
#: which the paper's measurements contradict; the reading is an assumption (UNVERIFIED).
DEFAULT_HEAD_EFFICIENCY = Efficiency(fixed_ms=0.26)


def default_efficiency_sources() -> dict:
    """Where each :data:`DEFAULT_EFFICIENCY` field comes from (field -> text)."""
    return {
        "bandwidth": "SpecDecode-Bench (arXiv 2601.11580) target_c_kv 3.92645679e-08 s/token: "
                     "131072 B / c_kv = 3.34 TB/s = 0.996 of H100 SXM's 3.35 TB/s",
        "compute": "SpecDecode-Bench target_c_compute 2.10103129e-05 s/token: 2 x 7.505e9 "
                   "matmul FLOP (layers + LM head) / c = 714 TFLOP/s = 0.722 of 989.4 TFLOP/s",
        "fixed_ms": "SpecDecode-Bench target_c_fixed 5.886 ms less the bf16 weight read per "
                    "step of Llama-3.1-8B (15.01 GB / (0.996 x 3.35 TB/s) = 4.50 ms)",
        "token_us": "0: the additive fit's per-token cost is carried by the compute roofline",
        "allreduce_us": "DERIVED from MagicDec (arXiv 2408.11049) appendix Table 4 T_AR rows "
                        "(8x H100, TP8): the mean per-step time not explained by weights, KV "
                        "and the fixed cost (2.10 ms), over 2 x 32 all-reduces = 33 us",
        "overlap": "0: SpecDecode-Bench's fitted model is additive (c_kv x KV tokens + "
                   "c_compute x query tokens + c_fixed), i.e. memory and compute times add",
    }


def _prep(arch, gpu_name, dtype, kv_dtype, gpus, efficiency):
    arch, g = architecture(arch), gpu(gpu_name)
    eff = DEFAULT_EFFICIENCY if efficiency is None else efficiency
    _check.choice("dtype", dtype, DTYPES)
    kv_dtype = kv_dtype or ("fp8" if dtype == "fp8" else "bf16")
    _check.choice("kv_dtype", kv_dtype, DTYPES)
    n = _check.scalar_int("gpus", gpus, lo=1)
    return arch, g, eff, dtype, kv_dtype, n


def _step(arch, g, eff, dtype, kv_dtype, n, b, s, q, kv_budget=None, parts=False):
    """Unchecked core of :func:`step_breakdown` on float arrays that broadcast."""
    if kv_budget is not None:
        s = np.minimum(s, kv_budget)
    tokens = b * q
    w = arch.step_params * DTYPES[dtype] / n
    kv = b * s * (arch.kv_bytes_per_token(kv_dtype) / min(n, arch.n_kv_heads))
    f_lin = (2.0 * arch.matmul_params_per_token / n) * tokens
    f_att = (4.0 * arch.n_layers * arch.n_heads * arch.head_dim / n) * tokens * s
    bw = eff.bandwidth * g.bandwidth
    fl = eff.compute * g.flops(dtype)
    t_w, t_lin = w / bw * 1e3, f_lin * (1e3 / fl)
    t_kv, t_att = kv * (1e3 / bw), f_att * (1e3 / fl)
    fixed = eff.fixed_ms + (eff.token_us * 1e-3) * tokens
    if eff.overlap == 0.0:  # additive: max + min = sum
        total = fixed + t_w + t_lin + t_kv + t_att
    else:
        o = 1.0 - eff.overlap
        total = (fixed + np.maximum(t_w, t_lin) + o * np.minimum(t_w, t_lin)
                 + np.maximum(t_kv, t_att) + o * np.minimum(t_kv, t_att))
    comm = 0.0
    if n > 1:
        comm = 2 * arch.n_layers * (eff.allreduce_us * 1e-3
                                    + 2.0 * (n - 1) / n * arch.hidden_size * 2.0 / g.link * 1e3
                                    * tokens)
        total = total + comm
    if not parts:
        return total, (t_lin + t_att) > (t_w + t_kv)
    return dict(w=w, kv=kv, f_lin=f_lin, f_att=f_att, mem=t_w + t_kv, cmp=t_lin + t_att,
                comm=comm, fixed=fixed, total=total, tokens=tokens)


def step_breakdown(arch, gpu_name, batch_size, context, query_tokens=1, *, dtype="bf16",
                   kv_dtype=None, gpus=1, efficiency=None, kv_budget=None) -> dict:
    """Bytes, FLOPs and time of one forward over ``batch_size`` sequences.

    Each sequence has ``context`` tokens in its KV cache (capped at ``kv_budget`` when given)
    and ``query_tokens`` new tokens (1 = plain decoding, gamma + 1 = verification). Per GPU,
    with n = ``gpus`` (tensor parallelism; weights and FLOPs split n ways, KV split
    min(n, kv_heads) ways)::

        t_linear = comb(W / (e_bw BW), F_lin / (e_c FLOPS))    # weights vs matmuls
        t_attn   = comb(KV / (e_bw BW), F_att / (e_c FLOPS))   # KV read vs attention math
        comb(m, c) = max(m, c) + (1 - overlap) min(m, c)       # overlap 1: ideal roofline
        t_comm   = 2 layers (allreduce_us + 2 (n-1)/n x B q hidden x 2 bytes / link)  (n > 1)
        t        = fixed_ms + t_linear + t_attn + token_us x B q + t_comm

    with W = weights read per step (:attr:`Architecture.step_params` x bytes per weight),
    KV = B x S x KV bytes per token, F_lin = 2 x matmul params x B q,
    F_att = 4 x layers x heads x head_dim x B q x S (section 1 of the reference).

    Parameters
    ----------
    arch : Architecture, catalogue name or config path
    gpu_name : GPU or catalogue name
    batch_size, context, query_tokens : int or arrays (broadcast), >= 1 (context >= 0)
    dtype : weight dtype, one of bf16, fp16, fp8, int8, int4
    kv_dtype : KV-cache dtype (default bf16 for bf16/fp16/int8/int4 weights, fp8 for fp8)
    gpus : int >= 1, tensor-parallel GPUs
    efficiency : Efficiency (default :data:`DEFAULT_EFFICIENCY`)
    kv_budget : int >= 1 or None, most context tokens read (sparse-KV / StreamingLLM drafts)

    Returns
    -------
    dict of arrays (broadcast shape): ``weight_bytes``, ``kv_bytes``, ``linear_flops``,
    ``attention_flops`` (per GPU), ``t_memory_ms`` and ``t_compute_ms`` (the two rooflines at
    the given efficiency), ``t_comm_ms``, ``t_fixed_ms`` (fixed + per-token), ``time_ms`` and
    ``bound`` (``"memory"`` or ``"compute"``, whichever roofline is larger in total).

    Raises
    ------
    ValueError
        unknown model, GPU or dtype; a count below its minimum or fractional; shapes that do
        not broadcast.
    """
    arch, g, eff, dtype, kv_dtype, n = _prep(arch, gpu_name, dtype, kv_dtype, gpus, efficiency)
    b = _check.integer("batch_size", batch_size, lo=1).astype(float)
    s = _check.integer("context", context, lo=0).astype(float)
    q = _check.integer("query_tokens", query_tokens, lo=1).astype(float)
    if kv_budget is not None:
        kv_budget = _check.scalar_int("kv_budget", kv_budget, lo=1)
    b, s, q = _check.broadcast(batch_size=b, context=s, query_tokens=q)
    p = _step(arch, g, eff, dtype, kv_dtype, n, b, s, q, kv_budget, parts=True)
    shape = p["tokens"].shape
    full = lambda x: np.broadcast_to(np.asarray(x, dtype=float), shape).copy()  # noqa: E731
    return {
        "weight_bytes": full(p["w"]), "kv_bytes": full(p["kv"]),
        "linear_flops": full(p["f_lin"]), "attention_flops": full(p["f_att"]),
        "t_memory_ms": full(p["mem"]), "t_compute_ms": full(p["cmp"]),
        "t_comm_ms": full(p["comm"]), "t_fixed_ms": full(p["fixed"]),
        "time_ms": full(p["total"]),
        "bound": np.where(p["cmp"] > p["mem"], "compute", "memory"),
    }


def step_time_ms(arch, gpu_name, batch_size, context, query_tokens=1, **kwargs):
    """Time of one forward in ms: ``step_breakdown(...)["time_ms"]`` (same parameters and
    errors). A scalar for scalar inputs."""
    return _check.out(step_breakdown(arch, gpu_name, batch_size, context, query_tokens,
                                     **kwargs)["time_ms"])


# --------------------------------------------------------------------------- drafts
@dataclass(frozen=True)
class Draft:
    """A drafter.

    ``kind``: ``"none"`` (n-gram / suffix: no model; drafting costs
    :data:`NGRAM_DRAFT_FRACTION` of the verification time), ``"head"`` (EAGLE / EAGLE-3 / MTP:
    one decoder layer of the target plus its LM head), ``"model"`` (a separate model) or
    ``"self"`` (the target itself, optionally with a sparse KV budget, as MagicDec's
    self-speculation). ``method`` is vLLM's method name (``ngram``, ``suffix``, ``eagle``,
    ``eagle3``, ``mtp``, ``draft_model``); ``arch`` the draft's shape (None for ``none``);
    ``kv_budget`` the most context tokens the draft reads (None = all); ``dtype`` its weights.
    """

    kind: str
    method: str
    arch: Architecture | None = None
    kv_budget: int | None = None
    dtype: str | None = None
    name: str = ""


def draft(spec, target, *, kv_budget=None, dtype=None) -> Draft:
    """Build a :class:`Draft` for ``target`` from a method, catalogue name or config path.

    Parameters
    ----------
    spec : str, Draft, Architecture or dict
        ``ngram``, ``suffix``, ``eagle``, ``eagle3``, ``mtp``, ``self``, a catalogue model
        name (a draft model, vLLM ``draft_model``) or a ``config.json`` path.
    target : Architecture, catalogue name or config path
    kv_budget : int >= 1 or None
        Context tokens the draft reads at most (sparse KV, StreamingLLM); not for n-gram.
    dtype : weight dtype of a draft model (default: the target's)

    Raises
    ------
    ValueError
        unknown method or model; a draft model whose vocabulary size differs from the
        target's (its tokens cannot be verified: vLLM's draft_model method needs the same
        tokenizer); a KV budget or dtype with ``ngram`` / ``suffix``; a config of a draft
        head (EAGLE, EAGLE-3, MTP, Medusa...: its ``architectures``, ``model_type`` or folder
        name, read as the vLLM checker reads them) given as a draft model; a ``kv_budget``
        that differs from that of a given :class:`Draft`.
    """
    tgt = architecture(target)
    if kv_budget is not None:
        kv_budget = _check.scalar_int("draft_kv_budget", kv_budget, lo=1)
    if isinstance(spec, Draft):
        if kv_budget is not None and kv_budget != spec.kv_budget:
            raise ValueError(f"draft_kv_budget {kv_budget} given with a Draft whose kv_budget "
                             f"is {spec.kv_budget}; build the Draft with the budget instead")
        return spec
    if dtype is not None:
        _check.choice("draft_dtype", dtype, DTYPES)
    key = spec.strip().lower() if isinstance(spec, str) else None
    if key in ("ngram", "suffix"):
        if kv_budget is not None:
            raise ValueError(f"draft_kv_budget applies to model drafts; {key} drafting reads "
                             "no KV cache")
        if dtype is not None:
            raise ValueError(f"draft_dtype applies to model drafts; {key} drafting has no "
                             f"weights, got draft_dtype {dtype!r}")
        return Draft("none", key, None, None, None, key)
    if key in ("eagle", "eagle3", "mtp"):
        return Draft("head", key, tgt.one_layer(f"{key} head of {tgt.name}"), kv_budget, dtype,
                     key)
    if key == "self":
        return Draft("self", "draft_model", tgt, kv_budget, dtype, "self")
    try:
        arch = architecture(spec)
    except ValueError as exc:
        if isinstance(spec, str) and str(exc).startswith("unknown model"):
            raise ValueError(f"unknown draft {spec!r}; give a method ({', '.join(DRAFT_METHODS)}"
                             f"), a catalogue model ({', '.join(architecture_names())}) or the "
                             "path of a draft config.json") from None
        raise
    if arch.params_published is None and isinstance(spec, (str, os.PathLike, dict)):
        # from a config: is it a draft head, not a model?
        from .vllm._rules import checkpoint_method

        cfg = spec
        if not isinstance(spec, dict):
            with open(arch.source, encoding="utf-8-sig") as fh:
                cfg = json.load(fh)
        folder = os.path.dirname(arch.source) if arch.source.endswith(".json") else ""
        found = checkpoint_method(folder, cfg)
        if found is not None and found[0] != "draft_model":
            m, why = found
            what = (f"give --draft {m} (draft=\"{m}\"; the model times it as one target layer "
                    f"plus the LM head) and put {folder or 'this checkpoint'} as the config's "
                    "model" if m in DRAFT_METHODS else
                    f"the serving model does not model {m} heads; methods modelled: "
                    f"{', '.join(DRAFT_METHODS)}")
            raise ValueError(f"draft {spec if isinstance(spec, str) else 'config'!r} is a "
                             f"checkpoint for method {m} ({why}), not a separate draft model: "
                             "as vLLM's draft_model it runs with acceptance near 0 or is "
                             f"refused; "
                             f"{what}")
    if arch.vocab_size != tgt.vocab_size:
        raise ValueError(f"draft {arch.name} has vocab_size {arch.vocab_size} but the target "
                         f"{tgt.name} has {tgt.vocab_size}: the draft's token ids cannot be "
                         "verified by the target (a draft model must share the target's "
                         "tokenizer and vocabulary)")
    return Draft("model", "draft_model", arch, kv_budget, dtype, arch.name)


# --------------------------------------------------------------------------- setup
@dataclass(frozen=True)
class Setup:
    """Everything the step-time model needs: GPU, GPU count (tensor parallelism), target shape,
    weight and KV dtypes, the draft, and one :class:`Efficiency` per role. Build with
    :func:`setup`; change a field with ``dataclasses.replace``."""

    gpu: GPU
    target: Architecture
    draft: Draft
    gpus: int = 1
    dtype: str = "bf16"
    draft_dtype: str | None = None
    kv_dtype: str | None = None
    target_efficiency: Efficiency = DEFAULT_EFFICIENCY
    draft_efficiency: Efficiency = DEFAULT_EFFICIENCY
    sd_overhead_ms: float = SD_OVERHEAD_MS

    def fits_memory(self) -> bool:
        """True when the target's and draft's weights fit in the GPUs' memory (no KV left
        over is checked)."""
        w = self.target.weight_bytes(self.dtype)
        if self.draft.kind == "model":
            w += self.draft.arch.weight_bytes(self.draft_dtype or self.dtype)
        elif self.draft.kind == "head":
            w += self.draft.arch.layer_params * DTYPES[self.dtype]
        return w <= self.gpus * self.gpu.memory_bytes


def max_batch_in_memory(st: Setup, context, memory_fraction: float = 0.9):
    """Most sequences of ``context`` tokens whose KV cache (target, plus the draft's for
    model, self and head drafts, within its KV budget) fits beside the weights in
    ``memory_fraction`` of the GPUs' memory (vLLM's default gpu_memory_utilization is 0.9).
    Activations and CUDA graphs are not counted, so the real limit is lower. 0 when the
    weights alone do not fit. Scalar context -> int, array -> int array.

    Raises
    ------
    ValueError
        context < 0 or fractional; memory_fraction outside (0, 1].
    """
    s = _check.integer("context", context, lo=0).astype(float)
    frac = _check.scalar_real("memory_fraction", memory_fraction, lo=0.0, hi=1.0,
                              lo_open=True)
    kv_dtype = st.kv_dtype or ("fp8" if st.dtype == "fp8" else "bf16")
    w = st.target.weight_bytes(st.dtype)
    per_seq = s * st.target.kv_bytes_per_token(kv_dtype)
    d = st.draft
    if d.kind in ("model", "self", "head"):
        ds = s if d.kv_budget is None else np.minimum(s, d.kv_budget)
        per_seq = per_seq + ds * d.arch.kv_bytes_per_token(kv_dtype)
        if d.kind == "model":
            w += d.arch.weight_bytes(d.dtype or st.draft_dtype or st.dtype)
        elif d.kind == "head":
            w += d.arch.layer_params * DTYPES[d.dtype or st.dtype]
    room = frac * st.gpus * st.gpu.memory_bytes - w
    with np.errstate(divide="ignore", over="ignore"):  # context 0: no KV, capped below
        n = np.where(room <= 0, 0.0, np.floor(room / np.maximum(per_seq, 1e-300)))
    n = np.minimum(n, 2.0 ** 53).astype(np.int64)
    return int(n) if n.ndim == 0 else n


def setup(gpu_name, model, draft_spec="eagle3", *, gpus=1, dtype="bf16", draft_dtype=None,
          kv_dtype=None, draft_kv_budget=None, target_efficiency=None, draft_efficiency=None,
          sd_overhead_ms=SD_OVERHEAD_MS) -> Setup:
    """A :class:`Setup` from names: ``setup("H100-SXM", "Llama-3.1-8B", "eagle3")``.

    Parameters
    ----------
    gpu_name : catalogue GPU name (case-insensitive) or GPU
    model : catalogue model name, config.json path or Architecture (the target)
    draft_spec : see :func:`draft`
    gpus : int >= 1, tensor-parallel size (the draft runs with the same size)
    dtype, draft_dtype : weight dtypes, bf16 / fp16 / fp8 / int8 / int4
    kv_dtype : KV-cache dtype (default bf16, fp8 with fp8 weights)
    draft_kv_budget : int >= 1 or None
    target_efficiency : Efficiency (default :data:`DEFAULT_EFFICIENCY`)
    draft_efficiency : Efficiency (default :data:`DEFAULT_HEAD_EFFICIENCY` for eagle, eagle3
        and mtp, else :data:`DEFAULT_EFFICIENCY`)
    sd_overhead_ms : float >= 0, system overhead per verification (default
        :data:`SD_OVERHEAD_MS`)

    Raises
    ------
    ValueError
        unknown GPU, model, draft or dtype; gpus < 1; gpus that vLLM's tensor parallelism
        cannot split the target or draft model over (heads, KV heads, MLP width); the draft
        errors of :func:`draft`.
    """
    g = gpu(gpu_name)
    tgt = architecture(model)
    _check.choice("dtype", dtype, DTYPES)
    if draft_dtype is not None:
        _check.choice("draft_dtype", draft_dtype, DTYPES)
    if kv_dtype is not None:
        _check.choice("kv_dtype", kv_dtype, DTYPES)
    n = _check.scalar_int("gpus", gpus, lo=1)
    d = draft(draft_spec, tgt, kv_budget=draft_kv_budget, dtype=draft_dtype)
    _check_tensor_parallel(tgt, n, "target")
    if d.kind == "model":
        _check_tensor_parallel(d.arch, n, "draft")
    over = _check.scalar_real("sd_overhead_ms", sd_overhead_ms, lo=0.0)
    if draft_efficiency is None:
        draft_efficiency = DEFAULT_HEAD_EFFICIENCY if d.kind == "head" else DEFAULT_EFFICIENCY
    return Setup(g, tgt, d, n, dtype, draft_dtype, kv_dtype,
                 target_efficiency or DEFAULT_EFFICIENCY, draft_efficiency, over)


def _long_context_variants(arch: Architecture, need: int) -> list[str]:
    """Catalogue models of ``arch``'s shape that take at least ``need`` positions."""
    shape = lambda a: (a.n_layers, a.hidden_size, a.n_heads, a.n_kv_heads, a.head_dim,
                       a.intermediate_size, a.vocab_size)
    out = []
    for name in architecture_names():
        other = architecture(name)
        if (other.name != arch.name and shape(other) == shape(arch)
                and (other.max_position_embeddings or 0) >= need):
            out.append(f"{other.name}, {other.max_position_embeddings} positions")
    return out


def context_limit_notes(st, contexts) -> list[str]:
    """Notes for contexts beyond the model's maximum position count.

    The target (and a separate draft model) takes at most ``max_position_embeddings``
    positions (its ``config.json``; the catalogue column in ``data/model_architectures.csv``).
    vLLM refuses a ``max_model_len`` above it unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` is
    set, and positions beyond it give NaNs or crash (vLLM PR #7080, #20904; issue #17924).
    The step-time model does not depend on it, so :func:`setup` and :func:`evaluate` do not
    raise: these notes say so instead.

    Parameters
    ----------
    st : Setup, Architecture, catalogue name or config path (then only the target is checked)
    contexts : int or sequence of ints >= 0, context lengths in tokens

    Returns
    -------
    list of str: one note per model whose sliding window some context exceeds (modelled as
    full attention), and one per model whose maximum some context exceeds, naming the model,
    its maximum, the contexts above it and a long-context variant of the same shape from the
    catalogue where one exists (a draft model with a KV budget within its maximum: that vLLM
    cannot express the budget); empty when every context fits or the maximum is unknown.

    Raises
    ------
    ValueError
        a context < 0 or fractional.
    """
    s = _check.integer("contexts", contexts, lo=0)
    top = int(np.max(s)) if np.size(s) else 0
    budget = None
    if isinstance(st, Setup):
        models = [("target", st.target)]
        if st.draft.kind == "model":
            models.append(("draft", st.draft.arch))
            budget = st.draft.kv_budget
    else:
        models = [("target", architecture(st))]
    notes = []
    for role, arch in models:
        window = arch.sliding_window
        if window is not None and top > window:
            notes.append(
                f"the {role} {arch.name} uses sliding-window attention over the last {window} "
                f"tokens (config.json sliding_window); the step-time model reads the whole KV "
                f"cache, so above context {window} it overstates the attention bytes and "
                "FLOPs (the speedup is modelled as if attention were full)")
        limit = arch.max_position_embeddings
        if limit is None or top <= limit:
            continue
        if role == "draft" and budget is not None and budget <= limit:
            notes.append(
                f"the draft {arch.name} takes at most {limit} positions (max_position_embeddings)"
                f": the modelled draft reads only {budget} context tokens (KV budget, as "
                f"StreamingLLM), but vLLM's draft_model has no KV budget and would give it the "
                f"full context ({top}), beyond its maximum")
            continue
        over = sorted({int(c) for c in np.ravel(s) if c > limit})
        variants = _long_context_variants(arch, top)
        fix = (f"use a long-context variant of the same shape ({'; '.join(variants)})"
               if variants else "use a long-context variant of the model (a larger "
               "max_position_embeddings, e.g. trained with RoPE scaling)")
        notes.append(
            f"context {', '.join(map(str, over))} exceeds the {role} {arch.name}'s maximum of "
            f"{limit} positions (max_position_embeddings in its config.json): it cannot serve "
            f"that context (vLLM refuses a max_model_len above {limit}); the step times are "
            f"modelled regardless. {fix[0].upper() + fix[1:]} or a context within {limit}")
    return notes


def _check_tensor_parallel(arch: Architecture, n: int, role: str) -> None:
    """vLLM's tensor-parallel rules: attention heads and the MLP width split evenly over the
    n GPUs (``ModelConfig.verify_with_parallel_config``: "Total number of attention heads (28)
    must be divisible by tensor parallel size (3)"; ``ColumnParallelLinear`` divides
    ``intermediate_size``), and KV heads split evenly or are replicated a whole number of
    times (``QKVParallelLinear``: kv_heads % n == 0 or n % kv_heads == 0)."""
    if n == 1:
        return
    bad = None
    if arch.n_heads % n:
        bad = f"num_attention_heads ({arch.n_heads})"
    elif arch.intermediate_size % n:
        bad = f"intermediate_size ({arch.intermediate_size})"
    elif arch.n_kv_heads % n and n % arch.n_kv_heads:
        bad = (f"num_key_value_heads ({arch.n_kv_heads}) (or n a multiple of it, each KV head "
               "then replicated)")
    if bad:
        ok = [k for k in range(1, 2 * arch.n_heads + 1) if arch.n_heads % k == 0
              and arch.intermediate_size % k == 0
              and (arch.n_kv_heads % k == 0 or k % arch.n_kv_heads == 0)]
        raise ValueError(f"gpus = {n} does not divide the {role} {arch.name}'s {bad}: vLLM "
                         f"refuses tensor_parallel_size {n} for it; allowed GPU counts: "
                         f"{', '.join(map(str, ok))}")


def _target_kw(st: Setup) -> dict:
    return dict(dtype=st.dtype, kv_dtype=st.kv_dtype, gpus=st.gpus,
                efficiency=st.target_efficiency)


def _draft_kw(st: Setup) -> dict:
    d = st.draft
    return dict(dtype=d.dtype or st.draft_dtype or st.dtype, kv_dtype=st.kv_dtype,
                gpus=st.gpus, efficiency=st.draft_efficiency, kv_budget=d.kv_budget)


def _bsg(batch_size, context, gamma=None):
    b = _check.integer("batch_size", batch_size, lo=1).astype(float)
    s = _check.integer("context", context, lo=0).astype(float)
    if gamma is None:
        return _check.broadcast(batch_size=b, context=s)
    g = _check.integer("gamma", gamma, lo=1).astype(float)
    return _check.broadcast(batch_size=b, context=s, gamma=g)


class _Times:
    """Prepared (checked) arguments for the target and draft steps of a Setup."""

    def __init__(self, st: Setup):
        self.st = st
        self.tgt = _prep(st.target, st.gpu, st.dtype, st.kv_dtype, st.gpus,
                         st.target_efficiency)
        d = st.draft
        self.drf = None if d.kind == "none" else _prep(
            d.arch, st.gpu, d.dtype or st.draft_dtype or st.dtype, st.kv_dtype, st.gpus,
            st.draft_efficiency)

    def plain(self, b, s):
        return _step(*self.tgt, b, s, 1.0)[0]

    def verify(self, b, s, g):
        return _step(*self.tgt, b, s, g + 1.0)

    def draft(self, b, s, g, t_v):
        """gamma x T_D (one-token draft forwards), or the n-gram fraction of T_V."""
        if self.drf is None:
            return NGRAM_DRAFT_FRACTION * t_v
        one = _step(*self.drf, b, s, 1.0, self.st.draft.kv_budget)[0]
        return g * one

    def parts(self, b, s, g, tau):
        tp = self.plain(b, s)
        tv, cb = self.verify(b, s, g)
        td = self.draft(b, s, g, tv)
        cost = td + tv + self.st.sd_overhead_ms
        return tp, tv, td, cost, tau * tp / cost, cb


def t_plain_ms(st: Setup, batch_size, context):
    """Plain decoding step of the target, ms: one query token per sequence (T_AR).
    batch_size >= 1 and context >= 0, ints or arrays (broadcast)."""
    b, s = _bsg(batch_size, context)
    return _check.out(_Times(st).plain(b, s) + 0.0 * b)


def t_verify_ms(st: Setup, batch_size, context, gamma):
    """Verification step of the target, ms: gamma + 1 query tokens per sequence (T_V).
    gamma: int >= 1 (broadcasts)."""
    b, s, g = _bsg(batch_size, context, gamma)
    return _check.out(_Times(st).verify(b, s, g)[0] + 0.0 * b)


def t_draft_ms(st: Setup, batch_size, context, gamma):
    """Drafting time of one speculative step, ms: gamma draft forwards of one token per
    sequence (gamma x T_D; the draft reads min(context, kv_budget) tokens). n-gram / suffix:
    :data:`NGRAM_DRAFT_FRACTION` x T_V. gamma: int >= 1."""
    b, s, g = _bsg(batch_size, context, gamma)
    tm = _Times(st)
    return _check.out(tm.draft(b, s, g, tm.verify(b, s, g)[0]) + 0.0 * b)


def tokens_per_step(gamma, *, alpha=None, tau=None, acceptance_rates=None):
    """tau, the tokens one verification yields, by draft length; exactly one source.

    * ``alpha``: Leviathan et al. Eq. 1 (i.i.d. acceptance), via
      :func:`specnb.theory.expected_tokens_per_step`.
    * ``tau``: given (broadcast against gamma); must be in [1, gamma + 1]. A tau measured at
      one gamma does not carry over to another.
    * ``acceptance_rates``: vLLM's per-position acceptance rates r_1, r_2, ... (accepted at
      position i / drafts; non-increasing, in [0, 1]); tau(gamma) = 1 + r_1 + ... + r_gamma,
      the survival form of SpecDecode-Bench and vLLM's dynamic-SD manager (reference 4.2 and
      5.3). Needs at least max(gamma) rates.

    Raises
    ------
    ValueError
        none or several sources; alpha or a rate outside [0, 1]; tau outside [1, gamma + 1];
        rates that increase; fewer rates than gamma; gamma < 1.
    """
    from . import theory

    given = [k for k, v in (("alpha", alpha), ("tau", tau),
                            ("acceptance_rates", acceptance_rates)) if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of alpha, tau or acceptance_rates, got "
                         + (", ".join(given) if given else "none"))
    g = _check.integer("gamma", gamma, lo=1)
    if alpha is not None:
        return theory.expected_tokens_per_step(alpha, g)
    if tau is not None:
        t = _check.real("tau", tau, lo=1.0)
        t, gg = _check.broadcast(tau=t, gamma=g)
        over = t > gg + 1
        if over.any():
            i = np.flatnonzero(over.ravel())[0]
            raise ValueError(f"tau must be in [1, gamma + 1] = [1, {int(gg.ravel()[i]) + 1}] "
                             f"for gamma = {int(gg.ravel()[i])}, got {float(t.ravel()[i])!r}")
        return _check.out(t.astype(float))
    rates = acceptance_rates
    if np.ndim(rates) != 1 or isinstance(rates, (str, bytes)):
        raise TypeError("acceptance_rates must be a 1-D sequence of numbers (one per draft "
                        "position)")
    r = _check.real("acceptance_rates", list(rates), lo=0.0, hi=1.0)
    if r.size == 0:
        raise ValueError("acceptance_rates must hold at least one rate")
    up = np.flatnonzero(np.diff(r) > 0)
    if up.size:
        i = int(up[0])
        raise ValueError(f"acceptance_rates must not increase with the position (vLLM's "
                         f"per-position rates count drafts accepted at position i, which "
                         f"cannot exceed those at i - 1), got {r[i]:g} then {r[i + 1]:g} at "
                         f"positions {i + 1} and {i + 2}")
    if g.max(initial=0) > r.size:
        raise ValueError(f"gamma {int(g.max())} needs {int(g.max())} acceptance rates, got "
                         f"{r.size}")
    cum = np.concatenate([[1.0], 1.0 + np.cumsum(r)])
    return _check.out(cum[g])


def speedup(st: Setup, batch_size, context, gamma, *, alpha=None, tau=None,
            acceptance_rates=None):
    """Throughput ratio with / without speculation at a fixed batch (= per-token latency
    ratio): ``tau x T_plain / (gamma T_D + T_V + sd_overhead_ms)`` (MagicDec eq. 2 with a
    per-step overhead). Arrays broadcast (e.g. batch[:, None, None], context[None, :, None],
    gamma[None, None, :]). Give exactly one of alpha, tau, acceptance_rates
    (:func:`tokens_per_step`).

    Raises
    ------
    ValueError
        as :func:`tokens_per_step` and :func:`step_breakdown`.
    """
    b, s, g = _bsg(batch_size, context, gamma)
    tau_ = np.asarray(tokens_per_step(g.astype(np.int64), alpha=alpha, tau=tau,
                                      acceptance_rates=acceptance_rates))
    return _check.out(_Times(st).parts(b, s, g, tau_)[4])


def per_token_latency_ms(st: Setup, batch_size, context, gamma, **acceptance):
    """Time per generated token per sequence with speculation, ms:
    ``(gamma T_D + T_V + overhead) / tau`` (without: :func:`t_plain_ms`). ``acceptance``: one
    of alpha, tau, acceptance_rates."""
    b, s, g = _bsg(batch_size, context, gamma)
    tau_ = np.asarray(tokens_per_step(g.astype(np.int64), **acceptance))
    return _check.out(_Times(st).parts(b, s, g, tau_)[3] / tau_)


def verdict(speedup_value, tolerance: float = 0.0):
    """``"pays"`` when speedup > 1 + tolerance, ``"does not pay"`` when < 1 - tolerance, else
    ``"break-even"``. tolerance in [0, 1) (0.05 = 5 % counted as noise). Arrays give arrays
    of str."""
    s = _check.real("speedup", speedup_value, lo=0.0, lo_open=True)
    tol = _check.scalar_real("tolerance", tolerance, lo=0.0, hi=1.0, hi_open=True)
    out = np.where(s > 1 + tol, "pays", np.where(s < 1 - tol, "does not pay", "break-even"))
    if tol == 0.0:
        out = np.where(s > 1, "pays", "does not pay")
    return str(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------- grids
@dataclass
class Grid:
    """Model values on a batch x context x gamma grid (arrays of shape (B, S, G)).

    Attributes: ``batch_sizes``, ``contexts``, ``gammas`` (1-D int arrays); ``tau``,
    ``speedup``, ``t_plain_ms``, ``t_verify_ms``, ``t_draft_ms`` (gamma x T_D),
    ``latency_ms`` (per token with speculation), ``compute_bound`` (bool: the verification
    step's compute roofline exceeds its memory roofline); property ``bound`` gives
    ``"memory"`` / ``"compute"`` strings. The arrays are read-only broadcast views (copy one
    before changing it).
    """

    batch_sizes: np.ndarray
    contexts: np.ndarray
    gammas: np.ndarray
    tau: np.ndarray
    speedup: np.ndarray
    t_plain_ms: np.ndarray
    t_verify_ms: np.ndarray
    t_draft_ms: np.ndarray
    latency_ms: np.ndarray
    compute_bound: np.ndarray

    @property
    def bound(self) -> np.ndarray:
        return np.where(self.compute_bound, "compute", "memory")

    def best(self):
        """(best gamma, its speedup), each (B, S); gamma 0 where no gamma beats plain
        decoding (speedup then 1.0). Ties go to the smaller gamma."""
        return best_gamma(self)

    def frame(self):
        """A tidy pandas DataFrame, one row per (batch_size, context, gamma), with columns
        batch_size, context, gamma, tau, speedup, t_plain_ms, t_verify_ms, t_draft_ms,
        latency_ms, bound."""
        import pandas as pd

        B, S, G = np.meshgrid(self.batch_sizes, self.contexts, self.gammas, indexing="ij")
        return pd.DataFrame({
            "batch_size": B.ravel(), "context": S.ravel(), "gamma": G.ravel(),
            "tau": self.tau.ravel(), "speedup": self.speedup.ravel(),
            "t_plain_ms": self.t_plain_ms.ravel(), "t_verify_ms": self.t_verify_ms.ravel(),
            "t_draft_ms": self.t_draft_ms.ravel(), "latency_ms": self.latency_ms.ravel(),
            "bound": self.bound.ravel()})


def _axis(name, values, lo):
    if isinstance(values, range):
        values = list(values)
    arr = _check.integer(name, values, lo=lo)
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D list of integers, got shape "
                         f"{arr.shape}")
    return arr


def evaluate(st: Setup, batch_sizes, contexts, gammas, *, alpha=None, tau=None,
             acceptance_rates=None) -> Grid:
    """The model on every (batch, context, gamma): a :class:`Grid` of shape (B, S, G).

    ``tau`` may be a scalar or one value per gamma. A 1,024 x 64 x 8 grid takes tens of ms
    (``benchmarks/bench_serving_model.py``).

    Raises
    ------
    ValueError
        empty or non-integer axes, batch < 1, context < 0, gamma < 1; more than
        :data:`MAX_GRID_CELLS` cells; acceptance errors as :func:`tokens_per_step`.
    """
    b = _axis("batch_sizes", batch_sizes, 1)
    s = _axis("contexts", contexts, 0)
    g = _axis("gammas", gammas, 1)
    if b.size * s.size * g.size > MAX_GRID_CELLS:
        raise ValueError(f"the grid would have {b.size:,} batch sizes x {s.size:,} contexts x "
                         f"{g.size:,} gammas = {b.size * s.size * g.size:,} cells, above "
                         f"MAX_GRID_CELLS = {MAX_GRID_CELLS:,} (about 1 GB of memory); evaluate "
                         "fewer values or in parts")
    tau_g = np.asarray(tokens_per_step(g, alpha=alpha, tau=tau,
                                       acceptance_rates=acceptance_rates), dtype=float)
    tau_g = np.broadcast_to(tau_g, g.shape)
    B = b.astype(float)[:, None, None]
    S = s.astype(float)[None, :, None]
    G = g.astype(float)[None, None, :]
    T = tau_g[None, None, :]
    tp, tv, td, cost, sp, cb = _Times(st).parts(B, S, G, T)
    shape = (b.size, s.size, g.size)
    full = lambda x: np.broadcast_to(x, shape)  # noqa: E731
    return Grid(b, s, g, full(T), full(sp), full(tp), full(tv), full(td), full(cost / T),
                full(cb))


def best_gamma(grid: Grid):
    """Best draft length per (batch, context) of a :class:`Grid`: (gamma, speedup) arrays of
    shape (B, S); 0 and 1.0 where no gamma pays. Ties go to the smaller gamma."""
    i = np.argmax(grid.speedup, axis=2)
    sp = np.take_along_axis(grid.speedup, i[..., None], axis=2)[..., 0]
    gam = grid.gammas[i]
    pays = sp > 1.0
    return np.where(pays, gam, 0), np.where(pays, sp, 1.0)


def crossover_batch(st: Setup, contexts, gammas, *, max_batch: int = 1024, alpha=None,
                    tau=None, acceptance_rates=None):
    """For each context, the largest batch size B <= max_batch such that speculation (with its
    best gamma) pays at every batch 1..B. 0 = it does not pay even at batch 1; ``max_batch``
    = it still pays there (the crossover lies beyond the range). At long contexts the
    speedup can rise with batch (MagicDec), so the answer is "pays up to max_batch".

    Returns
    -------
    ndarray of int, one per context (a Python int for a scalar context).

    Raises
    ------
    ValueError
        max_batch < 1 or above :data:`MAX_BATCH_SEARCH`; as :func:`evaluate`.
    """
    grid = _batch_range_grid(st, np.atleast_1d(contexts), gammas, max_batch, alpha=alpha,
                             tau=tau, acceptance_rates=acceptance_rates)
    first = _crossover_of(grid)
    return int(first[0]) if np.ndim(contexts) == 0 else first


def _batch_range_grid(st: Setup, contexts, gammas, max_batch, hi=MAX_BATCH_SEARCH,
                      **acceptance) -> Grid:
    """:func:`evaluate` on every batch size 1..max_batch (checked: 1 to ``hi``), the grid
    behind :func:`crossover_batch`, :func:`paying_batches` and :func:`plan_schedule`."""
    mb = _check.scalar_int("max_batch", max_batch, lo=1, hi=hi)
    return evaluate(st, np.arange(1, mb + 1), contexts, gammas, **acceptance)


def _crossover_of(grid: Grid) -> np.ndarray:
    """:func:`crossover_batch` of a :func:`_batch_range_grid`, one per context."""
    _, sp = best_gamma(grid)
    losing = ~(sp > 1.0)  # (B, S)
    return np.where(losing.any(axis=0), np.argmax(losing, axis=0), grid.batch_sizes.size)


def _paying_of(grid: Grid) -> list[list[list[int]]]:
    """:func:`paying_batches` of a :func:`_batch_range_grid`, one list per context."""
    _, sp = best_gamma(grid)
    out = []
    for pays in (sp > 1.0).T:
        edges = np.diff(np.concatenate([[0], pays.astype(np.int8), [0]]))
        starts, ends = np.flatnonzero(edges == 1) + 1, np.flatnonzero(edges == -1)
        out.append([[int(a), int(e)] for a, e in zip(starts, ends)])
    return out


def _schedule_of(grid: Grid) -> list[list[int]]:
    """:func:`plan_schedule` of a :func:`_batch_range_grid`."""
    k, _ = schedule_gammas(grid)
    return schedule(grid.batch_sizes, k)


def paying_batches(st: Setup, contexts, gammas, *, max_batch: int = 1024, alpha=None,
                   tau=None, acceptance_rates=None) -> list[list[list[int]]]:
    """For each context, the batch sizes 1..max_batch at which speculation (with its best
    gamma) pays, as inclusive ``[first, last]`` ranges. :func:`crossover_batch` stops at the
    first batch that loses; at long contexts speculation can lose at batch 1 and pay from a
    larger batch (MagicDec: the speedup rises with batch once KV reads dominate), which
    ``crossover_batch`` alone reports as 0 ("does not pay even at batch 1").

    Returns
    -------
    list (one entry per context) of lists of ``[first, last]`` (empty: it pays nowhere up to
    ``max_batch``); a single list of ranges for a scalar context.

    Raises
    ------
    ValueError
        max_batch < 1; as :func:`evaluate`.
    """
    grid = _batch_range_grid(st, np.atleast_1d(contexts), gammas, max_batch, hi=None,
                             alpha=alpha, tau=tau, acceptance_rates=acceptance_rates)
    out = _paying_of(grid)
    return out[0] if np.ndim(contexts) == 0 else out


def describe_paying(ranges, max_batch: int) -> str:
    """:func:`paying_batches`' ranges for one context in words: "pays at every batch size up
    to 256", "pays up to batch 153, not at 154", "does not pay at any batch size up to 256",
    or "does not pay at batch 1-3; pays at batch 4-64"."""
    mb = _check.scalar_int("max_batch", max_batch, lo=1)
    spans = [f"{a}" if a == e else f"{a}-{e}" for a, e in ranges]
    if not ranges:
        return f"does not pay at any batch size up to {mb}"
    if ranges == [[1, mb]]:
        return f"pays at every batch size up to {mb}"
    if len(ranges) == 1 and ranges[0][0] == 1:
        return f"pays up to batch {ranges[0][1]}, not at {ranges[0][1] + 1}"
    lose = ", ".join(f"{a}" if a == e else f"{a}-{e}" for a, e in _gaps(ranges, mb))
    return f"does not pay at batch {lose}; pays at batch {', '.join(spans)}"


def _gaps(ranges, mb):
    out, nxt = [], 1
    for a, e in ranges:
        if a > nxt:
            out.append([nxt, a - 1])
        nxt = e + 1
    if nxt <= mb:
        out.append([nxt, mb])
    return out


# --------------------------------------------------------------------------- schedule
def schedule(batch_sizes, gammas, *, max_batch: int | None = None) -> list[list[int]]:
    """vLLM's ``num_speculative_tokens_per_batch_size`` from the best gamma per batch size.

    Each batch size's K applies from it up to the next listed batch size - 1; the first range
    starts at 1 (vLLM requires it, so batch sizes below the smallest listed one get its K);
    equal neighbours merge; the last range ends at ``max_batch`` (default: the largest batch
    size). K = 0 means no drafting. Ranges are inclusive and do not overlap.

    Parameters
    ----------
    batch_sizes : 1-D ints >= 1, distinct (any order)
    gammas : 1-D ints >= 0, same length
    max_batch : int >= max(batch_sizes) or None

    Returns
    -------
    list of ``[range_start, range_end, K]``

    Raises
    ------
    ValueError
        unequal lengths, repeated batch sizes, values out of range, max_batch too small.
    """
    b = _axis("batch_sizes", batch_sizes, 1)
    k = _axis("gammas", gammas, 0)
    if b.size != k.size:
        raise ValueError(f"batch_sizes and gammas must have the same length, got {b.size} and "
                         f"{k.size}")
    if np.unique(b).size != b.size:
        raise ValueError("batch_sizes must be distinct, got repeats")
    order = np.argsort(b)
    b, k = b[order], k[order]
    top = int(b[-1]) if max_batch is None else _check.scalar_int("max_batch", max_batch,
                                                                 lo=int(b[-1]))
    out: list[list[int]] = []
    for i, (start, kk) in enumerate(zip(b, k)):
        start = 1 if i == 0 else int(start)
        end = int(b[i + 1]) - 1 if i + 1 < b.size else top
        if out and out[-1][2] == int(kk):
            out[-1][1] = end
        else:
            out.append([start, end, int(kk)])
    return out


def schedule_gammas(grid: Grid):
    """Per batch size of a :class:`Grid`, the gamma for a schedule that serves every context
    of the grid: the gamma whose worst speedup over the contexts is highest, or 0 when that
    worst speedup is not above 1. With one context this is :func:`best_gamma`. Returns
    (gammas, worst-case speedups), each of shape (B,)."""
    worst = grid.speedup.min(axis=1)  # (B, G)
    i = np.argmax(worst, axis=1)
    sp = worst[np.arange(worst.shape[0]), i]
    pays = sp > 1.0
    return np.where(pays, grid.gammas[i], 0), np.where(pays, sp, 1.0)


def plan_schedule(st: Setup, contexts, gammas, *, max_batch: int, alpha=None, tau=None,
                  acceptance_rates=None) -> list[list[int]]:
    """The ``num_speculative_tokens_per_batch_size`` schedule for batch sizes 1..max_batch:
    the model on every integer batch size, :func:`schedule_gammas` over ``contexts``, then
    :func:`schedule`. Every K is one of ``gammas`` or 0. max_batch: 1 to
    :data:`MAX_BATCH_SEARCH` (ValueError outside)."""
    return _schedule_of(_batch_range_grid(st, contexts, gammas, max_batch, alpha=alpha,
                                          tau=tau, acceptance_rates=acceptance_rates))


def check_schedule(sched, num_speculative_tokens: int | None = None) -> list[list[int]]:
    """Check a schedule against vLLM's rules and return it normalized (sorted, ints).

    Rules (``validate_and_normalize_dynamic_sd_schedule`` in ``vllm/v1/spec_decode/dynamic/
    utils.py`` @ a6f6bb1d and the newer docs; reference section 5.2): a non-empty list of
    3-item entries of integers; bounds >= 1 and start <= end; K >= 0 (0 = no drafting);
    sorted ranges do not overlap; the first range starts at 1; every K <=
    ``num_speculative_tokens`` when given (the newer docs; the code clamps silently); and
    ``num_speculative_tokens`` > 0. Gaps are allowed (vLLM carries the previous K forward).

    Raises
    ------
    ValueError
        the first rule broken, naming the entry.
    """
    if isinstance(sched, np.ndarray):
        sched = sched.tolist()  # integer arrays give ints; float arrays stay refused below
    if not isinstance(sched, (list, tuple)) or not sched:
        raise ValueError(f"num_speculative_tokens_per_batch_size must be a non-empty list of "
                         f"[range_start, range_end, K], got {sched!r}")
    rows = []
    for row in sched:
        if (not isinstance(row, (list, tuple)) or len(row) != 3 or any(
                isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in row)):
            raise ValueError(f"each entry must be [range_start, range_end, K] with integers, "
                             f"got {row!r}")
        a, e, kk = (int(x) for x in row)
        if a < 1 or e < 1:
            raise ValueError(f"batch-size bounds must be positive, got {list(row)}")
        if a > e:
            raise ValueError(f"range_start must be <= range_end, got {list(row)}")
        if kk < 0:
            raise ValueError(f"K must be >= 0 (0 = no drafting), got {list(row)}")
        rows.append([a, e, kk])
    rows.sort()
    if rows[0][0] != 1:
        raise ValueError(f"the first range must start at batch size 1, got {rows[0]}")
    for prev, cur in zip(rows, rows[1:]):
        if cur[0] <= prev[1]:
            raise ValueError(f"ranges must not overlap, got {prev} and {cur}")
    if num_speculative_tokens is not None:
        nst = _check.scalar_int("num_speculative_tokens", num_speculative_tokens, lo=1)
        over = [r for r in rows if r[2] > nst]
        if over:
            raise ValueError(f"every K must be <= num_speculative_tokens = {nst}, got {over[0]}")
    return rows


def schedule_lookup(sched, num_speculative_tokens: int, max_num_seqs: int) -> np.ndarray:
    """The K vLLM uses at each batch size 1..max_num_seqs (index 0 = batch 1), as
    ``build_dynamic_sd_schedule_lookup`` builds it: gaps carry the previous K forward, batch
    sizes past the last range get its K, ranges past max_num_seqs are cut, and every K is
    clamped to num_speculative_tokens. The table is
    :func:`specnb.vllm.schedule_lookup`'s without its unused element 0, as an array.

    Raises
    ------
    ValueError
        as :func:`check_schedule` (without the K bound, which vLLM's code clamps);
        num_speculative_tokens or max_num_seqs < 1.
    """
    from .vllm.schedule import schedule_lookup as vllm_lookup

    rows = check_schedule(sched)
    nst = _check.scalar_int("num_speculative_tokens", num_speculative_tokens, lo=1)
    top = _check.scalar_int("max_num_seqs", max_num_seqs, lo=1)
    return np.array(vllm_lookup(rows, nst, top)[1:], dtype=np.int64)


def schedule_config(sched, method: str, *, model: str | None = None, **options) -> dict | None:
    """A ``speculative_config`` with the schedule, built by
    :func:`specnb.vllm.speculative_config` (so vLLM's other rules are checked):
    ``num_speculative_tokens`` = the largest K, ``num_speculative_tokens_per_batch_size`` =
    the schedule. None when every K is 0 (do not turn speculation on). Turning the schedule on
    has a measured cost even at K = 0 (:data:`SCHEDULE_TAX`); the feature is disabled under
    data parallelism > 1 (vLLM docs).

    Raises
    ------
    ValueError
        an invalid schedule (:func:`check_schedule`); a config vLLM would reject (e.g. eagle
        without a ``model``).
    """
    from .vllm import speculative_config

    rows = check_schedule(sched)
    kmax = max(r[2] for r in rows)
    if kmax == 0:
        return None
    if all(r[2] == kmax for r in rows):
        return speculative_config(method, kmax, model=model, **options)
    return speculative_config(method, kmax, model=model,
                              num_speculative_tokens_per_batch_size=rows, **options)


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


def setup_config(st: Setup, sched, *, checkpoint: str | None = None):
    """The vLLM ``speculative_config`` for a setup and a schedule, with notes.

    Method and ``model`` follow the draft: ``ngram`` (with prompt_lookup_min 2 and max 5, the
    vLLM docs' example), ``suffix``, ``mtp`` (no model; a note that the target checkpoint must
    carry MTP layers), ``eagle`` / ``eagle3`` (``checkpoint``,
    else the placeholder ``<eagle3-checkpoint>`` to replace), a draft model (its Hugging Face
    id or folder), ``self`` (``draft_model`` with the target itself; vLLM has no sparse-KV
    self-draft, so a KV budget cannot be expressed).

    Returns
    -------
    (config or None, notes): None when the schedule never drafts (K = 0 everywhere).

    Raises
    ------
    ValueError
        an invalid schedule or a config vLLM would reject.
    """
    from .vllm import NGRAM_OPTIONS

    d = st.draft
    notes = []
    opts: dict = {}
    model = None
    if d.method == "ngram":
        opts = dict(NGRAM_OPTIONS)
    elif d.kind == "head" and d.method != "mtp":
        model = checkpoint or f"<{d.method}-checkpoint>"
        if checkpoint is None:
            notes.append(f"replace <{d.method}-checkpoint> with the {d.method} head trained "
                         f"for {st.target.name}")
    elif d.method == "mtp":
        notes.append(f"mtp needs MTP layers in the target checkpoint (DeepSeek-V3, GLM-4.5, "
                     f"MiMo and similar ship them); vLLM cannot add them, so check that "
                     f"{st.target.name} has them before serving this line")
    elif d.kind == "model":
        model = checkpoint or model_id(d.arch)
    elif d.kind == "self":
        model = checkpoint or model_id(st.target)
        notes.append("vLLM has no sparse-KV self-draft: with method draft_model the target "
                     "drafts for itself with its full KV cache"
                     + (f"; the modelled KV budget {d.kv_budget} is not expressible"
                        if d.kv_budget else ""))
    cfg = schedule_config(sched, d.method, model=model, **opts)
    for a in (st.target, d.arch if d.kind == "model" and checkpoint is None else None):
        if a is not None and a.source.endswith(".json") \
                and os.path.basename(a.source) != "config.json":
            notes.append(f"vLLM loads a model folder's config.json; {a.source} has another "
                         f"name, so the folder {model_id(a)} named here must hold it as "
                         "config.json (with the weights)")
    if cfg is not None and "num_speculative_tokens_per_batch_size" in cfg:
        lo, hi = SCHEDULE_TAX["tpot_increase"]
        notes.append(f"turning the schedule on costs time even at K = 0: TPOT +{100 * lo:.1f} % "
                     f"at concurrency 2 and +{100 * hi:.1f} % at 189 in one report "
                     f"({SCHEDULE_TAX['source']}); the model does not include it, so compare "
                     "against a static num_speculative_tokens; the schedule is disabled "
                     "under data parallelism > 1")
    if cfg is None:
        notes.append("no gamma pays at any batch size: leave speculative decoding off")
    return cfg, notes


# --------------------------------------------------------------------------- calibration
MEASURED_COLUMNS = ("role", "batch_size", "context", "query_tokens", "ms")


def read_measurements(source):
    """Read measured step times: a CSV path, a file object or a DataFrame with columns
    ``role`` (``target`` or ``draft``), ``batch_size`` (>= 1), ``context`` (>= 0, tokens in
    each sequence's KV cache; for a draft with a KV budget give the full context, the budget
    is applied by the model), ``query_tokens`` (>= 1) and ``ms`` (> 0, one forward). Other
    columns are kept.

    Raises
    ------
    ValueError
        a missing or repeated column (named), a row with more fields than the header, an
        unknown role, a non-integer or out-of-range count (above 2**53 included), a
        non-positive or non-numeric time (row number given), no rows, a folder.
    FileNotFoundError
        a path that does not exist.
    """
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        df = source.copy()
        where = "measurements"
    else:
        where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "measurements"
        if isinstance(source, (str, os.PathLike)):
            if os.path.isdir(source):
                raise ValueError(f"calibration CSV {where!r} is a folder; give the CSV file")
            if not os.path.exists(source):
                raise FileNotFoundError(f"calibration CSV {where!r} does not exist")
        try:
            df = pd.read_csv(source)
        except pd.errors.EmptyDataError:
            raise ValueError(f"{where}: empty file; expected a CSV with columns "
                             f"{', '.join(MEASURED_COLUMNS)}") from None
        except pd.errors.ParserError as exc:
            raise ValueError(f"{where}: not a regular CSV ({str(exc).strip()}); every row "
                             f"needs as many fields as the header") from None
        except UnicodeDecodeError as exc:
            raise _check.utf8_error(where, exc, "give a CSV file") from None
        if not isinstance(df.index, pd.RangeIndex):  # pandas made the surplus field an index
            raise ValueError(f"{where}: a row has more fields than the header "
                             f"({len(df.columns)}: {', '.join(map(str, df.columns))}); every "
                             "row needs as many fields as the header, which is the first line")
    df.columns = [str(c).strip() for c in df.columns]
    twice = sorted({c for c in df.columns if df.columns.tolist().count(c) > 1}
                   | {c for c in MEASURED_COLUMNS if f"{c}.1" in df.columns})
    if twice:
        raise ValueError(f"{where}: column(s) {', '.join(twice)} appear more than once in the "
                         "header; keep one")
    missing = [c for c in MEASURED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}; a calibration CSV "
                         f"needs {', '.join(MEASURED_COLUMNS)} (got {', '.join(df.columns)})")
    if df.empty:
        raise ValueError(f"{where}: no rows")
    df = df.reset_index(drop=True)
    raw = df.copy()

    def shown(i, col):
        v = raw.loc[i, col]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "a missing value (an empty cell, NA or nan)"
        return repr(v.item() if isinstance(v, np.generic) else v)

    bad = df.index[df["role"].isna()]
    df["role"] = df["role"].astype(str).str.strip().str.lower()
    bad = bad.union(df.index[~df["role"].isin(["target", "draft"])])
    if len(bad):
        i = bad[0]
        raise ValueError(f"{where}: row {i + 2}: role must be 'target' or 'draft', got "
                         f"{shown(i, 'role')}")
    for col, lo in (("batch_size", 1), ("context", 0), ("query_tokens", 1)):
        vals = pd.to_numeric(df[col], errors="coerce")
        bad = df.index[vals.isna() | (vals < lo) | (vals > _check.MAX_EXACT_INT)
                       | (vals != vals.round())]
        if len(bad):
            i = bad[0]
            raise ValueError(f"{where}: row {i + 2}: {col} must be an integer >= {lo} "
                             f"(at most 2**53), got {shown(i, col)}")
        df[col] = vals.astype(np.int64)
    ms = pd.to_numeric(df["ms"], errors="coerce")
    bad = df.index[ms.isna() | ~(ms > 0) | ~np.isfinite(ms)]
    if len(bad):
        i = bad[0]
        raise ValueError(f"{where}: row {i + 2}: ms must be a positive time in milliseconds, "
                         f"got {shown(i, 'ms')}")
    df["ms"] = ms.astype(float)
    return df.reset_index(drop=True)


@dataclass
class Calibration:
    """Result of :func:`calibrate`: ``setup`` (the input setup with fitted efficiencies),
    ``report`` (a DataFrame: one row per measurement with ``predicted_ms`` and
    ``relative_error``), ``fitted`` (role -> names of the fields fitted) and ``notes``."""

    setup: Setup
    report: object
    fitted: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


_FIT_ORDER = ("fixed", "bandwidth", "compute", "token")


def _role_terms(st: Setup, role: str, df):
    """Per-row arrays for a role: memory bytes, FLOPs per branch, tokens, comm bytes."""
    if role == "target":
        arch, dtype, budget = st.target, st.dtype, None
    else:
        arch = st.draft.arch
        dtype = st.draft.dtype or st.draft_dtype or st.dtype
        budget = st.draft.kv_budget
    unit = Efficiency(1.0, 1.0, 0.0, 0.0, 0.0)
    br = step_breakdown(arch, st.gpu, df["batch_size"].to_numpy(), df["context"].to_numpy(),
                        df["query_tokens"].to_numpy(), dtype=dtype, kv_dtype=st.kv_dtype,
                        gpus=st.gpus, efficiency=unit, kv_budget=budget)
    # at unit efficiency: t_w, t_kv (ms at peak bandwidth), t_lin, t_att (ms at peak FLOP/s)
    g = st.gpu
    n = st.gpus
    t_w = br["weight_bytes"] / g.bandwidth * 1e3
    t_kv = br["kv_bytes"] / g.bandwidth * 1e3
    t_lin = br["linear_flops"] / g.flops(dtype) * 1e3
    t_att = br["attention_flops"] / g.flops(dtype) * 1e3
    tokens = (df["batch_size"] * df["query_tokens"]).to_numpy(float)
    comm_bytes = br["t_comm_ms"]  # bytes part only (allreduce_us = 0 here)
    return t_w, t_kv, t_lin, t_att, tokens, comm_bytes, n


#: Fitted efficiencies outside this range are treated as not determined by the data: the
#: factor is held at its starting value and the others refitted.
FIT_EFFICIENCY_RANGE = (0.05, 1.5)


def _fit_role(terms, y, start: Efficiency, free: set):
    """Fit (1/bandwidth, 1/compute, fixed_ms, token_us) by least squares on relative errors
    (rows weighted by 1/ms) with the roofline's active branches held fixed, re-deciding the
    branches until they stop changing (an active-set iteration; each solve is
    ``numpy.linalg.lstsq``). A cost that comes out negative is held at 0, an efficiency
    outside :data:`FIT_EFFICIENCY_RANGE` at its starting value, and the rest refitted."""
    t_w, t_kv, t_lin, t_att, tokens, comm, _ = terms
    lo, hi = 1.0 / FIT_EFFICIENCY_RANGE[1], 1.0 / FIT_EFFICIENCY_RANGE[0]
    known = {"fixed": start.fixed_ms, "bandwidth": 1.0 / start.bandwidth,
             "compute": 1.0 / start.compute, "token": start.token_us * 1e-3}
    held: set = set()
    prev = None
    wts = 1.0 / y
    for _ in range(50):
        lin_mem = t_w * known["bandwidth"] >= t_lin * known["compute"]
        att_mem = t_kv * known["bandwidth"] >= t_att * known["compute"]
        key = (lin_mem.tobytes(), att_mem.tobytes())
        if key == prev:
            break
        prev = key
        o = 1.0 - start.overlap
        cols = {"fixed": np.ones_like(y),
                "bandwidth": (np.where(lin_mem, 1.0, o) * t_w + np.where(att_mem, 1.0, o) * t_kv),
                "compute": (np.where(lin_mem, o, 1.0) * t_lin + np.where(att_mem, o, 1.0) * t_att),
                "token": tokens}
        # a column that is all zeros (e.g. never compute-bound) cannot be fitted
        active = [k for k in _FIT_ORDER if k in free and k not in held
                  and np.any(cols[k] != 0)]
        trial = dict(known)
        while active:
            rhs = y - comm - sum(cols[k] * trial[k] for k in _FIT_ORDER if k not in active)
            A = np.column_stack([cols[k] for k in active])
            coef, *_ = np.linalg.lstsq(A * wts[:, None], rhs * wts, rcond=None)
            bad = {}
            for k, c in zip(active, coef):
                if k in ("fixed", "token") and c < 0:
                    bad[k] = -c
                elif k in ("bandwidth", "compute") and not lo <= c <= hi:
                    bad[k] = max(lo / c if c > 0 else np.inf, c / hi)
            if not bad:
                trial.update({k: float(c) for k, c in zip(active, coef)})
                break
            drop = max(bad, key=bad.get)
            active.remove(drop)
            held.add(drop)
            if drop in ("fixed", "token"):
                trial[drop] = 0.0
            else:
                trial[drop] = known[drop]
        known = trial
    return (1.0 / known["bandwidth"], 1.0 / known["compute"], known["fixed"],
            known["token"] * 1e3)


#: Overlap values :func:`calibrate` tries when ``"overlap"`` is fitted.
OVERLAP_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)

_FIT_FIELDS = {"bandwidth": "bandwidth", "compute": "compute", "fixed_ms": "fixed",
               "token_us": "token", "overlap": None}


def _role_time(st: Setup, role: str, rows) -> np.ndarray:
    kw = _target_kw(st) if role == "target" else _draft_kw(st)
    arch = st.target if role == "target" else st.draft.arch
    return step_breakdown(arch, st.gpu, rows["batch_size"].to_numpy(),
                          rows["context"].to_numpy(), rows["query_tokens"].to_numpy(),
                          **kw)["time_ms"]


def _label_notes(st: Setup, df) -> list[str]:
    """Notes where a measurement file's optional ``model`` / ``gpu`` columns name another model
    or GPU than the setup it calibrates (the fit goes ahead: the columns are labels)."""
    notes = []
    if "gpu" in df.columns:
        names = {str(v) for v in df["gpu"].dropna().unique()}
        aliases = {k.replace(" ", "-") for k, rec in _catalogue("gpus", "gpu").items()
                   if rec["gpu"] == st.gpu.name}
        other = sorted(n for n in names
                       if not any(a in n.lower().replace(" ", "-") for a in aliases))
        if other:
            notes.append(f"the measurements name GPU {', '.join(other)}, the setup "
                         f"{st.gpu.name}: the fitted efficiencies are that GPU's")
    if "model" in df.columns:
        for role, want in (("target", st.target.name),
                           ("draft", st.draft.arch.name if st.draft.arch is not None else None)):
            got = sorted({str(v) for v in df.loc[df["role"] == role, "model"].dropna().unique()})
            if want is not None and got and any(g.lower() != want.lower() for g in got):
                notes.append(f"the {role} rows were measured on {', '.join(got)}, the setup's "
                             f"{role} is {want}: its efficiencies are fitted to another model")
    return notes


def calibrate(st: Setup, measurements, *, fit=("bandwidth", "compute", "fixed_ms", "token_us",
                                                 "overlap")) -> Calibration:
    """Fit the efficiency factors and fixed costs of each role to measured step times.

    For each role present (``target``; ``draft`` for model, self and EAGLE/MTP drafts), the
    step time of :func:`step_breakdown` is linear in 1/bandwidth, 1/compute, fixed_ms and
    token_us once it is known which side of each roofline a row sits on; the fit alternates
    between a weighted least-squares solve (relative errors; numpy ``lstsq``) and re-deciding
    the sides. ``overlap`` is chosen from :data:`OVERLAP_GRID` by the smallest squared
    relative error. The all-reduce latency is folded into ``fixed_ms`` (``allreduce_us``
    becomes 0; the per-byte term stays). A factor the rows cannot determine (e.g. compute when
    no row does much arithmetic) keeps its value from ``st``; so does an efficiency that would
    fall outside :data:`FIT_EFFICIENCY_RANGE`. A fitted efficiency above 1 is kept and reported
    in ``notes`` (the datasheet understates the hardware, or the shape or units are wrong).

    A CSV measured with transformers on one GPU (e.g. a Llama-3.1-8B-shaped model in bf16 on
    an H200, ``role`` target, plain and multi-token forwards) works directly:
    ``calibrate(setup("H200", "Llama-3.1-8B", "eagle3"), "steps.csv")``; target rows alone
    calibrate the target and leave the draft's defaults.

    Parameters
    ----------
    st : Setup
    measurements : CSV path, file object or DataFrame (see :func:`read_measurements`)
    fit : which fields to fit: any of bandwidth, compute, fixed_ms, token_us, overlap

    Returns
    -------
    Calibration

    Raises
    ------
    ValueError
        a malformed CSV (:func:`read_measurements`); draft rows for an n-gram / suffix draft
        (no model to time); an unknown name in ``fit``.
    """
    df = read_measurements(measurements)
    if isinstance(fit, str):
        fit = (fit,)
    for f in fit:
        _check.choice("fit", f, _FIT_FIELDS)
    free = {_FIT_FIELDS[f] for f in fit} - {None}
    out_setup = st
    fitted, notes = {}, _label_notes(st, df)
    for role in ("target", "draft"):
        rows = df[df["role"] == role]
        if rows.empty:
            continue
        if role == "draft" and st.draft.kind == "none":
            raise ValueError(f"the measurements hold draft rows but the draft is "
                             f"{st.draft.method!r}, which has no model to time; drop them")
        base = st.target_efficiency if role == "target" else st.draft_efficiency
        terms = _role_terms(st, role, rows)
        layers = (st.target if role == "target" else st.draft.arch).n_layers
        latency = 2 * layers * base.allreduce_us * 1e-3 if st.gpus > 1 else 0.0
        y = rows["ms"].to_numpy(float)
        best = None
        for ov in (OVERLAP_GRID if "overlap" in fit else (base.overlap,)):
            start = dataclasses.replace(base, fixed_ms=base.fixed_ms + latency, overlap=ov)
            bw, cp, fixed, tok = _fit_role(terms, y, start, free)
            eff = Efficiency(bandwidth=bw, compute=cp, fixed_ms=max(fixed, 0.0),
                             token_us=max(tok, 0.0), allreduce_us=0.0, overlap=ov)
            trial = dataclasses.replace(
                out_setup, **{f"{role}_efficiency": eff})
            err = float(np.sum((_role_time(trial, role, rows) / y - 1.0) ** 2))
            if best is None or err < best[0] - 1e-12:
                best = (err, eff)
        eff = best[1]
        for nm in ("bandwidth", "compute"):
            v = getattr(eff, nm)
            if v > 1.0:
                notes.append(f"{role}: fitted {nm} efficiency {v:.2f} is above 1 (faster than "
                             "the datasheet): check the GPU, the model shape and the units")
        fitted[role] = sorted(fit)
        out_setup = dataclasses.replace(out_setup, **{f"{role}_efficiency": eff})
        points = len(rows[["batch_size", "context", "query_tokens"]].drop_duplicates())
        if points < 5:
            notes.append(f"{role}: only {points} distinct (batch_size, context, query_tokens) "
                         f"points ({len(rows)} rows) for up to 5 parameters: the fit is "
                         "underdetermined; unfitted directions keep their defaults")
    return Calibration(out_setup, predict_measurements(out_setup, df), fitted, notes)


def predict_measurements(st: Setup, measurements):
    """The model's step time for each measured row, beside the measurement.

    Use it to check a calibration on rows it was not fitted on (fit on small batches or short
    contexts with :func:`calibrate`, then predict the rest with the fitted ``.setup``).

    Parameters
    ----------
    st : Setup (its target and draft efficiencies are used for the rows of each role)
    measurements : CSV path, file object or DataFrame (see :func:`read_measurements`)

    Returns
    -------
    DataFrame: the rows with ``predicted_ms`` and ``relative_error`` (predicted / measured - 1)
    added.

    Raises
    ------
    ValueError
        a malformed CSV; draft rows for a draft with no model (n-gram / suffix).
    """
    df = read_measurements(measurements).reset_index(drop=True)
    if st.draft.arch is None and (df["role"] == "draft").any():
        raise ValueError(f"measurements: draft rows given, but the draft {st.draft.name!r} "
                         "has no model to time (n-gram / suffix)")
    pred = np.full(len(df), np.nan)
    for role in ("target", "draft"):
        idx = df.index[df["role"] == role]
        if len(idx):
            pred[idx] = _role_time(st, role, df.loc[idx])
    report = df.copy()
    report["predicted_ms"] = pred
    report["relative_error"] = pred / df["ms"].to_numpy() - 1.0
    return report


# --------------------------------------------------------------------------- reference tables
#: MagicDec tables in ``data/magicdec_steps.csv`` (arXiv 2408.11049): Table 2 and appendix
#: Table 4 (Llama-3.1-8B, SnapKV self-speculation, 8x H100), appendix Table 3 (a) and (b)
#: (LLaMA-2-7B-32K with a TinyLlama-1.1B draft or itself, StreamingLLM KV 512, 8x A100).
MAGICDEC_TABLES = ("table2", "table3a", "table3b", "table4")

#: SnapKV draft budget assumed where MagicDec does not print it (Tables 2 and 4): the best
#: SnapKV budget of P section 5.2 (2049 tokens). An assumption, stated wherever it is used.
MAGICDEC_SNAPKV_BUDGET = 2049

_HARDWARE = {"8x H100": ("H100-SXM", 8), "8x A100": ("A100-SXM-80GB", 8)}


def magicdec_table(table_id: str):
    """Rows of one MagicDec table (``data/magicdec_steps.csv``), one per (context, batch,
    gamma): gamma_t_draft_ms, t_verify_ms, omega (= tau), t_ar_ms, t_sd_ms, speedup as
    printed. table_id: one of :data:`MAGICDEC_TABLES`."""
    _check.choice("table_id", table_id, MAGICDEC_TABLES)
    df = _load("magicdec_steps")
    return df[df["table_id"] == table_id].reset_index(drop=True)


def magicdec_setup(table_id: str, **kwargs) -> Setup:
    """The :class:`Setup` of a MagicDec table: GPU and TP from its hardware, target and draft
    from its columns, the draft's KV budget (512 printed for Table 3; assumed
    :data:`MAGICDEC_SNAPKV_BUDGET` for Tables 2 and 4). ``kwargs`` go to :func:`setup`
    (e.g. efficiencies)."""
    return _magicdec_setup(magicdec_table(table_id), **kwargs)


def _magicdec_setup(rows, **kwargs) -> Setup:
    """:func:`magicdec_setup` from the rows of its table (read once by the caller)."""
    r = rows.iloc[0]
    g, n = _HARDWARE[r["hardware"]]
    budget = r["draft_kv_budget"]
    budget = int(budget) if str(budget).strip() not in ("", "nan") else MAGICDEC_SNAPKV_BUDGET
    return setup(g, r["target"], r["draft"], gpus=n, draft_kv_budget=budget, **kwargs)


def table_measurements(rows):
    """Turn rows of a MagicDec table into step-time measurements (the calibration format):
    per row a target step at q = 1 (T_AR), a target step at q = gamma + 1 (T_V) and a draft
    step at q = 1 (gamma T_D / gamma). Columns: role, batch_size, context, query_tokens, ms,
    plus ``row`` (the table row index)."""
    import pandas as pd

    out = []
    for i, r in rows.iterrows():
        b, s, g = int(r["batch_size"]), int(r["context"]), int(r["gamma"])
        out.append(("target", b, s, 1, float(r["t_ar_ms"]), i))
        out.append(("target", b, s, g + 1, float(r["t_verify_ms"]), i))
        out.append(("draft", b, s, 1, float(r["gamma_t_draft_ms"]) / g, i))
    return pd.DataFrame(out, columns=[*MEASURED_COLUMNS, "row"])


def predict_table(st: Setup, rows):
    """Model predictions for MagicDec-style rows, with the printed tau (Omega) as the
    acceptance: columns t_ar_ms, t_verify_ms, gamma_t_draft_ms, speedup (predicted), and
    ``speedup_printed``, ``relative_error`` (predicted / printed - 1)."""
    import pandas as pd

    b = rows["batch_size"].to_numpy(float)
    s = rows["context"].to_numpy(float)
    g = rows["gamma"].to_numpy(float)
    tau = rows["omega"].to_numpy(float)
    tp, tv, td, cost, sp, _ = _Times(st).parts(b, s, g, tau)
    out = pd.DataFrame({"batch_size": rows["batch_size"], "context": rows["context"],
                        "gamma": rows["gamma"], "tau": tau, "t_ar_ms": tp,
                        "t_verify_ms": tv, "gamma_t_draft_ms": td, "speedup": sp,
                        "speedup_printed": rows["speedup"].to_numpy(float)})
    out["relative_error"] = out["speedup"] / out["speedup_printed"] - 1.0
    return out


def fit_and_predict(table_id: str, *, max_train_batch: int | None = None,
                    max_train_context: int | None = None):
    """Calibrate on some rows of a MagicDec table and predict all of them.

    Rows with batch_size <= ``max_train_batch`` and context <= ``max_train_context`` (either
    limit may be None) are turned into step-time measurements (:func:`table_measurements`) and
    fitted (:func:`calibrate`); every row is then predicted with its printed tau.

    Returns
    -------
    (Calibration, DataFrame): the predictions of :func:`predict_table` plus a boolean column
    ``fitted`` (the row was used in the fit).

    Raises
    ------
    ValueError
        unknown table; no row or every row selected for the fit (nothing to predict).
    """
    rows = magicdec_table(table_id)
    train = np.ones(len(rows), dtype=bool)
    if max_train_batch is not None:
        train &= rows["batch_size"].to_numpy() <= _check.scalar_int(
            "max_train_batch", max_train_batch, lo=1)
    if max_train_context is not None:
        train &= rows["context"].to_numpy() <= _check.scalar_int(
            "max_train_context", max_train_context, lo=0)
    if not train.any() or train.all():
        raise ValueError(f"{table_id}: the limits select {int(train.sum())} of {len(rows)} rows "
                         "for the fit; leave some rows to fit and some to predict")
    cal = calibrate(_magicdec_setup(rows),
                    table_measurements(rows[train])[list(MEASURED_COLUMNS)])
    pred = predict_table(cal.setup, rows)
    pred["fitted"] = train
    return cal, pred


#: EAGLE-3 batch tables in ``data/`` (throughput ratio by batch size, no tau printed).
EAGLE3_BATCH_TABLES = ("eagle3_table3_sglang_batch", "eagle3_table5_vllm_batch")


def batch_table_comparison(name: str, gpu_name, *, context: int = 512, alpha=None, tau=None,
                           acceptance_rates=None):
    """An EAGLE-3 batch table (Table 3, SGLang on 1x H100, chain 3; Table 5, vLLM, chain 2,
    hardware stated inconsistently) beside the model for Llama-3.1-8B on ``gpu_name``.

    The tables print no tau and no context, so both are assumptions the caller states: the
    acceptance (one of alpha, tau, acceptance_rates, applied to both EAGLE and EAGLE-3) and
    ``context`` (default 512 tokens, roughly an MT-bench turn). EAGLE rows use an ``eagle``
    draft, EAGLE-3 rows ``eagle3`` (the same one-layer head in this model).

    Returns
    -------
    DataFrame: method, batch_size, gamma (the chain length), printed (throughput ratio),
    model (predicted speedup), relative_error.

    Raises
    ------
    ValueError
        unknown table or GPU; acceptance errors as :func:`tokens_per_step`.
    """
    import pandas as pd

    _check.choice("name", name, EAGLE3_BATCH_TABLES)
    df = _load(name)
    out = []
    for method, part in df.groupby("method", sort=False):
        st = setup(gpu_name, "Llama-3.1-8B", "eagle3" if method == "EAGLE-3" else "eagle")
        gamma = int(part["chain_length"].iloc[0])
        sp = speedup(st, part["batch_size"].to_numpy(), context, gamma, alpha=alpha, tau=tau,
                     acceptance_rates=acceptance_rates)
        out.append(pd.DataFrame({"method": method, "batch_size": part["batch_size"].to_numpy(),
                                 "gamma": gamma,
                                 "printed": part["throughput_ratio"].to_numpy(float),
                                 "model": np.atleast_1d(sp)}))
    res = pd.concat(out, ignore_index=True)
    res["relative_error"] = res["model"] / res["printed"] - 1.0
    return res
