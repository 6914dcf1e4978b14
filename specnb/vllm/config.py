"""Build, render and check vLLM's ``speculative_config`` the way vLLM itself would.

* :func:`speculative_config` builds the dict for any method and refuses one vLLM would reject.
* :func:`serve_command`, :func:`yaml_config` and :func:`python_snippet` render it for
  ``vllm serve <model> --speculative-config '<json>'`` (quoted for a POSIX shell with
  :func:`shlex.quote`), a ``--config`` YAML file (nested mapping, as vLLM's docs ask) and
  ``LLM(..., speculative_config={...})``.
* :func:`check_speculative_config` reads the JSON text (or a dict) and returns
  :class:`Finding` objects, each with severity ("error" = vLLM refuses to start, "warning" =
  it starts but probably not as intended), the key, a message and a fix. Malformed JSON gets
  line, column and the likely cause (single quotes, smart quotes, trailing comma, Python
  literals, template placeholders, over-escaped or shell-kept quotes, missing braces...).

Sources: ``vllm/config/speculative.py`` @ ``002e77c1`` (rules and messages),
``vllm/engine/arg_utils.py`` @ ``99d7eb5d`` (the flag is ``optional_type(json.loads)``: "" and
"None" mean no config), ``vllm/utils/argparse_utils.py`` @ ``00da11e3`` (``--config`` YAML:
nested mappings are passed on as JSON), PR #31541 (unknown keys rejected since about v0.14).
See :mod:`specnb.vllm._schema` for the transcribed schema.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
import shlex
from dataclasses import dataclass

from . import _schema as S

__all__ = [
    "Finding", "ConfigCheck", "ConfigSyntaxError", "speculative_config",
    "parse_speculative_config", "check_speculative_config", "serve_command", "yaml_config",
    "python_snippet",
]

SEVERITIES = ("error", "warning")


# --------------------------------------------------------------------------- findings
@dataclass(frozen=True)
class Finding:
    """One problem in a speculative config.

    Attributes
    ----------
    severity : "error" (vLLM refuses the config) or "warning" (it starts, but not as meant).
    key : the config key concerned, or None for the config as a whole (e.g. broken JSON).
    message : what is wrong, quoting vLLM's own message where it has one.
    fix : what to write instead.
    line, column : 1-based position in the checked text, when known.
    """

    severity: str
    key: str | None
    message: str
    fix: str = ""
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line}, column {self.column})" if self.line else ""
        key = self.key if self.key is not None else "-"
        text = f"{self.severity}: {key}{where}: {self.message}"
        return text + (f"\n  fix: {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class ConfigCheck:
    """The result of :func:`check_speculative_config`: findings plus the parsed mapping.

    Iterating yields the :class:`Finding` objects. ``accepted`` is True when vLLM would
    accept the config (no errors; warnings allowed).
    """

    findings: tuple[Finding, ...]
    config: dict | None
    vllm_version: str | None = None

    def __iter__(self):
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __getitem__(self, i):
        return self.findings[i]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def accepted(self) -> bool:
        """True when vLLM would accept the config (warnings allowed)."""
        return not self.errors

    def keys(self) -> set:
        """The keys that have at least one finding (None for whole-config findings)."""
        return {f.key for f in self.findings}

    def to_frame(self):
        """The findings as a pandas DataFrame (columns severity, key, line, column, message, fix)."""
        import pandas as pd

        cols = ["severity", "key", "line", "column", "message", "fix"]
        return pd.DataFrame([{c: getattr(f, c) for c in cols} for f in self.findings],
                            columns=cols)

    def __str__(self) -> str:
        who = f"vLLM {self.vllm_version}" if self.vllm_version else "current vLLM"
        n_err, n_warn = len(self.errors), len(self.warnings)
        verdict = (f"{who} would accept this config" if self.accepted
                   else f"{who} would reject this config")
        lines = [str(f) for f in self.findings]
        lines.append(f"{verdict} ({n_err} error{'s' * (n_err != 1)}, "
                     f"{n_warn} warning{'s' * (n_warn != 1)}).")
        return "\n".join(lines)


class ConfigSyntaxError(ValueError):
    """The text is not JSON vLLM can read; carries the position and the likely cause.

    Attributes: ``line``, ``column`` (1-based), ``cause`` (the likely reason, in words),
    ``fix`` (corrected text when one could be derived, else advice), ``key`` (the key whose
    value is broken, when known), ``parser_message`` (what :func:`json.loads` said).
    """

    def __init__(self, cause: str, *, line: int, column: int, fix: str = "",
                 key: str | None = None, parser_message: str = ""):
        self.cause, self.line, self.column = cause, line, column
        self.fix, self.key, self.parser_message = fix, key, parser_message
        super().__init__(f"not valid JSON (line {line}, column {column}): {cause}"
                         + (f" [json: {parser_message}]" if parser_message else ""))


# --------------------------------------------------------------------------- JSON diagnosis
_SMART = {
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\uff02": '"',
    "\u00ab": '"', "\u00bb": '"',
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\uff07": "'",
    "\uff5b": "{", "\uff5d": "}", "\uff1a": ":", "\uff0c": ",", "\u3001": ",", "\uff3b": "[",
    "\uff3d": "]", "\u00a0": " ", "\u3000": " ",
}
_STRING_RE = re.compile(r'"(?:\\.|[^"\\])*"')
_PLACEHOLDER_VALUE_RE = re.compile(
    r"\{\{[^{}]*\}\}"                     # {{ var }}  (Jinja, Helm, Go templates)
    r"|\$\{[A-Za-z_]\w*\}|\$[A-Za-z_]\w*"  # ${VAR} / $VAR (shell variable not expanded)
    r"|\{\s*[A-Za-z_][\w.]*\s*\}"          # {name}    (str.format / f-string not applied)
    r"|<[A-Za-z_][^<>\"]*>"                # <name>    (documentation placeholder)
    r"|%\(\w+\)[sd]|%[sd]"                 # %(name)s / %s
)
_PLACEHOLDER_STRING_RE = re.compile(r"^\s*(?:" + _PLACEHOLDER_VALUE_RE.pattern + r")\s*$")


def _linecol(text: str, index: int) -> tuple[int, int]:
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    col = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, col


def _mask_strings(text: str) -> str:
    """Replace the inside of double-quoted strings by spaces (same length)."""
    return _STRING_RE.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)


def _loads(text: str):
    return json.loads(text, object_pairs_hook=_pairs)


def _pairs(pairs):
    out = {}
    dups = []
    for k, v in pairs:
        if k in out:
            dups.append(k)
        out[k] = v
    if dups:
        out = _DupDict(out)
        out.duplicates = dups
    return out


class _DupDict(dict):
    duplicates: list


def _parses(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def _key_before(text: str, index: int) -> str | None:
    m = re.search(r"[\"']?([A-Za-z_][\w\-]*)[\"']?\s*:\s*$", text[:index])
    return m.group(1) if m else None


def _python_literal(text: str):
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    return value if isinstance(value, dict) else None


# Each rule: detect(text, masked) -> index or None; transform(text) -> text or None; cause.
_UNDECODABLE = re.compile("[\udc80-\udcff\x00]")


def _r_undecodable(text, masked):
    m = _UNDECODABLE.search(text)
    return m.start() if m else None


def _r_bom(text, masked):
    i = text.find("\ufeff")
    return i if i >= 0 else None


def _t_bom(text):
    return text.replace("\ufeff", "")


def _r_smart(text, masked):
    idx = [i for i, ch in enumerate(text) if ch in _SMART]
    return idx[0] if idx else None


def _t_smart(text):
    return "".join(_SMART.get(ch, ch) for ch in text)


def _r_outer_quotes(text, masked):
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] == "'" and s[1:-1].strip().startswith("{"):
        return text.index("'")
    if len(s) >= 4 and s[0] == '"' and s[-1] == '"' and s[1:-1].strip().startswith("{") \
            and not _parses(s):
        return text.index('"')
    return None


def _t_outer_quotes(text):
    return text.strip()[1:-1]


def _r_backslash(text, masked):
    m = re.search(r"\\+[\"']", text)
    if m and re.match(r"\s*\{\s*\\+[\"']", text):
        return m.start()
    return None


def _t_backslash(text):
    return re.sub(r"\\+([\"'])", r"\1", text)


def _r_template(text, masked):
    # only placeholders that stand where a value or the whole config should be (not in strings)
    for m in _PLACEHOLDER_VALUE_RE.finditer(masked):
        before = masked[:m.start()].rstrip()
        if before.endswith(":") or before == "" or before.endswith(","):
            if before == "" and masked.strip().startswith("{") and m.group().startswith("{"):
                continue  # the config's own braces
            return m.start()
    return None


def _r_single_quotes(text, masked):
    i = masked.find("'")
    return i if i >= 0 else None


def _t_single_quotes(text):
    value = _python_literal(text)
    if value is not None:
        return json.dumps(value)
    return text.replace("'", '"')


def _r_python_literals(text, masked):
    m = re.search(r"\b(True|False|None)\b", masked)
    return m.start() if m else None


def _t_python_literals(text):
    masked = _mask_strings(text)
    out = list(text)
    for m in re.finditer(r"\b(True|False|None)\b", masked):
        repl = {"True": "true", "False": "false", "None": "null"}[m.group()]
        out[m.start():m.end()] = list(repl) + [""] * (m.end() - m.start() - len(repl))
    return "".join(out)


def _r_trailing_comma(text, masked):
    m = re.search(r",\s*[}\]]", masked)
    return m.start() if m else None


def _t_trailing_comma(text):
    masked = _mask_strings(text)
    cut = {m.start() for m in re.finditer(r",(?=\s*[}\]])", masked)}
    return "".join(ch for i, ch in enumerate(text) if i not in cut)


def _r_comments(text, masked):
    m = re.search(r"(?m)(//|/\*|^\s*#|\s#)", masked)
    return m.start() if m else None


def _t_comments(text):
    masked = _mask_strings(text)
    spans = [(m.start(), m.end()) for m in
             re.finditer(r"//[^\n]*|/\*.*?\*/|(?:^|(?<=\s))#[^\n]*", masked, re.S | re.M)]
    out, last = [], 0
    for a, b in spans:
        out.append(text[last:a])
        last = b
    out.append(text[last:])
    return "".join(out)


def _r_key_equals(text, masked):
    m = re.match(r"\s*\{?\s*[A-Za-z_]\w*\s*=", masked)
    return m.end() - 1 if m else None


def _t_key_equals(text):
    body = text.strip().strip("{}")
    out = {}
    for part in re.split(r"[,\s]+(?=[A-Za-z_]\w*\s*=)", body.strip()):
        if "=" not in part:
            return None
        k, v = part.split("=", 1)
        v = v.strip().rstrip(",")
        try:
            out[k.strip()] = json.loads(v)
        except ValueError:
            out[k.strip()] = v.strip("'\"")
    return json.dumps(out)


_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w\-.]*)(\s*:)")
_BARE_VALUE = re.compile(r"(:\s*)([A-Za-z_][\w\-./]*)(\s*[,}\]])")


def _r_unquoted(text, masked):
    m = _BARE_KEY.search(masked)
    return m.start(2) if m else None


def _t_unquoted(text):
    fixed = _BARE_KEY.sub(lambda m: f'{m.group(1)}"{m.group(2)}"{m.group(3)}', text)

    def value(m):
        word = m.group(2)
        if word in ("true", "false", "null"):
            return m.group(0)
        return f'{m.group(1)}"{word}"{m.group(3)}'

    # apply twice: adjacent matches share a delimiter
    return _BARE_VALUE.sub(value, _BARE_VALUE.sub(value, fixed))


def _r_braces(text, masked):
    s = masked.strip()
    if not s:
        return None
    if not s.startswith("{") and re.match(r'\s*"[^"]*"\s*:', masked):
        return len(masked) - len(masked.lstrip())
    if masked.count("{") != masked.count("}"):
        return len(text.rstrip()) if masked.count("{") > masked.count("}") else \
            masked.rfind("}")
    return None


def _t_braces(text):
    masked = _mask_strings(text)
    s = text.strip()
    if not s.startswith("{"):
        s = "{" + s
    diff = _mask_strings(s).count("{") - _mask_strings(s).count("}")
    if diff > 0:
        s = s + "}" * diff
    elif masked.count("}") > masked.count("{"):
        return None
    return s


_RULES = [
    ("bytes that are not UTF-8 text, or NUL characters (the value was saved as UTF-16 or "
     "Latin-1, or read from a binary file)", _r_undecodable, None),
    ("a byte-order mark (U+FEFF) before the JSON: the file was saved as 'UTF-8 with BOM'",
     _r_bom, _t_bom),
    ("smart or full-width quotes/punctuation (a word processor, chat app or input method "
     "replaced the ASCII characters)", _r_smart, _t_smart),
    ("the quotes around the value reached vLLM literally (a YAML, docker-compose or Kubernetes "
     "args list, or a quoted shell variable, keeps them)", _r_outer_quotes, _t_outer_quotes),
    ("backslash-escaped quotes (\\\"): inside single quotes the shell keeps the backslashes, "
     "so vLLM sees them", _r_backslash, _t_backslash),
    ("an unsubstituted template placeholder", _r_template, None),
    ("single quotes: this is a Python dict literal, not JSON (JSON strings and keys need "
     "double quotes)", _r_single_quotes, _t_single_quotes),
    ("Python True/False/None: JSON spells them true/false/null", _r_python_literals,
     _t_python_literals),
    ("a trailing comma before } or ]: JSON allows none", _r_trailing_comma, _t_trailing_comma),
    ("a comment: JSON has no comments", _r_comments, _t_comments),
    ("key=value pairs: the value must be a JSON object {\"key\": value} (or use the dotted "
     "flags --speculative-config.method ngram)", _r_key_equals, _t_key_equals),
    ("keys and strings without double quotes: the shell or a launch script stripped them "
     "(e.g. the JSON was wrapped in double quotes, so its own quotes ended the shell string, "
     "or it went through eval/echo/an environment variable)", _r_unquoted, _t_unquoted),
    ("missing braces: the value must be one JSON object {...}", _r_braces, _t_braces),
]


def _use(fixed: str) -> str:
    """The fix "use <JSON>" for repaired JSON, completed so that vLLM accepts it where it can.

    ``{method: ngram}`` repairs to ``{"method": "ngram"}``, which vLLM still rejects (no
    ``num_speculative_tokens``); the suggestion then adds the docs' starting value
    (:data:`specnb.vllm.advise.DEFAULT_GAMMA`). The fix stays pure JSON after "use ", so it can
    be pasted; anything else vLLM would reject shows on the next check.
    """
    shown = fixed.strip()
    try:
        obj = _loads(fixed)
        if check_speculative_config(obj).accepted:
            return f"use {shown}"
    except (ValueError, TypeError, RecursionError):
        return f"use {shown}"
    if isinstance(obj, dict) and "num_speculative_tokens" not in obj and \
            isinstance(obj.get("method"), str):
        from .advise import DEFAULT_GAMMA

        completed = {**obj, "num_speculative_tokens": DEFAULT_GAMMA.get(obj["method"], 3)}
        if check_speculative_config(completed).accepted:
            return f"use {json.dumps(completed)}"
    return f"use {shown}"


def _diagnose(text: str, err: json.JSONDecodeError, depth: int = 0):
    """Return (cause, fix, key, index) for text that json.loads rejected."""
    if text.strip() in ("", "None"):
        what = "only whitespace" if not text.strip() else "None with spaces around it"
        return (f"{what}: vLLM reads exactly '' or 'None' as no speculative config; anything "
                "else must be JSON", "pass '' (or drop --speculative-config) to leave "
                "speculative decoding off, or a JSON object to turn it on", None,
                len(text) - len(text.lstrip()) if text.strip() else 0)
    masked = _mask_strings(text)
    for cause, detect, transform in _RULES:
        idx = detect(text, masked)
        if idx is None:
            continue
        key = None
        if transform is None and detect is _r_undecodable:
            ch = text[idx]
            what = "a NUL character" if ch == "\x00" else f"the byte 0x{ord(ch) - 0xdc00:02x}"
            return (f"{cause}: {what}", "save the value as UTF-8 text and pass it again", None,
                    idx)
        if transform is None:  # template placeholder: name it, suggest a value
            ph = _PLACEHOLDER_VALUE_RE.match(masked, idx).group()
            ph = text[idx:idx + len(ph)]
            key = _key_before(text, idx)
            cause = f"{cause} {ph}" + (f" as the value of {key!r}" if key else "")
            what = ("an integer (e.g. 4)" if key == "num_speculative_tokens"
                    else "the real value")
            return cause, f"substitute {what} for {ph} before starting vLLM", key, idx
        fixed = transform(text)
        if fixed is None:
            return cause, "", key, idx
        try:
            _loads(fixed)
            return cause, _use(fixed), key, idx
        except json.JSONDecodeError as err2:
            if depth < 3 and fixed != text:
                more, fix2, key2, _ = _diagnose(fixed, err2, depth + 1)
                return f"{cause}; then {more}", fix2, key2, idx
            return cause, "", key, idx
        except (RecursionError, ValueError):  # nested too deeply, or an over-long integer
            return cause, "", key, idx
    if err.msg.startswith("Extra data"):
        return ("text after the end of the object (two objects, or a stray character)", "",
                None, err.pos)
    return f"JSON parser: {err.msg}", "", None, err.pos


def parse_speculative_config(text: str):
    """Parse ``--speculative-config`` text the way vLLM does.

    vLLM's flag type is ``optional_type(json.loads)`` (``vllm/engine/arg_utils.py`` @
    ``99d7eb5d``): the values ``""`` and ``"None"`` mean no config (returns None), anything
    else must be JSON.

    Parameters
    ----------
    text : str
        The value exactly as vLLM receives it (after the shell removed its own quoting).

    Returns
    -------
    The parsed JSON value (normally a dict), or None for exactly ``""`` or ``"None"`` (as in
    vLLM, surrounding whitespace makes them invalid JSON); JSON ``null`` also gives None.

    Raises
    ------
    TypeError
        ``text`` is not a string.
    ConfigSyntaxError
        the text is not JSON (also: nested deeper than Python's json module can read, or an
        integer longer than Python's 4300-digit limit); the error has ``line``, ``column``,
        ``cause`` and ``fix``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if text in ("", "None"):
        return None
    try:
        return _loads(text)
    except RecursionError:
        idx = _too_deep(text)
        line, col = _linecol(text, idx)
        raise ConfigSyntaxError("nested too deeply: Python's json module (which vLLM uses) "
                                "gives up with a RecursionError", line=line, column=col,
                                fix="a speculative_config is one flat object; remove the "
                                "nesting") from None
    except ValueError as err:
        if isinstance(err, json.JSONDecodeError):
            raise _syntax_error(text, err) from None
        m = re.search(r"\d{4301,}", _mask_strings(text))  # int digit limit (CVE-2020-10735)
        line, col = _linecol(text, m.start() if m else 0)
        raise ConfigSyntaxError(f"an integer with more digits than Python's json module reads "
                                f"({err})", line=line, column=col,
                                fix="write a realistic number (num_speculative_tokens is small, "
                                "e.g. 4)") from None


def _too_deep(text: str) -> int:
    """Index of the first bracket nested deeper than 500 levels (outside strings)."""
    depth = 0
    for i, ch in enumerate(_mask_strings(text)):
        if ch in "[{":
            depth += 1
            if depth > 500:
                return i
        elif ch in "]}":
            depth -= 1
    return 0


def _syntax_error(text: str, err: json.JSONDecodeError) -> ConfigSyntaxError:
    cause, fix, key, idx = _diagnose(text, err)
    line, col = _linecol(text, idx)
    return ConfigSyntaxError(cause, line=line, column=col, fix=fix, key=key,
                             parser_message=f"{err.msg} at line {err.lineno} column {err.colno}")


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
    def __init__(self, text: str | None, era: str, version: str | None):
        self.text, self.era, self.version = text, era, version
        self.out: list[Finding] = []

    def add(self, severity, key, message, fix=""):
        line = col = None
        if self.text is not None and key is not None:
            m = re.search(r"[\"']" + re.escape(key) + r"[\"']\s*:", self.text)
            if m:
                line, col = _linecol(self.text, m.start())
        self.out.append(Finding(severity, key, message, fix, line, col))

    # ---- unknown keys
    def unknown(self, key, message, fix, removed_noop=False):
        ver = self.version
        message = message if message.endswith("?") else message + "."
        if self.era == "lenient":
            if removed_noop:
                self.add("warning", key, f"{message} vLLM {ver} still accepts it, but it has "
                         "done nothing since v0.10.0.", fix)
            else:
                self.add("warning", key, f"{message} vLLM {ver} ignores unknown keys "
                         "silently, so this setting has no effect (from about v0.14, PR "
                         "#31541, it is an error).", fix)
            return
        who = "Current vLLM" if self.era == "current" else f"vLLM {ver}"
        self.add("error", key, f"{message} {who} rejects unknown keys (pydantic "
                 "extra='forbid' since PR #31541, about v0.14); JSON-era builds before that "
                 "(about v0.8 to v0.13) ignored them silently, so the setting never took "
                 "effect.", fix)

    def scan_keys(self, cfg):
        known = [k for k, f in S.FIELDS.items() if f.kind != "internal"
                 and k != "tensor_parallel_size"]
        for key in cfg:
            if not isinstance(key, str):
                self.add("error", str(key), f"keys must be strings, got {key!r}")
                continue
            if key in S.FIELDS and key not in S.INTERNAL_KEYS:
                continue
            if key in S.INTERNAL_KEYS:
                self.add("error", key, f"'{key}' is populated by vLLM and not intended to be "
                         "set by users (docs README @ 01ed47b4, Notes)", f"remove '{key}'")
            elif key in S.SAMPLING_KEYS:
                self.unknown(key, f"'{key}' is a request sampling parameter, not a "
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
                self.unknown(key, msg, fix,
                             removed_noop=(key == "disable_by_batch_size"))
            else:
                norm = key.replace("-", "_").strip()
                if norm in known or norm.lower() in known:
                    new = norm if norm in known else norm.lower()
                    how = "hyphenated" if "-" in key else "spelled differently"
                    self.unknown(key, f"'{key}' is {how}; the key is '{new}' (JSON keys are not "
                                 "normalised, only flag names are)", f"rename '{key}' to '{new}'")
                    continue
                close = difflib.get_close_matches(norm, known + list(S.LEGACY_KEYS), n=1,
                                                  cutoff=0.6)
                if close and close[0] in S.LEGACY_KEYS:
                    close = [S.LEGACY_KEYS[close[0]][0]] if S.LEGACY_KEYS[close[0]][0] else []
                if close:
                    self.unknown(key, f"unknown key '{key}'; did you mean '{close[0]}'?",
                                 f"rename '{key}' to '{close[0]}'")
                else:
                    which = ("valid keys" if self.era == "current" else
                             f"valid keys in current vLLM ({S.SOURCE}; vLLM {self.version} "
                             "may lack some of them)")
                    self.unknown(key, f"unknown key '{key}'",
                                 f"remove '{key}'; {which}: {', '.join(known)}")

    # ---- typed values
    def int_value(self, key, value, minimum=None, exclusive=False):
        """Check an int field; return the int (or None when unusable)."""
        if isinstance(value, bool):
            self.add("error", key, f"{key} must be an integer, got the boolean {json.dumps(value)}",
                     f"write a number, e.g. \"{key}\": 4")
            return None
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")) or value != int(value):
                self.add("error", key, f"{key} must be a whole number, got {value!r}",
                         f"write an integer, e.g. \"{key}\": 4")
                return None
            self.add("warning", key, f"{key} is the float {value!r}; vLLM's pydantic "
                     "validation accepts a whole-number float as int", f"write {int(value)}")
            value = int(value)
        elif isinstance(value, str):
            if _PLACEHOLDER_STRING_RE.match(value):
                self.add("error", key, f"{key} is the unsubstituted template placeholder "
                         f"{value!r}", f"substitute an integer, e.g. \"{key}\": 4")
                return None
            if re.fullmatch(r"\s*[+-]?\d+\s*", value):
                self.add("warning", key, f"{key} is the string {value!r}; pydantic (lax mode) "
                         "converts it to an integer", f"write {int(value)} without quotes")
                value = int(value)
            else:
                self.add("error", key, f"{key} must be an integer, got the string {value!r}",
                         f"write an integer, e.g. \"{key}\": 4")
                return None
        elif not isinstance(value, int):
            self.add("error", key, f"{key} must be an integer, got {json.dumps(value)}",
                     f"write an integer, e.g. \"{key}\": 4")
            return None
        if minimum is not None and (value <= minimum if exclusive else value < minimum):
            op = ">" if exclusive else ">="
            self.add("error", key, f"{key} must be {op} {minimum:g}, got {value}"
                     " (pydantic Field constraint)",
                     f"use a value {op} {minimum:g}")
            return None
        return value

    def typed(self, key, value):
        spec = S.FIELDS[key]
        if value is None:
            if not spec.nullable:
                self.add("error", key, f"{key} must not be null (default "
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
                self.add("warning", key, f"{key} is the string {value!r}; pydantic (lax mode) "
                         "reads it as a boolean",
                         f"write {json.dumps(lax[value.strip().lower()])} without quotes")
                return lax[value.strip().lower()]
            if isinstance(value, int) and value in (0, 1):
                self.add("warning", key, f"{key} is {value}; pydantic reads it as a boolean",
                         f"write {json.dumps(bool(value))}")
                return bool(value)
            self.add("error", key, f"{key} must be true or false, got {json.dumps(value)}",
                     f"write \"{key}\": true or false")
            return None
        if spec.kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.add("error", key, f"{key} must be a number, got {json.dumps(value)}",
                         "write a number")
                return None
            lo, hi = spec.minimum, spec.maximum
            # vLLM: `< lo` for a minimum only (NaN passes), `not lo <= v <= hi` for a range
            # (NaN fails)
            if (hi is not None and not lo <= value <= hi) or (hi is None and lo is not None
                                                              and value < lo):
                rng = f"in [{lo:g}, {hi:g}]" if hi is not None else f">= {lo:g}"
                self.add("error", key, f"{key}={value} must be {rng} (vLLM: "
                         f"\"{key}={value} must be {rng}\")", f"use a value {rng}")
                return None
            return float(value)
        if spec.kind in ("str", "literal"):
            if not isinstance(value, str):
                self.add("error", key, f"{key} must be a string, got {json.dumps(value)}",
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
                self.add("error", key, msg, fix)
                return None
            return value
        if spec.kind == "list":
            if not isinstance(value, list):
                self.add("error", key, f"{key} must be a list, got {json.dumps(value)}",
                         "write a JSON list [...]")
                return None
            return value
        if spec.kind == "object":
            if not isinstance(value, dict):
                self.add("error", key, f"{key} must be an object, got {json.dumps(value)}")
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
                    self.add("warning", "model", "\"model\": \"[ngram]\" is the legacy V0 "
                             "spelling; vLLM still maps it to method 'ngram'",
                             "write \"method\": \"ngram\" and drop \"model\"")
                return "ngram"
            if model is None:
                return "draft_model"
            guess = _guess_method(model) if isinstance(model, str) else "draft_model"
            self.add("warning", "method", f"\"method\" is not set: vLLM infers it from the "
                     f"model ('{guess}' for {model!r}; medusa, mlp_speculator and MTP "
                     "checkpoints are recognised from their config, anything else is "
                     "'draft_model')", f"set \"method\": \"{guess}\" explicitly")
            return guess
        if not isinstance(method, str):
            self.add("error", "method", f"method must be a string, got {json.dumps(method)}",
                     "write e.g. \"method\": \"ngram\"")
            return None
        if method in S.METHODS:
            if method in S.MTP_METHODS and method != "mtp":
                self.add("warning", "method", f"method `{method}` is deprecated and replaced "
                         "with mtp (vLLM's own warning @ 002e77c1; older builds knew only the "
                         "model-specific names)", "write \"method\": \"mtp\"")
                return "mtp"
            return method
        if method == "[ngram]":
            self.add("warning", "method", "'[ngram]' is the legacy spelling; vLLM maps it to "
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
        self.add("error", "method", msg, fix)
        return None

    def run(self, cfg: dict):
        if self.era == "v0":
            self.add("error", None, f"vLLM {self.version} predates the JSON "
                     "--speculative-config (PR #14434, about v0.8): V0 used separate flags "
                     "--speculative-model, --num-speculative-tokens, "
                     "--ngram-prompt-lookup-max", "upgrade vLLM, or use the V0 flags")
            return
        if getattr(cfg, "duplicates", None):
            for k in cfg.duplicates:
                self.add("warning", k, f"'{k}' appears more than once; JSON keeps the last "
                         "value silently", f"keep one '{k}'")
        self.scan_keys(cfg)
        vals = {k: self.typed(k, v) for k, v in cfg.items()
                if k in S.FIELDS and k not in ("method", "tensor_parallel_size")
                and k not in S.INTERNAL_KEYS}
        model = vals.get("model")
        if isinstance(model, str) and _PLACEHOLDER_STRING_RE.match(model):
            self.add("warning", "model", f"model {model!r} looks like an unfilled "
                     "placeholder; vLLM would try to load a checkpoint by that name",
                     "put the draft checkpoint's Hugging Face id or local path")
        method = self.resolve_method(cfg, model if "model" in cfg else None)
        nst = vals.get("num_speculative_tokens")
        nst_given = cfg.get("num_speculative_tokens") is not None

        # tensor_parallel_size: vLLM's own message
        if "tensor_parallel_size" in cfg:
            self.add("error", "tensor_parallel_size", "'tensor_parallel_size' is not a valid "
                     "argument in the speculative_config. Please pass "
                     "'draft_tensor_parallel_size' instead. (vLLM @ 002e77c1)",
                     "rename it to 'draft_tensor_parallel_size' (1 or the target's "
                     "--tensor-parallel-size)")
        dtp = vals.get("draft_tensor_parallel_size")
        if dtp is not None and dtp > 1:
            self.add("warning", "draft_tensor_parallel_size", f"draft_tensor_parallel_size="
                     f"{dtp} must be 1 or equal to the target's --tensor-parallel-size, else "
                     "vLLM raises 'cannot be other value than 1 or target model "
                     "tensor_parallel_size'", "use 1, or the target's tensor parallel size")

        if method is None:
            return
        has_model = cfg.get("model") is not None
        if isinstance(model, str) and not model.strip() and method not in (
                "ngram", "ngram_gpu", "suffix", "extract_hidden_states"):
            self.add("error", "model", f"model is the blank string {model!r}: vLLM would try to "
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
            self.add("error", "model", msg + f" (vLLM @ 002e77c1; '{method}' loads a separate "
                     "checkpoint)", "add \"model\": \"<draft checkpoint id or path>\"")
        elif method in ("ngram", "ngram_gpu", "suffix") and has_model and \
                cfg.get("model") not in (method, "[ngram]"):
            self.add("warning", "model", f"'model' is ignored for method '{method}' (it needs "
                     "no draft model)", "remove \"model\"")

        # num_speculative_tokens
        if not nst_given:
            if method == "suffix":
                depth = vals.get("suffix_decoding_max_tree_depth") or S.SUFFIX_DEFAULT_TOKENS
                self.add("warning", "num_speculative_tokens", "not set: for suffix decoding "
                         f"vLLM defaults it to suffix_decoding_max_tree_depth ({depth}) and "
                         "logs a warning; it is a maximum, suffix decoding adapts below it",
                         "set it explicitly (the docs use 8 to 32)")
            elif method in S.N_PREDICT_METHODS and (has_model or method not in ("mtp", "dspark")):
                self.add("warning", "num_speculative_tokens", "not set: vLLM takes it from the "
                         "draft checkpoint's n_predict; if the checkpoint has none it raises "
                         "'A speculative model was provided, but `num_speculative_tokens` was "
                         "not provided'", "set it explicitly (1 for most MTP heads)")
            elif method in ("draft_model", "eagle", "eagle3") and has_model:
                self.add("error", "num_speculative_tokens", "missing: a draft model or EAGLE "
                         "head carries no n_predict, so vLLM raises 'A speculative model was "
                         "provided, but `num_speculative_tokens` was not provided'",
                         "add \"num_speculative_tokens\": 3 to 5 (article: start at 3-5)")
            elif method not in S.NEEDS_MODEL or has_model:
                self.add("error", "num_speculative_tokens", "missing: vLLM raises "
                         "'num_speculative_tokens must be provided with speculative model "
                         "unless the draft model config contains an n_predict parameter.'",
                         "add \"num_speculative_tokens\": 4 (a positive integer)")
        if method == "mtp" and nst is not None and nst > 1:
            self.add("warning", "num_speculative_tokens", f"num_speculative_tokens={nst} with "
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
                self.add("warning", "prompt_lookup_min", "prompt_lookup_min and "
                         "prompt_lookup_max are not set: vLLM sets both to 5 (\"arbitrarily "
                         "chosen\"), not min 1 as its docstring says, so only 5-gram matches "
                         "are drafted", "set them, e.g. \"prompt_lookup_min\": 2, "
                         "\"prompt_lookup_max\": 5 (vLLM's docs example)")
            elif lo_given != hi_given:
                given, other = (("prompt_lookup_max", "prompt_lookup_min") if hi_given
                                else ("prompt_lookup_min", "prompt_lookup_max"))
                val = hi if hi_given else lo
                self.add("warning", other, f"{other} is not set: vLLM sets it equal to {given}"
                         f"={val}, so the window is exactly {val} tokens",
                         f"set {other} explicitly (e.g. prompt_lookup_min 2, max 5)")
            if lo is not None and hi is not None and lo > hi:
                self.add("error", "prompt_lookup_min", f"prompt_lookup_min={lo} must be <= "
                         f"prompt_lookup_max={hi} (vLLM @ 002e77c1)",
                         f"swap them: \"prompt_lookup_min\": {hi}, \"prompt_lookup_max\": {lo}")
        elif lo_given or hi_given:
            key = "prompt_lookup_min" if lo_given else "prompt_lookup_max"
            self.add("warning", key, f"prompt_lookup_min/max only apply to ngram; vLLM sets "
                     f"them to 0 for method '{method}'", "remove them")

        # suffix
        suffix_keys = [k for k in cfg if isinstance(k, str) and k.startswith("suffix_decoding_")]
        if method == "suffix":
            self.add("warning", None, "suffix decoding needs Arctic Inference on the server: "
                     "\"Arctic Inference is required for suffix decoding. Install via `pip "
                     "install arctic-inference==0.1.1`.\"", "pip install arctic-inference "
                     "on the vLLM host before starting")
        elif suffix_keys:
            self.add("warning", suffix_keys[0], f"{', '.join(suffix_keys)} only apply to "
                     f"method 'suffix'; ignored for '{method}'", "remove them")

        # method-specific switches (messages from vLLM @ 002e77c1)
        if cfg.get("index_share_for_mtp_iteration") is not None and method != "mtp":
            self.add("error", "index_share_for_mtp_iteration", "index_share_for_mtp_iteration "
                     "is only supported with method='mtp'", "remove it")
        if vals.get("enable_adaptive_verification") and method != "dspark":
            self.add("error", "enable_adaptive_verification", "Adaptive verification only "
                     "supported with DSpark", "remove it (method 'dspark' only)")
        if cfg.get("dspark_draft_topk") is not None and method != "dspark":
            self.add("error", "dspark_draft_topk", "dspark_draft_topk is only supported by "
                     "DSpark", "remove it")
        if vals.get("use_heterogeneous_vocab"):
            if method != "draft_model":
                self.add("error", "use_heterogeneous_vocab", "use_heterogeneous_vocab only "
                         "works with method='draft_model'", "remove it")
            if vals.get("draft_sample_method") == "probabilistic":
                self.add("error", "use_heterogeneous_vocab", "use_heterogeneous_vocab "
                         "currently only supports greedy draft sampling",
                         "set draft_sample_method='greedy' (the default) or omit it")
            if vals.get("use_local_argmax_reduction"):
                self.add("error", "use_heterogeneous_vocab", "use_heterogeneous_vocab and "
                         "use_local_argmax_reduction cannot be used together",
                         "drop use_local_argmax_reduction")
        if vals.get("parallel_drafting") and method not in S.PARALLEL_DRAFTING_METHODS:
            self.add("warning", "parallel_drafting", "parallel_drafting is \"only compatible "
                     f"with EAGLE and draft model methods\", not '{method}'", "remove it")
        if cfg.get("draft_load_config") is not None:
            self.add("warning", "draft_load_config", "draft_load_config defaults to the "
                     "target's load config and is not intended to be set by users",
                     "remove it unless you know the draft needs a different loader")
        self.synthetic(cfg, vals, nst)
        self.dynamic(vals.get("num_speculative_tokens_per_batch_size"))

    def synthetic(self, cfg, vals, nst):
        rates, length = vals.get("synthetic_acceptance_rates"), vals.get(
            "synthetic_acceptance_length")
        given = [k for k in ("synthetic_acceptance_rates", "synthetic_acceptance_length")
                 if cfg.get(k) is not None]
        if vals.get("rejection_sample_method") != "synthetic":
            if given:
                self.add("error", given[0], "synthetic_acceptance_rates / "
                         "synthetic_acceptance_length are only valid with "
                         "rejection_sample_method='synthetic'.", "remove them")
            return
        self.add("warning", "rejection_sample_method", "'synthetic' accepts drafts with a "
                 "calibrated probability: a benchmarking mode whose outputs are not the target "
                 "model's (not lossless)", "use 'standard' in production")
        if len(given) != 1:
            self.add("error", "rejection_sample_method", "rejection_sample_method='synthetic' "
                     "requires exactly one of synthetic_acceptance_rates or "
                     "synthetic_acceptance_length.", "give exactly one of them")
            return
        if nst is None:
            return
        if rates is not None:
            bad = [r for r in rates if isinstance(r, bool) or not isinstance(r, (int, float))]
            if len(rates) != nst:
                self.add("error", "synthetic_acceptance_rates", f"synthetic_acceptance_rates "
                         f"must have length {nst}, got {rates}.", f"give {nst} rates")
            elif bad or not all(0 <= r <= 1 for r in rates):
                self.add("error", "synthetic_acceptance_rates", "synthetic_acceptance_rates "
                         f"entries must be in [0, 1], got {rates}.", "use fractions in [0, 1]")
            elif any(rates[i] > rates[i - 1] for i in range(1, len(rates))):
                self.add("error", "synthetic_acceptance_rates", "synthetic_acceptance_rates "
                         f"must be non-increasing, got {rates}.", "sort them descending")
        elif length is not None and not 1.0 <= length <= nst + 1:
            self.add("error", "synthetic_acceptance_length", f"synthetic_acceptance_length "
                     f"must be in [1, {nst + 1}], got {length}.", f"use a value in [1, {nst + 1}]")

    def dynamic(self, schedule):
        if schedule is None:
            return
        for row in schedule:
            ok = (isinstance(row, list) and len(row) == 3
                  and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in row)
                  and row[0] <= row[1])
            if not ok:
                self.add("error", "num_speculative_tokens_per_batch_size", "each entry must be "
                         f"[range_start, range_end, num_speculative_tokens] with integers "
                         f"and range_start <= range_end, got {json.dumps(row)}",
                         "e.g. [[1, 64, 3], [65, 128, 1], [129, 512, 0]] (vLLM docs)")
                return


def _is_dotted_path(model: str) -> bool:
    if model.startswith(("http://", "https://", "file://")) or "/" in model:
        return False
    parts = model.split(".")
    return len(parts) >= 2 and all(p.isidentifier() for p in parts)


def _guess_method(model: str) -> str:
    low = model.lower()
    if "eagle-" in low:
        return "eagle"
    if "eagle3" in low:
        return "eagle3"
    if "dflash" in low:
        return "dflash"
    if "dspark" in low:
        return "dspark"
    return "draft_model"


_JSON_SCALARS = (str, int, float, bool, type(None))


def _json_values(value, where: str) -> None:
    """Raise TypeError naming the first value that JSON (and so vLLM's CLI) cannot hold."""
    if isinstance(value, dict):
        for k, v in value.items():
            _json_values(v, f"{where}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _json_values(v, f"{where}[{i}]")
    elif not isinstance(value, _JSON_SCALARS):
        hint = (" (convert numpy numbers with int() / float())"
                if type(value).__module__ == "numpy" else "")
        raise TypeError(f"{where} must be a JSON value (str, int, float, bool, None, list, "
                        f"dict), got {type(value).__module__}.{type(value).__name__} "
                        f"{value!r}{hint}")


def _plain(value):
    """numpy scalars -> the equal Python number (exact); lists, tuples and dicts recursively."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        return value.item()
    return value


def check_speculative_config(text_or_dict, vllm_version=None) -> ConfigCheck:
    """Check a ``--speculative-config`` value against vLLM's own rules.

    Follows ``SpeculativeConfig`` @ 002e77c1 (``vllm/config/speculative.py``): field types and
    constraints (``num_speculative_tokens`` > 0, ``prompt_lookup_*`` >= 1, ...), method
    inference, the n-gram defaults (both 5; one given mirrors the other),
    ``prompt_lookup_min <= prompt_lookup_max``, the model a method needs,
    ``tensor_parallel_size`` (rejected: use ``draft_tensor_parallel_size``), sampling
    parameters (``temperature``, ``top_p``... belong to requests), old or misspelled keys with
    a did-you-mean, deprecated ``*_mtp`` methods (mapped to ``mtp``), unknown methods, and the
    method-specific switches. Unknown keys are errors for current vLLM (PR #31541, about
    v0.14) and warnings ("ignored silently") for ``vllm_version`` from about 0.8 to 0.13.

    Parameters
    ----------
    text_or_dict : str or dict
        The value as vLLM receives it (JSON text, after the shell's quoting is removed), or an
        already parsed mapping (as passed to ``LLM(speculative_config=...)``).
    vllm_version : str or None
        The server's vLLM version, e.g. ``"0.11.0"``; None means current vLLM.

    Returns
    -------
    ConfigCheck
        Iterable of :class:`Finding`; ``.accepted`` is True when vLLM would start (warnings
        allowed); ``.config`` is the parsed mapping (None if the text was not a JSON object).
        Broken JSON gives one error finding with ``line``, ``column`` and the likely cause.

    Raises
    ------
    TypeError
        ``text_or_dict`` is neither a string nor a dict, or the dict holds a value that is not
        a JSON value (e.g. a numpy number: convert it with ``int()`` / ``float()``);
        ``vllm_version`` is not a string (a float such as 0.10 would read as 0.1).
    ValueError
        ``vllm_version`` does not look like a version ("0.11.0").
    """
    vt = _parse_version(vllm_version)
    era = _era(vt)
    version = vllm_version.strip() if vllm_version is not None else None
    if isinstance(text_or_dict, dict):
        text, cfg = None, text_or_dict
        _json_values(cfg, "text_or_dict")
    elif isinstance(text_or_dict, str):
        text = text_or_dict
        try:
            cfg = parse_speculative_config(text)
        except ConfigSyntaxError as exc:
            parser = f" [{exc.parser_message}]" if exc.parser_message else ""
            finding = Finding("error", exc.key, f"not valid JSON: {exc.cause}; vLLM stops with "
                              "'argument --speculative-config: Value ... cannot be converted "
                              f"to <function loads ...>'{parser}",
                              exc.fix or "write one JSON object in double quotes, e.g. "
                              "{\"method\": \"ngram\", \"num_speculative_tokens\": 4}",
                              exc.line, exc.column)
            return ConfigCheck((finding,), None, version)
        if cfg is None:
            finding = Finding("warning", None, "empty value: vLLM reads '', 'None' (and JSON "
                              "null) as no speculative config, so speculative decoding stays "
                              "off",
                              "pass a JSON object, or drop --speculative-config")
            return ConfigCheck((finding,), None, version)
        if not isinstance(cfg, dict):
            inner = None
            if isinstance(cfg, str):
                try:
                    inner = json.loads(cfg)
                except ValueError:
                    inner = None
            if isinstance(inner, dict):
                msg = ("the value is a JSON string that contains JSON: the quotes around it "
                       "were kept (YAML, docker-compose or Kubernetes args, or double "
                       "encoding), so vLLM gets a str, not a mapping")
                fix = f"use {json.dumps(inner)}"
            else:
                msg = f"the value must be a JSON object {{...}}, got a {type(cfg).__name__}"
                fix = "write e.g. {\"method\": \"ngram\", \"num_speculative_tokens\": 4}"
            return ConfigCheck((Finding("error", None, msg, fix, 1, 1),), None, version)
    else:
        raise TypeError("text_or_dict must be JSON text (str) or a dict, got "
                        f"{type(text_or_dict).__name__}")
    checker = _Checker(text, era, version)
    checker.run(cfg)
    return ConfigCheck(tuple(checker.out), dict(cfg), version)


# --------------------------------------------------------------------------- build
def speculative_config(method: str, num_speculative_tokens: int | None = None,
                       **options) -> dict:
    """Build the ``speculative_config`` dict for a vLLM method, checked like vLLM would.

    Parameters
    ----------
    method : str
        One of ``ngram``, ``suffix``, ``draft_model``, ``eagle``, ``eagle3``, ``mtp``,
        ``medusa``, ``mlp_speculator`` (also ``ngram_gpu``, ``dflash``, ``dspark``,
        ``custom_class``, ``extract_hidden_states``).
    num_speculative_tokens : int or None
        Draft length gamma (> 0; a numpy integer is taken as the equal int). None leaves it
        out (suffix decoding and checkpoints with ``n_predict`` supply a default; the other
        methods then fail the check).
    **options
        Any other ``SpeculativeConfig`` key, e.g. ``model="Qwen/Qwen3-0.6B"``,
        ``prompt_lookup_min=2``, as JSON values (numpy numbers are taken as the equal Python
        number). A None value leaves the key out.

    Returns
    -------
    dict with ``method`` first, then ``model`` (if given), ``num_speculative_tokens`` and the
    options in the order given.

    Raises
    ------
    ValueError
        unknown ``method`` (with a did-you-mean) or a config vLLM would reject; the message
        lists every error finding with its fix. Warnings are not raised: call
        :func:`check_speculative_config` on the result to see them.
    TypeError
        ``num_speculative_tokens`` not an int (a string, a float, a bool); an option that is
        not a JSON value.
    """
    if not isinstance(method, str) or method not in S.BUILD_METHODS:
        close = difflib.get_close_matches(str(method).lower(), S.BUILD_METHODS, n=1)
        hint = S.METHOD_ALIASES.get(str(method).lower()) or (close[0] if close else None)
        raise ValueError(f"method must be one of {', '.join(S.BUILD_METHODS)}; got {method!r}"
                         + (f" (did you mean {hint!r}?)" if hint else ""))
    num_speculative_tokens = _plain(num_speculative_tokens)
    if num_speculative_tokens is not None and (isinstance(num_speculative_tokens, bool) or
                                               not isinstance(num_speculative_tokens, int)):
        raise TypeError(f"num_speculative_tokens must be an int (> 0) or None, got "
                        f"{type(num_speculative_tokens).__name__} {num_speculative_tokens!r}")
    options = {k: _plain(v) for k, v in options.items()}
    _json_values(options, "options")
    cfg: dict = {"method": method}
    if options.get("model") is not None:
        cfg["model"] = options.pop("model")
    if num_speculative_tokens is not None:
        cfg["num_speculative_tokens"] = num_speculative_tokens
    cfg.update({k: v for k, v in options.items() if v is not None})
    result = check_speculative_config(cfg)
    if result.errors:
        detail = "; ".join(f"{f.key}: {f.message} (fix: {f.fix})" for f in result.errors)
        raise ValueError(f"vLLM would reject this speculative_config {json.dumps(cfg)}: "
                         f"{detail}")
    return cfg


# --------------------------------------------------------------------------- render
def _as_mapping(config, name="config") -> dict:
    if not isinstance(config, dict):
        raise TypeError(f"{name} must be a dict, got {type(config).__name__}")
    for k in config:
        if not isinstance(k, str):
            raise ValueError(f"{name} keys must be strings, got {k!r}")
    config = _plain(config)  # numpy numbers -> the equal Python numbers, tuples -> lists
    try:
        json.dumps(config, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold JSON values only (str, int, float, bool, None, "
                         f"list, dict; no NaN/inf): {exc}") from None
    return config


def _check_model(model, name="model"):
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"{name} must be a non-empty string (the target model), got {model!r}")
    return model


def serve_command(config: dict, model: str = "<target-model>", *, extra_args=()) -> str:
    """The ``vllm serve`` command line for ``config``, quoted for a POSIX shell.

    ``vllm serve MODEL --speculative-config 'JSON' [EXTRA...]``: the JSON is compact
    ``json.dumps`` output (", " and ": " separators, key order kept) and every word goes
    through :func:`shlex.quote`, so quotes, ``$`` or spaces in values survive the shell.
    ``shlex.split`` of the result gives back the JSON exactly.

    Parameters
    ----------
    config : dict of JSON values
    model : str
        The target model (positional argument of ``vllm serve``).
    extra_args : iterable of str
        Further arguments, each quoted.

    Raises
    ------
    TypeError, ValueError
        ``config`` not a dict of JSON values (no NaN/inf); empty ``model``; ``extra_args`` a
        single string (give a list of words, e.g. ``shlex.split("--port 8001")``).
    """
    config = _as_mapping(config)
    _check_model(model)
    if isinstance(extra_args, (str, bytes)):
        raise TypeError(f"extra_args must be a list of words, not one string (it would be "
                        f"split into characters); got {extra_args!r}, use "
                        f"shlex.split({extra_args!r})")
    words = ["vllm", "serve", model, "--speculative-config",
             json.dumps(config, allow_nan=False), *map(str, extra_args)]
    return " ".join(shlex.quote(w) for w in words)


_YAML_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_YAML_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}


def _yaml_str(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable() and ch not in "\u0085\u2028\u2029\ufeff":
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def _yaml_key(k: str) -> str:
    if _YAML_PLAIN_KEY.fullmatch(k) and k.lower() not in _YAML_RESERVED:
        return k
    return _yaml_str(k)


def _yaml_scalar(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        r = repr(v)
        if "e" in r and "." not in r.split("e")[0]:
            mant, exp = r.split("e")
            r = f"{mant}.0e{exp}"  # YAML 1.1 resolvers need a dot in the mantissa
        return r
    if isinstance(v, str):
        return _yaml_str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_yaml_scalar(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_yaml_key(k)}: {_yaml_scalar(x)}" for k, x in v.items()) + "}"
    raise ValueError(f"cannot render {v!r} as YAML")


def _yaml_block(mapping: dict, indent: int) -> list[str]:
    pad = " " * indent
    lines = []
    for k, v in mapping.items():
        if isinstance(v, dict) and v:
            lines.append(f"{pad}{_yaml_key(k)}:")
            lines.extend(_yaml_block(v, indent + 2))
        else:
            lines.append(f"{pad}{_yaml_key(k)}: {_yaml_scalar(v)}")
    return lines


def yaml_config(config: dict, model: str | None = None) -> str:
    """A ``vllm serve --config FILE.yaml`` file holding ``config`` as a nested mapping.

    vLLM's docs ask for a nested mapping, not an escaped JSON string; vLLM's
    ``FlexibleArgumentParser.load_config_file`` (``vllm/utils/argparse_utils.py`` @
    ``00da11e3``) passes a nested mapping on as ``--speculative-config <json>``. Strings are
    double-quoted with YAML escapes, floats always carry a dot (YAML 1.1 resolvers read
    ``1e-05`` as a string), lists are flow sequences. ``yaml.safe_load`` of the result gives
    back ``{"model": model, "speculative-config": config}`` (``model`` only when given).

    Parameters
    ----------
    config : dict of JSON values
    model : str or None
        The target model, written as ``model:`` (vLLM accepts it in the config file).

    Raises
    ------
    TypeError, ValueError
        ``config`` not a dict of JSON values; empty ``model``.
    """
    config = _as_mapping(config)
    lines = ["# vllm serve --config this.yaml  (nested mapping, not an escaped JSON string)"]
    if model is not None:
        lines.append(f"model: {_yaml_str(_check_model(model))}")
    if config:
        lines.append("speculative-config:")
        lines.extend(_yaml_block(config, 2))
    else:
        lines.append("speculative-config: {}")
    return "\n".join(lines) + "\n"


def python_snippet(config: dict, model: str = "<target-model>") -> str:
    """Python code that starts vLLM offline with ``LLM(model=..., speculative_config={...})``.

    Values are written with :func:`repr` (``True``/``False``/``None``), one key per line;
    :func:`ast.literal_eval` of the dict part gives back ``config``.

    Raises
    ------
    TypeError, ValueError
        ``config`` not a dict of JSON values; empty ``model``.
    """
    config = _as_mapping(config)
    _check_model(model)
    body = "".join(f"        {k!r}: {v!r},\n" for k, v in config.items())
    return ("from vllm import LLM\n\n"
            "llm = LLM(\n"
            f"    model={model!r},\n"
            "    speculative_config={\n"
            f"{body}"
            "    },\n"
            ")\n")
