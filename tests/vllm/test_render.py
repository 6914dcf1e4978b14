"""specnb.vllm.render: serve lines, --config YAML and Python snippets."""

from __future__ import annotations

import ast
import json
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb.vllm import python_snippet, serve_command, speculative_config, yaml_config
from tests.tier import examples


#: The article's n-gram example (section 7), the same values as vLLM's docs README.
ARTICLE_NGRAM_JSON = ('{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, '
                      '"prompt_lookup_max": 5}')


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))


json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8)


configs = st.dictionaries(st.text(max_size=10), json_values, max_size=5)


# --------------------------------------------------------------------------- render
def test_serve_line_for_the_articles_example():
    cfg = speculative_config("ngram", 4, prompt_lookup_min=2, prompt_lookup_max=5)
    line = serve_command(cfg, "Qwen/Qwen3-8B")
    assert line == f"vllm serve Qwen/Qwen3-8B --speculative-config '{ARTICLE_NGRAM_JSON}'"
    # <target-model> would be a shell redirection unquoted
    assert serve_command(cfg).startswith("vllm serve '<target-model>' ")


@settings(max_examples=examples(120), deadline=None)
@given(configs, st.text(min_size=1, max_size=15).filter(str.strip))
def test_serve_command_survives_the_shell(cfg, model):
    words = shlex.split(serve_command(cfg, model))
    assert words[:2] == ["vllm", "serve"] and words[2] == model
    assert words[3] == "--speculative-config" and json.loads(words[4]) == cfg


@settings(max_examples=examples(120), deadline=None)
@given(configs)
def test_yaml_round_trips(cfg):
    import yaml  # a core dependency: yaml_config is written by PyYAML

    assert yaml.safe_load(yaml_config(cfg)) == {"speculative-config": cfg}


def test_yaml_for_the_articles_example():
    import yaml

    cfg = speculative_config("ngram", 4, prompt_lookup_min=2, prompt_lookup_max=5)
    text = yaml_config(cfg, model="Qwen/Qwen3-8B")
    assert "speculative-config:\n  method: ngram\n  num_speculative_tokens: 4\n" in text
    assert yaml.safe_load(text) == {"model": "Qwen/Qwen3-8B", "speculative-config": cfg}


def test_yaml_keeps_a_dynamic_schedule_as_lists_and_odd_text():
    import yaml

    cfg = {"method": "eagle", "model": "a: b #c", "num_speculative_tokens": 3,
           "num_speculative_tokens_per_batch_size": [[1, 64, 3], [65, 128, 1], [129, 512, 0]],
           "x\x85y": "\u2028 yes", "on": 1e-05}
    text = yaml_config(cfg, model="m")
    assert "num_speculative_tokens_per_batch_size: [[1, 64, 3], [65, 128, 1], [129, 512, 0]]" in text
    assert yaml.safe_load(text) == {"model": "m", "speculative-config": cfg}


@settings(max_examples=examples(80), deadline=None)
@given(configs)
def test_python_snippet_round_trips(cfg):
    code = python_snippet(cfg, "m")
    call = ast.parse(code).body[-1].value
    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    assert kw == {"model": "m", "speculative_config": cfg}


@pytest.mark.parametrize("render", [serve_command, yaml_config, python_snippet])
def test_renderers_reject_non_json(render):
    with pytest.raises(TypeError, match="config must be a dict"):
        render([("method", "ngram")])
    with pytest.raises(ValueError, match="JSON values"):
        render({"x": float("nan")})
