"""The value rules: each value as the release's pydantic reads it in lax mode (checked with
pydantic 2.14 of the vLLM 0.33.0 wheel, ``oracle/drive_strings.py``; a stdlib-dataclass release,
table ``config_style: "dataclass"``, coerces nothing), the table's bounds, and the bounds vLLM
checks by hand for one method."""

from __future__ import annotations

import difflib
import json
import re

from ..._numbers import number_text
from .context import TRAPS, Context, as_int

_JSON_SCALARS = (str, int, float, bool, type(None))
_INT_STR = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?")
_BOOL_WORDS = {**dict.fromkeys(("true", "yes", "on", "t", "y", "1"), True),
               **dict.fromkeys(("false", "no", "off", "f", "n", "0"), False)}
#: Above this ``num_speculative_tokens`` the checker warns (``num-speculative-tokens-huge``):
#: vLLM accepts any integer > 0, but its docs use 1 to 32 and 1024 is the context of the
#: smallest models served (GPT-2's n_positions), so a draft this long is surely a typo.
MAX_SENSIBLE_GAMMA = 1024


def json_values(value, where: str) -> None:
    """Raise TypeError naming the first value that JSON (and so vLLM's CLI) cannot hold."""
    if isinstance(value, dict):
        for k, v in value.items():
            json_values(v, f"{where}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            json_values(v, f"{where}[{i}]")
    elif not isinstance(value, _JSON_SCALARS):
        hint = (" (convert numpy numbers with int() / float())"
                if type(value).__module__ == "numpy" else "")
        raise TypeError(f"{where} must be a JSON value (str, int, float, bool, None, list, "
                        f"dict), got {type(value).__module__}.{type(value).__name__} "
                        f"{value!r}{hint}")


def coerce(kind: str, value):
    """(value as pydantic's lax mode reads it for ``kind`` "int", "float" or "bool", how):
    how is None (taken as is), "coerced", or "refused" (the value is then None)."""
    if kind == "int":
        if isinstance(value, bool):
            return int(value), "coerced"
        if isinstance(value, int):
            return value, None
        if isinstance(value, float):
            ok = value == value and abs(value) != float("inf") and value == int(value)
            return (int(value), "coerced") if ok else (None, "refused")
        if isinstance(value, str) and _INT_STR.fullmatch(value.strip()):
            return int(value.strip().split(".")[0]), "coerced"
        return None, "refused"
    if kind == "float":
        if isinstance(value, (int, float)):
            try:
                return float(value), ("coerced" if isinstance(value, bool) else None)
            except OverflowError:  # an int of 309+ digits: pydantic's float_type refuses it
                return None, "refused"
        if isinstance(value, str) and value.isascii():
            try:
                return float(value), "coerced"
            except ValueError:
                pass
        return None, "refused"
    if isinstance(value, bool):
        return value, None
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value), "coerced"
    if isinstance(value, str) and value.lower() in _BOOL_WORDS:
        return _BOOL_WORDS[value.lower()], "coerced"
    return None, "refused"


_WHAT = {"int": "an integer", "float": "a number", "bool": "true or false"}
_EXAMPLE = {"int": "4", "float": "0.5", "bool": "true"}


_CODES = {("int", "string", True): "int-got-string-number", ("bool", "float", True):
          "bool-got-number", ("int", "float", False): "int-got-fraction",
          ("int", "string", False): "int-got-string"}


def _code(kind, value, coerced) -> str:
    src = next(n for t, n in ((bool, "bool"), (str, "string"), (float, "float"),
                              (int, "number"), (object, "other")) if isinstance(value, t))
    default = f"{kind}-got-{src}" if coerced else (
        "number-wrong-type" if kind == "float" else f"{kind}-wrong-type")
    return _CODES.get((kind, src, coerced), default)


def _scalar(ctx: Context, key, kind, value, spec):
    from ..syntax import PLACEHOLDER_STRING_RE

    out, how = coerce(kind, value)
    if how == "refused" and isinstance(value, str) and PLACEHOLDER_STRING_RE.match(value):
        ctx.add("template-placeholder", "error", key, f"{key} is the unsubstituted "
                f"template placeholder {value!r}", f"substitute a value, e.g. \"{key}\": 4")
        return None
    if how is not None and ctx.table.raw.get("config_style") == "dataclass":
        return _kept(ctx, key, kind, value, out, spec)
    if how == "refused":
        ctx.add(_code(kind, value, False), "error", key, f"{key} must be {_WHAT[kind]}, got "
                f"{json.dumps(value)}: {ctx.table.pydantic_name} (lax mode) cannot read it "
                f"as one", f"write {_WHAT[kind]}, e.g. \"{key}\": {_EXAMPLE[kind]}")
        return None
    if how == "coerced":
        ctx.add(_code(kind, value, True), "warning", key, f"{key} is {json.dumps(value)}; "
                f"{ctx.table.pydantic_name} (lax mode) reads it as {json.dumps(out)}",
                f"write {json.dumps(out)}")
    lo, hi = spec.get("minimum"), spec.get("maximum")
    if kind != "bool" and lo is not None and (
            not (out > lo if spec.get("exclusive") else out >= lo) or
            (hi is not None and not out <= hi)):
        op = ">" if spec.get("exclusive") else ">="
        rng = f"{op} {lo:g}" + (f" and <= {hi:g}" if hi is not None else "")
        ctx.add("below-minimum", "error", key, f"{key} must be {rng}, got {out} (pydantic "
                "Field constraint)", f"use a value {rng}")
        return None
    return out


def _kept(ctx: Context, key, kind, value, out, spec):
    """0.8.2-0.9.0.1: ``SpeculativeConfig.from_dict`` is ``cls(**d)`` on a stdlib dataclass, so
    no value is coerced: a bool (or 0/1 for a bool) works as its number (or truth value), and
    anything else stays the str or float given (vllm/config.py of the 0.9.0 wheel)."""
    plain = (f"{ctx.vname}'s SpeculativeConfig is a plain dataclass that checks no types (no "
             "pydantic)")
    if isinstance(value, bool) or (kind == "bool" and isinstance(value, (int, float))):
        out = bool(value) if kind == "bool" else out  # 2 for a bool: truthy, as 1 is
        ctx.add(_code(kind, value, True), "warning", key, f"{key} is {json.dumps(value)}; "
                f"{plain}: it keeps {json.dumps(value)}, which Python treats as "
                f"{json.dumps(out)}", f"write {json.dumps(out)}")
        return _scalar(ctx, key, kind, out, spec)
    if kind == "bool":  # a str: truthy unless empty, so vLLM starts with the switch on
        ctx.add(_code(kind, value, True), "warning", key, f"{key} is {json.dumps(value)}; "
                f"{plain}: it keeps the string, which Python treats as {json.dumps(bool(value))}",
                f"write {json.dumps(out) if out is not None else 'true or false'}")
        return None
    ctx.add(_code(kind, value, False), "error", key, f"{key} must be {_WHAT[kind]}, got "
            f"{json.dumps(value)}: {plain}, so it keeps the {type(value).__name__} as given; "
            f"where its code compares or counts with {key} that raises TypeError",
            f"write {json.dumps(out)}" if out is not None else f"write {_WHAT[kind]}, e.g. "
            f"\"{key}\": {_EXAMPLE[kind]}")
    return None


def _typed(ctx: Context, key, value):
    spec = ctx.table.fields[key]
    kind = {"config": "object"}.get(spec["kind"], spec["kind"])
    if value is None:
        if not spec.get("nullable", True):
            ctx.add("null-value", "error", key, f"{key} must not be null (default "
                    f"{json.dumps(spec.get('default'))})", f"remove '{key}' or set a value")
        return None
    if kind in ("int", "float", "bool"):
        return _scalar(ctx, key, kind, value, spec)
    if kind == "list" or key in TRAPS["list_items"]:
        return _list(ctx, key, value)
    if kind == "object":
        return _object(ctx, key, value)
    if not isinstance(value, str):
        ctx.add("string-wrong-type", "error", key, f"{key} must be a string, got "
                f"{json.dumps(value)}", f"write \"{key}\": \"...\"")
        return None
    choices = spec.get("choices") or ()
    if kind == "enum" and not (value.lower() == "auto" or value.upper() in choices):
        close = difflib.get_close_matches(value.upper(), choices, n=1)
        ctx.add("invalid-choice", "error", key, f"{key} must name one of {ctx.vname}'s "
                f"backends ({', '.join(choices)}; any case; 'auto' = none), got "
                f"{json.dumps(value)}", f"use {(close or [choices[0]])[0]!r}")
        return None
    if kind == "literal" and not spec.get("open") and key != "method" and value not in choices:
        close = difflib.get_close_matches(value, choices, n=1)
        ctx.add("invalid-choice", "error", key, f"{key} must be one of "
                f"{', '.join(map(repr, choices))}, got {value!r}",
                f"use {(close or choices[:1])[0]!r}")
        return None
    return value


def _list(ctx, key, value):
    if not isinstance(value, list):
        ctx.add("list-wrong-type", "error", key, f"{key} must be a list, got "
                f"{json.dumps(value)}", "write a JSON list [...]")
        return None
    kind = TRAPS["list_items"].get(key)
    if kind is None:
        return value
    nested = key == "num_speculative_tokens_per_batch_size"
    out, coerced = [], False
    for i, item in enumerate(value):
        row = item if nested else [item]
        if not isinstance(row, list):
            out.append(item)
            continue
        new = []
        for j, x in enumerate(row):
            got, how = coerce(kind, x)
            if how == "refused":
                where = f"{key}[{i}][{j}]" if nested else f"{key}[{i}]"
                ctx.add(f"{kind}-wrong-type", "error", key, f"{where} must be {_WHAT[kind]}, "
                        f"got {json.dumps(x)}: {ctx.table.pydantic_name} (lax mode) cannot "
                        "read it as one", f"write {_WHAT[kind]}s")
                return None
            coerced |= how == "coerced"
            new.append(got)
        out.append(new if nested else new[0])
    if coerced:
        ctx.add("list-coerced", "warning", key, f"{key} is {json.dumps(value)}; "
                f"{ctx.table.pydantic_name} (lax mode) reads it as {json.dumps(out)}",
                f"write {json.dumps(out)}")
    return out


def _object(ctx, key, value):
    if not isinstance(value, dict):
        ctx.add("object-wrong-type", "error", key, f"{key} must be an object, got "
                f"{json.dumps(value)}")
        return None
    allowed = ctx.table.load_config_fields if key == "draft_load_config" else None
    extra = [k for k in value if allowed and k not in allowed]
    if extra:
        ctx.add("draft-load-config-extra-key", "error", key, f"{key} is a LoadConfig, which "
                f"forbids extra keys: {', '.join(map(repr, extra))} (its keys: "
                f"{', '.join(allowed)})", f"remove {', '.join(map(repr, extra))}")
        return None
    return value


def values(ctx: Context) -> None:
    """Every field's value as the release's pydantic reads it (``ctx.values``)."""
    ctx.values = {k: _typed(ctx, k, v) for k, v in ctx.keys.items()
                  if k in ctx.table.fields and k not in ("method", "tensor_parallel_size")
                  and k not in ctx.table.internal}


def method_bounds(ctx: Context) -> None:
    """The bounds vLLM checks by hand for the method that runs (``_validate_suffix_decoding``:
    suffix_decoding_* only for method 'suffix'; NaN passes a minimum, fails a range)."""
    for key, b in TRAPS["method_bounds"].get(ctx.method, {}).items():
        v = ctx.values.get(key)
        if v is None:
            continue
        lo, hi = b.get("minimum"), b.get("maximum")
        if (hi is not None and not lo <= v <= hi) or (hi is None and v < lo):
            rng = f"in [{lo:g}, {hi:g}]" if hi is not None else f">= {lo:g}"
            ctx.add("out-of-range", "error", key, f"{key}={v} must be {rng} ({ctx.vname}: "
                    f"\"{key}={v} must be {rng}\")", f"use a value {rng}")


def huge_gamma(ctx: Context) -> None:
    """A draft length beyond any context: accepted by vLLM, surely a mistake."""
    nst = ctx.values.get("num_speculative_tokens")
    if nst is None:
        return
    dctx = as_int((ctx.draft or {}).get("max_position_embeddings"))
    if dctx is not None and 0 < dctx < min(nst, MAX_SENSIBLE_GAMMA):
        what = f"the draft's context (max_position_embeddings={dctx})"
    elif nst > MAX_SENSIBLE_GAMMA:
        what = f"{MAX_SENSIBLE_GAMMA} tokens, the context of the smallest models"
    else:
        return
    shown = f"{nst}" if nst < 10 ** 12 else f"{float(nst):.3g}" if nst < 10 ** 300 else \
        number_text(nst)  # no float holds it (T6-T1)
    ctx.add("num-speculative-tokens-huge", "warning", "num_speculative_tokens",
            f"num_speculative_tokens={shown}: vLLM accepts any integer > 0, but every step "
            f"would draft that many tokens, beyond {what}; vLLM's docs use 1 to 32, so this is "
            "surely a typo", "use the draft length you mean (3 to 5 to start; suffix 8 to 32)")
