"""Measure alpha, tau and speedup of a real draft/target pair with transformers.

The only specnb package that imports torch and transformers (the ``measure`` extra:
``pip install -e '.[measure]'``). The face is lazy (PEP 562): ``import specnb.measure`` is cheap
and torch-free, and the first use of a name below imports its submodule, and with it torch and
transformers (an ImportError says how to install them). :mod:`specnb.measure.args` (argument
checks, before any slow import), :mod:`specnb.measure.spread` and :mod:`specnb.measure.verdict` need neither. Every formula it applies lives in torch-free modules: :mod:`specnb.theory` (Eq. 1,
Theorem 3.8, optimal gamma) and :mod:`specnb.acceptance` (rounds, tau from per-position betas,
alpha counted from rounds, CIs, timing model).

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
   to the runs (:func:`specnb.timing.fit_timing_models`).
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

Modules
-------
load      devices, dtypes, loading a model and its tokenizer, pair and context checks, pad id.
prompts   the bundled prompt files, reading and validating prompts and logged records, encoding.
generate  one timed ``generate`` call with counting hooks, the logits processing it applies,
          single-forward times.
logged    teacher forcing (betas, alpha per task), :func:`alpha_by_teacher_forcing`,
          :func:`alpha_from_logged` and :func:`logged_responses`.
run       :func:`measure` and its :class:`Measurement` (timed runs, timing model, summary).
reference the reference speculative loop (:func:`reference_generate`, ``loop="reference"``).
spread    speedup intervals (bootstrap over prompts), rounding to them, their label (torch-free).
verdict   one verdict line per measured method, the loop closest to an engine's (torch-free).
heads     EAGLE-1, EAGLE-3 and MTP heads: config checks, loading, vLLM's forward.
head_replay  a head teacher-forced along a request log: vLLM's counters, a profile.
head_drafter a head as the reference loop's drafter (``measure(draft_heads=...)``).
train_head   the bundled EAGLE-3 head's training script (``-m specnb.measure.train_head``).
args      argument checks that need no torch (models, prompts, gamma bounds).
train     the bundled family's training script, ``python -m specnb.measure.train``.
corpus    its corpus (the standard library, files held out whole) and evaluation prompts.
card      its model card (``data/models/MODEL_CARD.md``).

The face (this module) names what its users need. Notebook 08: ``resolve_device``,
``resolve_dtype``, ``BUNDLED_TARGET``, ``BUNDLED_DRAFTS``, ``load_model``, ``short_names``,
``measure``, ``processing_note``, ``alpha_from_logged``, ``verdicts``, ``verdict_text``,
``engine_like_loop``, ``loo_warning``, ``BUNDLED_EAGLE3_HEAD``, ``replay_head``. ``specnb measure``
(:mod:`specnb.cli.measure`): ``measure``, ``alpha_from_logged``, ``processing_note``, ``verdicts``,
``engine_like_loop``, ``loo_warning``; ``specnb replay --method eagle|eagle3|mtp``: ``replay_head``. The
benchmarks and ``scripts/make_logged_responses.py``: ``load_model``, ``load_prompts``,
``encode_prompts``, ``context_length``, ``generate_continuation``, ``teacher_forced_betas``,
``run_generate``, ``alpha_from_logged``, ``logged_responses``, ``BUNDLED_LOGGED``. The rest of
``__all__`` is the public API for users who measure step by step. The training script, its
corpus and the model card are the submodules ``specnb.measure.train``, ``specnb.measure.corpus``
and ``specnb.measure.card`` (not imported by the face, so ``python -m specnb.measure.train``
runs cleanly).
"""

from __future__ import annotations

import importlib

#: Where each public name lives (submodule of this package).
_WHERE = {
    **dict.fromkeys(["GenRun", "Processing", "forward_time", "generate_continuation",
                     "generation_processing", "run_generate"], "generate"),
    **dict.fromkeys(["BUNDLED_DRAFTS", "BUNDLED_TARGET", "MODELS_DIR", "TOKENIZER_FILES",
                     "check_pair", "context_length", "load_model", "model_contexts",
                     "pad_token_id", "resolve_device", "resolve_dtype", "short_names"], "load"),
    **dict.fromkeys(["LoggedAlpha", "alpha_by_teacher_forcing", "alpha_from_logged",
                     "logged_responses", "processing_note", "teacher_forced_betas",
                     "teacher_forced_betas_all"], "logged"),
    **dict.fromkeys(["BUNDLED_LOGGED", "BUNDLED_PROMPTS", "encode_prompts", "encode_responses",
                     "load_prompts"], "prompts"),
    **dict.fromkeys(["Measurement", "measure", "LOOPS"], "run"),
    **dict.fromkeys(["reference_generate", "accept_resample", "accept_greedy"], "reference"),
    **dict.fromkeys(["speedup_interval", "format_speedup", "interval_label", "MIN_PROMPTS"],
                    "spread"),
    **dict.fromkeys(["verdicts", "verdict_text", "engine_like_loop", "loo_warning"], "verdict"),
    **dict.fromkeys(["BUNDLED_EAGLE3_HEAD"], "args"),
    **dict.fromkeys(["load_head", "head_config"], "heads"),
    **dict.fromkeys(["replay_head"], "head_replay"),
    **dict.fromkeys(["HeadDrafter"], "head_drafter"),
}

_NEED_TORCH = ("specnb.measure needs torch and transformers, which are not installed: install "
               "the measure extra with  pip install -e '.[measure]'  (CPU torch: pip install "
               "torch==2.13.0 first). Original error: {}")

__all__ = [
    "MODELS_DIR", "BUNDLED_TARGET", "BUNDLED_DRAFTS", "BUNDLED_PROMPTS", "BUNDLED_LOGGED",
    "TOKENIZER_FILES", "pad_token_id", "model_contexts", "Processing", "generation_processing",
    "teacher_forced_betas_all", "encode_responses", "LoggedAlpha", "alpha_from_logged",
    "logged_responses", "processing_note",
    "resolve_device", "resolve_dtype", "load_model", "check_pair", "context_length",
    "load_prompts", "encode_prompts", "generate_continuation", "teacher_forced_betas",
    "forward_time", "GenRun", "run_generate", "Measurement", "measure", "LOOPS",
    "alpha_by_teacher_forcing", "short_names", "reference_generate", "accept_resample",
    "accept_greedy", "speedup_interval", "format_speedup", "interval_label", "verdicts",
    "verdict_text", "engine_like_loop", "loo_warning", "MIN_PROMPTS", "BUNDLED_EAGLE3_HEAD", "load_head",
    "head_config", "replay_head", "HeadDrafter",
]


def __getattr__(name: str):
    """PEP 562: import the submodule that holds ``name`` on first use (torch with it)."""
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'specnb.measure' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(f".{mod}", __name__), name)
    except ImportError as exc:
        if getattr(exc, "name", None) in ("torch", "transformers") or "torch" in str(exc):
            raise ImportError(_NEED_TORCH.format(exc)) from exc
        raise
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
