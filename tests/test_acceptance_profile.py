"""specnb.acceptance_profile: counters, entries, the file format, lookups and bad files."""

from __future__ import annotations

import json
import math

import pytest

from specnb import acceptance_profile as ap
from specnb import theory


def _c(steps, drafts, tokens, acc, acc_pos, has_pos):
    return ap.Counters(steps, drafts, tokens, acc, tuple(acc_pos), tuple(has_pos))


def test_counters_derived_values_as_vllm_counts_them():
    # 10 steps, 8 drafts of gamma 3 (two of length 2: no token at position 2), 22 tokens.
    c = _c(10, 8, 22, 11, [6, 4, 1], [8, 8, 6])
    assert c.tau == pytest.approx(1 + 11 / 8)
    assert c.proposal_rate == pytest.approx(8 / 10)
    assert c.acceptance_rate == pytest.approx(11 / 22)  # vLLM's acceptance rate
    # Eq. 1's alpha: the i.i.d. alpha whose expected tokens per step at gamma 3 is this tau
    assert theory.expected_tokens_per_step(c.implied_alpha, 3) == pytest.approx(c.tau)
    assert c.implied_alpha > c.acceptance_rate
    assert math.isnan(ap.Counters.zero(3).implied_alpha)
    # position 0: 6/8; position 1: 4/6; position 2: 1 / min(4 accepted through 1, 6 with a token)
    assert c.acceptance_rates == pytest.approx([6 / 8, 4 / 6, 1 / 4])


def test_counters_add_and_zero():
    a = _c(3, 2, 4, 1, [1, 0], [2, 2])
    b = _c(5, 5, 10, 7, [5, 2], [5, 5])
    s = a + b + ap.Counters.zero(2)
    assert s.to_dict() == {"num_steps": 8, "num_drafts": 7, "num_draft_tokens": 14,
                           "num_accepted_tokens": 8, "num_accepted_tokens_per_pos": [6, 2],
                           "num_draft_tokens_per_pos": [7, 7]}
    assert math.isnan(ap.Counters.zero(2).tau)


def _profile():
    # two requests, gamma 2, buckets [0, 100) and [100, inf)
    r1 = {0: _c(4, 4, 8, 6, [4, 2], [4, 4]), 1: _c(2, 2, 4, 1, [1, 0], [2, 2])}
    r2 = {0: _c(5, 3, 6, 2, [2, 0], [3, 3])}
    return ap.build("ngram", {2: [("code", r1), ("chat", r2)]}, context_edges=[100],
                    tasks=["code", "chat"], params={"prompt_lookup_max": 3},
                    source={"log": "x.jsonl"})


def test_build_sums_requests_and_buckets():
    p = _profile()
    whole = p.entry(2)
    assert whole.num_requests == 2
    assert whole.counters.num_accepted_tokens == 6 + 1 + 2
    assert whole.counters.num_drafts == 9
    assert p.entry(2, context=150).counters.num_drafts == 2
    assert p.entry(2, context=150).context == (100, None)
    assert p.entry(2, context=99).counters.num_drafts == 7
    assert p.entry(2, task="chat").counters.num_accepted_tokens == 2
    assert p.entry(2, task="code", context=0).tau == pytest.approx(1 + 6 / 4)
    # the interval brackets the pooled tau
    lo, hi = whole.tau_ci
    assert lo <= whole.tau <= hi


def test_round_trip_through_json(tmp_path):
    p = _profile()
    f = tmp_path / "p.json"
    ap.save(p, f)
    d = json.loads(f.read_text())
    assert d["format"] == ap.FORMAT and d["version"] == ap.VERSION
    assert d["entries"][0]["tau"] == pytest.approx(round(1 + 9 / 9, 6))
    q = ap.load(f)
    assert q.gammas == (2,) and q.context_edges == (100,) and q.tasks == ("chat", "code")
    assert [e.to_dict() for e in q.entries] == [e.to_dict() for e in p.entries]


def test_the_profile_names_the_acceptance_rate_and_reads_old_alpha_fields(tmp_path):
    """T5-M1: the derived ratio accepted / draft tokens is `acceptance_rate` (vLLM's name),
    beside Eq. 1's `implied_alpha`; a profile written before carries it as `alpha`, and reads
    unchanged (derived fields are recomputed from the counters)."""
    p = _profile()
    d = json.loads(ap.dumps(p))
    e = d["entries"][0]
    assert "alpha" not in e
    assert e["acceptance_rate"] == round(e["num_accepted_tokens"] / e["num_draft_tokens"], 6)
    assert theory.expected_tokens_per_step(e["implied_alpha"], e["gamma"]) == \
        pytest.approx(e["tau"], abs=1e-5)
    for entry in d["entries"]:  # the old file: `alpha`, no acceptance_rate / implied_alpha
        entry["alpha"] = entry.pop("acceptance_rate")
        del entry["implied_alpha"]
    f = tmp_path / "old.json"
    f.write_text(json.dumps(d))
    assert [x.to_dict() for x in ap.load(f).entries] == [x.to_dict() for x in p.entries]


def test_lookup_errors_name_what_is_allowed():
    p = _profile()
    with pytest.raises(ValueError, match=r"gamma 4 is not in the acceptance profile.*\[2\]"):
        p.entry(4)
    with pytest.raises(ValueError, match="task"):
        p.entry(2, task="math")
    with pytest.raises(ValueError, match="context"):
        p.entry(2, context=-1)


@pytest.mark.parametrize("doc, match", [
    ({"format": "other"}, "not an acceptance profile"),
    ({"format": ap.FORMAT, "version": 99}, "version 99"),
    ({"format": ap.FORMAT, "version": 1, "method": "ngram"}, "missing"),
    ({"format": ap.FORMAT, "version": 1, "method": "ngram", "gammas": [2],
      "entries": [{"gamma": 3}]}, "gamma 3 not in gammas"),
    ({"format": ap.FORMAT, "version": 1, "method": "ngram", "gammas": [2],
      "entries": [{"gamma": 2, "num_steps": 1, "num_drafts": 2, "num_draft_tokens": 2,
                   "num_accepted_tokens": 0, "num_accepted_tokens_per_pos": [0, 0]}]},
     "num_drafts <= num_steps"),
    ({"format": ap.FORMAT, "version": 1, "method": "ngram", "gammas": [2],
      "entries": [{"gamma": 2, "num_steps": 1, "num_drafts": 1, "num_draft_tokens": 2,
                   "num_accepted_tokens": 0, "num_accepted_tokens_per_pos": [0]}]},
     "length gamma"),
])
def test_bad_profiles_are_refused(tmp_path, doc, match):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=match):
        ap.load(f)


def test_missing_and_non_json_files(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        ap.load(tmp_path / "nope.json")
    f = tmp_path / "x.json"
    f.write_text("{")
    with pytest.raises(ValueError, match="not readable JSON"):
        ap.load(f)


def test_build_refuses_bad_edges_and_tasks():
    with pytest.raises(ValueError, match="increase"):
        ap.build("ngram", {}, context_edges=[10, 5])
    with pytest.raises(ValueError, match="task 'x'"):
        ap.build("ngram", {1: [("x", {None: ap.Counters.zero(1)})]}, tasks=["y"])


def test_load_refuses_context_edges_that_do_not_increase(tmp_path):
    """T8a-05: the reader applies build's axis rule, naming the field."""
    d = ap.build("ngram", {1: [(None, {None: ap.Counters.zero(1)})]},
                 context_edges=[64, 128]).to_dict()
    for edges in ([128, 64], [0, 64], [64, 64]):
        d["context_edges"] = edges
        (tmp_path / "p.json").write_text(json.dumps(d))
        with pytest.raises(ValueError, match="context_edges must be increasing"):
            ap.load(tmp_path / "p.json")


def test_save_never_replaces_a_file_that_is_not_a_profile(tmp_path):
    p = _profile()
    other = tmp_path / "notes.txt"
    other.write_text("mine")
    with pytest.raises(ValueError, match="not an acceptance profile: not replaced"):
        ap.save(p, other)
    assert other.read_text() == "mine"
    with pytest.raises(ValueError, match="is a folder"):
        ap.save(p, tmp_path)
    ap.save(p, other, force=True)
    ap.save(p, other)  # a profile now: replaced without force
    assert ap.load(other).gammas == (2,)


def test_the_runner_round_trips_and_profiles_before_it_read_as_v1():
    """T8a-01: a profile names the model runner it stepped; files written before the field
    (every replay then stepped Model Runner V1's proposers) read as v1; anything else is
    refused naming the field."""
    from specnb import replay as R

    prof = R.replay(gammas=[1])
    assert prof.runner == "v2" and ap.from_dict(prof.to_dict()).runner == "v2"
    old = prof.to_dict()
    del old["runner"]
    assert ap.from_dict(old).runner == "v1"
    old["method"] = "draft_model"
    assert ap.from_dict(old).runner is None
    with pytest.raises(ValueError, match="runner must be"):
        ap.from_dict({**prof.to_dict(), "runner": "v3"})


def test_a_runner_the_method_cannot_have_or_counters_it_cannot_produce_are_refused():
    """T9-06: the loader applies replay's runner rule (suffix runs on V1 only) and V2's
    n-gram counters (gamma draft tokens at every step)."""
    from specnb import replay as R

    sfx = R.replay(method="suffix", gammas=[3]).to_dict()
    with pytest.raises(ValueError, match="runner 'v2' cannot serve method 'suffix'"):
        ap.from_dict({**sfx, "runner": "v2"})
    ng = R.replay(gammas=[3]).to_dict()
    ng["entries"][0]["num_drafts"] //= 2
    with pytest.raises(ValueError, match=r"entry 0: a runner v2 ngram profile drafts gamma"):
        ap.from_dict(ng)
    assert ap.from_dict({**ng, "runner": "v1"}).runner == "v1"  # V1 drafts on a share
