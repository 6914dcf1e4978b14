"""specnb/serving/moe.py: experts touched, MoE parameter counts against the model cards, MLA
KV bytes, the MTP module, MoE configs; the MoE rows of the catalogue."""

import dataclasses

import numpy as np
import pytest

from specnb import serving as S
from specnb.serving import moe as M


# --------------------------------------------------------------------------- experts touched
def test_experts_touched_limits():
    # N = 0 reads no expert, N = 1 reads exactly k, large N reads all E
    assert M.experts_touched(256, 8, 0) == 0.0
    assert M.experts_touched(256, 8, 1) == pytest.approx(8.0, rel=1e-12)
    assert M.experts_touched(256, 8, 100_000) == pytest.approx(256.0, rel=1e-12)
    assert M.experts_touched(8, 8, 3) == 8.0  # k = E: every expert for any N >= 1
    # two tokens: E (1 - (1 - k/E)^2) = 2k - k^2 / E
    assert M.experts_touched(256, 8, 2) == pytest.approx(16 - 64 / 256, rel=1e-12)
    # a fractional mean token count (partial proposals) lies between its neighbours
    assert M.experts_touched(256, 8, 1) < M.experts_touched(256, 8, 1.5) < \
        M.experts_touched(256, 8, 2)


def test_experts_touched_monotone_and_broadcasts():
    n = np.arange(0, 300)
    t = M.experts_touched(128, 8, n)
    assert t.shape == n.shape and np.all(np.diff(t) > 0) and t.max() < 128
    assert np.all(M.experts_touched(128, 8, np.arange(300, 5000)) <= 128)
    grid = M.experts_touched(np.array([8, 128, 256])[:, None], 2, np.array([1, 4, 64])[None, :])
    assert grid.shape == (3, 3)
    assert grid[0, 2] == pytest.approx(8 * (1 - (1 - 2 / 8) ** 64))


def test_experts_touched_verification_reads_more_than_a_plain_step():
    # DeepSeek-V3 at batch 1: a step of gamma + 1 = 4 tokens reads ~4x the experts of one token
    one, four = M.experts_touched(256, 8, 1), M.experts_touched(256, 8, 4)
    assert round(four / one, 2) == 3.82  # 32 (1 - (31/32)^4) = 3.8164
    # at batch 256 the plain step already reads almost every expert
    assert M.experts_touched(256, 8, 256) > 255.9  # 256 (1 - (31/32)^256) = 255.92


@pytest.mark.parametrize("args, match", [
    ((0, 1, 1), "n_experts must be an integer >= 1"),
    ((8, 0, 1), "experts_per_token must be an integer >= 1"),
    ((8, 9, 1), "experts_per_token must be <= n_experts, got 9 > 8"),
    ((8, 2, -1), r"tokens must be in \[0, inf\)"),
    ((8.5, 2, 1), "n_experts must be a whole number"),
])
def test_experts_touched_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        M.experts_touched(*args)


# --------------------------------------------------------------------------- parameter counts
#: (total, active) as the model cards print them, and which active count the card uses
CARDS = {
    "DeepSeek-V3": (671e9, 37e9, "active"), "DeepSeek-R1": (671e9, 37e9, "active"),
    "Kimi-K2": (1.0e12, 32e9, "active"), "Qwen3-30B-A3B": (30.5e9, 3.3e9, "active"),
    "Qwen3-235B-A22B": (235e9, 22e9, "active"), "Mixtral-8x7B": (46.7e9, 12.9e9, "active"),
    "gpt-oss-120b": (117e9, 5.1e9, "active_without_input_embedding"),
    "gpt-oss-20b": (21e9, 3.6e9, "active_without_input_embedding"),
}


@pytest.mark.parametrize("name", sorted(CARDS))
def test_moe_param_counts_match_the_model_cards(name):
    total, active, kind = CARDS[name]
    a = S.architecture(name)
    assert (a.params_published, S.published_active_params(a)) == (total, active)  # as printed
    p = M.param_counts(a)
    # cards round to 2-3 significant figures ("671B", "3.3B"); Kimi's "1T" is 1.03 T
    tol = 0.03 if name == "Kimi-K2" else 0.02
    assert p["total"] == pytest.approx(total, rel=tol)
    assert p[kind] == pytest.approx(active, rel=0.03)


def test_counts_printed_in_the_report():
    p = M.param_counts(S.architecture("DeepSeek-V3"))
    assert round(p["total"] / 1e9, 2) == 671.03 and round(p["active"] / 1e9, 2) == 37.55
    q = M.param_counts(S.architecture("Qwen3-30B-A3B"))
    assert round(q["total"] / 1e9, 2) == 30.53 and round(q["active"] / 1e9, 2) == 3.35


def test_dense_shapes_keep_the_dense_formulas():
    # the formulas the serving model used before issue 16, written out for the dense rows
    for name in S.architecture_names():
        a = S.architecture(name)
        if a.moe is not None or a.mla is not None:  # MLA: its own formulas (below)
            continue
        h, hd, q, kv = a.hidden_size, a.head_dim, a.n_heads * a.head_dim, a.n_kv_heads * a.head_dim
        layer = h * q + 2 * h * kv + q * h + 3 * h * a.intermediate_size + 2 * h \
            + (q + 2 * kv if a.attention_bias else 0) + (2 * hd if a.qk_norm else 0)
        emb = a.vocab_size * h
        assert a.layer_params == layer, name
        assert a.params == a.n_layers * layer + emb + (0 if a.tie_word_embeddings else emb) + h
        assert a.step_params == M.step_weight_params(a, 7) == a.n_layers * layer + emb + h
        assert a.matmul_params_per_token == a.n_layers * (2 * h * q + 2 * h * kv + 3 * h
                                                          * a.intermediate_size) + emb
        assert a.kv_bytes_per_token() == 2.0 * a.n_layers * kv * 2
        assert M.attention_flops_per_token_per_context(a) == 4.0 * a.n_layers * q


def test_step_weights_grow_with_tokens_to_the_total():
    s = S.architecture("DeepSeek-V3")
    one, many = M.step_weight_params(s, 1), M.step_weight_params(s, 10 ** 6)
    p = M.param_counts(s)
    # one token reads the active weights less the input embedding; all tokens: everything
    assert one == pytest.approx(p["active_without_input_embedding"], rel=1e-9)
    assert many == pytest.approx(p["total"] - s.vocab_size * s.hidden_size, rel=1e-6)
    steps = M.step_weight_params(s, np.array([1, 4, 64, 256]))
    assert np.all(np.diff(steps) > 0)


def test_mla_kv_bytes_and_split():
    s = S.architecture("DeepSeek-V3")
    assert M.kv_bytes_per_token(s) == 61 * (512 + 64) * 2 == 70272
    assert M.kv_bytes_per_token(s, 1.0) == 35136  # fp8 cache
    assert M.kv_bytes_per_token(dataclasses.replace(s, mla=None)) == 2 * 61 * 128 * 192 * 2
    assert M.kv_split_ways(s, 8) == 1  # the latent is replicated on every rank
    assert M.kv_split_ways(S.architecture("Qwen3-235B-A22B"), 8) == 4  # 4 KV heads, then replicas
    assert M.kv_bytes_per_token(S.architecture("Kimi-K2")) == 70272  # same MLA dims as DeepSeek-V3


def test_mla_attention_flops():
    s = S.architecture("DeepSeek-V3")
    assert M.attention_flops_per_token_per_context(s) == 2.0 * 61 * 128 * (2 * 512 + 64)
    assert M.attention_flops_per_token_per_context(s, absorbed=False) == \
        2.0 * 61 * 128 * (128 + 64 + 128)


def test_mtp_module_of_deepseek_v3():
    s = S.architecture("DeepSeek-V3")
    assert s.mtp_layers == 1
    m = M.mtp_params(s)
    # the card: the MTP module is 14 B on the hub, with its copies of embedding and head
    assert (m["own"] + 2 * s.vocab_size * s.hidden_size) / 1e9 == pytest.approx(14, rel=0.05)
    assert m["expert"] == 3 * 7168 * 2048
    # eh_proj 0.103 B + attention 0.187 B + router and shared expert 0.046 B + the shared LM
    # head 0.927 B: a draft forward of one token reads 1.26 B + 8 routed experts (0.35 B)
    assert round(m["per_step_fixed"] / 1e9, 2) == 1.26


def test_moe_and_mla_validate():
    with pytest.raises(ValueError, match="experts_per_token must be an integer in \\[1, 8\\]"):
        M.MoE(8, 9, 0, 14336)
    with pytest.raises(ValueError, match="kv_lora_rank must be an integer >= 1"):
        M.MLA(0, 64, 128, 128)


def test_catalogue_rows_and_unknown_names():
    assert {"DeepSeek-V3", "DeepSeek-R1", "Qwen3-30B-A3B", "Qwen3-235B-A22B", "gpt-oss-120b",
            "gpt-oss-20b", "Mixtral-8x7B", "Kimi-K2"} <= set(S.architecture_names())
    assert S.architecture("deepseek-ai/DeepSeek-V3").name == "DeepSeek-V3"
    assert S.architecture("mixtral-8x7b-instruct-v0.1").moe.experts_per_token == 2
    with pytest.raises(ValueError, match="unknown model 'gpt-5'.*DeepSeek-V3"):
        S.architecture("gpt-5")


def test_moe_config_json_reads_like_the_catalogue(tmp_path):
    cfg = {"model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168,
           "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 18432,
           "vocab_size": 129280, **DSV3_CFG}
    a = S.architecture(cfg)
    ds = S.architecture("DeepSeek-V3")
    assert a.head_dim == 192 and a.moe == ds.moe and a.mla == ds.mla and a.mtp_layers == 1
    assert a.params == ds.params and a.kv_bytes_per_token() == 70272
    qwen = {"model_type": "qwen3_moe", "num_hidden_layers": 48, "hidden_size": 2048,
            "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
            "intermediate_size": 6144, "vocab_size": 151936, "num_experts": 128,
            "num_experts_per_tok": 8, "moe_intermediate_size": 768}
    assert S.architecture(qwen).params == S.architecture("Qwen3-30B-A3B").params


DSV3_CFG = {"model_type": "deepseek_v3", "n_routed_experts": 256, "num_experts_per_tok": 8,
            "n_shared_experts": 1, "moe_intermediate_size": 2048, "first_k_dense_replace": 3,
            "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64, "v_head_dim": 128, "num_nextn_predict_layers": 1,
            "moe_layer_freq": 1}


def test_moe_from_config_shapes_match_the_catalogue():
    moe, mla, mtp = M.moe_from_config(DSV3_CFG)
    ds = S.architecture("DeepSeek-V3")
    assert (moe, mla, mtp) == (ds.moe, ds.mla, 1)
    qwen = {"model_type": "qwen3_moe", "num_experts": 128, "num_experts_per_tok": 8,
            "moe_intermediate_size": 768, "decoder_sparse_step": 1, "mlp_only_layers": []}
    assert M.moe_from_config(qwen)[0] == S.architecture("Qwen3-30B-A3B").moe
    mixtral = {"num_local_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 14336}
    assert M.moe_from_config(mixtral)[0] == S.architecture("Mixtral-8x7B").moe
    oss = {"num_local_experts": 32, "experts_per_token": 4, "intermediate_size": 2880}
    assert M.moe_from_config({"text_config": oss})[0] == S.architecture("gpt-oss-20b").moe
    assert M.moe_from_config({"hidden_size": 4096}) == (None, None, 0)


@pytest.mark.parametrize("cfg, match", [
    ({"num_experts": 8, "num_experts_per_tok": 9, "moe_intermediate_size": 1},
     r"num_experts_per_tok \(9\) exceeds num_experts \(8\)"),
    ({"num_experts": 8, "num_experts_per_tok": 2}, "moe_intermediate_size must be an integer"),
    ({"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
      "mlp_only_layers": [0]}, "interleaved with dense ones"),
    ({**DSV3_CFG, "qk_rope_head_dim": 0}, "qk_rope_head_dim must be an integer >= 1"),
])
def test_moe_from_config_errors(cfg, match):
    with pytest.raises(ValueError, match=match):
        M.moe_from_config(cfg)


def test_skewed_routing_touches_fewer_experts_between_k_and_uniform():
    from specnb.serving import moe as M

    n = np.array([1.0, 4.0, 64.0, 4096.0])
    uni = M.experts_touched_skewed(256, 8, n, 0.0)
    np.testing.assert_allclose(uni, M.experts_touched(256, 8, n))
    half = M.experts_touched_skewed(256, 8, n, 0.5)
    # E_eff = 8 + 248 x 0.5 = 132 experts equally likely
    np.testing.assert_allclose(half, 132 * (1 - (1 - 8 / 132) ** n))
    assert (half <= uni).all() and half[0] == pytest.approx(8.0) and half[-1] < 132 + 1e-9
    with pytest.raises(ValueError, match="routing_skew must be in"):
        M.EngineStep(routing_skew=0.96)
    with pytest.raises(ValueError, match="tile_tokens"):
        M.EngineStep(tile_tokens=-1)
