"""Generation: one timed ``target.generate`` call (plain, assisted by a draft at fixed gamma, or
prompt lookup), with a streamer that records the tokens appended per target forward and forward
hooks that count target and draft forwards; the logits processing ``generate`` applies (taken
from transformers itself, for teacher forcing to apply the same); and single-forward times for
the cost coefficient c.

Sampling at T > 0 is pure temperature sampling unless the target's ``generation_config`` sets
top-k / top-p (transformers 5.x's library default ``top_k = 50`` is switched off explicitly).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import dataclass

import torch
import transformers
from transformers.generation.streamers import BaseStreamer

from .. import _check
from .load import _sync, pad_token_id

__all__ = ["Processing", "generation_processing", "GenRun", "run_generate",
           "generate_continuation", "forward_time"]


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



def _seed_for(seed, ti, pi):
    """The sampling seed of prompt ``pi`` at the ``ti``-th temperature, derived from ``seed``
    (every prompt and temperature its own)."""
    return seed * 1_000_003 + ti * 10_007 + pi
