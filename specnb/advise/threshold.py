"""The peak batch from which to measure speculation on and off first: :func:`measure_threshold`.

Without a GPU, model and context it is the EAGLE-3 paper's batch tables (:data:`MEASURE_BATCH`);
with them, the step-time model of :mod:`specnb.serving`: the crossover batch
(:func:`specnb.serving.crossover_batch`, the same grid-to-crossover pipeline as
:func:`specnb.advise.serving_plan`) of the method at gamma, with ``alpha`` or the
tau SpecDecode-Bench measured for the workload (along each request's path). Used by
:func:`specnb.advise.recommend` (its ``peak_batch`` rules) and docs/vllm.md.
"""

from __future__ import annotations

from ..vllm import DEFAULT_GAMMA
from .evidence import MEASURE_BATCH, workload_acceptance

__all__ = ["MODEL_MAX_BATCH", "measure_threshold"]

#: Largest batch :func:`measure_threshold` searches with the step-time model: a crossover at
#: this batch means "pays at every batch up to here" (the peak batch is searched when larger).
MODEL_MAX_BATCH = 1024


def _architecture(name: str, value):
    """:func:`specnb.serving.architecture`, also taking a catalogue model's Hugging Face id
    (``serving.model_id``: ``meta-llama/Llama-3.2-1B``), which a vLLM config names; errors
    name the parameter."""
    from .. import serving

    try:
        return serving.architecture(value)  # takes catalogue names and their Hugging Face ids
    except (ValueError, FileNotFoundError) as exc:
        raise ValueError(f"{name}={value!r}: {exc}") from None


def _serving_inputs(gpu, model, context, gpus):
    """None when gpu, model, context and gpus are all None; else (GPU, Architecture, context,
    gpus) checked with :mod:`specnb.serving`. Errors name the parameter."""
    from .. import _check, serving

    given = {"gpu": gpu, "model": model, "context": context}
    if all(v is None for v in given.values()) and gpus is None:
        return None
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise ValueError(f"gpu, model and context go together (the crossover batch needs all "
                         f"three{'; gpus only with them' if gpus is not None else ''}); missing "
                         f"{', '.join(missing)}; got gpu={gpu!r}, model={model!r}, "
                         f"context={context!r}")
    try:
        g = serving.gpu(gpu)
    except ValueError as exc:
        raise ValueError(f"gpu={gpu!r}: {exc}") from None
    return (g, _architecture("model", model), _check.scalar_int("context", context, lo=1),
            _check.scalar_int("gpus", 1 if gpus is None else gpus, lo=1))


def measure_threshold(gpu=None, model=None, context=None, *, method: str = "eagle3",
                      gamma: int | None = None, alpha: float | None = None,
                      workload: str = "general", gpus: int | None = None, draft_model=None,
                      max_batch: int = MODEL_MAX_BATCH) -> tuple[int, str]:
    """The peak batch from which :func:`~specnb.advise.recommend` asks to measure on and off
    first.

    Without ``gpu``, ``model`` and ``context``: ``(MEASURE_BATCH, source)``, the EAGLE-3
    paper's batch tables (EAGLE-1 below 1x from batch 24).

    With all three: the step-time model's answer, ``(crossover + 1, sentence)``, where crossover
    = :func:`specnb.serving.crossover_batch` for ``method`` at ``gamma`` (the largest batch up
    to ``max_batch`` at which speculation pays at every batch from 1; 0 = not even at batch 1;
    ``max_batch`` = at every batch searched): from the batch after it, the model predicts no
    gain. The sentence names the
    model, GPU, context, acceptance and crossover, and that it is a prediction to confirm by
    measurement (docs/serving.md, "Assumptions and limits"); a context beyond the
    model's ``max_position_embeddings`` adds :func:`specnb.serving.context_limit_notes`' note
    (the model cannot serve it; no error, the crossover is still modelled), which
    :func:`~specnb.advise.recommend` carries into its reasons.

    Parameters
    ----------
    gpu : catalogue GPU name (``specnb.serving.gpu_names()``), case-insensitive, or None
    model : catalogue model name (``specnb.serving.architecture_names()``), its Hugging Face id,
        or a config.json path
    context : int >= 1, tokens per sequence (prompt plus output so far)
    method : ``"eagle3"``, ``"ngram"``, ``"mtp"`` or ``"draft_model"`` (the draft modelled:
        an EAGLE-3 / MTP head of one target layer, n-gram lookup, or ``draft_model``)
    gamma : int >= 1, ``num_speculative_tokens`` (default: :data:`DEFAULT_GAMMA` of method)
    alpha : float in [0, 1] or None
        Acceptance rate (Eq. 1); None: the tau of :func:`workload_acceptance` at gamma.
    workload : one of :data:`WORKLOADS` (picks the acceptance when ``alpha`` is None)
    gpus : int >= 1 or None, tensor-parallel size (None: 1); only with gpu, model and context
    draft_model : catalogue name, its Hugging Face id or config.json path of the draft (method
        ``draft_model``)
    max_batch : int in [1, :data:`specnb.serving.MAX_BATCH_SEARCH`], the batch range searched
        (default :data:`MODEL_MAX_BATCH`; :func:`~specnb.advise.recommend` searches up to the
        peak batch)

    Raises
    ------
    ValueError
        only some of gpu, model and context; gamma, alpha or draft_model without them;
        draft_model with another method; an unknown GPU or model, or a draft the model
        cannot take (the message names the parameter and lists the known names); context < 1;
        gamma < 1; an unknown method; no acceptance to use (no ``alpha`` and no bundled table
        for the method and workload: pass the measured alpha); gamma above 5 without
        ``alpha`` (the data give tau up to k 5).
    """
    inputs = _serving_inputs(gpu, model, context, gpus)
    unused = {k: v for k, v in (("gamma", gamma), ("alpha", alpha), ("draft_model", draft_model))
              if v is not None}
    if inputs is None and unused:
        raise ValueError(f"{', '.join(f'{k}={v!r}' for k, v in unused.items())}: only with gpu, "
                         "model and context (the fixed rule, from the EAGLE-3 paper's batch "
                         "tables, takes no acceptance, gamma or draft)")
    if draft_model is not None and method != "draft_model":
        raise ValueError(f"draft_model={draft_model!r} is modelled only with "
                         f"method='draft_model'; got method={method!r}")
    if inputs is None:
        return MEASURE_BATCH, ("the EAGLE-3 paper's batch tables: EAGLE below 1x from batch 24 "
                               "(SGLang, Table 3) and 32 (vLLM, Table 5)")
    from .. import _check, serving

    _check.choice("method", method, DEFAULT_GAMMA)
    g, arch, s, n = inputs
    gamma = DEFAULT_GAMMA[method] if gamma is None else _check.scalar_int("gamma", gamma, lo=1)
    mb = _check.scalar_int("max_batch", max_batch, lo=1, hi=serving.MAX_BATCH_SEARCH)
    st = _modelled_setup(g, arch, n, method, draft_model)
    acceptance, said = _modelled_acceptance(method, workload, gamma, alpha)
    # one grid read three ways; crossover and paying ranges stop at the memory cap
    grid = serving.batch_range_grid(st, [s], [gamma], mb, **acceptance)
    cross = int(serving.crossover_of(grid)[0])
    where = (f"{method} at gamma {gamma} on {arch.name}, {n}x {g.name}, context {s:,} tokens, "
             f"{said}")
    verdict = _crossover_verdict(cross, mb, int(serving.max_batch_in_memory(st, s)),
                                 serving.paying_of(grid)[0], n, g.name, arch.moe is not None)
    return cross + 1, (f"the step-time model (specnb.serving.crossover_batch: crossover {cross}) "
                       f"predicts that {where}, {verdict}. A model prediction, not a measurement "
                       "(static batches of equal contexts; defaults fitted at batch <= 64 on one "
                       "H100: docs/serving.md, Assumptions and limits): calibrate it "
                       "on your own step times (specnb plan --calibrate) and confirm at the "
                       "peak; the fixed rule, from the EAGLE-3 paper's batch tables, says "
                       f"{MEASURE_BATCH}"
                       + "".join(f". Note: {n}" for n in serving.context_limit_notes(st, s)))


def _modelled_setup(g, arch, n, method, draft_model):
    """The serving setup of ``method`` (or the ``draft_model`` architecture) on ``arch``;
    errors name draft_model."""
    from .. import serving

    if method == "draft_model":
        if draft_model is None:
            raise ValueError("method draft_model: give draft_model= as a catalogue model name "
                             f"({', '.join(serving.architecture_names())}) or a config.json path "
                             "so that the draft's cost can be modelled")
        spec = _architecture("draft_model", draft_model)
    else:
        spec = method
    try:
        return serving.setup(g, arch, spec, gpus=n)
    except ValueError as exc:  # a draft vocabulary that differs, GPUs that do not divide
        if not str(exc).startswith("draft "):
            raise  # the message names gpus
        if method == "mtp":  # a target without MTP layers (T7-10)
            raise ValueError(f"target_has_mtp=True: {exc}") from None
        raise ValueError(f"draft_model={draft_model!r}: {exc}") from None


def _modelled_acceptance(method, workload, gamma, alpha):
    """(acceptance keyword for the serving model, the sentence naming it): the given alpha,
    else the bundled tau of :func:`workload_acceptance` at gamma."""
    from .. import _check

    if alpha is not None:
        alpha = _check.scalar_real("alpha", alpha, lo=0.0, hi=1.0)
        return {"alpha": alpha}, f"alpha {alpha:g}"
    found = workload_acceptance(method, workload, gamma)
    if found is None:
        raise ValueError(f"the crossover needs the acceptance of {method} on {workload} "
                         "traffic, which no bundled table measures: pass the measured alpha "
                         "(and c), e.g. from specnb metrics")
    tau, source = found
    return {"tau": tau}, f"tau {tau:.3f} ({source})"


def _crossover_verdict(cross, mb, fits, ranges, n, gpu_name, moe):
    """The crossover in words: the memory cap (``fits`` sequences; crossover and paying
    ``ranges`` already stop there), paying ranges that start above batch 1, an MoE target."""
    if fits == 0:
        verdict = (f"does not run: the weights do not fit in {n}x {gpu_name} memory "
                   "(serving.max_batch_in_memory 0; raise gpus)")
    elif cross == 0 and ranges:
        spans = ", ".join(f"{a}" if a == e else f"{a}-{e}" for a, e in ranges)
        verdict = f"does not pay at batch 1; pays at batch {spans}" + (
            f" (from batch {fits + 1} on the KV cache does not fit)"
            if ranges[-1][1] == fits < mb else "")
    elif cross == 0:
        verdict = "does not pay even at batch 1"
    elif cross >= mb:
        verdict = f"pays at every batch up to {mb} (the range searched)"
    elif cross == fits:
        verdict = (f"pays at every batch that fits in memory: up to {fits:,} sequences of this "
                   "context, whose KV cache fits beside the weights and the draft "
                   "(serving.memory_cap); beyond that vLLM queues or preempts")
    else:
        verdict = f"pays up to batch {cross} and not from batch {cross + 1}"
    if moe:
        verdict += (" (MoE target: each step reads the experts its tokens touch, so a small "
                    "batch's verification reads many more than its plain step and the speedup "
                    "can rise with batch; uniform routing, an upper bound for skewed routing)")
    return verdict
