"""Prompts: the bundled prompt files, reading and validating a JSON-lines file of prompts or of
logged traffic (each record with the response the target served and its temperature), and
encoding them (and logged responses) to token ids within every model's context.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from .. import _check
from .args import BUNDLED_LOGGED, BUNDLED_PROMPTS, check_prompts_file  # one home
from .load import _check_fits



__all__ = ["BUNDLED_PROMPTS", "BUNDLED_LOGGED", "load_prompts", "encode_prompts",
           "encode_responses"]

def _check_logged(path, n, obj) -> None:
    """Validate a logged-traffic record's ``response``, ``temperature`` and ``response_ids``."""
    r = obj.get("response")
    if not isinstance(r, str) or not r:
        raise ValueError(f"{path}:{n}: 'response' must be a non-empty string (the response the "
                         f"target served for this prompt), got {r!r}")
    t = obj.get("temperature")
    if "temperature" not in obj:
        raise ValueError(f"{path}:{n}: a record with a 'response' must give the 'temperature' "
                         "it was served at (0 = greedy), got none")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not (t >= 0 and math.isfinite(t)):
        raise ValueError(f"{path}:{n}: 'temperature' must be a number >= 0 (0 = greedy), got {t!r}")
    ids = obj.get("response_ids")
    if ids is not None and (not isinstance(ids, list) or not ids or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids)):
        raise ValueError(f"{path}:{n}: 'response_ids' must be a non-empty list of token ids "
                         f"(ints >= 0), got {str(ids)[:80]}")


def load_prompts(path=None, *, tasks=None, per_task: int | None = None,
                 logged: bool = False) -> list[dict]:
    """Read prompts from a JSON-lines file (one object a line, with at least ``task`` and
    ``prompt``; ``id`` defaults to ``"<task>-<n>"``).

    Logged traffic (``logged=True``, or any record that has a ``response``): each record also
    carries ``response``, the text the target served (non-empty), and ``temperature``, the
    temperature it was served at (>= 0, 0 = greedy); optionally ``response_ids``, the served
    token ids (used instead of re-encoding ``response``, which need not give the same ids).

    Parameters
    ----------
    path : str or Path, optional
        Defaults to the bundled :data:`BUNDLED_PROMPTS` (held-out standard-library text).
    tasks : iterable of str, optional
        Keep only these task families (in the given order).
    per_task : int >= 0, optional
        Keep the first ``per_task`` prompts of each family (0 or None: all); for logged
        records, the first ``per_task`` of each family at each served temperature (so a log
        served at T = 0 and T = 1 keeps both).

    Returns
    -------
    list of dict, grouped by task in file (or ``tasks``) order.

    Raises
    ------
    FileNotFoundError
        No such file, or a folder.
    ValueError
        A line that is not a JSON object with string ``task`` and ``prompt``; with ``logged``
        a record without ``response``; a record whose ``response`` is empty or not a string,
        whose ``temperature`` is missing or negative, or whose ``response_ids`` are not ids; an
        unknown task in ``tasks``; ``per_task`` < 0; no prompt left.
    """
    path = check_prompts_file(path if path is not None
                              else (BUNDLED_LOGGED if logged else BUNDLED_PROMPTS))
    items = _read_records(path, logged)
    _default_ids(items)
    order = list(dict.fromkeys(i["task"] for i in items))
    if tasks is not None:
        tasks = [tasks] if isinstance(tasks, str) else list(tasks)
        unknown = [t for t in tasks if t not in order]
        if unknown:
            raise ValueError(f"tasks {unknown} not in {path}; its tasks are {order}")
        order = tasks
    if per_task is not None:
        per_task = _check.scalar_int("per_task (--per-task on the command line; 0 or None = all "
                                     "prompts)", per_task, lo=0)
    out = []
    for t in order:
        group = [i for i in items if i["task"] == t]
        if not per_task:
            out.extend(group)
            continue
        seen = {}  # logged records: per_task at each temperature; prompts: one key
        for i in group:
            key = float(i["temperature"]) if "response" in i else None
            seen[key] = seen.get(key, 0) + 1
            if seen[key] <= per_task:
                out.append(i)
    if not out:
        raise ValueError(f"no prompts left in {path}")
    return out


def _read_records(path: Path, logged: bool) -> list[dict]:
    """Every record of a JSON-lines file, validated line by line (see :func:`load_prompts`)."""
    items = []
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not data
    except UnicodeDecodeError as exc:
        raise _check.utf8_error(str(path), exc, "give JSON lines in UTF-8") from None
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not valid JSON ({exc.msg}; column "
                             f"{exc.colno})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("task"), str) \
                or not isinstance(obj.get("prompt"), str) or not obj["prompt"]:
            got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
            raise ValueError(f"{path}:{n}: each line must be a JSON object with string 'task' and "
                             f"non-empty string 'prompt'; got keys {got}")
        if logged or "response" in obj:
            if logged and "response" not in obj:
                raise ValueError(f"{path}:{n}: logged traffic needs each record's 'response' "
                                 "(the served text) and 'temperature'; this record has none")
            _check_logged(path, n, obj)
        items.append(obj)
    return items


def encode_prompts(tokenizer, prompts, *, max_new_tokens: int, context: int | None,
                   chat_template="auto") -> list[torch.Tensor]:
    """Token ids (1-D LongTensor on CPU) of each prompt.

    With ``chat_template="auto"`` a tokenizer that has a chat template gets the prompt as one
    user message with the generation prompt appended (``apply_chat_template``); ``True``
    requires a template, ``False`` never applies one. Otherwise the plain text is encoded with
    the tokenizer's default special tokens.

    Raises
    ------
    ValueError
        A prompt whose tokens plus ``max_new_tokens`` exceed ``context`` (the model's positions:
        an int, None, or a dict of every model's from :func:`model_contexts`, so that a draft
        with a shorter context than the target's is caught before measuring), or
        ``chat_template=True`` without a template.
    """
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if chat_template is True and not has_template:
        raise ValueError("chat_template=True but the tokenizer has no chat template; use 'auto' "
                         "or False")
    use = has_template if chat_template == "auto" else bool(chat_template)
    out = []
    for p in prompts:
        if use:
            text = tokenizer.apply_chat_template([{"role": "user", "content": p["prompt"]}],
                                                 tokenize=False, add_generation_prompt=True)
            ids = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
        else:
            ids = tokenizer(p["prompt"], verbose=False)["input_ids"]
        if max_new_tokens:
            _check_fits(f"prompt {p.get('id', '?')!r} (task {p.get('task')!r}) is {len(ids)} "
                        f"tokens; with max_new_tokens = {max_new_tokens} it",
                        len(ids) + max_new_tokens, context,
                        "lower --max-new-tokens, use shorter prompts, or drop that model")
        else:  # logged traffic: nothing is generated
            _check_fits(f"prompt {p.get('id', '?')!r} (task {p.get('task')!r}) is {len(ids)} "
                        "tokens; it", len(ids), context,
                        "drop the record or use shorter prompts, or drop that model")
        out.append(torch.tensor(ids, dtype=torch.long))
    return out


def encode_responses(tokenizer, items, prompt_ids, *, context, vocab_size: int | None = None
                     ) -> list[torch.Tensor]:
    """Token ids (1-D LongTensor) of each logged record's served response: its
    ``response_ids`` when given, else ``response`` encoded without special tokens.

    Raises
    ------
    ValueError
        A response that encodes to no token, an id outside the vocabulary, or prompt + response
        longer than a model's context (``context`` as in :func:`encode_prompts`; named).
    """
    out = []
    for it, pids in zip(items, prompt_ids):
        ids = it.get("response_ids")
        if ids is None:
            ids = tokenizer(it["response"], add_special_tokens=False, verbose=False)["input_ids"]
        name = f"logged record {it.get('id', '?')!r} (task {it.get('task')!r})"
        if not ids:
            raise ValueError(f"{name}: its response encodes to no token")
        if vocab_size is not None and max(ids) >= vocab_size:
            raise ValueError(f"{name}: response token id {max(ids)} is outside the target's "
                             f"vocabulary (vocab_size {vocab_size}); was it served by this target?")
        _check_fits(f"{name}: prompt ({pids.numel()} tokens) + response ({len(ids)} tokens)",
                    pids.numel() + len(ids), context,
                    "teacher forcing runs each model over prompt + response; drop the record or "
                    "truncate the response (or drop that model)")
        out.append(torch.tensor(ids, dtype=torch.long))
    return out


def _prompt_items(prompts, tasks, per_task):
    """``(items, source)``: the prompts of a file (:func:`load_prompts`, the bundled one when
    None) or of an in-memory list (validated; ids defaulted); ``source`` names the file or
    ``"<in memory>"``."""
    if prompts is None or isinstance(prompts, (str, Path)):
        items = load_prompts(prompts, tasks=tasks, per_task=per_task)
        return items, str(prompts if prompts is not None else BUNDLED_PROMPTS)
    items = [dict(p) for p in prompts]
    if not items:
        raise ValueError("prompts must hold at least one prompt, got none")
    for i in items:
        if not isinstance(i.get("task"), str) or not isinstance(i.get("prompt"), str):
            raise ValueError(f"prompts must be dicts with string 'task' and 'prompt', got {i!r}")
    _default_ids(items)
    return items, "<in memory>"


def _default_ids(items: list[dict]) -> None:
    """Give each prompt without an ``id`` the id ``"<task>-<n>"`` (n counts its task's
    prompts from 00, in order)."""
    counts = {}
    for i in items:
        k = counts[i["task"]] = counts.get(i["task"], -1) + 1
        i.setdefault("id", f"{i['task']}-{k:02d}")
