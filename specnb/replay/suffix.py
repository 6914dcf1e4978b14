"""Suffix decoding exactly as vLLM runs Arctic Inference's ``SuffixDecodingCache``.

vLLM 0.33.0, ``vllm/v1/spec_decode/suffix_decoding.py`` (``SuffixDecodingProposer``) calls
arctic-inference 0.3.0's ``arctic_inference/suffix_decoding/cache.py`` (``SuffixDecodingCache``)
over the C++ ``SuffixTree`` of ``csrc/suffix_decoding/suffix_tree.cc``. This module restates
both in Python (an uncompressed trie: the same counts and the same child order as the
path-compressed C++ tree) and is checked against the compiled original in
``tests/cases/vllm/0.33.0/proposals.jsonl`` (``make oracle``).

The rule, as the sources give it:

* **Trees.** A *local* tree per active request over its prompt and its output so far; one
  *global* tree over the outputs of earlier requests (kept up to ``max_cached_requests``,
  evicted oldest first; 0 = no global tree, -1 = no limit) and of the active one. Each tree
  counts, for every string s of at most ``max_tree_depth`` tokens, the positions where it
  occurs (``count``); a node's children are ordered by count, ties by who reached that count
  first (a child whose count fell on an eviction goes first among its new equals).
* **Speculate** (``SuffixTree::speculate``): the context is the last ``max_tree_depth``
  tokens; for each match length m = 1 .. len(context) - 1, while the last m tokens are in the
  tree: walk from their node to the first child each time, ``prob *= count(child) /
  count(node)`` (float32), taking tokens while ``prob >= min_token_prob`` and fewer than
  ``min(max_spec_tokens, int(m * max_spec_factor + max_spec_offset + 1e-6))``; score = the
  sum of the taken tokens' probs; the best score wins, ties to the longer match. The local
  draft wins over the global one when its score is >= the global's.
* **vLLM's calls** (``SuffixDecodingProposer.propose``): on a request's first sampled token
  ``start_request(prompt)``; every step ``add_active_response(sampled tokens)`` then
  ``speculate(last max_tree_depth tokens, max_spec_tokens=min(num_speculative_tokens,
  max_model_len - num_tokens - 1), max_spec_factor, min_token_prob)``; a request that left the
  batch: ``stop_request``.
"""

from __future__ import annotations

import functools
import struct
from array import array
from pathlib import Path

__all__ = ["SuffixTree", "SuffixCache", "ArcticCache", "BACKENDS", "arctic_version",
           "numba_version", "resolve_backend", "backend_label", "make_cache"]

#: Suffix backends: ``"numba"`` (this module's trees in compiled arrays,
#: :class:`specnb.replay.suffix_jit.NumbaCache`; needs numba), ``"arctic"`` (Arctic
#: Inference's own compiled ``SuffixDecodingCache``, :class:`ArcticCache`), ``"python"`` (this
#: module's trees), ``"auto"`` (numba where it imports, else arctic where it imports, else
#: python: the fastest first). All give the same drafts (tests/cases/vllm/0.33.0/proposals.jsonl).
BACKENDS = ("auto", "numba", "arctic", "python")

#: How to install the arctic backend (its suffix tree alone, built on a CPU from the sdist).
ARCTIC_INSTALL = ("make suffix-backend (builds arctic-inference's suffix tree from its PyPI "
                  "sdist into the venv; CMake, a C++20 compiler and torch in the venv to "
                  "read the sdist) or pip install arctic-inference")
#: How to install the numba backend.
NUMBA_INSTALL = "pip install 'specnb[fast]' (numba)"

class _Node:
    """A node of the trie: the string of its path, ``count`` its occurrences. ``ref``
    ``(seq, pos)``, where set, is a chain of count-1 nodes below it left implicit (one
    occurrence continues with ``seq[pos], seq[pos + 1], ...`` down to the depth limit: the
    path compression of the C++ tree's leaves); a node with ``ref`` has no other child."""

    __slots__ = ("count", "children", "order", "token", "depth", "ref")

    def __init__(self, token: int, depth: int = 0, count: int = 0, ref=None):
        self.count = count
        # token -> _Node, and the children in the C++ sibling-list order (head first); most
        # nodes are leaves for good, so they share empty stand-ins until their first child
        self.children = _NO_CHILDREN
        self.order = _NO_ORDER
        self.token = token
        self.depth = depth
        self.ref = ref


_NO_CHILDREN = {}  # never written: extend gives a node its own before the first child
_NO_ORDER = []


def _increment(order: list, child: _Node) -> None:
    """``_increment_count`` of a child that is not the head of ``order`` (the head's count
    grows in place): count k -> k + 1 and the C++ sibling-list move. A node whose
    predecessor has count k or k + 1 moves before the head of that predecessor's group (so
    the head of group k, behind group k + 1, becomes the head of group k + 1; any other
    member of group k becomes the last of group k + 1)."""
    k = child.count
    i = order.index(child)
    c = order[i - 1].count
    if c <= k + 1:
        h = i - 1
        while h > 0 and order[h - 1].count == c:
            h -= 1
        del order[i]
        order.insert(h, child)
    child.count = k + 1


def _decrement(order: list, child: _Node) -> None:
    """``_decrement_count``: count k -> k - 1; a node followed by one of count k moves before
    the head of the next lower group (to the end when there is none)."""
    k = child.count
    i = order.index(child)
    n = len(order)
    if i + 1 < n and order[i + 1].count == k:
        j = i + 1
        while j < n and order[j].count == k:
            j += 1
        del order[i]
        order.insert(j - 1, child)
    child.count = k - 1


class SuffixTree:
    """Arctic's ``SuffixTree`` (counts of every substring of at most ``max_depth`` tokens of
    the sequences appended, children in the C++ tree's sibling order)."""

    def __init__(self, max_depth: int):
        self.max_depth = int(max_depth)
        self.root = _Node(-1)
        self.root.children, self.root.order = {}, []
        self.seqs = {}
        self._active = {}  # seq_id -> the nodes of its suffixes that still follow others

    def extend(self, seq_id: int, tokens) -> None:
        """Append ``tokens`` (ints) to sequence ``seq_id`` (created on first use). Each token
        advances the sequence's live suffixes (those still following an earlier occurrence),
        longest first, then the one-token suffix at the root, so that the live list stays in
        :meth:`tail_nodes`' order; a suffix that meets a new string becomes a count-1 leaf
        whose continuation stays implicit (no node per later token)."""
        seq = self.seqs.setdefault(seq_id, [])
        active = self._active.get(seq_id, [])
        depth = self.max_depth
        root = self.root
        rchildren = root.children
        node_cls = _Node
        for tok in tokens:
            tok = int(tok)
            seq.append(tok)
            n = len(seq)
            live = []
            for node in active:
                d = node.depth
                if d >= depth:
                    continue  # the suffix reached the depth limit
                children = node.children
                ref = node.ref
                if ref is not None:  # make the implicit chain's first node explicit
                    node.ref = None  # (a node with a chain has no children)
                    rs, rp = ref
                    if rp < len(rs):
                        c = node_cls(rs[rp], d + 1, 1, (rs, rp + 1))
                        children = node.children = {c.token: c}
                        node.order = [c]
                child = children.get(tok)
                if child is None:
                    # a string seen once: a leaf whose continuation stays implicit
                    if children is _NO_CHILDREN:
                        children = node.children = {}
                        node.order = []
                    child = children[tok] = node_cls(tok, d + 1, 1, (seq, n))
                    node.order.append(child)
                    continue  # this suffix no longer follows another: it is frozen
                order = node.order
                if order[0] is child:  # the head stays the head
                    child.count += 1
                else:
                    _increment(order, child)
                live.append(child)
            root.count += 1
            child = rchildren.get(tok)
            if child is None:  # the root's order is never walked
                child = rchildren[tok] = node_cls(tok, 1, 1, (seq, n))
            else:
                child.count += 1
                live.append(child)
            active = live
        self._active[seq_id] = active

    def remove(self, seq_id: int) -> None:
        """Remove sequence ``seq_id`` (every count it added falls by one), as
        ``SuffixTree::remove`` does: suffix by suffix from the first, down each path."""
        seq = self.seqs.pop(seq_id)
        del self._active[seq_id]
        depth, root = self.max_depth, self.root
        for j in range(len(seq)):
            root.count -= 1
            node = root
            for tok in seq[j:j + depth]:
                if node.ref is not None:
                    s, pos = node.ref
                    if s is seq and pos - node.depth == j:  # this suffix's own chain
                        node.ref = None
                    break
                child = node.children.get(tok)
                if child is None:
                    break
                if child.count > 1:
                    if node is root:
                        child.count -= 1
                    else:
                        _decrement(node.order, child)
                else:
                    del node.children[tok]
                    if node is not root:
                        node.order.remove(child)
                    break
                node = child

    def _walk(self, context):
        """The position of the string ``context``: ``(node, None)`` at a node, ``(node, k)``
        k tokens down ``node``'s implicit chain, or None."""
        node, k = self.root, None
        for tok in context:
            tok = int(tok)
            if k is None:
                if node.ref is None:
                    node = node.children.get(tok)
                    if node is None:
                        return None
                    continue
                k = 0
            seq, pos = node.ref
            if node.depth + k >= self.max_depth or pos + k >= len(seq) or seq[pos + k] != tok:
                return None
            k += 1
        return node, k

    def match(self, context):
        """The node of the string ``context`` (None: not in the tree, or inside an implicit
        chain of count 1)."""
        w = self._walk(context)
        return None if w is None or w[1] is not None else w[0]

    def tail_nodes(self, seq_id: int, context) -> list:
        """The nodes of the last 1, 2, ... tokens of ``context`` that sequence ``seq_id``
        holds as followers of earlier occurrences (its live suffixes; the context's tail must
        be the sequence's)."""
        active = self._active.get(seq_id)
        if not active:
            return []
        seq = self.seqs[seq_id]
        n = min(len(active), len(context))
        if seq[len(seq) - n:] == context[len(context) - n:]:
            k = n  # the usual case: the context's tail is the sequence's
        else:
            k = 0
            while k < n and seq[-1 - k] == context[-1 - k]:
                k += 1
        return active[-1:-k - 1:-1] if k else []

    def speculate(self, context, max_spec_tokens: int, max_spec_factor: float,
                  max_spec_offset: float, min_token_prob: float, known=(), unique_after=False,
                  floor: float = -1.0):
        """``(token ids, score, match_len)`` as ``SuffixTree::speculate`` (path mode);
        ``known[m - 1]``, where given, is the node of the last m tokens (:meth:`tail_nodes`);
        ``unique_after``: every longer tail occurs only once, at the end (no continuation:
        score 0), so the search stops there. ``match_len`` is arctic's where the score is
        above 0. ``floor`` >= 0: only a draft scoring above it is wanted (the other tree's
        score): match lengths that cannot beat it are skipped, and what comes back when none
        does scores at most ``floor``."""
        ctx = context if type(context) is list else [int(t) for t in context]
        f32 = _F32  # f32[0] = x rounds x to float32 (as C++'s float arithmetic does)
        f32[0] = min_token_prob
        pmin = f32[0]
        caps = _caps(max_spec_factor, max_spec_offset, len(ctx))
        depth = self.max_depth
        nk = len(known)
        # the position of the last m tokens, m = 1, 2, ... while they are in the tree
        at = [(node, None) for node in known[:len(ctx) - 1]]
        for m in range(len(at) + 1, len(ctx)):
            if unique_after:
                break
            w = self._walk(ctx[len(ctx) - m:])
            if w is None:
                break
            at.append(w)
        # arctic takes the best score over m = 1, 2, ..., ties to the longer match; here the
        # same from the longest down, ties to the first seen, skipping every m whose bound
        # (its tokens x its first probability: the probabilities never rise along a path)
        # is below the best so far, with room for float32 rounding of the sum
        best, best_score, best_m = [], 0.0, 0
        for m in range(len(at), 0, -1):
            node, k = at[m - 1]
            max_tokens = min(max_spec_tokens, caps[m])
            if best_m or floor >= 0.0:
                if max_tokens <= 0:
                    continue
                if k is None:
                    order = node.order
                    if order:
                        bound = max_tokens * order[0].count / node.count
                    else:
                        bound = max_tokens if node.ref is not None else 0.0
                else:
                    bound = max_tokens
                if bound * 1.000001 < max(best_score, floor):
                    continue
            elif max_tokens <= 0:
                best_m = m
                continue
            toks, score, prob = [], 0.0, 1.0
            while len(toks) < max_tokens and prob >= pmin:
                if k is None:
                    order = node.order
                    if order:
                        child = order[0]
                        # float32 as in C++: a product or quotient of float32 values computed
                        # in double and rounded once is the float32 result (53 >= 2 * 24 + 2)
                        f32[0] = child.count / node.count
                        f32[0] = prob * f32[0]
                        prob = f32[0]
                        node = child
                        if not prob >= pmin:
                            break
                        toks.append(child.token)
                        f32[0] = score + prob
                        score = f32[0]
                        continue
                    if node.ref is None:
                        break
                    f32[0] = 1.0 / node.count
                    f32[0] = prob * f32[0]  # into the chain: count 1
                    prob = f32[0]
                    k = 0
                    if not prob >= pmin:
                        break
                seq, pos = node.ref
                if node.depth + k >= depth or pos + k >= len(seq):
                    break
                toks.append(seq[pos + k])
                f32[0] = score + prob
                score = f32[0]
                k += 1
            if score > best_score or not best_m:
                best, best_score, best_m = toks, score, m
        return best, best_score, best_m


_F32 = array("f", [0.0])
_F32S = struct.Struct("f")


def _r32(x: float) -> float:
    """``x`` rounded to the nearest float32 (as a Python float)."""
    return _F32S.unpack(_F32S.pack(x))[0]


@functools.lru_cache(maxsize=64)
def _caps(factor: float, offset: float, n: int) -> tuple:
    """``int(m * max_spec_factor + max_spec_offset + 1e-6)`` for m = 0 .. n, in C++'s types
    (float products and sums, then a double 1e-6)."""
    f, o = _r32(factor), _r32(offset)
    return tuple(int(_r32(_r32(float(m) * f) + o) + 1e-6) for m in range(n + 1))


def admit(cache, req_id):
    """``SuffixDecodingCache.start_request``'s global part on ``cache`` (its
    ``max_cached_requests``, ``cached`` req_id -> seq_id in FIFO order, ``_next_seq`` and
    ``evict``): the request's earlier response evicted, a new sequence id for its response,
    the oldest others evicted past the limit. Returns that id (None: no global tree)."""
    if cache.max_cached_requests == 0:
        return None
    if req_id in cache.cached:
        cache.evict(req_id)
    seq = cache._next_seq
    cache._next_seq += 1
    cache.cached[req_id] = seq
    if cache.max_cached_requests > 0:
        while len(cache.cached) > cache.max_cached_requests:
            cache.evict(next(r for r, s in cache.cached.items() if s != seq))
    return seq


class SuffixCache:
    """Arctic's ``SuffixDecodingCache``: local trees per active request, one global tree of
    responses with FIFO eviction past ``max_cached_requests`` (0: none; -1: no limit)."""

    def __init__(self, max_tree_depth: int = 24, max_cached_requests: int = 10000):
        self.max_tree_depth = int(max_tree_depth)
        self.max_cached_requests = int(max_cached_requests)
        self.global_tree = SuffixTree(max_tree_depth)
        self.local = {}
        self.cached = {}  # req_id -> seq_id, insertion (FIFO) order
        self._next_seq = 0

    def start_request(self, req_id, prompt) -> None:
        if req_id in self.local:
            raise ValueError(f"request {req_id!r} is already active")
        tree = self.local[req_id] = SuffixTree(self.max_tree_depth)
        tree.extend(0, prompt)
        admit(self, req_id)

    def evict(self, req_id) -> None:
        seq = self.cached.pop(req_id)
        if seq in self.global_tree.seqs:
            self.global_tree.remove(seq)

    def stop_request(self, req_id) -> None:
        del self.local[req_id]

    def add_active_response(self, req_id, tokens) -> None:
        self.local[req_id].extend(0, tokens)
        if req_id in self.cached:
            self.global_tree.extend(self.cached[req_id], tokens)

    def speculate(self, req_id, context, max_spec_tokens: int, max_spec_factor: float = 1.0,
                  max_spec_offset: float = 0.0, min_token_prob: float = 0.1):
        """``(token ids, score, match_len)``: the local tree's draft when its score is >= the
        global tree's, else the global one."""
        ctx = context if type(context) is list else [int(t) for t in context]
        ctx = ctx[-self.max_tree_depth:]
        local = self.local[req_id]
        lseq = local.seqs.get(0, [])
        tail = len(lseq) >= len(ctx) and lseq[len(lseq) - len(ctx):] == ctx
        # the local tree holds the whole context: past its live suffixes every tail is unique
        d1 = local.speculate(ctx, max_spec_tokens, max_spec_factor, max_spec_offset,
                             min_token_prob, local.tail_nodes(0, ctx) if tail else (),
                             unique_after=tail)
        if d1[1] >= max_spec_tokens:  # no draft scores more (every probability <= 1)
            return d1
        seq = self.cached.get(req_id)
        known, unique = (), False
        if seq is not None and seq in self.global_tree.seqs:
            known = self.global_tree.tail_nodes(seq, ctx)
            gseq = self.global_tree.seqs[seq]
            # a tail within this response that stopped following others is unique too
            unique = len(known) < min(len(gseq), len(ctx)) and \
                gseq[len(gseq) - len(known) - 1:] == ctx[len(ctx) - len(known) - 1:]
        d2 = self.global_tree.speculate(ctx, max_spec_tokens, max_spec_factor,
                                        max_spec_offset, min_token_prob, known,
                                        unique_after=unique, floor=d1[1])
        return d1 if d1[1] >= d2[1] else d2


def arctic_version() -> str | None:
    """The version of the importable ``arctic_inference.suffix_decoding`` (its compiled
    ``SuffixDecodingCache``), ``"unknown"`` when it does not say, None when it does not import
    (not installed, or built for another Python)."""
    try:
        import arctic_inference.suffix_decoding as sd
        from arctic_inference.suffix_decoding import SuffixDecodingCache  # noqa: F401
    except ImportError:
        return None
    stamp = Path(sd.__file__).with_name("VERSION")  # oracle/build_arctic_suffix.sh's build
    if stamp.is_file():
        return stamp.read_text().strip() or "unknown"
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version("arctic-inference")
    except (ImportError, PackageNotFoundError):
        return "unknown"


def numba_version() -> str | None:
    """numba's version where it imports (the ``"numba"`` backend runs), else None."""
    from .suffix_jit import numba_version as v

    return v()


#: ``"auto"`` picks numba for logs of at least this many requests: its one-time compile
#: (about 30 s of CPU, then cached in ``__pycache__``) costs what the Python trees take for
#: about 500 requests (62 ms each, docs/replay.md); smaller logs run faster without it.
AUTO_NUMBA_MIN_REQUESTS = 500


def resolve_backend(backend: str = "auto", n_requests: int | None = None) -> str:
    """``"numba"``, ``"arctic"`` or ``"python"``: ``backend`` (one of :data:`BACKENDS`) as it
    runs here (``"auto"``: the first of numba, arctic, python that imports; numba only for
    ``n_requests`` >= :data:`AUTO_NUMBA_MIN_REQUESTS` or None, a log of unknown size).

    Raises
    ------
    ValueError
        an unknown backend; ``"numba"`` where numba does not import, ``"arctic"`` where
        ``arctic_inference.suffix_decoding`` does not (the message says how to install it).
    """
    if backend not in BACKENDS:
        raise ValueError(f"suffix_backend must be one of {list(BACKENDS)}, got {backend!r}")
    big = n_requests is None or n_requests >= AUTO_NUMBA_MIN_REQUESTS
    if (backend == "numba" or (backend == "auto" and big)) and numba_version() is not None:
        return "numba"
    if backend == "numba":
        raise ValueError("suffix_backend 'numba': numba does not import here; install it with "
                         + NUMBA_INSTALL)
    have = arctic_version() is not None
    if backend == "arctic" and not have:
        raise ValueError("suffix_backend 'arctic': arctic_inference.suffix_decoding does not "
                         "import here; install it with " + ARCTIC_INSTALL)
    if backend == "auto":
        return "arctic" if have else "python"
    return backend


def backend_label(backend: str) -> str:
    """The provenance string of a resolved backend: ``"numba 0.68.1"``,
    ``"arctic-inference 0.3.0"`` or ``"python"``."""
    if backend == "numba":
        return f"numba {numba_version()}"
    return f"arctic-inference {arctic_version()}" if backend == "arctic" else "python"


def make_cache(backend: str, max_tree_depth: int = 24, max_cached_requests: int = 10000):
    """A :class:`~specnb.replay.suffix_jit.NumbaCache` (``"numba"``), :class:`ArcticCache`
    (``"arctic"``) or :class:`SuffixCache` (``"python"``; ``"auto"`` resolved by
    :func:`resolve_backend`)."""
    b = resolve_backend(backend)
    if b == "numba":
        from .suffix_jit import NumbaCache as cls
    else:
        cls = ArcticCache if b == "arctic" else SuffixCache
    return cls(max_tree_depth, max_cached_requests)


class ArcticCache:
    """Arctic Inference's own ``SuffixDecodingCache`` behind :class:`SuffixCache`'s methods,
    called as vLLM 0.33.0's ``SuffixDecodingProposer.propose`` calls it (read from the 0.33.0
    wheel's ``vllm/v1/spec_decode/suffix_decoding.py``): a request not active
    has its cached response evicted, then ``start_request(prompt)``; each step
    ``add_active_response(sampled)`` and ``speculate(pattern, max_spec_tokens=...,
    max_spec_factor=..., min_token_prob=...)`` (``max_spec_offset`` left at 0); a request that
    left the batch ``stop_request``. Token ids: lists of Python ints (arctic's list overloads;
    :func:`~specnb.replay.step.suffix_steps` passes them so, unconverted on the hot path).

    The hot path (``add_active_response``, ``speculate``) calls the compiled ``SuffixTree``
    methods of the cache's own trees directly, exactly as arctic-inference 0.3.0's
    ``SuffixDecodingCache`` methods do (``cache.py``: extend the local tree, then the global
    one under the request's sequence id; speculate on the local tree, then the global one,
    the local draft where its score is >= the global one's, path mode), without the wrapper's
    per-call checks and its ``SuffixDecodingDraft`` copy (a fifth of the backend's time); the
    global tree is not searched when the local draft scores ``max_spec_tokens``, which no
    draft exceeds (at most that many probabilities <= 1, summed in float32: the local draft
    wins whatever the global one scores);
    where the cache lacks those attributes (another arctic version) it calls the wrapper.

    Raises
    ------
    ImportError
        ``arctic_inference.suffix_decoding`` does not import.
    """

    def __init__(self, max_tree_depth: int = 24, max_cached_requests: int = 10000):
        from arctic_inference.suffix_decoding import SuffixDecodingCache

        self.max_tree_depth = int(max_tree_depth)
        self.max_cached_requests = int(max_cached_requests)
        self.cache = c = SuffixDecodingCache(max_tree_depth=self.max_tree_depth,
                                             max_cached_requests=self.max_cached_requests)
        try:
            from arctic_inference.suffix_decoding._C import SuffixTree as tree_cls

            self._direct = (c._local_trees, c._global_tree, c._req_to_seq_id,
                            tree_cls.extend, tree_cls.speculate)
        except (ImportError, AttributeError):  # pragma: no cover - another arctic layout
            self._direct = None

    def start_request(self, req_id, prompt) -> None:
        c = self.cache
        if req_id in c.active_requests:
            raise ValueError(f"request {req_id!r} is already active")
        if req_id in c.cached_requests:
            c.evict_cached_response(req_id)
        c.start_request(req_id, [int(t) for t in prompt])

    def stop_request(self, req_id) -> None:
        self.cache.stop_request(req_id)

    def add_active_response(self, req_id, tokens) -> None:
        d = self._direct
        if d is None or type(tokens) is not list:
            self.cache.add_active_response(req_id, tokens)
            return
        local, glob, seq_of, extend, _ = d
        tree = local.get(req_id)
        if tree is None:
            raise ValueError(f"Request '{req_id}' is not active")
        extend(tree, 0, tokens)
        seq = seq_of.get(req_id)
        if seq is not None:
            extend(glob, seq, tokens)

    def speculate(self, req_id, context, max_spec_tokens: int, max_spec_factor: float = 1.0,
                  max_spec_offset: float = 0.0, min_token_prob: float = 0.1):
        """``(token ids, score, match_len)`` of arctic's ``SuffixDecodingCache.speculate``."""
        d = self._direct
        if d is not None and type(context) is list:
            local, glob, _, _, spec = d
            tree = local.get(req_id)
            if tree is None:
                raise ValueError(f"Request '{req_id}' is not active")
            if len(context) > self.max_tree_depth:
                context = context[-self.max_tree_depth:]
            d1 = spec(tree, context, max_spec_tokens, max_spec_factor, max_spec_offset,
                      min_token_prob, False)
            if d1.score >= max_spec_tokens:
                # no global draft scores more (at most max_spec_tokens probabilities <= 1,
                # summed in float32), and the local one wins a tie
                return d1.token_ids, d1.score, d1.match_len
            d2 = spec(glob, context, max_spec_tokens, max_spec_factor, max_spec_offset,
                      min_token_prob, False)
            w = d1 if d1.score >= d2.score else d2
            return w.token_ids, w.score, w.match_len
        d = self.cache.speculate(req_id, context,
                                 max_spec_tokens=max_spec_tokens,
                                 max_spec_factor=max_spec_factor,
                                 max_spec_offset=max_spec_offset,
                                 min_token_prob=min_token_prob)
        return list(d.token_ids), d.score, d.match_len
