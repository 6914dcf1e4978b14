"""The method rules: which method vLLM runs (``SpeculativeConfig.__post_init__``), what the
checkpoint says, the model it needs, the draft length, the n-gram window and suffix decoding."""

from __future__ import annotations

import difflib
import json

from ...hf_config import (MODEL_TYPE_METHOD, architectures, checkpoint_method, is_mtp_type,
                          model_type)
from ..syntax import PLACEHOLDER_STRING_RE
from .context import N_PREDICT, NEEDS_MODEL, NGRAM, NO_DRAFT_BRANCH, TRAPS, Context

METHOD_WORDS = frozenset(TRAPS["method_words"])


def placeholder_model(ctx: Context) -> None:
    model = ctx.values.get("model")
    if isinstance(model, str) and PLACEHOLDER_STRING_RE.match(model):
        ctx.add("placeholder-model", "warning", "model", f"model {model!r} looks like an "
                "unfilled placeholder; vLLM would try to load a checkpoint by that name",
                "put the draft checkpoint's Hugging Face id or local path")


def method(ctx: Context) -> None:
    """``ctx.method``: the method the release runs, or None (the later rules then stop)."""
    model = ctx.values.get("model") if "model" in ctx.keys else None
    given = ctx.keys.get("method")
    ctx.method = _resolve(ctx, given, model)
    if given is not None and ctx.method is not None:
        _method_vs_checkpoint(ctx, ctx.method, model if isinstance(model, str) else None)
    ctx.stop = ctx.method is None


def _resolve(ctx, given, model):
    t = ctx.table
    if given is None:
        if isinstance(model, str) and _is_dotted_path(model):
            if "custom_class" in t.methods:
                return "custom_class"
            ctx.add("no-custom-class", "error", "model", f"{model!r} looks like a proposer "
                    f"class path, but {ctx.vname} has no custom_class method: it loads the "
                    "name as a draft checkpoint and fails with 'Invalid repository ID or local "
                    "directory specified'", "use a release with custom_class, or a draft "
                    "checkpoint id")
            return "draft_model"
        if model in ("ngram", "[ngram]"):
            if model == "[ngram]":
                ctx.add("legacy-ngram-model", "warning", "model", "\"model\": \"[ngram]\" is "
                        "the legacy V0 spelling; vLLM still maps it to method 'ngram'",
                        "write \"method\": \"ngram\" and drop \"model\"")
            return "ngram"
        if model is None or model in METHOD_WORDS:
            return "draft_model"
        return _method_missing(ctx, model)
    if not isinstance(given, str):
        ctx.add("method-not-string", "error", "method", f"method must be a string, got "
                f"{json.dumps(given)}", "write e.g. \"method\": \"ngram\"")
        return None
    if t.raw.get("config_style", "pydantic") != "pydantic":
        # 0.8.2-0.9.2 check no Literal: __post_init__ keeps 'ngram', replaces the rest with
        # what it detects from the draft model
        if given in ("ngram", "[ngram]"):
            return "ngram"
        if given not in (t.methods or ("eagle", "medusa", "mlp_speculator", "draft_model")):
            ctx.add("method-ignored", "warning", "method", f"{ctx.vname} checks no list of "
                    f"methods (its SpeculativeConfig is a plain dataclass): it replaces "
                    f"{given!r} with what it detects from the draft model ('eagle' for an "
                    "'eagle-' name, medusa, mlp_speculator, else draft_model)", "drop "
                    "\"method\" (or write \"ngram\"), or upgrade vLLM for this method")
        elif isinstance(model, str):
            return given  # what vLLM detects from that model, if the model is right for it
        return _resolve(ctx, None, model)
    if given in t.methods:
        if given in t.mtp and given != "mtp":
            ctx.add("deprecated-mtp-method", "warning", "method", f"method `{given}` is "
                    f"deprecated and replaced with mtp ({ctx.vname}'s own warning)",
                    "write \"method\": \"mtp\"")
            return "mtp"
        return given
    canon = [m for m in TRAPS["build_methods"] if m in t.methods]
    low = given.lower()
    if given in TRAPS["build_methods"]:
        ctx.add("method-removed", "error", "method", f"method {given!r} is not one of "
                f"{ctx.vname}'s methods (pydantic Literal validation error); other vLLM "
                f"releases have it", f"use one of {', '.join(canon)}, or a vLLM release that "
                f"has '{given}'")
        return None
    if given == "[ngram]":
        ctx.add("unknown-method", "error", "method", f"method '[ngram]' is not one of "
                f"{ctx.vname}'s methods (pydantic Literal validation error); only \"model\": "
                "\"[ngram]\" is the legacy spelling vLLM still maps", "write \"method\": \"ngram\"")
        return None
    if low in t.methods:
        hint = low
    elif low in TRAPS["method_aliases"]:
        hint = TRAPS["method_aliases"][low]
    elif low.endswith("_mtp") or low.startswith("mtp"):
        hint = "mtp"
    else:
        close = difflib.get_close_matches(low, canon, n=1, cutoff=0.5)
        hint = close[0] if close else None
    ctx.add("unknown-method", "error", "method", f"unknown method {given!r} (not one of "
            f"{ctx.vname}'s methods: pydantic Literal validation error)"
            + (f"; did you mean '{hint}'?" if hint else ""),
            f"write \"method\": \"{hint}\"" if hint else f"use one of {', '.join(canon)}")
    return None


def _method_missing(ctx, model):
    """No "method": list what vLLM may detect for this model and the likely one."""
    found = checkpoint_method(model, ctx.draft) if isinstance(model, str) else None
    pick = detected_method("draft_model", model if isinstance(model, str) else "", ctx.draft)
    likely, why = found or ("draft_model", "nothing in the name or config marks a special head")
    msg = (f"\"method\" is not set: {ctx.vname} picks it from the checkpoint: 'eagle' when the "
           "path contains 'eagle-', 'eagle3' when it contains 'eagle3', 'dflash' / 'dspark' by "
           "path or architecture, 'medusa', 'mlp_speculator' or 'mtp' from config.json's "
           f"model_type, else 'draft_model'. For {model!r} the likely method is '{likely}' "
           f"({why})")
    by_config = likely in ("medusa", "mlp_speculator", "mtp")
    if pick == "draft_model" != likely and not by_config:
        msg += (f"; vLLM's path rules do not see it and would load it as 'draft_model', so "
                f"set \"method\": \"{likely}\"")
    elif by_config and ctx.draft is None:
        msg += "; vLLM decides this one from the checkpoint's config.json"
    ctx.add("method-missing", "warning", "method", msg, f"set \"method\": \"{likely}\" "
            "explicitly")
    return pick if pick != "draft_model" else likely


def _method_vs_checkpoint(ctx, method, model):
    """An explicit method the checkpoint (path or config.json) contradicts."""
    loads = (NEEDS_MODEL - {"custom_class"}) | {"mtp", "dspark"}
    if (model is None and ctx.draft is None) or method not in loads or model in METHOD_WORDS:
        return
    found = checkpoint_method(model or "", ctx.draft)
    if found is None:
        if method in ("eagle", "eagle3") and _is_full_causal_lm(ctx.draft):
            arch = ", ".join(ctx.draft.get("architectures") or [])
            ctx.add("method-full-lm-as-eagle", "warning", "method", f"method '{method}' with "
                    f"a checkpoint whose config.json says {arch}: a full causal LM, not an "
                    "EAGLE head; vLLM loads it as an EAGLE head and fails or drafts garbage",
                    "use \"method\": \"draft_model\" for a small full model")
        return
    needed, why = found
    if needed == method or (needed == "eagle" and method == "eagle3" and "eagle3" not in why):
        return
    pick = detected_method(method, model or "", ctx.draft)
    if pick != method:
        then = (f"{ctx.vname} re-detects the method from the checkpoint and runs '{pick}' "
                f"instead of '{method}' (vLLM issue #47486), so the config does not say what "
                "runs")
    else:
        how = ("does not re-detect an explicit" if method in ("eagle", "eagle3", "dflash",
                                                             "dspark") else "keeps")
        then = (f"{ctx.vname} {how} '{method}' and loads the checkpoint as that: expect a load "
                "error, or acceptance that is implausible (near 0, or near 100% as in field "
                "reports)")
    ctx.add("method-checkpoint-mismatch", "warning", "method", f"method '{method}' does not "
            f"match the checkpoint: {why} says '{needed}'; {then}",
            f"write \"method\": \"{needed}\"")


def _is_full_causal_lm(draft) -> bool:
    arch = [a.lower() for a in architectures(draft)]
    return bool(arch) and all(a.endswith("forcausallm") and not any(
        w in a for w in ("eagle", "medusa", "mtp", "dflash", "dspark", "speculator"))
        for a in arch)


def detected_method(method: str, model: str, draft_config=None) -> str:
    """The method vLLM ends up with for an explicit (or inferred) ``method`` and checkpoint:
    re-detected after loading the draft unless eagle, eagle3, dflash, dspark ('eagle-' in the
    path, 'eagle3', 'dflash' / 'dspark' in path or architecture, config.json ``model_type``
    medusa, mlp_speculator or MTP), else the method stays."""
    if method in ("eagle", "eagle3", "dflash", "dspark", "suffix", "custom_class",
                  "extract_hidden_states") or method in NGRAM:
        return method
    low = (model or "").lower()
    arch = " ".join(architectures(draft_config)).lower()
    mt = model_type(draft_config)
    for word, found in (("eagle-", "eagle"), ("eagle3", "eagle3")):
        if word in low:
            return found
    for word in ("dflash", "dspark"):
        if word in low or word in arch:
            return word
    if mt in MODEL_TYPE_METHOD:
        return MODEL_TYPE_METHOD[mt]
    return "mtp" if is_mtp_type(mt) else method


def _is_dotted_path(model: str) -> bool:
    if model.startswith(("http://", "https://", "file://")) or "/" in model:
        return False
    parts = model.split(".")
    return len(parts) >= 2 and all(p.isidentifier() for p in parts)


def model(ctx: Context) -> None:
    """'model': blank, missing for a method that loads a checkpoint, a method word, ignored."""
    method, value = ctx.method, ctx.values.get("model")
    has_model = ctx.given("model")
    if isinstance(value, str) and not value.strip() and method not in METHOD_WORDS:
        ctx.add("blank-model", "error", "model", f"model is the blank string {value!r}: vLLM "
                "would try to load a checkpoint by that name and fail",
                "put the draft checkpoint's Hugging Face id or local path")
    if isinstance(value, str) and value in METHOD_WORDS and method not in NO_DRAFT_BRANCH:
        word = value.strip("[]")
        ctx.add("method-word-as-model", "error", "model", f"model {value!r} is a method name, "
                f"not a checkpoint: with method '{method}' {ctx.vname} tries to load a "
                f"checkpoint called {value!r} (from the Hugging Face hub or a local folder) "
                "and fails with 'Invalid repository ID or local directory specified'",
                f"write \"method\": \"{word}\" and drop \"model\" ({word} needs no draft "
                "checkpoint)")
    elif method in NEEDS_MODEL and not has_model:
        if method == "custom_class":
            msg = ("method='custom_class' requires 'model' to contain the custom proposer "
                   "module path (e.g., 'my_module.MyProposer').")
        elif ctx.given("num_speculative_tokens"):
            msg = "num_speculative_tokens was provided but without speculative model."
        else:
            msg = (f"method '{method}' needs a draft checkpoint in 'model'; without it vLLM "
                   "fails with 'num_speculative_tokens must be provided with speculative "
                   "model unless the draft model config contains an n_predict parameter.'")
        ctx.add("model-missing", "error", "model", f"{msg} ({ctx.vname}; '{method}' loads a "
                "separate checkpoint)", "add \"model\": \"<draft checkpoint id or path>\"")
    elif method in ("ngram", "ngram_gpu", "suffix") and has_model and \
            ctx.keys.get("model") not in (method, "[ngram]"):
        ctx.add("model-ignored", "warning", "model", f"'model' is ignored for method "
                f"'{method}' (it needs no draft model)", "remove \"model\"")


def draft_tokens(ctx: Context) -> None:
    """num_speculative_tokens: what vLLM does when it is missing, and MTP above 1."""
    method, nst = ctx.method, ctx.values.get("num_speculative_tokens")
    has_model = ctx.given("model")
    if not ctx.given("num_speculative_tokens"):
        if method == "suffix":
            depth = ctx.values.get("suffix_decoding_max_tree_depth") or \
                TRAPS["suffix_default_tokens"]
            ctx.add("suffix-default-tokens", "warning", "num_speculative_tokens", "not set: "
                    "for suffix decoding vLLM defaults it to suffix_decoding_max_tree_depth "
                    f"({depth}) and logs a warning; it is a maximum, suffix decoding adapts "
                    "below it", "set it explicitly (the docs use 8 to 32)")
        elif method in N_PREDICT and (has_model or method not in ("mtp", "dspark")):
            ctx.add("n-predict-default", "warning", "num_speculative_tokens", "not set: vLLM "
                    "takes it from the draft checkpoint's n_predict; if the checkpoint has none "
                    "it raises 'A speculative model was provided, but `num_speculative_tokens` "
                    "was not provided'", "set it explicitly (1 for most MTP heads)")
        elif method in ("draft_model", "eagle", "eagle3") and has_model:
            ctx.add("num-speculative-tokens-missing", "error", "num_speculative_tokens",
                    "missing: a draft model or EAGLE head carries no n_predict, so vLLM raises "
                    "'A speculative model was provided, but `num_speculative_tokens` was not "
                    "provided'", "add \"num_speculative_tokens\": 3 to 5 (article: start at 3-5)")
        elif method not in NEEDS_MODEL or has_model:
            ctx.add("num-speculative-tokens-required", "error", "num_speculative_tokens",
                    "missing: vLLM raises 'num_speculative_tokens must be provided with "
                    "speculative model unless the draft model config contains an n_predict "
                    "parameter.'", "add \"num_speculative_tokens\": 4 (a positive integer)")
    if method == "mtp" and nst is not None and nst > 1:
        ctx.add("mtp-reruns-layer", "warning", "num_speculative_tokens", f"num_speculative_"
                f"tokens={nst} with mtp: 'Enabling num_speculative_tokens > 1 will run multiple "
                "times of forward on same MTP layer, which may result in lower acceptance "
                "rate' (vLLM's warning for single-layer MTP heads)",
                "start with 1 and raise it only if the mean acceptance length stays high")


def ngram_window(ctx: Context) -> None:
    """prompt_lookup_min / prompt_lookup_max: vLLM's defaults, mirroring and order."""
    lo, hi = ctx.values.get("prompt_lookup_min"), ctx.values.get("prompt_lookup_max")
    lo_given, hi_given = ctx.given("prompt_lookup_min"), ctx.given("prompt_lookup_max")
    if ctx.method not in NGRAM:
        if lo_given or hi_given:
            ctx.add("ngram-lookup-ignored", "warning", "prompt_lookup_min" if lo_given else
                    "prompt_lookup_max", "prompt_lookup_min/max only apply to ngram; vLLM "
                    f"sets them to 0 for method '{ctx.method}'", "remove them")
        return
    if not lo_given and not hi_given:
        ctx.add("ngram-lookup-defaults", "warning", "prompt_lookup_min", "prompt_lookup_min "
                "and prompt_lookup_max are not set: vLLM sets both to 5 (\"arbitrarily "
                "chosen\"), not min 1 as its docstring says, so only 5-gram matches are "
                "drafted", "set them, e.g. \"prompt_lookup_min\": 2, \"prompt_lookup_max\": 5 "
                "(vLLM's docs example)")
    elif lo_given != hi_given and (hi if hi_given else lo) is not None:  # a refused value
        given, other, val = (("prompt_lookup_max", "prompt_lookup_min", hi) if hi_given
                             else ("prompt_lookup_min", "prompt_lookup_max", lo))
        ctx.add("ngram-lookup-mirrored", "warning", other, f"{other} is not set: vLLM sets it "
                f"equal to {given}={val}, so the window is exactly {val} tokens",
                f"set {other} explicitly (e.g. prompt_lookup_min 2, max 5)")
    if lo is not None and hi is not None and lo > hi:
        ctx.add("ngram-lookup-min-above-max", "error", "prompt_lookup_min", f"prompt_lookup_min"
                f"={lo} must be <= prompt_lookup_max={hi} ({ctx.vname})",
                f"swap them: \"prompt_lookup_min\": {hi}, \"prompt_lookup_max\": {lo}")


def suffix(ctx: Context) -> None:
    """Suffix decoding needs Arctic Inference; suffix_decoding_* keys elsewhere are ignored."""
    keys = [k for k in ctx.keys if isinstance(k, str) and k.startswith("suffix_decoding_")]
    if ctx.method == "suffix":
        ctx.add("suffix-needs-arctic", "warning", None, "suffix decoding needs Arctic "
                "Inference on the server: \"Arctic Inference is required for suffix decoding. "
                "Install via `pip install arctic-inference==0.1.1`.\"", "pip install "
                "arctic-inference on the vLLM host before starting")
    elif keys:
        ctx.add("suffix-keys-ignored", "warning", keys[0], f"{', '.join(keys)} only apply to "
                f"method 'suffix'; {ctx.vname} neither checks nor uses them for "
                f"'{ctx.method}'", "remove them")
