"""specnb.vllm.check and its rules (specnb.vllm.rules): vLLM's verdict on every shared case,
the field reports' configs (tests/cases/field-reports/), the dynamic schedule, the string
faults vLLM 0.33.0 was driven with (tests/cases/vllm/0.33.0/strings.jsonl, written by
oracle/drive_strings.py) and which release's table judges a version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specnb.vllm import (check_speculative_config, describe_schedule, schedule_lookup, suggest_fix,
                         validate_schedule)
from specnb.vllm import _versions
from specnb.vllm._versions import select, version_key, versions_checked
from specnb.vllm.rules.context import NEEDS_MODEL


CASES = Path(__file__).parent.parent / "cases"


FIELD = CASES / "field-reports"


def field(name: str) -> str:
    return (FIELD / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- configs
FIELD_CONFIGS = [json.loads(line) for line in field("configs.jsonl").splitlines() if line.strip()]


OWN_CONFIGS = [
    # (config, severity, key, words in the message)
    ({"method": "draft_model", "model": "org/llama-eagle3-head", "num_speculative_tokens": 3},
     "warning", "method", "runs 'eagle3' instead of 'draft_model'"),
    ({"method": "eagle", "model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
      "num_speculative_tokens": 2}, "warning", "method", "does not re-detect"),
    ({"model": "FasterDecoding/medusa-vicuna-7b-v1.3", "num_speculative_tokens": 3},
     "warning", "method", "likely method is 'medusa'"),
    ({"model": "my_eagle_head", "num_speculative_tokens": 3}, "warning", "method",
     "would load it as 'draft_model'"),
    ({"model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3}, "warning", "method",
     "likely method is 'draft_model'"),
    ({"method": "eagle", "model": "e", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": [[1, 8, 3], [6, 9, 1]]}, "error",
     "num_speculative_tokens_per_batch_size", "overlap"),
    ({"method": "eagle", "model": "e", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": []}, "warning",
     "num_speculative_tokens_per_batch_size", "must not be empty"),
    ({"method": "eagle", "model": "e", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": [[1, 8, -1]]}, "error",
     "num_speculative_tokens_per_batch_size", "K must be >= 0"),
    ({"method": "eagle", "model": "e", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": [[1, 8, 2], [12, 9, 1]]}, "error",
     "num_speculative_tokens_per_batch_size", "range_start must be <= range_end"),
    ({"method": "eagle", "model": "e", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": [[1, 8, 1, 4, 2]]}, "error",
     "num_speculative_tokens_per_batch_size", "5-item"),
    ({"method": "mtp", "num_speculative_tokens": 1,
      "num_speculative_tokens_per_batch_size": [[1, 4, 3], [5, 64, 1]]}, "warning",
     "num_speculative_tokens_per_batch_size", "clamps it to 1"),
]


# --------------------------------------------------------------------------- the schedule
I9_LIKE = [[1, 16, 5], [17, 32, 4], [33, 64, 3], [65, 128, 1], [129, 512, 0]]


# --------------------------------------------------------------------------- every fix passes
def _all_texts():
    texts = [line for line in (CASES / "vllm_configs.jsonl").read_text().splitlines() if line]
    out = [json.loads(t)["config"] for t in texts]
    out += [c.get("config_text") or c["config"] for c in FIELD_CONFIGS]
    out += [cfg for cfg, *_ in OWN_CONFIGS]
    out += ["{method: ngram}", "{method: eagle}", "{'method': 'eagle3', 'model': 'x-eagle3'}",
            "{speculative_model = \"[ngram]\", ngram_prompt_lookup_min = 1}",
            '{"speculative_model": "[ngram]", "num_speculative_tokens": 3,}',
            "{'speculative_model': 'facebook/opt-125m', 'num_speculative_tokens': 5, "
            "'temperature': 0.2}", '{"method": "ngram", "num_speculative_tokens": 4 // four\n}']
    return out


SHARED_CASES = [json.loads(line) for line in
         (Path(__file__).parent.parent / "cases" / "vllm_configs.jsonl").read_text().splitlines()
         if line.strip()]


#: The article's n-gram example (section 7), the same values as vLLM's docs README.
ARTICLE_NGRAM_JSON = ('{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, '
                      '"prompt_lookup_max": 5}')


def error_keys(result):
    return {f.key for f in result.errors}


@pytest.mark.parametrize("case", FIELD_CONFIGS, ids=[c["id"] for c in FIELD_CONFIGS])
def test_field_report_configs_get_the_expected_severity(case):
    result = check_speculative_config(case.get("config_text") or case["config"])
    hits = [f for f in result if f.key == case["key"] and f.severity == case["expect"]]
    assert hits, str(result)
    if case["expect"] == "warning":
        assert result.accepted, str(result)


def test_method_vs_eagle_path_names_the_method_and_what_vllm_does():
    case = next(c for c in FIELD_CONFIGS if c["id"] == "explicit-method-vs-eagle-path")
    msg = " ".join(f.message + f.fix for f in check_speculative_config(case["config"]))
    assert "'eagle'" in msg and "runs 'eagle' instead of 'draft_model'" in msg and "47486" in msg


def test_toml_style_v0_fix_is_valid_for_current_vllm():
    case = next(c for c in FIELD_CONFIGS if c["id"] == "toml-style-v0-keys")
    (finding,) = check_speculative_config(case["config_text"])
    assert finding.fix.startswith("use ")
    fixed = json.loads(finding.fix[4:])
    assert fixed == {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 2}
    assert check_speculative_config(fixed).accepted


@pytest.mark.parametrize("cfg,severity,key,words", OWN_CONFIGS,
                         ids=[str(i) for i in range(len(OWN_CONFIGS))])
def test_own_configs(cfg, severity, key, words):
    result = check_speculative_config(cfg)
    hits = [f for f in result if f.key == key and f.severity == severity and words in f.message]
    assert hits, str(result)


def test_draft_config_json_architecture_is_read(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Eagle3LlamaForCausalLM"],
                                                      "model_type": "llama"}))
    cfg = {"method": "draft_model", "model": str(tmp_path), "num_speculative_tokens": 3}
    assert not [f for f in check_speculative_config(cfg) if f.key == "method"]
    msg = " ".join(f.message for f in check_speculative_config(cfg, draft_config=tmp_path))
    assert "architectures" in msg and "'eagle3'" in msg
    full = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}
    msg = " ".join(f.message for f in check_speculative_config(
        {"method": "eagle", "model": "m", "num_speculative_tokens": 3}, draft_config=full))
    assert "full causal LM" in msg
    mtp = {"architectures": ["DeepSeekMTPModel"], "model_type": "deepseek_mtp"}
    msg = " ".join(f.message for f in check_speculative_config(
        {"method": "draft_model", "model": "m", "num_speculative_tokens": 1}, draft_config=mtp))
    assert "runs 'mtp' instead of 'draft_model'" in msg
    with pytest.raises(ValueError, match="no config.json"):
        check_speculative_config(cfg, draft_config=tmp_path / "missing")


def test_draft_config_with_a_bom_is_read_and_non_utf8_is_named(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("\ufeff" + json.dumps({"architectures": ["Eagle3LlamaForCausalLM"]}),
                 encoding="utf-8")
    cfg = {"method": "draft_model", "model": "m", "num_speculative_tokens": 3}
    msg = " ".join(f.message for f in check_speculative_config(cfg, draft_config=p))
    assert "'eagle3'" in msg
    p.write_bytes(b'{"architectures": ["caf\xe9"]}')
    with pytest.raises(ValueError, match=r"config.json': not UTF-8 text \(byte 0xe9 at offset"):
        check_speculative_config(cfg, draft_config=p)


def test_a_valid_schedule_is_accepted_and_explained():
    cfg = {"method": "eagle3", "model": "org/head-eagle3", "num_speculative_tokens": 5,
           "num_speculative_tokens_per_batch_size": I9_LIKE}
    result = check_speculative_config(cfg)
    assert result.accepted, str(result)
    (w,) = [f for f in result if f.key == "num_speculative_tokens_per_batch_size"]
    for words in ("inclusive", "previous range's K", "last K", "K = 0 drafts nothing",
                  "--data-parallel-size > 1", "+6.6% at concurrency 2", "+21.6% at concurrency 189",
                  "#49548"):
        assert words in w.message, words


@pytest.mark.parametrize("text", _all_texts())
def test_every_suggested_json_fix_passes_the_checker_for_current_vllm(text):
    for finding in check_speculative_config(text):
        if finding.fix.startswith("use {"):
            fixed = json.loads(finding.fix[4:])
            assert check_speculative_config(fixed).accepted, (finding.fix, str(
                check_speculative_config(fixed)))
    if isinstance(text, dict):
        better = suggest_fix(text)
        assert better is None or check_speculative_config(better).accepted


# --------------------------------------------------------------------------- shared cases
@pytest.mark.parametrize("case", SHARED_CASES, ids=[c["id"] for c in SHARED_CASES])
def test_every_shared_case_gets_vllms_verdict(case):
    result = check_speculative_config(case["config"])
    if case["expect"] == "ok":
        assert result.accepted, str(result)
        assert result.errors == []
    else:
        assert not result.accepted, str(result)
        assert case["key"] in error_keys(result), str(result)


def test_the_shared_cases_cover_both_verdicts():
    assert {c["expect"] for c in SHARED_CASES} == {"ok", "error"}


def test_unknown_key_list_names_the_release():
    old = check_speculative_config('{"method": "ngram", "num_speculative_tokens": 4, "foo": 1}',
                                   vllm_version="0.25.1")
    (foo,) = [f for f in old if f.key == "foo"]
    assert "vLLM 0.25.1's keys" in foo.fix and "vLLM 0.25.1 rejects" in foo.message


def test_a_release_without_a_table_is_judged_by_the_nearest_older_one_and_says_so():
    newest, oldest = versions_checked()[-1], versions_checked()[0]
    res = check_speculative_config(NGRAM_CFG, vllm_version="0.99.0")
    assert res.codes()[0] == "judged-by-older-release" and res.findings[0].severity == "note"
    assert str(res).splitlines()[0] == (f"note: judged by vLLM {newest}'s rules; no profile "
                                        "for 0.99.0")
    assert res.accepted and res.warnings == []
    assert check_speculative_config(NGRAM_CFG, vllm_version=newest).codes() == []
    assert select("0.30.0")[0].vllm == [v for v in versions_checked()
                                        if version_key(v) <= version_key("0.30.0")][-1]
    assert select(None)[1] is None
    with pytest.raises(ValueError, match="older than every release"):
        check_speculative_config(NGRAM_CFG, vllm_version="0.0.1")
    assert select(f"{oldest}+cu128") == (select(oldest)[0], None)


def test_messages_name_the_release_never_a_commit():
    import re
    for v in (p.name for p in ORACLE.iterdir() if (p / "configs.jsonl").exists()):
        for r in _strings() + [json.loads(x) for x in (ORACLE / v / "configs.jsonl").read_text(
                ).splitlines()[:120]]:
            for f in check_speculative_config(r["input"], vllm_version=v):
                assert not re.search(r"@ ?[0-9a-f]{7,}", f.message + f.fix), f


# vLLM's optional_type tests `val == "" or val == "None"` exactly: "   " is handed to json.loads
# and rejected (see tests/test_bad_input.py); JSON null parses to None, i.e. no config.
@pytest.mark.parametrize("text", ["", "None", "null"])
def test_empty_value_means_speculation_off_and_is_accepted(text):
    result = check_speculative_config(text)
    assert result.accepted and result.config is None
    assert result.codes() == ["empty-value"] and "stays off" in result.warnings[0].message


@pytest.mark.parametrize("text", ["[1, 2]", "5", '"ngram"'])
def test_a_non_object_is_an_error(text):
    result = check_speculative_config(text)
    assert not result.accepted and result.codes() in (["not-an-object"], ["json-string-of-json"])


# --------------------------------------------------------------------------- vLLM's rules
def test_the_articles_example_is_clean():
    result = check_speculative_config(ARTICLE_NGRAM_JSON)
    assert result.accepted and len(result) == 0


# True: vLLM 0.33's pydantic (lax mode) reads it as 1 (oracle fixture
# field:num_speculative_tokens:bool-true), so a warning, not an error
@pytest.mark.parametrize("value,severity", [(0, "error"), (-3, "error"), (True, "warning"),
                                            (2.5, "error"), ("four", "error"),
                                            (4.0, "warning"), ("4", "warning")])
def test_num_speculative_tokens_must_be_a_positive_integer(value, severity):
    cfg = {"method": "ngram", "num_speculative_tokens": value, "prompt_lookup_min": 2,
           "prompt_lookup_max": 5}
    result = check_speculative_config(cfg)
    assert [f.severity for f in result if f.key == "num_speculative_tokens"] == [severity]


CURRENT_METHODS = set(select(None)[0].methods)


@pytest.mark.parametrize("method", sorted(m for m in NEEDS_MODEL - {"custom_class"}
                                          if m in CURRENT_METHODS))
def test_methods_with_a_draft_checkpoint_need_a_model(method):
    result = check_speculative_config({"method": method, "num_speculative_tokens": 3})
    assert "model" in error_keys(result)
    assert "model-missing" in result.codes()
    assert any("without speculative model" in f.message for f in result.errors)  # vLLM's words


@pytest.mark.parametrize("method", ["draft_model", "eagle", "eagle3"])
def test_a_plain_draft_or_eagle_head_needs_num_speculative_tokens(method):
    result = check_speculative_config({"method": method, "model": "org/draft"})
    assert "num_speculative_tokens" in error_keys(result)
    assert "num-speculative-tokens-missing" in result.codes()


@pytest.mark.parametrize("method", ["medusa", "mlp_speculator"])
def test_checkpoints_with_n_predict_only_warn(method):
    # vLLM 0.25.1 still has both methods
    result = check_speculative_config({"method": method, "model": "org/head"},
                                      vllm_version="0.25.1")
    assert result.accepted
    assert "n-predict-default" in result.codes()


@pytest.mark.parametrize("method", ["medusa", "mlp_speculator"])
def test_methods_removed_in_current_vllm_are_errors(method):
    result = check_speculative_config({"method": method, "model": "org/head",
                                       "num_speculative_tokens": 3})
    assert not result.accepted and "method-removed" in result.codes()


@pytest.mark.parametrize("key,field", [("num-speculative-tokens", "num_speculative_tokens"),
                                       ("max-model-len", "max_model_len")])
def test_current_vllm_rewrites_hyphens_in_keys(key, field):
    cfg = {"method": "ngram", "num_speculative_tokens": 4, key: 3}
    result = check_speculative_config(cfg)
    assert result.accepted
    assert "hyphen-key-rewritten" in result.codes()
    # of a hyphen and an underscore spelling the later wins (vLLM's dict rewrite)
    if field == "num_speculative_tokens":
        assert "key-spelled-twice" in result.codes()


def test_mtp_without_tokens_fails_and_more_than_one_warns():
    assert not check_speculative_config({"method": "mtp"}).accepted
    result = check_speculative_config({"method": "mtp", "num_speculative_tokens": 3})
    assert result.accepted and result.warnings[0].code == "mtp-reruns-layer"


def test_suffix_defaults_and_needs_arctic_inference():
    result = check_speculative_config({"method": "suffix"})
    assert result.accepted
    assert {"suffix-default-tokens", "suffix-needs-arctic"} <= set(result.codes())
    text = " ".join(f.message for f in result)
    assert "(24)" in text and "arctic-inference" in text


def test_ngram_lookup_defaults_mirror_and_order():
    both = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4})
    assert both.accepted and both.codes() == ["ngram-lookup-defaults"]
    assert "both to 5" in both.warnings[0].message
    one = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4,
                                    "prompt_lookup_max": 3})
    assert one.accepted and one.codes() == ["ngram-lookup-mirrored"]
    bad = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4,
                                    "prompt_lookup_min": 5, "prompt_lookup_max": 2})
    (f,) = bad.errors
    assert f.key == "prompt_lookup_min" and f.code == "ngram-lookup-min-above-max"
    assert "prompt_lookup_min=5 must be <= prompt_lookup_max=2" in f.message
    zero = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4,
                                     "prompt_lookup_min": 0, "prompt_lookup_max": 2})
    assert "prompt_lookup_min" in error_keys(zero)


def test_lookups_are_ignored_outside_ngram():
    result = check_speculative_config({"method": "mtp", "num_speculative_tokens": 1,
                                       "prompt_lookup_max": 4})
    assert result.accepted and "ngram-lookup-ignored" in result.codes()


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
    assert f.key == key and f.code == "sampling-key"


@pytest.mark.parametrize("old,new", [("ngram_prompt_lookup_max", "prompt_lookup_max"),
                                     ("ngram_prompt_lookup_min", "prompt_lookup_min"),
                                     ("speculative_model", "model"),
                                     ("Num_Speculative_Tokens", "num_speculative_tokens"),
                                     ("prompt_lookup_maxx", "prompt_lookup_max"),
                                     ("draft_tensor_paralel_size", "draft_tensor_parallel_size")])
def test_unknown_keys_get_a_did_you_mean(old, new):
    result = check_speculative_config({"method": "ngram", "num_speculative_tokens": 4,
                                       "prompt_lookup_min": 2, "prompt_lookup_max": 5, old: 3})
    f = next(f for f in result.errors if f.key == old)
    assert f.code in ("legacy-key", "key-misspelled", "unknown-key-did-you-mean")
    assert f"'{new}'" in f.message and new in f.fix


def test_unknown_keys_by_version():
    cfg = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2,
           "prompt_lookup_max": 5, "ngram_prompt_lookup_max": 10}
    current = check_speculative_config(cfg)
    assert not current.accepted and "rejects unknown keys" in current.errors[0].message
    assert "ignored them silently" in current.errors[0].message
    assert not check_speculative_config(cfg, vllm_version="v0.25.1").accepted


def test_removed_disable_by_batch_size():
    cfg = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2,
           "prompt_lookup_max": 5, "disable_by_batch_size": 4}
    now = check_speculative_config(cfg)
    assert now.errors[0].code == "legacy-key" and "PR #35060" in now.errors[0].message


@pytest.mark.parametrize("name", [m for m in select(None)[0].mtp if m != "mtp"])
def test_model_specific_mtp_methods_map_to_mtp(name):
    result = check_speculative_config({"method": name, "num_speculative_tokens": 1})
    assert result.accepted
    (f,) = result.warnings
    assert f.key == "method" and f.code == "deprecated-mtp-method"


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
      "enable_adaptive_verification": True, "use_local_argmax_reduction": True},
     "enable_adaptive_verification"),
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
    ({"method": "draft_model", "model": "a/b", "num_speculative_tokens": 4,
      "draft_load_config": {"bogus_key": 1}}, "draft_load_config"),
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
    with pytest.raises(ValueError, match="vllm_version must be a release"):
        check_speculative_config("{}", vllm_version="latest")


def test_findings_table():
    df = check_speculative_config({"method": "ngram", "num_speculative_tokens": 0}).to_frame()
    assert list(df.columns) == ["severity", "code", "key", "line", "column", "message", "fix"]
    assert set(df["severity"]) == {"error", "warning"}


def test_a_draft_length_beyond_any_context_is_a_warning():
    # fault 40: vLLM accepts any num_speculative_tokens > 0 (Field(gt=0)), so a warning only
    from specnb.vllm import check_speculative_config
    from specnb.vllm.rules.values import MAX_SENSIBLE_GAMMA

    base = {"method": "ngram", "prompt_lookup_min": 2, "prompt_lookup_max": 5}
    for k in (10 ** 23, MAX_SENSIBLE_GAMMA + 1):
        res = check_speculative_config({**base, "num_speculative_tokens": k})
        assert res.accepted and res.codes() == ["num-speculative-tokens-huge"]
    res = check_speculative_config('{"method": "ngram", "num_speculative_tokens": 1e23, '
                                   '"prompt_lookup_min": 2, "prompt_lookup_max": 5}')
    assert res.accepted and res.codes() == ["int-got-float", "num-speculative-tokens-huge"]
    for k in (32, MAX_SENSIBLE_GAMMA):
        assert check_speculative_config({**base, "num_speculative_tokens": k}).codes() == []
    # a draft config.json's context is the bound below that
    cfg = {"method": "draft_model", "model": "./draft", "num_speculative_tokens": 600}
    small = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
             "max_position_embeddings": 512}
    assert "num-speculative-tokens-huge" in check_speculative_config(
        cfg, draft_config=small).codes()
    assert "num-speculative-tokens-huge" not in check_speculative_config(
        cfg, draft_config={**small, "max_position_embeddings": 4096}).codes()


# --------------------------------------------------------------------------- string faults
ORACLE = CASES / "vllm"
NGRAM_CFG = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2,
             "prompt_lookup_max": 5}


def _strings():
    path = ORACLE / "0.33.0" / "strings.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.parametrize("rec", _strings(), ids=lambda r: r["id"])
def test_string_faults_get_vllms_verdict(rec, tmp_path):
    """pydantic's coercions, method-only bounds, quantization names, method words as model
    names: vLLM 0.33.0's own verdict (string-only, or with the stand-in target)."""
    kw = {}
    if rec["target_dependent"]:
        data = json.loads((ORACLE / "standins.json").read_text())
        kw = {"target_config": data["local"][rec["target"]]["config"]}
    check = check_speculative_config(rec["input"], vllm_version="0.33.0", **kw)
    assert check.accepted == (rec["verdict"] == "accepted"), (rec["message"], str(check))


def test_each_string_fault_kind_has_its_code():
    def codes(cfg):
        return check_speculative_config(cfg, vllm_version="0.33.0").codes()
    assert "int-got-string-number" in codes({**NGRAM_CFG, "num_speculative_tokens": "3.0"})
    assert "int-got-string" in codes({**NGRAM_CFG, "num_speculative_tokens": "3.5"})
    assert "list-coerced" in codes({**NGRAM_CFG, "num_speculative_tokens_per_batch_size":
                                    [["1", "8", "3"], ["9", "512", "1"]]})
    # suffix-only bounds: not checked for ngram, checked for suffix
    assert "out-of-range" not in codes({**NGRAM_CFG, "suffix_decoding_max_tree_depth": 0})
    assert "out-of-range" in codes({"method": "suffix", "num_speculative_tokens": 8,
                                    "suffix_decoding_max_tree_depth": 0})
    bogus = {"method": "eagle", "model": "org/EAGLE-head", "num_speculative_tokens": 3,
             "quantization": "bogus"}
    assert "unknown-quantization" in codes(bogus)
    assert "unknown-quantization" not in codes({**bogus, "quantization": "fp8"})
    assert "unknown-quantization" not in codes({**NGRAM_CFG, "quantization": "bogus"})


def test_the_quantization_names_are_the_tables():
    table = select("0.33.0")[0]
    names = table.raw.get("quantization_methods") or table.fields["quantization"]["choices"]
    assert table.quantization_methods == tuple(names) and "fp8" in names


@pytest.mark.parametrize("cfg,word", [({"model": "ngram_gpu", "num_speculative_tokens": 3},
                                       "ngram_gpu"),
                                      ({"model": "suffix", "num_speculative_tokens": 3}, "suffix"),
                                      ({"method": "eagle", "model": "ngram",
                                        "num_speculative_tokens": 3}, "ngram")])
def test_a_method_word_as_the_model_name(cfg, word):
    res = check_speculative_config(cfg)
    (f,) = [f for f in res.errors if f.code == "method-word-as-model"]
    assert "try to load" in f.message or "tries to load" in f.message
    assert f'"method": "{word}"' in f.fix and "draft_model" not in f.fix
    fixed = suggest_fix(cfg)
    assert fixed is not None and fixed["method"] == word and "model" not in fixed


def test_coercion_messages_name_the_tables_pydantic():
    table = select("0.33.0")[0]
    if "pydantic_version" in table.raw:  # the oracle venv of 0.33.0 has pydantic 2.14.4
        assert table.raw["pydantic_version"] == "2.14.4"
    (f,) = [f for f in check_speculative_config({**NGRAM_CFG, "num_speculative_tokens": "3.0"},
                                                vllm_version="0.33.0")
            if f.code == "int-got-string-number"]
    assert f"{table.pydantic_name} (lax mode) reads it as 3" in f.message


@pytest.fixture
def older_tables(monkeypatch):
    """Tables of two older releases as the oracle writes them (oracle/table.py): 0.7.0 without
    the JSON flag, 0.10.0 ignoring unknown keys, without custom_class nor the schedule."""
    import copy

    from specnb.vllm.rules import keys

    real = dict(_versions.tables())
    base = copy.deepcopy(real["0.25.1"].raw)
    old = {**base, "vllm": "0.10.0", "extra": "ignore",
           "methods": [m for m in base["methods"] if m != "custom_class"],
           "fields": {k: f for k, f in base["fields"].items()
                      if k != "num_speculative_tokens_per_batch_size"}}
    v0 = {**base, "vllm": "0.7.0", "speculative_config_flag": False, "extra": "typeerror"}
    fake = {**real, "0.7.0": _versions._table(v0), "0.10.0": _versions._table(old)}
    fake = dict(sorted(fake.items(),  # in release order, as _versions.tables() gives them
                       key=lambda kv: [int(x) for x in kv[0].split(".")[:3] if x.isdigit()]))
    monkeypatch.setattr(_versions, "tables", lambda: fake)
    monkeypatch.setattr(keys, "tables", lambda: fake)


def test_the_tables_facts_decide_not_constants(older_tables):
    def codes(cfg, v):
        return check_speculative_config(cfg, vllm_version=v).codes()
    assert codes(NGRAM_CFG, "0.7.1") == ["judged-by-older-release", "predates-json-config"]
    lax = check_speculative_config({**NGRAM_CFG, "foo": 1}, vllm_version="0.10.0")
    assert lax.accepted and lax.codes() == ["unknown-key"]
    sched = {**NGRAM_CFG, "num_speculative_tokens_per_batch_size": [[1, 8, 3]]}
    assert codes(sched, "0.10.0") == ["key-of-other-release"]
    assert not check_speculative_config(sched, vllm_version="0.33.0").errors  # it has it
    assert "no-custom-class" in codes({"model": "my_pkg.MyProposer", "num_speculative_tokens": 3},
                                      "0.10.0")
    strict = check_speculative_config({**NGRAM_CFG, "foo": 1}, vllm_version="0.33.0")
    from specnb.vllm import _versions

    lax_releases = [v for v, t in _versions.tables().items() if t.raw.get("extra") == "ignore"]
    assert f"vLLM {lax_releases[-1]} and older ignored them silently" in strict.errors[0].message


def test_a_release_whose_method_is_a_free_string():
    """0.8.2-0.8.4 (their tables: method of kind str, no methods): SpeculativeConfig keeps
    'ngram' and detects anything else from the draft model (vllm/config.py's
    ``__post_init__``), so no name is refused as unknown."""
    t = _versions.tables()["0.8.2"]
    assert t.methods == () and t.fields["method"]["kind"] == "str"
    ngram = check_speculative_config('{"method": "ngram", "num_speculative_tokens": 3, '
                                     '"prompt_lookup_max": 4, "prompt_lookup_min": 2}', "0.8.2")
    assert ngram.accepted and not ngram.codes()
    eagle3 = check_speculative_config('{"method": "eagle3", "model": "some/head", '
                                      '"num_speculative_tokens": 3}', "0.8.2")
    assert "method-ignored" in eagle3.codes() and "unknown-method" not in eagle3.codes()
    for v in ("0.8.5", "0.8.5.post1"):  # one version key, each its own table
        assert select(v) == (_versions.tables()[v], None)


@pytest.mark.parametrize("version", ["0.8.2", "0.9.0.1"])
def test_a_plain_dataclass_release_coerces_nothing(version):
    """0.8.2-0.9.0.1 (config_style "dataclass"): ``SpeculativeConfig.from_dict`` is
    ``cls(**d)``, no pydantic: "3" stays a str (``_verify_args``'s ``<= 0`` then raises
    TypeError), true works as 1, and no message names pydantic."""
    assert _versions.tables()[version].raw["config_style"] == "dataclass"
    base = {"method": "ngram", "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    s = check_speculative_config({**base, "num_speculative_tokens": "3"}, version)
    b = check_speculative_config({**base, "num_speculative_tokens": True}, version)
    assert s.codes() == ["int-got-string"] and not s.accepted
    assert b.codes() == ["int-got-bool"] and b.accepted
    assert not any("pydantic " in f.message for f in (*s, *b))
    newer = check_speculative_config({**base, "num_speculative_tokens": "3"}, "0.9.1")
    assert newer.accepted and newer.codes() == ["int-got-string-number"]


def test_a_release_that_reads_the_flag_with_literal_eval():
    """0.8.2's create_speculative_config: ``ast.literal_eval`` of the flag's str (its table:
    speculative_config_text), so Python literals pass and JSON's true fails."""
    assert _versions.tables()["0.8.2"].raw["speculative_config_text"] == "ast.literal_eval"
    py = check_speculative_config("{'method': 'ngram', 'num_speculative_tokens': 3, "
                                  "'prompt_lookup_max': 4, 'prompt_lookup_min': 2}", "0.8.2")
    assert py.accepted, py.codes()
    js = check_speculative_config('{"method": "ngram", "num_speculative_tokens": 3, '
                                  '"disable_logprobs": true}', "0.8.2")
    assert js.codes() == ["not-a-python-literal"]
    assert check_speculative_config("[1]", "0.8.2").codes() == ["not-an-object"]


@pytest.mark.parametrize("target, refused", [
    ({"model_type": "llama", "vocab_size": 128256}, True),
    # a llama config declaring a layer: vLLM still maps llama to no MTP draft (T7-10)
    ({"model_type": "llama", "num_nextn_predict_layers": 1}, True),
    ({"model_type": "deepseek_v3", "num_nextn_predict_layers": 1}, False),
    ({"model_type": "deepseek_v3", "num_nextn_predict_layers": 0}, True),
])
def test_mtp_against_the_targets_config_follows_vllms_mapping(target, refused):
    res = check_speculative_config('{"method": "mtp", "num_speculative_tokens": 1}',
                                   target_config=target)
    codes = {f.code: f.severity for f in res.findings}
    assert (codes.get("mtp-target-without-mtp") == "error") is refused
