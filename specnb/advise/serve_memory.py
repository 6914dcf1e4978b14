"""The memory of a whole ``vllm serve`` line on a named GPU: the one memory rule ``plan`` uses
(:func:`specnb.serving.max_batch_in_memory`) read with the line's own settings, the weight
dtype included, and vLLM V1's refusal to start when one sequence at ``--max-model-len`` does
not fit. ``specnb config check --serve LINE --gpu G`` prints these findings.

L3: reads :mod:`specnb.serving` (the memory model) and :mod:`specnb.vllm` (the parsed line,
:class:`~specnb.vllm.Finding`), which never import each other.

Finding codes (stable): ``memory-not-checked`` (note: the target, its weight dtype or the
``--kv-cache-dtype`` is not one specnb models), ``serve-tensor-parallel`` (error: vLLM's
tensor-parallel refusal), ``kv-cache-below-max-model-len`` (error: vLLM refuses to start),
``verify-memory-cap`` (note: fewer than ``--max-num-seqs`` sequences at ``--max-model-len``);
from :func:`serve_batch_findings` ``serve-default-batched-tokens-below-seqs`` (error),
``spec-scheduled-tokens-below-8192`` (warning), ``spec-batched-tokens-within-lookahead``
(error); from
:func:`serve_target_findings` ``serve-tensor-parallel``, ``serve-max-model-len-above-target``
(a warning, ``serve-max-model-len-above-target-allowed``, with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)
(errors), ``target-placeholder`` (warning: the model is plan's ``<NAME-DTYPE-checkpoint>``,
checked as NAME in DTYPE).
"""

from __future__ import annotations

import dataclasses

from .. import hf_config

__all__ = ["serve_target_findings", "serve_memory_findings", "serve_batch_findings"]

#: The draft method a ``speculative_config``'s ``method`` is modelled as (a draft model's
#: weights are not known from the line: an EAGLE-3 head stands in).
_SPEC = {"eagle": "eagle", "eagle3": "eagle3", "mtp": "mtp", "ngram": "ngram",
         "suffix": "suffix"}


def _target(model: str, target_config):
    """The target to model (``target_config`` first) and, when ``model`` is plan's placeholder
    ``<NAME-DTYPE-checkpoint>`` (:func:`specnb.serving.read_checkpoint_placeholder`), its
    catalogue name with the placeholder's dtype (else None)."""
    from .. import serving as S

    placed = None if target_config else S.read_checkpoint_placeholder(model)
    return (target_config or model, None) if placed is None else placed


def serve_target_findings(settings: dict, model: str, *, target_config=None,
                          env=None, speculative_config=None) -> tuple:
    """vLLM's refusals that depend on the served model alone, GPU or not, when specnb knows
    the target (catalogue name or Hugging Face id, or its config.json, ``target_config``
    first): ``-tp`` that does not split the model (:func:`specnb.serving.check_tensor_parallel`,
    code ``serve-tensor-parallel``) and a ``--max-model-len`` above the target's
    max_position_embeddings (:func:`specnb.serving.context_limit_notes`'s
    ``context-over-max-positions``: vLLM's ``_get_and_verify_max_len`` refuses it unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; code ``serve-max-model-len-above-target``) and a
    ``--quantization`` that contradicts the checkpoint's own
    (:func:`specnb.serving.quantization_conflict`: ``quantization-mismatch``), as errors;
    a ``--quantization`` vLLM overrides (``quantization-overridden``), a warning.
    A config with RoPE scaling is not judged on ``--max-model-len`` (vLLM scales its derived
    maximum by some RoPE types' factor, which specnb does not model). ``env``: the line's
    environment (:attr:`specnb.vllm.ServeLine.env`); with ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``
    ``1`` / ``true`` (vLLM 0.33 ``envs.py``) the long ``--max-model-len`` is vLLM's warning,
    not its refusal (``config/model.py``: "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with
    extreme caution"): a warning, code ``serve-max-model-len-above-target-allowed``. A model
    that is plan's placeholder ``<NAME-DTYPE-checkpoint>`` is checked as NAME, with a warning
    (code ``target-placeholder``).
    ``speculative_config`` (the line's, parsed): method ``mtp`` without a model on a catalogue
    target whose ``mtp_layers`` is 0 is vLLM's refusal (:func:`specnb.vllm.mtp_target_finding`,
    code ``mtp-target-without-mtp``; with ``target_config`` the config check's own rule reads
    the config). Empty for a model specnb does not know."""
    from .. import serving as S
    from ..vllm import Finding

    s = settings
    target, held = _target(model, target_config)
    try:
        arch, cfg = S.resolve_architecture(target)
    except (OSError, ValueError, KeyError, TypeError):
        return ()  # not a model specnb knows: nothing more to check
    text = (cfg or {}).get("text_config") if isinstance((cfg or {}).get("text_config"), dict) \
        else cfg or {}
    scaled = bool(text.get("rope_scaling") or text.get("rope_parameters"))
    found = [] if held is None else [Finding(
        "warning", None, f"the model {model!r} is specnb plan's placeholder for a checkpoint of "
        f"{arch.name} in {held}; vLLM would try to load a model by that name (checked here as "
        f"{arch.name} with {held} weights)",
        f"replace it with a checkpoint of {arch.name} in {held} (an AWQ or GPTQ one for int4 / "
        "int8: vLLM reads its quantization from the checkpoint's config)",
        code="target-placeholder")]
    spec = speculative_config if isinstance(speculative_config, dict) else {}
    if target_config is None and hf_config.is_mtp_type(str(spec.get("method"))) \
            and spec.get("model") is None \
            and arch.mtp_layers == 0:  # the catalogue's fact, vLLM's rule (T7-10)
        from ..vllm import mtp_target_finding

        found.append(mtp_target_finding(f"the catalogue's {arch.name} (mtp_layers 0)"))
    clash = S.quantization_conflict(arch, s.get("quantization"))
    if clash is not None:
        level, fix = (("error", "drop --quantization (vLLM reads the checkpoint's own)")
                      if clash.code == "quantization-mismatch" else
                      ("warning", "drop --quantization: it changes nothing"))
        found.append(Finding(level, None, clash.message, fix, code=clash.code))
    tp = s.get("tensor_parallel_size", 1)
    if isinstance(tp, int) and tp > 1:
        try:
            S.check_tensor_parallel(arch, tp)
        except ValueError as exc:
            found.append(Finding("error", None, f"-tp {tp}: {str(exc).splitlines()[0]}",
                                 "give an allowed --tensor-parallel-size",
                                 code="serve-tensor-parallel"))
    mml = s.get("max_model_len")
    if isinstance(mml, int) and mml > 0 and not scaled:
        for note in S.context_limit_notes(arch, [mml]):
            allowed = str((env or {}).get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0")).strip() \
                .lower() in ("1", "true")  # vLLM 0.33 envs.py's reading
            if note.code == "context-over-max-positions" and allowed:
                found.append(Finding(
                    "warning", None, f"--max-model-len {mml} is above the target {arch.name}'s "
                    f"max_position_embeddings {arch.max_position_embeddings}; with "
                    "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vLLM starts and warns 'must be used with "
                    "extreme caution. If the model uses relative position encoding (RoPE), "
                    "positions exceeding derived_max_model_len lead to nan'",
                    f"keep requests within {arch.max_position_embeddings} tokens, or serve a "
                    "long-context variant of the model",
                    code="serve-max-model-len-above-target-allowed"))
            elif note.code == "context-over-max-positions":
                found.append(Finding(
                    "error", None, f"--max-model-len {mml} is above the target {arch.name}'s "
                    f"max_position_embeddings {arch.max_position_embeddings}: vLLM refuses it at "
                    "start ('User-specified max_model_len ... is greater than the derived "
                    "max_model_len') unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is set",
                    f"give --max-model-len {arch.max_position_embeddings} or less, or a "
                    "long-context variant of the model", code="serve-max-model-len-above-target"))
    return tuple(found)


def serve_memory_findings(settings: dict, model: str, config: dict, gpu: str, *,
                          target_config=None) -> tuple:
    """Findings on the memory of a serve line's target on ``gpu``.

    Parameters
    ----------
    settings : the line's settings ({dest: value}, :func:`specnb.vllm.parse_serve_line`):
        ``quantization``, ``dtype``, ``kv_cache_dtype``, ``tensor_parallel_size``,
        ``gpu_memory_utilization``, ``max_model_len``, ``max_num_seqs`` are read
    model : the served model (a catalogue name or Hugging Face id); ``target_config`` (a
        config.json path) wins over it
    config : the ``speculative_config`` (its ``method`` picks the draft modelled)
    gpu : a catalogue GPU name

    The weights are in the dtype vLLM loads (:func:`specnb.serving.serve_weight_dtype`: the
    checkpoint's own, e.g. DeepSeek-V3's fp8, else ``--quantization`` fp8 -> fp8, else
    ``--dtype``). At ``--max-model-len`` (else the target's ``max_position_embeddings``):
    when not even one sequence's KV cache fits beside the weights, vLLM V1 refuses to start
    (``check_enough_kv_cache_memory``, ``vllm/v1/core/kv_cache_planning.py`` v0.33.0: "To
    serve at least one request with the model's max seq len ...  Try increasing
    `gpu_memory_utilization` ... or decreasing `max_model_len`"): an error whose fix is the
    longest ``--max-model-len`` that fits (vLLM's own estimate) or a higher
    ``--gpu-memory-utilization``. When one fits but fewer than ``--max-num-seqs`` (vLLM's
    default on the GPU when not given), a note: vLLM starts and preempts when the cache fills.
    ``--max-model-len auto`` / ``-1`` (vLLM 0.33 ``human_readable_int_or_auto``): vLLM fits
    max_model_len to the KV cache (``_auto_fit_max_model_len``, same file), so the check runs
    at the longest length that fits (at most the target's), note ``max-model-len-auto-fit``;
    it fails only when not one token fits, error ``max-model-len-auto-fit-fails``.

    Returns
    -------
    tuple of :class:`specnb.vllm.Finding` (empty when every sequence fits).
    """
    from .. import serving as S
    from ..simulate.engine import default_batch_limits
    from ..vllm import Finding

    s = settings
    target, held = _target(model, target_config)
    # no --speculative-config: the target alone (ngram: a draft without weights or KV cache)
    spec = "ngram" if config is None else _SPEC.get(config.get("method") or "draft_model",
                                                    "eagle3")
    kv = s.get("kv_cache_dtype") or "auto"
    tp = s.get("tensor_parallel_size", 1)
    util = s.get("gpu_memory_utilization", S.DEFAULT_GPU_MEMORY_UTILIZATION)

    def not_checked(why):
        return (Finding("note", None, f"memory at --max-num-seqs not checked: {why}",
                        "give --target-config PATH (the served model's config.json)",
                        code="memory-not-checked"),)

    try:
        arch = S.architecture(target)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return not_checked(f"the target {target!r} is not one specnb models "
                           f"({str(exc).splitlines()[0]})")
    dtype, why = ((held, "the placeholder's dtype") if held is not None else
                  S.serve_weight_dtype(arch, s.get("quantization"), s.get("dtype")))
    if dtype is None:
        return not_checked(why)
    try:
        st = S.setup(gpu, arch, spec, dtype=dtype, gpu_memory_utilization=util, kv_dtype=kv)
    except (OSError, ValueError, KeyError) as exc:
        return not_checked(f"--kv-cache-dtype {kv} or the target is not one specnb models "
                           f"({str(exc).splitlines()[0]})")
    if tp != 1:
        try:
            st = S.setup(gpu, arch, spec, gpus=tp, dtype=dtype, gpu_memory_utilization=util,
                         kv_dtype=kv)
        except ValueError as exc:
            return (Finding("error", None, f"-tp {tp}: {str(exc).splitlines()[0]}",
                            "give an allowed --tensor-parallel-size",
                            code="serve-tensor-parallel"),)
    mml = s.get("max_model_len")
    ctx = mml if isinstance(mml, int) and mml > 0 else st.target.max_position_embeddings
    if ctx is None:
        return not_checked(f"the target {arch.name}'s max_position_embeddings is unknown and "
                           "the line gives no --max-model-len")
    where = f"{gpu} x{st.gpus}"
    weights = f"{dtype} weights ({why})"
    auto = []
    if mml == -1:  # 'auto' / -1: vLLM fits max_model_len to the KV cache (_auto_fit_...)
        fits = S.max_model_len_that_fits(st, ctx)
        if fits < 1:
            return (Finding(
                "error", None, f"vLLM refuses to start: --max-model-len auto needs room for "
                f"one token's KV cache of target and draft ({kv}) beside the {weights}, and "
                f"on {where} at gpu_memory_utilization {st.memory_fraction:g} none is left "
                "(vLLM 0.33 _auto_fit_max_model_len: 'Cannot auto-fit max_model_len: not "
                "enough GPU memory available to serve even a single token')",
                "a larger GPU, more GPUs (-tp), a smaller weight dtype or a higher "
                "--gpu-memory-utilization", code="max-model-len-auto-fit-fails"),)
        auto = [Finding(
            "note", None, f"--max-model-len auto (-1): vLLM fits max_model_len to the KV cache "
            f"(v1/core/kv_cache_planning.py _auto_fit_max_model_len): "
            + (f"about {fits} of the target {arch.name}'s {ctx} positions fit on {where}, "
               "so vLLM serves sequences up to that length ('Auto-fit max_model_len: reduced "
               f"from {ctx} ...')" if fits < ctx else
               f"the target {arch.name}'s full {ctx} positions fit on {where}"),
            "" if fits >= ctx else f"give --max-model-len {fits} or less to pin the length "
            "yourself",
            code="max-model-len-auto-fit")]
        ctx = min(fits, ctx)
    cap = int(S.max_batch_in_memory(st, ctx))
    if cap < 1:
        left = (st.memory_fraction * st.gpus * st.gpu.device_memory_bytes
                - st.target.weight_bytes(st.dtype) - st._draft_weight_bytes())
        fits = S.max_model_len_that_fits(st, ctx)
        higher = next((u for u in (0.92, 0.95) if u > st.memory_fraction
                       and S.max_batch_in_memory(
                           dataclasses.replace(st, memory_fraction=u), ctx) >= 1), None)
        todo = ([f"--max-model-len {fits} or less"] if fits >= 1 else []) + (
            [f"--gpu-memory-utilization {higher:g}"] if higher is not None else [])
        return (Finding(
            "error", None, f"vLLM refuses to start: one sequence at --max-model-len {ctx} "
            f"({'given' if ctx == mml else 'the target ' + arch.name + chr(39) + 's maximum'}) "
            f"needs its KV cache of {'the target' if config is None else 'target and draft'} "
            f"({kv}) beside the {weights}, and on "
            f"{where} at gpu_memory_utilization {st.memory_fraction:g} "
            + (f"only {left / 1e9:,.1f} GB is left (vLLM V1's check_enough_kv_cache_memory: "
               "'To serve at least one request with the model's max seq len ... Try "
               "increasing `gpu_memory_utilization` ... or decreasing `max_model_len`')"
               if left > 0 else "nothing is left beside the weights (vLLM V1's "
               "check_enough_kv_cache_memory: 'No available memory for the cache blocks. "
               "Try increasing `gpu_memory_utilization`')"),
            ("give " + " or ".join(todo)) if todo else "a larger GPU, more GPUs (-tp) or a "
            "smaller weight dtype: the weights alone leave no room",
            code="kv-cache-below-max-model-len"),)
    seqs = s.get("max_num_seqs") or default_batch_limits(gpu)[1]
    if cap >= seqs:
        return tuple(auto)
    given = "" if "max_num_seqs" in s else f" (vLLM's default on {gpu})"
    return (*auto, Finding("note", None, f"--max-num-seqs {seqs}{given}: if every sequence reached "
                    f"--max-model-len {ctx}, the KV cache of the target"
                    f"{'' if config is None else ' and the draft'} ({kv}) "
                    f"would hold {cap} of them on {where} beside the {weights} "
                    "(specnb.serving's memory cap: the device's reported total, vLLM's non-torch "
                    "memory, activation peak and CUDA graphs not subtracted); shorter "
                    "sequences fit more, and vLLM preempts when the cache is full",
                    f"serve with --max-num-seqs {cap} or a shorter --max-model-len, if "
                    "sequences are that long", code="verify-memory-cap"),)


def serve_batch_findings(settings: dict, gpu: str, config: dict | None = None) -> tuple:
    """vLLM's refusal of a ``--max-num-seqs`` above the token budget it defaults to on
    ``gpu`` when the line gives no ``--max-num-batched-tokens``.

    vLLM 0.33 ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args``: an unset
    ``max_num_batched_tokens`` becomes the usage default for ``vllm serve``
    (:func:`specnb.simulate.engine.default_batch_limits`: 8192 on H100 / H200, 2048 on smaller
    GPUs and A100, 16384 from 160 GiB; doubled with ``--performance-mode throughput``), capped at
    ``max_num_seqs x max_model_len`` and never raised to ``max_num_seqs`` (with chunked prefill,
    V1's default); then ``SchedulerConfig._verify_args`` raises "max_num_batched_tokens (8192)
    must be greater than or equal to max_num_seqs (8600)". An explicit
    ``--max-num-batched-tokens`` is the line rule's (``serve-batched-tokens-below-seqs``).
    ``--no-enable-chunked-prefill`` raises the default to max_model_len, which is not read
    here: no finding then.

    With the line's ``speculative_config`` (``config``), that default budget is also judged
    by vLLM's ``_set_max_num_scheduled_tokens``
    (:func:`specnb.vllm.rules.serve.scheduled_token_findings`: ``spec-scheduled-tokens-below-8192``
    warning, ``spec-batched-tokens-within-lookahead`` error), capped at
    ``max_num_seqs x max_model_len`` as vLLM caps it (trial 7, T7-01); the line's explicit
    flags are the serve-line rule's.

    Returns
    -------
    tuple of :class:`specnb.vllm.Finding`: a ``serve-default-batched-tokens-below-seqs``
    error and the scheduled-token findings, or empty.
    """
    from ..simulate.engine import default_batch_limits
    from ..vllm import Finding
    from ..vllm.rules.serve import scheduled_token_findings

    s = settings
    seqs = s.get("max_num_seqs")
    if s.get("max_num_batched_tokens") is not None or s.get("enable_chunked_prefill") is False:
        return ()
    double = 2 if s.get("performance_mode") == "throughput" else 1
    default_tokens, default_seqs = default_batch_limits(gpu)
    tokens = default_tokens * double
    found = ()
    if isinstance(config, dict):
        budget, mml = tokens, s.get("max_model_len")
        n = seqs if isinstance(seqs, int) else default_seqs * double
        if isinstance(mml, int) and mml > 0 and n >= 1:
            budget = min(budget, n * mml)  # _set_default_max_num_seqs_and_batched_tokens_args
        explicit = s.get("max_num_scheduled_tokens")
        found = tuple(Finding(sev, None, msg, fix, code=code) for code, sev, msg, fix in
                      scheduled_token_findings(
                          config.get("method"), config.get("num_speculative_tokens"),
                          scheduled=None if explicit is not None else budget, budget=budget,
                          source=f" (vLLM's default budget on {gpu}, no "
                          "--max-num-batched-tokens in the line)"))
    if not isinstance(seqs, int) or seqs <= tokens:
        return found
    return found + (Finding("error", None, f"--max-num-seqs {seqs} without --max-num-batched-tokens: "
                    f"vLLM's default budget on {gpu} is {tokens} tokens "
                    "(EngineArgs._set_default_max_num_seqs_and_batched_tokens_args), never "
                    "raised to max_num_seqs, and SchedulerConfig refuses it at start: "
                    f"'max_num_batched_tokens ({tokens}) must be greater than or equal to "
                    f"max_num_seqs ({seqs})'",
                    f"add --max-num-batched-tokens {seqs} (or more), or lower --max-num-seqs "
                    f"to {tokens}", code="serve-default-batched-tokens-below-seqs"),)
