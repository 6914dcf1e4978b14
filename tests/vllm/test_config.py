"""specnb.vllm.config: the builder, speculative_config."""

from __future__ import annotations

import json

import pytest

from specnb.vllm._versions import select

from specnb.vllm import BUILD_METHODS, check_speculative_config, speculative_config


#: The article's n-gram example (section 7), the same values as vLLM's docs README.
ARTICLE_NGRAM_JSON = ('{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, '
                      '"prompt_lookup_max": 5}')


# --------------------------------------------------------------------------- build
MINIMAL = {
    "ngram": dict(num_speculative_tokens=4, prompt_lookup_min=2, prompt_lookup_max=5),
    "ngram_gpu": dict(num_speculative_tokens=4, prompt_lookup_min=2, prompt_lookup_max=5),
    "suffix": dict(num_speculative_tokens=16),
    "draft_model": dict(num_speculative_tokens=5, model="Qwen/Qwen3-0.6B"),
    "eagle": dict(num_speculative_tokens=2, model="yuhuili/EAGLE-LLaMA3-Instruct-8B"),
    "eagle3": dict(num_speculative_tokens=3, model="RedHatAI/Qwen3-8B-speculator.eagle3"),
    "mtp": dict(num_speculative_tokens=1),
    "medusa": dict(num_speculative_tokens=3, model="FasterDecoding/medusa-vicuna-7b-v1.3"),
    "mlp_speculator": dict(model="ibm-ai-platform/llama3-70b-accelerator"),
    "dflash": dict(num_speculative_tokens=7, model="z-lab/Qwen3-8B-DFlash"),
    "dspark": dict(num_speculative_tokens=7),
    "custom_class": dict(num_speculative_tokens=3, model="my_module.MyProposer"),
    "extract_hidden_states": dict(num_speculative_tokens=1),
}


def test_every_build_method_has_a_minimal_example():
    assert set(MINIMAL) == set(BUILD_METHODS)


#: vLLM 0.33 dropped medusa and mlp_speculator (oracle fixtures method:medusa, ...)
CURRENT = [m for m in BUILD_METHODS if m in select(None)[0].methods]


@pytest.mark.parametrize("method", CURRENT)
def test_build_every_method(method):
    cfg = speculative_config(method, **MINIMAL[method])
    assert list(cfg)[0] == "method" and cfg["method"] == method
    assert check_speculative_config(cfg).accepted
    assert check_speculative_config(json.dumps(cfg)).accepted


def test_build_reproduces_the_articles_example():
    cfg = speculative_config("ngram", 4, prompt_lookup_min=2, prompt_lookup_max=5)
    assert json.dumps(cfg) == ARTICLE_NGRAM_JSON


def test_build_refuses_what_vllm_refuses():
    with pytest.raises(ValueError, match="did you mean 'eagle3'"):
        speculative_config("eagle-3", 3, model="a/b")
    with pytest.raises(ValueError, match="model: num_speculative_tokens was provided but"):
        speculative_config("eagle3", 3)
    with pytest.raises(ValueError, match="prompt_lookup_min=5 must be <="):
        speculative_config("ngram", 4, prompt_lookup_min=5, prompt_lookup_max=2)
    with pytest.raises(ValueError, match="temperature"):
        speculative_config("ngram", 4, temperature=0.7)


def test_build_drops_none_options():
    assert speculative_config("mtp", 1, quantization=None) == {"method": "mtp",
                                                               "num_speculative_tokens": 1}
