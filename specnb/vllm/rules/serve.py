"""The serve-line rules: the config in the context of the ``vllm serve`` line (``ctx.serve``,
from :func:`specnb.vllm.serve.parse_serve_line`) and the draft's and target's config.json."""

from __future__ import annotations

from ...hf_config import architectures
from .._versions import version_key
from ..schedule import model_runner, schedule_dropped
from .context import NO_DRAFT_BRANCH, Context, as_int
from .switches import SCHEDULE_DROP_READ

_HEADS = ("eagle", "eagle3", "dflash", "draft_model", "medusa")  # drafts trained on their own

#: The last release vLLM's speculative-decoding docs list pipeline parallelism as "not
#: composible with speculative decoding" for (docs/features/spec_decode, "Known Feature
#: Incompatibility", README @ 01ed47b4 and b86d012f: "as of `vllm<=0.15.0`").
PP_SPECULATION_UNTIL = "0.15.0"

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
    if model_runner(m, ctx.env) == "refused" and \
            version_key(ctx.table.vllm) >= version_key(SCHEDULE_DROP_READ):
        ctx.add("v2-runner-unsupported-method", "error", "method", f"VLLM_USE_V2_MODEL_RUNNER="
                f"{ctx.env.get('VLLM_USE_V2_MODEL_RUNNER')} with method {m!r}: {ctx.vname} "
                f"refuses to start ('Model Runner V2 does not yet support: speculative method "
                f"{m!r}', VllmConfig._validate_v2_model_runner)", "unset "
                "VLLM_USE_V2_MODEL_RUNNER (vLLM then serves it on Model Runner V1)")
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
