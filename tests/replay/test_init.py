"""specnb.replay's face: settings resolved and checked as vLLM does, and a replay of the bundled
log written as an acceptance profile (round trip through its JSON)."""

import pytest

from specnb import acceptance_profile as AP
from specnb import replay as R
from specnb.replay import suffix as S


def test_lookups_resolve_as_vllm_resolves_them():
    assert R.check_params("ngram")["prompt_lookup_min"] == 5
    p = R.check_params("ngram", {"prompt_lookup_max": 3})
    assert (p["prompt_lookup_min"], p["prompt_lookup_max"]) == (3, 3)
    p = R.check_params("ngram_gpu", {"prompt_lookup_min": 2})
    assert (p["prompt_lookup_min"], p["prompt_lookup_max"]) == (2, 2)
    assert R.check_params("suffix")["suffix_decoding_max_tree_depth"] == 24


@pytest.mark.parametrize("method,params,msg", [
    ("medusa", {}, "method"),
    ("ngram", {"prompt_lookup_min": 4, "prompt_lookup_max": 2}, "must be <= prompt_lookup_max"),
    ("ngram", {"prompt_lookup_min": 0}, "prompt_lookup_min"),
    ("ngram", {"suffix_decoding_max_tree_depth": 3}, "has no setting"),
    ("suffix", {"suffix_decoding_min_token_prob": 1.5}, "suffix_decoding_min_token_prob"),
    ("suffix", {"suffix_decoding_max_cached_requests": -2}, "max_cached_requests"),
    ("suffix", {"max_model_len": 1}, "max_model_len"),
])
def test_bad_settings_are_named(method, params, msg):
    with pytest.raises(ValueError, match=msg):
        R.check_params(method, params)


def test_replay_of_the_bundled_log_is_a_profile(tmp_path):
    prof = R.replay(method="ngram", gammas=[3, 1], context_edges=[50],
                    params={"prompt_lookup_min": 2, "prompt_lookup_max": 4})
    assert prof.gammas == (1, 3) and prof.context_edges == (50,)
    assert prof.tasks == ("code-completion", "copy-edit", "prose")
    assert prof.source["requests"] == 72 and prof.source["skipped"] == 0
    whole = prof.entry(3)
    parts = [prof.entry(3, context=0), prof.entry(3, context=50)]
    assert whole.counters == parts[0].counters + parts[1].counters
    tasks = [prof.entry(3, task=t).counters for t in prof.tasks]
    assert whole.counters == sum(tasks[1:], tasks[0])
    assert 1.0 <= whole.tau <= 4.0 and whole.num_requests == 72
    AP.save(prof, tmp_path / "p.json")
    back = AP.load(tmp_path / "p.json")
    assert back.entry(3).counters == whole.counters and back.params == prof.params
    with pytest.raises(ValueError, match="gamma"):
        R.replay(method="ngram", gammas=[0])
    with pytest.raises(ValueError, match="context_edges must increase"):
        R.replay(method="ngram", context_edges=[10, 5])


def test_a_draft_profile_from_betas_steps_the_leading_run():
    from specnb import request_log

    log = request_log.read()
    r = log[0]
    ones = [1.0] * r.response_len
    prof = R.draft_profile([{"prompt": r.id, "temperature": r.temperature, "betas": ones}],
                           log, gammas=[3])
    c = prof.entry(3).counters
    # every draft of 3 accepted: the first token from the prefill, then steps of 4 tokens; a
    # last step with fewer than 4 left accepts them all and its bonus token lies past the end
    n = r.response_len - 1
    assert c.num_steps == -(-n // 4) and c.num_accepted_tokens == n - c.num_steps + (n % 4 != 0)
    assert c.num_draft_tokens == 3 * c.num_steps and prof.method == "draft_model"
    t = R.table({"d": prof})
    assert set(t.columns) >= {"method", "gamma", "task", "context", "tau", "proposal_rate"}
    with pytest.raises(ValueError, match="have no request"):
        R.draft_profile([{"prompt": "nope", "temperature": 0.0, "betas": ones}], log)


def test_a_gamma_beyond_max_gamma_is_refused_before_the_log_is_read():
    # gamma 100000 once made a replay of the bundled log run past any timeout
    with pytest.raises(ValueError, match=r"gamma must be an integer in \[1, 64\], got 100000"):
        R.replay("/nonexistent.jsonl", gammas=(3, 100000))
    with pytest.raises(ValueError, match=r"gamma must be an integer in \[1, 64\]"):
        R.draft_profile([], [], gammas=(R.MAX_GAMMA + 1,))



def test_the_suffix_backend_is_checked_first_and_named_in_the_source():
    with pytest.raises(ValueError, match="suffix_backend must be one of"):
        R.replay("/nonexistent.jsonl", "ngram", suffix_backend="cuda")
    from specnb import request_log

    log = request_log.read()
    sub = request_log.RequestLog(log.path, log.requests[:6], tokenizer=log.tokenizer)
    prof = R.replay(sub, "suffix", gammas=[2], suffix_backend="python")
    assert prof.source["backend"] == "python"
    assert "backend" not in R.replay(sub, "ngram", gammas=[2]).source


def test_auto_takes_numba_only_for_logs_its_compile_pays_for():
    small = S.resolve_backend("auto", S.AUTO_NUMBA_MIN_REQUESTS - 1)
    assert small == ("arctic" if S.arctic_version() is not None else "python")
    big = S.resolve_backend("auto", S.AUTO_NUMBA_MIN_REQUESTS)
    assert big == ("numba" if S.numba_version() is not None else small)
    # asked for by name, numba runs on any log
    if S.numba_version() is not None:
        assert S.resolve_backend("numba", 1) == "numba"
    from specnb import request_log

    log = request_log.read()
    sub = request_log.RequestLog(log.path, log.requests[:3], tokenizer=log.tokenizer)
    assert R.replay(sub, "suffix", gammas=[2]).source["backend"] == S.backend_label(small)


@pytest.mark.parametrize("method,params", [
    ("suffix", {"suffix_decoding_max_cached_requests": 2}),  # evictions before each part
    ("suffix", {"suffix_decoding_max_tree_depth": 6}),
    ("ngram", {"prompt_lookup_min": 2, "prompt_lookup_max": 4}),
])
def test_workers_give_the_counters_of_one_process(tmp_path, method, params):
    import json
    from pathlib import Path

    from specnb import request_log

    cases = Path(__file__).resolve().parent.parent / "cases" / "vllm" / "0.33.0"
    corpus = json.loads((cases / "proposals.jsonl").read_text().splitlines()[1])["requests"]
    f = tmp_path / "log.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in corpus))
    log = request_log.read(f, tokenizer=False)
    one = R.replay(log, method, gammas=[1, 3], params=params, suffix_backend="python")
    many = R.replay(log, method, gammas=[1, 3], params=params, suffix_backend="python",
                    workers=3)
    assert [e.counters for e in many.entries] == [e.counters for e in one.entries]
    if method == "suffix" and S.numba_version() is not None:  # the compiled backend's workers
        nb = R.replay(log, method, gammas=[1, 3], params=params, suffix_backend="numba",
                      workers=3)
        assert [e.counters for e in nb.entries] == [e.counters for e in one.entries]
    with pytest.raises(ValueError, match="workers"):
        R.replay(log, method, workers=0)
