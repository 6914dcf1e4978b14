"""specnb.serving.catalogue: GPUs and model shapes against the reference, config.json
reading, names and Hugging Face ids. Reference numbers: shared/reference/batch-model.md."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from specnb import data
from specnb import serving as S
from tests.serving.configs import LLAMA_CFG, llama8b_config


@pytest.mark.parametrize("model, kib", [("Llama-3.1-8B", 128), ("Llama-3.1-70B", 320),
                                        ("Llama-2-7B", 512)])
def test_kv_bytes_per_token_match_the_reference(model, kib):
    # reference 6.2: 131,072 B = 128 KiB; 327,680 B = 320 KiB; 524,288 B = 512 KiB (bf16)
    assert S.architecture(model).kv_bytes_per_token("bf16") == kib * 1024
    assert S.architecture(model).kv_bytes_per_token("fp8") == kib * 512


def test_parameter_counts_match_the_reference_at_printed_precision():
    a = S.architecture("Llama-3.1-8B")
    assert round(a.params / 1e9, 3) == 8.030  # "8.030 B (6.980 B non-embedding)"
    assert round((a.params - 2 * a.embedding_params) / 1e9, 3) == 6.980
    assert round(a.weight_bytes("bf16") / 1e9, 2) == 16.06  # "16.06 GB"
    b = S.architecture("Llama-3.1-70B")
    assert round(b.params / 1e9, 2) == 70.55 and round(b.weight_bytes() / 1e9, 1) == 141.1


@pytest.mark.parametrize("model, k_tokens", [("Llama-3.1-8B", 122.5), ("Llama-3.1-70B", 430.6),
                                             ("Llama-2-7B", 25.7)])
def test_batch_tokens_where_kv_equals_weights(model, k_tokens):
    a = S.architecture(model)
    assert round(a.weight_bytes() / a.kv_bytes_per_token() / 1e3, 1) == k_tokens


def test_every_catalogue_model_agrees_with_its_published_count():
    for name in S.architecture_names():
        a = S.architecture(name)
        # Kimi-K2's card rounds 1.03 T to "1 T" (data/README.md)
        assert abs(a.params / a.params_published - 1) < (0.03 if name == "Kimi-K2" else 0.01), \
            name
    # Qwen3-0.6B: 0.44 B non-embedding on its card; tied embeddings
    q = S.architecture("qwen3-0.6b")
    assert round((q.params - q.embedding_params) / 1e9, 2) == 0.44


@pytest.mark.parametrize("gpu, ridge", [("H100-SXM", 295), ("H200", 206), ("A100-SXM-80GB", 153),
                                        ("L40S", 419), ("RTX-3090", 76), ("RTX-4090", 164),
                                        ("B200", 281)])
def test_ridge_points_match_the_reference(gpu, ridge):
    assert round(S.ridge_point(gpu)) == ridge


def test_catalogues_hold_the_required_rows_with_provenance():
    gpus = {"H100-SXM", "H200", "A100-SXM-80GB", "A40", "L40", "L40S", "RTX-3090", "RTX-4090",
            "B200"}
    assert gpus <= set(S.gpu_names())
    models = {"Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.2-1B", "Llama-2-7B", "LLaMA-2-7B-32K",
              "TinyLlama-1.1B", "Mistral-7B-v0.3", "Qwen2.5-7B", "Qwen2.5-32B", "Qwen3-8B",
              "Qwen3-0.6B"}
    assert models <= set(S.architecture_names())
    for name in ("gpus", "model_architectures"):
        assert (data.load(name)["source"] != "").all()


def test_names_are_case_insensitive_and_aliases_work():
    assert S.gpu("h100").name == S.gpu("H100 SXM 80GB").name == "H100-SXM"
    assert S.architecture("LLAMA-3.1-8B-INSTRUCT").name == "Llama-3.1-8B"
    assert S.gpu("a100").fp8_flops is None and S.gpu("A100").flops("fp8") == 312e12
    assert S.gpu("H100").flops("fp8") == pytest.approx(2 * S.gpu("H100").flops("bf16"), rel=1e-3)


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ValueError, match="unknown GPU 'V100'.*H100-SXM.*B200"):
        S.gpu("V100")
    with pytest.raises(ValueError, match="unknown model 'gpt-5'.*Llama-3.1-8B.*Qwen3-0.6B"):
        S.architecture("gpt-5")


def test_config_json_reads_like_the_catalogue(tmp_path):
    path = tmp_path / "m" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(llama8b_config()))
    for arg in (path, str(path), str(path.parent)):
        a = S.architecture(arg)
        assert a.params == S.architecture("Llama-3.1-8B").params
        assert a.kv_bytes_per_token() == 131072
    # a multimodal config's text_config; Qwen2 gets q/k/v biases by default
    qwen = {"text_config": {"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584,
                            "num_attention_heads": 28, "num_key_value_heads": 4,
                            "intermediate_size": 18944, "vocab_size": 152064}}
    assert S.architecture(qwen).params == S.architecture("Qwen2.5-7B").params


def test_bad_config_json(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"num_hidden_layers": 32,\n "hidden_size": 4096,}')
    with pytest.raises(ValueError, match="line 2, column"):
        S.architecture(bad)
    cfg = llama8b_config()
    del cfg["vocab_size"]
    with pytest.raises(ValueError, match="missing key 'vocab_size'"):
        S.architecture(cfg)
    # an MoE config lacking its expert sizes (issue 16: MoE configs are read, not refused)
    with pytest.raises(ValueError, match="num_experts_per_tok must be an integer >= 1"):
        S.architecture({**llama8b_config(), "num_local_experts": 8})
    with pytest.raises(ValueError, match="hidden_size must be an integer >= 1"):
        S.architecture({**llama8b_config(), "hidden_size": 0})
    with pytest.raises(FileNotFoundError):
        S.architecture(str(tmp_path / "nothing" / "config.json"))


def test_catalogue_max_position_embeddings_with_their_source():
    # each row's value sits in its note with where it was read (a config.json or a copy of it)
    expected = {"Llama-3.1-8B": 131072, "Llama-3.1-70B": 131072, "Llama-3.2-1B": 131072,
                "Llama-2-7B": 4096, "LLaMA-2-7B-32K": 32768, "TinyLlama-1.1B": 2048,
                "Mistral-7B-v0.3": 32768, "Qwen2.5-7B": 131072, "Qwen2.5-32B": 131072,
                "Qwen3-8B": 40960, "Qwen3-0.6B": 40960, "DeepSeek-V3": 163840,
                "DeepSeek-R1": 163840, "Kimi-K2": 131072, "Qwen3-30B-A3B": 40960,
                "Qwen3-235B-A22B": 40960, "gpt-oss-120b": 131072, "gpt-oss-20b": 131072,
                "Mixtral-8x7B": 32768, "MiniCPM3-4B": 32768, "Qwen2.5-0.5B": 32768}
    assert set(S.architecture_names()) == set(expected)
    rows = data.load("model_architectures").set_index("model")
    for name, value in expected.items():
        assert S.architecture(name).max_position_embeddings == value
        assert f"max_position_embeddings {value}" in rows.loc[name, "note"] + \
            rows.loc[name, "source"], name
    # -Instruct / -Base aliases whose config.json differs carry their own value and name
    inst = S.architecture("qwen2.5-7b-instruct")
    assert (inst.name, inst.max_position_embeddings) == ("Qwen2.5-7B-Instruct", 32768)
    assert S.architecture("Qwen3-8B-Base").max_position_embeddings == 32768
    assert S.architecture("Llama-3.1-8B-Instruct").max_position_embeddings == 131072
    # MagicDec's 32K target is its own row (same shape as Llama-2-7B), no longer an alias
    long = S.architecture("togethercomputer/LLaMA-2-7B-32K")
    short = S.architecture("Llama-2-7b-hf")
    assert long.name == "LLaMA-2-7B-32K" and short.name == "Llama-2-7B"
    assert dataclasses.replace(long, name="x", source="", max_position_embeddings=None) == \
        dataclasses.replace(short, name="x", source="", max_position_embeddings=None)
    assert S.model_id(long) == "togethercomputer/LLaMA-2-7B-32K"
    assert S.magicdec_setup("table3a").target.name == "LLaMA-2-7B-32K"


@pytest.mark.parametrize("change, match", [
    ({"head_dim": 0}, r"head_dim must be an integer >= 1 \(at most [0-9,]+\), got 0"),
    ({"num_key_value_heads": 0},
     r"num_key_value_heads must be an integer >= 1 \(at most [0-9,]+\), got 0"),
    ({"num_key_value_heads": 3}, r"num_attention_heads \(4\) must be a multiple of "
                                 r"num_key_value_heads \(3\)"),
    ({"num_key_value_heads": 8}, "must be a multiple of num_key_value_heads"),
    ({"tie_word_embeddings": "false"}, "tie_word_embeddings must be true or false"),
    ({"attention_bias": "false"}, "attention_bias must be true or false"),
])
def test_config_values_are_not_replaced_or_misread(change, match):
    """0 is not 'absent' (no silent default) and "false" is not True."""
    with pytest.raises(ValueError, match=match):
        S.architecture({**LLAMA_CFG, **change})


def test_config_numpy_ints_null_defaults_bom_and_foreign_model_type(tmp_path):
    a = S.architecture({**LLAMA_CFG, "num_hidden_layers": np.int64(2), "head_dim": None,
                        "num_key_value_heads": None, "tie_word_embeddings": True})
    assert (a.n_layers, a.head_dim, a.n_kv_heads, a.tie_word_embeddings) == (2, 16, 4, True)
    p = tmp_path / "config.json"
    p.write_text("\ufeff" + json.dumps(LLAMA_CFG), encoding="utf-8")
    assert S.architecture(p).n_layers == 2
    with pytest.raises(ValueError, match="model_type 'gpt2' names its sizes differently"):
        S.architecture({"model_type": "gpt2", "n_layer": 4, "n_embd": 256, "n_head": 4,
                        "vocab_size": 2048})


def test_model_names_empty_and_hugging_face_ids():
    with pytest.raises(ValueError, match="model must not be empty; known models"):
        S.architecture("  ")
    assert S.architecture("meta-llama/Llama-3.1-8B").name == "Llama-3.1-8B"
    assert S.architecture("qwen/qwen3-8b").name == "Qwen3-8B"


@pytest.mark.parametrize("model, dtype", [("DeepSeek-V3", "fp8"), ("DeepSeek-R1", "fp8"),
                                          ("Kimi-K2", "fp8"), ("gpt-oss-20b", "mxfp4"),
                                          ("Llama-3.1-8B", None)])
def test_published_checkpoints_record_the_dtype_they_ship_in(model, dtype):
    # trial 6 W9: R1 and Kimi-K2 ship block FP8 as V3 does (sources in the rows' notes)
    assert S.architecture(model).checkpoint_dtype == dtype


# ---------------------------------------------------------------- trial 7 (t7mem)
@pytest.mark.parametrize("model", ["Llama-3.1-8B", "Llama-3.2-1B", "Qwen3-8B", "DeepSeek-V3"])
@pytest.mark.parametrize("dtype", ["fp8", "int8", "int4"])
def test_quantized_weights_keep_the_embedding_and_lm_head_in_bf16(model, dtype):
    """T7-02: vLLM 0.33's Fp8Config / AWQ / GPTQ get_quant_method claim LinearBase layers and
    RoutedExperts only; VocabParallelEmbedding and ParallelLMHead stay bf16 (a tied model
    stores the table once)."""
    a = S.architecture(model)
    vocab = a.vocab_size * a.hidden_size * (1 if a.tie_word_embeddings else 2)
    assert a.vocab_params == vocab
    want = (a.params - vocab) * S.DTYPES[dtype] + vocab * 2.0
    assert a.weight_bytes(dtype) == pytest.approx(want, rel=1e-12)
    assert a.weight_bytes("bf16") == a.params * 2.0  # unquantized: every weight at 2 bytes
    # the mixed width has one home: the routed experts of mxfp4 do not move
    assert S.weight_bytes_of(1e9, "mxfp4", 6e8, 1e8) == S.weight_bytes_of(1e9, "mxfp4", 6e8)


def test_the_trial_7_fp8_example_counts_the_embedding_at_two_bytes():
    """T7-02's case: Llama-3.1-8B fp8 weighs 6.98e9 x 1 + 1.05e9 x 2 = 9.08 GB (not 8.03)."""
    a = S.architecture("Llama-3.1-8B")
    assert round(a.weight_bytes("fp8") / 1e9, 2) == round(
        ((a.params - 2 * a.embedding_params) + 4 * a.embedding_params) / 1e9, 2) == 9.08


def test_gpu_totals_are_the_devices_reported_binary_totals_with_their_source():
    """T7-06: ``total_memory_bytes`` is torch.cuda.mem_get_info's total, the GiB figure its
    source quotes x 2^30; where none was found the row says so and the datasheet figure
    stands in (``device_memory_bytes``)."""
    import re
    rows = data.load("gpus").set_index("gpu")
    found = 0
    for name in S.gpu_names():
        g, row = S.gpu(name), rows.loc[name]
        src = str(row["total_memory_source"])
        assert src.strip(), name
        if g.total_memory_bytes is None:
            assert src.startswith("NOT FOUND"), name
            assert g.device_memory_bytes == g.memory_bytes
            continue
        found += 1
        gib = float(re.match(r"([\d.]+) GiB x 2\^30", src).group(1))
        assert g.total_memory_bytes == round(gib * 2 ** 30), name
        assert f"{gib:.2f} GiB'" in src or f"about {gib:g} GiB" in src, name  # as quoted
        assert g.device_memory_bytes == g.total_memory_bytes
    assert found >= 10
    # the example of the fault: an "80 GB" H100 reports 79.11 GiB = 84.9e9 B, not 80e9
    h100 = S.gpu("H100")
    assert round(h100.device_memory_bytes / 1e9, 1) == 84.9 and h100.memory_bytes == 80e9
