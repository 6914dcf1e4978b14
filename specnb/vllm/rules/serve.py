"""The serve-line rules: the config in the context of the ``vllm serve`` line (``ctx.serve``,
from :func:`specnb.vllm.serve.parse_serve_line`) and the draft's and target's config.json."""

from __future__ import annotations

from ...hf_config import architectures
from .._versions import version_key
from ...runners import model_runner, runner_refusal, v1_async_incompat
from ..schedule import schedule_dropped
from .context import NO_DRAFT_BRANCH, Context, as_int
from .switches import SCHEDULE_DROP_READ

_HEADS = ("eagle", "eagle3", "dflash", "draft_model", "medusa")  # drafts trained on their own

#: The last release vLLM's speculative-decoding docs list pipeline parallelism as "not
#: composible with speculative decoding" for (docs/features/spec_decode, "Known Feature
#: Incompatibility", README @ 01ed47b4 and b86d012f: "as of `vllm<=0.15.0`").
PP_SPECULATION_UNTIL = "0.15.0"

#: vLLM 0.33 ``VllmConfig._set_max_num_scheduled_tokens``: with speculation on, a
#: max_num_scheduled_tokens below this logs "This may lead to suboptimal performance".
SPEC_SCHEDULED_TOKENS_WARN_BELOW = 8192


def lookahead_tokens(method: str | None, num_speculative_tokens) -> int:
    """vLLM 0.33 ``VllmConfig.num_lookahead_tokens``: num_speculative_tokens + 1 for dflash
    (its fill-in drafting), num_speculative_tokens for the methods that draft with the
    target's hidden states or a draft model (eagle, eagle3, mtp and its aliases, dspark in its
    anchor-sampling default, draft_model), else 0 (ngram, suffix, medusa, ...)."""
    k = as_int(num_speculative_tokens)
    if k is None or not isinstance(method, str):
        return 0
    if method == "dflash":
        return k + 1
    if method in ("eagle", "eagle3", "mtp", "dspark", "draft_model") or method.endswith("_mtp"):
        return k
    return 0


def scheduled_token_findings(method, num_speculative_tokens, *, scheduled=None, budget=None,
                             source="") -> list:
    """vLLM 0.33 ``VllmConfig._set_max_num_scheduled_tokens`` with speculation on, as
    ``(code, severity, message, fix)`` tuples (the one home; the serve-line rule gives the
    line's own flags, :func:`specnb.advise.serve_memory.serve_batch_findings` vLLM's default
    budget on a GPU).

    ``scheduled``: max_num_scheduled_tokens (``--max-num-scheduled-tokens``, else
    max_num_batched_tokens: vLLM sets it so) or None; below
    :data:`SPEC_SCHEDULED_TOKENS_WARN_BELOW` vLLM logs a warning, code
    ``spec-scheduled-tokens-below-8192``. ``budget``: max_num_batched_tokens or None; at or
    below :func:`lookahead_tokens` vLLM raises "VllmConfig does not have enough slots to
    schedule a token and support the speculative decoding settings", code
    ``spec-batched-tokens-within-lookahead`` (error). vLLM's own ``max_num_scheduled_tokens <=
    0`` error cannot be reached from a line: both fields are ``Field(ge=1)`` (the line rule
    ``serve-max-num-scheduled-tokens-range``). ``source``: where the values come from, for
    the message."""
    out = []
    la = lookahead_tokens(method, num_speculative_tokens)
    if isinstance(budget, int) and budget >= 1 and budget <= la:
        out.append(("spec-batched-tokens-within-lookahead", "error",
                    f"max_num_batched_tokens {budget}{source} <= num_lookahead_tokens {la} "
                    f"({method}, num_speculative_tokens {num_speculative_tokens}): vLLM "
                    "refuses to start ('VllmConfig does not have enough slots to schedule a "
                    "token and support the speculative decoding settings', "
                    "VllmConfig._set_max_num_scheduled_tokens)",
                    f"give --max-num-batched-tokens {la + 1} or more"))
    if isinstance(scheduled, int) and 1 <= scheduled < SPEC_SCHEDULED_TOKENS_WARN_BELOW:
        out.append(("spec-scheduled-tokens-below-8192", "warning",
                    f"max_num_scheduled_tokens {scheduled}{source} with speculative decoding: "
                    f"vLLM warns below {SPEC_SCHEDULED_TOKENS_WARN_BELOW} 'max_num_scheduled_"
                    f"tokens is set to {scheduled} based on the speculative decoding settings. "
                    "This may lead to suboptimal performance' (VllmConfig._set_max_num_"
                    "scheduled_tokens): the draft tokens of every request share that budget "
                    "with the prefill chunks", f"give --max-num-batched-tokens "
                    f"{SPEC_SCHEDULED_TOKENS_WARN_BELOW} (or more) if prefill chunks and "
                    "drafts compete for the budget; measure before keeping it"))
    return out


def serve(ctx: Context) -> None:
    """Each serve-line check (nothing without a serve line or a target)."""
    s, m = ctx.serve, ctx.method
    if not s or m is None:
        return
    draft, target = ctx.draft or {}, ctx.target or {}
    mml = as_int(s.get("max_model_len")) or as_int(target.get("max_position_embeddings"))
    dpos = as_int(draft.get("max_position_embeddings"))
    if m in _HEADS and mml and dpos and dpos < mml:
        ctx.add("draft-context-below-max-model-len", "warning", "model", f"the draft "
                f"({', '.join(architectures(draft)) or 'its config.json'}) was trained to "
                f"max_position_embeddings={dpos}, below --max-model-len {mml}: past {dpos} "
                "tokens of context its drafts degrade (EAGLE-3 heads trained at 2048 positions "
                "crash or slow down past 2K, vllm#48894) and the draft's max_model_len is "
                f"capped at {dpos}", f"serve with --max-model-len {dpos}, or use a head "
                f"trained at {mml} positions or more")
    pp = as_int(s.get("pipeline_parallel_size")) or 1
    if pp > 1 and version_key(ctx.table.vllm) <= version_key(PP_SPECULATION_UNTIL):
        ctx.add("pipeline-parallel-with-speculation", "warning", None, f"--pipeline-parallel-"
                f"size {pp} with speculative decoding on {ctx.vname}: vLLM's docs ('Known "
                "Feature Incompatibility'): 'Pipeline parallelism is not composible with "
                f"speculative decoding as of vllm<={PP_SPECULATION_UNTIL}'", "serve with "
                "--tensor-parallel-size instead of pipeline parallelism, or drop "
                "--speculative-config (notebook 05)")
    dp = as_int(s.get("data_parallel_size")) or 1
    if dp > 1 and ctx.values.get("num_speculative_tokens_per_batch_size") is not None:
        ctx.add("schedule-with-data-parallel", "warning", "num_speculative_tokens_per_batch_"
                "size", f"--data-parallel-size {dp}: {ctx.vname} " + schedule_dropped(
                    m, ctx.values.get("num_speculative_tokens"), data_parallel_size=dp
                ).removeprefix(f"with --data-parallel-size {dp} vLLM "),
                "drop the schedule, or serve with --data-parallel-size 1 (one engine "
                "per GPU group behind a router)")
    read = version_key(ctx.table.vllm) >= version_key(SCHEDULE_DROP_READ)  # 0.33.0 was read
    if read:
        _runner_findings(ctx, m, s, pp)
    budget = as_int(s.get("max_num_batched_tokens"))
    scheduled = as_int(s.get("max_num_scheduled_tokens")) or budget
    for code, severity, message, fix in scheduled_token_findings(  # the line's own flags
            m, ctx.values.get("num_speculative_tokens"), scheduled=scheduled, budget=budget,
            source=" (the line's flags)") if read else ():
        ctx.add(code, severity, None, message, fix)
    quant = s.get("quantization") or (target.get("quantization_config") or {}).get(
        "quant_method")
    dtype = str(draft.get("torch_dtype") or draft.get("dtype") or "")
    if quant and m not in NO_DRAFT_BRANCH and m not in ctx.table.mtp and draft and \
            not draft.get("quantization_config") and dtype in ("bfloat16", "float16", "float32"):
        ctx.add("quantized-target-bf16-head", "warning", "model", f"the target runs "
                f"quantized ({quant}) and the draft is {dtype} with no quantization_config: it "
                "was trained on the unquantized target's hidden states and logits, so its "
                "acceptance on the quantized target is lower than published, and the draft "
                "keeps its full-precision memory", "measure acceptance on the quantized target "
                "(specnb metrics), or use a head trained for it; set \"quantization\" in the "
                "speculative config to quantize the draft too")


_RUNNER_FIX = {
    "v2-runner-env-not-integer": "write VLLM_USE_V2_MODEL_RUNNER=1 (Model Runner V2) or =0 (V1), "
                                 "or leave it unset (vLLM picks the runner)",
    "v2-runner-unsupported-method": "unset VLLM_USE_V2_MODEL_RUNNER (vLLM then serves it on Model "
                                    "Runner V1)",
    "v1-runner-unsupported-method": "unset VLLM_USE_V2_MODEL_RUNNER (vLLM then serves it on Model "
                                    "Runner V2)",
}


def _runner_findings(ctx: Context, m: str, s: dict, pp: int) -> None:
    """The model-runner rules of vLLM 0.33 (:mod:`specnb.runners`): a runner environment
    vLLM refuses (:func:`specnb.runners.runner_refusal`), a feature Model Runner V1 does not
    run (``_validate_v1_model_runner``, code ``v1-runner-unsupported-feature``) and
    ``--async-scheduling`` with a config the V1 runner cannot overlap
    (:func:`specnb.runners.v1_async_incompat`, code ``v1-async-scheduling-unsupported``)."""
    refusal = runner_refusal(m, ctx.env)
    if refusal is not None:
        code, reason = refusal
        ctx.add(code, "error", None if code == "v2-runner-env-not-integer" else "method",
                f"{ctx.vname} refuses to start: {reason}", _RUNNER_FIX[code])
        return
    if model_runner(m, ctx.env) != "v1":
        return
    v = ctx.values
    why = "VLLM_USE_V2_MODEL_RUNNER=0" if ctx.env.get("VLLM_USE_V2_MODEL_RUNNER") is not None \
        else f"Model Runner V2 does not run {m!r}"
    unsupported = [("enable_adaptive_verification", "adaptive draft verification")
                   if v.get("enable_adaptive_verification") else None,
                   ("draft_lm_head_quantization", "draft lm_head quantization")
                   if v.get("draft_lm_head_quantization") is not None else None,
                   (None, "prefill context parallel")
                   if (as_int(s.get("prefill_context_parallel_size")) or 1) > 1 else None]
    for key, feature in filter(None, unsupported):
        ctx.add("v1-runner-unsupported-feature", "error", key, f"{feature} on Model Runner V1 "
                f"({why}): {ctx.vname} refuses to start ('Model Runner V1 does not support: "
                f"{feature}', VllmConfig._validate_v1_model_runner)", "serve it on Model "
                "Runner V2 (unset VLLM_USE_V2_MODEL_RUNNER or set it to 1), with a method V2 "
                "runs")
    incompat = v1_async_incompat(m, ctx.env, disable_padded_drafter_batch=bool(
        v.get("disable_padded_drafter_batch")), pipeline_parallel_size=pp)
    if incompat is not None and s.get("async_scheduling") is True:
        ctx.add("v1-async-scheduling-unsupported", "error", None, f"--async-scheduling with "
                f"{incompat} on Model Runner V1 ({why}): {ctx.vname} refuses to start ('Async "
                f"scheduling is not supported by the V1 model runner with {incompat}.', "
                "VllmConfig.__post_init__)", "drop --async-scheduling (vLLM then schedules "
                "synchronously: every step pays the host time in series), or serve a method "
                "the V1 runner overlaps (eagle, eagle3, mtp, dflash, ngram_gpu, draft_model) "
                "or Model Runner V2 (ngram)")
