"""The article's section 7 table ("What to turn on") as situation inputs, beside the rules' advice.

:data:`ARTICLE_SITUATIONS` holds the six rows as situation inputs (only what the row says, plus
what is stated in ``assumed``) beside what the article prints; :func:`recommendation_table`
sets :func:`~specnb.advise.recommend` beside the article's advice and says, row by row,
whether the advice and the article's reason follow from the data, and why not. Used by
notebook 06.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..vllm import DEFAULT_GAMMA
from .evidence import (SAMPLING_GAMMA_CAP, TASK_NAMES, batch_sentence, sampling_gamma_evidence,
                       workload_evidence)
from .recommend import Recommendation, recommend

__all__ = ["Situation", "ARTICLE_SITUATIONS", "compare_with_article", "recommendation_table"]


@dataclass(frozen=True)
class Situation:
    """One row of the article's table as situation inputs, beside what the article prints.

    ``inputs`` holds only what the row's words say; ``assumed`` names any input the row does
    not state. ``claims`` is what the article's advice asserts, to compare with the rules'
    advice: ``method`` (a tuple of acceptable methods), ``measure_first`` (bool),
    ``gamma_range`` ((lo, hi)); ``reason`` names the check of the article's reason
    (``"code"``, ``"copy"``, ``"below_1x"``, ``"sampling"``) or is None when the reason is a
    statement without a number.
    """

    situation: str
    inputs: dict
    printed: str
    printed_why: str
    claims: dict = field(default_factory=dict)
    reason: str | None = None
    assumed: str = ""


#: The article's section 7 table ("What to turn on"), as situation inputs to :func:`recommend`.
ARTICLE_SITUATIONS = (
    Situation("in-house coding assistant, a few concurrent users",
              {"workload": "code", "eagle3_drafter": None, "peak_batch": 4},
              "eagle3 (if a drafter exists)", "longest acceptance on code, small batches",
              {"method": ("eagle3",)}, "code",
              "peak_batch 4 for 'a few users'; eagle3_drafter None: the article's '(if a "
              "drafter exists)'"),
    Situation("serving DeepSeek-V3 / GLM-4.5 families", {"target_has_mtp": True},
              "mtp", "the draft layers are in the checkpoint", {"method": ("mtp",)}),
    Situation("RAG answers, document summaries, code edits", {"workload": "copy-heavy"},
              "start with ngram or suffix", "output copies the input, accepted without training",
              {"method": ("ngram", "suffix")}, "copy"),
    Situation("a small model of the same family and spare memory",
              {"small_draft_model": True, "spare_memory": True},
              "draft_model", "no training, large low-QPS gain", {"method": ("draft_model",)}),
    Situation("peaks of tens of sequences per batch, throughput is the goal",
              {"peak_batch": 64, "goal": "throughput", "eagle3_drafter": True},
              "measure on and off under real load", "measured below 1x at batch 24-64",
              {"measure_first": True}, "below_1x",
              "peak_batch 64: the largest batch measured; eagle3_drafter True: the batch tables "
              "the article cites measure EAGLE and EAGLE-3"),
    Situation("creative writing, high temperature", {"workload": "creative", "temperature": 1.0},
              "small gamma, 2-3", "low acceptance, long drafts waste compute",
              {"gamma_range": (2, 3)}, "sampling",
              "temperature 1.0: the only sampling temperature the tables measure"),
)



def _reason_check(kind: str | None, rec: Recommendation) -> tuple[str, str]:
    """(holds: "yes" / "no" / "not a number", the number behind it) for the article's reason."""
    if kind is None:
        return "not a number", "a statement about the method, not a measured figure"
    if kind == "code":
        ev = workload_evidence("code")
        ok = ev["eagle3_best_task"] == "humaneval"
        return ("yes" if ok else "no",
                f"EAGLE-3's best task in Table 1 is {TASK_NAMES[ev['eagle3_best_task']]} "
                f"({ev['eagle3']:.2f}x on HumanEval)")
    if kind == "copy":
        ev = workload_evidence("copy-heavy")
        ok = ev["pld_best_task"] == "cnndm"
        return ("yes" if ok else "no",
                f"prompt lookup's best task in Table 1 is {TASK_NAMES[ev['pld_best_task']]} "
                f"({ev['pld']:.2f}x)")
    if kind == "below_1x":
        sentence, below = batch_sentence(rec.method)
        if below is None:
            return "not measured", sentence
        return ("yes" if below else f"no, for {rec.method}", sentence)
    if kind == "sampling":
        ev = sampling_gamma_evidence()
        return ("yes", f"at Leviathan Table 4's temperature-1 alphas "
                       f"({ev['alpha'].min():.2f}-{ev['alpha'].max():.2f}) gamma "
                       f"{SAMPLING_GAMMA_CAP} reaches >= {ev['share_of_best'].min():.0%} of "
                       "the best speedup with no more operations")
    raise ValueError(f"reason check must be code, copy, below_1x, sampling or None; got {kind!r}")


def compare_with_article(situation: Situation, rec: Recommendation | None = None) -> dict:
    """The rules' advice for one article row beside the article's, and whether they agree.

    Returns ``{"advice agrees": bool, "differs because": str, "article reason holds": str,
    "evidence": str}``. The advice agrees when every claim in ``situation.claims`` holds for
    ``rec`` (computed with ``recommend(**situation.inputs)`` when None).
    """
    rec = recommend(**situation.inputs) if rec is None else rec
    notes = []
    claims = situation.claims
    if "method" in claims and rec.method not in claims["method"]:
        notes.append(f"the article names {' or '.join(claims['method'])}; the rules give "
                     f"{rec.method or 'off'}: {rec.why}")
    if "measure_first" in claims and rec.measure_first != claims["measure_first"]:
        notes.append("measure-first differs")
    if "gamma_range" in claims:
        lo, hi = claims["gamma_range"]
        if rec.gamma is None:
            notes.append(f"the article keeps drafting at gamma {lo}-{hi} without naming a "
                         f"method; with only n-gram available the rules keep it off until its "
                         f"acceptance is measured (its own warning: alpha 0.2 buys 1.25x for "
                         f"3.21x the operations); with MTP or an EAGLE-3 drafter they give "
                         f"gamma {DEFAULT_GAMMA['mtp']} or "
                         f"{min(DEFAULT_GAMMA['eagle3'], SAMPLING_GAMMA_CAP)}")
        elif not lo <= rec.gamma <= hi:
            notes.append(f"gamma {rec.gamma} outside the article's {lo}-{hi}")
    holds, evidence = _reason_check(situation.reason, rec)
    return {"advice agrees": not notes, "differs because": "; ".join(notes),
            "article reason holds": holds, "evidence": evidence}


def recommendation_table(situations=ARTICLE_SITUATIONS):
    """The article's table beside the rules' advice: one :func:`recommend` call per situation.

    Returns a pandas DataFrame with columns situation, inputs, assumed, method, gamma,
    recommendation, why, rules, article recommendation, article why, advice agrees, differs
    because, article reason holds, evidence.
    """
    import pandas as pd

    rows = []
    for s in situations:
        rec = recommend(**s.inputs)
        cmp = compare_with_article(s, rec)
        rows.append({"situation": s.situation,
                     "inputs": ", ".join(f"{k}={v!r}" for k, v in s.inputs.items()),
                     "assumed": s.assumed, "method": rec.method, "gamma": rec.gamma,
                     "recommendation": rec.label, "why": rec.why, "rules": ", ".join(rec.rules),
                     "article recommendation": s.printed, "article why": s.printed_why,
                     **cmp})
    out = pd.DataFrame(rows)
    out["gamma"] = out["gamma"].astype("Int64")
    return out
