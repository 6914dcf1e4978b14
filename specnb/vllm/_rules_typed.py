"""The checker's value rules: each key's type and range, the draft length, the synthetic
acceptance keys and the dynamic schedule.

A mixin of :class:`specnb.vllm._rules._Checker` (uses its ``add``, ``era``, ``version``,
``vname``, ``prof``, ``fields``, ``draft_config``). Split from :mod:`specnb.vllm._rules` (a
pure move). Sources: ``vllm/config/speculative.py`` @ ``002e77c1`` (types, constraints),
``vllm/v1/spec_decode/dynamic/utils.py`` @ ``a6f6bb1d`` (the dynamic schedule, see
:mod:`specnb.vllm.schedule`).
"""

from __future__ import annotations

import difflib
import json
import re

from . import _schema as S
from .schedule import (SCHEDULE_SEMANTICS, describe_schedule, schedule_problems,
                       schedule_tax_text)
from .syntax import PLACEHOLDER_STRING_RE as _PLACEHOLDER_STRING_RE


class _TypedRules:
    # ---- typed values
    def int_value(self, key, value, minimum=None, exclusive=False):
        """Check an int field; return the int (or None when unusable)."""
        if isinstance(value, bool) and self.prof is not None:
            self.add("int-got-bool",
                     "warning", key, f"{key} is the boolean {json.dumps(value)}; {self.vname}'s "
                     f"pydantic validation (lax mode) reads it as {int(value)}",
                     f"write a number, e.g. \"{key}\": 4")
            value = int(value)
        elif isinstance(value, bool):
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
        spec = self.fields[key]
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
                if drift != "" and self.prof is None:
                    msg += (" (the docs name values the code @ 002e77c1 does not have; "
                            "'probabilistic' is now draft_sample_method='probabilistic', "
                            "FLy verification is not in this code)")
                fix = f"use {(close or [drift or spec.choices[0]])[0]!r}"
                self.add("invalid-choice", "error", key, msg, fix)
                return None
            return value
        if spec.kind == "enum":
            if isinstance(value, str) and (value.lower() == "auto"
                                           or value.upper() in spec.choices):
                return value
            close = difflib.get_close_matches(str(value).upper(), spec.choices, n=1)
            self.add("invalid-choice", "error", key, f"{key} must name one of {self.vname}'s "
                     f"backends ({', '.join(spec.choices)}; any case; 'auto' = none), got "
                     f"{json.dumps(value)}", f"use {(close or [spec.choices[0]])[0]!r}")
            return None
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
            allowed = (self.prof or {}).get("load_config_fields") if key == "draft_load_config" \
                else None
            extra = [k for k in value if allowed is not None and k not in allowed]
            if extra:
                self.add("draft-load-config-extra-key", "error", key, f"{key} is a LoadConfig, "
                         f"which forbids extra keys: {', '.join(map(repr, extra))} (its keys: "
                         f"{', '.join(allowed)})", f"remove {', '.join(map(repr, extra))}")
                return None
            return value
        return value

    # ---- draft length, synthetic acceptance, dynamic schedule
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
        if self.prof is not None and schedule == []:
            self.add("schedule-empty-fails-later", "warning", key, f"{key} is empty: "
                     f"{self.vname} accepts the config and the scheduler skips an empty "
                     "schedule, but the GPU model runner's CUDA-graph setup then raises "
                     "'num_speculative_tokens_per_batch_size must not be empty.'",
                     "omit the key for a static num_speculative_tokens, or give at least one "
                     "[range_start, range_end, K] entry")
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
