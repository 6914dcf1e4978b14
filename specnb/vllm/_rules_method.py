"""The checker's method rules: resolving "method", what vLLM detects from the checkpoint,
and the method-specific switches of a version profile.

A mixin of :class:`specnb.vllm._rules._Checker` (uses its ``add``, ``vname``, ``prof``,
``methods``, ``mtp``, ``draft_config``), and :func:`vllm_detected_method`. Split from
:mod:`specnb.vllm._rules` (a pure move). Source: ``vllm/config/speculative.py`` @
``002e77c1`` (method inference, ``__post_init__``).
"""

from __future__ import annotations

import difflib
import json

from ..hf_config import (MODEL_TYPE_METHOD, architectures, checkpoint_method, is_mtp_type,
                         model_type)
from . import _schema as S

#: Methods that take ``__post_init__``'s draft-checkpoint branch (where vLLM 0.33 checks
#: dspark_draft_topk / xpress_topc); the others never reach those checks.
NO_DRAFT_BRANCH = frozenset({"ngram", "ngram_gpu", "suffix", "custom_class",
                             "extract_hidden_states"})



class _MethodRules:
    # ---- method
    def resolve_method(self, cfg, model):
        method = cfg.get("method")
        if method is None:
            if isinstance(model, str) and _is_dotted_path(model):
                return "custom_class"
            if model in ("ngram", "[ngram]"):
                if model == "[ngram]":
                    self.add("legacy-ngram-model",
                             "warning", "model", "\"model\": \"[ngram]\" is the legacy V0 "
                             "spelling; vLLM still maps it to method 'ngram'",
                             "write \"method\": \"ngram\" and drop \"model\"")
                return "ngram"
            if model is None:
                return "draft_model"
            return self.method_missing(model)
        if not isinstance(method, str):
            self.add("method-not-string",
                     "error", "method", f"method must be a string, got {json.dumps(method)}",
                     "write e.g. \"method\": \"ngram\"")
            return None
        if method in self.methods:
            if method in self.mtp and method != "mtp":
                self.add("deprecated-mtp-method",
                         "warning", "method", f"method `{method}` is deprecated and replaced "
                         f"with mtp ({self.vname}'s own warning; older builds knew only the "
                         "model-specific names)", "write \"method\": \"mtp\"")
                return "mtp"
            return method
        if method == "[ngram]" and self.prof is not None:
            self.add("unknown-method", "error", "method", f"method '[ngram]' is not one of "
                     f"{self.vname}'s methods (pydantic Literal validation error); only "
                     "\"model\": \"[ngram]\" is the legacy spelling vLLM still maps",
                     "write \"method\": \"ngram\"")
            return None
        if method == "[ngram]":
            self.add("legacy-ngram-method",
                     "warning", "method", "'[ngram]' is the legacy spelling; vLLM maps it to "
                     "'ngram'", "write \"method\": \"ngram\"")
            return "ngram"
        canon = [m for m in S.BUILD_METHODS if m in self.methods]
        if method.lower() in self.methods:
            hint = method.lower()
        elif method.lower() in S.METHOD_ALIASES:
            hint = S.METHOD_ALIASES[method.lower()]
        elif method.lower().endswith("_mtp") or method.lower().startswith("mtp"):
            hint = "mtp"
        else:
            close = difflib.get_close_matches(method.lower(), canon, n=1, cutoff=0.5)
            hint = close[0] if close else None
        msg = f"unknown method {method!r} (pydantic Literal validation error)"
        if self.prof is not None and method in S.METHODS:
            self.add("method-removed", "error", "method", f"method {method!r} is not one of "
                     f"{self.vname}'s methods (pydantic Literal validation error); older vLLM "
                     "had it", f"use one of {', '.join(canon)}, or a vLLM release that still "
                     f"has '{method}'")
            return None
        if hint:
            msg += f"; did you mean '{hint}'?"
            fix = f"write \"method\": \"{hint}\""
        else:
            fix = f"use one of {', '.join(canon)}"
        self.add("unknown-method", "error", "method", msg, fix)
        return None

    # ---- method-specific switches (version profiles)
    def profile_switches(self, cfg, vals, method, nst):
        """Method-specific switches as the profiled vLLM checks them (0.33: dspark_draft_topk
        and xpress_topc are checked only in the draft-checkpoint branch; adaptive verification
        is refused only together with use_local_argmax_reduction)."""
        draft_branch = method not in NO_DRAFT_BRANCH
        if vals.get("enable_adaptive_verification") and vals.get("use_local_argmax_reduction") \
                and method != "dspark":
            self.add("adaptive-verification-argmax", "error", "enable_adaptive_verification",
                     "Adaptive verification estimates per-position acceptance from the draft "
                     "logits, which use_local_argmax_reduction never materializes. Disable one "
                     "of them.", "drop one of them")
        for key, owner, code, words in (
                ("dspark_draft_topk", "dspark", "dspark-only-key", "DSpark"),
                ("xpress_topc", "dflash", "xpress-only-key", "XPress")):
            if cfg.get(key) is None or method == owner:
                continue
            if draft_branch:
                self.add(code, "error", key, f"{key} is only supported by {words}", "remove it")
            else:
                self.add("switch-ignored", "warning", key, f"{key} does nothing for method "
                         f"'{method}' ({self.vname} checks it only for methods that load a "
                         "draft checkpoint)", "remove it")
        if cfg.get("draft_lm_head_quantization") is not None and method not in (
                "eagle", "eagle3", "mtp"):
            self.add("lm-head-quantization-method", "error", "draft_lm_head_quantization",
                     f"draft_lm_head_quantization is not supported for method {method!r}.",
                     "remove it (eagle, eagle3 and mtp only)")
        if vals.get("rejection_sample_method") == "fly" and nst is not None:
            self.add("fly-lossy", "warning", "rejection_sample_method", "FLy verification is "
                     "a lossy speculative decoding method and may degrade model outputs "
                     f"({self.vname}'s warning)", "use 'standard' where outputs must match")
            win = vals.get("fly_window_size")
            if method == "extract_hidden_states":
                self.add("fly-method", "error", "rejection_sample_method", "FLy is not "
                         "compatible with method='extract_hidden_states'", "use 'standard'")
            elif nst < 2:
                self.add("fly-needs-k2", "error", "num_speculative_tokens", "FLy requires "
                         "num_speculative_tokens to be at least 2.", "use 2 or more")
            elif win is not None and win >= nst:
                self.add("fly-window", "error", "fly_window_size", "FLy requires "
                         "fly_window_size to be smaller than num_speculative_tokens.",
                         f"use at most {nst - 1}")

    # ---- method and checkpoint
    def method_missing(self, model):
        """No "method": list what vLLM may detect for this model and the likely one."""
        found = checkpoint_method(model, self.draft_config) if isinstance(model, str) else None
        vllm_pick = vllm_detected_method("draft_model", model if isinstance(model, str) else "",
                                         self.draft_config)
        if found is not None:
            likely, why = found
        else:
            likely, why = "draft_model", "nothing in the name or config marks a special head"
        rules = ("vLLM picks it from the checkpoint: 'eagle' when the path contains 'eagle-', "
                 "'eagle3' when it contains 'eagle3', 'dflash' / 'dspark' by path or "
                 "architecture, 'medusa', 'mlp_speculator' or 'mtp' from config.json's model_type,"
                 " else 'draft_model'")
        msg = (f"\"method\" is not set: {rules} (vllm/config/speculative.py @ 002e77c1). For "
               f"{model!r} the likely method is '{likely}' ({why})")
        if vllm_pick != likely and vllm_pick == "draft_model" and likely not in (
                "medusa", "mlp_speculator", "mtp"):
            msg += (f"; vLLM's path rules do not see it and would load it as 'draft_model', so "
                    f"set \"method\": \"{likely}\"")
        elif likely in ("medusa", "mlp_speculator", "mtp") and self.draft_config is None:
            msg += "; vLLM decides this one from the checkpoint's config.json"
        self.add("method-missing",
                 "warning", "method", msg, f"set \"method\": \"{likely}\" explicitly")
        return vllm_pick if vllm_pick != "draft_model" else likely

    def method_vs_checkpoint(self, method, model):
        """An explicit method the checkpoint (path or config.json) contradicts."""
        loads_checkpoint = (S.NEEDS_MODEL - {"custom_class"}) | {"mtp", "dspark"}
        if (model is None and self.draft_config is None) or method not in loads_checkpoint:
            return  # n-gram, suffix, hidden states, custom proposers: no draft checkpoint
        found = checkpoint_method(model or "", self.draft_config)
        if found is None:
            if method in ("eagle", "eagle3") and _is_full_causal_lm(self.draft_config):
                arch = ", ".join(self.draft_config.get("architectures") or [])
                self.add("method-full-lm-as-eagle",
                         "warning", "method", f"method '{method}' with a checkpoint whose "
                         f"config.json says {arch}: a full causal LM, not an EAGLE head; vLLM "
                         "loads it as an EAGLE head and fails or drafts garbage",
                         "use \"method\": \"draft_model\" for a small full model")
            return
        needed, why = found
        if needed == method or (needed == "eagle" and method == "eagle3" and "eagle3" not in why):
            return
        vllm_pick = vllm_detected_method(method, model or "", self.draft_config)
        if vllm_pick != method:
            then = (f"vLLM re-detects the method from the checkpoint and runs '{vllm_pick}' "
                    f"instead of '{method}' (vllm/config/speculative.py @ 002e77c1; vLLM issue "
                    "#47486), so the config does not say what runs")
        elif method in ("eagle", "eagle3", "dflash", "dspark"):
            then = (f"vLLM does not re-detect an explicit '{method}' and loads the checkpoint as "
                    f"'{method}': expect a load error, or acceptance that is implausible (near "
                    "0, or near 100% as in field reports)")
        else:
            then = (f"vLLM keeps '{method}' and loads the checkpoint as that: expect a load "
                    "error, or acceptance that is implausible (near 0, or near 100% as in "
                    "field reports)")
        self.add("method-checkpoint-mismatch",
                 "warning", "method", f"method '{method}' does not match the checkpoint: {why} "
                 f"says '{needed}'; {then}", f"write \"method\": \"{needed}\"")


def _is_full_causal_lm(draft_config) -> bool:
    arch = [a.lower() for a in architectures(draft_config)]
    return bool(arch) and all(a.endswith("forcausallm") and not any(
        w in a for w in ("eagle", "medusa", "mtp", "dflash", "dspark", "speculator"))
        for a in arch)


def vllm_detected_method(method: str, model: str, draft_config=None) -> str:
    """The method vLLM ends up with for an explicit (or inferred) ``method`` and checkpoint.

    vLLM @ 002e77c1 re-detects the method after loading the draft checkpoint unless it is one
    of eagle, eagle3, dflash, dspark: 'eagle-' in the path -> eagle; 'eagle3' -> eagle3;
    'dflash' / 'dspark' in the path or architecture -> that; config.json ``model_type`` medusa,
    mlp_speculator or an MTP type -> that; otherwise the method stays.
    """
    if method in ("eagle", "eagle3", "dflash", "dspark") or method in S.NGRAM_METHODS or \
            method in ("suffix", "custom_class", "extract_hidden_states"):
        return method
    low = (model or "").lower()
    arch = " ".join(architectures(draft_config)).lower()
    mt = model_type(draft_config)
    if "eagle-" in low:
        return "eagle"
    if "eagle3" in low:
        return "eagle3"
    if "dflash" in low or "dflash" in arch:
        return "dflash"
    if "dspark" in low or "dspark" in arch:
        return "dspark"
    if mt in MODEL_TYPE_METHOD:
        return MODEL_TYPE_METHOD[mt]
    if is_mtp_type(mt):
        return "mtp"
    return method


def _is_dotted_path(model: str) -> bool:
    if model.startswith(("http://", "https://", "file://")) or "/" in model:
        return False
    parts = model.split(".")
    return len(parts) >= 2 and all(p.isidentifier() for p in parts)
