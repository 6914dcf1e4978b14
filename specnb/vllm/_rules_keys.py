"""The checker's key rules: unknown, internal, sampling, legacy, misspelled and hyphenated
keys.

A mixin of :class:`specnb.vllm._rules._Checker` (uses its ``add``, ``era``, ``version``,
``vname``, ``prof``, ``fields``, ``internal``). Split from :mod:`specnb.vllm._rules` (a pure
move). Sources: ``vllm/config/speculative.py`` @ ``002e77c1``, PR #31541 (unknown keys
rejected since about v0.14); the schema is :mod:`specnb.vllm._schema`.
"""

from __future__ import annotations

import difflib
import json

from . import _schema as S


class _KeyRules:
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
        known = [k for k, f in self.fields.items() if f.kind != "internal"
                 and k != "tensor_parallel_size"]
        for key in cfg:
            if not isinstance(key, str):
                self.add("key-not-string", "error", str(key), f"keys must be strings, got {key!r}")
                continue
            if key in self.fields and key not in self.internal:
                continue
            if key in self.internal and self.prof is not None:
                who = ("create_speculative_config sets it from the serve flags"
                       if key.startswith("target_") else "__post_init__ sets it")
                self.add("internal-key-overwritten",
                         "warning", key, f"'{key}' is populated by vLLM: {self.vname} accepts "
                         f"the value and overwrites it ({who}), so it has no effect",
                         f"remove '{key}'")
                continue
            if key in self.internal:
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

    # ---- hyphenated keys (version profiles)
    def rewrite_hyphens(self, cfg):
        """``create_speculative_config``'s ``{k.replace('-', '_'): v}`` (vLLM >= 0.26)."""
        out = {}
        for k, v in cfg.items():
            nk = k.replace("-", "_") if isinstance(k, str) else k
            if nk != k:
                self.add("hyphen-key-rewritten", "warning", k, f"'{k}' is hyphenated; "
                         f"{self.vname} rewrites '-' to '_' in every key, so it is '{nk}' "
                         "(releases before 0.26 reject it as an unknown key)",
                         f"rename '{k}' to '{nk}'")
            if nk in out:
                self.add("key-spelled-twice", "warning", k, f"'{nk}' is given twice (as "
                         f"'{nk}' and '{k}' with - or _); after the rewrite the later value, "
                         f"{json.dumps(v)}, wins", f"keep one '{nk}'")
                del out[nk]
            out[nk] = v
        return out
