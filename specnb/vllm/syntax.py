"""Diagnose ``--speculative-config`` text that is not JSON (vLLM's flag type is
``optional_type(json.loads)``, ``vllm/engine/arg_utils.py``): :func:`syntax_error` walks the
likely causes in :data:`_RULES` and gives a :class:`ConfigSyntaxError` with the position, the
cause and, where one is derived, the repaired JSON. Whether vLLM accepts the repair is
:mod:`specnb.vllm.check`'s business; this module knows JSON only.
"""

from __future__ import annotations

import ast
import json
import re

__all__ = ["ConfigSyntaxError", "loads", "syntax_error", "linecol", "mask_strings", "too_deep",
           "PLACEHOLDER_STRING_RE"]


class ConfigSyntaxError(ValueError):
    """The text is not JSON vLLM can read; carries the position and the likely cause.

    Attributes: ``line``, ``column`` (1-based), ``cause`` (the likely reason, in words),
    ``fix`` ("use <JSON>" when a repair could be derived, else advice), ``key`` (the key whose
    value is broken, when known), ``parser_message`` (what :func:`json.loads` said),
    ``repaired`` (the repaired JSON text, or None).
    """

    def __init__(self, cause: str, *, line: int, column: int, fix: str = "",
                 key: str | None = None, parser_message: str = "",
                 repaired: str | None = None):
        self.cause, self.line, self.column = cause, line, column
        self.fix, self.key, self.parser_message, self.repaired = fix, key, parser_message, repaired
        super().__init__(f"not valid JSON (line {line}, column {column}): {cause}"
                         + (f" [json: {parser_message}]" if parser_message else ""))

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
PLACEHOLDER_STRING_RE = re.compile(r"^\s*(?:" + _PLACEHOLDER_VALUE_RE.pattern + r")\s*$")


def linecol(text: str, index: int) -> tuple[int, int]:
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    col = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, col


def mask_strings(text: str) -> str:
    """Replace the inside of double-quoted strings by spaces (same length)."""
    return _STRING_RE.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)


def loads(text: str):
    return json.loads(text, object_pairs_hook=_pairs)


def _pairs(pairs):
    out, dups = {}, []
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


# Each rule: detect(text, masked) -> index or None; transform(text) -> text or None; cause.
_UNDECODABLE = re.compile("[\udc80-\udcff\x00]")


def _at(m):
    """The start of a match or a ``str.find`` index, None when nothing was found."""
    return (m.start() if m else None) if not isinstance(m, int) else (m if m >= 0 else None)


def _search(pattern):
    """A detect function: where ``pattern`` first matches the masked text."""
    return lambda text, masked: _at(re.search(pattern, masked))


def _r_undecodable(text, masked):
    return _at(_UNDECODABLE.search(text))


def _r_outer_quotes(text, masked):
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] == "'" and s[1:-1].strip().startswith("{"):
        return text.index("'")
    if len(s) >= 4 and s[0] == '"' and s[-1] == '"' and s[1:-1].strip().startswith("{"):
        try:
            json.loads(s)
        except ValueError:
            return text.index('"')
    return None


def _r_backslash(text, masked):
    m = re.search(r"\\+[\"']", text)
    return m.start() if m and re.match(r"\s*\{\s*\\+[\"']", text) else None


def _r_template(text, masked):
    # only placeholders that stand where a value or the whole config should be (not in strings)
    for m in _PLACEHOLDER_VALUE_RE.finditer(masked):
        before = masked[:m.start()].rstrip()
        if before.endswith(":") or before == "" or before.endswith(","):
            if before == "" and masked.strip().startswith("{") and m.group().startswith("{"):
                continue  # the config's own braces
            return m.start()
    return None


def _t_single_quotes(text):
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        value = None
    return json.dumps(value) if isinstance(value, dict) else text.replace("'", '"')


def _unquoted_sub(pattern, repl, flags=0):
    """A transform: ``pattern``'s matches outside double-quoted strings replaced by ``repl`` (a
    string, or {match: replacement})."""
    def transform(text):
        out, last = [], 0
        for m in re.finditer(pattern, mask_strings(text), flags):
            out += [text[last:m.start()], repl[m.group()] if isinstance(repl, dict) else repl]
            last = m.end()
        return "".join(out) + text[last:]
    return transform


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
    masked = mask_strings(text)
    s = text.strip()
    s = s if s.startswith("{") else "{" + s
    diff = mask_strings(s).count("{") - mask_strings(s).count("}")
    if diff > 0:
        s = s + "}" * diff
    elif masked.count("}") > masked.count("{"):
        return None
    return s


_RULES = [
    ("bytes that are not UTF-8 text, or NUL characters (the value was saved as UTF-16 or "
     "Latin-1, or read from a binary file)", _r_undecodable, None),
    ("a byte-order mark (U+FEFF) before the JSON: the file was saved as 'UTF-8 with BOM'",
     lambda t, m: _at(t.find("\ufeff")), lambda t: t.replace("\ufeff", "")),
    ("smart or full-width quotes/punctuation (a word processor, chat app or input method "
     "replaced the ASCII characters)", lambda t, m: next(
         (i for i, ch in enumerate(t) if ch in _SMART), None),
     lambda t: "".join(_SMART.get(ch, ch) for ch in t)),
    ("the quotes around the value reached vLLM literally (a YAML, docker-compose or Kubernetes "
     "args list, or a quoted shell variable, keeps them)", _r_outer_quotes,
     lambda t: t.strip()[1:-1]),
    ("backslash-escaped quotes (\\\"): inside single quotes the shell keeps the backslashes, "
     "so vLLM sees them", _r_backslash, lambda t: re.sub(r"\\+([\"'])", r"\1", t)),
    ("an unsubstituted template placeholder", _r_template, None),
    ("single quotes: this is a Python dict literal, not JSON (JSON strings and keys need "
     "double quotes)", lambda t, m: _at(m.find("'")), _t_single_quotes),
    ("Python True/False/None: JSON spells them true/false/null",
     _search(r"\b(True|False|None)\b"), _unquoted_sub(r"\b(True|False|None)\b", {
         "True": "true", "False": "false", "None": "null"})),
    ("a trailing comma before } or ]: JSON allows none", _search(r",\s*[}\]]"),
     _unquoted_sub(r",(?=\s*[}\]])", "")),
    ("a comment: JSON has no comments", _search(r"(?m)(//|/\*|^\s*#|\s#)"),
     _unquoted_sub(r"//[^\n]*|/\*.*?\*/|(?:^|(?<=\s))#[^\n]*", "", re.S | re.M)),
    ("key=value pairs: the value must be a JSON object {\"key\": value} (or use the dotted "
     "flags --speculative-config.method ngram)", _r_key_equals, _t_key_equals),
    ("keys and strings without double quotes: the shell or a launch script stripped them "
     "(e.g. the JSON was wrapped in double quotes, so its own quotes ended the shell string, "
     "or it went through eval/echo/an environment variable)",
     lambda t, m: (lambda k: k.start(2) if k else None)(_BARE_KEY.search(m)), _t_unquoted),
    ("missing braces: the value must be one JSON object {...}", _r_braces, _t_braces),
]


def _diagnose(text: str, err: json.JSONDecodeError, depth: int = 0):
    """(cause, fix, key, index, repaired) for text json.loads refused; ``repaired``: JSON text
    :func:`json.loads` reads (``fix`` is then "use <repaired>"), or None."""
    if text.strip() in ("", "None"):
        what = "only whitespace" if not text.strip() else "None with spaces around it"
        return (f"{what}: vLLM reads exactly '' or 'None' as no speculative config; anything "
                "else must be JSON", "pass '' (or drop --speculative-config) to leave "
                "speculative decoding off, or a JSON object to turn it on", None,
                len(text) - len(text.lstrip()) if text.strip() else 0, None)
    masked = mask_strings(text)
    for cause, detect, transform in _RULES:
        idx = detect(text, masked)
        if idx is None:
            continue
        if detect is _r_undecodable:
            ch = text[idx]
            what = "a NUL character" if ch == "\x00" else f"the byte 0x{ord(ch) - 0xdc00:02x}"
            return (f"{cause}: {what}", "save the value as UTF-8 text and pass it again", None,
                    idx, None)
        if transform is None:  # template placeholder: name it, suggest a value
            ph = _PLACEHOLDER_VALUE_RE.match(masked, idx).group()
            ph = text[idx:idx + len(ph)]
            m = re.search(r"[\"']?([A-Za-z_][\w\-]*)[\"']?\s*:\s*$", text[:idx])  # its key
            key = m.group(1) if m else None
            cause = f"{cause} {ph}" + (f" as the value of {key!r}" if key else "")
            what = ("an integer (e.g. 4)" if key == "num_speculative_tokens"
                    else "the real value")
            return cause, f"substitute {what} for {ph} before starting vLLM", key, idx, None
        fixed = transform(text)
        try:
            if fixed is not None:
                loads(fixed)
                return cause, f"use {fixed.strip()}", None, idx, fixed.strip()
        except json.JSONDecodeError as err2:
            if depth < 3 and fixed != text:
                more, fix2, key2, _, repaired = _diagnose(fixed, err2, depth + 1)
                return f"{cause}; then {more}", fix2, key2, idx, repaired
        except (RecursionError, ValueError):  # nested too deeply, or an over-long integer
            pass
        return cause, "", None, idx, None
    if err.msg.startswith("Extra data"):
        return ("text after the end of the object (two objects, or a stray character)", "",
                None, err.pos, None)
    return f"JSON parser: {err.msg}", "", None, err.pos, None


def too_deep(text: str) -> int:
    """Index of the first bracket nested deeper than 500 levels (outside strings)."""
    depth = 0
    for i, ch in enumerate(mask_strings(text)):
        if ch in "[{":
            depth += 1
            if depth > 500:
                return i
        elif ch in "]}":
            depth -= 1
    return 0


def syntax_error(text: str, err: json.JSONDecodeError) -> ConfigSyntaxError:
    """The :class:`ConfigSyntaxError` for ``text``, which :func:`json.loads` refused."""
    cause, fix, key, idx, repaired = _diagnose(text, err)
    line, col = linecol(text, idx)
    return ConfigSyntaxError(cause, line=line, column=col, fix=fix, key=key,
                             parser_message=f"{err.msg} at line {err.lineno} column {err.colno}",
                             repaired=repaired)
