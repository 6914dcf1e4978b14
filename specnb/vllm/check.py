"""Check a ``--speculative-config`` value the way vLLM would: the entry points.

* :func:`parse_speculative_config` reads the text as vLLM's flag does (JSON; "" and "None" mean
  no config) and raises :class:`~specnb.vllm.syntax.ConfigSyntaxError` with line, column, likely
  cause and a repair;
* :func:`check_speculative_config` runs the rules (:mod:`specnb.vllm._rules`) and returns a
  :class:`~specnb.vllm.findings.ConfigCheck`.

Every "use <JSON>" fix this module suggests is itself accepted by the checker for current vLLM
(:func:`suggest_fix`): old key names are renamed, V0 spellings mapped (``speculative_model:
"[ngram]"`` -> ``method: "ngram"``) and a missing ``num_speculative_tokens`` filled with the
starting value of :data:`specnb.vllm.DEFAULT_GAMMA`.
"""

from __future__ import annotations

import json
import re

from . import _schema as S
from ._rules import _Checker, _era, _parse_version, target_checks
from ._versions import profile_for
from ._values import _json_values
from .findings import ConfigCheck, Finding
from .syntax import ConfigSyntaxError, linecol, loads, mask_strings, syntax_error, too_deep

__all__ = ["parse_speculative_config", "check_speculative_config", "suggest_fix"]


#: JSON's names for the types :func:`json.loads` returns (RFC 8259, section 3).
_JSON_TYPE = {int: "number", float: "number", str: "string", list: "array", bool: "boolean"}


def suggest_fix(config) -> dict | None:
    """A config close to ``config`` that current vLLM accepts, or None when none is derived.

    Applies, in order, the renames the checker names (V0 and misspelled keys such as
    ``ngram_prompt_lookup_max`` -> ``prompt_lookup_max``, ``speculative_model`` -> ``model``),
    maps the V0 n-gram spelling (``model: "[ngram]"`` or ``"ngram"`` -> ``method: "ngram"``,
    ``model`` dropped), drops sampling parameters and removed keys, and adds a missing
    ``num_speculative_tokens`` (:data:`~specnb.vllm.DEFAULT_GAMMA`, else 3). The
    result is returned only if :func:`check_speculative_config` accepts it.

    Parameters
    ----------
    config : dict (or anything else, which gives None)
    """
    if not isinstance(config, dict):
        return None
    out: dict = {}
    for key, value in config.items():
        if not isinstance(key, str):
            return None
        if key in S.LEGACY_KEYS:
            new = S.LEGACY_KEYS[key][0]
            if new is not None and new not in config:
                out[new] = value
        elif key in S.SAMPLING_KEYS or key in S.INTERNAL_KEYS:
            continue
        elif key in S.FIELDS:
            out[key] = value
        else:
            norm = key.replace("-", "_").strip().lower()
            if norm in S.FIELDS and norm not in config:
                out[norm] = value
    if out.get("model") in ("[ngram]", "ngram") and out.get("method") in (None, "ngram",
                                                                         "[ngram]"):
        out.pop("model")
        out["method"] = "ngram"
    if out.get("method") == "[ngram]":
        out["method"] = "ngram"
    if "method" in out:  # method first, as the builder writes it
        out = {"method": out.pop("method"), **out}
    if out.get("num_speculative_tokens") is None and isinstance(out.get("method"), str):
        out["num_speculative_tokens"] = S.DEFAULT_GAMMA.get(out["method"], 3)
    try:
        if check_speculative_config(out).accepted:
            return out
    except (TypeError, ValueError):
        return None
    return None


def _draft_config(draft_config, label="draft_config",
                  hint="no config.json there: give the draft checkpoint's local config.json or "
                       "its folder"):
    """``draft_config`` (or ``target_config``: ``label``) as a dict (read from a local
    config.json by :func:`specnb.hf_config.read_config` when a path is given)."""
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
    """Make the syntax error's "use <JSON>" fix one current vLLM accepts.

    The repaired JSON stays when the checker accepts it; else :func:`suggest_fix` completes it;
    when neither passes, the fix shows the repaired JSON as a step, not as "use ...".
    """
    if exc.repaired is None:
        return exc
    try:
        obj = loads(exc.repaired)
    except (ValueError, RecursionError):
        return exc
    try:
        if isinstance(obj, dict) and check_speculative_config(obj).accepted:
            return exc
    except (TypeError, ValueError):
        return exc
    better = suggest_fix(obj)
    if better is not None:
        exc.fix = f"use {json.dumps(better)}"
    else:
        exc.fix = (f"repaired JSON, which vLLM would still reject (check it again and fix "
                   f"what it reports): {exc.repaired}")
    return exc


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
        ``cause`` and ``fix`` (a "use <JSON>" fix is always one current vLLM accepts).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if text in ("", "None"):
        return None
    try:
        return loads(text)
    except RecursionError:
        idx = too_deep(text)
        line, col = linecol(text, idx)
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
                             max_model_len=None) -> ConfigCheck:
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

    Also warned: an explicit ``method`` the draft checkpoint contradicts (its path, or with
    ``draft_config`` its config.json architectures / model_type; vLLM then re-detects and runs
    another method, issue #47486, or loads the head as the wrong kind); a missing ``method``
    (the methods vLLM may detect and the likely one); the dynamic schedule
    ``num_speculative_tokens_per_batch_size`` (validated as vLLM does, errors for what it
    refuses, a warning for K above ``num_speculative_tokens``, its semantics and its measured
    cost; :mod:`specnb.vllm.schedule`).

    Parameters
    ----------
    text_or_dict : str or dict
        The value as vLLM receives it (JSON text, after the shell's quoting is removed), or an
        already parsed mapping (as passed to ``LLM(speculative_config=...)``).
    vllm_version : str or None
        The server's vLLM version, e.g. ``"0.11.0"``; None means current vLLM.
    draft_config : dict, str, Path or None
        The draft checkpoint's ``config.json``: its parsed dict, or a local path to the file or
        to the checkpoint folder holding it (nothing is downloaded). None: judge by the path
        in ``model`` only; when ``target_config`` is given and ``model`` is a local folder
        with a config.json, that one is read.
    target_config : dict, str, Path or None
        The served (target) model's ``config.json`` (dict, file or folder). With it the
        checks vLLM makes against the target run too (:func:`specnb.vllm._rules.target_checks`):
        the draft's ``max_model_len`` against the target's and the draft's context, the
        vocabulary sizes for ``draft_model``, a local ``model`` path that does not exist, and
        ``draft_tensor_parallel_size`` against ``tensor_parallel_size``.
    tensor_parallel_size : int >= 1 or None
        The server's ``--tensor-parallel-size`` (vLLM's default is 1 when a target is given).
    max_model_len : int >= 1 or None
        The server's ``--max-model-len``; None: the target's ``max_position_embeddings``.

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
        ``vllm_version`` does not look like a version ("0.11.0"); ``draft_config`` is a path
        that holds no readable config.json, or not a JSON object.
    OSError
        ``draft_config`` names a file that cannot be read.
    """
    draft = _draft_config(draft_config)
    target = _draft_config(target_config, "target_config",
                           "give the served model's local config.json or its folder")
    for name, value in (("tensor_parallel_size", tensor_parallel_size),
                        ("max_model_len", max_model_len)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(f"{name} must be an integer >= 1 or None, got {value!r}")
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
                              exc.line, exc.column, code="invalid-json")
            return ConfigCheck((finding,), None, version)
        if cfg is None:
            finding = Finding("warning", None, "empty value: vLLM reads '', 'None' (and JSON "
                              "null) as no speculative config, so speculative decoding stays "
                              "off",
                              "pass a JSON object, or drop --speculative-config",
                              code="empty-value")
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
                code = "json-string-of-json"
            else:
                shown = json.dumps(cfg)
                shown = shown if len(shown) <= 40 else shown[:37] + "..."
                msg = (f"the value must be a JSON object {{...}}, got a JSON "
                       f"{_JSON_TYPE.get(type(cfg), type(cfg).__name__)}: {shown}")
                fix = "write e.g. {\"method\": \"ngram\", \"num_speculative_tokens\": 4}"
                code = "not-an-object"
            return ConfigCheck((Finding("error", None, msg, fix, 1, 1, code=code),), None,
                               version)
    else:
        raise TypeError("text_or_dict must be JSON text (str) or a dict, got "
                        f"{type(text_or_dict).__name__}")
    prof = profile_for(version) if era in ("strict", "current") else None
    checker = _Checker(text, era, version, draft, profile=prof)
    checker.run(cfg)
    if target is not None or tensor_parallel_size is not None or max_model_len is not None:
        target_checks(checker, cfg, target, tensor_parallel_size, max_model_len)
    return ConfigCheck(tuple(checker.out), dict(cfg), version)
