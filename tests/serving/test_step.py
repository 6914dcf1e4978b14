"""specnb.serving.step: bytes, FLOPs and step times; the defaults against their sources."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb import data
from specnb import serving as S
from specnb.serving import step as ST
from tests.tier import examples


def test_step_breakdown_bytes_and_flops():
    br = S.step_breakdown("Llama-3.1-8B", "H100", 32, 1000, 4)
    a = S.architecture("Llama-3.1-8B")
    assert br["kv_bytes"] == 32 * 1000 * 131072
    assert br["weight_bytes"] == a.step_params * 2
    assert br["linear_flops"] == 2 * a.matmul_params_per_token * 32 * 4
    assert br["attention_flops"] == 4 * 32 * 32 * 128 * 32 * 4 * 1000
    assert str(br["bound"]) == "memory"
    assert str(S.step_breakdown("Llama-3.1-8B", "H100", 512, 0, 8)["bound"]) == "compute"
    # tensor parallelism splits weights and FLOPs n ways, KV min(n, kv_heads) ways
    tp = S.step_breakdown("Llama-3.1-8B", "H100", 32, 1000, 4, gpus=16)
    assert tp["weight_bytes"] == br["weight_bytes"] / 16 and tp["kv_bytes"] == br["kv_bytes"] / 8
    assert tp["t_comm_ms"] > 0 and br["t_comm_ms"] == 0
    # weight dtypes: fp8 halves, int4 quarters the weight bytes, but the LM head read each
    # step stays bf16 (T7-02: vLLM quantizes linear layers and experts only)
    head = a.vocab_size * a.hidden_size
    assert S.step_breakdown("Llama-3.1-8B", "H100", 1, 0, dtype="int4")["weight_bytes"] == \
        (a.step_params - head) * 0.5 + head * 2.0
    # a KV budget caps the context read
    capped = S.step_breakdown("Llama-3.1-8B", "H100", 32, 100000, kv_budget=512)
    assert capped["kv_bytes"] == 32 * 512 * 131072


def test_additive_default_reproduces_specdecode_bench_fit():
    """With the defaults (derived from SpecDecode-Bench's Llama8BH100 constants), the target step
    is c_kv x KV tokens + c_compute x query tokens + c_fixed up to attention FLOPs."""
    pred = data.load("specdecode_bench_predictor").set_index("constant")["value"]
    eff = S.DEFAULT_EFFICIENCY
    g = S.gpu("H100-SXM")
    assert round(131072 / pred["target_c_kv"] / g.bandwidth, 3) == eff.bandwidth
    a = S.architecture("Llama-3.1-8B")
    assert round(2 * a.matmul_params_per_token / pred["target_c_compute"] / g.bf16_flops, 3) \
        == eff.compute
    w = a.step_params * 2 / (eff.bandwidth * g.bandwidth)
    assert round(1e3 * pred["target_c_fixed"] - 1e3 * w, 2) == eff.fixed_ms
    b, s, q = 16, 2000, 4
    br = S.step_breakdown("Llama-3.1-8B", "H100-SXM", b, s, q)
    additive = 1e3 * (pred["target_c_kv"] * b * s + pred["target_c_compute"] * b * q
                      + pred["target_c_fixed"])
    assert float(br["time_ms"]) == pytest.approx(additive, rel=0.02)


def test_allreduce_default_is_derived_from_magicdec_table4():
    st = S.magicdec_setup("table4", target_efficiency=S.Efficiency(allreduce_us=0.0))
    r = S.magicdec_table("table4")
    res = r["t_ar_ms"].to_numpy() - S.t_plain_ms(st, r["batch_size"].to_numpy(),
                                                r["context"].to_numpy())
    assert round(res.mean() / 64 * 1e3) == S.DEFAULT_EFFICIENCY.allreduce_us


@settings(max_examples=examples(40), deadline=None)
@given(b=st.integers(1, 512), s=st.integers(0, 100_000), q=st.integers(1, 16),
       overlap=st.sampled_from([0.0, 0.5, 1.0]))
def test_step_time_grows_with_batch_context_and_query(b, s, q, overlap):
    eff = S.Efficiency(overlap=overlap)
    t = lambda *a: S.step_time_ms("Llama-3.1-8B", "A100", *a, efficiency=eff)  # noqa: E731
    # strictly with partial overlap; the ideal roofline is flat while memory-bound
    grows = (lambda x, y: x > y) if overlap < 1 else (lambda x, y: x >= y)  # noqa: E731
    assert grows(t(b + 1, s, q), t(b, s, q))
    assert t(b, s + 1000, q) > t(b, s, q)
    assert grows(t(b, s, q + 1), t(b, s, q))
    # the ideal roofline (overlap 1) is never slower than partial overlap
    assert S.step_time_ms("Llama-3.1-8B", "A100", b, s, q, efficiency=S.Efficiency(overlap=1)) \
        <= t(b, s, q) + 1e-12


def test_step_time_bad_input():
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got 0"):
        S.step_time_ms("Llama-3.1-8B", "H100", 0, 100)
    with pytest.raises(ValueError, match="dtype must be one of"):
        S.step_time_ms("Llama-3.1-8B", "H100", 1, 100, dtype="fp4")
    with pytest.raises(ValueError, match="gpus must be an integer >= 1"):
        S.step_time_ms("Llama-3.1-8B", "H100", 1, 100, gpus=0)
    with pytest.raises(ValueError, match="overlap must be in"):
        S.Efficiency(overlap=2)
    with pytest.raises(ValueError, match="bandwidth must be in"):
        S.Efficiency(bandwidth=0)


# --------------------------------------------------------------------------- MoE (issue 16)
def test_moe_verification_costs_more_than_dense_at_small_batch():
    ds = "DeepSeek-V3"
    plain = S.step_breakdown(ds, "H200", 1, 2048, 1, dtype="fp8", gpus=8)
    verify = S.step_breakdown(ds, "H200", 1, 2048, 4, dtype="fp8", gpus=8)
    dp = S.step_breakdown("Llama-3.1-70B", "H200", 1, 2048, 1, dtype="fp8", gpus=8)
    dv = S.step_breakdown("Llama-3.1-70B", "H200", 1, 2048, 4, dtype="fp8", gpus=8)
    # 4 tokens read ~3.8x the routed experts of one: 2.57x the weight bytes, where a dense
    # model reads the same weights; T_V / T_AR 1.24 against 1.01 (8x H200, FP8, S = 2048)
    # (T7-02: the LM head is read in bf16, 2 bytes, beside the fp8 layers and experts)
    a, head = S.architecture(ds), S.architecture(ds).embedding_params
    by_hand = [(a.step_params_for(t) - head) * 1.0 + head * 2.0 for t in (1, 4)]
    assert round(float(verify["weight_bytes"] / plain["weight_bytes"]), 2) == \
        round(float(by_hand[1] / by_hand[0]), 2) == 2.53
    assert dv["weight_bytes"] == dp["weight_bytes"]
    assert round(float(verify["time_ms"] / plain["time_ms"]), 2) == 1.24
    assert round(float(dv["time_ms"] / dp["time_ms"]), 2) == 1.01
    # at batch 256 one token per sequence already touches nearly every expert
    big_p = S.step_breakdown(ds, "H200", 256, 2048, 1, dtype="fp8", gpus=8)
    big_v = S.step_breakdown(ds, "H200", 256, 2048, 4, dtype="fp8", gpus=8)
    assert big_v["weight_bytes"] / big_p["weight_bytes"] < 1.001


def test_mla_kv_is_not_split_over_ranks():
    kw = dict(dtype="fp8", kv_dtype="bf16")
    one = S.step_breakdown("DeepSeek-V3", "H200", 4, 10000, 1, gpus=1, **kw)["kv_bytes"]
    eight = S.step_breakdown("DeepSeek-V3", "H200", 4, 10000, 1, gpus=8, **kw)["kv_bytes"]
    assert one == eight == 4 * 10000 * 70272


def test_engine_step_terms_of_a_moe_step():
    """Each EngineStep term on its own, against the formula of specnb/serving/step.py."""
    import dataclasses

    from specnb.serving import moe as M
    from specnb.serving.step import _prep, _step

    prep = _prep("Qwen3-30B-A3B", "H100", "bf16", None, 2, S.DEFAULT_EFFICIENCY)
    arch, g = prep[0], prep[1]
    layers, one = M.moe_layers(arch), M.expert_params(arch.hidden_size, 768)
    b, s, q = 4.0, 512.0, 4.0
    base = _step(*prep, b, s, q)[0]
    same = _step(*prep, b, s, q, engine_step=M.EngineStep())[0]
    assert same == pytest.approx(base)  # all defaults: the uniform-routing model
    touched = float(M.experts_touched(128, 8, b * q))
    # a fixed cost per touched expert per MoE layer (tensor parallel: every GPU runs all)
    t = _step(*prep, b, s, q, engine_step=M.EngineStep(expert_us=2.0))[0]
    assert t - base == pytest.approx(layers * touched * 2.0e-3)
    # expert parallelism: each GPU its share, plus two all-to-alls per MoE layer
    ep = M.EngineStep(expert_us=2.0, expert_parallel=True, a2a_us=10.0)
    rows = b * q * 8
    a2a = 2 * layers * (10e-3 + 0.5 * rows * arch.hidden_size * 2 / g.link * 1e3 / 2)
    t = _step(*prep, b, s, q, engine_step=ep)[0]
    assert t - base == pytest.approx(layers * touched / 2 * 2.0e-3 + a2a)
    # the tile floor adds the padded rows' FLOPs: compute-bound steps get dearer
    t = _step(*prep, b, s, q, engine_step=M.EngineStep(tile_tokens=64))[0]
    pad = touched * 64 - rows
    fl = S.DEFAULT_EFFICIENCY.compute * g.flops("bf16")
    assert t - base == pytest.approx(2 * one * layers * pad / 2 / fl * 1e3)
    # the CUDA-graph cap: beyond it the step takes at least the host's launch time
    cap = M.EngineStep(graph_cap_tokens=8, eager_layer_us=1000.0)
    assert _step(*prep, 1.0, s, 4.0, engine_step=cap)[0] == pytest.approx(
        _step(*prep, 1.0, s, 4.0)[0])
    assert _step(*prep, b, s, q, engine_step=cap)[0] == pytest.approx(
        max(base, arch.n_layers * 1.0))
    # a skew reads fewer expert weights
    sk = _step(*prep, b, s, q, engine_step=dataclasses.replace(M.EngineStep(), routing_skew=0.5))
    assert sk[0] < base


def test_the_step_rule_trusts_its_callers(monkeypatch):
    """gpus is checked once (_prep, the Setup); the per-step rule and the mixed step do no
    scalar checks (the kv split's check was about a third of a simulator step)."""
    import numpy as np

    from specnb import _check
    from specnb.serving import moe as MOE

    st = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3", gpus=2)
    mixed = S.MixedStep(st)
    calls = []
    real = _check.scalar_int
    monkeypatch.setattr(_check, "scalar_int", lambda *a, **k: calls.append(a) or real(*a, **k))
    r = mixed.ms(np.array([4000.0, 10.0]), np.array([4.0, 512.0]), np.array([3.0, 0.0]))
    assert r["total_ms"] > 0 and calls == []
    # the public function still checks
    with pytest.raises(ValueError, match="gpus"):
        MOE.kv_split_ways(st.target, 0)
    assert MOE.kv_split_ways(st.target, 2) == MOE._kv_split_ways(st.target, 2) == 2


def test_kv_latency_floor_of_a_kernel_without_split_kv():
    # one block per (sequence, KV head): at batch 1 the KV read takes context x layers x
    # kv_token_ns however few bytes it reads; the default (0) is the bandwidth read alone
    floor = S.Efficiency(kv_token_ns=12.0, overlap=1.0)  # max(): the floor alone sets it
    s = np.array([8000, 16000])
    t = S.step_time_ms("Llama-3.1-8B", "H200", 1, s, 1, efficiency=floor)
    t0 = S.step_time_ms("Llama-3.1-8B", "H200", 1, s, 1,
                        efficiency=S.Efficiency(overlap=1.0))
    assert t[1] - t[0] == pytest.approx(8000 * 32 * 12.0e-6, rel=1e-9)
    assert (t > t0).all()
    # a large batch reads enough bytes to be bandwidth-bound again: the floor does not bind
    big = S.step_time_ms("Llama-3.1-8B", "H200", 256, 512, 1, efficiency=floor)
    assert big == pytest.approx(S.step_time_ms("Llama-3.1-8B", "H200", 256, 512, 1,
                                               efficiency=S.Efficiency(overlap=1.0)))


def _kernel_rows():
    d = data.load("fa2_verify_attention")
    return d[d["series"] == "pr193"].astype({"head_dim": int, "q_heads": int, "kv_heads": int})


def test_fa2_walk_is_derived_from_the_published_unsplit_verify_call():
    # engine_profiles' vllm fa2_walk_ns = vllm-project/flash-attention PR #193's unsplit
    # verify call (hd128, 32 / 8 heads, q=8, 32,768 KV tokens, RTX 3090) per KV token
    d = _kernel_rows()
    row = d[(d["kernel"] == "unsplit") & (d["head_dim"] == 128)].iloc[0]
    walk = S.engine_profile("vllm").engine_step().fa2_walk_ns
    assert walk == round(row["ms"] * 1e6 / row["kv_len"], 1) == 40.8
    # the hd256 calls walk twice the key blocks per token: 79-92 ns, about 2 x 40.8
    hd256 = d[(d["kernel"] == "unsplit") & (d["head_dim"] == 256)]
    per_token = hd256["ms"] * 1e6 / hd256["kv_len"]
    assert per_token.between(0.95 * 2 * walk, 1.15 * 2 * walk).all(), per_token.tolist()


def test_unswapped_reads_cost_every_query_heads_bytes():
    # split but without the GQA swap (max_seqlen_q > 1), each query head reads its KV head's
    # cache: PR #193's patched calls move q_heads x KV bytes at 83-98 % of the 3090's
    # bandwidth, the swapped q=1 decode calls kv_heads x KV bytes
    d = _kernel_rows()
    bw = S.gpu("RTX-3090").bandwidth
    per_head = d["kv_len"] * d["head_dim"] * 2 * 2  # K and V, 2 bytes each
    unpacked = d[d["kernel"] == "split_unpacked"]
    share = (unpacked["q_heads"] * per_head[unpacked.index] / (unpacked["ms"] * 1e-3) / bw)
    big = unpacked["kv_len"] >= 32768
    assert share[big].between(0.80, 1.0).all(), share.round(2).tolist()
    packed = d[(d["kernel"] == "split_packed") & (d["kv_len"] == 200000)].iloc[0]
    assert packed["kv_heads"] * per_head[packed.name] / (packed["ms"] * 1e-3) / bw \
        == pytest.approx(0.755, abs=0.005)


@pytest.mark.parametrize("gpu, engine, model, gpus, expected", [
    ("A40", "vllm", "Llama-3.1-8B", 1, (4.0, 32 * 40.8e-6)),       # FA2 (8.6)
    ("A100", "vllm", "Llama-3.1-8B", 2, (4.0, 32 * 40.8e-6)),      # FA2 (8.0), TP 2
    ("L40S", "vllm", "Llama-3.1-8B", 16, (2.0, 32 * 40.8e-6)),     # 2 q heads, 1 KV head a GPU
    ("H100-SXM", "vllm", "Llama-3.1-8B", 1, (1.0, 0.0)),           # FA3
    ("B200", "vllm", "Llama-3.1-8B", 1, (1.0, 0.0)),               # FlashInfer
    ("MI300X", "vllm", "Llama-3.1-8B", 1, (1.0, 0.0)),             # ROCm
    ("A40", "vllm-v0", "Llama-3.1-8B", 1, (1.0, 0.0)),             # V0: batch expansion
    ("A40", "sglang", "Llama-3.1-8B", 1, (1.0, 0.0)),              # not FA2 varlen
    ("A40", "vllm", "MiniCPM3-4B", 1, (1.0, 0.0)),                 # MLA: another backend
])
def test_multi_token_attention_applies_where_vllm_runs_flash_attention_2(gpu, engine, model,
                                                                         gpus, expected):
    arch = S.architecture(model)
    es = S.engine_profile(engine).engine_step() if S.engine_profile(engine).step else None
    got = ST.multi_token_attention(arch, S.gpu(gpu), gpus, es)
    assert got == pytest.approx(expected, rel=1e-12)


def test_a_multi_token_step_reads_the_kv_group_times_and_walks_the_longest_context():
    arch, g = S.architecture("Llama-3.1-8B"), S.gpu("A40")
    eff = S.Efficiency(overlap=0.0)
    prep = ST._prep(arch, g, "bf16", None, 1, eff)
    factor, walk = ST.multi_token_attention(arch, g, 1, S.engine_profile("vllm").engine_step())
    base = ST._step_totals(*prep, 40.0, 8 * 2000.0, 40.0 * 2000.0, parts=True)
    multi = ST._step_totals(*prep, 40.0, 8 * 2000.0, 40.0 * 2000.0, parts=True,
                            kv_read_factor=factor, kv_floor_ms=walk * 2000)
    assert multi["kv"] == pytest.approx(4.0 * base["kv"], rel=1e-12)
    t_kv = base["kv"] / (eff.bandwidth * g.bandwidth) * 1e3
    assert multi["total"] - base["total"] == pytest.approx(3.0 * t_kv, rel=1e-9)
    # one sequence: the walk (2000 x 32 x 40.8 ns = 2.6 ms) is above 4 x its KV read
    one = ST._step_totals(*prep, 5.0, 2000.0, 5.0 * 2000.0, parts=True,
                          kv_read_factor=factor, kv_floor_ms=walk * 2000)
    solo = ST._step_totals(*prep, 5.0, 2000.0, 5.0 * 2000.0, parts=True)
    assert one["total"] - solo["total"] == pytest.approx(
        2000 * 32 * 40.8e-6 - solo["kv"] / (eff.bandwidth * g.bandwidth) * 1e3, rel=1e-9)


def test_no_multi_token_cost_where_vllm_would_not_pick_flash_attention():
    # trial 6 W1: an fp8 KV cache needs FA3 (SM90) or FA4 (SM100), so on 8.x vLLM takes
    # FlashInfer; a head size above 256 or not a multiple of 8 is not FlashAttention's either
    import dataclasses

    es = S.engine_profile("vllm").engine_step()
    arch, a40 = S.architecture("Llama-3.1-8B"), S.gpu("A40")
    assert ST.multi_token_attention(arch, a40, 1, es, "bf16")[1] > 0
    assert ST.multi_token_attention(arch, a40, 1, es, "fp8") == (1.0, 0.0)
    for hd in (512, 100):
        assert ST.multi_token_attention(dataclasses.replace(arch, head_dim=hd), a40, 1,
                                        es) == (1.0, 0.0)
    fp8 = S.setup("A40", "Llama-3.1-8B", "eagle3", kv_dtype="fp8")
    assert S.multi_token_note(fp8, [4000]) is None
    assert "at an RTX 3090's walk rate" in S.multi_token_note(
        S.setup("A40", "Llama-3.1-8B", "eagle3"), [4000]).message


def test_a_multi_head_target_walks_unsplit_on_plain_decode_steps_too():
    # trial 6 W12: FlashAttention-2 swaps (and so splits the KV) only when num_heads >
    # num_heads_k; a multi-head target's plain decode steps walk the longest context too
    es = S.engine_profile("vllm").engine_step()
    mha, gqa = S.architecture("Llama-2-7B"), S.architecture("Llama-3.1-8B")
    assert ST.decode_walk(mha, S.gpu("A100"), 1, es) == pytest.approx(32 * 40.8e-6)
    assert ST.decode_walk(gqa, S.gpu("A100"), 1, es) == 0.0
    assert ST.decode_walk(mha, S.gpu("H100-SXM"), 1, es) == 0.0
    st = S.setup("A100", "Llama-2-7B", "eagle3")
    assert S.t_plain_ms(st, 1, 4000) >= 4000 * 32 * 40.8e-6
    r = S.mixed_step_ms(st, [4000, 10], [1, 1], [0, 0])
    assert r["target_ms"] == pytest.approx(S.t_plain_ms(st, 2, 2005), rel=0.3)
    assert r["target_ms"] >= 4000 * 32 * 40.8e-6


def test_a_target_with_attention_sinks_is_not_flash_attention_2s():
    # trial 6 W4: gpt-oss's sinks need FA3 / FA4, so on compute capability < 9 vLLM takes
    # another backend: no multi-token cost, no note
    es = S.engine_profile("vllm").engine_step()
    oss = S.architecture("gpt-oss-20b")
    assert oss.attention_sinks and not S.architecture("Llama-3.1-8B").attention_sinks
    assert ST.multi_token_attention(oss, S.gpu("A100"), 1, es) == (1.0, 0.0)
    assert S.multi_token_note(S.setup("A100", "gpt-oss-20b", "eagle3"), [4000]) is None
