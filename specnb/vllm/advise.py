"""What to turn on: the article's recommendation table (section 7) as one decision function.

:func:`recommend` maps a situation (does the target carry MTP layers, does an EAGLE-3
drafter exist, is there a same-family small model and spare memory, is the output copy-heavy,
the peak batch, the sampling temperature, optionally a measured alpha and cost ratio c) to a
vLLM method, a draft length gamma, the reasons and a checked ``speculative_config``.
:data:`ARTICLE_SITUATIONS` holds the article's six situations as inputs beside the
recommendation the article prints, so the table can be regenerated and tested row by row.

Rules, in order (the article's summary: "MTP if the model has it, EAGLE-3 if a drafter exists,
otherwise start with n-gram"):

1. method by what is available: ``mtp`` > ``eagle3`` (drafter exists) > ``ngram`` (copy-heavy
   output; ``suffix`` is the alternative) > ``draft_model`` (same-family small model and
   spare memory) > ``eagle3`` if you have not checked for a drafter > ``ngram``;
2. gamma: measured ``alpha`` and ``c`` given -> :func:`specnb.theory.optimal_gamma` (gamma 0
   means leave it off); otherwise the examples in vLLM's docs and the article's FAQ: ngram 4
   (with ``prompt_lookup_min`` 2, ``prompt_lookup_max`` 5), draft_model 5, eagle3 3 (the
   article's "start at 3-5"; EAGLE-3's batch tables use chain length 2-3), mtp 1 (vLLM's MTP
   example; more reruns the same MTP layer);
3. a high temperature (>= :data:`HIGH_TEMPERATURE`, our threshold; the article says "creative
   writing, high temperature") and no measured alpha -> gamma 2 ("small gamma, 2-3");
4. a peak batch >= :data:`MEASURE_BATCH` -> measure on and off under real load first
   (EAGLE-3 paper Table 3: EAGLE below 1x from batch 24; vLLM Table 5: below 1x from 32).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._defaults import DEFAULT_GAMMA  # noqa: F401  (defined there: no config <-> advise cycle)
from .config import speculative_config

__all__ = ["HIGH_TEMPERATURE", "MEASURE_BATCH", "DEFAULT_GAMMA", "Recommendation", "Situation",
           "ARTICLE_SITUATIONS", "recommend", "recommendation_table"]

#: Temperature from which we treat sampling as "high" (our threshold, not the article's).
HIGH_TEMPERATURE = 0.7
#: Peak batch from which speculation can cost throughput (EAGLE-3 Table 3, EAGLE at batch 24).
MEASURE_BATCH = 24


@dataclass(frozen=True)
class Recommendation:
    """What :func:`recommend` advises.

    Attributes
    ----------
    method : vLLM method to configure, or None (leave speculative decoding off).
    gamma : ``num_speculative_tokens`` to start with, or None.
    label : the advice in the words of the article's table ("mtp", "start with ngram or
        suffix", "measure on and off under real load", "small gamma, 2-3"...).
    why : the headline reason.
    reasons : every reason, with sources and numbers.
    config : the checked ``speculative_config`` dict (placeholders for unknown model ids),
        or None when the advice is to leave it off.
    alternatives : other methods worth trying (e.g. ``("suffix",)`` beside ngram).
    measure_first : True when the gain must be measured at peak load before committing.
    gamma_range : the range the article gives, when it gives one.
    """

    method: str | None
    gamma: int | None
    label: str
    why: str
    reasons: tuple = field(default=())
    config: dict | None = None
    alternatives: tuple = field(default=())
    measure_first: bool = False
    gamma_range: tuple | None = None

    def to_row(self) -> dict:
        return {"method": self.method, "gamma": self.gamma, "recommendation": self.label,
                "why": self.why, "alternatives": ", ".join(self.alternatives),
                "measure first": self.measure_first}


@dataclass(frozen=True)
class Situation:
    """One row of the article's table: the situation, our inputs for it, what it prints."""

    situation: str
    inputs: dict
    printed: str
    printed_why: str


#: The article's section 7 table ("What to turn on"), as inputs to :func:`recommend`.
ARTICLE_SITUATIONS = (
    Situation("in-house coding assistant, a few concurrent users",
              {"eagle3_drafter": None, "peak_batch": 4, "temperature": 0.0},
              "eagle3 (if a drafter exists)", "longest acceptance on code, small batches"),
    Situation("serving DeepSeek-V3 / GLM-4.5 families", {"target_has_mtp": True},
              "mtp", "the draft layers are in the checkpoint"),
    Situation("RAG answers, document summaries, code edits", {"copy_heavy": True},
              "start with ngram or suffix", "output copies the input, accepted without training"),
    Situation("a small model of the same family and spare memory",
              {"small_draft_model": True, "spare_memory": True},
              "draft_model", "no training, large low-QPS gain"),
    Situation("peaks of tens of sequences per batch, throughput is the goal",
              {"eagle3_drafter": True, "peak_batch": 64, "goal": "throughput"},
              "measure on and off under real load", "measured below 1x at batch 24-64"),
    Situation("creative writing, high temperature", {"temperature": 1.0},
              "small gamma, 2-3", "low acceptance, long drafts waste compute"),
)


def _bool(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if not isinstance(value, bool):
        allowed = "True, False or None (not checked)" if allow_none else "True or False"
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return value


def recommend(*, target_has_mtp: bool = False, eagle3_drafter: bool | None = False,
              small_draft_model: bool = False, spare_memory: bool = False,
              copy_heavy: bool = False, peak_batch: int = 1, temperature: float = 0.0,
              goal: str = "latency", alpha: float | None = None, c: float | None = None,
              draft_model: str | None = None, eagle3_model: str | None = None
              ) -> Recommendation:
    """Recommend a vLLM speculative method, gamma and config for a serving situation.

    Parameters
    ----------
    target_has_mtp : bool
        The target checkpoint ships MTP layers (DeepSeek-V3, GLM-4.5, MiMo, Qwen3-Next...).
    eagle3_drafter : bool or None
        An EAGLE-3 drafter exists for the target; None = not checked yet (the advice is then
        "eagle3 (if a drafter exists)").
    small_draft_model : bool
        A small model of the same family (same tokenizer and vocabulary) is available.
    spare_memory : bool
        The GPU has memory to spare for a draft model's weights and KV cache.
    copy_heavy : bool
        Output copies the input (RAG answers, summaries, code edits).
    peak_batch : int >= 1
        Peak sequences per batch (concurrency) the server sees.
    temperature : float >= 0
        The sampling temperature most requests use.
    goal : "latency" or "throughput"
        What speculation should buy (article checklist, step 1).
    alpha, c : float or None
        Measured acceptance rate (in [0, 1]) and draft/target cost ratio (>= 0); give both or
        neither. With them gamma comes from :func:`specnb.theory.optimal_gamma`.
    draft_model, eagle3_model : str or None
        Checkpoint ids to put in the config (placeholders otherwise).

    Returns
    -------
    Recommendation

    Raises
    ------
    ValueError
        a flag that is not a bool, peak_batch < 1, temperature < 0, an unknown goal, alpha
        outside [0, 1], c < 0, any NaN or infinity, or only one of alpha and c.
    TypeError
        a number given as a string, an array or a list.
    """
    from .. import _check
    from ..theory import operations_factor, optimal_gamma

    target_has_mtp = _bool("target_has_mtp", target_has_mtp)
    eagle3_drafter = _bool("eagle3_drafter", eagle3_drafter, allow_none=True)
    small_draft_model = _bool("small_draft_model", small_draft_model)
    spare_memory = _bool("spare_memory", spare_memory)
    copy_heavy = _bool("copy_heavy", copy_heavy)
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

    reasons: list[str] = []
    alternatives: tuple = ()
    if target_has_mtp:
        method, label, why = "mtp", "mtp", "the draft layers are in the checkpoint"
        reasons.append("MTP reuses layers already in the checkpoint: no extra model, no extra "
                       "weights to load (article section 6)")
    elif eagle3_drafter:
        method, label = "eagle3", "eagle3"
        why = "longest acceptance of the methods compared" + (
            ", small batches" if peak_batch < MEASURE_BATCH else "")
        reasons.append("EAGLE-3 has the longest acceptance in the EAGLE-3 paper's Table 1 "
                       "(e.g. 6.47x on HumanEval)")
    elif copy_heavy:
        method, label = "ngram", "start with ngram or suffix"
        why = "output copies the input, accepted without training"
        alternatives = ("suffix",)
        reasons.append("n-gram and suffix decoding draft from the prompt and earlier output: no "
                       "model, no training (vLLM docs: light and easy to enable)")
    elif small_draft_model and spare_memory:
        method, label, why = "draft_model", "draft_model", "no training, large low-QPS gain"
        reasons.append("a same-family small model needs no training; vLLM's docs rate draft "
                       "models 'high gain' at low QPS; it needs the same tokenizer and "
                       "vocabulary as the target")
    elif eagle3_drafter is None:
        method, label = "eagle3", "eagle3 (if a drafter exists)"
        why = "longest acceptance of the methods compared" + (
            ", small batches" if peak_batch < MEASURE_BATCH else "")
        alternatives = ("ngram",)
        reasons.append("check for a published EAGLE-3 drafter for your target first; "
                       "without one, start with ngram")
    else:
        method, label = "ngram", "ngram"
        why = "no draft model or training needed"
        reasons.append("no MTP layers, no drafter, no spare draft model: n-gram needs nothing "
                       "(article summary: otherwise start with n-gram)")
    if small_draft_model and not spare_memory and method != "draft_model":
        reasons.append("a draft model would take weights and KV cache from the target, so "
                       "fewer requests fit at once (article section 6)")

    gamma = DEFAULT_GAMMA[method]
    gamma_range = None
    if alpha is not None:
        g, speed = optimal_gamma(alpha, c)
        if g == 0:
            return Recommendation(
                None, None, "keep it off",
                f"alpha {alpha:g} <= c {c:g}: no draft length beats plain decoding",
                tuple(reasons + [f"Corollary 3.9 of Leviathan et al.: speculation pays only "
                                 f"when alpha > c (here alpha={alpha:g}, c={c:g})"]))
        gamma = int(g)
        reasons.append(f"optimal_gamma(alpha={alpha:g}, c={c:g}) = {gamma}: theoretical "
                       f"speedup {speed:.2f}x at {operations_factor(alpha, gamma, c):.2f}x the "
                       "operations (Theorems 3.8 and 3.11; an upper bound, measurements come "
                       "out lower)")
        if method == "mtp" and gamma > 1:
            reasons.append("with a single MTP layer vLLM warns that gamma > 1 reruns the same "
                           "layer and lowers acceptance; multi-layer MTP checkpoints avoid it")
    else:
        reasons.append(f"gamma {gamma}: the starting point for {method} (vLLM's docs use 4 for "
                       "n-gram and 5 for a draft model; the article says start at 3-5)"
                       if method != "mtp" else
                       "gamma 1: vLLM's MTP example; more reruns the same MTP layer and "
                       "lowers acceptance (vLLM's warning)")
        if temperature >= HIGH_TEMPERATURE:
            if gamma >= 3:
                gamma, gamma_range = 2, (2, 3)
                label, why = "small gamma, 2-3", "low acceptance, long drafts waste compute"
            reasons.append(f"temperature {temperature:g} >= {HIGH_TEMPERATURE:g}: acceptance "
                           "drops under sampling, so drafts are kept short (article table)")
    measure_first = peak_batch >= MEASURE_BATCH
    if measure_first:
        label, why = "measure on and off under real load", "measured below 1x at batch 24-64"
        what = "output tok/s" if goal == "throughput" else "TPOT p50/p99"
        reasons.append(f"peak batch {peak_batch} >= {MEASURE_BATCH}: the EAGLE-3 paper measured "
                       "EAGLE below 1x from batch 24 (SGLang, Table 3) and from 32 (vLLM, Table "
                       f"5); compare {what} with speculation on and off at the peak "
                       "(specnb.vllm.compare_bench)")
    options: dict = {}
    if method == "ngram":
        options = {"prompt_lookup_min": 2, "prompt_lookup_max": 5}
    elif method == "draft_model":
        options = {"model": draft_model or "<draft-model>"}
    elif method == "eagle3":
        options = {"model": eagle3_model or "<eagle3-drafter>"}
    config = speculative_config(method, gamma, **options)
    return Recommendation(method, gamma, label, why, tuple(reasons), config, alternatives,
                          measure_first, gamma_range)


def recommendation_table(situations=ARTICLE_SITUATIONS):
    """The article's table regenerated: one :func:`recommend` call per situation.

    Returns a pandas DataFrame with columns situation, method, gamma, recommendation, why,
    article recommendation, article why, matches (recommendation == the printed one).
    """
    import pandas as pd

    rows = []
    for s in situations:
        rec = recommend(**s.inputs)
        rows.append({"situation": s.situation, "method": rec.method, "gamma": rec.gamma,
                     "recommendation": rec.label, "why": rec.why,
                     "article recommendation": s.printed, "article why": s.printed_why,
                     "matches": rec.label == s.printed})
    return pd.DataFrame(rows)
