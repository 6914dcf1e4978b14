"""The checker's value rules: each key's type, range and choices the way pydantic reads them.

A mixin of :class:`specnb.vllm._rules._Checker` (uses its ``add``). Source: the field types
and constraints of ``vllm/config/speculative.py`` @ ``002e77c1``, transcribed in
:mod:`specnb.vllm._schema`.
"""

from __future__ import annotations

import difflib
import json
import re

from . import _schema as S
from .syntax import PLACEHOLDER_STRING_RE as _PLACEHOLDER_STRING_RE


class _TypedRules:
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
