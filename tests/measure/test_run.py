"""specnb.measure.run on the bundled pair: every greedy run lossless, the streamed rounds
predicted by teacher forcing, prediction beside measurement (Eq. 1, Theorem 3.8, the timing
model, leave one gamma out), prompt lookup, the JSON form; and on stand-ins, the identical-draft
invariant under the target's generation_config processing."""

import copy
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb import acceptance as acc  # noqa: E402
from specnb import measure as M  # noqa: E402
from specnb import theory  # noqa: E402

from .standins import _tok, llama, small_measure  # noqa: E402

pytestmark = pytest.mark.slow  # every test here measures with transformers

MAX_NEW = 32
GAMMAS = (1, 3)


@pytest.fixture(scope="module")
def result(models):
    """One small measurement: 1 prompt per task, gammas 1 and 3, greedy, both drafts, PLD."""
    return M.measure(models=models, per_task=1, gammas=GAMMAS, temperatures=(0.0,),
                     max_new_tokens=MAX_NEW, repeats=1, warmup=1, progress=False)


def test_every_greedy_run_is_lossless(result):
    spec = result.runs[~result.runs["method"].isin(["plain", "plain_short"])]
    assert len(spec) == 3 * (2 * len(GAMMAS) + len(GAMMAS))
    assert spec["lossless"].tolist() == [True] * len(spec)
    assert result.lossless is True and result.summary["lossless"].all()


def test_greedy_rounds_from_teacher_forcing_match_the_streamed_rounds(result):
    # At T = 0 the teacher-forced betas determine every round of assisted decoding.
    runs = result.runs[result.runs["method"] == "assisted"]
    for _, run in runs.iterrows():
        b = result.betas[(result.betas["draft"] == run["draft"])
                         & (result.betas["prompt"] == run["prompt"])]["betas"].iloc[0]
        predicted = acc.greedy_rounds(b, int(run["gamma"]), MAX_NEW)
        assert predicted.produced.tolist() == list(run["accept_lengths"]), \
            (run["draft"], run["gamma"], run["prompt"])
        # one target forward per round; the draft runs k forwards per round
        assert run["target_forwards"] == predicted.n_rounds
        assert run["draft_forwards"] == predicted.draft_len.sum()


def test_tau_measured_matches_betas_and_iid_prediction(result):
    s = result.summary
    # without the i.i.d. assumption, the greedy prediction is exact
    np.testing.assert_allclose(s["tau_measured"], s["tau_betas"], rtol=1e-12)
    # Eq. 1 from alpha: within the tolerance the alpha interval and the finite-length and
    # non-i.i.d. effects allow (tau at the CI ends, widened by 15%)
    for _, row in s.iterrows():
        lo = theory.expected_tokens_per_step(row["alpha_ci_low"], row["gamma"])
        hi = theory.expected_tokens_per_step(row["alpha_ci_high"], row["gamma"])
        assert lo * 0.85 <= row["tau_measured"] <= hi * 1.15, row.to_dict()
        assert 1.0 <= row["tau_measured"] <= row["gamma"] + 1


def test_bigger_draft_has_higher_alpha(result):
    a = result.alpha[result.alpha["task"] == "all"].set_index("draft")["alpha"]
    assert a["draft-2x128"] > a["draft-1x64"] > 0.05
    for _, row in result.alpha.iterrows():
        if not np.isnan(row["ci_low"]):
            assert row["ci_low"] <= row["alpha"] <= row["ci_high"]


def test_alpha_counted_from_runs_agrees_with_teacher_forcing(result):
    for _, row in result.summary.iterrows():
        assert abs(row["alpha_counted"] - row["alpha"]) < 0.12, row.to_dict()


def test_predictions_and_timing_model_are_reported(result):
    s = result.summary
    for _, row in s.iterrows():
        assert row["speedup_predicted"] == pytest.approx(
            theory.walltime_speedup(row["alpha"], row["gamma"], row["c"]))
        assert row["speedup_measured"] > 0 and row["c"] > 0
    t = result.timing
    assert set(t["draft"]) == {"draft-2x128", "draft-1x64"}
    assert (t["t_target_forward"] > 0).all() and (t["c"] > 0).all()
    # one joint fit: the target's times are shared, and no fitted time is negative or NaN
    for col in ("t_call", "t_target", "t_round"):
        assert t[col].nunique() == 1
    fitted = t[["t_call", "t_target", "t_draft", "t_round"]].to_numpy()
    assert (fitted >= 0).all() and not np.isnan(fitted).any()
    assert t["warnings"].map(lambda w: isinstance(w, str)).all()
    assert (s["speedup_timing_model"] > 0).all()


def test_leave_one_gamma_out_prediction_is_reported(result):
    s = result.summary
    loo = s["speedup_predicted_loo"]
    assert loo.notna().all() and (loo > 0).all()
    # it is a prediction, not the in-sample fit: it differs from the timing model's own figure
    assert not np.allclose(loo, s["speedup_timing_model"])
    obj = json.loads(json.dumps(result.to_json()))
    assert len(obj["speedup_predicted_loo"]) == len(s)


def test_prompt_lookup_runs_on_copy_heavy_prompts(result):
    p = result.pld.set_index(["gamma", "task"])
    assert p["lossless"].all()
    # copying prompts give prompt lookup something to copy
    assert p.loc[(3, "copy-edit"), "tau"] > 1.0


def test_json_keys(result):
    obj = json.loads(json.dumps(result.to_json()))
    for key in ("alpha", "gamma", "temperature", "tau_measured", "tau_predicted",
                "speedup_measured", "speedup_predicted", "c", "lossless"):
        assert key in obj and len(obj[key]) == len(result.summary)
    assert obj["lossless_all"] is True


def test_bad_arguments_are_named(models):
    with pytest.raises(ValueError, match="gammas"):
        M.measure(models=models, gammas=[0])
    with pytest.raises(ValueError, match="temperatures"):
        M.measure(models=models, temperatures=[-1])
    with pytest.raises(ValueError, match="device"):
        M.resolve_device("tpu")
    with pytest.raises(ValueError, match="dtype"):
        M.resolve_dtype("int8")


# --------------------------------------------------------------------------- logits processors

PROCESSING = [
    dict(repetition_penalty=1.05),
    dict(repetition_penalty=1.3, no_repeat_ngram_size=2),
    dict(suppress_tokens=list(range(2, 40)), bad_words_ids=[[50], [60, 61]]),
    dict(min_new_tokens=6),
]


@pytest.mark.parametrize("gen", PROCESSING, ids=lambda g: ",".join(g))
def test_identical_draft_accepts_everything_under_generation_config_processing(gen):
    target = llama(2, **gen)
    draft = copy.deepcopy(target)
    m = small_measure({"target": (target, _tok()), "drafts": {"same": (draft, None)}},
                      gammas=(1, 3), temperatures=(0.0, 1.0))
    assert m.config["processing"]["0"], "the processors were not picked up"
    g0 = m.summary[m.summary["temperature"] == 0.0]
    assert (g0["alpha"] == 1.0).all() and (g0["alpha_counted"] == 1.0).all()
    np.testing.assert_allclose(g0["tau_measured"], g0["tau_betas"], rtol=1e-12)
    runs = m.runs[(m.runs["method"] == "assisted") & (m.runs["temperature"] == 0.0)]
    for _, r in runs.iterrows():  # every full round yields gamma + 1 tokens
        assert all(n == r["gamma"] + 1 for n in r["accept_lengths"][:-1]), r["accept_lengths"]
    g1 = m.summary[m.summary["temperature"] == 1.0]
    if "min_new_tokens" in gen:
        # transformers' assistant drops the min-length processors: at T > 0 the draft keeps the
        # end-of-sequence mass the target removes, so sum(min(p, q)) falls short by that mass
        assert ((g1["alpha"] < 1.0) & (g1["alpha"] > 0.99)).all()
    else:
        np.testing.assert_allclose(g1["alpha"], 1.0, atol=1e-5)


@pytest.mark.parametrize("gen", [dict(repetition_penalty=1.3, no_repeat_ngram_size=2),
                                 dict(min_new_tokens=6, suppress_tokens=[5, 6, 7])],
                         ids=["penalties", "min-length"])
def test_teacher_forcing_predicts_the_rounds_of_another_draft_exactly(gen):
    target = llama(2, **gen)
    draft = llama(1, seed=3)  # the draft's own config does not matter: the target's is used
    m = small_measure({"target": (target, _tok()), "drafts": {"other": (draft, None)}},
                      gammas=(1, 3))
    runs = m.runs[m.runs["method"] == "assisted"]
    for _, r in runs.iterrows():
        b = m.betas[m.betas["prompt"] == r["prompt"]]["betas"].iloc[0]
        pred = acc.greedy_rounds(b, int(r["gamma"]), 12)
        assert pred.produced.tolist() == list(r["accept_lengths"])
    assert m.lossless is True


def test_unknown_loop_refused_before_loading():
    with pytest.raises(ValueError, match="loop must be one of"):
        M.measure(target="data/models/nosuch", loop="vllm")
    with pytest.raises(ValueError, match="without repeats"):
        M.measure(loop=["reference", "reference"])
    with pytest.raises(ValueError, match="gammas 48 is more than any round can draft"):
        M.measure(target="data/models/nosuch", gammas=[48], max_new_tokens=48)


@pytest.fixture(scope="module")
def both_loops(models):
    """Both loops on one prompt per task, gammas 1 and 3, greedy and T = 1, draft-1x64."""
    one = {**models, "drafts": {"draft-1x64": models["drafts"]["draft-1x64"]}}
    return M.measure(models=one, per_task=1, gammas=GAMMAS, temperatures=(0.0, 1.0),
                     max_new_tokens=MAX_NEW, repeats=1, warmup=1, pld=False, progress=False,
                     loop=["transformers", "reference"])


def test_both_loops_run_the_same_greedy_rounds(both_loops):
    s = both_loops.summary
    assert sorted(s["loop"].unique()) == ["reference", "transformers"]
    g = s[s["temperature"] == 0.0].set_index(["loop", "gamma"])
    for gamma in GAMMAS:
        a, b = g.loc[("transformers", gamma)], g.loc[("reference", gamma)]
        assert a["tau_measured"] == b["tau_measured"] == pytest.approx(a["tau_betas"])
        assert a["alpha_counted"] == b["alpha_counted"]
        assert (a["target_forwards"], a["draft_forwards"]) == (b["target_forwards"],
                                                               b["draft_forwards"])
    assert both_loops.lossless is True
    ref = both_loops.runs[both_loops.runs["method"] == "reference"]
    assert (ref["new_tokens"] == ref["accept_lengths"].map(sum)).all()
    assert (ref["rounds"] == ref["target_forwards"]).all()


def test_both_loops_overhead_interval_and_views(both_loops):
    t = both_loops.timing
    assert sorted(t["loop"]) == ["reference", "transformers"] and (t["t_round"] >= 0).all()
    s = both_loops.summary
    ok = s["speedup_ci_low"].notna()
    assert ((s.loc[ok, "speedup_ci_low"] <= s.loc[ok, "speedup_measured"])
            & (s.loc[ok, "speedup_measured"] <= s.loc[ok, "speedup_ci_high"])).all()
    for _, row in s.iterrows():
        tr = t[t["loop"] == row["loop"]].iloc[0]
        if tr["t_target"] > 0:
            tau = theory.expected_tokens_per_step(row["alpha"], int(row["gamma"]))
            assert row["speedup_with_overhead"] == pytest.approx(
                tau * tr["t_target"] / (tr["t_target"] + tr["t_round"]
                                        + row["gamma"] * tr["t_draft"]))
            assert row["t_round"] == tr["t_round"]
    ref = both_loops.for_loop("reference")
    assert set(ref.summary["loop"]) == {"reference"} and set(ref.timing["loop"]) == {"reference"}
    assert "assisted" not in set(ref.runs["method"]) and ref.config["loops"] == ["reference"]
    with pytest.raises(ValueError, match="loop must be one this measurement ran"):
        ref.for_loop("transformers")


def test_reference_loop_refuses_a_target_with_logits_processors():
    target, draft = llama(2, repetition_penalty=1.3), llama(1, seed=1)
    with pytest.raises(ValueError, match="loop 'reference' applies no logits processors"):
        small_measure({"target": (target, _tok()), "drafts": {"d": (draft, None)}},
                      loop="reference")
