"""Mixture-of-experts and multi-head latent attention (MLA): parameters, the experts one step
reads, KV bytes, the MTP module (issue 16). Pure, torch-free; the functions take any shape with
the attributes of :class:`specnb.serving.Architecture` (``n_layers``, ``hidden_size``,
``n_heads``, ``n_kv_heads``, ``head_dim``, ``intermediate_size``, ``vocab_size``,
``tie_word_embeddings``, ``attention_bias``, ``qk_norm``, ``moe``, ``mla``).

A step over N tokens reads the weights of the experts those tokens route to. With E routed
experts, k chosen per token and routing that spreads tokens uniformly and independently over
the experts, the expected number of distinct experts one layer reads is
``E (1 - (1 - k/E)^N)`` (each expert is missed by one token with probability 1 - k/E).
Real routers are skewed (popular experts, correlated tokens): fewer distinct experts are
touched, so the formula is an UPPER BOUND on the expert bytes of a step (and on how much
more verification of gamma + 1 tokens reads than a one-token step). Shared experts, the
leading dense layers, attention, the router and the LM head are read by every step.

Shapes follow the Hugging Face config names (DeepSeek-V3 / Kimi-K2: ``n_routed_experts``,
``num_experts_per_tok``, ``n_shared_experts``, ``moe_intermediate_size``,
``first_k_dense_replace``, ``kv_lora_rank``, ``q_lora_rank``, ``qk_nope_head_dim``,
``qk_rope_head_dim``, ``v_head_dim``, ``num_nextn_predict_layers``; Qwen3-MoE:
``num_experts``; Mixtral / gpt-oss: ``num_local_experts``, experts of ``intermediate_size``).
Source of the formulas: ``shared/reference/engines.md`` section 2 item 6; the MLA cache is the
compressed latent (kv_lora_rank) plus the decoupled rope key (qk_rope_head_dim) per layer
(DeepSeek-V2/V3 reports; vLLM's MLA backends cache exactly these 576 values for DeepSeek-V3).

Units: parameters are counts; bytes are bytes; arrays broadcast with numpy's rules.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check, limits

__all__ = ["MoE", "MLA", "experts_touched", "expert_params", "attention_params",
           "param_counts", "step_weight_params", "matmul_params_per_token",
           "attention_flops_per_token_per_context", "kv_bytes_per_token", "kv_split_ways",
           "mtp_params", "moe_from_config", "EngineStep", "ROUTING_SKEW_RANGE",
           "DEFAULT_ROUTING_SKEW", "experts_touched_skewed", "moe_layers"]


@dataclass(frozen=True)
class MoE:
    """The mixture-of-experts part of a model's shape.

    Attributes
    ----------
    n_routed_experts : int >= 1, E (routed experts per MoE layer)
    experts_per_token : int in [1, E], k (experts each token is routed to)
    n_shared_experts : int >= 0, experts every token uses (DeepSeek-V3: 1; Qwen3, Mixtral: 0)
    moe_intermediate_size : int >= 1, width of one expert's gated MLP (3 matrices)
    first_k_dense_layers : int >= 0, leading layers with a dense MLP of the model's
        ``intermediate_size`` instead of experts (DeepSeek-V3: 3, Kimi-K2: 1)
    """

    n_routed_experts: int
    experts_per_token: int
    n_shared_experts: int = 0
    moe_intermediate_size: int = 1
    first_k_dense_layers: int = 0

    def __post_init__(self):
        e = _check.scalar_int("n_routed_experts", self.n_routed_experts, lo=1)
        _check.scalar_int("experts_per_token", self.experts_per_token, lo=1, hi=e)
        _check.scalar_int("n_shared_experts", self.n_shared_experts, lo=0)
        _check.scalar_int("moe_intermediate_size", self.moe_intermediate_size, lo=1)
        _check.scalar_int("first_k_dense_layers", self.first_k_dense_layers, lo=0)


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2).

    Attributes: ``kv_lora_rank`` (the cached latent, 512), ``qk_rope_head_dim`` (the cached
    decoupled rope key, 64), ``qk_nope_head_dim`` (128), ``v_head_dim`` (128),
    ``q_lora_rank`` (1536; None = a full-rank q projection). All ints >= 1.
    """

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None

    def __post_init__(self):
        for name in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            _check.scalar_int(name, getattr(self, name), lo=1)
        if self.q_lora_rank is not None:
            _check.scalar_int("q_lora_rank", self.q_lora_rank, lo=1)


def experts_touched(n_experts, experts_per_token, tokens):
    """Expected distinct routed experts one MoE layer reads for ``tokens`` tokens, uniform
    independent routing: ``E (1 - (1 - k/E)^N)``.

    Limits: N = 0 gives 0, N = 1 gives k, N -> infinity gives E; k = E gives E for N >= 1.
    An UPPER BOUND for skewed routing (real routers concentrate tokens on fewer experts).

    Parameters
    ----------
    n_experts : int or array >= 1, E
    experts_per_token : int or array in [1, E], k
    tokens : int, float or array >= 0, N (all query tokens of the step: B x q; a fractional
        mean, e.g. B (1 + M gamma) with a proposal rate M, is allowed)

    Returns
    -------
    float or ndarray (broadcast shape), experts in [0, E].

    Raises
    ------
    ValueError
        E < 1, k < 1 or k > E, N < 0, fractional E or k; shapes that do not broadcast.
    """
    e = _check.integer("n_experts", n_experts, lo=1).astype(float)
    k = _check.integer("experts_per_token", experts_per_token, lo=1).astype(float)
    n = _check.real("tokens", tokens, lo=0.0)
    e, k, n = _check.broadcast(n_experts=e, experts_per_token=k, tokens=n)
    if (k > e).any():
        i = np.flatnonzero((k > e).ravel())[0]
        raise ValueError(f"experts_per_token must be <= n_experts, got {int(k.ravel()[i])} > "
                         f"{int(e.ravel()[i])}")
    # 1 - (1 - p)^N computed as -expm1(N log1p(-p)): exact near p = 0 and for large N
    with np.errstate(divide="ignore"):
        miss = np.where(k >= e, 0.0, np.exp(n * np.log1p(-k / np.maximum(e, 1.0))))
    return _check.out(np.where(n == 0, 0.0, e * (1.0 - miss)))


def expert_params(hidden_size: int, width: int) -> int:
    """Parameters of one gated-MLP expert (gate, up, down): ``3 x hidden x width``."""
    return 3 * int(hidden_size) * int(width)


def attention_params(shape, *, matrices_only: bool = False) -> int:
    """Parameters of one layer's attention (projections and biases, no norms).

    GQA: ``h (H hd) + 2 h (KV hd) + (H hd) h`` (+ q/k/v biases with ``attention_bias``, +
    2 hd for per-head q/k norms). MLA: ``h q_lora + q_lora + q_lora H (nope + rope)`` (or
    ``h H (nope + rope)`` without a q LoRA) ``+ h (kv_lora + rope) + kv_lora +
    kv_lora H (nope + v) + H v h`` (the two LoRA norms counted). ``matrices_only``: the
    projection matrices alone (no biases or norms), what a token multiplies.
    """
    h, heads = shape.hidden_size, shape.n_heads
    m = shape.mla
    if m is None:
        q, kv = heads * shape.head_dim, shape.n_kv_heads * shape.head_dim
        n = h * q + 2 * h * kv + q * h
        if matrices_only:
            return n
        if shape.attention_bias:
            n += q + 2 * kv
        if shape.qk_norm:
            n += 2 * shape.head_dim
        return n
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    if m.q_lora_rank is None:
        q = h * heads * qk
    else:
        q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * heads * qk
    kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank \
        + m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim)
    norms = (0 if m.q_lora_rank is None else m.q_lora_rank) + m.kv_lora_rank
    return q + kv + heads * m.v_head_dim * h - (norms if matrices_only else 0)


def _layer_split(shape) -> tuple[int, int]:
    """(dense layers, MoE layers)."""
    if shape.moe is None:
        return shape.n_layers, 0
    dense = min(shape.moe.first_k_dense_layers, shape.n_layers)
    return dense, shape.n_layers - dense


def param_counts(shape) -> dict:
    """Total and active parameters.

    Returns
    -------
    dict with ``total`` (every weight: layers, router, experts, input embedding, LM head unless
    tied, norms; MTP layers NOT included: model cards count them apart, DeepSeek-V3's 671 B
    excludes its 14 B MTP module), ``active`` (weights one token uses: attention, dense MLPs,
    shared + k routed experts, router, norms, the LM head and the input embedding) and
    ``active_without_input_embedding`` (the same less the embedding table: the convention of
    gpt-oss's model card). Dense models: total == active (+/- the tied head).

    Checked against the model cards in ``tests/serving/test_moe.py`` (DeepSeek-V3
    671 B / 37 B, Qwen3-30B-A3B 30.5 B / 3.3 B, Mixtral-8x7B 46.7 B / 12.9 B, gpt-oss-120b
    117 B / 5.1 B, gpt-oss-20b 21 B / 3.6 B...).
    """
    h = shape.hidden_size
    dense, moe_layers = _layer_split(shape)
    attn = attention_params(shape) + 2 * h  # two RMSNorms per layer
    dense_mlp = expert_params(h, shape.intermediate_size)
    emb = shape.vocab_size * h
    head = 0 if shape.tie_word_embeddings else emb
    total = active = shape.n_layers * attn + dense * dense_mlp + h  # + final norm
    if shape.moe is not None:
        m = shape.moe
        one = expert_params(h, m.moe_intermediate_size)
        router = m.n_routed_experts * h
        total += moe_layers * ((m.n_routed_experts + m.n_shared_experts) * one + router)
        active += moe_layers * ((m.experts_per_token + m.n_shared_experts) * one + router)
    return {"total": total + emb + head, "active": active + emb + head,
            "active_without_input_embedding": active + head}


def step_weight_params(shape, tokens):
    """Parameters one forward over ``tokens`` query tokens reads: every layer's attention and
    norms, the dense layers' MLPs, per MoE layer the router, the shared experts and the routed
    experts the tokens touch (:func:`experts_touched`, an upper bound for skewed routing), the
    LM head and the final norm (the input embedding reads one row per token: not counted, as
    :attr:`Architecture.step_params`). ``tokens``: number or array >= 1 (a fractional
    mean allowed). Returns float(s)."""
    n = _check.real("tokens", tokens, lo=1.0)
    h = shape.hidden_size
    dense, moe_layers = _layer_split(shape)
    fixed = (shape.n_layers * (attention_params(shape) + 2 * h)
             + dense * expert_params(h, shape.intermediate_size)
             + shape.vocab_size * h + h)
    if shape.moe is None:
        return _check.out(fixed + 0.0 * n)
    m = shape.moe
    one = expert_params(h, m.moe_intermediate_size)
    touched = np.asarray(experts_touched(m.n_routed_experts, m.experts_per_token, n))
    per_layer = m.n_routed_experts * h + m.n_shared_experts * one + touched * one
    return _check.out(fixed + moe_layers * per_layer)


def matmul_params_per_token(shape) -> int:
    """Weights multiplied per query token (2 FLOPs each): attention projections, dense MLPs,
    per MoE layer the router, shared and k routed experts, and the LM head. Independent of
    how many experts the step touches (each token computes with k experts)."""
    h = shape.hidden_size
    dense, moe_layers = _layer_split(shape)
    n = (shape.n_layers * attention_params(shape, matrices_only=True)
         + dense * expert_params(h, shape.intermediate_size))
    if shape.moe is not None:
        m = shape.moe
        n += moe_layers * (m.n_routed_experts * h
                           + (m.experts_per_token + m.n_shared_experts)
                           * expert_params(h, m.moe_intermediate_size))
    return n + shape.vocab_size * h


def attention_flops_per_token_per_context(shape, absorbed: bool = True) -> float:
    """Attention FLOPs per query token per context token, all layers.

    GQA: ``4 L H hd`` (scores and values, 2 FLOPs per multiply-add). MLA decoding with the
    up-projections absorbed into q and the output (vLLM's MLA decode path): scores over the
    576-wide cached latent + rope key and values over the latent,
    ``2 L H (2 kv_lora + rope)``; ``absorbed=False`` (prefill, keys and values expanded):
    ``2 L H (nope + rope + v)``.
    """
    m, L, H = shape.mla, shape.n_layers, shape.n_heads
    if m is None:
        return 4.0 * L * H * shape.head_dim
    if absorbed:
        return 2.0 * L * H * (2 * m.kv_lora_rank + m.qk_rope_head_dim)
    return 2.0 * L * H * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)


def kv_bytes_per_token(shape, bytes_per_element: float = 2.0) -> float:
    """KV-cache bytes per token. GQA: ``2 L KV hd b``; MLA: ``L (kv_lora_rank +
    qk_rope_head_dim) b`` (one latent and one rope key per layer, no per-head K and V).
    DeepSeek-V3 in bf16: 61 x 576 x 2 = 70,272 B, against 2 x 61 x 128 x 192 x 2 = 5.996 MB
    if its 128 heads cached K and V. MTP layers' caches are not included."""
    b = _check.scalar_real("bytes_per_element", bytes_per_element, lo=0.0, lo_open=True)
    m = shape.mla
    if m is None:
        return 2.0 * shape.n_layers * shape.n_kv_heads * shape.head_dim * b
    return float(shape.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)) * b


def kv_split_ways(shape, gpus: int) -> int:
    """Over how many of ``gpus`` tensor-parallel GPUs one token's KV cache is split:
    ``min(gpus, kv_heads)`` for GQA (heads split, a KV head replicated beyond that); 1 for MLA
    (the latent is shared by all heads, so vLLM keeps a full copy on every rank)."""
    return _kv_split_ways(shape, _check.scalar_int("gpus", gpus, lo=1))


def _kv_split_ways(shape, n: int) -> int:
    """Unchecked :func:`kv_split_ways` (``n`` an int >= 1 the caller checked): the step rule
    (``step._step_totals``) calls it on every step, where a check cost about a third of a
    simulator step; its callers validate ``gpus`` once (``step._prep``, ``serving.setup``)."""
    return 1 if shape.mla is not None else min(n, shape.n_kv_heads)


def mtp_params(shape) -> dict:
    """Parameters of one multi-token-prediction (MTP) module (DeepSeek-V3 style): a projection
    of the concatenated embedding and hidden state (2h x h) and two norms, one transformer
    block of the model's MoE kind, sharing the embedding and LM head with the model.

    Returns dict: ``own`` (the module's own weights: eh_proj, norms, one block with all its
    experts), ``per_step_fixed`` (read by every MTP forward regardless of routing: eh_proj,
    norms, attention, router, shared experts, the shared LM head) and ``expert`` (params of
    one routed expert; a forward over N tokens adds ``experts_touched x expert``).
    DeepSeek-V3: own about 11.6 B (the hub's 14 B MTP files also hold copies of the embedding
    and head, 1.85 B)."""
    h = shape.hidden_size
    block_attn = attention_params(shape) + 2 * h
    proj = 2 * h * h + 2 * h
    head = shape.vocab_size * h
    if shape.moe is None:
        mlp_all = mlp_fixed = expert_params(h, shape.intermediate_size)
        one = 0
    else:
        m = shape.moe
        one = expert_params(h, m.moe_intermediate_size)
        mlp_fixed = m.n_routed_experts * h + m.n_shared_experts * one
        mlp_all = mlp_fixed + m.n_routed_experts * one
    return {"own": proj + block_attn + mlp_all + h, "per_step_fixed": proj + block_attn +
            mlp_fixed + head + h, "expert": one}


def _cfg_int(cfg: dict, key: str, where: str, lo: int = 1, default=None):
    """config.json field ``key`` (``default`` when absent or null), checked and bounded by
    :func:`specnb.hf_config.config_int`."""
    from .. import hf_config

    value = cfg.get(key)
    return hf_config.config_int(where, key, default if value is None else value, lo)


def moe_from_config(cfg: dict, where: str = "config") -> tuple[MoE | None, MLA | None, int]:
    """The MoE and MLA parts and the MTP layer count of a Hugging Face ``config.json`` (a
    dict; a multimodal config's ``text_config`` is used), for the config shapes of
    DeepSeek-V3 / Kimi-K2 (``n_routed_experts``, ``n_shared_experts``,
    ``moe_intermediate_size``, ``first_k_dense_replace``, ``kv_lora_rank``...,
    ``num_nextn_predict_layers``), Qwen3-MoE (``num_experts``, ``moe_intermediate_size``,
    ``shared_expert_intermediate_size`` absent or 0; ``mlp_only_layers`` must be empty and
    ``decoder_sparse_step`` 1), Mixtral and gpt-oss (``num_local_experts``, experts of
    ``intermediate_size``). ``num_experts_per_tok`` (or gpt-oss's ``experts_per_token``) is
    k. A dense config gives ``(None, None, 0)``.

    Raises
    ------
    ValueError
        a missing or non-positive MoE size (named); k above E; a layout the model cannot
        represent (Qwen3-MoE ``mlp_only_layers`` or ``decoder_sparse_step`` != 1, a
        ``moe_layer_freq`` other than 1, a shared expert whose width differs from the
        routed experts').
    """
    if isinstance(cfg.get("text_config"), dict):
        cfg = cfg["text_config"]
    e_key = next((k for k in ("n_routed_experts", "num_experts", "num_local_experts")
                  if cfg.get(k)), None)
    mla = None
    if cfg.get("kv_lora_rank"):
        q = cfg.get("q_lora_rank")
        mla = MLA(_cfg_int(cfg, "kv_lora_rank", where), _cfg_int(cfg, "qk_rope_head_dim", where),
                  _cfg_int(cfg, "qk_nope_head_dim", where), _cfg_int(cfg, "v_head_dim", where),
                  None if q is None else _cfg_int(cfg, "q_lora_rank", where))
    mtp = _cfg_int(cfg, "num_nextn_predict_layers", where, 0, 0)
    if e_key is None:
        return None, mla, mtp
    e = _cfg_int(cfg, e_key, where)
    k_key = "experts_per_token" if "experts_per_token" in cfg and "num_experts_per_tok" not in cfg \
        else "num_experts_per_tok"
    k = _cfg_int(cfg, k_key, where)
    if k > e:
        raise ValueError(f"{where}: {k_key} ({k}) exceeds {e_key} ({e})")
    if cfg.get("mlp_only_layers") or cfg.get("decoder_sparse_step", 1) != 1 or \
            cfg.get("moe_layer_freq", 1) != 1:
        raise ValueError(f"{where}: MoE layers interleaved with dense ones (mlp_only_layers, "
                         "decoder_sparse_step or moe_layer_freq) are not modelled; only leading "
                         "dense layers (first_k_dense_replace)")
    if e_key == "num_local_experts":  # Mixtral, gpt-oss: experts of intermediate_size
        width = _cfg_int(cfg, "intermediate_size", where)
    else:
        width = _cfg_int(cfg, "moe_intermediate_size", where)
    shared = _cfg_int(cfg, "n_shared_experts", where, 0, 0)
    sw = _cfg_int(cfg, "shared_expert_intermediate_size", where, 0, 0)
    if sw:
        if sw % width:
            raise ValueError(f"{where}: shared_expert_intermediate_size {sw} is not a multiple "
                             f"of moe_intermediate_size {width}: not modelled")
        shared = sw // width
    dense = _cfg_int(cfg, "first_k_dense_replace", where, 0, 0)
    return MoE(e, k, int(shared), width, int(dense)), mla, mtp


# --------------------------------------------------------------------------- MoE step costs
#: Range of ``routing_skew`` (:class:`EngineStep`): 0 is uniform routing (the upper bound on the
#: experts a step touches), values towards 1 concentrate the tokens on fewer experts. Its home
#: is :data:`specnb.limits.ROUTING_SKEW_RANGE` (the command line checks it before this import).
ROUTING_SKEW_RANGE = limits.ROUTING_SKEW_RANGE

#: Default routing skew: 0, uniform routing, the upper bound on the experts a step touches.
#: Stated, not fitted. No published statistic of the distinct experts a decode batch touches was
#: found (searched: DeepSeek's EPLB and V3 report, vLLM's EPLB ``balancedness``, a per-rank
#: max / mean token load rather than expert coverage, SGLang's expert-distribution threads,
#: arXiv 2604.23150 whose abstract reports "variable expert load imbalance" without a figure).
#: The published plain MoE steps (``data/moe_plain_steps.csv``) do not ask for a skew:
#: DeepSeek-V3's steps add 9.1 ms from batch 1 to 32 (SGLang PR #2643) where uniform routing adds
#: 10.8 ms and skew 0.5 7.5 ms, and the Qwen3-30B-A3B baselines grow far more than either
#: (``benchmarks/bench_serving_model.py`` section 10; docs/serving.md, "MoE at every batch").
DEFAULT_ROUTING_SKEW = 0.0


@dataclass(frozen=True)
class EngineStep:
    """What an engine's step costs beyond the roofline's weight, KV and matmul times (issue
    25): mixture-of-experts routing and kernels, and the CUDA-graph cap (which applies to
    dense models too). All defaults 0 / off: the step is then exactly the uniform-routing
    weight-read model.

    Attributes
    ----------
    routing_skew : float in [0, 0.95]
        s: routing concentrates on ``E_eff = k + (E - k)(1 - s)`` equally likely experts
        (s = 0: all E, uniform; :func:`experts_touched_skewed`).
    expert_us : float >= 0
        Fixed time per touched expert per MoE layer, microseconds (each expert's GEMM runs at
        least one tile and one kernel pass: cost follows experts touched, not tokens). Under
        expert parallelism each GPU runs its share ``touched / gpus``.
    tile_tokens : int >= 0
        Rows of one grouped-GEMM tile: an expert with fewer tokens still computes a full tile,
        so the routed-expert matmuls execute ``max(N k, touched x tile)`` rows per layer
        (0: no padding, compute follows tokens).
    expert_parallel : bool
        Experts placed whole on the GPUs (EP): per MoE layer a dispatch and a combine
        all-to-all of ``N k hidden`` activations ((n - 1) / n of them cross the link), each
        with latency ``a2a_us``; off: tensor-parallel experts (the all-reduces of the step).
    a2a_us : float >= 0
        Latency of one all-to-all, microseconds (EP only).
    graph_cap_tokens : int >= 0
        Most query tokens a captured CUDA graph covers (vLLM: ``max_cudagraph_capture_size``,
        by default ``min(max_num_seqs x (1 + num_speculative_tokens) x 2, 512)``,
        ``vllm/config/vllm.py`` ``_set_cudagraph_sizes``; a step with more tokens runs without
        a graph, ``cudagraph_dispatcher.py``); 0: no cap.
    eager_layer_us : float >= 0
        Host time per layer to launch a step's kernels without a CUDA graph, microseconds:
        beyond the cap a step takes at least ``layers x eager_layer_us`` (the GPU hides the
        launches when its own work is longer).
    fa2_walk_ns : float >= 0
        The engine runs FlashAttention-2's varlen kernel on GPUs without FA3 / FA4 (vLLM V1 on
        compute capability 8.x and 12.x), whose decode path (split-KV and the GQA swap) needs
        every query of the step to be one token: time per cached token per layer of one
        block's unsplit walk at head dim 128, nanoseconds
        (:func:`~specnb.serving.step.multi_token_attention`); 0: not such an engine.
    """

    routing_skew: float = DEFAULT_ROUTING_SKEW
    expert_us: float = 0.0
    tile_tokens: int = 0
    expert_parallel: bool = False
    a2a_us: float = 0.0
    graph_cap_tokens: int = 0
    eager_layer_us: float = 0.0
    fa2_walk_ns: float = 0.0

    def __post_init__(self):
        limits.routing_skew(self.routing_skew)
        for name in ("expert_us", "a2a_us", "eager_layer_us", "fa2_walk_ns"):
            _check.scalar_real(name, getattr(self, name), lo=0.0)
        for name in ("tile_tokens", "graph_cap_tokens"):
            _check.scalar_int(name, getattr(self, name), lo=0)


def experts_touched_skewed(n_experts, experts_per_token, tokens, routing_skew: float = 0.0):
    """Expected distinct experts one MoE layer reads for N tokens when routing concentrates
    on ``E_eff = k + (E - k)(1 - s)`` experts: ``E_eff (1 - (1 - k / E_eff)^N)``. s = 0 is
    :func:`experts_touched` (uniform, the upper bound); s -> 1 touches only k experts.
    Unchecked core (floats that broadcast); ``routing_skew`` in :data:`ROUTING_SKEW_RANGE`."""
    e, k = float(n_experts), float(experts_per_token)
    e_eff = k + (e - k) * (1.0 - routing_skew)
    n = np.asarray(tokens, dtype=float)
    if e_eff <= k:
        return np.where(n > 0, k, 0.0)
    miss = np.exp(n * np.log1p(-k / e_eff))
    return np.where(n > 0, e_eff * (1.0 - miss), 0.0)


def moe_layers(shape) -> int:
    """Number of MoE layers (0 for a dense shape)."""
    return _layer_split(shape)[1]
