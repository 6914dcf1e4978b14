"""The checker's rules: what vLLM's ``SpeculativeConfig`` does with each key, as findings.

Sources: ``vllm/config/speculative.py`` @ ``002e77c1`` (types, constraints, method inference,
``__post_init__`` and ``_verify_args`` messages), PR #31541 (unknown keys rejected since about
v0.14), ``vllm/v1/spec_decode/dynamic/utils.py`` @ ``a6f6bb1d`` (the dynamic schedule, see
:mod:`specnb.vllm.schedule`). The schema itself is transcribed in :mod:`specnb.vllm._schema`.
"""

from __future__ import annotations

import json
import re

from . import _schema as S
from ._rules_keys import _KeyRules
from ._rules_method import _MethodRules
from ._rules_typed import _TypedRules
from .findings import Finding
from .schedule import (SCHEDULE_SEMANTICS, describe_schedule, schedule_problems,
                       schedule_tax_text)
from .syntax import PLACEHOLDER_STRING_RE as _PLACEHOLDER_STRING_RE
from .syntax import linecol as _linecol


# --------------------------------------------------------------------------- versions
_VERSION_RE = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)*(?:(?:a|b|rc|c)\d*)?(?:\.?post\d*)?"
                         r"(?:\.?dev\d*)?(?:\+[a-z0-9.]+)?", re.IGNORECASE)


def _parse_version(vllm_version):
    if vllm_version is None:
        return None
    if not isinstance(vllm_version, str):
        why = " (as a float, 0.10 would read as 0.1)" if isinstance(vllm_version, float) else ""
        raise TypeError(f"vllm_version must be a string like '0.11.0'{why}, got "
                        f"{type(vllm_version).__name__} {vllm_version!r}")
    m = _VERSION_RE.fullmatch(vllm_version.strip())
    if not m:
        shown = vllm_version if len(vllm_version) <= 60 else vllm_version[:60] + "..."
        raise ValueError(f"vllm_version must look like '0.11.0' (also '0.11', 'v0.11.0', "
                         f"'0.11.0rc1', '0.11.0+cu128'; None for current vLLM), got {shown!r}")
    return int(m.group(1)), int(m.group(2))


def _era(vt) -> str:
    if vt is None:
        return "current"
    if vt < S.JSON_CONFIG_SINCE:
        return "v0"
    if vt < S.STRICT_KEYS_SINCE:
        return "lenient"
    return "strict"


# --------------------------------------------------------------------------- the checker
class _Checker(_KeyRules, _TypedRules, _MethodRules):
    """vLLM's rules run over one parsed config; the key, value and method rules are mixins
    (:mod:`._rules_keys`, :mod:`._rules_typed`, :mod:`._rules_method`)."""

    def __init__(self, text: str | None, era: str, version: str | None,
                 draft_config: dict | None = None):
        self.text, self.era, self.version = text, era, version
        self.draft_config = draft_config
        self.out: list[Finding] = []

    def add(self, code, severity, key, message, fix=""):
        line = col = None
        if self.text is not None and key is not None:
            m = re.search(r"[\"']" + re.escape(key) + r"[\"']\s*:", self.text)
            if m:
                line, col = _linecol(self.text, m.start())
        self.out.append(Finding(severity, key, message, fix, line, col, code=code))

    def run(self, cfg: dict):
        """Every rule over one parsed config: keys, values, method, then each method's keys."""
        if self.era == "v0":
            self.add("predates-json-config",
                     "error", None, f"vLLM {self.version} predates the JSON "
                     "--speculative-config (PR #14434, about v0.8): V0 used separate flags "
                     "--speculative-model, --num-speculative-tokens, "
                     "--ngram-prompt-lookup-max", "upgrade vLLM, or use the V0 flags")
            return
        if getattr(cfg, "duplicates", None):
            for k in cfg.duplicates:
                self.add("duplicate-key",
                         "warning", k, f"'{k}' appears more than once; JSON keeps the last "
                         "value silently", f"keep one '{k}'")
        self.scan_keys(cfg)
        vals = {k: self.typed(k, v) for k, v in cfg.items()
                if k in S.FIELDS and k not in ("method", "tensor_parallel_size")
                and k not in S.INTERNAL_KEYS}
        model = vals.get("model")
        if isinstance(model, str) and _PLACEHOLDER_STRING_RE.match(model):
            self.add("placeholder-model",
                     "warning", "model", f"model {model!r} looks like an unfilled "
                     "placeholder; vLLM would try to load a checkpoint by that name",
                     "put the draft checkpoint's Hugging Face id or local path")
        method = self.resolve_method(cfg, model if "model" in cfg else None)
        if cfg.get("method") is not None and method is not None:
            self.method_vs_checkpoint(method, model if isinstance(model, str) else None)
        nst = vals.get("num_speculative_tokens")
        self.tensor_parallel(cfg, vals)
        if method is None:
            return
        self.model_rules(cfg, vals, method)
        self.draft_tokens(cfg, vals, method)
        self.ngram_window(cfg, vals, method)
        self.suffix_rules(cfg, method)
        self.method_switches(cfg, vals, method)
        self.synthetic(cfg, vals, nst)
        self.dynamic(vals.get("num_speculative_tokens_per_batch_size"), nst)

    def tensor_parallel(self, cfg, vals):
        """tensor_parallel_size (vLLM's own message) and draft_tensor_parallel_size."""
        if "tensor_parallel_size" in cfg:
            self.add("tensor-parallel-size",
                     "error", "tensor_parallel_size", "'tensor_parallel_size' is not a valid "
                     "argument in the speculative_config. Please pass "
                     "'draft_tensor_parallel_size' instead. (vLLM @ 002e77c1)",
                     "rename it to 'draft_tensor_parallel_size' (1 or the target's "
                     "--tensor-parallel-size)")
        dtp = vals.get("draft_tensor_parallel_size")
        if dtp is not None and dtp > 1:
            self.add("draft-tensor-parallel-size",
                     "warning", "draft_tensor_parallel_size", f"draft_tensor_parallel_size="
                     f"{dtp} must be 1 or equal to the target's --tensor-parallel-size, else "
                     "vLLM raises 'cannot be other value than 1 or target model "
                     "tensor_parallel_size'", "use 1, or the target's tensor parallel size")

    def model_rules(self, cfg, vals, method):
        """'model': blank, missing for a method that loads a checkpoint, or ignored."""
        model = vals.get("model")
        nst_given = cfg.get("num_speculative_tokens") is not None
        has_model = cfg.get("model") is not None
        if isinstance(model, str) and not model.strip() and method not in (
                "ngram", "ngram_gpu", "suffix", "extract_hidden_states"):
            self.add("blank-model",
                     "error", "model", f"model is the blank string {model!r}: vLLM would try to "
                     "load a checkpoint by that name and fail",
                     "put the draft checkpoint's Hugging Face id or local path")
        # model
        if method in S.NEEDS_MODEL and not has_model:
            if method == "custom_class":
                msg = ("method='custom_class' requires 'model' to contain the custom proposer "
                       "module path (e.g., 'my_module.MyProposer').")
            elif nst_given:
                msg = "num_speculative_tokens was provided but without speculative model."
            else:
                msg = (f"method '{method}' needs a draft checkpoint in 'model'; without it "
                       "vLLM fails with 'num_speculative_tokens must be provided with "
                       "speculative model unless the draft model config contains an "
                       "n_predict parameter.'")
            self.add("model-missing",
                     "error", "model", msg + f" (vLLM @ 002e77c1; '{method}' loads a separate "
                     "checkpoint)", "add \"model\": \"<draft checkpoint id or path>\"")
        elif method in ("ngram", "ngram_gpu", "suffix") and has_model and \
                cfg.get("model") not in (method, "[ngram]"):
            self.add("model-ignored",
                     "warning", "model", f"'model' is ignored for method '{method}' (it needs "
                     "no draft model)", "remove \"model\"")

    def draft_tokens(self, cfg, vals, method):
        """num_speculative_tokens: what vLLM does when it is missing, and MTP above 1."""
        nst = vals.get("num_speculative_tokens")
        nst_given = cfg.get("num_speculative_tokens") is not None
        has_model = cfg.get("model") is not None
        if not nst_given:
            if method == "suffix":
                depth = vals.get("suffix_decoding_max_tree_depth") or S.SUFFIX_DEFAULT_TOKENS
                self.add("suffix-default-tokens",
                         "warning", "num_speculative_tokens", "not set: for suffix decoding "
                         f"vLLM defaults it to suffix_decoding_max_tree_depth ({depth}) and "
                         "logs a warning; it is a maximum, suffix decoding adapts below it",
                         "set it explicitly (the docs use 8 to 32)")
            elif method in S.N_PREDICT_METHODS and (has_model or method not in ("mtp", "dspark")):
                self.add("n-predict-default",
                         "warning", "num_speculative_tokens", "not set: vLLM takes it from the "
                         "draft checkpoint's n_predict; if the checkpoint has none it raises "
                         "'A speculative model was provided, but `num_speculative_tokens` was "
                         "not provided'", "set it explicitly (1 for most MTP heads)")
            elif method in ("draft_model", "eagle", "eagle3") and has_model:
                self.add("num-speculative-tokens-missing",
                         "error", "num_speculative_tokens", "missing: a draft model or EAGLE "
                         "head carries no n_predict, so vLLM raises 'A speculative model was "
                         "provided, but `num_speculative_tokens` was not provided'",
                         "add \"num_speculative_tokens\": 3 to 5 (article: start at 3-5)")
            elif method not in S.NEEDS_MODEL or has_model:
                self.add("num-speculative-tokens-required",
                         "error", "num_speculative_tokens", "missing: vLLM raises "
                         "'num_speculative_tokens must be provided with speculative model "
                         "unless the draft model config contains an n_predict parameter.'",
                         "add \"num_speculative_tokens\": 4 (a positive integer)")
        self.huge_gamma(nst)
        if method == "mtp" and nst is not None and nst > 1:
            self.add("mtp-reruns-layer",
                     "warning", "num_speculative_tokens", f"num_speculative_tokens={nst} with "
                     "mtp: 'Enabling num_speculative_tokens > 1 will run multiple times of "
                     "forward on same MTP layer, which may result in lower acceptance rate' "
                     "(vLLM's warning for single-layer MTP heads)",
                     "start with 1 and raise it only if the mean acceptance length stays high")


    def ngram_window(self, cfg, vals, method):
        """prompt_lookup_min / prompt_lookup_max: vLLM's defaults, mirroring and order."""
        lo, hi = vals.get("prompt_lookup_min"), vals.get("prompt_lookup_max")
        lo_given = cfg.get("prompt_lookup_min") is not None
        hi_given = cfg.get("prompt_lookup_max") is not None
        if method in S.NGRAM_METHODS:
            if not lo_given and not hi_given:
                self.add("ngram-lookup-defaults",
                         "warning", "prompt_lookup_min", "prompt_lookup_min and "
                         "prompt_lookup_max are not set: vLLM sets both to 5 (\"arbitrarily "
                         "chosen\"), not min 1 as its docstring says, so only 5-gram matches "
                         "are drafted", "set them, e.g. \"prompt_lookup_min\": 2, "
                         "\"prompt_lookup_max\": 5 (vLLM's docs example)")
            elif lo_given != hi_given:
                given, other = (("prompt_lookup_max", "prompt_lookup_min") if hi_given
                                else ("prompt_lookup_min", "prompt_lookup_max"))
                val = hi if hi_given else lo
                self.add("ngram-lookup-mirrored",
                         "warning", other, f"{other} is not set: vLLM sets it equal to {given}"
                         f"={val}, so the window is exactly {val} tokens",
                         f"set {other} explicitly (e.g. prompt_lookup_min 2, max 5)")
            if lo is not None and hi is not None and lo > hi:
                self.add("ngram-lookup-min-above-max",
                         "error", "prompt_lookup_min", f"prompt_lookup_min={lo} must be <= "
                         f"prompt_lookup_max={hi} (vLLM @ 002e77c1)",
                         f"swap them: \"prompt_lookup_min\": {hi}, \"prompt_lookup_max\": {lo}")
        elif lo_given or hi_given:
            key = "prompt_lookup_min" if lo_given else "prompt_lookup_max"
            self.add("ngram-lookup-ignored",
                     "warning", key, f"prompt_lookup_min/max only apply to ngram; vLLM sets "
                     f"them to 0 for method '{method}'", "remove them")


    def suffix_rules(self, cfg, method):
        """Suffix decoding needs Arctic Inference; suffix_decoding_* keys elsewhere are ignored."""
        suffix_keys = [k for k in cfg if isinstance(k, str) and k.startswith("suffix_decoding_")]
        if method == "suffix":
            self.add("suffix-needs-arctic",
                     "warning", None, "suffix decoding needs Arctic Inference on the server: "
                     "\"Arctic Inference is required for suffix decoding. Install via `pip "
                     "install arctic-inference==0.1.1`.\"", "pip install arctic-inference "
                     "on the vLLM host before starting")
        elif suffix_keys:
            self.add("suffix-keys-ignored",
                     "warning", suffix_keys[0], f"{', '.join(suffix_keys)} only apply to "
                     f"method 'suffix'; ignored for '{method}'", "remove them")


    def method_switches(self, cfg, vals, method):
        """Keys that only one method accepts (messages from vLLM @ 002e77c1)."""
        if cfg.get("index_share_for_mtp_iteration") is not None and method != "mtp":
            self.add("mtp-only-key",
                     "error", "index_share_for_mtp_iteration", "index_share_for_mtp_iteration "
                     "is only supported with method='mtp'", "remove it")
        if vals.get("enable_adaptive_verification") and method != "dspark":
            self.add("dspark-only-key",
                     "error", "enable_adaptive_verification", "Adaptive verification only "
                     "supported with DSpark", "remove it (method 'dspark' only)")
        if cfg.get("dspark_draft_topk") is not None and method != "dspark":
            self.add("dspark-only-key",
                     "error", "dspark_draft_topk", "dspark_draft_topk is only supported by "
                     "DSpark", "remove it")
        if vals.get("use_heterogeneous_vocab"):
            if method != "draft_model":
                self.add("heterogeneous-vocab-method",
                         "error", "use_heterogeneous_vocab", "use_heterogeneous_vocab only "
                         "works with method='draft_model'", "remove it")
            if vals.get("draft_sample_method") == "probabilistic":
                self.add("heterogeneous-vocab-sampling",
                         "error", "use_heterogeneous_vocab", "use_heterogeneous_vocab "
                         "currently only supports greedy draft sampling",
                         "set draft_sample_method='greedy' (the default) or omit it")
            if vals.get("use_local_argmax_reduction"):
                self.add("heterogeneous-vocab-argmax",
                         "error", "use_heterogeneous_vocab", "use_heterogeneous_vocab and "
                         "use_local_argmax_reduction cannot be used together",
                         "drop use_local_argmax_reduction")
        if vals.get("parallel_drafting") and method not in S.PARALLEL_DRAFTING_METHODS:
            self.add("parallel-drafting-method",
                     "warning", "parallel_drafting", "parallel_drafting is \"only compatible "
                     f"with EAGLE and draft model methods\", not '{method}'", "remove it")
        if cfg.get("draft_load_config") is not None:
            self.add("draft-load-config",
                     "warning", "draft_load_config", "draft_load_config defaults to the "
                     "target's load config and is not intended to be set by users",
                     "remove it unless you know the draft needs a different loader")

    def huge_gamma(self, nst):
        """A draft length beyond any context: accepted by vLLM, surely a mistake."""
        if nst is None:
            return
        ctx = (self.draft_config or {}).get("max_position_embeddings")
        if isinstance(ctx, int) and not isinstance(ctx, bool) and 0 < ctx < nst and \
                ctx < S.MAX_SENSIBLE_GAMMA:
            what = f"the draft's context (max_position_embeddings={ctx})"
        elif nst > S.MAX_SENSIBLE_GAMMA:
            what = f"{S.MAX_SENSIBLE_GAMMA} tokens, the context of the smallest models"
        else:
            return
        shown = f"{nst}" if nst < 10 ** 12 else f"{nst:.3g}"
        self.add("num-speculative-tokens-huge",
                 "warning", "num_speculative_tokens", f"num_speculative_tokens={shown}: vLLM "
                 "accepts any integer > 0, but every step would draft that many tokens, "
                 f"beyond {what}; vLLM's docs use 1 to 32, so this is surely a typo",
                 "use the draft length you mean (3 to 5 to start; suffix 8 to 32)")

    def synthetic(self, cfg, vals, nst):
        rates, length = vals.get("synthetic_acceptance_rates"), vals.get(
            "synthetic_acceptance_length")
        given = [k for k in ("synthetic_acceptance_rates", "synthetic_acceptance_length")
                 if cfg.get(k) is not None]
        if vals.get("rejection_sample_method") != "synthetic":
            if given:
                self.add("synthetic-needs-method",
                         "error", given[0], "synthetic_acceptance_rates / "
                         "synthetic_acceptance_length are only valid with "
                         "rejection_sample_method='synthetic'.", "remove them")
            return
        self.add("synthetic-not-lossless",
                 "warning", "rejection_sample_method", "'synthetic' accepts drafts with a "
                 "calibrated probability: a benchmarking mode whose outputs are not the target "
                 "model's (not lossless)", "use 'standard' in production")
        if len(given) != 1:
            self.add("synthetic-needs-one",
                     "error", "rejection_sample_method", "rejection_sample_method='synthetic' "
                     "requires exactly one of synthetic_acceptance_rates or "
                     "synthetic_acceptance_length.", "give exactly one of them")
            return
        if nst is None:
            return
        if rates is not None:
            bad = [r for r in rates if isinstance(r, bool) or not isinstance(r, (int, float))]
            if len(rates) != nst:
                self.add("synthetic-rates-length",
                         "error", "synthetic_acceptance_rates", f"synthetic_acceptance_rates "
                         f"must have length {nst}, got {rates}.", f"give {nst} rates")
            elif bad or not all(0 <= r <= 1 for r in rates):
                self.add("synthetic-rates-range",
                         "error", "synthetic_acceptance_rates", "synthetic_acceptance_rates "
                         f"entries must be in [0, 1], got {rates}.", "use fractions in [0, 1]")
            elif any(rates[i] > rates[i - 1] for i in range(1, len(rates))):
                self.add("synthetic-rates-order",
                         "error", "synthetic_acceptance_rates", "synthetic_acceptance_rates "
                         f"must be non-increasing, got {rates}.", "sort them descending")
        elif length is not None and not 1.0 <= length <= nst + 1:
            self.add("synthetic-length-range",
                     "error", "synthetic_acceptance_length", f"synthetic_acceptance_length "
                     f"must be in [1, {nst + 1}], got {length}.", f"use a value in [1, {nst + 1}]")

    def dynamic(self, schedule, nst):
        """num_speculative_tokens_per_batch_size: vLLM's validation, clamping and cost."""
        if schedule is None:
            return
        key = "num_speculative_tokens_per_batch_size"
        example = "e.g. [[1, 64, 3], [65, 128, 1], [129, 512, 0]] (vLLM docs)"
        if self.era == "lenient":
            self.add("schedule-ignored",
                     "warning", key, f"{key} came with dynamic speculative decoding (PR #32374, "
                     f"merged about January 2026, after the versions that ignore unknown keys); "
                     f"vLLM {self.version} most likely ignores it silently and drafts "
                     "num_speculative_tokens at every batch size", "upgrade vLLM, or drop it")
            return
        problems = schedule_problems(schedule)
        for problem in problems:
            self.add("schedule-invalid",
                     "error", key, f"{key}: {problem} (vLLM's schedule validation, "
                     "vllm/v1/spec_decode/dynamic/utils.py @ a6f6bb1d)", example)
        if problems:
            return
        above = [row for row in schedule if nst is not None and row[2] > nst]
        if above:
            self.add("schedule-k-clamped",
                     "warning", key, f"K above num_speculative_tokens={nst} in "
                     f"{', '.join(json.dumps(list(r)) for r in above)}: vLLM clamps it to {nst} "
                     "silently (build_dynamic_sd_schedule_lookup @ a6f6bb1d; the newer docs "
                     "call it an error)", f"lower K to at most {nst}, or raise "
                     "num_speculative_tokens (it is the maximum draft window)")
        self.add("schedule-explained",
                 "warning", key, f"dynamic speculative decoding: {describe_schedule(schedule, nst)}"
                 f" ({SCHEDULE_SEMANTICS}). Cost: {schedule_tax_text()}",
                 "measure TPOT with and without the schedule at your concurrency (vllm bench "
                 "serve) before keeping it")

