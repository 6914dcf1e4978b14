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

Sampling runs use pure temperature sampling: ``top_k = 0`` and ``top_p = 1.0`` are passed
explicitly (transformers 5.x otherwise applies ``top_k = 50`` by default), so the teacher-forced
``p_T`` and ``q_T`` are the distributions the verifier uses. Batch size is 1 (transformers'
assisted decoding supports no other).

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
    "MODELS_DIR", "BUNDLED_TARGET", "BUNDLED_DRAFTS", "BUNDLED_PROMPTS",
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


def _looks_like_path(name: str) -> bool:
    """A name that cannot be a hub id ("org/name" or "name") is meant as a local path."""
    return name.startswith((".", "/", "~")) or "\\" in name or not _HUB_ID.match(name)


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
        A path that does not exist, a folder without safetensors weights, or a name that is
        neither a folder nor a loadable hub id.
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
            f"model path {name!r} does not exist. The bundled pair is data/models/target-4x256 "
            "with data/models/draft-2x128 (retrain it with  python -m specnb.train); or pass a "
            "hub id such as 'org/name' to download one (needs network).")
    else:
        src = name
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()
    try:
        model = AutoModelForCausalLM.from_pretrained(src, **kwargs)
    except OSError as exc:
        raise FileNotFoundError(
            f"could not load model {name!r}: it is not a local folder, and loading it as a hub "
            f"id failed (no network, a typo, or no safetensors weights): {exc}") from exc
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()
    model.eval().to(device)
    tok = None
    try:
        tok = AutoTokenizer.from_pretrained(src, trust_remote_code=False,
                                            local_files_only=kwargs.get("local_files_only", False))
    except (OSError, ValueError) as exc:
        if need_tokenizer:
            raise FileNotFoundError(f"model {name!r} has no loadable tokenizer: {exc}") from exc
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
    if vt != vd:
        raise ValueError(
            f"mismatched vocabularies: target vocab_size = {vt}, draft vocab_size = {vd}. "
            "Assisted decoding measured here needs a draft with the target's tokenizer and "
            "vocab_size (e.g. two models of one family, or the bundled pair); pick such a draft.")
    if target_tokenizer is not None and draft_tokenizer is not None:
        if target_tokenizer.get_vocab() != draft_tokenizer.get_vocab():
            raise ValueError(
                "mismatched vocabularies: target and draft tokenizers have the same size "
                f"({vt}) but different tokens; the draft must share the target's tokenizer")


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

def load_prompts(path=None, *, tasks=None, per_task: int | None = None) -> list[dict]:
    """Read prompts from a JSON-lines file (one object a line, with at least ``task`` and
    ``prompt``; ``id`` defaults to ``"<task>-<n>"``).

    Parameters
    ----------
    path : str or Path, optional
        Defaults to the bundled :data:`BUNDLED_PROMPTS` (held-out standard-library text).
    tasks : iterable of str, optional
        Keep only these task families (in the given order).
    per_task : int >= 0, optional
        Keep the first ``per_task`` prompts of each family (0 or None: all).

    Returns
    -------
    list of dict, grouped by task in file (or ``tasks``) order.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A line that is not a JSON object with string ``task`` and ``prompt``; an unknown task
        in ``tasks``; ``per_task`` < 0; no prompt left.
    """
    path = Path(path) if path is not None else BUNDLED_PROMPTS
    if not path.is_file():
        raise FileNotFoundError(f"prompts file {str(path)!r} does not exist; the bundled one is "
                                f"{BUNDLED_PROMPTS}")
    items, counts = [], {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("task"), str) \
                or not isinstance(obj.get("prompt"), str) or not obj["prompt"]:
            raise ValueError(f"{path}:{n}: each line must be a JSON object with string 'task' and "
                             f"non-empty string 'prompt'; got keys {sorted(obj) if isinstance(obj, dict) else type(obj).__name__}")
        k = counts.get(obj["task"], 0)
        counts[obj["task"]] = k + 1
        obj.setdefault("id", f"{obj['task']}-{k:02d}")
        items.append(obj)
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
        out.extend(group[:per_task] if per_task else group)
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
        A prompt whose tokens plus ``max_new_tokens`` exceed ``context`` (the model's positions),
        or ``chat_template=True`` without a template.
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
        if context is not None and len(ids) + max_new_tokens > context:
            raise ValueError(
                f"prompt {p.get('id', '?')!r} (task {p.get('task')!r}) is {len(ids)} tokens; with "
                f"max_new_tokens = {max_new_tokens} it needs {len(ids) + max_new_tokens} "
                f"positions but the model's context is {context}: lower --max-new-tokens, or "
                "use shorter prompts")
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
    kwargs = dict(attention_mask=torch.ones_like(ids), max_new_tokens=int(max_new_tokens),
                  **_sampling_kwargs(temperature, target))
    pad = pad_token_id(target)
    if pad is not None and getattr(target.generation_config, "pad_token_id", None) is None:
        kwargs["pad_token_id"] = pad
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
def teacher_forced_betas(target, draft, input_ids, continuation, temperature: float = 0.0):
    """Per-position acceptance beta of ``draft`` along the target's ``continuation``.

    One forward of each model over prompt + continuation (Leviathan et al., section 3.1):

    * T = 0: ``beta_i = 1`` when the draft's argmax at position i equals the target's token
      ``continuation[i]`` (its greedy choice), else 0;
    * T > 0: ``beta_i = sum_x min(p_T(x), q_T(x))`` with p, q the softmaxes of target and
      draft logits divided by T (Corollary 3.6: the acceptance probability of speculative
      sampling given the prefix).

    Parameters
    ----------
    target, draft : causal LMs sharing one vocabulary.
    input_ids : 1-D LongTensor, the prompt (P tokens).
    continuation : sequence of N >= 1 token ids.
    temperature : float >= 0

    Returns
    -------
    ndarray, shape (N,), float64 in [0, 1].

    Raises
    ------
    ValueError
        Empty continuation or negative temperature.
    """
    t = float(_check.real("temperature", temperature, lo=0.0))
    cont = torch.as_tensor(list(continuation), dtype=torch.long)
    if cont.numel() == 0:
        raise ValueError("continuation must hold at least one token, got none")
    full = torch.cat([input_ids.cpu(), cont])[None, :].to(target.device)
    p0, n = input_ids.numel(), cont.numel()
    mask = torch.ones_like(full)
    ld = draft(input_ids=full.to(draft.device), attention_mask=mask.to(draft.device)
               ).logits[0, p0 - 1:p0 - 1 + n].float()
    if t == 0:
        # the greedy continuation IS the target's argmax: no target forward needed
        beta = (ld.argmax(-1) == cont.to(ld.device)).double()
    else:
        lt = target(input_ids=full, attention_mask=mask).logits[0, p0 - 1:p0 - 1 + n].float()
        ld = ld.to(lt.device)
        p = torch.softmax(lt / t, dim=-1)
        q = torch.softmax(ld / t, dim=-1)
        beta = torch.minimum(p, q).sum(-1).double().clamp(0.0, 1.0)
    return beta.cpu().numpy()


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
      predicted wall times of the same calls, per-call cost included), c, lossless.
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
        ``speedup_timing_model``, ``c`` and ``lossless`` are aligned lists, one entry per
        summary row (draft x gamma x temperature); ``lossless_all`` is the overall verdict;
        ``alpha_by_task``, ``pld`` and ``timing`` are lists of records; ``config`` as run."""
        s = self.summary
        obj = {k: [_plain(v) for v in s[k].tolist()] for k in s.columns}
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
    tmodel, ttok, dmodels, target_name, (dev, torch_dtype) = _load(target, drafts, models,
                                                                   device, dtype)
    prompt_items, prompts_src = _prompts(prompts, tasks, per_task)
    ids = encode_prompts(ttok, prompt_items, max_new_tokens=mnt, context=context_length(tmodel),
                         chat_template=chat_template)
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

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    threads = torch.get_num_threads()
    if cpu_threads is not None and dev == "cpu":
        torch.set_num_threads(_check.scalar_int(
            "cpu_threads (--threads on the command line, where 0 = torch's setting)",
            cpu_threads, lo=1))
    try:
        return _measure(tmodel, dmodels, prompt_items, ids, gam, temps, mnt, reps, warm, pld,
                        seed, dev, torch_dtype, tick, dict(
                            target=target_name, drafts=list(dmodels), prompts=prompts_src,
                            n_prompts=n_p, tasks=list(dict.fromkeys(p["task"] for p in prompt_items)),
                            gammas=gam, temperatures=temps, max_new_tokens=mnt, repeats=reps,
                            warmup=warm, device=dev, dtype=str(torch_dtype).replace("torch.", ""),
                            seed=seed, chat_template=chat_template,
                            versions={"torch": torch.__version__,
                                      "transformers": transformers.__version__},
                            torch_threads=torch.get_num_threads()))
    finally:
        torch.set_num_threads(threads)
        transformers.logging.set_verbosity(verbosity)
        if bar is not None:
            bar.close()


def _model_speedup(model, assisted_runs, runs, t):
    """tokens/s the timing model predicts for these assisted calls over what it predicts for the
    plain calls at temperature ``t`` (the per-call cost included, like the measured speedup)."""
    if model is None:
        return np.nan
    plain = runs[(runs["method"] == "plain") & (runs["temperature"] == t)]
    pa = model.predict(assisted_runs["target_forwards"], assisted_runs["draft_forwards"],
                       assisted_runs["rounds"]).sum()
    pp = model.predict(plain["target_forwards"], 0, 0).sum()
    return float((assisted_runs["new_tokens"].sum() / pa) / (plain["new_tokens"].sum() / pp))


def _seed_for(seed, ti, pi):
    return seed * 1_000_003 + ti * 10_007 + pi


def _teacher_forcing(tmodel, dmodels, prompts, ids, temps, mnt, seed, tick):
    conts, beta_rows = {}, []
    for ti, t in enumerate(temps):
        for pi, p in enumerate(prompts):
            conts[(t, pi)] = generate_continuation(tmodel, ids[pi], max_new_tokens=mnt,
                                                   temperature=t, seed=_seed_for(seed, ti, pi))
            tick()
            for dname, (dm, _) in dmodels.items():
                b = teacher_forced_betas(tmodel, dm, ids[pi], conts[(t, pi)], t)
                beta_rows.append(dict(draft=dname, temperature=t, prompt=p["id"], task=p["task"],
                                      positions=int(b.size), beta_sum=float(b.sum()), betas=b))
                tick()
    betas = pd.DataFrame(beta_rows)
    alpha_rows = []
    for (dname, t), g in betas.groupby(["draft", "temperature"], sort=False):
        for task, gg in [*g.groupby("task", sort=False), ("all", g)]:
            est, lo, hi = acc.ratio_ci(gg["beta_sum"], gg["positions"], seed=seed)
            alpha_rows.append(dict(draft=dname, temperature=t, task=task, alpha=est, ci_low=lo,
                                   ci_high=hi, prompts=len(gg),
                                   positions=int(gg["positions"].sum())))
    return conts, betas, pd.DataFrame(alpha_rows)


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
    tmodel, ttok, dmodels, _, _ = _load(target, drafts, models, device, dtype)
    items, _ = _prompts(prompts, tasks, per_task)
    ids = encode_prompts(ttok, items, max_new_tokens=mnt, context=context_length(tmodel))
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
    items = list(prompts)
    if not items:
        raise ValueError("prompts must hold at least one prompt, got none")
    return items, "<in memory>"


def _measure(tmodel, dmodels, prompts, ids, gammas, temps, mnt, reps, warm, pld, seed, dev,
             torch_dtype, tick, config) -> Measurement:
    # ---- 1. continuations and teacher-forced betas
    conts, betas, alpha = _teacher_forcing(tmodel, dmodels, prompts, ids, temps, mnt, seed, tick)

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
    fit = acc.fit_timing_models(f["wall_s"], f["target_forwards"],
                                np.where(is_a, f["draft_forwards"], 0),
                                np.where(is_a, f["rounds"], 0),
                                drafts=np.where(is_a, f["draft"].fillna("").astype(str), ""))
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
