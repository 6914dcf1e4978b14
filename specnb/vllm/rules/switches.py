"""The switch rules: tensor parallelism, the quantization name, keys only one method takes,
synthetic acceptance and the dynamic schedule (``num_speculative_tokens_per_batch_size``,
:mod:`specnb.vllm.schedule`)."""

from __future__ import annotations

import json

from .._versions import version_key
from ..schedule import (SCHEDULE_CLAMPED_CODE, SCHEDULE_DROPPED_CODE, SCHEDULE_SEMANTICS,
                        V1_SCHEDULE_METHODS, clamp_schedule, describe_schedule,
                        schedule_dropped, schedule_problems, schedule_tax_text)

#: The release whose ``VllmConfig`` the dropped-schedule rule (and the serve rules'
#: ``_set_max_num_scheduled_tokens`` and V2-runner checks) were read from (vLLM 0.33.0
#: ``config/vllm.py``); older releases are not judged by them (not read).
SCHEDULE_DROP_READ = "0.33.0"
from .context import NO_DRAFT_BRANCH, TRAPS, Context, as_int


def tensor_parallel(ctx: Context) -> None:
    """tensor_parallel_size (vLLM's own message) and draft_tensor_parallel_size."""
    if ctx.given("tensor_parallel_size"):
        ctx.add("tensor-parallel-size", "error", "tensor_parallel_size", "'tensor_parallel_size' "
                "is not a valid argument in the speculative_config. Please pass "
                f"'draft_tensor_parallel_size' instead. ({ctx.vname})", "rename it to "
                "'draft_tensor_parallel_size' (1 or the target's --tensor-parallel-size)")
    dtp = ctx.values.get("draft_tensor_parallel_size")
    if dtp is not None and dtp > 1:
        ctx.add("draft-tensor-parallel-size", "warning", "draft_tensor_parallel_size",
                f"draft_tensor_parallel_size={dtp} must be 1 or equal to the target's "
                "--tensor-parallel-size, else vLLM raises 'cannot be other value than 1 or "
                "target model tensor_parallel_size'", "use 1, or the target's tensor parallel "
                "size")


def quantization(ctx: Context) -> None:
    """An unknown quantization name: the draft's ModelConfig refuses it (methods that load a
    draft checkpoint; the others never build one)."""
    quant, names = ctx.values.get("quantization"), ctx.table.quantization_methods
    if isinstance(quant, str) and names and quant not in names and \
            ctx.method not in NO_DRAFT_BRANCH:
        ctx.add("unknown-quantization", "error", "quantization", f"quantization {quant!r} is "
                f"not one of {ctx.vname}'s quantization methods: the draft's ModelConfig "
                "raises 'Unknown quantization method'", f"use one of {', '.join(names[:8])}, "
                "... (or drop it: the draft takes the target's)")


def method_switches(ctx: Context) -> None:
    """Keys that only some methods accept (the release's messages)."""
    m, v = ctx.method, ctx.values
    if ctx.given("index_share_for_mtp_iteration") and m != "mtp":
        ctx.add("mtp-only-key", "error", "index_share_for_mtp_iteration",
                "index_share_for_mtp_iteration is only supported with method='mtp'", "remove it")
    if v.get("enable_adaptive_verification") and v.get("use_local_argmax_reduction") and \
            m != "dspark":
        ctx.add("adaptive-verification-argmax", "error", "enable_adaptive_verification",
                "Adaptive verification estimates per-position acceptance from the draft logits, "
                "which use_local_argmax_reduction never materializes. Disable one of them.",
                "drop one of them")
    for key, owner, code, words in (("dspark_draft_topk", "dspark", "dspark-only-key", "DSpark"),
                                    ("xpress_topc", "dflash", "xpress-only-key", "XPress")):
        if not ctx.given(key) or m == owner:
            continue
        if m not in NO_DRAFT_BRANCH:
            ctx.add(code, "error", key, f"{key} is only supported by {words}", "remove it")
        else:
            ctx.add("switch-ignored", "warning", key, f"{key} does nothing for method '{m}' "
                    f"({ctx.vname} checks it only for methods that load a draft checkpoint)",
                    "remove it")
    if ctx.given("draft_lm_head_quantization") and m not in TRAPS["lm_head_quantization_methods"]:
        ctx.add("lm-head-quantization-method", "error", "draft_lm_head_quantization",
                f"draft_lm_head_quantization is not supported for method {m!r}.",
                "remove it (eagle, eagle3 and mtp only)")
    _fly(ctx)
    if v.get("use_heterogeneous_vocab"):
        for bad, code, msg, fix in (
                (m != "draft_model", "heterogeneous-vocab-method", "use_heterogeneous_vocab "
                 "only works with method='draft_model'", "remove it"),
                (v.get("draft_sample_method") == "probabilistic", "heterogeneous-vocab-sampling",
                 "use_heterogeneous_vocab currently only supports greedy draft sampling",
                 "set draft_sample_method='greedy' (the default) or omit it"),
                (v.get("use_local_argmax_reduction"), "heterogeneous-vocab-argmax",
                 "use_heterogeneous_vocab and use_local_argmax_reduction cannot be used "
                 "together", "drop use_local_argmax_reduction")):
            if bad:
                ctx.add(code, "error", "use_heterogeneous_vocab", msg, fix)
    if v.get("parallel_drafting") and m not in TRAPS["parallel_drafting_methods"]:
        ctx.add("parallel-drafting-method", "warning", "parallel_drafting", "parallel_drafting "
                f"is \"only compatible with EAGLE and draft model methods\", not '{m}'",
                "remove it")
    if ctx.given("draft_load_config"):
        ctx.add("draft-load-config", "warning", "draft_load_config", "draft_load_config "
                "defaults to the target's load config and is not intended to be set by users",
                "remove it unless you know the draft needs a different loader")


def _fly(ctx):
    v, nst = ctx.values, ctx.values.get("num_speculative_tokens")
    if v.get("rejection_sample_method") != "fly" or nst is None:
        return
    ctx.add("fly-lossy", "warning", "rejection_sample_method", "FLy verification is a lossy "
            "speculative decoding method and may degrade model outputs "
            f"({ctx.vname}'s warning)", "use 'standard' where outputs must match")
    win = v.get("fly_window_size")
    if ctx.method == "extract_hidden_states":
        ctx.add("fly-method", "error", "rejection_sample_method", "FLy is not compatible with "
                "method='extract_hidden_states'", "use 'standard'")
    elif nst < 2:
        ctx.add("fly-needs-k2", "error", "num_speculative_tokens", "FLy requires "
                "num_speculative_tokens to be at least 2.", "use 2 or more")
    elif win is not None and win >= nst:
        ctx.add("fly-window", "error", "fly_window_size", "FLy requires fly_window_size to be "
                "smaller than num_speculative_tokens.", f"use at most {nst - 1}")


def synthetic(ctx: Context) -> None:
    """synthetic_acceptance_rates / _length: only with rejection_sample_method='synthetic'."""
    v, nst = ctx.values, ctx.values.get("num_speculative_tokens")
    key, length_key = "synthetic_acceptance_rates", "synthetic_acceptance_length"
    rates, length = v.get(key), v.get(length_key)
    given = [k for k in (key, length_key) if ctx.given(k)]
    if v.get("rejection_sample_method") != "synthetic":
        if given:
            ctx.add("synthetic-needs-method", "error", given[0], "synthetic_acceptance_rates / "
                    "synthetic_acceptance_length are only valid with "
                    "rejection_sample_method='synthetic'.", "remove them")
        return
    ctx.add("synthetic-not-lossless", "warning", "rejection_sample_method", "'synthetic' "
            "accepts drafts with a calibrated probability: a benchmarking mode whose outputs are "
            "not the target model's (not lossless)", "use 'standard' in production")
    if len(given) != 1:
        ctx.add("synthetic-needs-one", "error", "rejection_sample_method",
                "rejection_sample_method='synthetic' requires exactly one of "
                "synthetic_acceptance_rates or synthetic_acceptance_length.",
                "give exactly one of them")
        return
    if nst is None:
        return
    if rates is not None:
        if len(rates) != nst:
            ctx.add("synthetic-rates-length", "error", key, f"{key} must have length {nst}, "
                    f"got {rates}.", f"give {nst} rates")
        elif not all(0 <= r <= 1 for r in rates):
            ctx.add("synthetic-rates-range", "error", key, f"{key} entries must be in [0, 1], "
                    f"got {rates}.", "use fractions in [0, 1]")
        elif any(rates[i] > rates[i - 1] for i in range(1, len(rates))):
            ctx.add("synthetic-rates-order", "error", key, f"{key} must be non-increasing, "
                    f"got {rates}.", "sort them descending")
    elif length is not None and not 1.0 <= length <= nst + 1:
        ctx.add("synthetic-length-range", "error", "synthetic_acceptance_length",
                f"synthetic_acceptance_length must be in [1, {nst + 1}], got {length}.",
                f"use a value in [1, {nst + 1}]")


def schedule(ctx: Context) -> None:
    """num_speculative_tokens_per_batch_size: vLLM's validation, clamping and cost."""
    key = "num_speculative_tokens_per_batch_size"
    rows, nst = ctx.values.get(key), ctx.values.get("num_speculative_tokens")
    if rows is None:
        return
    if rows == []:
        ctx.add("schedule-empty-fails-later", "warning", key, f"{key} is empty: {ctx.vname} "
                "accepts the config and the scheduler skips an empty schedule, but the GPU "
                "model runner's CUDA-graph setup then raises 'num_speculative_tokens_per_batch_"
                "size must not be empty.'", "omit the key for a static num_speculative_tokens, "
                "or give at least one [range_start, range_end, K] entry")
        return
    problems = schedule_problems(rows)
    for problem in problems:
        ctx.add("schedule-invalid", "error", key, f"{key}: {problem} ({ctx.vname}'s schedule "
                "validation, vllm/v1/spec_decode/dynamic/utils.py)", "e.g. [[1, 64, 3], "
                "[65, 128, 1], [129, 512, 0]] (vLLM docs)")
    if problems:
        return
    why = (schedule_dropped(ctx.method, nst, env=ctx.env)
           if version_key(ctx.table.vllm) >= version_key(SCHEDULE_DROP_READ) else None)
    if why is not None:  # vLLM warns and runs the static K: no schedule to explain (T7-05)
        ctx.add(SCHEDULE_DROPPED_CODE, "warning", key, f"{ctx.vname}: {why}", "drop "
                f"{key} and give the one num_speculative_tokens to draft at every batch size "
                "(specnb plan plans it for suffix), or use a method whose schedule runs: "
                + ", ".join(sorted(V1_SCHEDULE_METHODS)))
        return
    above = clamp_schedule(rows, nst)[1] if (as_int(nst) or 0) >= 1 else []
    if above:
        ctx.add(SCHEDULE_CLAMPED_CODE, "warning", key, f"K above num_speculative_tokens={nst} in "
                f"{', '.join(json.dumps(list(r)) for r in above)}: {ctx.vname} clamps it to "
                f"{nst} silently (build_dynamic_sd_schedule_lookup; the newer docs call it an "
                f"error)", f"lower K to at most {nst}, or raise num_speculative_tokens (it is "
                "the maximum draft window)")
    ctx.add("schedule-explained", "warning", key, f"dynamic speculative decoding: "
            f"{describe_schedule(rows, nst)} ({SCHEDULE_SEMANTICS}). Cost: {schedule_tax_text()}",
            "measure TPOT with and without the schedule at your concurrency (vllm bench serve) "
            "before keeping it")
