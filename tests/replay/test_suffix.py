"""specnb.replay.suffix: Arctic Inference's suffix trees on hand-made sequences (expected
drafts computed by hand and confirmed with arctic-inference 0.3.0's compiled
SuffixDecodingCache), the C++ sibling order's quirk, eviction and the global tree."""

import numpy as np
import pytest

from specnb.replay import suffix as S
from specnb.replay.suffix import SuffixCache, SuffixTree


def test_counts_probabilities_and_the_longer_match_on_a_tie():
    c = SuffixCache(max_tree_depth=4, max_cached_requests=0)
    c.start_request("a", [1, 2, 1, 2, 1])
    # m = 1: "1" (3 times) -> "2" (2 of them): [2], 2/3; m = 2: "2 1" (twice) -> "2" (once)
    # then "1": [2, 1] with probs 1/2, 1/2, score 1.0 beats 2/3
    toks, score, m = c.speculate("a", [1, 2, 1], 3)
    assert (toks, m) == ([2, 1], 2) and score == pytest.approx(1.0)
    # max_spec_factor caps a draft at factor * match length tokens
    assert c.speculate("a", [1, 2, 1], 3, max_spec_factor=0.5)[0] == [2]
    # min_token_prob: 1/2 < 0.6 stops m = 2 at once, 2/3 passes for m = 1
    assert c.speculate("a", [1, 2, 1], 3, min_token_prob=0.6)[0] == [2]


def test_the_head_of_a_group_jumps_ahead_of_its_new_equals():
    # children of "0": 5 reaches count 2 first, then 7, then 6; 6 was the head of the
    # count-1 group behind 7, so arctic's _increment_count moves it before 5
    t = SuffixTree(2)
    t.extend(0, [0, 5, 0, 5, 0, 6, 0, 7, 0, 7, 0, 6, 0])
    assert [n.token for n in t.match([0]).order] == [6, 5, 7]
    toks, score, m = t.speculate([6, 0], 3, 1.0, 0.0, 0.1)
    assert toks == [6] and score == np.float32(2 / 7)


def test_the_global_tree_serves_later_requests_and_evicts_oldest_first():
    c = SuffixCache(max_tree_depth=8, max_cached_requests=2)
    c.start_request(0, [9])
    c.add_active_response(0, [3, 4, 5, 6])
    c.stop_request(0)
    c.start_request(1, [7])
    c.add_active_response(1, [3, 4])
    # request 1's prompt never held "3 4"; request 0's response did (the global tree)
    assert c.speculate(1, [7, 3, 4], 3)[0] == [5, 6]
    c.stop_request(1)
    c.start_request(2, [8])  # a third slot: request 0's response is evicted, 1's kept
    assert list(c.cached) == [1, 2] and 0 not in c.global_tree.seqs
    c.add_active_response(2, [3, 4])
    assert c.speculate(2, [8, 3, 4], 3)[0] == []  # "3 4" is now followed by nothing seen
    c.stop_request(2)
    c.start_request(3, [1])
    with pytest.raises(ValueError, match="already active"):
        c.start_request(3, [1])


def test_backends_resolve_and_name_themselves(monkeypatch):
    with pytest.raises(ValueError, match="suffix_backend must be one of"):
        S.resolve_backend("cuda")
    assert S.resolve_backend("python") == "python" and S.backend_label("python") == "python"
    monkeypatch.setattr(S, "numba_version", lambda: "0.68.1")
    assert S.resolve_backend("auto") == "numba" and S.resolve_backend("numba") == "numba"
    assert S.backend_label("numba") == "numba 0.68.1"
    monkeypatch.setattr(S, "numba_version", lambda: None)
    with pytest.raises(ValueError, match="pip install"):
        S.resolve_backend("numba")
    monkeypatch.setattr(S, "arctic_version", lambda: None)
    assert S.resolve_backend("auto") == "python"
    assert isinstance(S.make_cache("auto", 4, 0), SuffixCache)
    with pytest.raises(ValueError, match="make suffix-backend"):
        S.resolve_backend("arctic")
    monkeypatch.setattr(S, "arctic_version", lambda: "0.3.0")
    assert S.resolve_backend("auto") == "arctic"
    assert S.backend_label("arctic") == "arctic-inference 0.3.0"


@pytest.mark.skipif(S.arctic_version() is None,
                    reason="arctic_inference.suffix_decoding is not built here "
                           "(make suffix-backend)")
def test_arctics_cache_behind_the_same_methods_gives_the_same_drafts():
    py, ar = SuffixCache(4, 1), S.ArcticCache(4, 1)
    for c in (py, ar):
        c.start_request("a", [1, 2, 1, 2, 1])
        c.add_active_response("a", [2, 1])
    assert ar.max_tree_depth == 4
    for k, f, p in ((3, 1.0, 0.1), (3, 0.5, 0.1), (5, 2.0, 0.0), (0, 1.0, 0.1)):
        assert ar.speculate("a", [2, 1, 2, 1], k, f, 0.0, p)[:2] == \
            py.speculate("a", [2, 1, 2, 1], k, f, 0.0, p)[:2]
    with pytest.raises(ValueError, match="already active"):
        ar.start_request("a", [1])
    ar.stop_request("a")
    ar.start_request("a", [3])  # a finished request's id again: its cached response evicted
    assert list(ar.cache.cached_requests) == ["a"]


def test_leaves_share_empty_stand_ins_that_stay_empty():
    # most nodes never get a child: they share one empty dict and list until they do
    c = SuffixCache(max_tree_depth=5, max_cached_requests=1)
    for r in range(3):
        c.start_request(r, [1, 2, 3, 1, 2, 4, 1, 2, 3][r:])
        c.add_active_response(r, [1, 2, 3, 5, 1, 2])
        c.speculate(r, [1, 2], 3)
        c.stop_request(r)
    assert S._NO_CHILDREN == {} and S._NO_ORDER == []
