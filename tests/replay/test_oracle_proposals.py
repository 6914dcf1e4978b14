"""vLLM's own n-gram proposers and Arctic Inference's suffix cache as vLLM calls it
(tests/cases/vllm/0.33.0/proposals.jsonl, written by oracle/drive_proposals.py) replayed
through specnb.replay: the same drafts and the same stepped counters, integer for integer.
Suffix decoding on every backend: specnb's Python trees, the same trees compiled by numba
where it imports, and, where `make suffix-backend` built it, arctic-inference's own compiled
SuffixDecodingCache driven as specnb drives it."""

import json
from pathlib import Path

import numpy as np
import pytest

from specnb.replay import ngram, step
from specnb.replay import suffix as S

CASES = Path(__file__).resolve().parent.parent / "cases" / "vllm" / "0.33.0" / "proposals.jsonl"
LINES = [json.loads(x) for x in CASES.read_text().splitlines()]
CORPUS = {r["id"]: r for r in LINES[1]["requests"]}
STEPPED = [x for x in LINES if x["kind"] == "stepped"]
CALLS = [x for x in LINES if x["kind"] == "call"]
CALLS_SUFFIX = [x for x in LINES if x["kind"] == "suffix_calls"][0]["caches"]
ARCTIC = pytest.param("arctic", marks=pytest.mark.skipif(
    S.arctic_version() is None, reason="arctic_inference.suffix_decoding is not built here "
    "(make suffix-backend)"))
NUMBA = pytest.param("numba", marks=[pytest.mark.skipif(
    S.numba_version() is None, reason="numba does not import here"),
    pytest.mark.slow])  # numba's first-use compile (about 30 s of CPU): not in make check
BACKENDS = ["python", ARCTIC, NUMBA]


def test_the_fixture_drove_every_method():
    meta = LINES[0]
    assert meta["vllm"] == "0.33.0" and meta["arctic_inference"] == "0.3.0"
    assert {x["method"] for x in STEPPED} == {"ngram", "suffix"} and CALLS_SUFFIX
    assert {x["method"] for x in CALLS} == {"ngram", "ngram_gpu"}


@pytest.mark.parametrize("case", CALLS, ids=lambda c: f"{c['method']}-k{c['k']}-"
                         f"{c['params']['prompt_lookup_min']}-{c['params']['prompt_lookup_max']}"
                         f"-{c.get('max_model_len')}")
def test_single_proposals_match_vllms_functions(case):
    p = case["params"]
    mml = case.get("max_model_len")  # ngram_gpu: the kernel has no cap
    for req in case["requests"]:
        r = CORPUS[req["id"]]
        full = r["prompt_ids"] + r["response_ids"]
        # one table answers every prefix (a prefix's match depends on its own tokens only)
        table = ngram.NgramTable(full, p["prompt_lookup_min"], p["prompt_lookup_max"])
        got = [table.draft(T, case["k"], mml).tolist() for T in range(1, len(full) + 1)]
        assert got == req["drafts"]
        assert ngram.propose(full, case["k"], max_model_len=mml, **p).tolist() == \
            req["drafts"][-1]


def _cases():
    for c in STEPPED:
        name = f"{c['method']}-g{c['gamma']}-" + "-".join(str(v) for v in c["params"].values())
        if c["method"] == "suffix":
            for b in BACKENDS:
                v = b if isinstance(b, str) else b.values[0]
                marks = () if isinstance(b, str) else b.marks
                yield pytest.param(c, v, id=f"{name}-{v}", marks=marks)
        else:
            yield pytest.param(c, None, id=name)


@pytest.mark.parametrize("case,backend", list(_cases()))
def test_stepped_counters_match_vllms_engine_loop(case, backend):
    g, p = case["gamma"], case["params"]
    reqs = list(CORPUS.values())
    got = []
    if case["method"] == "ngram":
        for r in reqs:
            T, d, a = step.ngram_steps(r["prompt_ids"] + r["response_ids"], len(r["prompt_ids"]),
                                       [g], max_model_len=4096, runner="v1", **p)[g]
            got.append([[int(x), int(y), int(z)] for x, y, z in zip(T, d, a)])
    else:
        cache = S.make_cache(backend, p["suffix_decoding_max_tree_depth"],
                             p["suffix_decoding_max_cached_requests"])
        for i, r in enumerate(reqs):
            T, d, a = step.suffix_steps(
                cache, i, r["prompt_ids"] + r["response_ids"], len(r["prompt_ids"]), [g],
                max_spec_factor=p["suffix_decoding_max_spec_factor"],
                min_token_prob=p["suffix_decoding_min_token_prob"], max_model_len=4096)[g]
            got.append([[int(x), int(y), int(z)] for x, y, z in zip(T, d, a)])
    assert got == case["steps"]
    total = None
    for req in got:
        arr = np.array(req, dtype=np.int64).reshape(-1, 3)
        c = step.counters((arr[:, 0], arr[:, 1], arr[:, 2]), g)[None]
        total = c if total is None else total + c
    assert total.to_dict() == case["counters"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_suffix_speculation_matches_arctics_cache(backend):
    n = 0
    for c in CALLS_SUFFIX:
        cache = S.make_cache(backend, c["depth"], c["cached"])
        for r, req in enumerate(c["requests"]):
            cache.start_request(r, req["prompt"])
            seq = list(req["prompt"])
            for call in req["calls"]:
                cache.add_active_response(r, call["add"])
                seq += call["add"]
                toks, score, _ = cache.speculate(r, seq[-c["depth"]:], call["k"], call["factor"],
                                                 0.0, call["min_prob"])
                assert (toks, score) == (call["draft"], call["score"])
                n += 1
            cache.stop_request(r)
    assert n > 1000


def _groups():
    """The suffix fixtures grouped by their settings (several gammas on the same ones)."""
    by = {}
    for c in STEPPED:
        if c["method"] == "suffix":
            by.setdefault(json.dumps(c["params"], sort_keys=True), []).append(c)
    return [g for g in by.values() if len(g) > 1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_pass_for_every_gamma_gives_each_gammas_own_steps(backend):
    # replay's single pass per request (the trees advanced once, each gamma speculating at
    # its own positions) against the fixtures stepped one gamma at a time by vLLM's loop
    groups = _groups()
    assert groups and max(len(g) for g in groups) >= 3
    reqs = list(CORPUS.values())
    for cases in groups:
        p = cases[0]["params"]
        gammas = [c["gamma"] for c in cases]
        cache = S.make_cache(backend, p["suffix_decoding_max_tree_depth"],
                             p["suffix_decoding_max_cached_requests"])
        got = {g: [] for g in gammas}
        for i, r in enumerate(reqs):
            out = step.suffix_steps(
                cache, i, r["prompt_ids"] + r["response_ids"], len(r["prompt_ids"]), gammas,
                max_spec_factor=p["suffix_decoding_max_spec_factor"],
                min_token_prob=p["suffix_decoding_min_token_prob"], max_model_len=4096)
            for g in gammas:
                got[g].append([[int(x), int(y), int(z)] for x, y, z in zip(*out[g])])
        for c in cases:
            assert got[c["gamma"]] == c["steps"]
