"""specnb.vllm: building, rendering and checking speculative_config against vLLM's rules."""

from __future__ import annotations

import ast
import json
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb.vllm import (
    BUILD_METHODS,
    ConfigSyntaxError,
    check_speculative_config,
    parse_speculative_config,
    python_snippet,
    serve_command,
    speculative_config,
    yaml_config,
)
from specnb.vllm import _schema as S

CASES = [json.loads(line) for line in
         (Path(__file__).parent / "cases" / "vllm_configs.jsonl").read_text().splitlines()
         if line.strip()]

#: The article's n-gram example (section 7), the same values as vLLM's docs README.
ARTICLE_NGRAM_JSON = ('{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, '
                      '"prompt_lookup_max": 5}')


def error_keys(result):
    return {f.key for f in result.errors}


# --------------------------------------------------------------------------- shared cases
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_every_shared_case_gets_vllms_verdict(case):
    result = check_speculative_config(case["config"])
    if case["expect"] == "ok":
        assert result.accepted, str(result)
        assert result.errors == []
    else:
        assert not result.accepted, str(result)
        assert case["key"] in error_keys(result), str(result)


def test_the_shared_cases_cover_both_verdicts():
    assert {c["expect"] for c in CASES} == {"ok", "error"}


# --------------------------------------------------------------------------- JSON errors
MALFORMED = [
    # text, words expected in the cause, key, (line, column) of the cause
    ("{'method': 'ngram', 'num_speculative_tokens': 4}", "single quotes", None, (1, 2)),
    ("{'method': 'ngram', 'enforce_eager': True}", "Python dict", None, (1, 2)),
    ('{\u201cmethod\u201d: \u201cngram\u201d, \u201cnum_speculative_tokens\u201d: 4}',
     "smart or full-width", None, (1, 2)),
    ('{\uff02method\uff02\uff1a\uff02ngram\uff02\uff0c\uff02num_speculative_tokens\uff02\uff1a4}',
     "full-width", None, (1, 2)),
    ('{"method": "ngram",\n "num_speculative_tokens": 4,\n}', "trailing comma", None, (2, 29)),
    ('{"method": "ngram", "num_speculative_tokens": 4, "enforce_eager": False}',
     "True/False/None", None, (1, 67)),
    ('{"method": "mtp", "num_speculative_tokens": {{ k }}}', "placeholder {{ k }}",
     "num_speculative_tokens", (1, 45)),
    ('{"method": "mtp",\n "num_speculative_tokens": ${K}}', "placeholder ${K}",
     "num_speculative_tokens", (2, 28)),
    ('{\\"method\\": \\"ngram\\", \\"num_speculative_tokens\\": 4}', "backslash", None, (1, 2)),
    ("'{\"method\": \"ngram\", \"num_speculative_tokens\": 4}'", "reached vLLM literally",
     None, (1, 1)),
    ('"method": "ngram", "num_speculative_tokens": 4', "missing braces", None, (1, 1)),
    ('{"method": "ngram", "num_speculative_tokens": 4', "missing braces", None, (1, 48)),
    ("{method: mtp, num_speculative_tokens: 1}", "stripped", None, (1, 2)),
    ("method=ngram, num_speculative_tokens=4", "key=value", None, (1, 7)),
    ('{"method": "ngram", // n-gram\n "num_speculative_tokens": 4}', "comment", None, (1, 21)),
]


@pytest.mark.parametrize("text,cause,key,pos", MALFORMED, ids=[m[1] for m in MALFORMED])
def test_malformed_json_names_line_column_and_cause(text, cause, key, pos):
    with pytest.raises(ConfigSyntaxError) as info:
        parse_speculative_config(text)
    err = info.value
    assert cause in err.cause
    assert err.key == key
    assert (err.line, err.column) == pos
    result = check_speculative_config(text)
    (finding,) = result.findings
    assert finding.severity == "error" and not result.accepted
    assert (finding.line, finding.column) == pos and finding.key == key


@pytest.mark.parametrize("text,cause,key,pos",
                         [m for m in MALFORMED if "placeholder" not in m[1]],
                         ids=[m[1] for m in MALFORMED if "placeholder" not in m[1]])
def test_the_suggested_fix_is_valid_json(text, cause, key, pos):
    with pytest.raises(ConfigSyntaxError) as info:
        parse_speculative_config(text)
    fix = info.value.fix
    assert fix.startswith("use ")
    fixed = json.loads(fix[4:])
    assert isinstance(fixed, dict) and "method" in fixed


def test_the_fix_for_stripped_quotes_passes_vllms_rules():
    # {method: ngram} repairs to {"method": "ngram"}, which vLLM rejects without a draft length
    (finding,) = check_speculative_config("{method: ngram}").findings
    assert finding.fix == 'use {"method": "ngram", "num_speculative_tokens": 4}'
    assert check_speculative_config(finding.fix[4:]).accepted


def test_unknown_key_list_says_which_version_it_is():
    old = check_speculative_config('{"method": "ngram", "num_speculative_tokens": 4, "foo": 1}',
                                   vllm_version="0.11.0")
    (foo,) = [f for f in old if f.key == "foo"]
    assert "valid keys in current vLLM" in foo.fix and "0.11.0 may lack" in foo.fix


def test_a_quoted_json_string_is_named_as_kept_quotes():
    inner = {"method": "ngram", "num_speculative_tokens": 4}
    result = check_speculative_config(json.dumps(json.dumps(inner)))
    (f,) = result.errors
    assert "quotes around it were kept" in f.message
    assert json.loads(f.fix[4:]) == inner


# vLLM's optional_type tests `val == "" or val == "None"` exactly: "   " is handed to json.loads
# and rejected (see tests/test_bad_input.py); JSON null parses to None, i.e. no config.
@pytest.mark.parametrize("text", ["", "None", "null"])
def test_empty_value_means_speculation_off_and_is_accepted(text):
    result = check_speculative_config(text)
    assert result.accepted and result.config is None
    assert "stays off" in result.warnings[0].message


@pytest.mark.parametrize("text", ["[1, 2]", "5", '"ngram"'])
def test_a_non_object_is_an_error(text):
    assert not check_speculative_config(text).accepted


simple_configs = st.fixed_dictionaries({
    "method": st.just("ngram"),
    "num_speculative_tokens": st.integers(1, 16),
    "prompt_lookup_min": st.integers(1, 3),
    "prompt_lookup_max": st.integers(3, 8),
}, optional={"enforce_eager": st.booleans(), "max_model_len": st.integers(1, 10**6)})


@settings(max_examples=40, deadline=None)
@given(simple_configs)
def test_python_dict_text_is_diagnosed_and_fixed_back(cfg):
    text = repr(cfg)  # what print(dict) gives: single quotes, True/False
    with pytest.raises(ConfigSyntaxError) as info:
        parse_speculative_config(text)
    assert json.loads(info.value.fix[4:]) == cfg


@settings(max_examples=40, deadline=None)
@given(simple_configs, st.sampled_from(["trailing", "smart"]))
def test_common_corruptions_are_fixed_back(cfg, how):
    text = json.dumps(cfg)
    text = text[:-1] + ",}" if how == "trailing" else text.replace('"', "\u201d")
    with pytest.raises(ConfigSyntaxError) as info:
        parse_speculative_config(text)
    assert json.loads(info.value.fix[4:]) == cfg


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60))
def test_any_text_gives_findings_never_a_crash(text):
    result = check_speculative_config(text)
    for f in result:
        assert f.severity in ("error", "warning")
    if result.config is None and not result.accepted:
        assert result.errors[0].line >= 1 and result.errors[0].column >= 1


# --------------------------------------------------------------------------- vLLM's rules
def test_the_articles_example_is_clean():
    result = check_speculative_config(ARTICLE_NGRAM_JSON)
    assert result.accepted and len(result) == 0


@pytest.mark.parametrize("value,severity", [(0, "error"), (-3, "error"), (True, "error"),
                                            (2.5, "error"), ("four", "error"),
                                            (4.0, "warning"), ("4", "warning")])
def test_num_speculative_tokens_must_be_a_positive_integer(value, severity):
    cfg = {"method": "ngram", "num_speculative_tokens": value, "prompt_lookup_min": 2,
           "prompt_lookup_max": 5}
    result = check_speculative_config(cfg)
    assert [f.severity for f in result if f.key == "num_speculative_tokens"] == [severity]


@pytest.mark.parametrize("method", sorted(S.NEEDS_MODEL - {"custom_class"}))
def test_methods_with_a_draft_checkpoint_need_a_model(method):
    result = check_speculative_config({"method": method, "num_speculative_tokens": 3})
    assert "model" in error_keys(result)
    assert any("without speculative model" in f.message for f in result.errors)


@pytest.mark.parametrize("method", ["draft_model", "eagle", "eagle3"])
def test_a_plain_draft_or_eagle_head_needs_num_speculative_tokens(method):
    result = check_speculative_config({"method": method, "model": "org/draft"})
    assert "num_speculative_tokens" in error_keys(result)


@pytest.mark.parametrize("method", ["medusa", "mlp_speculator"])
def test_checkpoints_with_n_predict_only_warn(method):
    result = check_speculative_config({"method": method, "model": "org/head"})
    assert result.accepted
    assert any(f.key == "num_speculative_tokens" and "n_predict" in f.message for f in result)


def test_mtp_without_tokens_fails_and_more_than_one_warns():
    assert not check_speculative_config({"method": "mtp"}).accepted
    result = check_speculative_config({"method": "mtp", "num_speculative_tokens": 3})
    assert result.accepted and "same MTP layer" in result.warnings[0].message


def test_suffix_defaults_and_needs_arctic_inference():
    result = check_speculative_config({"method": "suffix"})
    assert result.accepted
    text = " ".join(f.message for f in result)
    assert "(24)" in text and "arctic-inference" in text


def test_ngram_lookup_defaults_mirror_and_order():
    both = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4})
    assert both.accepted and "both to 5" in both.warnings[0].message
    one = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4,
                                    "prompt_lookup_max": 3})
    assert one.accepted and "prompt_lookup_max=3" in one.warnings[0].message
    bad = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4,
                                    "prompt_lookup_min": 5, "prompt_lookup_max": 2})
    (f,) = bad.errors
    assert f.key == "prompt_lookup_min"
    assert "prompt_lookup_min=5 must be <= prompt_lookup_max=2" in f.message
    zero = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4,
                                     "prompt_lookup_min": 0, "prompt_lookup_max": 2})
    assert "prompt_lookup_min" in error_keys(zero)


def test_lookups_are_ignored_outside_ngram():
    result = check_speculative_config({"method": "mtp", "num_speculative_tokens": 1,
                                       "prompt_lookup_max": 4})
    assert result.accepted and "only apply to ngram" in result.warnings[0].message


def test_tensor_parallel_size_gets_vllms_message():
    result = check_speculative_config({"method": "draft_model", "model": "a/b",
                                       "num_speculative_tokens": 3, "tensor_parallel_size": 2})
    (f,) = result.errors
    assert f.message.startswith("'tensor_parallel_size' is not a valid argument in the "
                                "speculative_config. Please pass 'draft_tensor_parallel_size'")
    assert "draft_tensor_parallel_size" in f.fix


@pytest.mark.parametrize("key", ["temperature", "top_p", "top_k"])
def test_sampling_parameters_are_not_config_keys(key):
    result = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4,
                                       "prompt_lookup_min": 2, "prompt_lookup_max": 5,
                                       key: 0.5})
    (f,) = result.errors
    assert f.key == key and "sampling parameter" in f.message


@pytest.mark.parametrize("old,new", [("ngram_prompt_lookup_max", "prompt_lookup_max"),
                                     ("ngram_prompt_lookup_min", "prompt_lookup_min"),
                                     ("speculative_model", "model"),
                                     ("num-speculative-tokens", "num_speculative_tokens"),
                                     ("max-model-len", "max_model_len"),
                                     ("Num_Speculative_Tokens", "num_speculative_tokens"),
                                     ("prompt_lookup_maxx", "prompt_lookup_max"),
                                     ("draft_tensor_paralel_size", "draft_tensor_parallel_size")])
def test_unknown_keys_get_a_did_you_mean(old, new):
    result = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4,
                                       "prompt_lookup_min": 2, "prompt_lookup_max": 5, old: 3})
    f = next(f for f in result.errors if f.key == old)
    assert f"'{new}'" in f.message and new in f.fix


def test_unknown_keys_by_version():
    cfg = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2,
           "prompt_lookup_max": 5, "ngram_prompt_lookup_max": 10}
    current = check_speculative_config(cfg)
    assert not current.accepted and "rejects unknown keys" in current.errors[0].message
    assert "ignored them silently" in current.errors[0].message
    old = check_speculative_config(cfg, vllm_version="0.11.0")
    assert old.accepted
    assert "ignores unknown keys silently" in old.warnings[0].message
    new = check_speculative_config(cfg, vllm_version="v0.15.1")
    assert not new.accepted
    assert not check_speculative_config(cfg, vllm_version="0.6.3").accepted


def test_removed_disable_by_batch_size():
    cfg = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2,
           "prompt_lookup_max": 5, "disable_by_batch_size": 4}
    now = check_speculative_config(cfg)
    assert "PR #35060" in now.errors[0].message
    then = check_speculative_config(cfg, vllm_version="0.11.0")
    assert then.accepted and "done nothing since v0.10.0" in then.warnings[0].message


@pytest.mark.parametrize("name", [m for m in S.MTP_METHODS if m != "mtp"])
def test_model_specific_mtp_methods_map_to_mtp(name):
    result = check_speculative_config({"method": name, "num_speculative_tokens": 1})
    assert result.accepted
    (f,) = result.warnings
    assert f.key == "method" and "replaced with mtp" in f.message


@pytest.mark.parametrize("method,hint", [("EAGLE3", "eagle3"), ("eagle-3", "eagle3"),
                                         ("n-gram", "ngram"), ("draft", "draft_model"),
                                         ("deepseek_v3_mtp", "mtp"), ("sufix", "suffix")])
def test_unknown_method_with_did_you_mean(method, hint):
    result = check_speculative_config({"method": method, "num_speculative_tokens": 3,
                                       "model": "a/b"})
    (f,) = [f for f in result.errors if f.key == "method"]
    assert f"did you mean '{hint}'" in f.message


def test_method_is_inferred_from_the_model():
    result = check_speculative_config({"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                                       "num_speculative_tokens": 3})
    assert result.accepted and "'eagle3'" in result.warnings[0].message
    assert check_speculative_config({"model": "[ngram]", "num_speculative_tokens": 3,
                                     "prompt_lookup_min": 2, "prompt_lookup_max": 5}).accepted


@pytest.mark.parametrize("cfg,key", [
    ({"method": "eagle", "model": "a/b", "num_speculative_tokens": 2,
      "index_share_for_mtp_iteration": True}, "index_share_for_mtp_iteration"),
    ({"method": "eagle", "model": "a/b", "num_speculative_tokens": 2,
      "enable_adaptive_verification": True}, "enable_adaptive_verification"),
    ({"method": "eagle3", "model": "a/b", "num_speculative_tokens": 2,
      "use_heterogeneous_vocab": True}, "use_heterogeneous_vocab"),
    ({"method": "eagle3", "model": "a/b", "num_speculative_tokens": 2,
      "synthetic_acceptance_length": 2.0}, "synthetic_acceptance_length"),
    ({"method": "eagle3", "model": "a/b", "num_speculative_tokens": 2,
      "rejection_sample_method": "synthetic", "synthetic_acceptance_rates": [0.5, 0.7]},
     "synthetic_acceptance_rates"),
    ({"method": "eagle3", "model": "a/b", "num_speculative_tokens": 2,
      "rejection_sample_method": "strict"}, "rejection_sample_method"),
    ({"method": "suffix", "suffix_decoding_min_token_prob": 1.5},
     "suffix_decoding_min_token_prob"),
    ({"method": "eagle", "model": "a/b", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": [[64, 1, 3]]},
     "num_speculative_tokens_per_batch_size"),
    ({"method": "ngram", "num_speculative_tokens": 4, "target_model_config": {}},
     "target_model_config"),
])
def test_method_specific_rules(cfg, key):
    assert key in error_keys(check_speculative_config(cfg))


def test_findings_in_text_carry_the_keys_position():
    text = '{\n  "method": "ngram",\n  "num_speculative_tokens": 4,\n  "top_p": 0.9\n}'
    (f,) = check_speculative_config(text).errors
    assert (f.key, f.line, f.column) == ("top_p", 4, 3)


def test_bad_input_types_are_named():
    with pytest.raises(TypeError, match="text_or_dict"):
        check_speculative_config(42)
    with pytest.raises(ValueError, match="vllm_version"):
        check_speculative_config("{}", vllm_version="latest")


def test_findings_table():
    df = check_speculative_config({"method": "ngram", "num_speculative_tokens": 0}).to_frame()
    assert list(df.columns) == ["severity", "key", "line", "column", "message", "fix"]
    assert set(df["severity"]) == {"error", "warning"}


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


@pytest.mark.parametrize("method", BUILD_METHODS)
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


# --------------------------------------------------------------------------- render
def test_serve_line_for_the_articles_example():
    cfg = speculative_config("ngram", 4, prompt_lookup_min=2, prompt_lookup_max=5)
    line = serve_command(cfg, "Qwen/Qwen3-8B")
    assert line == f"vllm serve Qwen/Qwen3-8B --speculative-config '{ARTICLE_NGRAM_JSON}'"
    # <target-model> would be a shell redirection unquoted
    assert serve_command(cfg).startswith("vllm serve '<target-model>' ")


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8)
configs = st.dictionaries(st.text(max_size=10), json_values, max_size=5)


@settings(max_examples=120, deadline=None)
@given(configs, st.text(min_size=1, max_size=15).filter(str.strip))
def test_serve_command_survives_the_shell(cfg, model):
    words = shlex.split(serve_command(cfg, model))
    assert words[:2] == ["vllm", "serve"] and words[2] == model
    assert words[3] == "--speculative-config" and json.loads(words[4]) == cfg


@settings(max_examples=120, deadline=None)
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


@settings(max_examples=80, deadline=None)
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
