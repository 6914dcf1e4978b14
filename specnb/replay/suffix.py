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

__all__ = ["SuffixTree", "SuffixCache"]

class _Node:
    __slots__ = ("count", "children", "order", "token")

    def __init__(self, token: int):
        self.count = 0
        self.children = {}  # token -> _Node
        self.order = []     # the children in the C++ sibling-list order (head first)
        self.token = token


def _increment(order: list, child: _Node) -> None:
    """``_increment_count``: count k -> k + 1 and the C++ sibling-list move. A node whose
    predecessor has count k or k + 1 moves before the head of that predecessor's group (so
    the head of group k, behind group k + 1, becomes the head of group k + 1; any other
    member of group k becomes the last of group k + 1)."""
    k = child.count
    i = order.index(child)
    if i > 0:
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
        self.seqs = {}
        self._active = {}

    def extend(self, seq_id: int, tokens) -> None:
        """Append ``tokens`` to sequence ``seq_id`` (created on first use)."""
        seq = self.seqs.setdefault(seq_id, [])
        active = self._active.setdefault(seq_id, [])
        depth = self.max_depth
        root = self.root
        for tok in tokens:
            tok = int(tok)
            active.append(root)
            root.count += 1
            if len(active) > depth:
                del active[0]
            seq.append(tok)
            for i, node in enumerate(active):
                child = node.children.get(tok)
                if child is None:
                    child = node.children[tok] = _Node(tok)
                    child.count = 1
                    if node is not root:  # the root's order is never walked
                        node.order.append(child)
                elif node is root:
                    child.count += 1
                else:
                    _increment(node.order, child)
                active[i] = child

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

    def match(self, context):
        """The node of the string ``context``, or None."""
        node = self.root
        for tok in context:
            node = node.children.get(int(tok))
            if node is None:
                return None
        return node

    def tail_nodes(self, seq_id: int, context) -> list:
        """The nodes of the last 1, 2, ... tokens of ``context`` that sequence ``seq_id``
        already holds (its active nodes, where its own tail is the context's tail)."""
        active = self._active.get(seq_id)
        if not active:
            return []
        seq = self.seqs[seq_id]
        n = min(len(active), len(context))
        k = 0
        while k < n and seq[-1 - k] == context[-1 - k]:
            k += 1
        return [active[-m] for m in range(1, k + 1)]

    def speculate(self, context, max_spec_tokens: int, max_spec_factor: float,
                  max_spec_offset: float, min_token_prob: float, known=()):
        """``(token ids, score, match_len)`` as ``SuffixTree::speculate`` (path mode);
        ``known[m - 1]``, where given, is the node of the last m tokens (:meth:`tail_nodes`)."""
        ctx = [int(t) for t in context]
        pmin = _r32(min_token_prob)
        caps = _caps(max_spec_factor, max_spec_offset, len(ctx))
        best, best_score, best_m = [], 0.0, 0
        for m in range(1, len(ctx)):
            node = known[m - 1] if m <= len(known) else self.match(ctx[len(ctx) - m:])
            if node is None:
                break
            max_tokens = max(min(max_spec_tokens, caps[m]), 0)
            toks, score, prob = [], 0.0, 1.0
            while len(toks) < max_tokens and prob >= pmin:
                if not node.order:
                    break
                child = node.order[0]
                # float32 as in C++: a product or quotient of float32 values computed in
                # double and rounded once is the float32 result (53 >= 2 * 24 + 2 bits)
                prob = _r32(prob * _r32(child.count / node.count))
                node = child
                if not prob >= pmin:
                    break
                toks.append(node.token)
                score = _r32(score + prob)
            if score >= best_score:
                best, best_score, best_m = toks, score, m
        return best, best_score, best_m


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
        if self.max_cached_requests != 0:
            if req_id in self.cached:
                self.evict(req_id)
            seq = self._next_seq
            self._next_seq += 1
            self.cached[req_id] = seq
            if self.max_cached_requests > 0:
                while len(self.cached) > self.max_cached_requests:
                    old = next(r for r, s in self.cached.items() if s != seq)
                    self.evict(old)

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
        ctx = [int(t) for t in context][-self.max_tree_depth:]
        local = self.local[req_id]
        d1 = local.speculate(ctx, max_spec_tokens, max_spec_factor, max_spec_offset,
                             min_token_prob, local.tail_nodes(0, ctx))
        seq = self.cached.get(req_id)
        d2 = self.global_tree.speculate(
            ctx, max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob,
            () if seq is None else self.global_tree.tail_nodes(seq, ctx))
        return d1 if d1[1] >= d2[1] else d2
