"""specnb.measure.verdict: one verdict per measured method from the measurement's own tables
(faults N1, N12, N22 of the second newcomer trial)."""

import math

import pandas as pd
import pytest

from specnb.measure import verdict as V
from specnb.measure.spread import format_speedup


def _summary():
    rows = []
    # transformers' loop loses everywhere; the reference loop straddles 1 at its best
    for loop, base in (("transformers", 0.6), ("reference", 0.9)):
        for draft, bump in (("draft-2x128", 0.1), ("draft-1x64", 0.0)):
            for g in (1, 3):
                for t in (0.0, 1.0):
                    sp = base + bump + 0.05 * g - 0.2 * t
                    rows.append(dict(loop=loop, draft=draft, gamma=g, temperature=t,
                                     speedup_measured=sp, speedup_ci_low=sp - 0.06,
                                     speedup_ci_high=sp + 0.06))
    return pd.DataFrame(rows)


def _pld():
    rows = []
    for task, sp in (("copy-edit", 1.74), ("prose", 0.95), ("all", 1.21)):
        for g in (1, 5):
            s = sp if g == 5 else 1.0
            rows.append(dict(gamma=g, temperature=0.0, task=task, speedup=s,
                             speedup_ci_low=s - 0.24, speedup_ci_high=s + 0.26))
    return pd.DataFrame(rows)


def test_one_verdict_per_method_and_loop_from_the_best_row():
    out = V.verdicts(_summary(), _pld())
    assert [(v.method, v.loop) for v in out] == [("draft model", "transformers"),
                                                ("draft model", "reference"),
                                                ("prompt lookup", "transformers")]
    tf, ref, pld = out
    # the best row at the lowest temperature: draft-2x128 at gamma 3, 0.6 + 0.1 + 0.15
    assert tf.where == "draft-2x128 at gamma 3" and tf.speedup == pytest.approx(0.85)
    assert tf.verdict == V.LOSES and tf.temperature == 0.0
    assert ref.speedup == pytest.approx(1.15) and ref.verdict == V.PAYS
    # fault N1: prompt lookup paid on copy-edit prompts although the draft models lost
    assert pld.verdict == V.PAYS and pld.where == "copy-edit prompts at gamma 5"
    # fault N22: one precision, the interval's (half-width 0.25 -> 1 decimal)
    assert format_speedup(1.74, 1.50, 2.00) == "1.7x (1.5-2.0)" and "1.7x (1.5-2.0)" in pld.line
    assert "over all tasks at gamma 5" in pld.overall


def test_an_interval_across_1_is_noise_and_no_interval_is_said():
    s = _summary()
    s["speedup_ci_low"], s["speedup_ci_high"] = s["speedup_measured"] - 0.5, s["speedup_measured"] + 0.5
    assert {v.verdict for v in V.verdicts(s)} == {V.NOISE}
    s["speedup_ci_low"] = s["speedup_ci_high"] = math.nan
    v = V.verdicts(s)[1]
    assert v.verdict == V.PAYS and "one prompt: no interval" in v.line


def test_temperature_and_bad_input():
    v = V.verdicts(_summary(), temperature=1.0)[0]
    assert v.temperature == 1.0 and v.speedup == pytest.approx(0.65)
    with pytest.raises(ValueError, match=r"temperature must be one the summary holds, \[0.0, 1.0\], got 0.5"):
        V.verdicts(_summary(), temperature=0.5)
    with pytest.raises(ValueError, match="lacks the columns"):
        V.verdicts(_summary().drop(columns="speedup_ci_low"))
    with pytest.raises(ValueError, match="non-empty"):
        V.verdicts(_summary().iloc[:0])


def test_engine_like_loop_and_the_two_gamma_warning():
    timing = pd.DataFrame({"loop": ["transformers", "transformers", "reference"],
                           "t_round": [3e-3, 3e-3, 0.5e-3], "t_target": [2e-3, 2e-3, 2e-3]})
    loop, ratio, engine = V.engine_like_loop(timing, engine_ratio=0.2)
    assert loop == "reference" and ratio == {"transformers": 1.5, "reference": 0.25}
    # vLLM's default ratio from data/specdecode_bench_predictor.csv: 1.2 ms per step / 5.9 ms
    assert 0.1 < V.engine_like_loop(timing)[2] < 0.3
    assert V.loo_warning(pd.DataFrame({"gamma": [1, 3, 5]})) is None
    assert "2 gammas" in V.loo_warning(pd.DataFrame({"gamma": [1, 3, 1]}))


def test_verdict_text_names_every_method_and_the_loop_to_trust():
    found = V.verdicts(_summary(), _pld())
    text = V.verdict_text(found, "reference")
    # fault N1: draft models, prompt lookup and the reference loop's figure, all named
    assert "the best draft model does not pay in the transformers loop" in text
    assert "the best draft model pays in the reference loop" in text
    assert ("transformers prompt lookup (n-grams up to 2) pays on copy-edit prompts (1.7x "
            "(1.5-2.0) at gamma 5") in text
    assert "The reference loop's per-round overhead is the closer" in text
    assert "Turn on the draft model draft-2x128 at gamma 3, or n-gram drafting (ngram)" in text
    # T9-07: the figure is transformers' prompt lookup; vLLM's drafter is replayed
    assert ("The n-gram figure is transformers prompt lookup (n-grams up to 2)'s; vLLM's own "
            "ngram drafter (vLLM 0.33: the Model Runner V2 kernel, prompt_lookup 5/5 by "
            "default) drafts by other rules: `specnb replay` on your request log gives its "
            "tau.") in text
    assert "vLLM's ngram" not in text
    lose = [v for v in found if v.method == "draft model" and v.loop == "transformers"]
    assert "do not turn it on on this machine" in V.verdict_text(lose)
    with pytest.raises(ValueError, match="trusted_loop must be one of the loops run"):
        V.verdict_text(found, "vllm")


def _pld_counted(per_task):
    """_pld with the prompts behind each row: per_task per task, 2 tasks in "all"."""
    p = _pld()
    p["prompts"] = [2 * per_task if t == "all" else per_task for t in p["task"]]
    return p


def test_a_task_of_two_prompts_is_not_judged_alone():
    """T5-M4: with 2 prompts per task the per-task "interval" is a two-point range; the best of
    every task and gamma picked from such ranges was called "pays". Below MIN_PROMPTS the
    verdict is the all-tasks row's, with the best task beside it as a range."""
    (pld,) = [v for v in V.verdicts(_summary(), _pld_counted(2)) if v.method == "prompt lookup"]
    # all tasks at gamma 5: 1.21 (0.97-1.47), across 1: within noise
    assert pld.name == "all" and pld.gamma == 5 and pld.speedup == pytest.approx(1.21)
    assert pld.verdict == V.NOISE
    assert pld.where == "all tasks (4 prompts, a range, not a 95% interval) at gamma 5"
    assert ("best task copy-edit at gamma 5: 1.7x (1.5-2.0) on 2 prompts, a range, not a 95% "
            "interval") in pld.line and pld.line.startswith(
        "verdict, transformers prompt lookup (n-grams up to 2) (T = 0): within noise over all "
        "tasks (4 prompts") and pld.line.endswith(V.VLLM_NGRAM_POINTER)
    assert "vLLM's ngram" not in pld.line
    text = V.verdict_text(V.verdicts(_summary(), _pld_counted(2)), "reference")
    assert ("transformers prompt lookup (n-grams up to 2) is within noise of plain decoding "
            "over all tasks (4 prompts") in text
    assert "n-gram drafting" not in text.split("Turn on")[-1]  # not recommended
    # enough prompts per task: the task is judged alone, as before
    (pld,) = [v for v in V.verdicts(_summary(), _pld_counted(V.MIN_PROMPTS))
              if v.method == "prompt lookup"]
    assert pld.name == "copy-edit" and pld.verdict == V.PAYS
    assert "for traffic like the copy-edit prompts" in V.verdict_text(
        V.verdicts(_summary(), _pld_counted(V.MIN_PROMPTS)), "reference")


def test_an_all_tasks_verdict_that_pays_recommends_ngram_for_the_whole_traffic():
    p = _pld_counted(3)
    p.loc[p["task"] == "all", "speedup_ci_low"] = 1.05
    found = V.verdicts(_summary(), p)
    assert found[-1].verdict == V.PAYS and found[-1].where.startswith("all tasks (6 prompts)")
    assert "n-gram drafting (ngram) at gamma 5;" in V.verdict_text(found, "reference")
