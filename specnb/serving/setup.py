"""Drafts and the setup: what runs where (GPU, GPUs, target, dtypes, draft, efficiencies),
whether the KV cache fits (:func:`max_batch_in_memory`) and contexts the models cannot serve
(:func:`context_limit_notes`, coded :class:`specnb.notes.Note`).

:data:`DRAFT_METHODS`, :data:`SD_OVERHEAD_MS`, :class:`Draft`, :func:`draft`, :class:`Setup`,
:func:`setup`, :func:`max_batch_in_memory`, :func:`context_limit_notes`.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np

from .. import _check, hf_config, limits
from ..notes import Note
from .catalogue import (DTYPES, GPU, Architecture, architecture, architecture_names, gpu,
                        kv_storage_dtype, resolve_architecture, weight_bytes_of)
from . import engines, heads, workload
from . import moe as _moe
from .step import DEFAULT_EFFICIENCY, DEFAULT_HEAD_EFFICIENCY, Efficiency

__all__ = ["contexts_over_max_positions", "serve_weight_args", "serve_weight_dtype",
           "read_checkpoint_placeholder", "FP8_QUANTIZATIONS", "FOUR_BIT_QUANTIZATIONS",
           "max_model_len_that_fits", "DRAFT_METHODS", "SD_OVERHEAD_MS", "PARTIAL_PROPOSAL_METHODS",
           "DEFAULT_GPU_MEMORY_UTILIZATION", "Draft", "draft", "Setup", "setup", "default_draft_dtype",
           "max_batch_in_memory", "memory_cap", "memory_budget_text", "context_limit_notes", "cannot_serve",
           "check_tensor_parallel"]

#: Drafts that propose only where the recent tokens match earlier text, so a proposal rate
#: M < 1 applies (vLLM's n-gram and suffix proposers; engines.md section 2 item 1).
PARTIAL_PROPOSAL_METHODS = ("ngram", "suffix")

#: vLLM's default ``gpu_memory_utilization``: :data:`specnb.limits.DEFAULT_GPU_MEMORY_UTILIZATION`.
DEFAULT_GPU_MEMORY_UTILIZATION = limits.DEFAULT_GPU_MEMORY_UTILIZATION

#: Draft methods that are not a model name: no model (``ngram``, ``suffix``), one decoder layer
#: of the target plus its LM head (``eagle``, ``eagle3``, ``mtp``), a block drafter of a few
#: target-shaped layers proposing k tokens in one forward (``dflash``, vLLM 0.33), the target
#: itself (``self``).
DRAFT_METHODS = ("ngram", "suffix", "eagle", "eagle3", "mtp", "dflash", "self")

#: Per-verification system overhead, ms: SpecDecode-Bench's ``overhead_constant_per_step``
#: (1.20683946e-03 s; arXiv 2601.11580, predictor.py ``Llama8BH100``; vLLM on 1x H100).
#: MagicDec's Table 3 rows show the same size of gap: Omega x T_SD exceeds gamma T_D + T_V by
#: 1.3-1.4 ms (e.g. S 1024, B 32: 2.19 x 8.70 - (8.21 + 9.55) = 1.29 ms).
SD_OVERHEAD_MS = 1.20683946


@dataclass(frozen=True)
class Draft:
    """A drafter.

    ``kind``: ``"none"`` (n-gram / suffix: no model; drafting costs
    :data:`NGRAM_DRAFT_FRACTION` of the verification time), ``"head"`` (EAGLE / EAGLE-3 / MTP:
    one decoder layer of the target plus its LM head; DFlash: a few such layers, ONE forward of
    1 + k query tokens per sequence for the whole block), ``"model"`` (a separate model) or
    ``"self"`` (the target itself, optionally with a sparse KV budget, as MagicDec's
    self-speculation). ``method`` is vLLM's method name (``ngram``, ``suffix``, ``eagle``,
    ``eagle3``, ``mtp``, ``draft_model``); ``arch`` the draft's shape (None for ``none``);
    ``kv_budget`` the most context tokens the draft reads (None = all); ``dtype`` its weights.
    Heads (issue 16) are costed from their shapes: ``arch`` is the head's decoder layer with
    its LM-head rows (EAGLE-3: its draft vocabulary), ``extra_params`` the weights each draft
    forward reads beyond ``arch`` (first forward, later forwards: EAGLE-1's fc, EAGLE-3's fc
    on the first forward and its 2h-wide q/k/v, MTP's projection), ``weight_params`` the
    head's own weights in GPU memory, ``head`` the :class:`~specnb.serving.heads.HeadShape`
    (EAGLE heads) and ``lm_head_vocab`` the rows its sampling covers.
    """

    kind: str
    method: str
    arch: Architecture | None = None
    kv_budget: int | None = None
    dtype: str | None = None
    name: str = ""
    extra_params: tuple = (0, 0)
    weight_params: int | None = None
    head: heads.HeadShape | None = None
    lm_head_vocab: int = 0


def mtp_refusal(tgt: Architecture) -> str:
    """Why ``mtp`` cannot draft for ``tgt``, a target whose ``mtp_layers`` is 0 (the
    catalogue's, or :func:`specnb.hf_config.mtp_layers` of its config.json): vLLM 0.33 keeps
    method mtp only when the target's model_type maps to an MTP draft with layers to run
    (``SpeculativeConfig.__post_init__`` / ``hf_config_override``), else it raises
    "Unsupported speculative method: 'mtp'" (trial 7, T7-10). The message names the
    catalogue models that ship MTP layers and the other drafts."""
    with_mtp = [n for n in architecture_names() if architecture(n).mtp_layers]
    where = "catalogue mtp_layers 0" if not tgt.source.endswith(".json") else \
        f"its config {tgt.source} declares none vLLM can load"
    return (f"draft mtp needs MTP layers in the target, and {tgt.name} has none ({where}): "
            "vLLM refuses it (\"Unsupported speculative method: 'mtp'\"); give a target that "
            f"ships them ({', '.join(with_mtp)}) or another draft (ngram, suffix, eagle, "
            "eagle3, dflash, self, a draft model)")


def _head_draft(key: str, tgt: Architecture, kv_budget, dtype, config) -> Draft:
    """An EAGLE / EAGLE-3 / MTP head for ``tgt`` (see :class:`Draft`)."""
    if key == "mtp" and tgt.moe is not None and tgt.mtp_layers:
        # DeepSeek-V3 style: the eh projection (2h -> h), one block of the model's kind
        # (MLA + MoE), the shared embedding and LM head
        if config is not None:
            raise ValueError("draft_config applies to eagle and eagle3 heads; the mtp module "
                             f"of {tgt.name} comes with the model")
        h = tgt.hidden_size
        body = tgt.one_layer(f"mtp module of {tgt.name}")
        return Draft("head", key, body, kv_budget, dtype, key, (2 * h * h + 2 * h,) * 2,
                     _moe.mtp_params(tgt)["own"], None, tgt.vocab_size)
    if key == "mtp" and tgt.mtp_layers == 0:
        raise _check.ParamValueError(mtp_refusal(tgt), "draft")
    if key == "mtp":
        if config is not None:
            raise ValueError("draft_config applies to eagle and eagle3 heads, not mtp")
        body = tgt.one_layer(f"{key} head of {tgt.name}")
        return Draft("head", key, body, kv_budget, dtype, key, (0, 0), body.layer_params, None,
                     tgt.vocab_size)
    if key == "dflash":
        head = (heads.dflash_head(tgt) if config is None
                else heads.head_from_config(config, tgt))
    else:
        head = (heads.eagle_head(key, tgt) if config is None
                else heads.head_from_config(config, tgt))
    if head.kind != key:
        raise ValueError(f"draft_config {head.source!r} describes an {head.kind} head, not "
                         f"{key} (EAGLE-3 heads carry draft_vocab_size and an Eagle3 "
                         f"architecture, DFlash drafters a dflash_config): give --draft "
                         f"{head.kind}")
    body = dataclasses.replace(
        tgt.one_layer(f"{key} head of {tgt.name}"), n_layers=head.n_layers,
        hidden_size=head.hidden_size, n_heads=head.n_heads, n_kv_heads=head.n_kv_heads,
        head_dim=head.head_dim, intermediate_size=head.intermediate_size,
        vocab_size=head.lm_head_vocab, moe=None, mla=None, attention_bias=False,
        qk_norm=False, max_position_embeddings=tgt.max_position_embeddings,
        sliding_window=None)
    extra = tuple(int(heads.params_per_step(head, i) - body.step_params) for i in (0, 1))
    return Draft("head", key, body, kv_budget, dtype, key, extra, heads.own_params(head), head,
                 head.lm_head_vocab)


def draft(spec, target, *, kv_budget=None, dtype=None, config=None) -> Draft:
    """Build a :class:`Draft` for ``target`` from a method, catalogue name or config path.

    Parameters
    ----------
    spec : str, Draft, Architecture or dict
        ``ngram``, ``suffix``, ``eagle``, ``eagle3``, ``mtp``, ``dflash``, ``self``, a
        catalogue model name (a draft model, vLLM ``draft_model``) or a ``config.json`` path.
    target : Architecture, catalogue name or config path
    kv_budget : int >= 1 or None
        Context tokens the draft reads at most (sparse KV, StreamingLLM); not for n-gram.
    dtype : weight dtype of a draft model (default None: the Setup's ``draft_dtype``, :func:`default_draft_dtype`)
    config : an EAGLE / EAGLE-3 head's ``config.json`` (path, folder or dict; vLLM's
        ``draft_model`` checkpoint's config) for ``eagle`` / ``eagle3``: the head's shape
        and draft vocabulary are read from it (:func:`specnb.serving.heads.head_from_config`);
        without it the head is one layer of the target (EAGLE-3 with a 32,000-token draft
        vocabulary, ASSUMED: the Llama-3.1-8B head's); for ``dflash`` the drafter's
        config.json (layers, fc width from ``dflash_config.target_layer_ids``), without it
        :func:`specnb.serving.heads.dflash_head` (5 target-shaped layers, ASSUMED from the
        published 8B checkpoints)

    Raises
    ------
    ValueError
        unknown method or model; a draft model whose vocabulary size differs from the
        target's (its tokens cannot be verified: vLLM's draft_model method needs the same
        tokenizer); a KV budget or dtype with ``ngram`` / ``suffix``; a config of a draft
        head (EAGLE, EAGLE-3, MTP, Medusa...: its ``architectures``, ``model_type`` or folder
        name, read as the vLLM checker reads them) given as a draft model; a ``kv_budget``
        that differs from that of a given :class:`Draft`; a ``config`` for a method other than
        eagle / eagle3, or describing the other kind of head, or a bad config
        (:func:`specnb.serving.heads.head_from_config`).
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
    if config is not None and key not in ("eagle", "eagle3", "mtp", "dflash"):
        raise ValueError(f"draft_config applies to eagle and eagle3 heads and dflash "
                         f"drafters, not {spec!r}")
    if key in ("ngram", "suffix"):
        if kv_budget is not None:
            raise ValueError(f"draft_kv_budget applies to model drafts; {key} drafting reads "
                             "no KV cache")
        if dtype is not None:
            raise ValueError(f"draft_dtype applies to model drafts; {key} drafting has no "
                             f"weights, got draft_dtype {dtype!r}")
        return Draft("none", key, None, None, None, key)
    if key in ("eagle", "eagle3", "mtp", "dflash"):
        return _head_draft(key, tgt, kv_budget, dtype, config)
    if key == "self":
        return Draft("self", "draft_model", tgt, kv_budget, dtype, "self",
                     lm_head_vocab=tgt.vocab_size)
    try:
        arch, cfg = resolve_architecture(spec)  # a config file is read once
    except ValueError as exc:
        if isinstance(spec, str) and str(exc).startswith("unknown model"):
            raise ValueError(f"unknown draft {spec!r}; give a method ({', '.join(DRAFT_METHODS)}"
                             f"), a catalogue model ({', '.join(architecture_names())}) or the "
                             "path of a draft config.json") from None
        raise
    if cfg is not None:  # from a config: is it a draft head, not a model?
        folder = os.path.dirname(arch.source) if arch.source.endswith(".json") else ""
        found = hf_config.checkpoint_method(folder, cfg)
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
    return Draft("model", "draft_model", arch, kv_budget, dtype, arch.name,
                 lm_head_vocab=arch.vocab_size)


# --------------------------------------------------------------------------- setup
@dataclass(frozen=True)
class Setup:
    """Everything the step-time model needs: GPU, GPU count (tensor parallelism), target shape,
    weight and KV dtypes, the draft, one :class:`Efficiency` per role, the per-verification
    overhead, the serving engine's profile (:class:`~specnb.serving.engines.EngineProfile`,
    ``data/engine_profiles.csv``), the proposal rate M (the share of sequence-steps that carry
    a draft: 1 except for n-gram / suffix), vLLM's ``gpu_memory_utilization`` and the host
    time a speculative step pays in series (``sync_host_us_per_seq``). Build with
    :func:`setup`; change a field with ``dataclasses.replace``."""

    gpu: GPU
    target: Architecture
    draft: Draft
    gpus: int = 1
    dtype: str = "bf16"
    draft_dtype: str | None = None
    kv_dtype: str = "auto"
    target_efficiency: Efficiency = DEFAULT_EFFICIENCY
    draft_efficiency: Efficiency = DEFAULT_EFFICIENCY
    sd_overhead_ms: float = SD_OVERHEAD_MS
    engine: engines.EngineProfile = engines.EngineProfile("specdecode-bench")
    proposal_rate: float = 1.0
    memory_fraction: float = DEFAULT_GPU_MEMORY_UTILIZATION
    mean_draft_len: float | None = None  # tokens per draft (n-gram / suffix); None: gamma
    #: host time per sequence per speculative step that the plain run does not pay, us (vLLM
    #: V1's async scheduling off for the method while the plain run keeps it:
    #: :func:`specnb.simulate.host.host_cost`'s ``sync_us_per_request``, set by ``plan``); 0:
    #: none. The simulator charges its own host terms and leaves this 0.
    sync_host_us_per_seq: float = 0.0

    def _draft_weight_bytes(self) -> float:
        d = self.draft
        if d.kind == "model":
            return d.arch.weight_bytes(d.dtype or self.draft_dtype or self.dtype)
        if d.kind == "head":  # an EAGLE-3 head's own LM head stays bf16 (weight_bytes_of)
            own_lm = (d.head.lm_head_vocab * d.arch.hidden_size
                      if d.head is not None and d.head.own_lm_head else 0)
            return float(weight_bytes_of(float(d.weight_params), d.dtype or self.dtype,
                                         unquantized=float(own_lm)))
        return 0.0

    def fits_memory(self) -> bool:
        """True when the target's and draft's weights fit in the GPUs' memory (no KV left
        over is checked)."""
        w = self.target.weight_bytes(self.dtype) + self._draft_weight_bytes()
        return w <= self.gpus * self.gpu.device_memory_bytes


def memory_cap(st: Setup, context, memory_fraction: float | None = None) -> dict:
    """How many sequences of ``context`` tokens run at once, with and without the draft.

    vLLM allocates ``memory_fraction`` (its ``gpu_memory_utilization``; default the setup's,
    0.92) of each GPU's total as the device reports it (``GPU.device_memory_bytes``:
    ``torch.cuda.mem_get_info``'s total, 79.11 GiB for an "80 GB" H100); the target's
    weights, then the draft's (a draft model, or an EAGLE / MTP head's own weights), take
    their share, and the rest holds KV blocks for the target and the draft (within the
    draft's KV budget; an MLA latent is replicated on every rank, a KV head beyond
    ``gpus = kv_heads`` too). A batch whose KV cache does not fit cannot run at once (vLLM
    preempts), so it never pays. Left out (the real room is smaller): what vLLM 0.33's
    ``Worker.determine_available_memory`` (``v1/worker/gpu_worker.py``) also subtracts from
    ``gpu_memory_utilization x total`` besides the weights: the non-torch memory its profile
    measures (CUDA context, NCCL buffers), the profile run's activation peak
    (``transient_peak_headroom``), and the CUDA-graph memory estimate
    (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``, on by default); and the block
    granularity.

    Returns
    -------
    dict: ``max_batch`` (with the draft), ``max_batch_without_draft``, ``displaced`` (the
    sequences the draft's weights and KV push out); ints for a scalar context, int arrays
    otherwise; 0 when the weights alone do not fit.

    Raises
    ------
    ValueError
        context < 0 or fractional; memory_fraction outside (0, 1].
    """
    s = _check.integer("context", context, lo=0).astype(float)
    frac = st.memory_fraction if memory_fraction is None else memory_fraction
    frac = limits.gpu_memory_utilization(frac)
    kv_dtype = kv_storage_dtype(st.kv_dtype, st.dtype)
    copies = lambda a: st.gpus / _moe.kv_split_ways(a, st.gpus)  # noqa: E731 - replicas
    per_seq = s * st.target.kv_bytes_per_token(kv_dtype) * copies(st.target)
    per_seq0 = per_seq
    d = st.draft
    if d.kind in ("model", "self", "head"):
        ds = s if d.kv_budget is None else np.minimum(s, d.kv_budget)
        per_seq = per_seq + ds * d.arch.kv_bytes_per_token(kv_dtype) * copies(d.arch)
    room0 = frac * st.gpus * st.gpu.device_memory_bytes - st.target.weight_bytes(st.dtype)
    room = room0 - st._draft_weight_bytes()

    def count(r, per):
        with np.errstate(divide="ignore", over="ignore"):  # context 0: no KV, capped below
            n = np.where(r <= 0, 0.0, np.floor(r / np.maximum(per, 1e-300)))
        n = np.minimum(n, 2.0 ** 53).astype(np.int64)
        return int(n) if n.ndim == 0 else n

    with_d, without = count(room, per_seq), count(room0, per_seq0)
    return {"max_batch": with_d, "max_batch_without_draft": without,
            "displaced": without - with_d}


def memory_budget_text(st: Setup) -> str:
    """What :func:`memory_cap` budgets from, in words for a note (the one home of the
    wording): ``"92 % of 79.11 GiB per H100-SXM as the device reports it; vLLM's profiled
    activation peak, non-torch memory and CUDA graphs not subtracted, so fewer fit"``; a GPU
    whose reported total ``data/gpus.csv`` lacks says its datasheet figure is used."""
    g = st.gpu
    total = (f"{g.device_memory_bytes / 2 ** 30:.2f} GiB per {g.name} as the device reports it"
             if g.total_memory_bytes is not None else
             f"{g.memory_bytes / 1e9:g} GB per {g.name}, its datasheet figure: the total the "
             "device reports was not found")
    return (f"{100 * st.memory_fraction:g} % of {total}; vLLM's profiled activation peak, "
            "non-torch memory and CUDA graphs not subtracted, so fewer fit")


def max_batch_in_memory(st: Setup, context, memory_fraction: float | None = None):
    """Most sequences of ``context`` tokens whose KV cache (target, plus the draft's for
    model, self and head drafts, within its KV budget) fits beside the weights in
    ``memory_fraction`` of the GPUs' reported total (default the setup's ``memory_fraction``,
    vLLM's ``gpu_memory_utilization`` 0.92): :func:`memory_cap`'s ``max_batch``. vLLM's
    non-torch memory, activation peak and CUDA graphs are not subtracted (:func:`memory_cap`),
    so the real limit is lower. 0 when the weights alone do not fit.
    Scalar context -> int, array -> int array.

    Raises
    ------
    ValueError
        context < 0 or fractional; memory_fraction outside (0, 1].
    """
    return memory_cap(st, context, memory_fraction)["max_batch"]


def _fits_one(st: Setup, context: int) -> bool:
    return memory_cap(st, context)["max_batch"] >= 1


def _tp_ok(st: Setup, n: int) -> bool:
    try:
        _check_tensor_parallel(st.target, n, "target")
        if st.draft.kind == "model":
            _check_tensor_parallel(st.draft.arch, n, "draft")
    except ValueError:
        return False
    return True


def contexts_over_max_positions(st: Setup, contexts) -> list[int]:
    """The contexts (sorted, distinct) above the target's ``max_position_embeddings``: vLLM
    refuses a ``--max-model-len`` above it at start (unless
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``), so no serve line can serve them
    (:func:`context_limit_notes` says why; :func:`cannot_serve` when every context is).
    Empty when the maximum is unknown."""
    mp = st.target.max_position_embeddings
    cs = np.atleast_1d(_check.integer("contexts", contexts, lo=0))
    return [] if mp is None else sorted({int(c) for c in cs if c > mp})


def cannot_serve(st: Setup, contexts, *, context_flag: str = "--context") -> Note | None:
    """Why nothing can be served, or None when at least one sequence fits at some context.

    ``no-context-within-max-positions``: every context is above the target's
    ``max_position_embeddings`` (:func:`contexts_over_max_positions`: vLLM refuses such a
    ``--max-model-len``); otherwise the memory codes below read the contexts within it.

    ``weights-do-not-fit``: the target's and draft's weights alone exceed vLLM's share
    (``gpu_memory_utilization``) of the GPUs' memory; ``no-sequence-fits``: they fit, but not
    one sequence's KV cache at any of ``contexts``. The message gives the sizes (GB) and what
    to change: the fewest ``--gpus`` that vLLM's tensor parallelism accepts and that hold one
    sequence of the shortest context (searched up to 64), a smaller ``--dtype`` at the same
    GPUs, ``--kv-cache-dtype fp8``, the longest context one sequence fits at (vLLM's
    ``--max-model-len``), vLLM's default ``--gpu-memory-utilization`` 0.92 when it is lower.
    Every speedup is then for a machine that could hold them: no on/off advice follows.
    ``context_flag``: the caller's flag for the context the message tells to change (plan's
    ``--context``; simulate's ``--input-len + --output-len``). ``--dtype fp8`` on an
    unquantized checkpoint is vLLM's online ``--quantization fp8``; int8 / int4 (and fp8 of a
    checkpoint quantized otherwise) need a quantized checkpoint.

    Raises
    ------
    ValueError
        a context < 0 or fractional.
    """
    cs = [int(c) for c in np.atleast_1d(_check.integer("contexts", contexts, lo=0))]
    over = contexts_over_max_positions(st, cs)
    if over and len(over) == len(set(cs)):
        mp = st.target.max_position_embeddings
        also = cannot_serve(st, [mp], context_flag=context_flag)  # what mp still lacks
        also = "" if also is None else "; and even there " + also.message.split(": ", 1)[1]
        return Note("no-context-within-max-positions",
                    f"nothing can be served: every {context_flag} ("
                    + ", ".join(f"{c:,}" for c in sorted(set(cs))) + f") is above the target "
                    f"{st.target.name}'s maximum of {mp:,} positions (max_position_embeddings), "
                    "and vLLM refuses a --max-model-len above it unless "
                    f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; change {context_flag} to at most {mp:,}, or "
                    "plan a long-context variant of the model" + also)
    cs = [c for c in cs if c not in over]
    if any(_fits_one(st, c) for c in cs):
        return None
    gb = lambda x: f"{x / 1e9:,.1f} GB"  # noqa: E731
    share = st.memory_fraction * st.gpus * st.gpu.device_memory_bytes
    where = (f"{st.gpus} x {st.gpu.name} ({gb(st.gpus * st.gpu.device_memory_bytes)}, "
             + ("SGLang mem_fraction_static" if st.engine.family == "sglang"
                else "gpu_memory_utilization") + f" {st.memory_fraction:g}: {gb(share)})")
    w_t, w_d = st.target.weight_bytes(st.dtype), st._draft_weight_bytes()
    shortest = min(cs)
    todo = []
    more = next((n for n in range(st.gpus + 1, 65) if _tp_ok(st, n)
                 and _fits_one(dataclasses.replace(st, gpus=n), shortest)), None)
    if more is not None:
        todo.append(f"--gpus {more}")
    for dt in ("fp8", "int8", "int4"):
        if DTYPES[dt] < DTYPES[st.dtype] and _fits_one(dataclasses.replace(st, dtype=dt),
                                                       shortest):
            online = dt == "fp8" and st.target.checkpoint_dtype is None
            todo.append(f"--dtype {dt} (" + ("vLLM's online --quantization fp8 of the same "
                        "checkpoint" if online else "a quantized checkpoint") + ")")
            break
    if st.engine.family != "sglang" and \
            st.memory_fraction < DEFAULT_GPU_MEMORY_UTILIZATION and _fits_one(
            dataclasses.replace(st, memory_fraction=DEFAULT_GPU_MEMORY_UTILIZATION), shortest):
        todo.append(f"--gpu-memory-utilization {DEFAULT_GPU_MEMORY_UTILIZATION:g}")
    if w_t + w_d >= share:
        todo_txt = "; change " + " or ".join(todo) if todo else ""
        return Note("weights-do-not-fit",
                    f"nothing can be served: the weights alone do not fit ({gb(w_t)} target"
                    + (f" + {gb(w_d)} draft" if w_d else "") + f" in {where}){todo_txt}")
    room = share - w_t - w_d
    kv = st.target.kv_bytes_per_token(kv_storage_dtype(st.kv_dtype, st.dtype))
    lo = max_model_len_that_fits(st, shortest)  # the longest context one sequence fits at
    if lo >= 1:
        todo.insert(0, f"{context_flag} (vLLM's --max-model-len) at most {lo:,}")
    if kv_storage_dtype(st.kv_dtype, st.dtype) != "fp8" and _fits_one(
            dataclasses.replace(st, kv_dtype="fp8"), shortest):
        todo.append("--kv-cache-dtype fp8")
    todo_txt = "; change " + " or ".join(todo) if todo else ""
    return Note("no-sequence-fits",
                f"nothing can be served: not even one sequence of {shortest:,} tokens fits "
                f"(its KV cache takes about {gb(shortest * kv)} for the target alone; "
                f"{gb(room)} is left beside the weights in {where}){todo_txt}")


def default_draft_dtype(d: Draft, dtype: str) -> str | None:
    """The weight dtype a draft runs in when ``draft_dtype`` is not given, as vLLM 0.33
    loads it (the one home of the rule, T6-M1 / T7-12): a draft model or EAGLE / EAGLE-3 /
    dflash head as its own checkpoint stores it (``SpeculativeConfig.quantization`` None: the
    target's ``--quantization`` is not applied to it), i.e. the catalogue's
    ``checkpoint_dtype`` of a draft model, else unquantized in the target's 16-bit dtype
    (``dtype`` bf16 / fp16; bf16 beside an fp8 / int8 / int4 / mxfp4 target, whose
    activations are bf16); None (the target's ``dtype``) for mtp (the target's own layers,
    which take its quantization), ``self`` and drafts without weights."""
    if d.method == "mtp" or d.kind not in ("model", "head"):
        return None
    if d.kind == "model" and d.arch.checkpoint_dtype is not None:
        return d.arch.checkpoint_dtype
    return dtype if dtype in ("bf16", "fp16") else "bf16"


def setup(gpu_name, model, draft_spec="eagle3", *, gpus=1, dtype=None, draft_dtype=None,
          kv_dtype=None, draft_kv_budget=None, target_efficiency=None, draft_efficiency=None,
          sd_overhead_ms=None, engine=None, proposal_rate=1.0, draft_config=None,
          gpu_memory_utilization=None, mean_draft_len=None) -> Setup:
    """A :class:`Setup` from names: ``setup("H100-SXM", "Llama-3.1-8B", "eagle3")``.

    Parameters
    ----------
    gpu_name : catalogue GPU name (case-insensitive) or GPU
    model : catalogue model name, config.json path or Architecture (the target)
    draft_spec : see :func:`draft`
    gpus : int >= 1, tensor-parallel size (the draft runs with the same size; an MoE model's
        experts are split over them, as tensor or expert parallelism alike)
    dtype, draft_dtype : weight dtypes, bf16 / fp16 / fp8 / int8 / int4 (mxfp4: a gpt-oss
        checkpoint's own); ``dtype`` None (the default): the published checkpoint's own
        (``Architecture.checkpoint_dtype``: DeepSeek-V3's fp8, gpt-oss's mxfp4), bf16 for an
        unquantized one, the dtype vLLM loads without --quantization / --dtype; a
        ``draft_dtype`` not given is the draft's own checkpoint's, whatever ``dtype`` says
        (:func:`default_draft_dtype`: a head or unquantized draft model in bf16 / the target's
        16-bit dtype; mtp: the target's), as vLLM loads it
    kv_dtype : vLLM's ``kv_cache_dtype``, one of :data:`specnb.serving.KV_CACHE_DTYPES`
        (default ``auto``, vLLM's: the activation dtype, bf16 also for fp8 weights; ``fp8``
        halves the KV bytes, and the serve line must then say ``--kv-cache-dtype fp8``;
        :func:`specnb.serving.kv_storage_dtype`)
    draft_kv_budget : int >= 1 or None
    target_efficiency : Efficiency (default :data:`DEFAULT_EFFICIENCY`; the ``ideal`` engine:
        the datasheet roofline)
    draft_efficiency : Efficiency (default :data:`DEFAULT_HEAD_EFFICIENCY` for eagle, eagle3
        and mtp, else :data:`DEFAULT_EFFICIENCY`; ``ideal``: the roofline)
    sd_overhead_ms : float >= 0, system overhead per verification (default: the engine
        profile's, else :data:`SD_OVERHEAD_MS`)
    engine : engine profile name or EngineProfile (default
        :data:`~specnb.serving.engines.DEFAULT_ENGINE`, ``vllm``; see
        :func:`specnb.serving.engines.profile_names`; a mixture-of-experts target takes the
        engine's ``-moe`` profile where one is fitted, :func:`~specnb.serving.engines.profile_for`)
    proposal_rate : float in (0, 1], M, for ``ngram`` / ``suffix`` only (default 1)
    draft_config : an EAGLE / EAGLE-3 head's config.json (see :func:`draft`)
    gpu_memory_utilization : float in (0, 1], the engine's share of GPU memory (weights + KV
        cache); None (the default): the engine's own, vLLM's 0.92 (vLLM 0.20+'s
        gpu_memory_utilization), for an SGLang profile SGLang's default --mem-fraction-static
        on this GPU and tp (:func:`specnb.limits.sglang_mem_fraction_static`, T7-03)
    mean_draft_len : float >= 1 or None, for ``ngram`` / ``suffix`` only: the mean tokens per
        draft (vLLM's ``num_draft_tokens / num_drafts``), verified in place of gamma (at most
        gamma; :func:`specnb.serving.workload.query_tokens`); None: every draft is gamma long

    Raises
    ------
    ValueError
        unknown GPU, model, draft, dtype or engine; gpus < 1; gpus that vLLM's tensor
        parallelism cannot split the target or draft model over (heads, KV heads, MLP width);
        the draft errors of :func:`draft`; a proposal rate outside (0, 1], or below 1 for a
        draft that proposes for every sequence; a memory utilization outside (0, 1].
    """
    g = gpu(gpu_name)
    tgt = architecture(model)
    from_checkpoint = dtype is None
    dtype = (tgt.checkpoint_dtype or "bf16") if from_checkpoint else dtype
    _check.choice("dtype", dtype, DTYPES)
    if draft_dtype is not None:
        _check.choice("draft_dtype", draft_dtype, DTYPES)
    kv_dtype = "auto" if kv_dtype is None else kv_dtype
    kv_storage_dtype(kv_dtype, dtype)  # checks both
    n = _check.scalar_int("gpus", gpus, lo=1)
    prof = engines.profile_for(engines.DEFAULT_ENGINE if engine is None else engine, tgt)
    m = limits.proposal_rate(proposal_rate)
    if gpu_memory_utilization is None:  # the engine's own share: one home each (T7-03)
        gpu_memory_utilization = (limits.sglang_mem_fraction_static(g.device_memory_bytes, n)
                                  if prof.family == "sglang"
                                  else DEFAULT_GPU_MEMORY_UTILIZATION)
    frac = limits.gpu_memory_utilization(gpu_memory_utilization)
    d = draft(draft_spec, tgt, kv_budget=draft_kv_budget, dtype=draft_dtype, config=draft_config)
    if draft_dtype is None:
        draft_dtype = default_draft_dtype(d, dtype)
    if m < 1.0 and d.method not in PARTIAL_PROPOSAL_METHODS:
        raise ValueError(f"proposal_rate {m:g} applies to {' / '.join(PARTIAL_PROPOSAL_METHODS)}"
                         f" drafting (vLLM proposes only where a match exists); {d.name} "
                         "drafts for every sequence: leave proposal_rate at 1")
    if mean_draft_len is not None:
        mean_draft_len = workload.check_mean_draft_len(mean_draft_len)
        if d.method not in PARTIAL_PROPOSAL_METHODS:
            raise _check.ParamValueError(
                f"mean_draft_len applies to {' / '.join(PARTIAL_PROPOSAL_METHODS)} drafting "
                f"(drafts that stop where the match does); {d.name} drafts gamma tokens",
                "mean_draft_len")
    _check_tensor_parallel(tgt, n, "target")
    if d.kind == "model":
        _check_tensor_parallel(d.arch, n, "draft")
    if sd_overhead_ms is None:
        sd_overhead_ms = SD_OVERHEAD_MS if prof.sd_overhead_ms is None else prof.sd_overhead_ms
    over = _check.scalar_real("sd_overhead_ms", sd_overhead_ms, lo=0.0)
    ideal = prof.efficiency
    if draft_efficiency is None:
        draft_efficiency = DEFAULT_HEAD_EFFICIENCY if d.kind == "head" else DEFAULT_EFFICIENCY
        if ideal:
            draft_efficiency = _ideal(draft_efficiency, ideal, head=d.kind == "head")
    if target_efficiency is None:
        target_efficiency = _ideal(DEFAULT_EFFICIENCY, ideal) if ideal else DEFAULT_EFFICIENCY
    return Setup(g, tgt, d, n, dtype, draft_dtype, kv_dtype, target_efficiency,
                 draft_efficiency, over, prof, m, frac, mean_draft_len)


def _ideal(eff: Efficiency, over: dict, head: bool = False) -> Efficiency:
    """An efficiency with a profile's overrides (``ideal``: peaks, no fixed cost, overlap)."""
    fixed = over.get("head_fixed_ms" if head else "fixed_ms", eff.fixed_ms)
    return dataclasses.replace(eff, bandwidth=over.get("bandwidth", eff.bandwidth),
                               compute=over.get("compute", eff.compute), fixed_ms=fixed,
                               overlap=over.get("overlap", eff.overlap))


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


def context_limit_notes(st, contexts) -> list[Note]:
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
    list of :class:`specnb.notes.Note` (``str(note)`` is its message): one note per model
    whose sliding window some context exceeds (modelled as
    full attention), and one per model whose maximum some context exceeds, naming the model,
    its maximum, the contexts above it and a long-context variant of the same shape from the
    catalogue where one exists (a draft model with a KV budget within its maximum: that vLLM
    cannot express the budget); empty when every context fits or the maximum is unknown.
    Codes: ``sliding-window-modelled-full`` (a context above the sliding window),
    ``draft-kv-budget-not-expressible`` (a draft model beyond its maximum, read within a KV
    budget vLLM cannot give it), ``context-over-max-positions`` (beyond a model's maximum).

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
            notes.append(Note(
                "sliding-window-modelled-full",
                f"the {role} {arch.name} uses sliding-window attention over the last {window} "
                f"tokens (config.json sliding_window); the step-time model reads the whole KV "
                f"cache, so above context {window} it overstates the attention bytes and "
                "FLOPs (the speedup is modelled as if attention were full)"))
        limit = arch.max_position_embeddings
        if limit is None or top <= limit:
            continue
        if role == "draft" and budget is not None and budget <= limit:
            notes.append(Note(
                "draft-kv-budget-not-expressible",
                f"the draft {arch.name} takes at most {limit} positions (max_position_embeddings)"
                f": the modelled draft reads only {budget} context tokens (KV budget, as "
                f"StreamingLLM), but vLLM's draft_model has no KV budget and would give it the "
                f"full context ({top}), beyond its maximum"))
            continue
        over = sorted({int(c) for c in np.ravel(s) if c > limit})
        variants = _long_context_variants(arch, top)
        fix = (f"use a long-context variant of the same shape ({'; '.join(variants)})"
               if variants else "use a long-context variant of the model (a larger "
               "max_position_embeddings, e.g. trained with RoPE scaling)")
        notes.append(Note(
            "context-over-max-positions",
            f"context {', '.join(map(str, over))} exceeds the {role} {arch.name}'s maximum of "
            f"{limit} positions (max_position_embeddings in its config.json): it cannot serve "
            f"that context (vLLM refuses a max_model_len above {limit}); the step times are "
            f"modelled regardless. {fix[0].upper() + fix[1:]} or a context within {limit}"))
    return notes


def check_tensor_parallel(model, gpus) -> None:
    """vLLM's tensor-parallel rule for one model on ``gpus`` GPUs, with no GPU named (the rule
    is the model's): ``model`` a catalogue name, Hugging Face id, config.json path or
    :class:`Architecture`; ``gpus`` an int >= 1 (``--tensor-parallel-size``).

    Raises
    ------
    ValueError
        ``gpus`` not an int >= 1; the attention heads, the MLP width or the KV heads do not
        split over ``gpus`` (the message names the allowed counts); an unknown model.
    """
    arch = model if isinstance(model, Architecture) else architecture(model)
    _check_tensor_parallel(arch, _check.scalar_int("gpus", gpus, lo=1), "target")


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


#: vLLM 0.33 ``--quantization`` values that store the weights in 8-bit floats
#: (``QuantizationMethods`` in ``vllm/model_executor/layers/quantization/__init__.py`` and the
#: online shorthands of ``vllm/config/quantization.py``): ``fp8`` (a checkpoint's own FP8, or
#: online on an unquantized one), the online ``fp8_per_tensor`` / ``fp8_per_block`` /
#: ``fp8_per_channel`` / ``mxfp8``, and FP8 checkpoints' methods.
FP8_QUANTIZATIONS = frozenset({"fp8", "fp8_per_tensor", "fp8_per_block", "fp8_per_channel",
                               "fbgemm_fp8", "mxfp8", "modelopt_mxfp8", "deepseek_v4_fp8"})
#: ``--quantization`` values whose weights are 4-bit (AWQ is always 4-bit; MXFP4 / NVFP4
#: checkpoints): counted as ``int4`` bytes (scales not counted).
FOUR_BIT_QUANTIZATIONS = frozenset({"awq", "auto_awq", "awq_marlin", "mxfp4", "gpt_oss_mxfp4",
                                    "modelopt_fp4"})


def serve_weight_args(arch: Architecture, dtype: str = "bf16"):
    """What a ``vllm serve`` line needs so that vLLM loads ``arch``'s weights in ``dtype``
    (the one home of the rule: the plan's and the simulation's serve lines use it).

    The catalogue knows the published checkpoint's own dtype (``arch.checkpoint_dtype``:
    DeepSeek-V3's is ``fp8``; None = unquantized bf16 / fp16):

    * ``dtype`` is the checkpoint's (fp8 on DeepSeek-V3; bf16 on an unquantized one): nothing;
      fp16 on an unquantized checkpoint: ``--dtype float16``.
    * ``fp8`` on an unquantized checkpoint: ``--quantization fp8``, vLLM's online FP8 (the
      weights are quantized as they load; vLLM 0.33 maps the name to ``fp8_per_tensor`` with
      a deprecation warning, ``vllm/model_executor/model_loader/weight_utils.py``;
      older releases know only ``fp8``), note ``fp8-online-quantization``.
    * anything else (int8 / int4, which vLLM cannot quantize a dense model to as it loads,
      or bf16 of an fp8 checkpoint): the model becomes the placeholder
      ``<NAME-DTYPE-checkpoint>`` (vLLM reads the quantization of an AWQ / GPTQ checkpoint
      from its config, so no flag), note ``quantized-checkpoint-placeholder``.

    Returns
    -------
    (model, extra_args, notes): the Hugging Face id (:func:`specnb.serving.model_id`) or the
    placeholder, a list of words, a list of :class:`specnb.notes.Note`.

    Raises
    ------
    ValueError
        an unknown dtype.
    """
    from .catalogue import model_id

    _check.choice("dtype", dtype, DTYPES)
    ck = arch.checkpoint_dtype
    model = model_id(arch)
    if dtype == ck or (ck is None and dtype == "bf16"):
        return model, [], []
    if ck is None and dtype == "fp16":
        return model, ["--dtype", "float16"], []
    if ck is None and dtype == "fp8":
        return model, ["--quantization", "fp8"], [Note(
            "fp8-online-quantization",
            f"--quantization fp8: vLLM quantizes the unquantized {arch.name} checkpoint's "
            "weights to fp8 as it loads them (online; vLLM 0.33 runs it as fp8_per_tensor and "
            "warns that the name is deprecated), which the plan's fp8 weights assume; or serve "
            f"an fp8 checkpoint of {arch.name} without the flag")]
    held = ck or "bf16"
    placeholder = _PLACEHOLDER.format(name=arch.name, dtype=dtype)
    how = ("an AWQ or GPTQ checkpoint (vLLM reads its quantization from the checkpoint's "
           "config, so the line needs no --quantization)" if dtype in ("int8", "int4")
           else "a conversion of it")
    return placeholder, [], [Note(
        "quantized-checkpoint-placeholder",
        f"replace {placeholder} with a checkpoint of {arch.name} in {dtype}: {how}; the published "
        f"{model} holds {held} weights, which vLLM cannot turn into {dtype} as it loads them, "
        f"and the plan's memory and step times assume {dtype} weights")]


#: The ``quantization_config.quant_method`` names vLLM 0.33's ``_verify_quantization`` matches
#: a ``--quantization`` against, by catalogue checkpoint dtype: an FP8 checkpoint's ``fp8``
#: (DeepSeek-V3; ``fbgemm_fp8`` too, as a config.json's fp8 may be either).
_CHECKPOINT_METHODS = {"fp8": ("fp8", "fbgemm_fp8")}


def quantization_conflict(arch: Architecture, quantization) -> Note | None:
    """What vLLM 0.33 does with ``--quantization quantization`` on ``arch``'s published
    checkpoint when the checkpoint is quantized (``arch.checkpoint_dtype``), the one home of
    the rule (``config check --serve``; :func:`serve_weight_args` never writes such a flag).

    ``vllm/config/model.py`` ``ModelConfig._verify_quantization``: the checkpoint's
    ``quant_method`` is first offered to the override methods; when none claims it and the
    flag differs, "Quantization method specified in the model config (fp8) does not match the
    quantization method specified in the `quantization` argument (awq)":
    ``quantization-mismatch`` (vLLM refuses to start). A gpt-oss MXFP4 checkpoint is claimed
    by ``GptOssMxfp4Config.override_quantization_method``
    (``model_executor/layers/quantization/mxfp4.py``), which returns ``gpt_oss_mxfp4``
    whatever the flag says: the flag is replaced, the MXFP4 weights load,
    ``quantization-overridden``. None: no flag, an unquantized checkpoint (the flag then
    quantizes online or names the method: other rules), or a matching flag."""
    ck = arch.checkpoint_dtype
    if quantization is None or ck is None:
        return None
    q = str(quantization).lower()
    if ck == "mxfp4":
        if q in ("mxfp4", "gpt_oss_mxfp4"):
            return None
        return Note("quantization-overridden",
                    f"--quantization {quantization} on the {arch.name} checkpoint, which stores "
                    "its experts in MXFP4: vLLM 0.33 ignores it (GptOssMxfp4Config."
                    "override_quantization_method claims the checkpoint as gpt_oss_mxfp4 "
                    "whatever the flag) and loads the MXFP4 weights")
    methods = _CHECKPOINT_METHODS.get(ck)
    if methods is None or q in methods:
        return None
    return Note("quantization-mismatch",
                f"--quantization {quantization} on the {arch.name} checkpoint, which is "
                f"quantized ({methods[0]}): vLLM refuses to start (ModelConfig."
                "_verify_quantization: 'Quantization method specified in the model config "
                f"({methods[0]}) does not match the quantization method specified in the "
                f"`quantization` argument ({quantization})')")


#: The model :func:`serve_weight_args` prints for a checkpoint it cannot name.
_PLACEHOLDER = "<{name}-{dtype}-checkpoint>"


def read_checkpoint_placeholder(model: str):
    """``(catalogue name, dtype)`` of a model that is :func:`serve_weight_args`'s placeholder
    ``<NAME-DTYPE-checkpoint>`` (DTYPE a :data:`DTYPES` key), else None."""
    text = str(model)
    if not (text.startswith("<") and text.endswith("-checkpoint>")):
        return None
    name, _, dtype = text[1:-len("-checkpoint>")].rpartition("-")
    return (name, dtype) if name and dtype in DTYPES else None


def serve_weight_dtype(arch: Architecture, quantization=None, dtype=None):
    """The :data:`DTYPES` key of the weights vLLM loads for ``arch`` with ``--quantization``
    ``quantization`` and ``--dtype`` ``dtype`` (the reverse of :func:`serve_weight_args`):
    a quantized checkpoint's own dtype (``arch.checkpoint_dtype``) first (vLLM loads what the
    checkpoint stores), then a ``--quantization`` in :data:`FP8_QUANTIZATIONS` -> ``fp8``, in
    :data:`FOUR_BIT_QUANTIZATIONS` -> ``int4``, then ``--dtype`` half / float16 -> ``fp16``,
    else ``bf16`` (auto, bfloat16, unset).

    Returns
    -------
    (dtype or None, why): None with a reason when the width is not known from the line
    (a GPTQ / compressed-tensors / ... method without the checkpoint's config; fp32 weights).
    """
    ck = arch.checkpoint_dtype
    if ck == "mxfp4":
        return ck, (f"the {arch.name} checkpoint stores its experts in MXFP4, 4.25 bits, the "
                    "rest bf16")
    if ck is not None:
        return ck, f"the {arch.name} checkpoint stores {ck} weights"
    q = None if quantization is None else str(quantization).lower()
    if q in FP8_QUANTIZATIONS:
        return "fp8", f"--quantization {quantization}"
    if q in FOUR_BIT_QUANTIZATIONS:
        return "int4", f"--quantization {quantization} (4-bit weights)"
    if q is not None:
        return None, (f"--quantization {quantization}: the weight width comes from the "
                      "checkpoint's quantization_config, which specnb has not read (give "
                      "--target-config PATH, the checkpoint's config.json)")
    d = None if dtype is None else str(dtype).lower()
    if d in ("half", "float16"):
        return "fp16", f"--dtype {dtype}"
    if d in ("float", "float32"):
        return None, f"--dtype {dtype}: fp32 weights are not a serving dtype specnb models"
    return "bf16", "the unquantized checkpoint" + ("" if d in (None, "auto")
                                                   else f", --dtype {dtype}")


def max_model_len_that_fits(st: Setup, upper: int) -> int:
    """The longest context (tokens, at most ``upper``) one sequence's KV cache (target and
    draft) fits at beside the weights: vLLM V1's ``estimate_max_model_len`` on specnb's
    memory model (``vllm/v1/core/kv_cache_planning.py``, v0.33.0); 0 when not even one
    token fits."""
    lo, hi = 0, int(upper)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _fits_one(st, mid) else (lo, mid - 1)
    return lo
