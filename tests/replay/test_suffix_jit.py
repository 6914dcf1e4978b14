"""specnb.replay.suffix_jit (the "numba" suffix backend) against specnb's Python trees
(specnb.replay.suffix, itself checked against arctic-inference's compiled cache in
test_oracle_proposals.py): the same drafts and scores on seeded random traffic that makes
nodes with many children (hashed, their count groups' heads kept), evicts responses
(counts falling), restarts request ids, interleaves active requests and grows every array
from a few entries."""

import numpy as np
import pytest

from specnb.replay import step
from specnb.replay import suffix as S

J = pytest.importorskip("specnb.replay.suffix_jit")
if not J.available():  # pragma: no cover - numba not installed
    pytest.skip("numba does not import here", allow_module_level=True)

# numba compiles the backend on first use (about 30 s of CPU, then cached in __pycache__): the
# fast tier (make check) leaves it to the full suite.
pytestmark = pytest.mark.slow


def _tiny(cache):
    """Every array of ``cache`` a few entries long, so that each grows many times."""
    d = cache.max_tree_depth
    cache.glob = J._Tree(d, nodes=8, seqs=1, arena=4)
    cache._scratch = J._Tree(d, nodes=8, arena=4)
    return cache


def _pair(depth, cached, tiny=False):
    nb = J.NumbaCache(depth, cached)
    return S.SuffixCache(depth, cached), (_tiny(nb) if tiny else nb)


@pytest.mark.parametrize("seed", range(12))
def test_cache_calls_give_the_python_trees_drafts(seed):
    rng = np.random.default_rng(seed)
    vocab, depth = int(rng.integers(3, 30)), int(rng.integers(2, 9))
    cached = int(rng.choice([-1, 0, 1, 2, 3]))
    caches = _pair(depth, cached, tiny=True)
    got = [[], []]
    for _ in range(int(rng.integers(4, 14))):
        rid = int(rng.integers(0, 5))  # ids come back: the cached response is evicted first
        prompt = rng.integers(0, vocab, int(rng.integers(0, 40))).tolist()
        adds = [rng.integers(0, vocab, int(rng.integers(1, 4))).tolist()
                for _ in range(int(rng.integers(1, 20)))]
        ks = [(int(rng.integers(0, 8)), float(rng.choice([0.5, 1.0, 2.0])),
               float(rng.choice([0.0, 0.1, 0.3]))) for _ in adds]
        for c, out in zip(caches, got):
            c.start_request(rid, prompt)
            seq = list(prompt)
            for a, (k, f, p) in zip(adds, ks):
                c.add_active_response(rid, a)
                seq += a
                out.append(c.speculate(rid, seq[-depth:], k, f, 0.0, p))
                out.append(c.speculate(rid, seq[-(depth // 2 + 1):], k, f, 0.0, p))
            c.stop_request(rid)
    assert got[0] == got[1] and len(got[0]) > 20


@pytest.mark.parametrize("seed", range(8))
def test_one_compiled_loop_gives_suffix_steps_of_the_python_trees(seed):
    rng = np.random.default_rng(100 + seed)
    vocab, depth = int(rng.integers(3, 60)), int(rng.integers(2, 10))
    cached = int(rng.choice([-1, 0, 1, 2, 4]))
    py, nb = _pair(depth, cached, tiny=True)
    for r in range(12):
        full = (np.minimum(rng.zipf(1.3, int(rng.integers(2, 300))), vocab) - 1).tolist()
        pl = int(rng.integers(1, len(full)))
        gs = sorted(set(rng.integers(1, 9, 3).tolist()))
        mml = int(rng.choice([len(full) + 1, len(full) + 3, 10 ** 6]))
        kw = dict(max_spec_factor=float(rng.choice([0.5, 1.0, 2.0])),
                  min_token_prob=float(rng.choice([0.0, 0.1, 0.3])), max_model_len=mml)
        a = step.suffix_steps(py, r % 5, full, pl, gs, **kw)
        b = step.suffix_steps(nb, r % 5, full, pl, gs, **kw)
        assert {g: [x.tolist() for x in a[g]] for g in gs} == \
            {g: [x.tolist() for x in b[g]] for g in gs}


def test_interleaved_requests_share_the_global_tree_as_the_python_trees_do():
    rng = np.random.default_rng(7)
    caches = _pair(5, -1, tiny=True)
    got = [[], []]
    for c, out in zip(caches, got):
        rng = np.random.default_rng(7)
        seqs = {}
        for rid in (0, 1, 2):
            seqs[rid] = rng.integers(0, 6, 10).tolist()
            c.start_request(rid, seqs[rid])
        for _ in range(60):  # each turn another request grows (its response moves in the arena)
            rid = int(rng.integers(0, 3))
            a = rng.integers(0, 6, int(rng.integers(1, 3))).tolist()
            c.add_active_response(rid, a)
            seqs[rid] += a
            out.append(c.speculate(rid, seqs[rid][-5:], 4, 1.0, 0.0, 0.0))
        c.stop_request(0)
        c.start_request(0, [1, 2])  # request 0's response evicted while 1 and 2 are active
        c.add_active_response(0, [3])
        out.append(c.speculate(0, [1, 2, 3], 4, 1.0, 0.0, 0.0))
    assert got[0] == got[1]


def test_active_ids_and_token_range_are_checked():
    c = J.NumbaCache(4, 2)
    c.start_request("a", [1, 2])
    with pytest.raises(ValueError, match="already active"):
        c.start_request("a", [1])
    with pytest.raises(ValueError, match="already active"):
        c.steps("a", [1, 2, 3], 1, [1])
    with pytest.raises(ValueError, match="2\\*\\*31"):
        c.add_active_response("a", [1 << 31])
    assert S.make_cache("numba", 4, 2).__class__ is J.NumbaCache
