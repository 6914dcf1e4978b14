"""Check a ``--speculative-config`` value the way vLLM would: :func:`parse_speculative_config`,
:func:`check_speculative_config` (the rules: :mod:`specnb.vllm.rules`) and :func:`suggest_fix`
(every "use <JSON>" fix this module gives is one the checker accepts for current vLLM)."""

from __future__ import annotations

import json
import re

from . import rules
from ._versions import select
from .findings import ConfigCheck, Finding
from .rules.context import LEGACY_KEYS, TRAPS
from .rules.keys import SAMPLING_KEYS
from .rules.values import json_values
from .syntax import ConfigSyntaxError, linecol, loads, mask_strings, syntax_error, too_deep

__all__ = ["parse_speculative_config", "check_speculative_config", "suggest_fix"]

_JSON_TYPE = {int: "number", float: "number", str: "string", list: "array", bool: "boolean"}


def suggest_fix(config) -> dict | None:
    """A config close to ``config`` (a dict; anything else gives None) that current vLLM
    accepts, or None: renames what the checker names (``ngram_prompt_lookup_max`` ->
    ``prompt_lookup_max``, ``speculative_model`` -> ``model``), maps ``model: "[ngram]"`` /
    ``"ngram"`` and a method word as the model name to that method, drops sampling and removed
    keys, adds a missing ``num_speculative_tokens`` (:data:`~specnb.vllm.DEFAULT_GAMMA`, else
    3); returned only if :func:`check_speculative_config` accepts it."""
    if not isinstance(config, dict):
        return None
    table = select(None)[0]
    out: dict = {}
    for key, value in config.items():
        if not isinstance(key, str):
            return None
        if key in LEGACY_KEYS:
            new = LEGACY_KEYS[key][0]
            if new is not None and new not in config:
                out[new] = value
        elif key in SAMPLING_KEYS or key in table.internal:
            continue
        elif key in table.fields:
            out[key] = value
        else:
            norm = key.replace("-", "_").strip().lower()
            if norm in table.fields and norm not in config:
                out[norm] = value
    words = set(TRAPS["method_words"]) - {"[ngram]"}
    if out.get("model") in ("[ngram]", "ngram") and out.get("method") in (None, "ngram",
                                                                         "[ngram]"):
        out.pop("model")
        out["method"] = "ngram"
    elif out.get("model") in words and out.get("method") not in TRAPS["no_draft_branch"]:
        out["method"] = out.pop("model")  # a method word given as the model name
    if out.get("method") == "[ngram]":
        out["method"] = "ngram"
    if "method" in out:  # method first, as the builder writes it
        out = {"method": out.pop("method"), **out}
    if out.get("num_speculative_tokens") is None and isinstance(out.get("method"), str):
        out["num_speculative_tokens"] = TRAPS["default_gamma"].get(out["method"], 3)
    try:
        return out if check_speculative_config(out).accepted else None
    except (TypeError, ValueError):
        return None


def _draft_config(draft_config, label="draft_config",
                  hint="no config.json there: give the draft checkpoint's local config.json or "
                       "its folder"):
    """``draft_config`` (``target_config``: ``label``) as a dict; a path is read."""
    if draft_config is None or isinstance(draft_config, dict):
        return draft_config
    from pathlib import Path

    from ..hf_config import read_config

    if not isinstance(draft_config, (str, Path)):
        raise TypeError(f"{label} must be a dict (config.json), a path or None, got "
                        f"{type(draft_config).__name__}")
    try:
        return read_config(draft_config, label=label, hint=hint)[0]
    except FileNotFoundError as exc:  # the checker's bad input is a ValueError
        raise ValueError(str(exc)) from None


def _completed(exc: ConfigSyntaxError) -> ConfigSyntaxError:
    """The syntax error with a "use <JSON>" fix current vLLM accepts: the repaired JSON, else
    :func:`suggest_fix`'s; else the repaired JSON as a step, not as "use ..."."""
    if exc.repaired is None:
        return exc
    try:
        obj = loads(exc.repaired)
        if isinstance(obj, dict) and check_speculative_config(obj).accepted:
            return exc
    except (TypeError, ValueError, RecursionError):
        return exc
    better = suggest_fix(obj)
    if better is not None:
        exc.fix = f"use {json.dumps(better)}"
    else:
        exc.fix = (f"repaired JSON, which vLLM would still reject (check it again and fix "
                   f"what it reports): {exc.repaired}")
    return exc


def parse_speculative_config(text: str):
    """Parse ``--speculative-config`` text (as vLLM receives it, after the shell's quoting) as
    vLLM's flag type ``optional_type(json.loads)`` does (``vllm/engine/arg_utils.py``): exactly
    ``""`` and ``"None"`` mean no config (None; with whitespace around them they are invalid
    JSON), anything else must be JSON (``null`` also gives None). Raises TypeError for a
    ``text`` not a str; :class:`ConfigSyntaxError` for text that is not JSON (also: nested
    deeper than Python's json module reads, or an integer over its 4300-digit limit), with
    ``line``, ``column``, ``cause`` and ``fix`` (a "use <JSON>" fix current vLLM accepts).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if text in ("", "None"):
        return None
    try:
        return loads(text)
    except RecursionError:
        line, col = linecol(text, too_deep(text))
        raise ConfigSyntaxError("nested too deeply: Python's json module (which vLLM uses) "
                                "gives up with a RecursionError", line=line, column=col,
                                fix="a speculative_config is one flat object; remove the "
                                "nesting") from None
    except ValueError as err:
        if isinstance(err, json.JSONDecodeError):
            raise _completed(syntax_error(text, err)) from None
        m = re.search(r"\d{4301,}", mask_strings(text))  # int digit limit (CVE-2020-10735)
        line, col = linecol(text, m.start() if m else 0)
        raise ConfigSyntaxError(f"an integer with more digits than Python's json module reads "
                                f"({err})", line=line, column=col,
                                fix="write a realistic number (num_speculative_tokens is small, "
                                "e.g. 4)") from None


def check_speculative_config(text_or_dict, vllm_version=None, draft_config=None,
                             target_config=None, tensor_parallel_size=None,
                             max_model_len=None, serve=None, env=None) -> ConfigCheck:
    """Check a ``--speculative-config`` value against the rules of one vLLM release.

    The release's table (``specnb/vllm/versions/<v>.json``, from its code) and ``traps.json``
    give the facts; the rules run in the order of :data:`specnb.vllm.rules.RULES`, then, with
    a target or serve settings, :data:`specnb.vllm.rules.CONTEXT_RULES`.

    Parameters
    ----------
    text_or_dict : str or dict
        The value as vLLM receives it (JSON text, after the shell's quoting), or a parsed
        mapping (as passed to ``LLM(speculative_config=...)``).
    vllm_version : str or None
        The server's vLLM release, e.g. ``"0.33.0"``; None: the newest table. A release
        without a table is judged by the nearest older one, and the first finding (severity
        ``note``, code ``judged-by-older-release``) says so.
    draft_config, target_config : dict, str, Path or None
        The draft checkpoint's / served model's ``config.json`` (parsed, or a local file or
        folder; nothing is downloaded); the target adds vLLM's checks against it
        (:mod:`specnb.vllm.rules.target`).
    tensor_parallel_size, max_model_len : int >= 1 or None
        The server's ``--tensor-parallel-size`` (default 1) and ``--max-model-len`` (default:
        the target's ``max_position_embeddings``).
    serve : dict or None
        More serve settings ({dest: value}, :func:`specnb.vllm.serve.parse_serve_line`'s
        ``settings``) for the serve-line rules (:mod:`specnb.vllm.rules.serve`).
    env : dict or None
        The server's environment ({NAME: value}, :attr:`specnb.vllm.ServeLine.env`):
        VLLM_USE_V2_MODEL_RUNNER picks the model runner
        (:func:`specnb.vllm.schedule.model_runner`). None: unset.

    Returns a :class:`ConfigCheck`: its :class:`Finding` objects, ``.accepted`` (vLLM would
    start; warnings allowed), ``.config`` (the parsed mapping; None if the text was not a JSON
    object). Broken JSON gives one error finding with ``line``, ``column`` and the likely cause.

    Raises
    ------
    TypeError
        ``text_or_dict`` neither a string nor a dict, or a dict value that is not JSON (e.g.
        a numpy number); ``vllm_version`` not a string.
    ValueError
        ``vllm_version`` not a release, or older than every table; a config path without a
        readable config.json; ``tensor_parallel_size`` / ``max_model_len`` not an int >= 1.
    OSError
        a config file that cannot be read.
    """
    settings = dict(serve or {})
    for name, value in (("tensor_parallel_size", tensor_parallel_size),
                        ("max_model_len", max_model_len)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1 or None, got {value!r}")
            settings[name] = value
    table, note = select(vllm_version)
    draft = _draft_config(draft_config)
    target = _draft_config(target_config, "target_config",
                           "give the served model's local config.json or its folder")
    version = vllm_version.strip() if vllm_version is not None else None
    first = [Finding("note", None, note, f"check with a release specnb has rules for "
                     f"({table.vllm}), and expect differences", code="judged-by-older-release")
             ] if note else []
    if isinstance(text_or_dict, str) and table.raw.get("speculative_config_text") == \
            "ast.literal_eval":  # 0.8.2 (its create_speculative_config)
        text_or_dict = _literal(text_or_dict, table)
        if isinstance(text_or_dict, Finding):
            return ConfigCheck(tuple(first) + (text_or_dict,), None, version)
    text, cfg, early = _parsed(text_or_dict)
    if early is None and table.raw.get("speculative_config_flag") is False:
        early = Finding("error", None, f"vLLM {table.vllm} has no --speculative-config flag "
                        "(the JSON config came with PR #14434, about 0.8): V0 took "
                        "--speculative-model, --num-speculative-tokens, "
                        "--ngram-prompt-lookup-max", "upgrade vLLM, or use the V0 flags",
                        code="predates-json-config")
    if early is not None:
        return ConfigCheck(tuple(first) + (early,), None, version)
    ctx = rules.run(rules.Context(text, table, cfg, draft, target, settings,
                                  dict(env or {})))
    return ConfigCheck(tuple(first + ctx.findings), dict(cfg), version)


def _literal(text: str, table):
    """The flag's text as ``ast.literal_eval`` reads it (a dict for the rules, else the text
    for :func:`_parsed`'s findings), or the finding that ends the check."""
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        return Finding("error", None, f"vLLM {table.vllm} reads --speculative-config with "
                       f"Python's ast.literal_eval, not JSON, and that refuses this text "
                       f"({why})", "write a Python dict literal: True, False, None for JSON's "
                       "true, false, null", code="not-a-python-literal")
    if not isinstance(value, dict):
        return Finding("error", None, f"vLLM {table.vllm}'s ast.literal_eval reads this as a "
                       f"{type(value).__name__}, and create_speculative_config asserts a dict",
                       "write one dict, e.g. {'method': 'ngram', 'num_speculative_tokens': 4}",
                       code="not-an-object")
    try:
        return json.loads(json.dumps(value))  # the rules read JSON values
    except (TypeError, ValueError):
        return text


def _parsed(text_or_dict):
    """(text, config, None) or (text, None, the one finding that ends the check)."""
    if isinstance(text_or_dict, dict):
        json_values(text_or_dict, "text_or_dict")
        return None, text_or_dict, None
    if not isinstance(text_or_dict, str):
        raise TypeError("text_or_dict must be JSON text (str) or a dict, got "
                        f"{type(text_or_dict).__name__}")
    text = text_or_dict
    try:
        cfg = parse_speculative_config(text)
    except ConfigSyntaxError as exc:
        parser = f" [{exc.parser_message}]" if exc.parser_message else ""
        return text, None, Finding(
            "error", exc.key, f"not valid JSON: {exc.cause}; vLLM stops with 'argument "
            f"--speculative-config: Value ... cannot be converted to <function loads ...>'"
            f"{parser}", exc.fix or "write one JSON object in double quotes, e.g. "
            "{\"method\": \"ngram\", \"num_speculative_tokens\": 4}", exc.line, exc.column,
            code="invalid-json")
    if cfg is None:
        return text, None, Finding(
            "warning", None, "empty value: vLLM reads '', 'None' (and JSON null) as no "
            "speculative config, so speculative decoding stays off", "pass a JSON object, or "
            "drop --speculative-config", code="empty-value")
    if isinstance(cfg, dict):
        return text, cfg, None
    try:
        inner = json.loads(cfg) if isinstance(cfg, str) else None
    except ValueError:
        inner = None
    if isinstance(inner, dict):
        return text, None, Finding(
            "error", None, "the value is a JSON string that contains JSON: the quotes around it "
            "were kept (YAML, docker-compose or Kubernetes args, or double encoding), so vLLM "
            "gets a str, not a mapping", f"use {json.dumps(inner)}", 1, 1,
            code="json-string-of-json")
    shown = json.dumps(cfg) if len(json.dumps(cfg)) <= 40 else json.dumps(cfg)[:37] + "..."
    return text, None, Finding(
        "error", None, f"the value must be a JSON object {{...}}, got a JSON "
        f"{_JSON_TYPE.get(type(cfg), type(cfg).__name__)}: {shown}", "write e.g. "
        "{\"method\": \"ngram\", \"num_speculative_tokens\": 4}", 1, 1, code="not-an-object")
