"""specnb/serving/fit.py: the non-negative fit and the engine-profile fits on the published
points."""

import numpy as np
import pytest

from specnb import data
from specnb.serving import engines as P
from specnb.serving import fit as F


@pytest.fixture(scope="module")
def table():
    """The scored points with the model's parts (computed once for this module)."""
    return F.points_table(F.load_points())


def test_nnls_and_fit_recover_known_parameters():
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 1, (30, 3))
    x = np.array([0.5, 0.0, 2.0])
    assert np.allclose(F.nnls(a, a @ x), x, atol=1e-10)
    assert (F.nnls(a, -a @ x) == 0).all()  # all-negative targets: the zero vector
    b, g = np.array([1, 8, 32, 64] * 3), np.repeat([2, 3, 4], 4)
    f = P.features(b, g, draft_vocab=32000)
    base = 5.0 + 0.1 * b
    need = base + 0.3 * f["draft_step_ms"] + 7.0 * f["verify_token_us"]
    theta = F.fit_profile(base, need, {"draft_step_ms": f["draft_step_ms"],
                                       "verify_token_us": f["verify_token_us"],
                                       "draft_logits_ns": f["draft_logits_ns"]})
    assert theta["draft_step_ms"] == pytest.approx(0.3) and theta["verify_token_us"] == \
        pytest.approx(7.0) and theta["draft_logits_ns"] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="at most 10 columns"):
        F.nnls(np.ones((3, 11)), np.ones(3))


#: The sources issue 16's in-sample goals were set on.
ISSUE16_SOURCES = {"vllm-i20780", "vllm-pr16937", "eagle3-t5-vllm", "eagle3-t3-sglang"}


def test_the_fits_reproduce_the_csv_and_meet_the_goals(table):
    # refit every profile on the published points: the CSV holds these values
    t = table
    for name, (free, _) in F.FREE.items():
        rows = t[t["fit_class"] == name]
        theta = F.fit(rows, free)
        assert theta == pytest.approx(F.fitted_profile(name), rel=1e-4, abs=1e-6), name
        for key, part in rows.groupby("source_key"):
            if key not in ISSUE16_SOURCES:  # later sources: scored held out (below)
                continue
            med, _, ver = F.summary_numbers(part, F.predict(part, free, theta))
            # issue 16 goals: vLLM sources median <= 5 %, verdicts >= 95 %; SGLang <= 8 %
            assert med <= (0.08 if name.startswith("sglang") else 0.05), key
            if not name.startswith("sglang"):
                assert ver >= 0.95, key
    # V0's per-verified-token cost lands inside vLLM PR #5691's 33-71 us (batch expansion)
    assert 33 <= P.profile("vllm-v0").verify_token_us <= 71




def test_points_mark_borrowed_taus_and_trees(table):
    pts = F.load_points()
    kinds = pts.set_index("id")["tau_kind"]
    # a tau copied from another source is marked borrowed, never printed as published
    assert kinds["vllm-pr16937-eagle-K2-B1"].startswith("borrowed: ")
    assert kinds["e3t3-sglang-eagle-B2"].startswith("borrowed: issue #20780")
    assert kinds["vllm-i20780-eagle-K2-B1"] == "published"
    # a speedup whose baseline another run printed says so (PR #4716's send_one run)
    metric = pts.set_index("id")["metric"]
    assert "BORROWED" in metric["sglang-pr4716-eagle3-B1-s8k8n64-send-one"]
    assert "BORROWED" not in metric["sglang-pr5318-eagle3-B1-s3k1n4"]
    t = table
    assert set(t.loc[t["source_key"] == "angelslim-i163", "fit_class"]) == {"sglang-moe"}
    assert set(t.loc[t["source_key"] == "eagle3-t3-sglang", "fit_class"]) == {"sglang"}
    # a tree verifies its num_draft_tokens per sequence: T_V above the chain's at steps + 1
    tree = t[(t["source_key"] == "angelslim-i163") & (t["num_draft_tokens"] == 64)].iloc[0]
    assert tree["ndt_used"] == 64 and tree["tv"] > tree["tp"]
    # points where speculation loses are among the scored ones (verdicts can fail)
    assert (t["speedup"] < 1).sum() >= 10


def test_physics_parameter_is_fitted_through_the_plain_step_too(table):
    # a synthetic expert_us recovered: needed costs made with a known value
    t = table
    rows = t[t["fit_class"] == "sglang-moe"].copy()
    free = ["sd_overhead_ms", "expert_us"]
    theta = {"sd_overhead_ms": 2.0, "expert_us": 3.0}
    pred = F.predict(rows, free, theta)
    rows["speedup"] = pred
    rows["needed"] = rows["tau_used"] * rows["tp"] / rows["speedup"]
    got = F.fit(rows, free)
    assert got == pytest.approx(theta, rel=1e-6)


#: Figures whose goal (fit.GOALS) is not met yet (issue 25): pinned where they stand, so a
#: regression still fails; raise them to the goal when the model gets there. None now: SGLang
#: dense was 10.1 % on two sources and 11.9 % with SGLang PR #4247's 1-GPU trees, 6.7 % (goal
#: 8 %) since SGLang PR #5318's chain and small tree (own baseline) and PR #4716's send_one run
#: joined; it hangs on PR #5318's one chain point (11.6 % without it; docs/serving.md).
NOT_YET: dict = {}


def test_every_accuracy_figure_holds_its_goal(table):
    """The benchmark's published-point scores (benchmarks/bench_serving_model.py section 8),
    computed here on the fast tier: a change that pushes a held-out median past its goal
    fails make check."""
    fig = F.accuracy_figures(table)
    assert set(F.GOALS) <= set(fig)
    for name, (med, ver) in {**F.GOALS, **NOT_YET}.items():
        f = fig[name]
        assert f["kind"] != "in-sample", name
        assert f["median"] <= med, (name, f)
        if ver is not None:
            assert f["verdicts"] >= ver, (name, f)
    # held-out scores name what was held out; several sources for the MoE class
    assert fig["moe held out"]["kind"] == "held out"
    assert len(fig["moe held out"]["sources"]) >= 2
    assert fig["sglang dense held out by series"]["kind"] == "held out by series"
    assert fig["sglang dense held out by series"]["median"] <= 0.08  # one head left out
    assert len(fig["sglang held out"]["sources"]) >= 4
    # the consumer figure holds vLLM V0's EAGLE-3 Table 5 out with the V1 profile plus V0's
    # batch-expansion cost from vLLM PR #5691 (never fitted on a speedup)
    assert fig["consumer gpu held out"]["sources"] == ["eagle3-t5-vllm", "vllm-pr24243"]


def test_v0_batch_expansion_cost_is_derived_from_pr5691_alone(table):
    d = data.load("vllm_pr5691_scoring")
    per_row = ((d["batch_expansion_ms"] - d["mqa_scorer_ms"])
               / (d["batch_size"] * (d["num_speculative_tokens"] + 1)) * 1e3)
    us = F.batch_expansion_us_per_token()
    assert per_row.min() <= us <= per_row.max()  # inside the PR's 33-71 us per row
    assert round(us, 1) == 37.8
    # the held-out prediction of a one-source class carries it; a NOT_FITTED source does not
    t = table
    v0 = t[t["source_key"] == "eagle3-t5-vllm"]
    free = F.FREE["vllm"][0]
    theta = F.fit(t[t["fit_class"] == "vllm"], free)
    plain_v1 = F.predict(v0, free, theta)
    held = F.predict_from_other_class(t, "eagle3-t5-vllm", "vllm")
    assert (held < plain_v1).all()  # a verified-token cost lowers every speedup
    pr = t[t["source_key"] == "vllm-pr24243"]
    assert np.allclose(F.predict_from_other_class(t, "vllm-pr24243", "vllm"),
                       F.predict(pr, free, theta))
