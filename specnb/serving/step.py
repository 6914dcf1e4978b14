"""Step time: one forward over B sequences on a roofline with efficiency factors.

:class:`Efficiency`, :data:`DEFAULT_EFFICIENCY`, :data:`DEFAULT_HEAD_EFFICIENCY`,
:func:`default_efficiency_sources`, :func:`step_breakdown`, :func:`step_time_ms`. The physics:
``shared/reference/batch-model.md`` section 1; MagicDec, arXiv 2408.11049.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check
from . import moe as _moe
from .catalogue import DTYPES, architecture, gpu, kv_storage_dtype, weight_bytes_of

__all__ = ["Efficiency", "DEFAULT_EFFICIENCY", "DEFAULT_HEAD_EFFICIENCY",
           "default_efficiency_sources", "step_breakdown", "step_time_ms",
           "multi_token_attention", "decode_walk"]

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
    kv_token_ns : float >= 0
        Time per cached token per layer of one attention block, nanoseconds, for a decode
        kernel that runs one block per (sequence, KV head) without splitting a sequence's keys
        over blocks: a step's KV read then takes at least ``context x layers x kv_token_ns``
        (latency-bound: the blocks of a small batch cannot fill the GPU, however few bytes
        they read). 0 (the default): split-KV kernels (vLLM's FlashAttention and FlashInfer
        decode), no such floor. Fitted by :func:`~specnb.serving.calibrate` when asked
        (``fit=(..., "kv_token_ns")``).
    """

    bandwidth: float = 0.996
    compute: float = 0.722
    fixed_ms: float = 1.39
    token_us: float = 0.0
    allreduce_us: float = 33.0
    overlap: float = 0.0
    kv_token_ns: float = 0.0

    def __post_init__(self):
        for name in ("bandwidth", "compute"):
            _check.scalar_real(name, getattr(self, name), lo=0.0, hi=1.5, lo_open=True)
        for name in ("fixed_ms", "token_us", "allreduce_us", "kv_token_ns"):
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
    kv_dtype = kv_storage_dtype(kv_dtype, dtype)
    n = _check.scalar_int("gpus", gpus, lo=1)
    return arch, g, eff, dtype, kv_dtype, n


def _step(arch, g, eff, dtype, kv_dtype, n, b, s, q, kv_budget=None, parts=False, *,
          engine_step=None, multi=None):
    """Unchecked core of :func:`step_breakdown` on float arrays that broadcast (q may be a
    fractional mean, e.g. 1 + M gamma with partial proposals): B sequences alike, each with
    context s and q query tokens (:func:`_step_totals` with tokens B q, KV tokens B s and
    attention token-contexts B q s). ``multi``: :func:`multi_token_attention`'s pair for a
    step with multi-token queries (None: the decode path)."""
    if kv_budget is not None:
        s = np.minimum(s, kv_budget)
    tokens = b * q
    floor = s * (arch.n_layers * eff.kv_token_ns * 1e-6) if eff.kv_token_ns else 0.0
    factor = 1.0
    if multi is not None:
        factor, walk = multi
        floor = np.maximum(floor, s * walk)
    return _step_totals(arch, g, eff, dtype, kv_dtype, n, tokens, b * s, tokens * s, parts,
                        engine_step=engine_step, kv_floor_ms=floor, kv_read_factor=factor)


#: CUDA compute capability majors on which vLLM 0.33 does not run FlashAttention-2 for a
#: dense attention layer: 9 (FA3, ``fa_utils.get_flash_attn_version``) and 10 (FlashInfer first,
#: ``platforms/cuda.py`` ``_get_backend_priorities``; FA4 behind it).
_NOT_FA2_MAJORS = ("9", "10")


def multi_token_attention(arch, g, gpus: int = 1, engine_step=None,
                          kv_dtype: str = "bf16") -> tuple[float, float]:
    """What a step whose longest query has more than one token costs in attention on an
    engine that runs FlashAttention-2's varlen kernel (issue 22): ``(kv_read_factor,
    walk_ms)``, where the step's KV read takes ``kv_read_factor`` times its bytes and at least
    ``walk_ms`` x the longest context among its sequences; ``(1.0, 0.0)`` where the rule does
    not apply.

    vLLM V1 attends a whole step in one ``flash_attn_varlen_func`` call with ``max_seqlen_q``
    the step's longest query (``v1/attention/backends/flash_attn.py``). FlashAttention-2
    applies its decode path, the GQA swap (one block per KV head serving its query heads) and
    split-KV, only when ``max_seqlen_q == 1`` (``csrc/flash_attn/flash_api.cpp``
    ``mha_varlen_fwd``, vllm-project/flash-attention; since FlashAttention PR #754, 2024-01);
    otherwise every (sequence, query head) is one block that walks the sequence's whole KV
    cache, and a paged KV cache refuses ``num_splits > 1``. So in a step with a verify or
    prefill query, each query head reads its KV head's cache (``n_heads / n_kv_heads`` times
    the bytes: vllm-project/flash-attention PR #193's split-but-unswapped reads run at 83-98 %
    (at 32K tokens and more; 64 % at 4K) of an RTX 3090's bandwidth on that many bytes, ``data/fa2_verify_attention.csv``), and the
    longest sequence's block takes ``context x layers x fa2_walk_ns`` (the unsplit walk, PR
    #193: 40.8 ns per token at head dim 128, scaled by ``head_dim / 128``). A plain decode
    step (every query one token) keeps the split, swapped path.

    Applies when ``engine_step.fa2_walk_ns`` > 0 (the ``vllm`` V1 profile), the GPU is CUDA
    with a compute capability major other than 9 and 10 (A100, A40, A10G, L4, L40(S), RTX
    3090 / 4090), and vLLM would pick FlashAttention for the target: per-head K and V (not
    MLA), a head size that is a multiple of 8 and at most 256
    (``FlashAttentionBackend.supports_head_size``), and a KV cache that is not fp8
    (``kv_dtype``, the storage dtype: ``supports_kv_cache_dtype`` needs FA3 on SM90 or FA4
    on SM100 for fp8, so on these GPUs ``platforms/cuda.py`` falls to FlashInfer). A target
    with attention sinks (gpt-oss, ``Architecture.attention_sinks``) is not FlashAttention's on
    compute capability < 9 either (``supports_combination``: "sink not supported on compute
    capability < 9.0"). Unchecked: the caller's setup was checked. ``gpus``: tensor parallelism
    (heads split ``gpus`` ways, KV heads ``min(gpus, n_kv_heads)`` ways).
    """
    walk = 0.0 if engine_step is None else float(engine_step.fa2_walk_ns)
    cc = getattr(g, "compute_capability", "")
    if not walk or not cc or cc.split(".")[0] in _NOT_FA2_MAJORS or arch.mla is not None:
        return 1.0, 0.0
    if arch.head_dim % 8 or arch.head_dim > 256 or kv_dtype == "fp8" or arch.attention_sinks:
        return 1.0, 0.0  # vLLM picks another backend (FlashInfer, Triton)
    q_heads = arch.n_heads / gpus
    kv_heads = arch.n_kv_heads / _moe._kv_split_ways(arch, gpus)
    factor = max(q_heads / kv_heads, 1.0)
    return factor, arch.n_layers * walk * (arch.head_dim / 128.0) * 1e-6


def decode_walk(arch, g, gpus: int = 1, engine_step=None, kv_dtype: str = "bf16") -> float:
    """ms per cached token of the longest sequence (all layers) that a PLAIN decode step
    (every query one token) takes on FlashAttention-2 when its GQA swap cannot apply: a
    target whose GPU holds as many KV heads as query heads (multi-head attention, e.g.
    Llama-2-7B; ``mha_varlen_fwd`` swaps, and so splits the KV, only when ``num_heads >
    num_heads_k``; a paged KV cache refuses splits otherwise), so every decode step walks
    the longest context unsplit, as :func:`multi_token_attention`'s verify steps do. 0 where
    the swap applies or the rule does not (same conditions as :func:`multi_token_attention`).
    """
    factor, walk = multi_token_attention(arch, g, gpus, engine_step, kv_dtype)
    return walk if factor == 1.0 else 0.0  # factor 1: as many KV heads as query heads


def _moe_terms(arch, g, n, tokens, moe):
    """(weight params read, extra matmul FLOPs, extra ms, routed-expert params of those read)
    of the routed experts of one step
    over ``tokens`` query tokens under the engine's :class:`~specnb.serving.moe.EngineStep`
    (a mixture-of-experts target):
    experts touched under the routing skew, the grouped-GEMM tile floor, the fixed cost per
    touched expert, expert-parallel all-to-alls and the CUDA-graph cap. ``moe`` None: the
    uniform-routing weight read alone (no extra FLOPs or time)."""
    t = np.maximum(tokens, 1.0)
    m = arch.moe
    layers = _moe.moe_layers(arch)
    one = _moe.expert_params(arch.hidden_size, m.moe_intermediate_size)
    if moe is None:
        touched = _moe.experts_touched(m.n_routed_experts, m.experts_per_token, t)
        return np.asarray(arch.step_params_for(t)), 0.0, 0.0, layers * one * touched
    touched = _moe.experts_touched_skewed(m.n_routed_experts, m.experts_per_token, t,
                                          moe.routing_skew)
    w = arch.step_params_for(1.0) + layers * one * (touched - m.experts_per_token)
    rows = t * m.experts_per_token
    pad = np.maximum(touched * moe.tile_tokens - rows, 0.0)
    f_extra = 2.0 * one * layers * pad
    ways = n if moe.expert_parallel else 1
    extra = layers * touched / ways * moe.expert_us * 1e-3
    if moe.expert_parallel and n > 1:
        extra = extra + 2 * layers * (moe.a2a_us * 1e-3 + (n - 1) / n * rows * arch.hidden_size
                                      * 2.0 / g.link * 1e3 / n)
    return np.asarray(w), f_extra, extra, layers * one * touched


def _step_totals(arch, g, eff, dtype, kv_dtype, n, tokens, kv_tokens, att_tokens,
                 parts=False, *, engine_step=None, kv_floor_ms=0.0, kv_read_factor=1.0):
    """The physics of one forward from its totals (the one home of the step rule; a mixed
    step of prefill chunks, decode and verify tokens calls it directly): ``tokens`` query
    tokens in all, ``kv_tokens`` context tokens read from the KV cache (sum of each
    sequence's context), ``att_tokens`` sum over sequences of query tokens x context (the
    attention math). Float arrays that broadcast; unchecked. ``engine_step``: the engine's
    :class:`~specnb.serving.moe.EngineStep` (routing skew, per-expert tile floor and fixed
    cost, expert-parallel all-to-alls, CUDA-graph cap); None keeps the uniform-routing
    weight read alone (the behaviour before issue 25). ``kv_floor_ms``: the least time of the
    KV read (:attr:`Efficiency.kv_token_ns` x context x layers, set by :func:`_step`, or
    FlashAttention-2's unsplit walk, :func:`multi_token_attention`; 0: no floor).
    ``kv_read_factor``: the KV bytes read per byte cached (1; FlashAttention-2 without its GQA
    swap: ``n_heads / n_kv_heads``)."""
    moe = engine_step
    extra = 0.0
    f_moe = 0.0
    lm_head = arch.embedding_params  # read each step; bf16 beside quantized layers
    if arch.moe is None:
        w = weight_bytes_of(arch.step_params, dtype, unquantized=lm_head) / n
    else:  # the routed experts the step's tokens touch (uniform routing: an upper bound)
        w_params, f_moe, extra, routed = _moe_terms(arch, g, n, tokens, moe)
        w = weight_bytes_of(w_params, dtype, routed, lm_head) / n
    # n was checked once by _prep (or the Setup): the unchecked split, as every step calls it
    kv = kv_tokens * (arch.kv_bytes_per_token(kv_dtype) / _moe._kv_split_ways(arch, n)
                      * kv_read_factor)
    f_lin = (2.0 * arch.matmul_params_per_token / n) * tokens + f_moe / n
    f_att = (_moe.attention_flops_per_token_per_context(arch) / n) * att_tokens
    bw = eff.bandwidth * g.bandwidth
    fl = eff.compute * g.flops(dtype)
    t_w, t_lin = w / bw * 1e3, f_lin * (1e3 / fl)
    t_kv, t_att = kv * (1e3 / bw), f_att * (1e3 / fl)
    if np.any(kv_floor_ms):  # a decode kernel without split-KV: latency-bound per block
        t_kv = np.maximum(t_kv, kv_floor_ms)
    fixed = eff.fixed_ms + (eff.token_us * 1e-3) * tokens + extra
    if eff.fixed_ms > 0 and g.layer_fixed_us:  # the GPU's own per-layer cost (not in the
        fixed = fixed + arch.n_layers * g.layer_fixed_us * 1e-3  # ideal roofline)
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
    if moe is not None and moe.graph_cap_tokens and moe.eager_layer_us:
        # beyond the CUDA-graph cap the host launches every kernel: the step takes at least
        # the launch time (the GPU hides it when its own work is longer)
        launch = arch.n_layers * moe.eager_layer_us * 1e-3
        total = np.where(tokens > moe.graph_cap_tokens, np.maximum(total, launch), total)
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
    min(n, kv_heads) ways, an MLA latent not split)::

        t_linear = comb(W / (e_bw BW), F_lin / (e_c FLOPS))    # weights vs matmuls
        t_attn   = comb(KV / (e_bw BW), F_att / (e_c FLOPS))   # KV read vs attention math
        comb(m, c) = max(m, c) + (1 - overlap) min(m, c)       # overlap 1: ideal roofline
        t_comm   = 2 layers (allreduce_us + 2 (n-1)/n x B q hidden x 2 bytes / link)  (n > 1)
        t        = fixed_ms + t_linear + t_attn + token_us x B q + t_comm

    with W = weights read per step (:meth:`Architecture.step_params_for` the step's B q
    tokens x bytes per weight: for a mixture-of-experts model the shared experts, dense layers
    and the routed experts those tokens touch, ``E (1 - (1 - k/E)^(B q))`` per layer under
    uniform routing, an UPPER BOUND for skewed routing), KV = B x S x KV bytes per token,
    F_lin = 2 x matmul params x B q, F_att = 4 x layers x heads x head_dim x B q x S (MLA:
    2 x layers x heads x (2 kv_lora_rank + qk_rope_head_dim), the absorbed decode path;
    section 1 of the reference). Expert parallelism places whole experts on GPUs: in
    expectation the same bytes per GPU as tensor parallelism, so it is modelled the same
    (all-to-all traffic and uneven routing are not).

    Parameters
    ----------
    arch : Architecture, catalogue name or config path
    gpu_name : GPU or catalogue name
    batch_size, context, query_tokens : int or arrays (broadcast), >= 1 (context >= 0)
    dtype : weight dtype, one of bf16, fp16, fp8, int8, int4
    kv_dtype : vLLM's ``kv_cache_dtype`` (:data:`specnb.serving.KV_CACHE_DTYPES`; default
        ``auto``: the activation dtype, bf16 also for fp8 / int8 / int4 weights,
        :func:`specnb.serving.kv_storage_dtype`)
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
