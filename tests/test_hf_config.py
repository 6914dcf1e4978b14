"""specnb.hf_config: the one config.json reader (file or folder, BOM, bad bytes, bad JSON,
not an object) and the checkpoint kind, as serving and the vLLM checker use them."""

from __future__ import annotations

import json

import pytest

from specnb import hf_config
from specnb import serving as S
from specnb.vllm import check_speculative_config

LLAMA = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
         "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
         "vocab_size": 128256}


def test_reads_a_file_or_its_folder_and_skips_a_bom(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("\ufeff" + json.dumps(LLAMA), encoding="utf-8")
    for source in (p, str(p), tmp_path, str(tmp_path)):
        cfg, path = hf_config.read_config(source)
        assert cfg == LLAMA and path == p


@pytest.mark.parametrize("raw, exc, match", [
    (b'{"a": 1,\n "b": 2,}', ValueError, r"model config '.*config.json': not valid JSON at "
                                          r"line 2, column 9: "),
    (b'[1, 2]', ValueError, "must hold a JSON object, got list"),
    (b'{"architectures": ["caf\xe9"]}', ValueError,
     r"config.json': not UTF-8 text \(byte 0xe9 at offset 23\)"),
])
def test_bad_files_are_named(tmp_path, raw, exc, match):
    p = tmp_path / "config.json"
    p.write_bytes(raw)
    with pytest.raises(exc, match=match):
        hf_config.read_config(p, label="model config")


def test_a_missing_file_names_its_label_and_hint(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"draft_config '.*nothing' does "
                                                r"not exist \(give a folder\)"):
        hf_config.read_config(tmp_path / "nothing", label="draft_config", hint="give a folder")


def test_serving_and_the_checker_read_through_it(tmp_path, monkeypatch):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**LLAMA, "architectures": ["LlamaForCausalLMEagle3"]}))
    calls = []
    real = hf_config.read_config

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(hf_config, "read_config", counting)
    with pytest.raises(ValueError, match="is a checkpoint for method eagle3"):
        S.setup("H100", "Llama-3.1-8B", str(tmp_path))
    assert len(calls) == 1  # serving.draft reads the file once (it read it twice before)
    cfg = {"method": "draft_model", "model": "m", "num_speculative_tokens": 3}
    msg = " ".join(f.message for f in check_speculative_config(cfg, draft_config=tmp_path))
    assert "'eagle3'" in msg and len(calls) == 2
    with pytest.raises(ValueError, match="no config.json there"):  # the checker's ValueError
        check_speculative_config(cfg, draft_config=tmp_path / "missing")


@pytest.mark.parametrize("model, config, expected", [
    ("org/head", {"architectures": ["Eagle3LlamaForCausalLM"]}, "eagle3"),
    ("org/head", {"architectures": ["MedusaModel"]}, "medusa"),
    ("org/head", {"model_type": "mlp_speculator"}, "mlp_speculator"),
    ("org/head", {"model_type": "deepseek_mtp"}, "mtp"),
    ("org/head", {"model_type": "MTP"}, "mtp"),
    ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", None, "eagle3"),
    ("yuhuili/EAGLE-LLaMA3-Instruct-8B", None, "eagle"),
    ("ibm/llama3-8b-accelerator", None, "mlp_speculator"),
    ("org/model-mtp", None, "mtp"),
    ("meta-llama/Llama-3.2-1B", {"architectures": ["LlamaForCausalLM"]}, None),
    ("", None, None),
])
def test_checkpoint_method(model, config, expected):
    found = hf_config.checkpoint_method(model, config)
    assert (found and found[0]) == expected


def test_parts():
    assert hf_config.architectures({"architectures": ["A", 3, "B"]}) == ["A", "B"]
    assert hf_config.architectures({"architectures": "A"}) == []
    assert hf_config.architectures(None) == []
    assert hf_config.model_type({"model_type": "Qwen3"}) == "qwen3"
    assert hf_config.model_type({"model_type": 3}) == ""
    assert hf_config.is_mtp_type("glm4_moe_mtp") and not hf_config.is_mtp_type("llama")


@pytest.mark.parametrize("key, value, shown", [
    ("num_hidden_layers", 10 ** 400, r"100000000000\.\.\.0000 \(401 digits\): too large"),
    ("num_hidden_layers", 10_001, "10001: too large"),
    ("max_position_embeddings", 2 ** 31, "2147483648: too large"),
    ("hidden_size", 0, "0$"),
    ("vocab_size", True, "True$"),
])
def test_config_int_bounds_each_field_naming_it_and_the_file(tmp_path, key, value, shown):
    # trial 6 T6-T6 / C2: a 400-digit num_hidden_layers was an OverflowError in a formula, a
    # 400-digit max_position_embeddings read as a bad --context
    limit = hf_config.SIZE_LIMITS[key]
    assert hf_config.config_int("f.json", key, limit) == limit
    with pytest.raises(ValueError, match=rf"^f\.json: {key} must be an integer >= 1 \(at most "
                                         rf"{limit:,}\), got {shown}"):
        hf_config.config_int("f.json", key, value)
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**LLAMA, key: value}))
    with pytest.raises(ValueError, match=rf"config\.json'?: {key} must be an integer >= 1"):
        S.architecture(str(p))


@pytest.mark.parametrize("cfg, layers", [
    ({"model_type": "llama"}, 0),  # vLLM 0.33 maps llama to no MTP draft (T7-10)
    ({"model_type": "qwen3", "num_nextn_predict_layers": 1}, 0),  # whatever the field says
    ({"model_type": "deepseek_v3", "num_nextn_predict_layers": 1}, 1),
    ({"model_type": "deepseek_v3", "num_nextn_predict_layers": 0}, 0),  # Kimi-K2
    ({"model_type": "qwen3_5", "text_config": {"mtp_num_hidden_layers": 1}}, 1),
    ({"model_type": "some_new_arch"}, None),  # not judged: unknown
    (None, None),
])
def test_mtp_layers_reads_the_target_as_vllm_does(cfg, layers):
    assert hf_config.mtp_layers(cfg) == layers
