"""specnb.vllm.syntax: text that is not JSON gets line, column, cause and a fix that passes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb.vllm import ConfigSyntaxError, check_speculative_config, parse_speculative_config
from tests.tier import examples


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


simple_configs = st.fixed_dictionaries({
    "method": st.just("ngram"),
    "num_speculative_tokens": st.integers(1, 16),
    "prompt_lookup_min": st.integers(1, 3),
    "prompt_lookup_max": st.integers(3, 8),
}, optional={"enforce_eager": st.booleans(), "max_model_len": st.integers(1, 10**6)})


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


def test_a_quoted_json_string_is_named_as_kept_quotes():
    inner = {"method": "ngram", "num_speculative_tokens": 4}
    result = check_speculative_config(json.dumps(json.dumps(inner)))
    (f,) = result.errors
    assert "quotes around it were kept" in f.message
    assert json.loads(f.fix[4:]) == inner


@settings(max_examples=examples(40), deadline=None)
@given(simple_configs)
def test_python_dict_text_is_diagnosed_and_fixed_back(cfg):
    text = repr(cfg)  # what print(dict) gives: single quotes, True/False
    with pytest.raises(ConfigSyntaxError) as info:
        parse_speculative_config(text)
    assert json.loads(info.value.fix[4:]) == cfg


@settings(max_examples=examples(40), deadline=None)
@given(simple_configs, st.sampled_from(["trailing", "smart"]))
def test_common_corruptions_are_fixed_back(cfg, how):
    text = json.dumps(cfg)
    text = text[:-1] + ",}" if how == "trailing" else text.replace('"', "\u201d")
    with pytest.raises(ConfigSyntaxError) as info:
        parse_speculative_config(text)
    assert json.loads(info.value.fix[4:]) == cfg


@settings(max_examples=examples(150), deadline=None)
@given(st.text(max_size=60))
def test_any_text_gives_findings_never_a_crash(text):
    result = check_speculative_config(text)
    for f in result:
        assert f.severity in ("error", "warning")
    if result.config is None and not result.accepted:
        assert result.errors[0].line >= 1 and result.errors[0].column >= 1
