"""specnb.measure.heads: tiny random heads in every format (EAGLE-1, EAGLE-3 speculators and
SpecForge layouts, DeepSeek-V3 / GLM-4.5 / Qwen3-Next MTP) written as checkpoints and read
back; shapes; the draft-vocabulary map; heads copied from a bigram target's next-token path
agree with the target at every step; the config-level checks (ValueError naming the file and
the mismatch, before weights load); the forward op by op against vLLM 0.33.0's source. All slow
but the config checks on the bundled EAGLE-3 head (headers only: the fast tier's heads test)."""

import json
import math
import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb.measure import args as A  # noqa: E402
from specnb.measure import heads as Hd  # noqa: E402

from . import heads_support as S  # noqa: E402

# every test here but the config checks on the bundled head (JSON and safetensors headers only)
# builds a transformers model (importing transformers' model classes alone takes seconds): make
# test runs them, make check does not


@pytest.fixture(scope="module")
def llama():
    return S.llama_target(layers=4)


@pytest.fixture(scope="module")
def bigram():
    return S.llama_target(layers=2, bigram=True)


def _ids(n=24, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, S.VOCAB, (n,), generator=g)


def _agreement(head, target, ids, depth, skip_first=False):
    """Per step: the share of round starts whose draft equals the target's argmax there."""
    out, final, aux = Hd.target_states(target, ids[None], aux_layers=head.aux_layers)
    best = out.logits[0].argmax(-1)
    n, res = ids.numel(), []
    for j, lg in enumerate(head.teacher_force(ids, final, aux, depth), 1):
        i = torch.arange(lg.shape[0])
        ok = (i + j + 1 < n) & ((i > 0) if skip_first else True)
        res.append(float((lg.argmax(-1)[ok] == best[(i + j)[ok]]).float().mean()))
    return res


def _eagle3(target, tmp_path, *, dvs=40, layout="speculators", ids=(1, 2, 4), seed=0):
    torch.manual_seed(seed)
    cfg = Hd.eagle3_config(target.config, layer_ids=list(ids), draft_vocab_size=dvs)
    head = Hd.new_head(cfg, target)
    keep = torch.randperm(S.VOCAB)[:dvs].sort().values
    with torch.no_grad():
        head.d2t.copy_(keep - torch.arange(dvs))
    folder = tmp_path / f"eagle3-{layout}-{dvs}"
    if layout == "specforge":  # the Llama config at the top, layer ids in eagle_config
        cfg = {**cfg["transformer_layer_config"], "architectures": ["LlamaForCausalLMEagle3"],
               "draft_vocab_size": dvs,
               "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(ids),
                                "use_aux_hidden_state": True}}
    Hd.save_head(head, folder, cfg)
    if layout == "specforge":  # SpecForge / yuhuili name the decoder layer midlayer
        from safetensors.torch import load_file, save_file
        sd = load_file(folder / "model.safetensors")
        save_file({k.replace("layers.0.", "midlayer."): v for k, v in sd.items()},
                  folder / "model.safetensors")
    return folder, keep


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["speculators", "specforge"])
def test_eagle3_layouts_shapes_and_vocab_map(llama, tmp_path, layout):
    folder, keep = _eagle3(llama, tmp_path, layout=layout)
    head = Hd.load_head(folder, llama)
    assert head.hc.fmt == f"eagle3-{layout}"
    assert head.hc.options["norm_before_residual"] is (layout == "speculators")
    assert head.aux_layers == (1, 2, 4)
    ids = _ids()
    out, final, aux = Hd.target_states(llama, ids[None], aux_layers=head.aux_layers)
    assert aux.shape == (ids.numel(), 3 * S.H)
    steps = head.teacher_force(ids, final, aux, 3)
    assert [tuple(s.shape) for s in steps] == [(ids.numel() - 1, S.VOCAB)] * 3
    finite = torch.isfinite(steps[0])
    # exactly the draft vocabulary's target ids carry logits; the rest are -inf
    assert finite.all(0).nonzero().flatten().tolist() == keep.tolist()
    assert (~finite).sum(1).tolist() == [S.VOCAB - 40] * (ids.numel() - 1)
    # the draft logit of draft id d sits at target id d + d2t[d]
    normed_logits = head.lm_head(head.norm(torch.zeros(S.H)))  # any input: check the map
    mapped = head._to_target(normed_logits[None])[0]
    assert torch.equal(mapped[keep], normed_logits)
    # start rows: the same logits as the full unroll from that row on
    part = head.teacher_force(ids, final, aux, 3, start=10)
    for a, b in zip(steps, part):
        assert torch.allclose(a[10:], b, atol=1e-5)


@pytest.mark.slow
def test_eagle3_full_vocab_needs_no_d2t(llama, tmp_path):
    torch.manual_seed(0)
    cfg = Hd.eagle3_config(llama.config, layer_ids=[1, 2, 3])
    head = Hd.new_head(cfg, llama)
    Hd.save_head(head, tmp_path / "h", cfg)
    from safetensors.torch import load_file, save_file
    sd = load_file(tmp_path / "h" / "model.safetensors")
    save_file({k: v for k, v in sd.items() if k not in ("d2t", "t2d")},
              tmp_path / "h" / "model.safetensors")
    again = Hd.load_head(tmp_path / "h", llama)
    assert again.hc.draft_vocab_size == S.VOCAB
    ids = _ids()
    out, final, aux = Hd.target_states(llama, ids[None], aux_layers=again.aux_layers)
    assert torch.isfinite(again.teacher_force(ids, final, aux, 1)[0]).all()


@pytest.mark.slow
def test_eagle1_copied_head_agrees_at_every_step(bigram, tmp_path):
    cfg = S.eagle1_config()
    head = Hd.new_head(cfg, bigram)
    S.copy_next_token_path(head, bigram)
    Hd.save_head(head, tmp_path / "e1", cfg)
    again = Hd.load_head(tmp_path / "e1", bigram)
    assert again.hc.fmt == "eagle-yuhuili" and again.lm_head is bigram.get_output_embeddings()
    assert _agreement(again, bigram, _ids(), 4) == [1.0] * 4
    # the same head with its fc reading the hidden half only does not (the test can fail)
    with torch.no_grad():
        again.fc.weight.roll(S.H, 1)
        again.fc.weight.copy_(again.fc.weight.roll(S.H, 1))
    assert max(_agreement(again, bigram, _ids(), 2)) < 0.5


@pytest.mark.slow
def test_mtp_deepseek_copied_layer_agrees(tmp_path):
    target = S.deepseek_target(tmp_path / "ds", bigram=True)
    head = Hd.load_head(tmp_path / "ds", target, method="mtp")
    assert head.hc.fmt == "mtp-deepseek_v3" and head.hc.mtp_start == 1
    assert head.recycle_normed  # DeepSeekMTPModel recycles the shared head's normed state
    # row 0 is position 0, whose embedding the MTP layer zeroes (vLLM's deepseek_mtp.py)
    assert _agreement(head, target, _ids(), 3, skip_first=True) == [1.0] * 3
    first = _agreement(head, target, _ids(), 1)[0]
    assert first < 1.0


def _glm_or_qwen_target(tmp_path, kind):
    """A 1-layer GLM-4.5 / Qwen3-Next config with one MTP layer of random weights (the target
    is a Llama of the same sizes: the MTP layer reads only its hidden states, embedding and
    lm_head)."""
    target = S.llama_target(layers=1)
    if kind == "glm4_moe":
        cfg = {"model_type": "glm4_moe", "architectures": ["Glm4MoeForCausalLM"],
               "vocab_size": S.VOCAB, "hidden_size": S.H, "intermediate_size": 64,
               "moe_intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
               "num_key_value_heads": 2, "head_dim": 16, "n_routed_experts": 4,
               "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
               "n_group": 1, "topk_group": 1, "partial_rotary_factor": 0.5,
               "max_position_embeddings": 256, "num_nextn_predict_layers": 1,
               "rms_norm_eps": 1e-5}
    else:
        cfg = {"model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"],
               "vocab_size": S.VOCAB, "hidden_size": S.H, "intermediate_size": 64,
               "moe_intermediate_size": 16, "shared_expert_intermediate_size": 16,
               "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
               "head_dim": 16, "num_experts": 4, "num_experts_per_tok": 2,
               "decoder_sparse_step": 1, "max_position_embeddings": 256,
               "num_nextn_predict_layers": 1, "rms_norm_eps": 1e-6}
    head = Hd.new_head(cfg, target)
    Hd.save_head(head, tmp_path / kind, cfg)
    return target, tmp_path / kind


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["glm4_moe", "qwen3_next"])
def test_mtp_glm_and_qwen3_next_round_trip(tmp_path, kind):
    target, folder = _glm_or_qwen_target(tmp_path, kind)
    head = Hd.load_head(folder, target, method="mtp")
    assert head.hc.fmt == f"mtp-{kind}"
    names = set(json.loads(json.dumps(list(head.hc.names))))
    if kind == "qwen3_next":
        assert {"mtp.fc.weight", "mtp.norm.weight", "mtp.pre_fc_norm_hidden.weight"} <= names
        assert head.lm_head is target.get_output_embeddings()
    else:
        assert "model.layers.1.eh_proj.weight" in names and not head.recycle_normed
    ids = _ids()
    out, final, aux = Hd.target_states(target, ids[None])
    steps = head.teacher_force(ids, final, aux, 2)
    assert all(torch.isfinite(s).all() and s.shape == (ids.numel() - 1, S.VOCAB) for s in steps)


# ------------------------------------------------------------------- config-level checks
def _codes(exc):
    return str(exc.value)


@pytest.mark.slow
def test_bad_heads_named_before_weights(llama, tmp_path):
    folder, _ = _eagle3(llama, tmp_path)
    other = S.llama_target(layers=4)
    other.config.hidden_size = 48
    with pytest.raises(ValueError, match=r"config\.json.*target_hidden_size.*48"):
        Hd.head_config(folder, other.config)
    other.config.hidden_size = S.H
    other.config.vocab_size = 70
    with pytest.raises(ValueError, match=r"vocab_size 61 .* 70"):
        Hd.head_config(folder, other.config)
    # d2t of the wrong size
    from safetensors.torch import load_file, save_file
    sd = load_file(folder / "model.safetensors")
    save_file({**sd, "d2t": sd["d2t"][:30]}, folder / "model.safetensors")
    with pytest.raises(ValueError, match=r"d2t has shape \[30\].*draft_vocab_size is 40"):
        Hd.head_config(folder, llama.config)
    # a layer the config declares but the checkpoint lacks
    cfg = json.loads((folder / "config.json").read_text())
    cfg["transformer_layer_config"]["num_hidden_layers"] = 2
    save_file(sd, folder / "model.safetensors")
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"num_hidden_layers = 2.*layers\.1\."):
        Hd.head_config(folder, llama.config)
    # layer ids outside the target
    cfg["transformer_layer_config"]["num_hidden_layers"] = 1
    cfg["eagle_aux_hidden_state_layer_ids"] = [1, 2, 9]
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"\[1, 2, 9\] must lie in \[0, 4\]"):
        Hd.head_config(folder, llama.config)


@pytest.mark.slow
def test_mtp_on_a_target_without_mtp_layers(tmp_path):
    target = S.deepseek_target(tmp_path / "plain", mtp=False)
    with pytest.raises(ValueError, match=r"config\.json: MTP was asked for.*declares no MTP"):
        Hd.head_config(tmp_path / "plain", target.config, method="mtp")
    conf = json.loads((tmp_path / "plain" / "config.json").read_text())
    conf["num_nextn_predict_layers"] = 1  # declared, but no model.layers.1.* tensors
    (tmp_path / "plain" / "config.json").write_text(json.dumps(conf))
    with pytest.raises(ValueError, match=r"num_nextn_predict_layers = 1.*model\.layers\.1\."):
        Hd.head_config(tmp_path / "plain", target.config, method="mtp")


@pytest.mark.slow
def test_not_a_head_and_wrong_method(llama, tmp_path):
    (tmp_path / "x").mkdir()
    with pytest.raises(ValueError, match="no config.json"):
        Hd.head_config(tmp_path / "x", llama.config)
    folder, _ = _eagle3(llama, tmp_path)
    with pytest.raises(ValueError, match=r"method 'eagle' was asked for .* 'eagle3' head"):
        Hd.head_config(folder, llama.config, method="eagle")
    with pytest.raises(ValueError, match="method must be one of"):
        Hd.head_config(folder, llama.config, method="medusa")


@pytest.mark.slow
def test_vllm_default_layer_ids(llama, tmp_path):
    """No ids recorded: vLLM's default (2, L // 2, L - 3) for an L-layer target."""
    folder, _ = _eagle3(S.llama_target(layers=8), tmp_path, ids=(2, 4, 5))
    cfg = json.loads((folder / "config.json").read_text())
    del cfg["eagle_aux_hidden_state_layer_ids"]
    (folder / "config.json").write_text(json.dumps(cfg))
    target = S.llama_target(layers=8)
    assert Hd.head_config(folder, target.config).aux_layers == (2, 4, 5)


# ------------------------------------------------------------------- against vLLM's source
def _rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


@pytest.mark.slow
def test_eagle3_forward_op_by_op_against_vllm_source(llama, tmp_path):
    """vLLM 0.33.0 ``vllm/model_executor/models/llama_eagle3.py`` (GitHub commit
    00bd1493b3e82d6c13c68ee8a0e1c5a96707e190), written out op by op for one layer and one
    query position (attention over a single key is its value): ``combine_hidden_states`` is
    ``fc``; layer 0: ``embeds = input_layernorm(embeds)``; ``norm_before_residual``:
    ``hidden = hidden_norm(hidden); residual = hidden``; ``cat([embeds, hidden])`` -> qkv ->
    attention -> o_proj; ``post_attention_layernorm(h, residual)`` adds then norms; mlp;
    ``norm(h, residual)`` returns (normed, prenorm); ``compute_logits`` scatters lm_head's
    rows to ``arange(draft_vocab) + d2t`` over -inf."""
    folder, keep = _eagle3(llama, tmp_path)
    head = Hd.load_head(folder, llama)
    ids = _ids(2)
    out, final, aux = Hd.target_states(llama, ids[None], aux_layers=head.aux_layers)
    got = head.teacher_force(ids, final, aux, 1)[0][0]
    L = head.layers[0]
    eps = head.cfg.rms_norm_eps
    with torch.no_grad():
        h = head.fc(aux[0])
        e = _rms(head.embed(ids[1]), L.input_layernorm.weight, eps)
        h = _rms(h, L.hidden_norm.weight, eps)
        residual = h
        x = torch.cat([e, h])
        v = L.self_attn.v_proj(x)  # one key: softmax weight 1, output = value (RoPE-free)
        heads_rep = head.cfg.num_attention_heads // head.cfg.num_key_value_heads
        v = v.view(head.cfg.num_key_value_heads, -1).repeat_interleave(heads_rep, 0).flatten()
        a = L.self_attn.o_proj(v)
        residual = a + residual
        m = L.mlp(_rms(residual, L.post_attention_layernorm.weight, eps))
        prenorm = m + residual
        logits = head.lm_head(_rms(prenorm, head.norm.weight, eps))
        want = torch.full((S.VOCAB,), -math.inf)
        want[torch.arange(40) + head.d2t] = logits
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.equal(torch.isinf(got), torch.isinf(want))


# ------------------------------------------------------------------- against vLLM itself
ORACLE = __import__("pathlib").Path(__file__).resolve().parents[1] / "cases" / "vllm" / \
    "0.33.0" / "heads"


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["speculators", "specforge"])
def test_eagle3_agrees_with_vllm_run_on_the_cpu(variant):
    """vLLM 0.33.0's own EAGLE-3 code (oracle/drive_heads.py: llama_eagle3.py's
    combine_hidden_states, decoder layer 0, final norm and compute_logits on vLLM's layers and
    weight loaders; one query over one key per case) gives these logits and recycled states;
    specnb's head, loaded from the same checkpoint, must give them too."""
    from safetensors.torch import load_file

    folder = ORACLE / f"eagle3-{variant}"
    cases = load_file(folder / "cases.safetensors")
    target = S.llama_target(layers=4)
    head = Hd.load_head(folder, target)
    assert head.hc.fmt == f"eagle3-{variant}"
    assert head.hc.options["norm_before_residual"] is (variant == "speculators")
    for ids, aux, want, pre in zip(cases["ids"], cases["aux"], cases["logits"],
                                   cases["prenorm"]):
        aux2 = torch.stack([aux, torch.zeros_like(aux)])
        with torch.no_grad():
            got, rec = head(ids[1:], head.combine(None, aux2)[:1], torch.zeros(1, dtype=torch.long),
                            head.new_caches(), torch.zeros(1, 1, 1, 1))
        assert torch.equal(torch.isinf(got[0]), torch.isinf(want))
        fin = torch.isfinite(want)
        assert torch.allclose(got[0][fin], want[fin], atol=1e-5)
        assert torch.allclose(rec[0], pre, atol=1e-5)
        assert torch.equal(head.teacher_force(ids, None, aux2, 1)[0][0].isinf(), want.isinf())


# ------------------------------------------- the bundled head's config checks (fast tier)
def _config(folder):
    return json.loads((folder / "config.json").read_text())


def test_the_bundled_eagle3_head_fits_the_bundled_target_as_its_config_says():
    head, target = _config(A.BUNDLED_EAGLE3_HEAD), _config(A.BUNDLED_TARGET)  # GPT-2 names
    hc = Hd.head_config(A.BUNDLED_EAGLE3_HEAD, target)
    assert (hc.method, hc.fmt) == ("eagle3", "eagle3-speculators")
    assert hc.hidden_size == head["transformer_layer_config"]["hidden_size"]
    assert hc.vocab_size == target["vocab_size"] and hc.draft_vocab_size == head["draft_vocab_size"]
    assert hc.aux_layers == tuple(sorted(head["eagle_aux_hidden_state_layer_ids"]))
    assert max(hc.aux_layers) <= target["n_layer"]
    assert hc.names["d2t"] == (hc.draft_vocab_size,)  # draft vocabulary < target vocabulary
    assert hc.names["fc.weight"][1] == len(hc.aux_layers) * target["n_embd"]
    assert Hd.head_config(A.BUNDLED_EAGLE3_HEAD, target, method="eagle3").fmt == hc.fmt


def test_a_head_that_does_not_fit_is_named_before_any_weight():
    target, cfg = _config(A.BUNDLED_TARGET), _config(A.BUNDLED_EAGLE3_HEAD)
    head, h, v = A.BUNDLED_EAGLE3_HEAD, target["n_embd"], target["vocab_size"]
    with pytest.raises(ValueError, match=rf"config\.json: the head reads target hidden states "
                                         rf"of size {h} .* the target's hidden size is {2 * h}"):
        Hd.head_config(head, {**target, "n_embd": 2 * h})
    with pytest.raises(ValueError, match=rf"config\.json: vocab_size {v} but the target's "
                                         rf"vocabulary has {2 * v} tokens"):
        Hd.head_config(head, {**target, "vocab_size": 2 * v})
    ids = cfg["eagle_aux_hidden_state_layer_ids"]
    with pytest.raises(ValueError, match=re.escape(f"{ids} must lie in [0, {max(ids) - 1}]")):
        Hd.head_config(head, {**target, "n_layer": max(ids) - 1})
    with pytest.raises(ValueError, match=r"method 'eagle' was asked for .* 'eagle3' head"):
        Hd.head_config(head, target, method="eagle")
    with pytest.raises(ValueError, match=r"MTP was asked for.*declares no MTP"):
        Hd.head_config(A.BUNDLED_TARGET, target, method="mtp")
    with pytest.raises(ValueError, match="not a head specnb reads"):
        Hd.head_config(A.BUNDLED_DRAFTS[0], target)
