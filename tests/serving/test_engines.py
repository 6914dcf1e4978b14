"""specnb/serving/engines.py and data/engine_profiles.csv: provenance, costs, the fits."""

import numpy as np
import pytest

from specnb import data, serving as S
from specnb.serving import engines as P


def test_required_profiles_with_provenance():
    assert {"vllm", "vllm-v0", "sglang", "ideal", "specdecode-bench"} <= set(P.profile_names())
    assert S.engine_names() == P.profile_names()
    assert P.DEFAULT_ENGINE == "vllm"
    df = data.load("engine_profiles")
    for col in ("engine", "parameter", "value", "unit", "fit", "fitted_on", "n_points",
                "description", *data.PROVENANCE_COLUMNS):
        assert col in df.columns
    assert (df["source"] != "").all() and (df["note"] != "").all()
    assert set(df["fit"]) <= {"fitted", "default", "zero", "ideal", "published", "derived"}
    fitted = df[df["fit"] == "fitted"]
    # every fitted value names the sources and the number of points it was fitted on
    meas = data.load("engine_measurements")
    keys = set(meas["source_key"])
    for r in fitted.itertuples():
        on = {k.strip() for k in r.fitted_on.split(",")}
        assert on <= keys and int(r.n_points) > 0, r
        assert int(r.n_points) <= int(meas["source_key"].isin(on).sum())
    # ideal is the roofline only: every cost 0, ideal efficiencies
    ideal = P.profile("ideal")
    assert ideal.sd_overhead_ms == 0 and ideal.draft_step("eagle") == 0
    assert ideal.efficiency == {"bandwidth": 1.0, "compute": 1.0, "fixed_ms": 0.0,
                                "head_fixed_ms": 0.0, "overlap": 1.0}


def test_engine_measurements_provenance():
    df = data.load("engine_measurements")
    assert len(df) >= 65 and df["id"].is_unique
    assert set(df["profile"]) == {"vllm", "vllm-v0", "sglang", "mlc-llm"}
    assert (df["source"] != "").all() and (df["table"] != "").all()
    # issue 25: every point with its URL; the new sources; borrowed taus marked in the data
    assert df["url"].str.startswith("https://").all()
    assert {"specforge-i339", "angelslim-i163", "vllm-pr24243", "sglang-docs-dsv3"} <= set(
        df["source_key"])
    borrowed = df[df["tau_borrowed"].astype(str) == "True"]
    assert set(borrowed["source_key"]) == {"vllm-pr16937"}
    assert borrowed["tau_note"].str.startswith("borrowed").all()
    # SGLang's tree flags as published: num_draft_tokens counts the root (chain: steps + 1)
    trees = df[df["source_key"].isin(["specforge-i339", "angelslim-i163"])]
    assert (trees["num_draft_tokens"].astype(int) >= trees["gamma"].astype(int)).all()
    assert (trees["topk"].astype(int) > 1).any()


def test_extra_cost():
    p = P.EngineProfile("x", sd_overhead_ms=1.0, draft_step_ms={"eagle": 0.5, "*": 0.1},
                        draft_logits_ns=100.0, verify_token_us=10.0)
    # 1 + 3 x 0.5 + 64 x 3 x 128.256 x 100 ns + 64 x 4 x 10 us
    want = 1.0 + 1.5 + 64 * 3 * 128.256 * 100e-6 + 64 * 4 * 10e-3
    assert P.extra_cost_ms(p, 64, 3, method="eagle", draft_vocab=128256) == pytest.approx(want)
    assert P.extra_cost_ms(p, 1, 2, method="mtp") == pytest.approx(1.0 + 0.2 + 3 * 10e-3)
    # proposal rate: only M gamma of the drafts are verified
    assert P.extra_cost_ms(P.EngineProfile("y", verify_token_us=10.0), 10, 4, method="ngram",
                           proposal_rate=0.5) == pytest.approx(10 * 3 * 10e-3)
    keep = P.EngineProfile("z")
    assert P.extra_cost_ms(keep, 8, 2, method="eagle",
                           default_sd_overhead_ms=S.SD_OVERHEAD_MS) == S.SD_OVERHEAD_MS


def test_unknown_engine():
    with pytest.raises(ValueError, match="engine must be one of vllm, vllm-v0, sglang, "):
        P.profile("trtllm")
    assert P.profile("SGLang").name == "sglang"


def test_setup_takes_the_profile():
    st = S.setup("H100", "Llama-3.1-8B", "eagle3")
    assert st.engine.name == "vllm" and st.sd_overhead_ms == P.profile("vllm").sd_overhead_ms
    sg = S.setup("H100", "Llama-3.1-8B", "eagle3", engine="sglang")
    b, s, g = 64, 512, 3
    want = P.extra_cost_ms("sglang", b, g, method="eagle3", draft_vocab=32000)
    assert S.t_engine_ms(sg, b, s, g) + sg.sd_overhead_ms == pytest.approx(want)
    ideal = S.setup("H100", "Llama-3.1-8B", "eagle3", engine="ideal")
    assert ideal.sd_overhead_ms == 0 and ideal.target_efficiency.overlap == 1.0
    assert ideal.target_efficiency.bandwidth == 1.0 and ideal.draft_efficiency.fixed_ms == 0
    # the roofline alone is an upper bound on every fitted engine at these shapes
    for name in ("vllm", "vllm-v0", "sglang"):
        other = S.setup("H100", "Llama-3.1-8B", "eagle3", engine=name)
        assert S.speedup(ideal, b, s, g, tau=2.8) > S.speedup(other, b, s, g, tau=2.8)
    with pytest.raises(ValueError, match="engine must be one of"):
        S.setup("H100", "Llama-3.1-8B", "eagle3", engine="trtllm")


def test_profile_per_target_class_and_routing_skew():
    assert P.profile_for("sglang", S.architecture("Qwen3-30B-A3B")).name == "sglang-moe"
    assert P.profile_for("sglang", S.architecture("Llama-3.1-8B")).name == "sglang"
    assert P.profile_for("vllm", S.architecture("DeepSeek-V3")).name == "vllm"  # no vllm-moe
    assert S.setup("H100", "Qwen3-30B-A3B", "eagle3", gpus=2, engine="sglang").engine.name \
        == "sglang-moe"
    skewed = P.with_routing_skew("vllm", 0.3)
    assert skewed.engine_step().routing_skew == 0.3
    assert skewed.engine_step().graph_cap_tokens == 512  # the profile's other fields kept
    with pytest.raises(ValueError, match=r"routing_skew must be in \[0, 0.95\]"):
        P.with_routing_skew("vllm", 1.0)
    assert P.profile("sglang").trees and not P.profile("vllm").trees


def test_v0_profile_caps_cuda_graphs_at_v0s_largest_captured_decode_batch():
    """vLLM V0 (v0.6, worker/model_runner.py) captures decode batches of
    ``[1, 2, 4] + [8 i for i in 1..32]`` sequences; its batch-expansion scorer makes a verify
    step a decode batch of its scored tokens, so the cap is on tokens; the launch time per
    layer is the same derivation (PR #1440, V0) as the V1 profile's."""
    captured = [1, 2, 4] + [8 * i for i in range(1, 33)]
    v0 = P.profile("vllm-v0").engine_step()
    assert v0.graph_cap_tokens == max(captured)
    assert v0.eager_layer_us == P.profile("vllm").engine_step().eager_layer_us
