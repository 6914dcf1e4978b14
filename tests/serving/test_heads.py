"""specnb/serving/heads.py and the head drafts of serving.setup: EAGLE-1 vs EAGLE-3 heads costed
from their shapes, a head's config.json, DeepSeek-V3's MTP module."""

import json

import pytest

from specnb import serving as S
from specnb.serving import heads as H

LLAMA = S.architecture("Llama-3.1-8B")
H_, V = 4096, 128256
LAYER = 4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096  # q, o, k, v, MLP, norms


def test_eagle1_reads_fc_layer_and_the_full_lm_head_every_step():
    h = H.eagle_head("eagle", LLAMA)
    assert (h.lm_head_vocab, h.fc_in, h.qkv_in, h.own_lm_head) == (V, 2, 1, False)
    per = 2 * H_ * H_ + LAYER + V * H_ + H_
    assert H.params_per_step(h, 0) == H.params_per_step(h, 5) == per == 777_007_104
    # the layer is the one the serving model already uses for a head
    assert LAYER == S.architecture("Llama-3.1-8B").layer_params
    assert H.own_params(h) == 2 * H_ * H_ + LAYER + H_  # the LM head is the target's


def test_eagle3_fc_once_wide_qkv_and_its_draft_vocabulary():
    h = H.eagle_head("eagle3", LLAMA)
    assert (h.lm_head_vocab, h.fc_in, h.qkv_in, h.own_lm_head) == (32000, 3, 2, True)
    wide = LAYER + H_ * (H_ + 2 * 1024)  # q/k/v take the 2h concatenation
    assert H.params_per_step(h, 1) == wide + 32000 * H_ + H_ == 374_353_920
    assert H.params_per_step(h, 0) - H.params_per_step(h, 1) == 3 * H_ * H_
    assert H.mean_params_per_step(h, 3) == pytest.approx((424_685_568 + 2 * 374_353_920) / 3)
    # by bytes EAGLE-3 is cheaper per step than EAGLE-1 (vLLM V1 measured the opposite at
    # batch 1: 1.02 vs 0.74 ms, engines.md; the engine profile carries the difference)
    assert H.params_per_step(h, 1) < H.params_per_step(H.eagle_head("eagle", LLAMA), 1) / 2


def test_draft_vocab_is_checked():
    assert H.eagle_head("eagle3", LLAMA, draft_vocab=64000).lm_head_vocab == 64000
    with pytest.raises(ValueError, match="draft_vocab applies to eagle3"):
        H.eagle_head("eagle", LLAMA, draft_vocab=32000)
    with pytest.raises(ValueError, match=r"draft_vocab must be an integer in \[1, 128256\]"):
        H.eagle_head("eagle3", LLAMA, draft_vocab=200000)
    with pytest.raises(ValueError, match="kind must be one of 'eagle', 'eagle3'"):
        H.eagle_head("medusa", LLAMA)


EAGLE3_CFG = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096,
              "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
              "num_hidden_layers": 1, "vocab_size": 128256, "draft_vocab_size": 32000}


def test_head_from_config(tmp_path):
    path = tmp_path / "head" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(EAGLE3_CFG))
    for arg in (path, path.parent, EAGLE3_CFG):
        h = H.head_from_config(arg, LLAMA)
        assert h.kind == "eagle3" and h.lm_head_vocab == 32000
        assert H.params_per_step(h, 1) == H.params_per_step(H.eagle_head("eagle3", LLAMA), 1)
    e1 = {k: v for k, v in EAGLE3_CFG.items() if k not in ("architectures", "draft_vocab_size")}
    assert H.head_from_config(e1, LLAMA).kind == "eagle"


@pytest.mark.parametrize("change, match", [
    ({"hidden_size": 2048}, "hidden_size 2048 differs from the target's 4096"),
    ({"num_attention_heads": 0}, "num_attention_heads must be an integer >= 1"),
    ({"draft_vocab_size": 200000}, "draft_vocab_size 200000 exceeds vocab_size 128256"),
])
def test_bad_head_configs(change, match):
    with pytest.raises(ValueError, match=match):
        H.head_from_config({**EAGLE3_CFG, **change}, LLAMA)


def test_bad_head_config_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="draft_config"):
        H.head_from_config(tmp_path / "none" / "config.json", LLAMA)
    bad = tmp_path / "config.json"
    bad.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON at line 1"):
        H.head_from_config(bad, LLAMA)
    cfg = dict(EAGLE3_CFG)
    del cfg["intermediate_size"]
    with pytest.raises(ValueError, match="missing key 'intermediate_size'"):
        H.head_from_config(cfg, LLAMA)


def test_setup_costs_heads_from_their_shapes(tmp_path):
    e1, e3 = S.draft("eagle", "Llama-3.1-8B"), S.draft("eagle3", "Llama-3.1-8B")
    assert e1.extra_params == (2 * H_ * H_,) * 2 and e1.weight_params == 2 * H_ * H_ + LAYER + H_
    assert e3.extra_params == (3 * H_ * H_ + H_ * (H_ + 2 * 1024), H_ * (H_ + 2 * 1024))
    st1 = S.setup("H100", "Llama-3.1-8B", "eagle", engine="specdecode-bench")
    st3 = S.setup("H100", "Llama-3.1-8B", "eagle3", engine="specdecode-bench")
    # gamma 3 at batch 1: EAGLE-1 reads 3 x 777 M weights, EAGLE-3 425 M + 2 x 374 M
    t1, t3 = S.t_draft_ms(st1, 1, 512, 3), S.t_draft_ms(st3, 1, 512, 3)
    assert round(t1, 2) == 2.19 and round(t3, 2) == 1.49
    # a head's config.json decides the shape (and must be the method's kind)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**EAGLE3_CFG, "draft_vocab_size": 64000}))
    st = S.setup("H100", "Llama-3.1-8B", "eagle3", draft_config=path)
    assert st.draft.lm_head_vocab == 64000 and st.draft.head.source == str(path)
    with pytest.raises(ValueError, match="describes an eagle3 head, not eagle"):
        S.setup("H100", "Llama-3.1-8B", "eagle", draft_config=path)
    with pytest.raises(ValueError, match="draft_config applies to eagle and eagle3"):
        S.setup("H100", "Llama-3.1-8B", "ngram", draft_config=path)


def test_mtp_of_deepseek_v3_is_one_moe_block_and_the_shared_head():
    d = S.draft("mtp", "DeepSeek-V3")
    ds = S.architecture("DeepSeek-V3")
    assert d.arch.n_layers == 1 and d.arch.moe.n_routed_experts == 256
    assert d.arch.moe.first_k_dense_layers == 0 and d.arch.mla == ds.mla
    assert d.extra_params == (2 * 7168 * 7168 + 2 * 7168,) * 2  # the eh projection
    assert d.weight_params == S.moe.mtp_params(ds)["own"]
    assert d.lm_head_vocab == 129280  # the shared head
    # one MTP forward at batch 1 reads its block's attention, router, shared and 8 routed
    # experts and the shared head: 1.26 B + 0.35 B = 1.61 B
    one = d.arch.step_params + d.extra_params[0]
    assert round(one / 1e9, 2) == round((S.moe.mtp_params(ds)["per_step_fixed"]
                                         + 8 * 3 * 7168 * 2048) / 1e9, 2) == 1.61


def test_dflash_default_is_five_target_layers_one_forward_for_the_block():
    h = H.dflash_head(LLAMA)
    assert (h.kind, h.n_layers, h.fc_in, h.block_size, h.lm_head_vocab, h.own_lm_head) == \
        ("dflash", 5, 5, 16, V, False)
    assert H.params_per_step(h, 0) == 5 * H_ * H_ + 5 * LAYER + V * H_ + H_
    assert H.own_params(h) == 5 * H_ * H_ + 5 * LAYER + H_  # the LM head is the target's
    st = S.setup("H100-SXM", "Llama-3.1-8B", "dflash")
    assert st.draft.method == "dflash" and st.draft.arch.n_layers == 5
    # one forward: a longer block costs little more (k forwards for EAGLE-3)
    d4, d8 = S.t_draft_ms(st, 1, 2000, 4), S.t_draft_ms(st, 1, 2000, 8)
    assert d8 < 1.05 * d4
    e3 = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    assert S.t_draft_ms(e3, 1, 2000, 8) > 1.8 * S.t_draft_ms(e3, 1, 2000, 4)


def test_dflash_shape_from_its_config(tmp_path):
    cfg = {"architectures": ["DFlashDraftModel"], "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
           "intermediate_size": 12288, "num_hidden_layers": 3, "vocab_size": 151936,
           "block_size": 10, "dflash_config": {"target_layer_ids": [1, 9, 17, 25]}}
    h = H.head_from_config(cfg, LLAMA)
    assert (h.kind, h.n_layers, h.fc_in, h.block_size) == ("dflash", 3, 4, 10)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="describes an dflash head, not eagle3"):
        S.setup("H100", "Llama-3.1-8B", "eagle3", draft_config=path)
    with pytest.raises(ValueError, match="block_size must be an integer >= 2"):
        H.head_from_config(dict(cfg, block_size=1), LLAMA)
