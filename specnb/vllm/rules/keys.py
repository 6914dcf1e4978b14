"""The key rules: duplicated, hyphenated, unknown, internal, sampling, legacy and misspelled
keys (``extra="forbid"`` from PR #31541; the table's ``extra`` says which)."""

from __future__ import annotations

import difflib
import json

from .._versions import tables
from .context import LEGACY_KEYS, TRAPS, Context

SAMPLING_KEYS = frozenset(TRAPS["sampling_keys"])


def duplicates(ctx: Context) -> None:
    """A key given twice: JSON keeps the last value."""
    for k in getattr(ctx.keys, "duplicates", None) or ():
        ctx.add("duplicate-key", "warning", k, f"'{k}' appears more than once; JSON keeps the "
                "last value silently", f"keep one '{k}'")


def hyphens(ctx: Context) -> None:
    """``create_speculative_config``'s ``{k.replace('-', '_'): v}`` where the release has it."""
    if not ctx.table.hyphen_rewrite:
        return
    out = {}
    for k, v in ctx.keys.items():
        nk = k.replace("-", "_") if isinstance(k, str) else k
        if nk != k:
            who = _newest(lambda t: not t.hyphen_rewrite, "releases without the rewrite")
            ctx.add("hyphen-key-rewritten", "warning", k, f"'{k}' is hyphenated; {ctx.vname} "
                    f"rewrites '-' to '_' in every key, so it is '{nk}' ({who} reject it as an "
                    "unknown key)", f"rename '{k}' to '{nk}'")
        if nk in out:
            ctx.add("key-spelled-twice", "warning", k, f"'{nk}' is given twice (as '{nk}' and "
                    f"'{k}' with - or _); after the rewrite the later value, {json.dumps(v)}, "
                    "wins", f"keep one '{nk}'")
            del out[nk]
        out[nk] = v
    ctx.keys = out


def _newest(has, otherwise: str) -> str:
    """"vLLM <the newest release whose table ``has``> and older", else ``otherwise``."""
    old = [v for v, t in tables().items() if has(t)]
    return f"vLLM {old[-1]} and older" if old else otherwise


def _unknown(ctx, code, key, message, fix):
    message = message if message.endswith("?") else message + "."
    extra = ctx.table.raw.get("extra")
    if extra == "ignore":
        ctx.add(code, "warning", key, f"{message} {ctx.vname} ignores unknown keys silently, "
                "so this setting has no effect.", fix)
    elif extra == "typeerror":
        ctx.add(code, "error", key, f"{message} {ctx.vname}'s SpeculativeConfig raises "
                "TypeError for an unknown keyword.", fix)
    else:
        lax = _newest(lambda t: t.raw.get("extra") == "ignore", "releases before about 0.14")
        ctx.add(code, "error", key, f"{message} {ctx.vname} rejects unknown keys (pydantic "
                f"extra='forbid'); {lax} ignored them silently, so the setting never took "
                "effect.", fix)


def keys(ctx: Context) -> None:
    """Every key the release's ``SpeculativeConfig`` does not take, with what was meant."""
    fields, internal = ctx.table.fields, ctx.table.internal
    known = [k for k in fields if k not in internal and k != "tensor_parallel_size"]
    for key in ctx.keys:
        if not isinstance(key, str):
            ctx.add("key-not-string", "error", str(key), f"keys must be strings, got {key!r}")
        elif key in internal:
            who = ("create_speculative_config sets it from the serve flags"
                   if key.startswith("target_") else "__post_init__ sets it")
            ctx.add("internal-key-overwritten", "warning", key, f"'{key}' is populated by "
                    f"vLLM: {ctx.vname} accepts the value and overwrites it ({who}), so it "
                    "has no effect", f"remove '{key}'")
        elif key in fields:
            continue
        elif key in SAMPLING_KEYS:
            _unknown(ctx, "sampling-key", key, f"'{key}' is a request sampling parameter, not "
                     "a speculative_config key (vLLM docs, Notes)", f"remove it here; send "
                     f"{key} with each request (OpenAI API field, or SamplingParams({key}=...));"
                     f" for benchmarks use `vllm bench serve --{key.replace('_', '-')}`")
        elif key in LEGACY_KEYS:
            new, why = LEGACY_KEYS[key]
            msg = (f"'{key}' was removed from vLLM ({why})" if key == "disable_by_batch_size"
                   else f"'{key}' is not a speculative_config key ({why})")
            msg += f"; did you mean '{new}'?" if new else ""
            _unknown(ctx, "legacy-key", key, msg,
                     f"rename '{key}' to '{new}'" if new else f"remove '{key}'")
        else:
            _misspelled(ctx, key, known)


def _misspelled(ctx, key, known):
    has = [v for v, t in tables().items() if key in t.fields and key not in t.internal]
    if has:
        span = has[0] + (f" to {has[-1]}" if len(has) > 1 else "")
        _unknown(ctx, "key-of-other-release", key, f"'{key}' is a key of other releases (vLLM "
                 f"{span}), not of {ctx.vname}", f"remove '{key}', or use a release that has it")
        return
    norm = key.replace("-", "_").strip()
    if norm in known or norm.lower() in known:
        new = norm if norm in known else norm.lower()
        how = "hyphenated" if "-" in key else "spelled differently"
        _unknown(ctx, "key-misspelled", key, f"'{key}' is {how}; the key is '{new}' (JSON keys "
                 "are not normalised, only flag names are)", f"rename '{key}' to '{new}'")
        return
    close = difflib.get_close_matches(norm, known + list(LEGACY_KEYS), n=1, cutoff=0.6)
    if close and close[0] in LEGACY_KEYS:
        close = [LEGACY_KEYS[close[0]][0]] if LEGACY_KEYS[close[0]][0] else []
    if close:
        _unknown(ctx, "unknown-key-did-you-mean", key, f"unknown key '{key}'; did you mean "
                 f"'{close[0]}'?", f"rename '{key}' to '{close[0]}'")
    else:
        _unknown(ctx, "unknown-key", key, f"unknown key '{key}'", f"remove '{key}'; "
                 f"{ctx.vname}'s keys: {', '.join(known)}")
