"""Prompts: encoding prompts (and logged responses) to token ids within every model's context.
Reading and validating the files (prompts, and logged traffic: each record with the response
the target served and its temperature) lives in :mod:`specnb.request_log`, torch-free.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..request_log import (BUNDLED_LOGGED, BUNDLED_PROMPTS, _default_ids,  # one home
                           load_prompts)
from .load import _check_fits

__all__ = ["BUNDLED_PROMPTS", "BUNDLED_LOGGED", "load_prompts", "encode_prompts",
           "encode_responses"]

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
