"""What to turn on: a situation in, a vLLM method, gamma and config out, each rule with its source.

:func:`recommend` takes a description of how you serve: the **workload** (``"code"``,
``"copy-heavy"``, ``"chat"``, ``"math"``, ``"creative"`` or ``"general"``) and facts
(does the target carry MTP layers, does an EAGLE-3 drafter exist, a same-family small model
and spare memory, the peak batch, the sampling temperature, the goal, optionally a measured
alpha and cost ratio c). The rules of :data:`RULES` turn it into a vLLM method, a draft length
gamma, the reasons (with the numbers from ``data/`` behind them) and a checked
``speculative_config``.

The article's own table beside these rules is :mod:`specnb.advise.article`; the published
numbers behind the reasons are read by :mod:`specnb.advise.evidence`.

Rules, in order (:data:`RULES` has each with its source):

1. ``mtp`` when the target ships MTP layers;
2. ``eagle3`` when an EAGLE-3 drafter exists (EAGLE-3 Table 1: fastest method on every task);
3. ``ngram`` (``suffix`` the alternative) for copy-heavy output (Table 1: prompt lookup's best
   task is CNN/DM summarisation, 2.42x, against 1.16-1.85x elsewhere);
4. ``draft_model`` for a same-family small model with spare memory (SpS 1.92x mean in Table 1;
   the same tokenizer and vocabulary are required);
5. ``eagle3 (if a drafter exists)`` when nobody checked;
6. creative output with none of the above and no measured alpha: keep it off until n-gram's
   acceptance is measured (n-gram drafts copy the prompt, which creative text rarely repeats;
   no bundled table measures it there; the article's own low-acceptance row, alpha 0.2, gives
   1.25x for 3.21x the operations); with a measured alpha and c, n-gram by the theory;
7. otherwise ``ngram`` (the article's summary: "otherwise start with n-gram").

Draft length: a measured alpha and c give the smallest gamma within
:data:`~specnb.advise.evidence.GAMMA_TOLERANCE` (1 %) of :func:`specnb.theory.optimal_gamma`'s
speedup, at most :func:`~specnb.advise.evidence.vllm_gamma_limit` (the longest
num_speculative_tokens a bundled vLLM measurement ran; with c = 0 the speedup rises with every
gamma and the search limit is no optimum); otherwise the
starting points of :data:`DEFAULT_GAMMA`, capped at :data:`SAMPLING_GAMMA_CAP` when sampling
(temperature > 0). A peak batch >= :func:`measure_threshold` means: measure on and off at the
peak first. Without a GPU, model and context that threshold is :data:`MEASURE_BATCH` (24) and
the reason is what the EAGLE-3 paper's batch tables show for the method recommended; with them
(``recommend(..., gpu=, model=, context=, gpus=)``) it comes from the step-time model of
:mod:`specnb.serving`: the crossover batch of the recommended method at the recommended gamma,
with ``alpha`` or the tau SpecDecode-Bench measured for the workload along each request's path
(:func:`workload_acceptance`), stated as a prediction to confirm by measurement.

Reason codes (``Recommendation.reasons`` are :class:`specnb.notes.Note` s): ``mtp-in-checkpoint``,
``eagle3-fastest``, ``eagle3-check-drafter``, ``copy-prompt-lookup``,
``draft-model-no-training``, ``draft-model-same-vocabulary``, ``draft-model-takes-memory``,
``creative-little-to-copy``, ``creative-measure-ngram``, ``ngram-needs-nothing``,
``gamma-measured``, ``alpha-not-above-c``, ``mtp-single-layer``, ``gamma-start``,
``gamma-sampling-cap``, ``peak-batch-measure-first``, ``peak-batch-within-crossover``,
``peak-batch-beyond-crossover``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..notes import Note
from ..vllm import DEFAULT_GAMMA, NGRAM_OPTIONS, speculative_config
from .evidence import (GAMMA_TOLERANCE, MEASURE_BATCH, SAMPLING_GAMMA_CAP, TASK_NAMES, WORKLOADS,
                       batch_sentence, sampling_gamma_evidence, table1, theorem_sentence,
                       vllm_gamma_limit, workload_evidence)

from .threshold import MODEL_MAX_BATCH, _serving_inputs, measure_threshold

__all__ = ["RULES", "Rule", "Recommendation", "recommend"]


@dataclass(frozen=True)
class Rule:
    """One decision rule of :func:`recommend`: its name, what it says, and its source."""

    name: str
    says: str
    source: str


#: The rules :func:`recommend` applies, in order; ``Recommendation.rules`` names those that fired.
RULES = (
    Rule("mtp", "the target ships MTP layers -> mtp, gamma 1",
         "vLLM docs 'Method Selection at a Glance' (MTP: best when the target has native MTP); "
         "article section 6 (no extra weights); vLLM's MTP example uses 1 (more reruns the same "
         "layer)"),
    Rule("eagle3", "an EAGLE-3 drafter exists -> eagle3, gamma 3",
         "EAGLE-3 paper (arXiv 2503.01840) Table 1: EAGLE-3 is the fastest method on every "
         "task; gamma 3: chain length 3 in Table 3, the article's 'start at 3-5'"),
    Rule("copy", "copy-heavy output -> ngram (suffix the alternative), gamma 4, lookup 2-5",
         "EAGLE-3 Table 1 (Vicuna 13B, T=0): prompt lookup (PLD) 2.42x on CNN/DM against "
         "1.16-1.85x on the other tasks, the only task where it beats a draft model (SpS 1.93x); "
         "vLLM docs' n-gram example (4, prompt_lookup_min 2, prompt_lookup_max 5)"),
    Rule("draft_model", "a same-family small model and spare memory -> draft_model, gamma 5",
         "EAGLE-3 Table 1: SpS (Vicuna-68M draft) 1.92x mean against PLD 1.74x; vLLM docs: "
         "'high gain' at low QPS, example gamma 5; needs the target's tokenizer and vocabulary "
         "(vLLM raises otherwise); Leviathan et al. section 3.6: drafts about two orders of "
         "magnitude smaller did best"),
    Rule("eagle3_unchecked", "EAGLE-3 drafter not checked -> eagle3 if one exists, else the "
         "next rule", "as rule eagle3 (EAGLE-3 Table 1); the article's table, row 1: 'eagle3 "
         "(if a drafter exists)'"),
    Rule("creative", "creative output, none of the above, no measured alpha -> keep it off "
         "until n-gram's acceptance is measured",
         "n-gram drafts only what the prompt or earlier output already contains, and no bundled "
         "table measures it on creative writing; the article's gamma table, row 1 (Leviathan "
         "section 3.6): at bigram-level alpha 0.2, gamma 3 gives 1.25x for 3.21x the "
         "operations"),
    Rule("ngram", "nothing else -> ngram, gamma 4", "the article's summary ('otherwise start "
         "with n-gram'); vLLM docs: light and easy to enable"),
    Rule("measured", "a measured alpha and c -> the smallest gamma within 1 % of "
         "optimal_gamma(alpha, c)'s speedup, at most the longest num_speculative_tokens a "
         "bundled vLLM measurement ran; off if alpha <= c",
         "Leviathan et al. (arXiv 2211.17192) Theorem 3.8, section 3.5 and Corollary 3.9 "
         "(Theorem 3.11: operations rise with gamma); data/engine_measurements.csv (vLLM "
         "rows: issue #20780's and PR #16937's K sweeps reach 7)"),
    Rule("sampling", f"temperature > 0 and no measured alpha -> gamma at most "
         f"{SAMPLING_GAMMA_CAP}", "sampling lowers acceptance (EAGLE-3 Table 1: LLaMA 3.1 8B "
         "EAGLE-3 4.44x at T=0, 3.45x at T=1); at Leviathan Table 4's T=1 alphas gamma 3 "
         "reaches >= 93% of the best speedup (sampling_gamma_evidence); the article's '2-3'. "
         "The tables measure T=0 and T=1 only, so no threshold in between has a source"),
    Rule("peak_batch", f"peak batch >= {MEASURE_BATCH} -> measure on and off at the peak first",
         "EAGLE-3 Table 3 (SGLang): EAGLE below 1x from batch 24; Table 5 (vLLM): from 32; the "
         "article's checklist step 4"),
    Rule("peak_batch_model", "GPU, model and context given -> measure on and off first when "
         "the peak batch is above the step-time model's crossover batch (replaces peak_batch)",
         "specnb.serving (MagicDec arXiv 2408.11049 eq. 2 with a per-step overhead; "
         "SpecDecode-Bench arXiv 2601.11580 fitted constants; acceptance from alpha or "
         "SpecDecode-Bench's path tau); a prediction to confirm by measurement"),
)



@dataclass(frozen=True)
class Recommendation:
    """What :func:`recommend` advises.

    Attributes
    ----------
    method : vLLM method to configure, or None (leave speculative decoding off).
    gamma : ``num_speculative_tokens`` to start with, or None.
    label : the advice in a few words ("mtp", "start with ngram or suffix", "measure on and
        off under real load", "keep it off"...).
    why : the headline reason, with the number behind it.
    reasons : every reason, with sources and numbers, as :class:`specnb.notes.Note` s (codes
        in the module docstring); one of them explains the gamma shown.
    config : the checked ``speculative_config`` dict (placeholders for unknown model ids),
        or None when the advice is to leave it off.
    alternatives : other methods worth trying (e.g. ``("suffix",)`` beside ngram).
    measure_first : True when the gain must be measured at peak load before committing.
    rules : names of the :data:`RULES` that fired, in order.
    crossover : the step-time model's crossover batch (:func:`measure_threshold`) when
        ``recommend`` was given gpu, model and context; None otherwise.
    """

    method: str | None
    gamma: int | None
    label: str
    why: str
    reasons: tuple = field(default=())
    config: dict | None = None
    alternatives: tuple = field(default=())
    measure_first: bool = False
    rules: tuple = field(default=())
    crossover: int | None = None

    def to_row(self) -> dict:
        return {"method": self.method, "gamma": self.gamma, "recommendation": self.label,
                "why": self.why, "alternatives": ", ".join(self.alternatives),
                "measure first": self.measure_first, "rules": ", ".join(self.rules)}





# ----------------------------------------------------------------------------- the rules
def _bool(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if not isinstance(value, bool):
        allowed = "True, False or None (not checked)" if allow_none else "True or False"
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return value


def _pick_method(workload, target_has_mtp, eagle3_drafter, small_draft_model, spare_memory,
                 measured=False):
    """(method, label, why, reasons, alternatives, rules) by what is available."""
    ev = workload_evidence(workload)
    task = TASK_NAMES.get(ev["task"], "")
    if target_has_mtp:
        return ("mtp", "mtp", "the draft layers are in the checkpoint: no extra model",
                [Note("mtp-in-checkpoint", "MTP reuses layers already in the checkpoint: no extra "
                      "model, no extra weights to load (vLLM docs: best when the target has "
                      "native MTP; article section 6)")],
                (), ("mtp",))
    e3 = ("EAGLE-3 is the fastest method on every task of the EAGLE-3 paper's Table 1 "
          "(Vicuna 13B, T=0)" + (f": {ev['eagle3']:.2f}x on {task}" if ev["eagle3"] else "")
          + (f", its best task ({TASK_NAMES[ev['eagle3_best_task']]})"
             if ev["task"] == ev["eagle3_best_task"] else ""))
    if eagle3_drafter:
        return ("eagle3", "eagle3", e3.split(" (")[0] + (f": {ev['eagle3']:.2f}x on {task}"
                                                         if ev["eagle3"] else ""),
                [Note("eagle3-fastest", e3)], (), ("eagle3",))
    if workload == "copy-heavy" and eagle3_drafter is None:  # EAGLE-3 beats PLD here too
        return _unchecked_eagle3_pick(workload, e3, ev, task)
    if workload == "copy-heavy":
        return _copy_heavy_pick(ev, task)
    if small_draft_model and spare_memory:
        return _draft_model_pick()
    if eagle3_drafter is None:
        return _unchecked_eagle3_pick(workload, e3, ev, task)
    if workload == "creative" and not measured:
        return _creative_pick()
    return ("ngram", "ngram", "no draft model or training needed",
            [Note("ngram-needs-nothing", "no MTP layers, no drafter, no spare draft model: "
                  "n-gram needs nothing (the article's summary: otherwise start with n-gram)")],
            (), ("ngram",))


def _copy_heavy_pick(ev, task):
    """Rule ``copy``: prompt lookup (vLLM's ngram), suffix decoding the alternative."""
    return ("ngram", "start with ngram or suffix",
            f"output copies the input: prompt lookup {ev['pld']:.2f}x on {task}, its best "
            "task (no training)",
            [Note("copy-prompt-lookup",
                  f"prompt lookup (vLLM's ngram) drafts from the prompt and earlier output: "
                  f"{ev['pld']:.2f}x on {task} against {ev['pld_others'][0]:.2f}-"
                  f"{ev['pld_others'][1]:.2f}x on the other tasks, and above a "
                  f"draft model there ({ev['sps']:.2f}x) (EAGLE-3 Table 1, Vicuna 13B, T=0); "
                  "suffix decoding also drafts without a model (vLLM docs)")],
            ("suffix",), ("copy",))


def _draft_model_pick():
    """Rule ``draft_model``: a same-family small model with spare memory."""
    t1 = table1()
    (sps,) = t1[(t1["method"] == "SpS") & (t1["task"] == "mean")]["speedup"]
    (pld,) = t1[(t1["method"] == "PLD") & (t1["task"] == "mean")]["speedup"]
    return ("draft_model", "draft_model",
            f"no training; a draft model {sps:.2f}x against prompt lookup {pld:.2f}x (mean)",
            [Note("draft-model-no-training",
                  f"a same-family small model needs no training: SpS (Vicuna-68M draft) "
                  f"{sps:.2f}x mean against prompt lookup {pld:.2f}x (EAGLE-3 Table 1); "
                  "vLLM's docs rate draft models 'high gain' at low QPS"),
             Note("draft-model-same-vocabulary",
                  "it must share the target's tokenizer and vocabulary (vLLM raises 'Target "
                  "and draft model should have the same vocabulary size'; transformers' "
                  "universal assisted decoding handles different tokenizers); drafts about "
                  "two orders of magnitude smaller than the target did best (Leviathan et "
                  "al. section 3.6)")],
            (), ("draft_model",))


def _unchecked_eagle3_pick(workload, e3, ev, task):
    """Rule ``eagle3_unchecked``: nobody checked for an EAGLE-3 drafter."""
    alternatives = {"creative": (), "copy-heavy": ("ngram", "suffix")}.get(workload, ("ngram",))
    if workload == "creative":
        fallback = ("keep it off until n-gram's acceptance is measured (creative text gives "
                    "it little to copy)")
    elif workload == "copy-heavy":
        fallback = (f"start with ngram or suffix (prompt lookup {ev['pld']:.2f}x on {task}, "
                    f"against EAGLE-3's {ev['eagle3']:.2f}x there)")
    else:
        fallback = "start with ngram"
    return ("eagle3", "eagle3 (if a drafter exists)", e3.split(" (")[0]
            + (f": {ev['eagle3']:.2f}x on {task}" if ev["eagle3"] else ""),
            [Note("eagle3-fastest", e3),
             Note("eagle3-check-drafter", f"check for a published EAGLE-3 drafter for your "
                  f"target first; without one, {fallback}")], alternatives,
            ("eagle3_unchecked",))


def _creative_pick():
    """Rule ``creative``: only n-gram is left and nothing measured: keep it off."""
    return (None, "keep it off",
            "only n-gram is left, and creative text gives it little to copy: measure its "
            "acceptance first",
            [Note("creative-little-to-copy",
                  "with no MTP layers, no EAGLE-3 drafter and no draft model, only n-gram is "
                  "left, and it drafts only what the prompt or earlier output contains; no "
                  "bundled table measures it on creative writing. At low acceptance it buys "
                  "little for much work: the article's own gamma table, at bigram-level "
                  "alpha 0.2 and gamma 3, gives 1.25x for 3.21x the operations (Theorems "
                  "3.8 and 3.11)"),
             Note("creative-measure-ngram",
                  "to try n-gram, measure its acceptance (specnb metrics) and pass alpha and "
                  "c: it pays only while alpha > c (Corollary 3.9)")], (), ("creative",))


def recommend(*, workload: str = "general", target_has_mtp: bool = False,
              eagle3_drafter: bool | None = False, small_draft_model: bool = False,
              spare_memory: bool = False, peak_batch: int = 1,
              temperature: float = 0.0, goal: str = "latency", alpha: float | None = None,
              c: float | None = None, draft_model: str | None = None,
              eagle3_model: str | None = None, gpu: str | None = None, model=None,
              context: int | None = None, gpus: int | None = None) -> Recommendation:
    """Recommend a vLLM speculative method, gamma and config for a serving situation.

    Parameters
    ----------
    workload : one of :data:`WORKLOADS`
        What the output is: ``"code"`` (writing code), ``"copy-heavy"`` (RAG answers,
        summaries, code edits), ``"chat"``, ``"math"``, ``"creative"`` or ``"general"``.
    target_has_mtp : bool
        The target checkpoint ships MTP layers (DeepSeek-V3, GLM-4.5, MiMo, Qwen3-Next...).
    eagle3_drafter : bool or None
        An EAGLE-3 drafter exists for the target; None = not checked yet (the advice is then
        "eagle3 (if a drafter exists)").
    small_draft_model : bool
        A small model of the same family (same tokenizer and vocabulary) is available.
    spare_memory : bool
        The GPU has memory to spare for a draft model's weights and KV cache.
    peak_batch : int >= 1
        Peak sequences per batch (concurrency) the server sees.
    temperature : float >= 0
        The sampling temperature most requests use; any value above 0 counts as sampling.
    goal : "latency" or "throughput"
        What speculation should buy (article checklist, step 1).
    alpha, c : float or None
        Measured acceptance rate (in [0, 1]) and draft/target cost ratio (>= 0); give both or
        neither. With them gamma is the smallest within 1 % of
        :func:`specnb.theory.optimal_gamma`'s speedup, capped at the longest draft a bundled
        vLLM measurement ran (:func:`specnb.advise.evidence.vllm_gamma_limit`).
    draft_model, eagle3_model : str or None
        Checkpoint ids to put in the config (placeholders otherwise). With ``gpu``, a
        ``draft_model`` recommendation models ``draft_model``: a catalogue name, a catalogue
        model's Hugging Face id or a config.json path.
    gpu, model, context : str, str or path, int >= 1; or None (all three, or none)
        The GPU (catalogue name, :func:`specnb.serving.gpu_names`), the target (catalogue
        name, its Hugging Face id or a config.json path,
        :func:`specnb.serving.architecture_names`) and the context
        length in tokens. With them the peak-batch rule comes from the step-time model's
        crossover batch for the recommended method and gamma (:func:`measure_threshold`):
        measure first when ``peak_batch`` > the crossover. The acceptance is ``alpha`` when
        given, else :func:`workload_acceptance` (SpecDecode-Bench's path tau at gamma for
        eagle3 and ngram; mtp, draft_model and creative traffic need ``alpha``). Without them
        the fixed rule: :data:`MEASURE_BATCH`, from the EAGLE-3 paper's batch tables.
    gpus : int >= 1 or None
        Tensor-parallel size for the model (default 1); only with ``gpu``.

    Returns
    -------
    Recommendation
        ``method`` None and ``config`` None when the advice is to keep speculation off.

    Raises
    ------
    ValueError
        an unknown workload, a flag that is not a bool,
        peak_batch < 1, temperature < 0, an unknown goal, alpha outside [0, 1], c < 0, any NaN
        or infinity, or only one of alpha and c; only some of gpu, model and context, gpus
        without them, an unknown GPU or model (the message names the parameter and lists the
        known names), context < 1, and the model's needs of :func:`measure_threshold` (an
        acceptance for the method, a modelled draft).
    TypeError
        a number given as a string, an array or a list.
    """
    from .. import _check

    _check.choice("workload", workload, WORKLOADS)
    target_has_mtp = _bool("target_has_mtp", target_has_mtp)
    eagle3_drafter = _bool("eagle3_drafter", eagle3_drafter, allow_none=True)
    small_draft_model = _bool("small_draft_model", small_draft_model)
    spare_memory = _bool("spare_memory", spare_memory)
    peak_batch = _check.scalar_int("peak_batch", peak_batch, lo=1)
    temperature = _check.scalar_real("temperature", temperature, lo=0.0)
    _check.choice("goal", goal, ("latency", "throughput"))
    if (alpha is None) != (c is None):
        raise ValueError(f"alpha and c go together (gamma comes from both); got alpha={alpha!r}, "
                         f"c={c!r}")
    if alpha is not None:
        alpha = _check.scalar_real("alpha", alpha, lo=0.0, hi=1.0)
        c = _check.scalar_real("c", c, lo=0.0)
    for name, value in (("draft_model", draft_model), ("eagle3_model", eagle3_model)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValueError(f"{name} must be a checkpoint id or path, got {value!r}")
    modelled = _serving_inputs(gpu, model, context, gpus)

    method, label, why, reasons, alternatives, rules = _pick_method(
        workload, target_has_mtp, eagle3_drafter, small_draft_model, spare_memory,
        measured=alpha is not None)
    if small_draft_model and not spare_memory and method != "draft_model":
        reasons.append(Note("draft-model-takes-memory", "a draft model would take weights and "
                            "KV cache from the target, so fewer requests fit at once (article "
                            "section 6)"))
    if method is None:
        return Recommendation(None, None, label, why, tuple(reasons), rules=rules)
    if alpha is not None:
        gamma, off_reason = _measured_gamma(method, alpha, c, reasons)
        rules += ("measured",)
        if gamma is None:
            return Recommendation(None, None, "keep it off",
                                  f"alpha {alpha:g} <= c {c:g}: no draft length beats plain "
                                  "decoding", tuple(reasons + [off_reason]), rules=rules)
    else:
        gamma, fired = _starting_gamma(method, temperature, reasons)
        rules += fired
    what = "output tok/s" if goal == "throughput" else "TPOT p50/p99"
    if modelled is None:
        measure_first, crossover, head = _peak_batch_rule(method, peak_batch, what, reasons)
        rules += ("peak_batch",) if measure_first else ()
    else:
        measure_first, crossover, head = _peak_batch_model_rule(
            method, gamma, peak_batch, what, reasons, (gpu, model, context, gpus),
            modelled[0].name, alpha=alpha, workload=workload, draft_model=draft_model)
        rules += ("peak_batch_model",)
    if head is not None:
        label, why = "measure on and off under real load", head
    config = speculative_config(method, gamma, **_options(method, draft_model, eagle3_model))
    return Recommendation(method, gamma, label, why, tuple(reasons), config, alternatives,
                          measure_first, rules, crossover)


def _measured_gamma(method, alpha, c, reasons):
    """Rule ``measured``: the smallest gamma within :data:`GAMMA_TOLERANCE` of Theorem 3.8's
    best speedup (:func:`specnb.theory.optimal_gamma`), at most :func:`vllm_gamma_limit`; or
    (None, why off) when alpha <= c. Appends the reason to ``reasons``."""
    import numpy as np

    from ..theory import (MAX_GAMMA, operations_factor, optimal_gamma, optimum_beyond_limit,
                          walltime_speedup)

    g, speed = optimal_gamma(alpha, c)
    if g == 0:
        return None, Note("alpha-not-above-c", f"Corollary 3.9 of Leviathan et al.: "
                          f"speculation pays only when alpha > c (here alpha={alpha:g}, "
                          f"c={c:g})")
    best, speed = int(g), float(speed)
    beyond = bool(optimum_beyond_limit(alpha, c))
    curve = np.array([float(walltime_speedup(alpha, k, c)) for k in range(1, best + 1)])
    near = int(np.argmax(curve >= (1.0 - GAMMA_TOLERANCE) * speed)) + 1
    limit, limit_src = vllm_gamma_limit()
    gamma = min(near, limit)
    at = float(walltime_speedup(alpha, gamma, c))
    where = (f"Theorem 3.8 rises with every gamma up to optimal_gamma's search limit "
             f"{MAX_GAMMA} ({speed:.2f}x there; with c = {c:g} the optimum lies beyond it)"
             if beyond else f"Theorem 3.8's optimum is gamma {best} ({speed:.2f}x)")
    why = []
    if near < best or beyond:
        why.append(f"gamma {near} is the smallest within {GAMMA_TOLERANCE:.0%} of it")
    if limit < near:
        why.append(f"capped at {limit}, the longest num_speculative_tokens of a vLLM "
                   f"measurement bundled in data/engine_measurements.csv ({limit_src}): Eq. 1's "
                   "i.i.d. alpha overstates longer drafts")
    reasons.append(Note("gamma-measured", f"gamma {gamma} from alpha={alpha:g}, c={c:g}: "
                        f"{where}" + ("; " + "; ".join(why) if why else "") +
                        f"; gamma {gamma} gives {at:.2f}x at "
                        f"{operations_factor(alpha, gamma, c):.2f}x the operations (Theorem "
                        f"3.11); {theorem_sentence()}"))
    if method == "mtp" and gamma > 1:
        reasons.append(Note("mtp-single-layer", "with a single MTP layer vLLM warns that "
                            "gamma > 1 reruns the same layer and lowers acceptance; multi-layer "
                            "MTP checkpoints avoid it"))
    return gamma, None


def _starting_gamma(method, temperature, reasons):
    """The starting gamma of :data:`DEFAULT_GAMMA`, capped by rule ``sampling`` when
    temperature > 0: (gamma, rules fired). Appends the reason to ``reasons``."""
    gamma = DEFAULT_GAMMA[method]
    start = {"mtp": "vLLM's MTP example; more reruns the same MTP layer and lowers "
                    "acceptance, vLLM warns",
             "eagle3": "the article's 'start at 3-5'; EAGLE-3's SGLang batch table uses "
                       "chain length 3",
             "ngram": "vLLM's docs and the article's n-gram example",
             "draft_model": "vLLM's draft-model examples"}[method]
    if temperature > 0 and gamma > SAMPLING_GAMMA_CAP:
        ev = sampling_gamma_evidence()
        reasons.append(Note(
            "gamma-sampling-cap",
            f"gamma {SAMPLING_GAMMA_CAP}: {method} starts at {gamma} ({start}), capped at "
            f"{SAMPLING_GAMMA_CAP} because temperature {temperature:g} samples: acceptance "
            f"drops, and at Leviathan Table 4's temperature-1 alphas "
            f"({ev['alpha'].min():.2f}-{ev['alpha'].max():.2f}) gamma {SAMPLING_GAMMA_CAP} "
            f"reaches at least {ev['share_of_best'].min():.0%} of the best gamma's "
            "Theorem 3.8 speedup with no more operations (the article: 'small gamma, 2-3')"))
        return SAMPLING_GAMMA_CAP, ("sampling",)
    reasons.append(Note("gamma-start", f"gamma {gamma}: the starting point for {method} "
                        f"({start})" + (f"; temperature {temperature:g} samples, and {gamma} is "
                                        f"already at most {SAMPLING_GAMMA_CAP} (the article: "
                                        "'small gamma, 2-3')" if temperature > 0 else "")))
    return gamma, ("sampling",) if temperature > 0 else ()


def _peak_batch_rule(method, peak_batch, what, reasons):
    """Rule ``peak_batch`` (no GPU, model, context): (measure_first, None, headline or None)."""
    threshold, _source = measure_threshold()
    if peak_batch < threshold:
        return False, None, None
    sentence, _ = batch_sentence(method)
    reasons.append(Note("peak-batch-measure-first", f"peak batch {peak_batch} >= {threshold}: "
                        f"{sentence}; compare {what} with speculation on and off at the peak "
                        "(specnb.advise.compare_bench)"))
    return True, None, sentence.split(";")[0] + ("; EAGLE-3 stayed above 1x" if method == "eagle3"
                                                 else "")


def _peak_batch_model_rule(method, gamma, peak_batch, what, reasons, where, gpu_name, *,
                           alpha, workload, draft_model):
    """Rule ``peak_batch_model``: the step-time model's crossover for the method at gamma:
    (measure_first, crossover, headline or None)."""
    from .. import serving

    gpu, model, context, gpus = where
    threshold, sentence = measure_threshold(
        gpu, model, context, method=method, gamma=gamma, alpha=alpha, workload=workload,
        gpus=gpus, draft_model=draft_model if method == "draft_model" else None,
        max_batch=min(max(MODEL_MAX_BATCH, peak_batch), serving.MAX_BATCH_SEARCH))
    crossover = threshold - 1
    if peak_batch < threshold:
        reasons.append(Note("peak-batch-within-crossover",
                            f"peak batch {peak_batch} <= crossover {crossover}: {sentence}"))
        return False, crossover, None
    reasons.append(Note("peak-batch-beyond-crossover", f"peak batch {peak_batch} > crossover "
                        f"{crossover}: {sentence}; compare {what} with speculation on and off "
                        "at the peak (specnb.advise.compare_bench)"))
    return True, crossover, (f"the step-time model predicts no gain from batch {threshold} "
                             f"(crossover {crossover}) at context {context:,} on {gpu_name}: "
                             "confirm at the peak")


def _options(method, draft_model, eagle3_model) -> dict:
    """The ``speculative_config`` options beside method and gamma (placeholder model ids)."""
    if method == "ngram":
        return dict(NGRAM_OPTIONS)
    if method == "draft_model":
        return {"model": draft_model or "<draft-model>"}
    if method == "eagle3":
        return {"model": eagle3_model or "<eagle3-drafter>"}
    return {}

