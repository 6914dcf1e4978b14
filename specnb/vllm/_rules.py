"""The checker's rules: what vLLM's ``SpeculativeConfig`` does with each key, as findings.

Sources: ``vllm/config/speculative.py`` @ ``002e77c1`` (types, constraints, method inference,
``__post_init__`` and ``_verify_args`` messages), PR #31541 (unknown keys rejected since about
v0.14), ``vllm/v1/spec_decode/dynamic/utils.py`` @ ``a6f6bb1d`` (the dynamic schedule, see
:mod:`specnb.vllm.schedule`). The schema itself is transcribed in :mod:`specnb.vllm._schema`.
"""

from __future__ import annotations

import difflib
import json
import re

from ..hf_config import (MODEL_TYPE_METHOD, architectures, checkpoint_method, is_mtp_type,
                         model_type)
from . import _schema as S
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
class _Checker:
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

    # ---- unknown keys
    def unknown(self, code, key, message, fix, removed_noop=False):
        ver = self.version
        message = message if message.endswith("?") else message + "."
        if self.era == "lenient":
            if removed_noop:
                self.add(code,
                         "warning", key, f"{message} vLLM {ver} still accepts it, but it has "
                         "done nothing since v0.10.0.", fix)
            else:
                self.add(code, "warning", key, f"{message} vLLM {ver} ignores unknown keys "
                         "silently, so this setting has no effect (from about v0.14, PR "
                         "#31541, it is an error).", fix)
            return
        who = "Current vLLM" if self.era == "current" else f"vLLM {ver}"
        self.add(code, "error", key, f"{message} {who} rejects unknown keys (pydantic "
                 "extra='forbid' since PR #31541, about v0.14); JSON-era builds before that "
                 "(about v0.8 to v0.13) ignored them silently, so the setting never took "
                 "effect.", fix)

    def scan_keys(self, cfg):
        known = [k for k, f in S.FIELDS.items() if f.kind != "internal"
                 and k != "tensor_parallel_size"]
        for key in cfg:
            if not isinstance(key, str):
                self.add("key-not-string", "error", str(key), f"keys must be strings, got {key!r}")
                continue
            if key in S.FIELDS and key not in S.INTERNAL_KEYS:
                continue
            if key in S.INTERNAL_KEYS:
                self.add("internal-key",
                         "error", key, f"'{key}' is populated by vLLM and not intended to be "
                         "set by users (docs README @ 01ed47b4, Notes)", f"remove '{key}'")
            elif key in S.SAMPLING_KEYS:
                self.unknown("sampling-key",
                             key, f"'{key}' is a request sampling parameter, not a "
                             "speculative_config key (vLLM docs, Notes)",
                             f"remove it here; send {key} with each request (OpenAI API "
                             f"field, or SamplingParams({key}=...)); for benchmarks use "
                             f"`vllm bench serve --{key.replace('_', '-')}`")
            elif key in S.LEGACY_KEYS:
                new, why = S.LEGACY_KEYS[key]
                msg = (f"'{key}' was removed from vLLM ({why})" if key == "disable_by_batch_size"
                       else f"'{key}' is not a speculative_config key ({why})")
                if new:
                    msg += f"; did you mean '{new}'?"
                fix = f"rename '{key}' to '{new}'" if new else f"remove '{key}'"
                self.unknown("legacy-key", key, msg, fix,
                             removed_noop=(key == "disable_by_batch_size"))
            else:
                norm = key.replace("-", "_").strip()
                if norm in known or norm.lower() in known:
                    new = norm if norm in known else norm.lower()
                    how = "hyphenated" if "-" in key else "spelled differently"
                    self.unknown("key-misspelled",
                                 key, f"'{key}' is {how}; the key is '{new}' (JSON keys are not "
                                 "normalised, only flag names are)", f"rename '{key}' to '{new}'")
                    continue
                close = difflib.get_close_matches(norm, known + list(S.LEGACY_KEYS), n=1,
                                                  cutoff=0.6)
                if close and close[0] in S.LEGACY_KEYS:
                    close = [S.LEGACY_KEYS[close[0]][0]] if S.LEGACY_KEYS[close[0]][0] else []
                if close:
                    self.unknown("unknown-key-did-you-mean",
                                 key, f"unknown key '{key}'; did you mean '{close[0]}'?",
                                 f"rename '{key}' to '{close[0]}'")
                else:
                    which = ("valid keys" if self.era == "current" else
                             f"valid keys in current vLLM ({S.SOURCE}; vLLM {self.version} "
                             "may lack some of them)")
                    self.unknown("unknown-key", key, f"unknown key '{key}'",
                                 f"remove '{key}'; {which}: {', '.join(known)}")

    # ---- typed values
    def int_value(self, key, value, minimum=None, exclusive=False):
        """Check an int field; return the int (or None when unusable)."""
        if isinstance(value, bool):
            self.add("int-got-bool",
                     "error", key, f"{key} must be an integer, got the boolean {json.dumps(value)}",
                     f"write a number, e.g. \"{key}\": 4")
            return None
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")) or value != int(value):
                self.add("int-got-fraction",
                         "error", key, f"{key} must be a whole number, got {value!r}",
                         f"write an integer, e.g. \"{key}\": 4")
                return None
            self.add("int-got-float",
                     "warning", key, f"{key} is the float {value!r}; vLLM's pydantic "
                     "validation accepts a whole-number float as int", f"write {int(value)}")
            value = int(value)
        elif isinstance(value, str):
            if _PLACEHOLDER_STRING_RE.match(value):
                self.add("template-placeholder",
                         "error", key, f"{key} is the unsubstituted template placeholder "
                         f"{value!r}", f"substitute an integer, e.g. \"{key}\": 4")
                return None
            if re.fullmatch(r"\s*[+-]?\d+\s*", value):
                self.add("int-got-string-number",
                         "warning", key, f"{key} is the string {value!r}; pydantic (lax mode) "
                         "converts it to an integer", f"write {int(value)} without quotes")
                value = int(value)
            else:
                self.add("int-got-string",
                         "error", key, f"{key} must be an integer, got the string {value!r}",
                         f"write an integer, e.g. \"{key}\": 4")
                return None
        elif not isinstance(value, int):
            self.add("int-wrong-type",
                     "error", key, f"{key} must be an integer, got {json.dumps(value)}",
                     f"write an integer, e.g. \"{key}\": 4")
            return None
        if minimum is not None and (value <= minimum if exclusive else value < minimum):
            op = ">" if exclusive else ">="
            self.add("below-minimum", "error", key, f"{key} must be {op} {minimum:g}, got {value}"
                     " (pydantic Field constraint)",
                     f"use a value {op} {minimum:g}")
            return None
        return value

    def typed(self, key, value):
        spec = S.FIELDS[key]
        if value is None:
            if not spec.nullable:
                self.add("null-value", "error", key, f"{key} must not be null (default "
                         f"{json.dumps(spec.default)})", f"remove '{key}' or set a value")
            return None
        if spec.kind == "int":
            return self.int_value(key, value, spec.minimum, spec.exclusive)
        if spec.kind == "bool":
            if isinstance(value, bool):
                return value
            lax = {"true": True, "false": False, "yes": True, "no": False, "on": True,
                   "off": False, "1": True, "0": False}
            if isinstance(value, str) and value.strip().lower() in lax:
                self.add("bool-got-string",
                         "warning", key, f"{key} is the string {value!r}; pydantic (lax mode) "
                         "reads it as a boolean",
                         f"write {json.dumps(lax[value.strip().lower()])} without quotes")
                return lax[value.strip().lower()]
            if isinstance(value, int) and value in (0, 1):
                self.add("bool-got-number",
                         "warning", key, f"{key} is {value}; pydantic reads it as a boolean",
                         f"write {json.dumps(bool(value))}")
                return bool(value)
            self.add("bool-wrong-type",
                     "error", key, f"{key} must be true or false, got {json.dumps(value)}",
                     f"write \"{key}\": true or false")
            return None
        if spec.kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.add("number-wrong-type",
                         "error", key, f"{key} must be a number, got {json.dumps(value)}",
                         "write a number")
                return None
            lo, hi = spec.minimum, spec.maximum
            # vLLM: `< lo` for a minimum only (NaN passes), `not lo <= v <= hi` for a range
            # (NaN fails)
            if (hi is not None and not lo <= value <= hi) or (hi is None and lo is not None
                                                              and value < lo):
                rng = f"in [{lo:g}, {hi:g}]" if hi is not None else f">= {lo:g}"
                self.add("out-of-range", "error", key, f"{key}={value} must be {rng} (vLLM: "
                         f"\"{key}={value} must be {rng}\")", f"use a value {rng}")
                return None
            return float(value)
        if spec.kind in ("str", "literal"):
            if not isinstance(value, str):
                self.add("string-wrong-type",
                         "error", key, f"{key} must be a string, got {json.dumps(value)}",
                         f"write \"{key}\": \"...\"")
                return None
            if spec.kind == "literal" and key != "method" and value not in spec.choices:
                close = difflib.get_close_matches(value, spec.choices, n=1)
                drift = {"strict": "standard", "probabilistic": "standard",
                         "fly": None}.get(value, "") if key == "rejection_sample_method" else ""
                msg = f"{key} must be one of {', '.join(map(repr, spec.choices))}, got {value!r}"
                if drift != "":
                    msg += (" (the docs name values the code @ 002e77c1 does not have; "
                            "'probabilistic' is now draft_sample_method='probabilistic', "
                            "FLy verification is not in this code)")
                fix = f"use {(close or [drift or spec.choices[0]])[0]!r}"
                self.add("invalid-choice", "error", key, msg, fix)
                return None
            return value
        if spec.kind == "list":
            if not isinstance(value, list):
                self.add("list-wrong-type",
                         "error", key, f"{key} must be a list, got {json.dumps(value)}",
                         "write a JSON list [...]")
                return None
            return value
        if spec.kind == "object":
            if not isinstance(value, dict):
                self.add("object-wrong-type",
                         "error", key, f"{key} must be an object, got {json.dumps(value)}")
                return None
            return value
        return value

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
        if method in S.METHODS:
            if method in S.MTP_METHODS and method != "mtp":
                self.add("deprecated-mtp-method",
                         "warning", "method", f"method `{method}` is deprecated and replaced "
                         "with mtp (vLLM's own warning @ 002e77c1; older builds knew only the "
                         "model-specific names)", "write \"method\": \"mtp\"")
                return "mtp"
            return method
        if method == "[ngram]":
            self.add("legacy-ngram-method",
                     "warning", "method", "'[ngram]' is the legacy spelling; vLLM maps it to "
                     "'ngram'", "write \"method\": \"ngram\"")
            return "ngram"
        canon = list(S.BUILD_METHODS)
        if method.lower() in S.METHODS:
            hint = method.lower()
        elif method.lower() in S.METHOD_ALIASES:
            hint = S.METHOD_ALIASES[method.lower()]
        elif method.lower().endswith("_mtp") or method.lower().startswith("mtp"):
            hint = "mtp"
        else:
            close = difflib.get_close_matches(method.lower(), canon, n=1, cutoff=0.5)
            hint = close[0] if close else None
        msg = f"unknown method {method!r} (pydantic Literal validation error)"
        if hint:
            msg += f"; did you mean '{hint}'?"
            fix = f"write \"method\": \"{hint}\""
        else:
            fix = f"use one of {', '.join(canon)}"
        self.add("unknown-method", "error", "method", msg, fix)
        return None

    def run(self, cfg: dict):
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
        nst_given = cfg.get("num_speculative_tokens") is not None

        # tensor_parallel_size: vLLM's own message
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

        if method is None:
            return
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

        # num_speculative_tokens
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
        if method == "mtp" and nst is not None and nst > 1:
            self.add("mtp-reruns-layer",
                     "warning", "num_speculative_tokens", f"num_speculative_tokens={nst} with "
                     "mtp: 'Enabling num_speculative_tokens > 1 will run multiple times of "
                     "forward on same MTP layer, which may result in lower acceptance rate' "
                     "(vLLM's warning for single-layer MTP heads)",
                     "start with 1 and raise it only if the mean acceptance length stays high")

        # n-gram window
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

        # suffix
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

        # method-specific switches (messages from vLLM @ 002e77c1)
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
        self.synthetic(cfg, vals, nst)
        self.dynamic(vals.get("num_speculative_tokens_per_batch_size"), nst)

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

