"""Measure alpha, tau and speedup of a real draft/target pair with transformers.

The only specnb module that imports torch and transformers (the ``measure`` extra:
``pip install -e '.[measure]'``). Every formula it applies lives in torch-free modules:
:mod:`specnb.theory` (Eq. 1, Theorem 3.8, optimal gamma) and :mod:`specnb.acceptance`
(rounds, tau from per-position betas, alpha counted from rounds, CIs, timing model).

What :func:`measure` does, per draft and temperature T (Leviathan, Kalman & Matias,
arXiv 2211.17192 v2; transformers 5.x assisted decoding, checked on 5.24.0):

1. **alpha by teacher forcing.** The target generates each continuation once (greedy at T = 0,
   seeded sampling at T > 0); then one forward pass of each model over prompt + continuation
   gives beta per position: at T = 0, 1 when the draft's argmax equals the target's token; at
   T > 0, ``sum(min(p_T, q_T))`` (Corollary 3.6). alpha per task family with a
   cluster-bootstrap 95% interval over prompts.
2. **Assisted decoding runs.** ``target.generate(assistant_model=draft)`` at fixed gamma, set on
   the draft's ``generation_config`` (``num_assistant_tokens = gamma``, schedule
   ``"constant"``, ``assistant_confidence_threshold = 0``). A streamer records the tokens
   appended per target forward (tau, bonus token included, as Spec-Bench and vLLM count it);
   forward hooks count target and draft forwards. Plain ``generate`` on the same prompts is the
   baseline; warm-up, ``repeats`` timed runs, median per prompt. Prompt lookup decoding
   (``prompt_lookup_num_tokens = gamma``) runs on the same prompts.
3. **Prediction beside measurement.** tau and speedup from alpha by Eq. 1 and Theorem 3.8 with a
   measured c (median single-token forward time with a KV cache, draft over target), and from
   the per-position beta sequences without the i.i.d. assumption; plus a timing model fitted
   to the runs (:func:`specnb.acceptance.fit_timing_model`).
4. **Losslessness.** Every greedy assisted and prompt-lookup output is compared token by token
   with plain greedy output.
5. **Leave one gamma out.** ``speedup_predicted_loo``: the timing model fitted without a
   gamma's runs, applied to the rounds the betas imply at that gamma.

:func:`alpha_from_logged` does step 1 on logged traffic instead: the served responses replace
the target's generation, so the whole (draft x gamma) grid costs one forward pass per model.

Logits processing: whatever the target's ``generation_config`` sets that changes the next-token
distribution (repetition / n-gram penalties, bad or suppressed tokens, min length, top-k / top-p
at T > 0) is applied in teacher forcing exactly as ``generate`` applies it
(:func:`generation_processing` takes the processor list from ``generate`` itself; the draft's
side drops min length, as transformers' assistant does). Where the config sets no top-k / top-p,
``top_k = 0`` and ``top_p = 1.0`` are passed (transformers 5.x otherwise applies ``top_k = 50``
by default), so sampling is pure temperature sampling. Batch size is 1 (transformers' assisted
decoding supports no other). Every model's context (target and each draft) is checked against
the prompts before anything runs.

Loading rules: a local folder, or a hub id only when the caller names one (then transformers may
use the network); safetensors only (``use_safetensors=True``); ``trust_remote_code=False``.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

try:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.generation.streamers import BaseStreamer
except ImportError as exc:  # pragma: no cover - exercised by the CLI's message
    raise ImportError(
        "specnb.measure needs torch and transformers, which are not installed: install the "
        "measure extra with  pip install -e '.[measure]'  (CPU torch: pip install torch==2.13.0 "
        f"first). Original error: {exc}"
    ) from exc

from . import _check, theory
from . import acceptance as acc
from .data import DATA_DIR

__all__ = [
    "MODELS_DIR", "BUNDLED_TARGET", "BUNDLED_DRAFTS", "BUNDLED_PROMPTS", "BUNDLED_LOGGED",
    "TOKENIZER_FILES", "pad_token_id", "model_contexts", "Processing", "generation_processing",
    "teacher_forced_betas_all", "encode_responses", "LoggedAlpha", "alpha_from_logged",
    "logged_responses", "processing_note",
    "resolve_device", "resolve_dtype", "load_model", "check_pair", "context_length",
    "load_prompts", "encode_prompts", "generate_continuation", "teacher_forced_betas",
    "forward_time", "GenRun", "run_generate", "Measurement", "measure",
    "alpha_by_teacher_forcing", "short_names",
]

#: Bundled models (``python -m specnb.train``) and prompts.
MODELS_DIR = DATA_DIR / "models"
BUNDLED_TARGET = MODELS_DIR / "target-4x256"
BUNDLED_DRAFTS = (MODELS_DIR / "draft-2x128", MODELS_DIR / "draft-1x64")
BUNDLED_PROMPTS = DATA_DIR / "prompts" / "stdlib_heldout.jsonl"
#: The bundled target's own responses to every held-out prompt (greedy and T = 1), as a request
#: log would hold them (``scripts/make_logged_responses.py``; provenance in data/prompts/README.md).
BUNDLED_LOGGED = DATA_DIR / "prompts" / "stdlib_heldout_responses.jsonl"

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


# --------------------------------------------------------------------------- loading

def resolve_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` when torch sees a GPU, else ``"cpu"``; ``"cpu"``/``"cuda"``
    (or ``"cuda:N"``) pass through.

    Raises
    ------
    ValueError
        An unknown device, or ``"cuda"`` without a GPU.
    """
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return device
    if re.fullmatch(r"cuda(:\d+)?", str(device)):
        if not torch.cuda.is_available():
            if torch.version.cuda is None:
                raise ValueError(
                    f"device {device!r} (--device on the command line) needs a CUDA build of "
                    f"torch, but this torch {torch.__version__} is CPU-only: install a CUDA "
                    "build into .venv (the command for your CUDA version is on "
                    "https://pytorch.org/get-started/locally/, e.g. .venv/bin/pip install torch "
                    "--index-url https://download.pytorch.org/whl/cu126), then run make with an "
                    "empty TORCH (make TORCH= run) so it keeps that torch instead of the CPU "
                    "pin; or use device 'cpu' or 'auto'")
            raise ValueError(f"device {device!r} (--device on the command line) was asked for "
                             f"but torch {torch.__version__} (CUDA {torch.version.cuda}) sees no "
                             "GPU: check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES, or use "
                             "device 'cpu' or 'auto'")
        return device
    raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")


_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_dtype(dtype: str = "auto", device: str = "cpu") -> torch.dtype:
    """``"auto"`` -> float32 on CPU, bfloat16 on a GPU that supports it (else float16);
    ``"float32"``, ``"bfloat16"``, ``"float16"`` pass through.

    Raises
    ------
    ValueError
        Any other name.
    """
    if dtype == "auto":
        if str(device).startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be 'auto' or one of {sorted(_DTYPES)}, got {dtype!r}")
    return _DTYPES[dtype]


_OFFLINE_HINT = ("to stay offline (no hub requests: only local folders and the hub cache) set "
                 "HF_HUB_OFFLINE=1")

#: Files one of which a folder needs for AutoTokenizer (fast, sentencepiece or BPE vocab).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json",
                   "spiece.model", "sentencepiece.bpe.model", "vocab.txt")


def _looks_like_path(name: str) -> bool:
    """Whether ``name`` is meant as a local path, so that a missing one fails at once instead
    of going to the model hub: a name that cannot be a hub id ("org/name" or "name"), or an
    "a/b" whose first part is a local folder (``models/nosuch`` beside a ``models/``)."""
    if name.startswith((".", "/", "~")) or "\\" in name or not _HUB_ID.match(name):
        return True
    return "/" in name and Path(name.split("/")[0]).expanduser().is_dir()


def _one_line(exc) -> str:
    """A library's exception text on one line (the CLI prints one-line errors)."""
    return " ".join(str(exc).split())


def _offline() -> bool:
    import os

    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def load_model(name_or_path, *, device: str = "cpu", dtype="auto", need_tokenizer: bool = True):
    """Load a causal LM (and its tokenizer) from a local folder or a named hub id.

    Parameters
    ----------
    name_or_path : str or Path
        A local folder with ``config.json`` and ``*.safetensors`` (e.g. the bundled
        ``data/models/target-4x256``), or a hub id ``"org/name"`` (network; only when named).
    device : str, already resolved (see :func:`resolve_device`).
    dtype : str or torch.dtype, see :func:`resolve_dtype`.
    need_tokenizer : bool
        Raise when no tokenizer loads (True), or return ``None`` for it (False).

    Returns
    -------
    (model, tokenizer) : the model in eval mode on ``device``; tokenizer or None.

    Raises
    ------
    FileNotFoundError
        A path that does not exist (a local-looking name fails at once, without the hub), a
        folder without safetensors weights, a folder without tokenizer files when
        ``need_tokenizer``, or a name that is neither a folder nor a loadable hub id (with
        ``HF_HUB_OFFLINE=1``: not in the hub cache; nothing is requested).
    """
    name = str(name_or_path)
    path = Path(name).expanduser()
    torch_dtype = dtype if isinstance(dtype, torch.dtype) else resolve_dtype(dtype, device)
    kwargs = dict(use_safetensors=True, trust_remote_code=False, dtype=torch_dtype)
    if path.exists():
        if not path.is_dir() or not (path / "config.json").is_file():
            raise FileNotFoundError(f"model path {name!r} must be a folder holding config.json "
                                    "and model.safetensors (a save_pretrained folder)")
        if not any(path.glob("*.safetensors")):
            raise FileNotFoundError(
                f"model path {name!r} holds no *.safetensors file; specnb loads safetensors only "
                "(convert with model.save_pretrained(dir, safe_serialization=True))")
        src, kwargs["local_files_only"] = str(path), True
    elif _looks_like_path(name):
        raise FileNotFoundError(
            f"model path {name!r} does not exist (it is a local path, so it is not looked up on "
            "the model hub). The bundled pair is data/models/target-4x256 with "
            "data/models/draft-2x128 (retrain it with  python -m specnb.train); or pass a hub id "
            f"such as 'org/name' to download one (needs network; {_OFFLINE_HINT}).")
    else:
        src = name
        if _offline():  # the hub cache only, no request
            kwargs["local_files_only"] = True
    no_tokenizer = path.is_dir() and not any((path / f).is_file() for f in TOKENIZER_FILES)
    if no_tokenizer and need_tokenizer:
        raise FileNotFoundError(
            f"model folder {name!r} holds no tokenizer files (one of "
            f"{', '.join(TOKENIZER_FILES)}): save the tokenizer it was trained with into it "
            "(tokenizer.save_pretrained(folder)); for the bundled family copy "
            "data/models/tokenizer/* there")
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()
    import huggingface_hub.utils.logging as hub_logging  # a failed hub request logs a stray line

    hub_level = hub_logging.get_verbosity()
    hub_logging.set_verbosity_error()
    try:
        model = AutoModelForCausalLM.from_pretrained(src, **kwargs)
    except OSError as exc:
        if _offline():
            raise FileNotFoundError(
                f"could not load model {name!r}: it is not a local folder, and HF_HUB_OFFLINE is "
                "set, so only the hub cache was searched and it is not there (unset "
                f"HF_HUB_OFFLINE to download it): {_one_line(exc)}") from exc
        raise FileNotFoundError(
            f"could not load model {name!r}: it is not a local folder, and loading it as a hub "
            f"id failed (no network, a typo, or no safetensors weights; if you meant a local "
            f"folder, check the path; {_OFFLINE_HINT}): {_one_line(exc)}") from exc
    finally:
        hub_logging.set_verbosity(hub_level)
        if bars:
            transformers.utils.logging.enable_progress_bar()
    model.eval().to(device)
    tok = None
    if no_tokenizer:
        return model, None
    try:
        tok = AutoTokenizer.from_pretrained(src, trust_remote_code=False,
                                            local_files_only=kwargs.get("local_files_only", False))
    except (OSError, ValueError) as exc:
        if need_tokenizer:
            raise FileNotFoundError(f"model {name!r} has no loadable tokenizer: "
                                    f"{_one_line(exc)}") from exc
    return model, tok


def _vocab_size(model) -> int:
    return int(model.config.get_text_config().vocab_size)


def check_pair(target, draft, target_tokenizer=None, draft_tokenizer=None) -> None:
    """Check that ``draft`` can assist ``target`` through transformers' shared-tokenizer path.

    Raises
    ------
    ValueError
        Different ``vocab_size`` in the two configs, or two tokenizers with different
        vocabularies. (transformers would then need ``tokenizer``/``assistant_tokenizer`` and
        its universal assisted decoding, which re-encodes text and is not what specnb measures.)
    """
    vt, vd = _vocab_size(target), _vocab_size(draft)
    if vt != vd and target_tokenizer is not None and draft_tokenizer is not None \
            and target_tokenizer.get_vocab() == draft_tokenizer.get_vocab():
        n = len(target_tokenizer)
        small = "draft" if vt > vd else "target"
        raise ValueError(
            f"mismatched vocabularies, but only the embedding size differs: target and draft "
            f"share one tokenizer ({n} tokens), while the target's embedding has vocab_size = "
            f"{vt} rows and the draft's {vd} (padding rows, as Qwen pairs ship). transformers' "
            "shared-tokenizer assisted decoding compares vocab_size and refuses the pair (it "
            "would ask for tokenizer/assistant_tokenizer and re-encode text), so it cannot be "
            f"measured as is. To measure it, pad the {small}'s embedding to {max(vt, vd)} rows "
            f"and save it: model.resize_token_embeddings({max(vt, vd)}, mean_resizing=False); "
            "model.save_pretrained(folder) (the extra rows are ids the tokenizer never "
            "produces); or use a draft saved with the target's vocab_size.")
    if vt != vd:
        hint = ""
        if target_tokenizer is not None and len(target_tokenizer) <= min(vt, vd):
            hint = (f" If the draft uses the target's tokenizer ({len(target_tokenizer)} tokens) "
                    "and only its embedding is padded to another size, pad the smaller "
                    f"embedding to {max(vt, vd)} rows (model.resize_token_embeddings"
                    f"({max(vt, vd)}, mean_resizing=False); model.save_pretrained(folder)).")
        raise ValueError(
            f"mismatched vocabularies: target vocab_size = {vt}, draft vocab_size = {vd}. "
            "Assisted decoding measured here needs a draft with the target's tokenizer and "
            "vocab_size (e.g. two models of one family, or the bundled pair); pick such a "
            "draft." + hint)
    if target_tokenizer is not None and draft_tokenizer is not None:
        if target_tokenizer.get_vocab() != draft_tokenizer.get_vocab():
            raise ValueError(
                "mismatched vocabularies: target and draft tokenizers have the same size "
                f"({vt}) but different tokens; the draft must share the target's tokenizer")


def model_contexts(target, drafts: dict) -> dict:
    """Positions of every model: ``{"target": n, "draft 'name'": n, ...}`` (None: no limit
    declared). ``drafts`` maps labels to models or to (model, tokenizer) pairs."""
    out = {"target": context_length(target)}
    for name, d in drafts.items():
        out[f"draft {name!r}"] = context_length(d[0] if isinstance(d, tuple) else d)
    return out


def _check_fits(what: str, needed: int, context, advice: str) -> None:
    """Raise a ValueError when ``needed`` positions exceed a model's context. ``context`` is an
    int, None, or a dict from :func:`model_contexts` (the smallest one that is too small is
    named, with the others)."""
    ctx = context if isinstance(context, dict) else {"the model": context}
    small = {k: v for k, v in ctx.items() if v is not None and needed > v}
    if not small:
        return
    who = min(small, key=small.get)
    others = ", ".join(f"{k}: {v}" for k, v in ctx.items() if k != who)
    raise ValueError(f"{what} needs {needed} positions but {who} has a context of {small[who]} "
                     f"positions{f' ({others})' if others else ''}: {advice}")


def context_length(model) -> int | None:
    """The model's number of positions (``max_position_embeddings`` / GPT-2 ``n_positions``),
    or None when the config declares none."""
    cfg = model.config.get_text_config()
    for key in ("max_position_embeddings", "n_positions"):
        v = getattr(cfg, key, None)
        if isinstance(v, int) and v > 0:
            return v
    return None


# --------------------------------------------------------------------------- prompts

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
        No such file.
    ValueError
        A line that is not a JSON object with string ``task`` and ``prompt``; with ``logged``
        a record without ``response``; a record whose ``response`` is empty or not a string,
        whose ``temperature`` is missing or negative, or whose ``response_ids`` are not ids; an
        unknown task in ``tasks``; ``per_task`` < 0; no prompt left.
    """
    path = Path(path) if path is not None else (BUNDLED_LOGGED if logged else BUNDLED_PROMPTS)
    if not path.is_file():
        raise FileNotFoundError(f"prompts file {str(path)!r} does not exist; the bundled one is "
                                f"{BUNDLED_PROMPTS}")
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
            raise ValueError(f"{path}:{n}: each line must be a JSON object with string 'task' and "
                             f"non-empty string 'prompt'; got keys {sorted(obj) if isinstance(obj, dict) else type(obj).__name__}")
        if logged or "response" in obj:
            if logged and "response" not in obj:
                raise ValueError(f"{path}:{n}: logged traffic needs each record's 'response' "
                                 "(the served text) and 'temperature'; this record has none")
            _check_logged(path, n, obj)
        items.append(obj)
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


# --------------------------------------------------------------------------- generation

def _sync(device) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def _first_id(v):
    """The first token id of an id, a list/tuple of ids or a tensor (None when there is none)."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, torch.Tensor):
        v = v.flatten().tolist()
    if isinstance(v, (list, tuple)):
        for x in v:
            x = _first_id(x)
            if x is not None:
                return x
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def pad_token_id(model) -> int | None:
    """The one pad id to pass to ``generate`` (batch size 1: it never pads), from any form
    transformers accepts: ``pad_token_id`` of the generation config (or the model config), else
    the first of ``eos_token_id`` (an int, a list such as Llama 3's ``[128001, 128009]``, or a
    tensor), as ``generate`` itself does; None when the configs name neither."""
    gc = model.generation_config
    cfg = model.config.get_text_config()
    for src, key in ((gc, "pad_token_id"), (cfg, "pad_token_id"), (gc, "eos_token_id"),
                     (cfg, "eos_token_id")):
        v = _first_id(getattr(src, key, None))
        if v is not None:
            return v
    return None


def _sampling_kwargs(temperature: float, model=None) -> dict:
    """generate() kwargs for temperature T. T > 0: sampling at T with the top-k / top-p the
    model's generation_config sets; where it sets none, transformers' library default
    (top_k = 50) is switched off explicitly, so that sampling is pure temperature sampling."""
    if temperature == 0:
        return {"do_sample": False}
    kw = {"do_sample": True, "temperature": float(temperature)}
    gc = getattr(model, "generation_config", None)
    if getattr(gc, "top_k", None) is None:
        kw["top_k"] = 0
    if getattr(gc, "top_p", None) is None:
        kw["top_p"] = 1.0
    return kw


def _generate_kwargs(target, ids, max_new_tokens: int, temperature: float) -> dict:
    kwargs = dict(attention_mask=torch.ones_like(ids), max_new_tokens=int(max_new_tokens),
                  **_sampling_kwargs(temperature, target))
    pad = pad_token_id(target)
    if pad is not None and getattr(target.generation_config, "pad_token_id", None) is None:
        kwargs["pad_token_id"] = pad
    return kwargs


class _Captured(Exception):
    pass


#: Processors that look at the scores only (not at the prefix): applied to all positions at once.
_PREFIX_FREE = frozenset({
    "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper", "MinPLogitsWarper",
    "TypicalLogitsWarper", "EpsilonLogitsWarper", "EtaLogitsWarper",
    "SuppressTokensLogitsProcessor", "InfNanRemoveLogitsProcessor",
})


@dataclass
class Processing:
    """The logits processing ``generate`` applies for one prompt and temperature, as
    transformers builds it from the target's ``generation_config`` (repetition and n-gram
    penalties, bad or suppressed tokens, min length, and at T > 0 temperature, top-k, top-p, ...).

    ``target``: the target's list (what verification applies). ``draft``: the draft's, as
    transformers' assistant builds it: the same list without the min-length processors (the
    assistant's copy of the config drops ``min_length`` / ``min_new_tokens``).
    """

    target: list
    draft: list

    @property
    def empty(self) -> bool:
        return not self.target and not self.draft

    def describe(self) -> list[str]:
        """One string per target processor, e.g. ``RepetitionPenaltyLogitsProcessor(penalty=1.05)``."""
        out = []
        for p in self.target:
            args = {k: v for k, v in vars(p).items()
                    if isinstance(v, (int, float, str)) and not k.startswith("_")}
            inner = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in args.items())
            out.append(f"{type(p).__name__}({inner})"
                       + ("" if p in self.draft else " [target only]"))
        return out


@torch.inference_mode()
def generation_processing(target, input_ids, *, temperature: float = 0.0,
                          max_new_tokens: int = 1) -> Processing:
    """The logits processors ``target.generate`` builds for this prompt, temperature and length
    (taken from transformers itself: ``generate`` is started with the kwargs
    :func:`run_generate` uses and stopped before its first forward, once its processor list is
    built), so that teacher forcing applies exactly what generation and verification apply.

    Parameters
    ----------
    target : causal LM; input_ids : 1-D LongTensor (the prompt);
    temperature : float >= 0; max_new_tokens : int >= 1 (length-dependent processors).

    Returns
    -------
    Processing

    Raises
    ------
    RuntimeError
        This transformers builds its processors elsewhere (the capture found nothing).
    """
    from transformers.generation.logits_process import (MinLengthLogitsProcessor,
                                                        MinNewTokensLengthLogitsProcessor)

    ids = input_ids.to(target.device)[None, :]
    box = {}
    orig = target._get_logits_processor

    def grab(*a, **k):
        box["list"] = orig(*a, **k)
        raise _Captured

    target._get_logits_processor = grab
    try:
        target.generate(ids, **_generate_kwargs(target, ids, max_new_tokens, temperature))
    except _Captured:
        pass
    finally:
        del target._get_logits_processor
    if "list" not in box:
        raise RuntimeError(
            f"could not read the logits processors of transformers {transformers.__version__}'s "
            "generate (no _get_logits_processor call); teacher forcing would not match "
            "generation: use the transformers version in pyproject.toml")
    procs = list(box["list"])
    draft = [p for p in procs
             if not isinstance(p, (MinLengthLogitsProcessor, MinNewTokensLengthLogitsProcessor))]
    return Processing(procs, draft)


def _process(procs: list, full, logits, p0: int):
    """Apply ``procs`` to ``logits`` (n, V) float32, row i predicting ``full[0, p0 + i]`` from
    the prefix ``full[:, :p0 + i]``, as generate applies them one step at a time."""
    if not procs:
        return logits
    n = logits.shape[0]
    full = full.to(logits.device)
    if all(type(p).__name__ in _PREFIX_FREE for p in procs):
        x = logits.clone()
        prefix = full[:, :p0].expand(n, -1)
        for p in procs:
            x = p(prefix, x)
        return x
    rows = []
    for i in range(n):
        x = logits[i:i + 1].clone()
        for p in procs:
            x = p(full[:, :p0 + i], x)
        rows.append(x)
    return torch.cat(rows)


class _RoundStreamer(BaseStreamer):
    """Tokens appended per target forward: generate() puts the prompt once, then once per
    round (assisted: ``n_matches + 1``; plain: 1)."""

    def __init__(self):
        self.lengths, self._seen_prompt = [], False

    def put(self, value):
        if not self._seen_prompt:
            self._seen_prompt = True
            return
        self.lengths.append(int(value.shape[-1]))

    def end(self):
        pass


@contextlib.contextmanager
def _count_forwards(model, counter: list):
    h = model.register_forward_hook(lambda *a: counter.__setitem__(0, counter[0] + 1))
    try:
        yield counter
    finally:
        h.remove()


@contextlib.contextmanager
def _draft_settings(draft, gamma: int):
    """Fixed-gamma drafting, set where transformers reads it: the draft's generation_config."""
    gc = draft.generation_config
    keys = ("num_assistant_tokens", "num_assistant_tokens_schedule",
            "assistant_confidence_threshold")
    old = {k: getattr(gc, k, None) for k in keys}
    gc.num_assistant_tokens = int(gamma)
    gc.num_assistant_tokens_schedule = "constant"
    gc.assistant_confidence_threshold = 0.0
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(gc, k, v)


@dataclass
class GenRun:
    """One ``generate`` call: tokens, wall seconds and counts.

    ``accept_lengths``: tokens appended per target forward (assisted or prompt lookup; for
    plain decoding all 1). ``target_forwards`` / ``draft_forwards``: forward calls counted by
    hooks.
    """

    tokens: list
    wall_s: float
    accept_lengths: list
    target_forwards: int
    draft_forwards: int


@torch.inference_mode()
def run_generate(target, input_ids, *, max_new_tokens: int, temperature: float = 0.0,
                 draft=None, gamma: int | None = None, prompt_lookup: int | None = None,
                 seed: int = 0) -> GenRun:
    """One timed ``target.generate`` call (batch size 1): plain, assisted by ``draft`` at fixed
    ``gamma``, or prompt lookup decoding with ``prompt_lookup`` tokens per draft.

    Parameters
    ----------
    target : a transformers causal LM.
    input_ids : 1-D LongTensor, the prompt.
    max_new_tokens : int >= 1
    temperature : float >= 0 (0 = greedy; else pure temperature sampling, seeded by ``seed``)
    draft : causal LM with the target's vocabulary, optional.
    gamma : int >= 1, required with ``draft``.
    prompt_lookup : int >= 1, optional (``prompt_lookup_num_tokens``; n-gram size 2 by default).

    Returns
    -------
    GenRun

    Raises
    ------
    ValueError
        Both ``draft`` and ``prompt_lookup``, or ``draft`` without ``gamma``.
    """
    if draft is not None and prompt_lookup is not None:
        raise ValueError("pass either draft (assisted decoding) or prompt_lookup, not both")
    if draft is not None and gamma is None:
        raise ValueError("gamma (num_assistant_tokens) is required with a draft")
    device = target.device
    ids = input_ids.to(device)[None, :]
    kwargs = _generate_kwargs(target, ids, max_new_tokens, temperature)
    if prompt_lookup is not None:
        kwargs["prompt_lookup_num_tokens"] = int(prompt_lookup)
    streamer = _RoundStreamer()
    tcount, dcount = [0], [0]
    settings = _draft_settings(draft, gamma) if draft is not None else contextlib.nullcontext()
    dhook = _count_forwards(draft, dcount) if draft is not None else contextlib.nullcontext()
    with settings, _count_forwards(target, tcount), dhook:
        if draft is not None:
            kwargs["assistant_model"] = draft
        if temperature > 0:
            torch.manual_seed(seed)
        _sync(device)
        t0 = time.perf_counter()
        out = target.generate(ids, streamer=streamer, **kwargs)
        _sync(device)
        wall = time.perf_counter() - t0
    tokens = out[0, ids.shape[1]:].tolist()
    return GenRun(tokens, wall, streamer.lengths, tcount[0], dcount[0])


@torch.inference_mode()
def generate_continuation(target, input_ids, *, max_new_tokens: int, temperature: float = 0.0,
                          seed: int = 0) -> list:
    """The target's own continuation (token ids): greedy at T = 0, else pure temperature
    sampling seeded by ``seed``."""
    return run_generate(target, input_ids, max_new_tokens=max_new_tokens,
                        temperature=temperature, seed=seed).tokens


@torch.inference_mode()
def teacher_forced_betas(target, draft, input_ids, continuation, temperature: float = 0.0, *,
                         processing: Processing | None = None):
    """Per-position acceptance beta of ``draft`` along the target's ``continuation``.

    One forward of each model over prompt + continuation (Leviathan et al., section 3.1):

    * T = 0: ``beta_i = 1`` when the draft's argmax at position i equals the target's token
      ``continuation[i]`` (its greedy choice), else 0;
    * T > 0: ``beta_i = sum_x min(p(x), q(x))`` with p, q the target's and the draft's
      next-token distributions (Corollary 3.6: the acceptance probability of speculative
      sampling given the prefix).

    With ``processing`` (:func:`generation_processing`) the logits go through the same
    processors generation and verification apply (the draft's list for the draft, the target's
    for the target; at T > 0 that list holds the temperature and top-k / top-p warpers); without
    it, p and q are the plain softmaxes of logits / T (argmax at T = 0).

    Parameters
    ----------
    target, draft : causal LMs sharing one vocabulary.
    input_ids : 1-D LongTensor, the prompt (P tokens).
    continuation : sequence of N >= 1 token ids (the target's output, or a logged response).
    temperature : float >= 0
    processing : Processing, optional

    Returns
    -------
    ndarray, shape (N,), float64 in [0, 1].

    Raises
    ------
    ValueError
        Empty continuation or negative temperature.
    """
    return teacher_forced_betas_all(target, {"d": draft}, input_ids, continuation, temperature,
                                    processing=processing)["d"]


@torch.inference_mode()
def teacher_forced_betas_all(target, drafts: dict, input_ids, continuation,
                             temperature: float = 0.0, *, processing: Processing | None = None):
    """:func:`teacher_forced_betas` for several drafts at once: at T > 0 the target's forward
    pass and distributions are computed once and shared; at T = 0 the target is not run at all
    (its tokens are the continuation). ``drafts`` maps labels to models; returns
    ``{label: betas}``."""
    t = float(_check.real("temperature", temperature, lo=0.0))
    cont = torch.as_tensor(list(continuation), dtype=torch.long)
    if cont.numel() == 0:
        raise ValueError("continuation must hold at least one token, got none")
    full = torch.cat([input_ids.cpu(), cont])[None, :]
    p0, n = input_ids.numel(), cont.numel()
    proc = processing if processing is not None and not processing.empty else None
    p = None
    if t > 0:
        dev = target.device
        lt = target(input_ids=full.to(dev), attention_mask=torch.ones_like(full).to(dev)
                    ).logits[0, p0 - 1:p0 - 1 + n].float()
        lt = _process(proc.target, full, lt, p0) if proc else lt / t
        p = torch.softmax(lt, dim=-1)
    out = {}
    for name, draft in drafts.items():
        dev = draft.device
        ld = draft(input_ids=full.to(dev), attention_mask=torch.ones_like(full).to(dev)
                   ).logits[0, p0 - 1:p0 - 1 + n].float()
        if proc:
            ld = _process(proc.draft, full, ld, p0)
        elif t > 0:
            ld = ld / t
        if t == 0:
            # the greedy continuation IS the target's (processed) argmax: no target forward
            beta = (ld.argmax(-1) == cont.to(ld.device)).double()
        else:
            q = torch.softmax(ld.to(p.device), dim=-1)
            beta = torch.minimum(p, q).sum(-1).double().clamp(0.0, 1.0)
        out[name] = beta.cpu().numpy()
    return out


@torch.inference_mode()
def forward_time(models, input_ids, *, steps: int = 32, repeats: int = 3):
    """Median seconds of one single-token forward with a KV cache (a decoding step), after a
    prefill over ``input_ids``.

    With several models the steps are interleaved (model 1, model 2, ..., model 1, ...) so that
    every model sees the same machine load; the cost coefficient c of Theorem 3.8 is then the
    ratio of two medians measured side by side. ``repeats`` rounds of ``steps`` steps each,
    after one untimed warm-up round.

    Parameters
    ----------
    models : a causal LM, or a list of them.
    input_ids : 1-D LongTensor, the context to prefill.
    steps : int >= 1; repeats : int >= 1.

    Returns
    -------
    float (one model) or list of floats (seconds per forward, in the order of ``models``).
    """
    single = not isinstance(models, (list, tuple))
    ms = [models] if single else list(models)
    steps = _check.scalar_int("steps", steps, lo=1)
    repeats = _check.scalar_int("repeats", repeats, lo=1)
    times = [[] for _ in ms]
    for r in range(repeats + 1):
        state = []
        for model in ms:
            out = model(input_ids=input_ids.to(model.device)[None, :], use_cache=True)
            cache = out.cache if getattr(out, "cache", None) is not None else out.past_key_values
            state.append([cache, out.logits[:, -1:].argmax(-1)])
        for _ in range(steps):
            for j, model in enumerate(ms):
                cache, nxt = state[j]
                _sync(model.device)
                t0 = time.perf_counter()
                out = model(input_ids=nxt, cache=cache, use_cache=True)
                _sync(model.device)
                if r > 0:
                    times[j].append(time.perf_counter() - t0)
                state[j][1] = out.logits[:, -1:].argmax(-1)
    med = [float(statistics.median(t)) for t in times]
    return med[0] if single else med


def short_names(names) -> list[str]:
    """Unique short labels for model paths or hub ids: the last path component, or more
    components where two would collide (``a/draft``, ``b/draft``)."""
    parts = [str(n).rstrip("/").split("/") for n in names]
    out = []
    for p in parts:
        k = 1
        while k < len(p) and sum(q[-k:] == p[-k:] for q in parts) > 1:
            k += 1
        out.append("/".join(p[-k:]))
    return out


# --------------------------------------------------------------------------- the measurement

@dataclass
class Measurement:
    """Everything :func:`measure` found (pandas DataFrames, one row per ...).

    * ``betas``: (draft, temperature, prompt): task, positions, sum of betas, the sequence.
    * ``alpha``: (draft, temperature, task incl. ``"all"``): alpha, 95% CI, prompts, positions.
    * ``runs``: every generate call: method (plain / plain_short / assisted / pld; plain_short
      is plain decoding of max_new_tokens // 2 tokens, timed only for the timing model), draft, gamma,
      temperature, prompt, repeat, wall_s, new_tokens, target/draft forwards, rounds, tau,
      lossless (greedy only).
    * ``summary``: (draft, gamma, temperature): alpha, alpha_counted, tau_measured,
      tau_predicted (Eq. 1), tau_betas (no i.i.d.), speedup_measured, speedup_predicted
      (Thm 3.8 with c), speedup_betas, speedup_timing_model (the fitted timing model's
      predicted wall times of the same calls, per-call cost included), speedup_predicted_loo
      (leave one gamma out: the timing model fitted without this gamma's runs, applied to the
      rounds the teacher-forced betas imply at this gamma; what a user can predict before
      running a gamma; NaN with a single gamma), c, lossless.
    * ``pld``: (gamma, temperature, task incl. ``"all"``): tau, speedup, lossless.
    * ``timing``: (draft): the timing model fitted jointly to all drafts' runs
      (:func:`specnb.acceptance.fit_timing_models`: t_call, t_target and t_round shared, t_draft
      per draft, all >= 0, in s), c_fit, r2, ``warnings`` (what the runs could not identify,
      "" when nothing); and the directly timed forwards t_target_forward, t_draft_forward, c.
    * ``config``: the arguments, model paths, device, dtype and library versions.
    """

    betas: pd.DataFrame
    alpha: pd.DataFrame
    runs: pd.DataFrame
    summary: pd.DataFrame
    pld: pd.DataFrame
    timing: pd.DataFrame
    config: dict = field(default_factory=dict)

    @property
    def lossless(self) -> bool | None:
        """True when every greedy assisted / prompt-lookup output equalled plain greedy output
        (None when no greedy run was made)."""
        v = self.runs.loc[self.runs["method"] != "plain", "lossless"].dropna()
        return None if v.empty else bool(v.all())

    def to_json(self) -> dict:
        """One JSON-able object. The keys ``draft``, ``gamma``, ``temperature``, ``alpha``,
        ``alpha_counted``, ``tau_measured``, ``tau_predicted``, ``tau_betas``,
        ``speedup_measured``, ``speedup_predicted``, ``speedup_betas``,
        ``speedup_timing_model``, ``speedup_predicted_loo``, ``c`` and ``lossless`` are aligned
        lists, one entry per summary row (draft x gamma x temperature); ``lossless_all`` is the
        overall verdict; ``alpha_by_task``, ``pld`` and ``timing`` are lists of records;
        ``config`` as run."""
        obj = _columns(self.summary)
        obj["lossless_all"] = self.lossless
        obj["alpha_by_task"] = _records(self.alpha)
        obj["pld"] = _records(self.pld)
        obj["timing"] = _records(self.timing)
        obj["config"] = self.config
        return obj


def _plain(v):
    if isinstance(v, (np.floating, float)):
        return None if math.isnan(float(v)) else float(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    if v is pd.NA:
        return None
    return v


def _columns(df: pd.DataFrame) -> dict:
    """``{column: [plain values]}``: a table as aligned JSON-able lists."""
    return {k: [_plain(v) for v in df[k].tolist()] for k in df.columns}


def _records(df: pd.DataFrame) -> list:
    return [{k: _plain(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def _as_list(x, name):
    if x is None:
        return None
    if isinstance(x, (str, Path)):
        return [x]
    x = list(x)
    if not x:
        raise ValueError(f"{name} must name at least one value, got none")
    return x


def measure(target=None, drafts=None, *, prompts=None, tasks=None, per_task: int | None = 2,
            gammas=(1, 2, 3, 5), temperatures=(0.0, 1.0), max_new_tokens: int = 48,
            device: str = "auto", dtype: str = "auto", repeats: int = 2, warmup: int = 1,
            pld: bool = True, chat_template="auto", seed: int = 0, progress: bool = True,
            cpu_threads: int | None = 1, models: dict | None = None) -> Measurement:
    """Measure alpha, tau and speedup of ``drafts`` against ``target`` on ``prompts``.

    Parameters
    ----------
    target : str or Path, optional
        Local folder or hub id; defaults to the bundled :data:`BUNDLED_TARGET`.
    drafts : str, Path or list of them, optional
        One or more drafts sharing the target's vocabulary; defaults to the bundled drafts
        (two sizes, for Leviathan's draft-size trade).
    prompts : str, Path or list of dict, optional
        A JSON-lines file (see :func:`load_prompts`) or already loaded prompts; defaults to the
        bundled held-out prompts.
    tasks, per_task : see :func:`load_prompts` (``per_task`` 2 by default; 0 or None = all).
    gammas : ints >= 1
        Draft lengths (``num_assistant_tokens`` / ``num_speculative_tokens``).
    temperatures : floats >= 0
        0 = greedy. Timings, the timing model and the losslessness check use every
        temperature's runs; lossless is checked at 0 only.
    max_new_tokens : int >= 1
    device : ``"auto"``, ``"cpu"``, ``"cuda"``; dtype : ``"auto"``, ``"float32"``,
        ``"bfloat16"``, ``"float16"``.
    repeats : int >= 1, timed runs per prompt and setting (median kept).
    warmup : int >= 0, untimed calls of each setting on the first prompt first.
    pld : bool, also run prompt lookup decoding (``prompt_lookup_num_tokens = gamma``).
    chat_template : ``"auto"``, True or False (see :func:`encode_prompts`).
    seed : int >= 0, seeds sampling (each prompt and temperature gets its own derived seed).
    progress : bool, show a tqdm progress bar.
    cpu_threads : int >= 1 or None
        torch threads while measuring on a CPU (restored afterwards). 1 by default: with tiny
        models a decoding step is overhead-bound, so more threads gain little, and when other
        processes share the cores a multi-threaded forward stalls at every OpenMP barrier (we
        saw single calls slow down 100x on a shared 2-core machine). None keeps torch's setting.
    models : dict, optional
        Already loaded ``{"target": (model, tokenizer), "drafts": {name: (model, tok)}}``, to
        skip loading (the notebook and tests reuse them).

    Returns
    -------
    Measurement

    Raises
    ------
    ValueError
        Bad gammas/temperatures/max_new_tokens/repeats; mismatched vocabularies; a prompt too
        long for the target's context (see :func:`encode_prompts`).
    FileNotFoundError
        A missing model folder or prompts file.
    """
    gam = [int(g) for g in _check.integer("gammas", _as_list(gammas, "gammas"), lo=1)]
    temps = [float(t) for t in _check.real("temperatures", _as_list(temperatures, "temperatures"),
                                           lo=0.0)]
    mnt = _check.scalar_int("max_new_tokens", max_new_tokens, lo=1)
    reps = _check.scalar_int("repeats", repeats, lo=1)
    warm = _check.scalar_int("warmup", warmup, lo=0)
    seed = _check.scalar_int("seed", seed, lo=0)
    prompt_items, prompts_src = _prompts(prompts, tasks, per_task)  # before any model loads
    tmodel, ttok, dmodels, target_name, (dev, torch_dtype) = _load(target, drafts, models,
                                                                   device, dtype)
    ids = encode_prompts(ttok, prompt_items, max_new_tokens=mnt,
                         context=model_contexts(tmodel, dmodels), chat_template=chat_template)
    n_p = len(prompt_items)

    # ---- progress
    n_calls = len(temps) * n_p * (1 + len(dmodels)) + reps * len(temps) * n_p * (
        1 + (mnt >= 4) + len(dmodels) * len(gam) + (len(gam) if pld else 0))
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=n_calls, desc="specnb measure", unit="call")

    def tick():
        if bar is not None:
            bar.update(1)

    try:
        with _run_settings(dev, cpu_threads, "cpu_threads (--threads on the command line, "
                                              "where 0 = torch's setting)"):
            return _measure(tmodel, dmodels, prompt_items, ids, gam, temps, mnt, reps, warm, pld,
                            seed, dev, torch_dtype, tick, dict(processing={},
                                target=target_name, drafts=list(dmodels), prompts=prompts_src,
                                n_prompts=n_p,
                                tasks=list(dict.fromkeys(p["task"] for p in prompt_items)),
                                gammas=gam, temperatures=temps, max_new_tokens=mnt, repeats=reps,
                                warmup=warm, device=dev,
                                dtype=str(torch_dtype).replace("torch.", ""),
                                seed=seed, chat_template=chat_template,
                                versions={"torch": torch.__version__,
                                          "transformers": transformers.__version__},
                                torch_threads=torch.get_num_threads()))
    finally:
        if bar is not None:
            bar.close()


def _fit_timing(runs, is_assisted):
    """:func:`specnb.acceptance.fit_timing_models` on plain and assisted ``runs`` (draft
    forwards, rounds and draft name count for the assisted ones only)."""
    return acc.fit_timing_models(runs["wall_s"], runs["target_forwards"],
                                 np.where(is_assisted, runs["draft_forwards"], 0),
                                 np.where(is_assisted, runs["rounds"], 0),
                                 drafts=np.where(is_assisted,
                                                 runs["draft"].fillna("").astype(str), ""))


def _plain_rate(model, runs, t):
    """tokens/s the timing model predicts for the plain calls at temperature ``t``."""
    plain = runs[(runs["method"] == "plain") & (runs["temperature"] == t)]
    return plain["new_tokens"].sum() / model.predict(plain["target_forwards"], 0, 0).sum()


def _model_speedup(model, assisted_runs, runs, t):
    """tokens/s the timing model predicts for these assisted calls over what it predicts for the
    plain calls at temperature ``t`` (the per-call cost included, like the measured speedup)."""
    if model is None:
        return np.nan
    pa = model.predict(assisted_runs["target_forwards"], assisted_runs["draft_forwards"],
                       assisted_runs["rounds"]).sum()
    return float((assisted_runs["new_tokens"].sum() / pa) / _plain_rate(model, runs, t))


def _loo_speedup(model, betas, runs, dname, gamma, t, mnt):
    """Speedup at ``gamma`` predicted by a timing model fitted without that gamma's runs: the
    target forwards and draft forwards come from the teacher-forced betas
    (:func:`specnb.acceptance.expected_round_counts`; exact greedy rounds at T = 0), the plain
    rate from the plain runs (which every gamma shares)."""
    seqs = [b for b in betas[(betas["draft"] == dname) & (betas["temperature"] == t)]["betas"]
            if len(b)]
    if not seqs:
        return np.nan
    counts = [acc.expected_round_counts(b, gamma, mnt) for b in seqs]
    tokens = sum(len(b) for b in seqs)
    wall = sum(float(model.predict(r, d, r)) for r, d in counts)
    return float((tokens / wall) / _plain_rate(model, runs, t))


@contextlib.contextmanager
def _run_settings(dev, cpu_threads, name: str):
    """transformers' logging at errors only, and ``cpu_threads`` torch threads on a CPU
    (checked first, named ``name``); both restored on exit."""
    n = _check.scalar_int(name, cpu_threads, lo=1) if cpu_threads is not None and dev == "cpu" \
        else None
    verbosity = transformers.logging.get_verbosity()
    threads = torch.get_num_threads()
    transformers.logging.set_verbosity_error()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        transformers.logging.set_verbosity(verbosity)


def _seed_for(seed, ti, pi):
    return seed * 1_000_003 + ti * 10_007 + pi


def _teacher_forcing(tmodel, dmodels, prompts, ids, temps, mnt, seed, tick, processing=None):
    """Continuations, betas (processed as generation processes), alpha per task. Appends the
    processors used at each temperature to ``processing`` (a dict) when given."""
    conts, beta_rows = {}, []
    drafts = {name: dm for name, (dm, _) in dmodels.items()}
    for ti, t in enumerate(temps):
        for pi, p in enumerate(prompts):
            conts[(t, pi)] = generate_continuation(tmodel, ids[pi], max_new_tokens=mnt,
                                                   temperature=t, seed=_seed_for(seed, ti, pi))
            tick()
            for row in _beta_rows(tmodel, drafts, p, ids[pi], conts[(t, pi)], t, mnt,
                                  processing):
                beta_rows.append(row)
                tick()
    betas = pd.DataFrame(beta_rows)
    return conts, betas, _alpha_table(betas, ["draft", "temperature"], seed)


def _beta_rows(tmodel, drafts: dict, item: dict, prompt_ids, continuation, t: float,
               max_new_tokens: int, processing: dict | None) -> list[dict]:
    """One betas row per draft for one prompt and its continuation at temperature ``t``, the
    logits processed as ``generate`` processes them (:func:`generation_processing`, noted per
    temperature in ``processing`` when given). An empty continuation (the target ended at
    once: an end-of-sequence token first) gives rows with no position."""
    proc = generation_processing(tmodel, prompt_ids, temperature=t,
                                 max_new_tokens=max_new_tokens)
    if processing is not None:
        processing.setdefault(f"{t:g}", proc.describe())
    if len(continuation):
        bs = teacher_forced_betas_all(tmodel, drafts, prompt_ids, continuation, t,
                                      processing=proc)
    else:
        bs = {name: np.zeros(0) for name in drafts}
    return [dict(draft=dname, temperature=t, prompt=item["id"], task=item["task"],
                 positions=int(b.size), beta_sum=float(b.sum()), betas=b)
            for dname, b in bs.items()]


def _alpha_table(betas: pd.DataFrame, keys: list, seed: int) -> pd.DataFrame:
    """alpha per ``keys`` and task (and ``"all"``) with a cluster-bootstrap 95% CI over prompts;
    prompts with no position are left out (NaN when none is left)."""
    rows = []
    for key, g in betas.groupby(keys, sort=False):
        g = g[g["positions"] > 0]
        for task, gg in [*g.groupby("task", sort=False), ("all", g)]:
            if len(gg):
                est, lo, hi = acc.ratio_ci(gg["beta_sum"], gg["positions"], seed=seed)
            else:
                est = lo = hi = float("nan")
            rows.append(dict(zip(keys, key if isinstance(key, tuple) else (key,)), task=task,
                             alpha=est, ci_low=lo, ci_high=hi, prompts=len(gg),
                             positions=int(gg["positions"].sum())))
    return pd.DataFrame(rows)


def alpha_by_teacher_forcing(target=None, drafts=None, *, prompts=None, tasks=None,
                             per_task: int | None = None, temperatures=(0.0, 1.0),
                             max_new_tokens: int = 48, device: str = "auto", dtype: str = "auto",
                             seed: int = 0, models: dict | None = None):
    """Step 1 of :func:`measure` alone: alpha per draft, temperature and task family by teacher
    forcing (no timed runs). Arguments as in :func:`measure`.

    Returns
    -------
    (alpha, betas) : DataFrames as in :class:`Measurement` (``alpha`` with a 95% cluster-bootstrap
    CI over prompts).
    """
    temps = [float(t) for t in _check.real("temperatures", _as_list(temperatures, "temperatures"),
                                           lo=0.0)]
    mnt = _check.scalar_int("max_new_tokens", max_new_tokens, lo=1)
    seed = _check.scalar_int("seed", seed, lo=0)
    items, _ = _prompts(prompts, tasks, per_task)
    tmodel, ttok, dmodels, _, _ = _load(target, drafts, models, device, dtype)
    ids = encode_prompts(ttok, items, max_new_tokens=mnt, context=model_contexts(tmodel, dmodels))
    _, betas, alpha = _teacher_forcing(tmodel, dmodels, items, ids, temps, mnt, seed, lambda: None)
    return alpha, betas


def _load(target, drafts, models, device, dtype):
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    if models is not None:
        tmodel, ttok = models["target"]
        dmodels = dict(models["drafts"])
        target_name = str(models.get("target_name", "target"))
    else:
        target_name = str(target if target is not None else BUNDLED_TARGET)
        tmodel, ttok = load_model(target_name, device=dev, dtype=torch_dtype)
        dlist = _as_list(drafts, "drafts") or list(BUNDLED_DRAFTS)
        dmodels = {label: load_model(d, device=dev, dtype=torch_dtype, need_tokenizer=False)
                   for label, d in zip(short_names(dlist), dlist)}
    for dm, dt in dmodels.values():
        check_pair(tmodel, dm, ttok, dt)
    return tmodel, ttok, dmodels, target_name, (dev, torch_dtype)


def _prompts(prompts, tasks, per_task):
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


def _measure(tmodel, dmodels, prompts, ids, gammas, temps, mnt, reps, warm, pld, seed, dev,
             torch_dtype, tick, config) -> Measurement:
    # ---- 1. continuations and teacher-forced betas
    conts, betas, alpha = _teacher_forcing(tmodel, dmodels, prompts, ids, temps, mnt, seed, tick,
                                           config["processing"])

    # ---- 2. c: decoding-step forward times, measured side by side
    fwd = forward_time([tmodel] + [dm for dm, _ in dmodels.values()], ids[0])
    t_target, t_draft = fwd[0], dict(zip(dmodels, fwd[1:]))

    # ---- 3. timed runs, interleaved: repeat -> temperature -> prompt -> setting
    settings = [("plain", None, None)]
    if mnt >= 4:  # plain calls of two lengths separate the per-call cost from t_target
        settings.append(("plain_short", None, None))
    settings += [("assisted", d, g) for d in dmodels for g in gammas]
    if pld:
        settings += [("pld", None, g) for g in gammas]

    def call(method, dname, g, pi, t, ti):
        kw = dict(max_new_tokens=mnt, temperature=t, seed=_seed_for(seed, ti, pi))
        if method == "assisted":
            return run_generate(tmodel, ids[pi], draft=dmodels[dname][0], gamma=g, **kw)
        if method == "pld":
            return run_generate(tmodel, ids[pi], prompt_lookup=g, **kw)
        if method == "plain_short":
            kw["max_new_tokens"] = mnt // 2
        return run_generate(tmodel, ids[pi], **kw)

    for _ in range(warm):
        for method, dname, g in settings:
            call(method, dname, g, 0, temps[0], 0)
    run_rows = []
    for r in range(reps):
        for ti, t in enumerate(temps):
            for pi, p in enumerate(prompts):
                for method, dname, g in settings:
                    run = call(method, dname, g, pi, t, ti)
                    tick()
                    lossless = None
                    if t == 0 and method not in ("plain", "plain_short"):
                        lossless = run.tokens == conts[(t, pi)]
                    rounds = len(run.accept_lengths)
                    plain = method in ("plain", "plain_short")
                    if not plain and rounds != run.target_forwards:
                        raise RuntimeError(
                            f"internal check failed: {rounds} streamed rounds but "
                            f"{run.target_forwards} target forwards ({method}, gamma {g})")
                    run_rows.append(dict(
                        method=method, draft=dname, gamma=g, temperature=t, prompt=p["id"],
                        task=p["task"], repeat=r, wall_s=run.wall_s, new_tokens=len(run.tokens),
                        target_forwards=run.target_forwards, draft_forwards=run.draft_forwards,
                        rounds=rounds if not plain else 0,
                        tau=len(run.tokens) / rounds if rounds else float("nan"),
                        accept_lengths=run.accept_lengths, lossless=lossless))
    runs = pd.DataFrame(run_rows)
    runs["lossless"] = runs["lossless"].astype(object)

    # per prompt and setting: median wall time over repeats
    key = ["method", "draft", "gamma", "temperature", "prompt", "task"]
    med = (runs.assign(draft=runs["draft"].fillna(""), gamma=runs["gamma"].fillna(0))
           .groupby(key, sort=False)
           .agg(wall_s=("wall_s", "median"), new_tokens=("new_tokens", "median"))
           .reset_index())

    def tok_per_s(frame):
        return float(frame["new_tokens"].sum() / frame["wall_s"].sum())

    def all_lossless(frame):  # None when no greedy run
        ll = frame["lossless"].dropna()
        return bool(ll.all()) if len(ll) else None

    def base_rate(t, task=None):
        f = med[(med["method"] == "plain") & (med["temperature"] == t)]
        if task is not None:
            f = f[f["task"] == task]
        return tok_per_s(f)

    # ---- 4. one timing model for all drafts (all temperatures; plain + assisted runs):
    # shared target-side times, one draft time per draft, all >= 0
    f = runs[runs["method"].isin(["plain", "plain_short", "assisted"])]
    is_a = (f["method"] == "assisted").to_numpy()
    fit = _fit_timing(f, is_a)
    timing_rows, models_fit = [], {}
    for dname in dmodels:
        row = dict(draft=dname, t_target_forward=t_target, t_draft_forward=t_draft[dname],
                   c=t_draft[dname] / t_target)
        m = fit.model(dname)
        if m.t_target > 0:
            models_fit[dname] = m
        row.update(t_call=m.t_call, t_target=m.t_target, t_draft=m.t_draft,
                   t_round=m.t_round, c_fit=m.c, r2=m.r2, warnings="; ".join(m.warnings))
        timing_rows.append(row)
    timing = pd.DataFrame(timing_rows)

    # ---- 4b. leave one gamma out: fit without that gamma's runs, predict its speedup from
    # the rounds the teacher-forced betas imply at that gamma (no run at that gamma used)
    loo = {}
    if len(gammas) > 1:
        for g in gammas:
            keep = ~(is_a & (f["gamma"] == g).to_numpy())
            fit_g = _fit_timing(f[keep], is_a[keep])
            for dname in dmodels:
                if dname not in fit_g.t_draft:
                    continue
                m = fit_g.model(dname)
                if not m.t_target > 0:
                    continue
                for t in temps:
                    loo[(dname, g, t)] = _loo_speedup(m, betas, runs, dname, g, t, mnt)

    # ---- 5. summary: prediction beside measurement
    summary_rows = []
    for dname in dmodels:
        c = t_draft[dname] / t_target
        for t in temps:
            bseq = list(betas[(betas["draft"] == dname) & (betas["temperature"] == t)]["betas"])
            a_row = alpha[(alpha["draft"] == dname) & (alpha["temperature"] == t)
                          & (alpha["task"] == "all")].iloc[0]
            for g in gammas:
                fr = runs[(runs["method"] == "assisted") & (runs["draft"] == dname)
                          & (runs["gamma"] == g) & (runs["temperature"] == t)]
                rounds = [acc.rounds_from_accept_lengths(al, g, mnt) for al in fr["accept_lengths"]]
                tau_meas = float(fr["new_tokens"].sum() / fr["rounds"].sum())
                fm = med[(med["method"] == "assisted") & (med["draft"] == dname)
                         & (med["gamma"] == g) & (med["temperature"] == t)]
                tau_pred = theory.expected_tokens_per_step(a_row["alpha"], g)
                tau_b = acc.tau_from_betas(bseq, g, mnt)
                rate, rate_plain = tok_per_s(fm), base_rate(t)
                summary_rows.append(dict(
                    draft=dname, gamma=g, temperature=t, alpha=a_row["alpha"],
                    alpha_ci_low=a_row["ci_low"], alpha_ci_high=a_row["ci_high"],
                    alpha_counted=acc.alpha_from_rounds(rounds),
                    draft_acceptance_rate=acc.draft_acceptance_rate(rounds),
                    tau_measured=tau_meas, tau_predicted=tau_pred, tau_betas=tau_b,
                    speedup_measured=rate / rate_plain,
                    speedup_predicted=theory.walltime_speedup(a_row["alpha"], g, c),
                    speedup_betas=acc.speedup_from_tau(tau_b, g, c),
                    speedup_timing_model=_model_speedup(models_fit.get(dname), fr, runs, t),
                    speedup_predicted_loo=loo.get((dname, g, t), np.nan),
                    c=c, tokens_per_s=rate, tokens_per_s_plain=rate_plain,
                    target_forwards=int(fr["target_forwards"].sum()),
                    draft_forwards=int(fr["draft_forwards"].sum()),
                    lossless=all_lossless(fr)))
    summary = pd.DataFrame(summary_rows)
    summary["lossless"] = summary["lossless"].astype(object)

    # ---- 6. prompt lookup decoding by task
    pld_rows = []
    if pld:
        for t in temps:
            for g in gammas:
                fr = runs[(runs["method"] == "pld") & (runs["gamma"] == g)
                          & (runs["temperature"] == t)]
                fm = med[(med["method"] == "pld") & (med["gamma"] == g)
                         & (med["temperature"] == t)]
                for task in [*dict.fromkeys(fr["task"]), "all"]:
                    sel = fr if task == "all" else fr[fr["task"] == task]
                    selm = fm if task == "all" else fm[fm["task"] == task]
                    pld_rows.append(dict(
                        gamma=g, temperature=t, task=task,
                        tau=float(sel["new_tokens"].sum() / sel["rounds"].sum()),
                        speedup=tok_per_s(selm) / base_rate(t, None if task == "all" else task),
                        lossless=all_lossless(sel)))
    pld_df = pd.DataFrame(pld_rows)
    return Measurement(betas=betas, alpha=alpha, runs=runs, summary=summary, pld=pld_df,
                       timing=timing, config=config)


def processing_note(config: dict) -> str:
    """One sentence saying which logits processing (from the target's ``generation_config``)
    a :class:`Measurement` or :class:`LoggedAlpha` applied, per temperature."""
    proc = config.get("processing") or {}
    if not any(proc.values()):
        return ("logits processing from the target's generation_config: none (plain argmax at "
                "T = 0, pure temperature sampling at T > 0)")
    return ("logits processing from the target's generation_config, applied identically in "
            "generation and teacher forcing (min length on the target only, as transformers' "
            "assistant drops it): " + "; ".join(f"T={t}: {', '.join(v) or 'none'}"
                                                for t, v in proc.items()))


# --------------------------------------------------------------------------- logged traffic

@dataclass
class LoggedAlpha:
    """What :func:`alpha_from_logged` found (pandas DataFrames).

    * ``betas``: (draft, temperature, prompt): task, positions, sum of betas, the sequence.
    * ``alpha``: (draft, temperature, task incl. ``"all"``): alpha, 95% CI over prompts.
    * ``summary``: (draft, gamma, temperature): alpha with its CI; ``alpha_rounds`` (T = 0: the
      accepted / examined draft tokens of the exact greedy rounds the betas imply at this gamma,
      what counting assisted-decoding runs gives; NaN at T > 0, where runs draw their own
      path); ``tau_betas`` (expected tokens per target forward from the betas, no i.i.d.
      assumption); ``tau_predicted`` (Eq. 1); with timing, ``c`` (single-forward times),
      ``speedup_predicted`` (Theorem 3.8) and ``speedup_betas``.
    * ``config``: arguments, processing applied, seconds spent in the forward passes.
    """

    betas: pd.DataFrame
    alpha: pd.DataFrame
    summary: pd.DataFrame
    config: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """Aligned lists, one entry per summary row (``draft``, ``gamma``, ``temperature``,
        ``alpha``, ``alpha_ci_low``, ``alpha_ci_high``, ``alpha_rounds``, ``tau_betas``,
        ``tau_predicted``, ...), plus ``alpha_by_task`` records and ``config``."""
        obj = _columns(self.summary)
        obj["alpha_by_task"] = _records(self.alpha)
        obj["config"] = self.config
        return obj


def alpha_from_logged(target=None, drafts=None, *, prompts=None, tasks=None,
                      per_task: int | None = None, gammas=(1, 2, 3, 5), device: str = "auto",
                      dtype: str = "auto", chat_template="auto", timing: bool = True,
                      seed: int = 0, cpu_threads: int | None = 1,
                      models: dict | None = None) -> LoggedAlpha:
    """alpha of every draft, at every gamma, from logged traffic: one forward pass of each
    model over each logged prompt + response, no generation.

    How to measure alpha on real traffic: the request log already holds what the target served.
    Along that path (the served tokens), teacher forcing gives beta per position (Leviathan et
    al., section 3.1; Corollary 3.6): at T = 0 the served token is the target's greedy choice,
    so only the drafts run (beta = draft's processed argmax equals the served token); at T > 0
    one target pass gives p, shared by all drafts (beta = sum min(p, q)). The target's
    ``generation_config`` processing is applied as in generation (:func:`generation_processing`).
    Rounds at any gamma follow from the betas (:mod:`specnb.acceptance`), so the whole
    (draft x gamma) grid costs one pass per model. Logged responses at T = 0 that were not the
    target's own greedy output (another model, other processing) measure agreement with that
    text instead.

    Parameters
    ----------
    target, drafts : as in :func:`measure`.
    prompts : str or Path, optional
        JSON lines with ``task``, ``prompt``, ``response``, ``temperature`` (optionally
        ``response_ids``), see :func:`load_prompts`; defaults to :data:`BUNDLED_LOGGED`.
    tasks, per_task : see :func:`load_prompts` (all records by default).
    gammas : ints >= 1.
    device, dtype, chat_template : as in :func:`measure` (the prompt must be encoded as it was
        served: the chat template is applied when the tokenizer has one, unless False).
    timing : bool, also time single forwards for c and Theorem 3.8's speedup.
    seed : int >= 0 (bootstrap); cpu_threads : as in :func:`measure`; models : as in
        :func:`measure`.

    Returns
    -------
    LoggedAlpha

    Raises
    ------
    ValueError
        Bad gammas; a bad record (empty response, missing temperature, ...), found before any
        model loads; a response with ids outside the vocabulary or longer than a model's
        context; mismatched vocabularies.
    FileNotFoundError
        A missing model folder or file.
    """
    gam = [int(g) for g in _check.integer("gammas", _as_list(gammas, "gammas"), lo=1)]
    seed = _check.scalar_int("seed", seed, lo=0)
    src = Path(prompts) if prompts is not None else BUNDLED_LOGGED
    items = load_prompts(src, tasks=tasks, per_task=per_task, logged=True)  # before loading
    tmodel, ttok, dmodels, target_name, (dev, torch_dtype) = _load(target, drafts, models,
                                                                   device, dtype)
    contexts = model_contexts(tmodel, dmodels)
    ids = encode_prompts(ttok, items, max_new_tokens=0, context=contexts,
                         chat_template=chat_template)
    resp = encode_responses(ttok, items, ids, context=contexts, vocab_size=_vocab_size(tmodel))
    drafts_m = {name: dm for name, (dm, _) in dmodels.items()}
    processing, rows = {}, []
    with _run_settings(dev, cpu_threads, "cpu_threads"):
        _sync(dev)
        t0 = time.perf_counter()
        for it, pids, rids in zip(items, ids, resp):
            t = float(it["temperature"])
            rows += _beta_rows(tmodel, drafts_m, it, pids, rids, t, rids.numel(), processing)
        _sync(dev)
        pass_s = time.perf_counter() - t0
        c = {}
        if timing:
            fwd = forward_time([tmodel] + list(drafts_m.values()), ids[0])
            c = {d: fwd[1 + i] / fwd[0] for i, d in enumerate(drafts_m)}
    betas = pd.DataFrame(rows)
    alpha = _alpha_table(betas, ["draft", "temperature"], seed)
    summary = []
    for (dname, t), g in betas.groupby(["draft", "temperature"], sort=False):
        a = alpha[(alpha["draft"] == dname) & (alpha["temperature"] == t)
                  & (alpha["task"] == "all")].iloc[0]
        seqs = list(g["betas"])
        for gamma in gam:
            row = dict(draft=dname, gamma=gamma, temperature=t, alpha=a["alpha"],
                       alpha_ci_low=a["ci_low"], alpha_ci_high=a["ci_high"],
                       alpha_rounds=(acc.alpha_from_rounds([acc.greedy_rounds(b, gamma)
                                                            for b in seqs])
                                     if t == 0 else np.nan),
                       tau_betas=acc.tau_from_betas(seqs, gamma),
                       tau_predicted=theory.expected_tokens_per_step(a["alpha"], gamma))
            if timing:
                row.update(c=c[dname],
                           speedup_predicted=theory.walltime_speedup(a["alpha"], gamma, c[dname]),
                           speedup_betas=acc.speedup_from_tau(row["tau_betas"], gamma, c[dname]))
            summary.append(row)
    config = dict(mode="logged", target=target_name, drafts=list(dmodels), prompts=str(src),
                  n_records=len(items), tasks=list(dict.fromkeys(i["task"] for i in items)),
                  temperatures=sorted({float(i["temperature"]) for i in items}), gammas=gam,
                  device=dev, dtype=str(torch_dtype).replace("torch.", ""),
                  chat_template=chat_template, processing=processing,
                  forward_pass_s=pass_s, positions=int(betas["positions"].sum()) // max(1, len(drafts_m)),
                  versions={"torch": torch.__version__, "transformers": transformers.__version__})
    return LoggedAlpha(betas=betas, alpha=alpha, summary=pd.DataFrame(summary), config=config)


def logged_responses(target, tokenizer, prompts, *, temperatures=(0.0, 1.0),
                     max_new_tokens: int = 64, seed: int = 0, chat_template="auto") -> list[dict]:
    """The target's own responses to ``prompts`` as a request log would hold them: one record
    per prompt and temperature, the prompt's fields plus ``response`` (decoded text),
    ``response_ids`` (the served ids), ``temperature``, ``max_new_tokens`` and ``seed``
    (greedy at T = 0, seeded pure temperature sampling otherwise, as :func:`measure`).

    Raises
    ------
    ValueError
        Bad temperatures or max_new_tokens; prompts too long for the context.
    """
    temps = [float(t) for t in _check.real("temperatures", _as_list(temperatures, "temperatures"),
                                           lo=0.0)]
    mnt = _check.scalar_int("max_new_tokens", max_new_tokens, lo=1)
    ids = encode_prompts(tokenizer, prompts, max_new_tokens=mnt, context=context_length(target),
                         chat_template=chat_template)
    out = []
    for ti, t in enumerate(temps):
        for pi, (p, x) in enumerate(zip(prompts, ids)):
            sd = _seed_for(seed, ti, pi)
            toks = generate_continuation(target, x, max_new_tokens=mnt, temperature=t, seed=sd)
            if not toks:
                continue
            out.append({**{k: v for k, v in p.items() if k not in ("reference",)},
                        "response": tokenizer.decode(toks), "response_ids": toks,
                        "temperature": t, "max_new_tokens": mnt, "seed": sd})
    return out
