"""specnb.serving.setup: drafts, the setup, memory, tensor parallelism and the coded
context-limit notes."""

from __future__ import annotations

import dataclasses
import json

import pytest

from specnb import serving as S
from tests.serving.configs import LLAMA_CFG, llama8b_config


def test_config_json_max_position_embeddings(tmp_path):
    assert S.architecture(llama8b_config()).max_position_embeddings is None  # absent: unknown
    cfg = {**llama8b_config(), "max_position_embeddings": 8192}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert S.architecture(path).max_position_embeddings == 8192
    with pytest.raises(ValueError, match="max_position_embeddings must be an integer >= 1"):
        S.architecture({**llama8b_config(), "max_position_embeddings": "4k"})
    # a config with a maximum gets the note; one without gets none
    assert S.context_limit_notes(cfg, [8192]) == []
    (note,) = S.context_limit_notes(cfg, [1000, 10000])
    assert note.code == "context-over-max-positions"
    note = note.message
    assert "context 10000 exceeds" in note and "maximum of 8192 positions" in note
    assert S.context_limit_notes(llama8b_config(), [10 ** 6]) == []


def test_context_beyond_the_maximum_is_a_note_not_an_error():
    # the README's old example: Llama-2-7B (4,096 positions) at context 16,000
    st_ = S.setup("A100", "Llama-2-7B", "TinyLlama-1.1B", gpus=8, draft_kv_budget=512)
    grid = S.evaluate(st_, [32], [16000], [2], tau=2.17)  # evaluated: no error
    assert grid.speedup.shape == (1, 1, 1)
    notes = S.context_limit_notes(st_, [1000, 16000])
    assert len(notes) == 2
    assert [n.code for n in notes] == ["context-over-max-positions",
                                       "draft-kv-budget-not-expressible"]
    target, draft = (n.message for n in notes)
    assert "context 16000 exceeds the target Llama-2-7B's maximum of 4096 positions" in target
    assert "1000" not in target.split("exceeds")[0]  # only the contexts above it
    assert "LLaMA-2-7B-32K, 32768 positions" in target and "within 4096" in target
    # TinyLlama (2,048) reads 512 tokens in the model, but vLLM has no draft KV budget
    assert "draft TinyLlama-1.1B takes at most 2048 positions" in draft
    assert "no KV budget" in draft
    assert [n.message for n in S.context_limit_notes(st_, [4096])] == [
        draft.replace("(16000)", "(4096)")]
    assert S.context_limit_notes(st_, 2048) == []
    # the 32K variant serves 16,000; a draft model without a budget beyond its maximum
    st32 = S.setup("A100", "LLaMA-2-7B-32K", "TinyLlama-1.1B", gpus=8)
    (note,) = S.context_limit_notes(st32, [16000])
    assert note.code == "context-over-max-positions"
    note = note.message
    assert "exceeds the draft TinyLlama-1.1B's maximum of 2048" in note
    assert "long-context variant of the model" in note  # no same-shape row to name
    first = S.context_limit_notes(S.setup("H100", "Llama-2-7B", "eagle3"), [5000])[0]
    assert first.code == "context-over-max-positions" and first.message.startswith(
        "context 5000 exceeds the target Llama-2-7B's")
    with pytest.raises(ValueError, match="contexts"):
        S.context_limit_notes(st32, [-1])


def test_drafts():
    tgt = "Llama-3.1-8B"
    head = S.draft("eagle3", tgt)
    # issue 16: an EAGLE-3 head samples its own 32,000-token draft vocabulary (ASSUMED
    # without its config.json); EAGLE-1 uses the target's LM head
    assert head.kind == "head" and head.arch.n_layers == 1 and head.arch.vocab_size == 32000
    assert head.lm_head_vocab == 32000 and S.draft("eagle", tgt).arch.vocab_size == 128256
    assert S.draft("ngram", tgt).arch is None
    assert S.draft("Llama-3.2-1B", tgt).method == "draft_model"
    assert S.draft("self", tgt, kv_budget=512).kv_budget == 512
    with pytest.raises(ValueError, match="vocab_size 151936 but the target Llama-3.1-8B has "
                                         "128256"):
        S.draft("Qwen3-0.6B", tgt)
    with pytest.raises(ValueError, match="ngram drafting reads no KV"):
        S.draft("ngram", tgt, kv_budget=512)
    with pytest.raises(ValueError, match="unknown draft 'medusa2'.*ngram.*Llama-3.2-1B"):
        S.draft("medusa2", tgt)
    with pytest.raises(ValueError, match="draft_kv_budget must be an integer >= 1"):
        S.draft("self", tgt, kv_budget=0)


def test_draft_times_follow_the_draft():
    st_ng = S.setup("H100", "Llama-3.1-8B", "ngram")
    assert S.t_draft_ms(st_ng, 8, 1000, 3) == pytest.approx(
        S.NGRAM_DRAFT_FRACTION * S.t_verify_ms(st_ng, 8, 1000, 3))
    st_self = S.setup("H100", "Llama-3.1-8B", "self")
    assert S.t_draft_ms(st_self, 8, 1000, 3) == pytest.approx(3 * S.t_plain_ms(st_self, 8, 1000))
    budget = S.setup("H100", "Llama-3.1-8B", "self", draft_kv_budget=512)
    assert S.t_draft_ms(budget, 8, 100000, 1) == pytest.approx(S.t_plain_ms(budget, 8, 512))


def test_max_batch_in_memory():
    st_ = S.setup("H100", "Llama-3.1-8B", "ngram")
    room = (S.DEFAULT_GPU_MEMORY_UTILIZATION * S.gpu("H100").total_memory_bytes
            - S.architecture("Llama-3.1-8B").weight_bytes())  # T7-06: the device's total
    assert S.max_batch_in_memory(st_, 8000) == int(room // (8000 * 131072))
    assert S.max_batch_in_memory(S.setup("RTX-4090", "Llama-3.1-70B", "ngram"), 100) == 0


def test_setup_is_a_plain_dataclass():
    st_ = S.setup("H100", "Llama-3.1-8B", "eagle")
    fast = dataclasses.replace(st_, gpu=S.gpu("B200"))
    assert S.t_plain_ms(fast, 8, 1000) < S.t_plain_ms(st_, 8, 1000)


@pytest.mark.parametrize("model, gpus, match", [
    ("Llama-3.1-8B", 3, r"gpus = 3 does not divide the target Llama-3.1-8B's "
                        r"num_attention_heads \(32\).*allowed GPU counts: 1, 2, 4, 8, 16, 32"),
    ("Llama-3.1-8B", 64, "num_attention_heads"),
    ("Qwen2.5-7B", 8, r"num_attention_heads \(28\)"),
])
def test_tensor_parallel_sizes_vllm_refuses(model, gpus, match):
    with pytest.raises(ValueError, match=match):
        S.setup("H100", model, "eagle3", gpus=gpus)
    with pytest.raises(ValueError, match=match):  # the same rule with no GPU named
        S.check_tensor_parallel(model, gpus)
    assert S.setup("H100", "Llama-3.1-8B", "eagle3", gpus=16).gpus == 16  # KV heads x 2
    assert S.check_tensor_parallel("meta-llama/Llama-3.1-8B", 16) is None
    with pytest.raises(ValueError, match="gpus must be an integer >= 1"):
        S.check_tensor_parallel("Llama-3.1-8B", 0)


def test_tensor_parallel_checks_the_draft_model_too():
    cfg = {**LLAMA_CFG, "num_attention_heads": 6, "num_key_value_heads": 6, "hidden_size": 96}
    st = S.setup("H100", "Llama-3.1-8B", cfg, gpus=1)
    assert st.draft.kind == "model"
    with pytest.raises(ValueError, match="the draft config's num_attention_heads"):
        S.setup("H100", "Llama-3.1-8B", cfg, gpus=4)


def test_a_kv_budget_given_beside_a_built_draft_is_not_dropped():
    d = S.draft("self", "Llama-3.1-8B")
    with pytest.raises(ValueError, match="draft_kv_budget 512 given with a Draft whose "
                                         "kv_budget is None"):
        S.setup("H100", "Llama-3.1-8B", d, draft_kv_budget=512)
    assert S.draft(S.draft("self", "Llama-3.1-8B", kv_budget=512), "Llama-3.1-8B",
                   kv_budget=512).kv_budget == 512


@pytest.mark.parametrize("extra, method", [
    ({"architectures": ["LlamaForCausalLMEagle3"], "draft_vocab_size": 32000}, "eagle3"),
    ({"architectures": ["MedusaModel"]}, "medusa"),
])
def test_a_draft_head_config_is_not_modelled_as_a_draft_model(tmp_path, extra, method):
    """An EAGLE-3 head's config.json given as a draft model would give a draft_model config,
    the misconfiguration vLLM runs with acceptance near 0 (issue 11)."""
    cfg = {**LLAMA_CFG, "hidden_size": 4096, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 1,
           **extra}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=f"is a checkpoint for method {method} .config.json "
                                         "architectures"):
        S.setup("H100", "Llama-3.1-8B", str(tmp_path))
    plain = {k: v for k, v in cfg.items() if k not in extra}
    assert S.setup("H100", "Llama-3.1-8B", plain).draft.method == "draft_model"


# --------------------------------------------------------------------------- issue 16
def test_memory_cap_issue_example():
    # Llama-3.1-8B, EAGLE-3, one H100, context 2000: "pays at every batch size up to 512"
    # was printed while 205 sequences fit; the EAGLE-3 head's own weights (its fc, wider
    # q/k/v and 32,000-row LM head: 0.42 B) now count, so 203 fit with it, 213 without (on
    # the datasheet's 80e9 B; T7-06: on the 79.11 GiB the device reports, 220 and 230)
    st = S.setup("H100", "Llama-3.1-8B", "eagle3", gpu_memory_utilization=0.9)  # the issue's
    cap = S.memory_cap(st, 2000)
    datasheet = S.memory_cap(dataclasses.replace(
        st, gpu=dataclasses.replace(st.gpu, total_memory_bytes=None)), 2000)
    assert datasheet == {"max_batch": 203, "max_batch_without_draft": 213, "displaced": 10}
    assert cap["displaced"] == 10 and cap["max_batch"] > 203
    assert S.memory_cap(st, 2000, 0.95)["max_batch"] > cap["max_batch"]  # the utilization
    tight = S.setup("H100", "Llama-3.1-8B", "eagle3", gpu_memory_utilization=0.5)
    assert S.max_batch_in_memory(tight, 2000) < 100
    room = 0.9 * st.gpu.total_memory_bytes - st.target.weight_bytes() - st.draft.weight_params * 2.0
    per_seq = 2000 * (131072 + 4096)  # the head caches one layer's KV
    assert cap["max_batch"] == int(room // per_seq)


def test_memory_cap_mla_and_replicated_kv_heads():
    ds = S.setup("H200", "DeepSeek-V3", "mtp", gpus=8, dtype="fp8", kv_dtype="fp8")
    cap = S.memory_cap(ds, 8192)
    # the MLA latent is cached whole on every rank: 8 copies of 35,136 B (fp8 KV cache asked
    # for) per token
    a = ds.target  # T7-02: the embedding and LM head stay bf16; T7-06: the device's total
    w = (a.params - 2 * a.embedding_params) * 1.0 + 2 * a.embedding_params * 2.0
    room = S.DEFAULT_GPU_MEMORY_UTILIZATION * 8 * ds.gpu.total_memory_bytes - w - \
        ds.draft.weight_params
    per_token = 8 * 35136 * (1 + 1 / 61)  # + the MTP block's own layer
    assert cap["max_batch"] == int(room // (8192 * per_token))
    assert cap["displaced"] > 0
    # fault N2: fp8 weights alone keep vLLM's default KV dtype auto, the activation dtype
    # (bf16, 2 bytes): twice the bytes per token
    auto = S.setup("H200", "DeepSeek-V3", "mtp", gpus=8, dtype="fp8")
    assert auto.kv_dtype == "auto"
    assert S.memory_cap(auto, 8192)["max_batch"] == int(room // (8192 * 2 * per_token))


def test_kv_storage_dtype_is_vllms_kv_cache_dtype():
    # vllm/config/cache.py CacheDType: auto = the model's (activation) dtype
    assert [S.kv_storage_dtype(None, d) for d in ("bf16", "fp16", "fp8", "int8", "int4")] == [
        "bf16", "fp16", "bf16", "bf16", "bf16"]
    assert {S.kv_storage_dtype(k, "bf16") for k in ("fp8", "fp8_e4m3", "fp8_e5m2")} == {"fp8"}
    assert S.kv_storage_dtype("float16", "bf16") == "fp16"
    with pytest.raises(ValueError, match="kv_cache_dtype must be one of .*; got 'fp8_inc'"):
        S.setup("H100-SXM", "Llama-3.1-8B", "eagle3", kv_dtype="fp8_inc")


def test_cannot_serve_names_the_sizes_and_what_to_change():
    st = S.setup("RTX-3090", "Llama-3.1-70B", "eagle3")
    n = S.cannot_serve(st, [4000])
    assert n.code == "weights-do-not-fit" and "--gpus 8" in n.message
    w = st.target.weight_bytes("bf16") / 1e9
    assert f"{w:,.1f} GB target" in n.message
    # 7 GPUs cannot split 64 heads; 8 hold the weights and one sequence
    assert S.cannot_serve(S.setup("RTX-3090", "Llama-3.1-70B", "eagle3", gpus=8), [4000]) is None
    low = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3", gpu_memory_utilization=0.1)
    assert "--gpu-memory-utilization 0.9" in S.cannot_serve(low, [4000]).message
    st = S.setup("RTX-4090", "Llama-3.1-8B", "eagle3")  # 131072 positions: 17.2 GB of KV
    n = S.cannot_serve(st, [131072])
    longest = int(n.message.rsplit("at most ", 1)[1].split()[0].replace(",", ""))
    assert n.code == "no-sequence-fits"
    assert S.max_batch_in_memory(st, longest) == 1 and S.max_batch_in_memory(st, longest + 1) == 0
    assert longest == S.max_model_len_that_fits(st, 131072)
    assert S.cannot_serve(st, [131072, 4000]) is None  # one context fits: per-context lines
    # T5-C2: every context above the target's max_position_embeddings: nothing can be served,
    # whatever the memory; one within it: the memory rule reads that one
    st = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    n = S.cannot_serve(st, [10 ** 11])
    assert n.code == "no-context-within-max-positions" and "at most 131,072" in n.message
    assert S.contexts_over_max_positions(st, [10 ** 11, 131072, 4000]) == [10 ** 11]
    assert S.cannot_serve(st, [10 ** 11, 4000]) is None


def test_gpu_alias_note_names_the_other_variants():
    assert "H100-PCIe" in S.gpu_alias_note("H100") and "H100-NVL" in S.gpu_alias_note("h100")
    assert S.gpu_alias_note("H100-SXM") is None and S.gpu_alias_note("A100") is None


@pytest.mark.parametrize("kwargs, match", [
    ({"proposal_rate": 0}, r"proposal_rate must be in \(0, 1\]"),
    ({"proposal_rate": 1.5}, r"proposal_rate must be in \(0, 1\]"),
    ({"gpu_memory_utilization": 0}, r"gpu_memory_utilization must be in \(0, 1\]"),
    ({"gpu_memory_utilization": 1.2}, r"gpu_memory_utilization must be in \(0, 1\]"),
])
def test_setup_bad_issue16_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        S.setup("H100", "Llama-3.1-8B", "ngram", **kwargs)


def test_proposal_rate_only_for_partial_proposers():
    assert S.setup("H100", "Llama-3.1-8B", "suffix", proposal_rate=0.3).proposal_rate == 0.3
    with pytest.raises(ValueError, match="proposal_rate 0.5 applies to ngram / suffix"):
        S.setup("H100", "Llama-3.1-8B", "eagle3", proposal_rate=0.5)


def test_a_context_over_the_positions_also_says_what_the_longest_servable_one_lacks():
    # trial 5 K4: the advice must not stop at the positions when even the model's own
    # maximum cannot be served (weights, or one sequence)
    st = S.setup("RTX-4090", "Llama-3.1-70B", "eagle3")
    note = S.cannot_serve(st, [200000])
    assert note.code == "no-context-within-max-positions"
    assert "at most 131,072" in note.message and "even there the weights alone do not fit" \
        in note.message
    ok = S.cannot_serve(S.setup("H100-SXM", "Llama-3.1-8B", "eagle3"), [200000])
    assert ok.code == "no-context-within-max-positions" and "even there" not in ok.message


def test_the_checkpoint_placeholder_reads_back_as_the_name_and_dtype_it_was_made_of():
    """T6-C8: ``read_checkpoint_placeholder`` is ``serve_weight_args``'s placeholder reversed;
    a Hugging Face id or the draft's ``<eagle3-checkpoint>`` is not one."""
    from specnb import serving as S

    for name in ("Llama-3.1-70B", "Qwen3-8B", "DeepSeek-V3"):
        arch = S.architecture(name)
        for dtype in S.DTYPES:
            model, _, notes = S.serve_weight_args(arch, dtype)
            placed = S.read_checkpoint_placeholder(model)
            made = any(n.code == "quantized-checkpoint-placeholder" for n in notes)
            assert placed == ((arch.name, dtype) if made else None), (name, dtype, model)
    for other in ("<eagle3-checkpoint>", "<x-int5-checkpoint>", "meta-llama/Llama-3.1-8B", ""):
        assert S.read_checkpoint_placeholder(other) is None


# ---------------------------------------------------------------- trial 7 (t7mem)
def test_memory_cap_budgets_from_the_devices_reported_total():
    """T7-06: vLLM's request_memory is gpu_memory_utilization x mem_get_info's total (binary);
    the trial's 70B + 1B draft on 2 x H100 at 4000 tokens, recomputed by hand."""
    st = S.setup("H100-SXM", "Llama-3.1-70B", "Llama-3.2-1B", gpus=2)
    g, tgt, d = st.gpu, st.target, st.draft.arch
    room = 0.92 * 2 * g.total_memory_bytes - tgt.params * 2.0 - d.params * 2.0
    per_seq = 4000 * (tgt.kv_bytes_per_token("bf16") + d.kv_bytes_per_token("bf16"))
    assert S.max_batch_in_memory(st, 4000) == int(room // per_seq)
    datasheet = 0.92 * 2 * g.memory_bytes - tgt.params * 2.0 - d.params * 2.0
    assert int(datasheet // per_seq) < int(room // per_seq)  # the fault: 80e9 per GPU
    text = S.memory_budget_text(st)
    assert f"{g.total_memory_bytes / 2 ** 30:.2f} GiB per H100-SXM" in text
    assert "not found" in S.memory_budget_text(S.setup("A40", "Llama-3.1-8B", "ngram"))


def test_quantized_weights_leave_the_room_vllm_leaves():
    """T7-02's case: Llama-3.1-8B in fp8 on an L4 at 8000 tokens, the embedding and LM head
    at 2 bytes (vLLM keeps them bf16)."""
    st = S.setup("L4", "Llama-3.1-8B", "ngram", dtype="fp8")
    a = st.target
    w = (a.params - 2 * a.embedding_params) * 1.0 + 2 * a.embedding_params * 2.0
    room = 0.92 * st.gpu.device_memory_bytes - w
    assert S.max_batch_in_memory(st, 8000) == int(room // (8000 * a.kv_bytes_per_token("bf16")))
    assert S.max_model_len_that_fits(st, 131072) == int(room // a.kv_bytes_per_token("bf16"))


@pytest.mark.parametrize("dtype", ["fp8", "int8", "int4"])
def test_an_explicit_quantized_dtype_keeps_a_draft_as_its_checkpoint_stores_it(dtype):
    """T7-12: the draft's dtype defaults to what vLLM loads (speculative_config quantization
    None: unquantized), whatever --dtype says; mtp keeps the target's; one rule."""
    eagle = S.setup("L40S", "Llama-3.1-70B", "eagle3", gpus=2, dtype=dtype)
    model = S.setup("H100-SXM", "Llama-3.1-70B", "Llama-3.2-1B", dtype=dtype)
    assert (eagle.dtype, eagle.draft_dtype) == (dtype, "bf16")
    assert (model.dtype, model.draft_dtype) == (dtype, "bf16")
    assert S.default_draft_dtype(eagle.draft, dtype) == eagle.draft_dtype
    mtp = S.setup("H200", "DeepSeek-V3", "mtp", gpus=8, dtype="fp8")
    assert mtp.draft_dtype is None  # the target's own layers take its quantization
    assert S.setup("H100-SXM", "Llama-3.1-8B", "eagle3", dtype="fp16").draft_dtype == "fp16"
    # an explicit --draft-dtype still wins
    assert S.setup("L40S", "Llama-3.1-70B", "eagle3", gpus=2, dtype=dtype,
                   draft_dtype="int4").draft_dtype == "int4"
