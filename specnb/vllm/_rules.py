"""The checker's rules: what vLLM's ``SpeculativeConfig`` does with each key, as findings.

Sources: ``vllm/config/speculative.py`` @ ``002e77c1`` (types, constraints, method inference,
``__post_init__`` and ``_verify_args`` messages), PR #31541 (unknown keys rejected since about
v0.14), ``vllm/v1/spec_decode/dynamic/utils.py`` @ ``a6f6bb1d`` (the dynamic schedule, see
:mod:`specnb.vllm.schedule`). The schema itself is transcribed in :mod:`specnb.vllm._schema`.

The key, value and method rules are mixins of :class:`_Checker` (:mod:`._rules_keys`,
:mod:`._rules_typed`, :mod:`._rules_method`); the checks against the target are
:func:`._rules_target.target_checks`.
"""

from __future__ import annotations

import re

from . import _schema as S
from ._rules_keys import _KeyRules
from ._rules_method import NO_DRAFT_BRANCH, _MethodRules, vllm_detected_method
from ._rules_target import target_checks
from ._rules_typed import _TypedRules
from .findings import Finding
from .syntax import PLACEHOLDER_STRING_RE as _PLACEHOLDER_STRING_RE
from .syntax import linecol as _linecol

__all__ = ["NO_DRAFT_BRANCH", "_Checker", "_era", "_parse_version", "fields_from_profile",
           "target_checks", "vllm_detected_method"]


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

def fields_from_profile(prof) -> dict:
    """:class:`specnb.vllm._schema.Field` objects from a version profile's fields
    (:mod:`specnb.vllm._versions`)."""
    out = {}
    for name, f in prof["fields"].items():
        kind = {"config": "object"}.get(f["kind"], f["kind"])
        if kind == "literal" and f.get("open"):
            kind = "str"
        if kind in ("other",):
            kind = "list" if name.endswith(("_rates", "_batch_size")) else "str"
        lo, hi = f.get("minimum"), f.get("maximum")
        if name.startswith("suffix_decoding_") and name in S.FIELDS and lo is None:
            # checked by hand in _validate_suffix_decoding, not by a pydantic constraint
            lo, hi = S.FIELDS[name].minimum, S.FIELDS[name].maximum
        out[name] = S.Field(kind, nullable=f.get("nullable", True), minimum=lo,
                            exclusive=f.get("exclusive", False), maximum=hi,
                            choices=tuple(f.get("choices", ())), default=f.get("default"))
    return out


class _Checker(_KeyRules, _TypedRules, _MethodRules):
    """vLLM's rules run over one parsed config; the key, value and method rules are mixins
    (:mod:`._rules_keys`, :mod:`._rules_typed`, :mod:`._rules_method`)."""

    def __init__(self, text: str | None, era: str, version: str | None,
                 draft_config: dict | None = None, profile: dict | None = None):
        self.text, self.era, self.version = text, era, version
        self.draft_config = draft_config
        self.out: list[Finding] = []
        self.prof = profile
        if profile is not None:
            self.fields = fields_from_profile(profile)
            self.methods = tuple(profile["methods"])
            self.mtp = tuple(profile["mtp_methods"]) or S.MTP_METHODS
            self.vname = f"vLLM {profile['vllm']}"
        else:
            self.fields, self.methods, self.mtp = S.FIELDS, S.METHODS, S.MTP_METHODS
            self.vname = f"vLLM @ {S.SOURCE.split(' @ ')[1]}"
        self.internal = frozenset(k for k, f in self.fields.items() if f.kind == "internal")

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
        if self.prof is not None and self.prof.get("hyphen_rewrite"):
            cfg = self.rewrite_hyphens(cfg)
        self.scan_keys(cfg)
        vals = {k: self.typed(k, v) for k, v in cfg.items()
                if k in self.fields and k not in ("method", "tensor_parallel_size")
                and k not in self.internal}
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
        if "tensor_parallel_size" in cfg and (cfg["tensor_parallel_size"] is not None
                                              or self.prof is None):
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
        """num_speculative_tokens: what vLLM does when it is missing, too large, and MTP above 1."""
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
        nst = vals.get("num_speculative_tokens")
        if cfg.get("index_share_for_mtp_iteration") is not None and method != "mtp":
            self.add("mtp-only-key",
                     "error", "index_share_for_mtp_iteration", "index_share_for_mtp_iteration "
                     "is only supported with method='mtp'", "remove it")
        if self.prof is not None:
            self.profile_switches(cfg, vals, method, nst)
        elif vals.get("enable_adaptive_verification") and method != "dspark":
            self.add("dspark-only-key",
                     "error", "enable_adaptive_verification", "Adaptive verification only "
                     "supported with DSpark", "remove it (method 'dspark' only)")
        if self.prof is None and cfg.get("dspark_draft_topk") is not None and method != "dspark":
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
