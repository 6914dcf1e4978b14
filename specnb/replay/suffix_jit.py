"""The ``"numba"`` suffix backend: :mod:`specnb.replay.suffix`'s trees in flat arrays, compiled.

The same rule as :class:`~specnb.replay.suffix.SuffixCache` (arctic-inference 0.3.0's
``SuffixDecodingCache``, restated there), statement for statement, so the same drafts and
scores bit for bit (float32 products and sums rounded as there; checked against the compiled
original's drafts in ``tests/cases/vllm/0.33.0/proposals.jsonl``), in a layout numba compiles:

* a tree is a tuple of arrays: ``nd[node]`` = (count, token, depth, ref seq, ref pos, first
  child, next sibling, previous sibling) (int32; node 0 the root; ``ref seq`` -1: no implicit
  chain; the sibling list is the C++ sibling order, its head's ``previous`` the tail; the
  root's children are not linked, as the Python tree keeps no order for them); ``hk``/``hv``
  an open-addressing hash (linear probing, backward-shift deletion) from (parent, token) to
  child; ``arena`` the sequences' tokens (each sequence contiguous; one extended after
  another moves to the end); ``sq[seq]`` = (start, length, live suffixes); ``act[seq]`` its
  live suffixes, longest first; ``meta`` = (nodes used, hash entries, arena used, free-list
  head, max depth, hash limit);
* capacity is checked before each token (at most 2 x live + 1 new nodes); where it runs out
  the compiled call returns and the caller grows the arrays and calls again (every operation
  resumes where it stopped);
* :meth:`NumbaCache.steps` runs :func:`specnb.replay.step.suffix_steps`' whole loop for one
  request in one compiled call (the same steps as stepping the cache's methods).

numba is optional (``pip install 'specnb[fast]'``); :func:`available` says whether it
imports. No torch.
"""

from __future__ import annotations

import numpy as np

from .suffix import _caps, _r32, admit

try:  # pragma: no branch
    import numba as _nb

    _njit = _nb.njit(cache=True, nogil=True)
    _HAVE = True
except ImportError:  # pragma: no cover - numba not installed
    _nb = None
    _HAVE = False

    def _njit(f):
        return f

__all__ = ["NumbaCache", "available", "numba_version"]

# nd columns
_CNT, _TOK, _DEP, _RSQ, _RPS, _FST, _NXT, _PRV = 0, 1, 2, 3, 4, 5, 6, 7
# meta slots
_M_NODES, _M_HASH, _M_ARENA, _M_FREE, _M_DEPTH, _M_HLIM = 0, 1, 2, 3, 4, 5
_MUL = np.uint64(0x9E3779B97F4A7C15)
_SH = np.uint64(32)
_LOW = np.int64(0xFFFFFFFF)
# the depth column's flag: the node's children are in the hash (the root always; a node for
# good from its (_SMALL + 1)-th child on); below that they are found along the sibling list
_BIG = np.int32(1 << 30)
_DMASK = np.int32((1 << 30) - 1)
_SMALL = 4


def available() -> bool:
    """Whether numba imports here (the ``"numba"`` backend runs)."""
    return _HAVE


def numba_version() -> str | None:
    """numba's version, None where it does not import."""
    return _nb.__version__ if _HAVE else None


# --- hash: (parent, token) -> child -------------------------------------------------------

@_njit
def _key(node, tok):
    return (np.int64(node) << 32) | (np.int64(tok) & _LOW)


@_njit
def _home(key, mask):
    return np.int64((np.uint64(key) * _MUL) >> _SH) & mask


@_njit
def _gkey(node, count):
    """The key of the head of ``node``'s group of children with ``count`` (hashed nodes)."""
    return ((np.int64(node) | np.int64(1 << 31)) << 32) | np.int64(count)


@_njit
def _getk(hk, hv, key):
    mask = hk.size - 1
    i = _home(key, mask)
    while True:
        k = hk[i]
        if k == key:
            return hv[i]
        if k == -1:
            return -1
        i = (i + 1) & mask


@_njit
def _setk(hk, hv, meta, key, val):
    mask = hk.size - 1
    i = _home(key, mask)
    while True:
        k = hk[i]
        if k == key:
            hv[i] = val
            return
        if k == -1:
            break
        i = (i + 1) & mask
    hk[i] = key
    hv[i] = val
    meta[_M_HASH] += 1


@_njit
def _delk(hk, hv, meta, key):
    mask = hk.size - 1
    i = _home(key, mask)
    while hk[i] != key:
        if hk[i] == -1:
            return
        i = (i + 1) & mask
    j = i
    while True:  # backward shift: no tombstones
        j = (j + 1) & mask
        kj = hk[j]
        if kj == -1:
            break
        h = _home(kj, mask)
        if i <= j:
            stay = i < h and h <= j
        else:
            stay = i < h or h <= j
        if stay:
            continue
        hk[i] = kj
        hv[i] = hv[j]
        i = j
    hk[i] = -1
    meta[_M_HASH] -= 1


@_njit
def _get(hk, hv, node, tok):
    return _getk(hk, hv, _key(node, tok))


@_njit
def _put(hk, hv, meta, node, tok, val):
    _setk(hk, hv, meta, _key(node, tok), val)


@_njit
def _del(hk, hv, meta, node, tok):
    _delk(hk, hv, meta, _key(node, tok))


@_njit
def _find(nd, hk, hv, node, tok):
    """The child of ``node`` with token ``tok``; absent: -1 - (its number of children) for
    a node whose children are not hashed, -1 for one whose are."""
    if nd[node, _DEP] & _BIG:
        return _get(hk, hv, node, tok)
    c = nd[node, _FST]
    n = 0
    while c != -1:
        if nd[c, _TOK] == tok:
            return c
        n += 1
        c = nd[c, _NXT]
    return -1 - n


@_njit
def _link(nd, hk, hv, meta, node, c, tok, nsmall):
    """A new child ``c`` of ``node`` (not the root), which held ``nsmall`` children where
    they were not hashed: last in the sibling order, and in the hash where its siblings are
    (all of them from the (_SMALL + 1)-th on)."""
    v = nd[node, _DEP]
    if v & _BIG:
        h = nd[node, _FST]
        if h == -1 or nd[nd[h, _PRV], _CNT] != 1:  # the first of count 1
            _setk(hk, hv, meta, _gkey(node, 1), c)
        _append(nd, node, c)
        _put(hk, hv, meta, node, tok, c)
        return
    _append(nd, node, c)
    if nsmall >= _SMALL:  # the children into the hash, and each count group's head
        nd[node, _DEP] = v | _BIG
        x = nd[node, _FST]
        while x != -1:
            _put(hk, hv, meta, node, nd[x, _TOK], x)
            if x == nd[node, _FST] or nd[nd[x, _PRV], _CNT] != nd[x, _CNT]:
                _setk(hk, hv, meta, _gkey(node, nd[x, _CNT]), x)
            x = nd[x, _NXT]


@_njit
def _rehash(hk, hv, nk, nv):
    mask = nk.size - 1
    for i in range(hk.size):
        k = hk[i]
        if k != -1:
            j = _home(k, mask)
            while nk[j] != -1:
                j = (j + 1) & mask
            nk[j] = k
            nv[j] = hv[i]


# --- nodes and the sibling order -----------------------------------------------------------

@_njit
def _new(nd, meta, tok, depth, count, rseq, rpos):
    x = meta[_M_FREE]
    if x >= 0:
        meta[_M_FREE] = nd[x, _NXT]
    else:
        x = meta[_M_NODES]
        meta[_M_NODES] = x + 1
    nd[x, _CNT] = count
    nd[x, _TOK] = tok
    nd[x, _DEP] = depth
    nd[x, _RSQ] = rseq
    nd[x, _RPS] = rpos
    nd[x, _FST] = -1
    nd[x, _NXT] = -1
    nd[x, _PRV] = -1
    return x


@_njit
def _append(nd, p, c):
    h = nd[p, _FST]
    nd[c, _NXT] = -1
    if h == -1:
        nd[p, _FST] = c
        nd[c, _PRV] = c
    else:
        t = nd[h, _PRV]
        nd[t, _NXT] = c
        nd[c, _PRV] = t
        nd[h, _PRV] = c


@_njit
def _unlink(nd, p, c):
    h = nd[p, _FST]
    pr = nd[c, _PRV]
    nx = nd[c, _NXT]
    if c == h:
        nd[p, _FST] = nx
        if nx != -1:
            nd[nx, _PRV] = pr
    else:
        nd[pr, _NXT] = nx
        if nx != -1:
            nd[nx, _PRV] = pr
        else:
            nd[h, _PRV] = pr


@_njit
def _insert_before(nd, p, c, b):
    pb = nd[b, _PRV]
    nd[c, _NXT] = b
    nd[c, _PRV] = pb
    nd[b, _PRV] = c
    if b == nd[p, _FST]:
        nd[p, _FST] = c
    else:
        nd[pb, _NXT] = c


@_njit
def _insert_after(nd, p, c, a):
    nx = nd[a, _NXT]
    nd[a, _NXT] = c
    nd[c, _PRV] = a
    nd[c, _NXT] = nx
    if nx != -1:
        nd[nx, _PRV] = c
    else:
        nd[nd[p, _FST], _PRV] = c


@_njit
def _increment(nd, p, c):
    """suffix._increment (``c`` is not the head)."""
    k = nd[c, _CNT]
    pr = nd[c, _PRV]
    cc = nd[pr, _CNT]
    if cc <= k + 1:
        h = pr
        head = nd[p, _FST]
        while h != head and nd[nd[h, _PRV], _CNT] == cc:
            h = nd[h, _PRV]
        _unlink(nd, p, c)
        _insert_before(nd, p, c, h)
    nd[c, _CNT] = k + 1


@_njit
def _increment_big(nd, hk, hv, meta, p, c):
    """_increment for a hashed node ``p`` (``c`` may be the head): the same moves, the
    group's head from the hash instead of a walk along the group, the heads kept."""
    k = nd[c, _CNT]
    first = nd[p, _FST]
    nx = nd[c, _NXT]
    pc = nd[nd[c, _PRV], _CNT] if c != first else -1
    if c == first or pc != k:  # c heads group k: the next one does now, if any
        if nx != -1 and nd[nx, _CNT] == k:
            _setk(hk, hv, meta, _gkey(p, k), nx)
        else:
            _delk(hk, hv, meta, _gkey(p, k))
    if c != first and pc <= k + 1:
        h = _getk(hk, hv, _gkey(p, pc))
        _unlink(nd, p, c)
        _insert_before(nd, p, c, h)
        if pc == k + 1:  # before the head of k + 1: its head
            _setk(hk, hv, meta, _gkey(p, k + 1), c)
        elif _getk(hk, hv, _gkey(p, k + 1)) == -1:  # behind group k + 1, or none there
            _setk(hk, hv, meta, _gkey(p, k + 1), c)
    else:  # no move: nothing ahead counts k + 1
        _setk(hk, hv, meta, _gkey(p, k + 1), c)
    nd[c, _CNT] = k + 1


@_njit
def _decrement_big(nd, hk, hv, meta, p, c):
    """_decrement for a hashed node ``p``, keeping its groups' heads."""
    k = nd[c, _CNT]
    first = nd[p, _FST]
    nx = nd[c, _NXT]
    head_k = c == first or nd[nd[c, _PRV], _CNT] != k
    if nx != -1 and nd[nx, _CNT] == k:
        if head_k:
            _setk(hk, hv, meta, _gkey(p, k), nx)
        last = nx
        j = nd[nx, _NXT]
        while j != -1 and nd[j, _CNT] == k:
            last = j
            j = nd[j, _NXT]
        _unlink(nd, p, c)
        _insert_after(nd, p, c, last)
    elif head_k:
        _delk(hk, hv, meta, _gkey(p, k))
    _setk(hk, hv, meta, _gkey(p, k - 1), c)  # ahead of the rest of group k - 1
    nd[c, _CNT] = k - 1


@_njit
def _decrement(nd, p, c):
    """suffix._decrement."""
    k = nd[c, _CNT]
    nx = nd[c, _NXT]
    if nx != -1 and nd[nx, _CNT] == k:
        last = nx
        j = nd[nx, _NXT]
        while j != -1 and nd[j, _CNT] == k:
            last = j
            j = nd[j, _NXT]
        _unlink(nd, p, c)
        _insert_after(nd, p, c, last)
    nd[c, _CNT] = k - 1


# --- SuffixTree.extend / remove ------------------------------------------------------------

@_njit
def _extend(tree, s, toks, lo, hi):
    """Append ``toks[lo:hi]`` to sequence ``s`` (SuffixTree.extend); returns the index it
    reached (< hi: out of room, grow and call again)."""
    nd, hk, hv, arena, sq, act, meta = tree
    maxd = meta[_M_DEPTH]
    start = sq[s, 0]
    ln = sq[s, 1]
    if start + ln != meta[_M_ARENA]:  # another sequence grew after it: move it to the end
        ns = meta[_M_ARENA]
        for i in range(ln):
            arena[ns + i] = arena[start + i]
        start = ns
        sq[s, 0] = ns
        meta[_M_ARENA] = ns + ln
    na = sq[s, 2]
    ncap = nd.shape[0]
    for t in range(lo, hi):
        if (meta[_M_NODES] + 2 * na + 1 > ncap
                or meta[_M_HASH] + (2 * _SMALL + 4) * na + 1 > meta[_M_HLIM]):
            sq[s, 2] = na
            return t
        tok = toks[t]
        arena[start + ln] = tok
        ln += 1
        sq[s, 1] = ln
        meta[_M_ARENA] = start + ln
        nl = 0
        for a in range(na):
            node = act[s, a]
            d = nd[node, _DEP] & _DMASK
            if d >= maxd:
                continue
            rs = nd[node, _RSQ]
            if rs != -1:  # make the implicit chain's first node explicit
                rp = nd[node, _RPS]
                nd[node, _RSQ] = -1
                if rp < sq[rs, 1]:
                    ct = arena[sq[rs, 0] + rp]
                    c = _new(nd, meta, ct, d + 1, 1, rs, rp + 1)
                    _append(nd, node, c)  # its first child: not hashed
            child = _find(nd, hk, hv, node, tok)
            if child < 0:
                ns = -1 - child
                child = _new(nd, meta, tok, d + 1, 1, s, ln)
                _link(nd, hk, hv, meta, node, child, tok, ns)
                continue
            if nd[node, _DEP] & _BIG:
                _increment_big(nd, hk, hv, meta, node, child)
            elif nd[node, _FST] == child:  # the head stays the head
                nd[child, _CNT] += 1
            else:
                _increment(nd, node, child)
            act[s, nl] = child  # nl <= a: overwrites only entries already read
            nl += 1
        nd[0, _CNT] += 1
        child = _get(hk, hv, 0, tok)
        if child == -1:
            child = _new(nd, meta, tok, 1, 1, s, ln)
            _put(hk, hv, meta, 0, tok, child)
        else:
            nd[child, _CNT] += 1
            act[s, nl] = child
            nl += 1
        na = nl
    sq[s, 2] = na
    return hi


@_njit
def _free_subtree(tree, x):
    nd, hk, hv, arena, sq, act, meta = tree
    stack = [x]
    while len(stack):
        y = stack.pop()
        c = nd[y, _FST]
        while c != -1:
            if nd[y, _DEP] & _BIG:
                _del(hk, hv, meta, y, nd[c, _TOK])
                _delk(hk, hv, meta, _gkey(y, nd[c, _CNT]))
            stack.append(c)
            c = nd[c, _NXT]
        nd[y, _NXT] = meta[_M_FREE]
        meta[_M_FREE] = y


@_njit
def _remove(tree, s):
    """SuffixTree.remove of sequence ``s`` (its tokens stay in the arena)."""
    nd, hk, hv, arena, sq, act, meta = tree
    maxd = meta[_M_DEPTH]
    start = sq[s, 0]
    ln = sq[s, 1]
    for j in range(ln):
        nd[0, _CNT] -= 1
        node = 0
        for t in range(j, min(j + maxd, ln)):
            rs = nd[node, _RSQ]
            if rs != -1:
                if rs == s and nd[node, _RPS] - (nd[node, _DEP] & _DMASK) == j:
                    nd[node, _RSQ] = -1
                break
            tok = arena[start + t]
            child = _find(nd, hk, hv, node, tok)
            if child < 0:
                break
            if nd[child, _CNT] > 1:
                if node == 0:
                    nd[child, _CNT] -= 1
                elif nd[node, _DEP] & _BIG:
                    _decrement_big(nd, hk, hv, meta, node, child)
                else:
                    _decrement(nd, node, child)
            else:
                if node != 0 and nd[node, _DEP] & _BIG:
                    _del(hk, hv, meta, node, tok)
                    if _getk(hk, hv, _gkey(node, 1)) == child:  # group 1 loses its head
                        nx = nd[child, _NXT]
                        if nx != -1 and nd[nx, _CNT] == 1:
                            _setk(hk, hv, meta, _gkey(node, 1), nx)
                        else:
                            _delk(hk, hv, meta, _gkey(node, 1))
                elif node == 0:
                    _del(hk, hv, meta, node, tok)
                if node != 0:
                    _unlink(nd, node, child)
                _free_subtree(tree, child)
                break
            node = child
    sq[s, 2] = 0


# --- SuffixTree.speculate / SuffixCache.speculate -----------------------------------------

@_njit
def _tail_count(tree, s, ctx, clo, chi):
    """len(SuffixTree.tail_nodes(s, ctx[clo:chi]))."""
    nd, hk, hv, arena, sq, act, meta = tree
    na = sq[s, 2]
    n = min(na, chi - clo)
    end = sq[s, 0] + sq[s, 1]
    k = 0
    while k < n and arena[end - 1 - k] == ctx[chi - 1 - k]:
        k += 1
    return k


@_njit
def _spec_tree(tree, s, nknown, unique_after, ctx, clo, chi, max_spec, caps, pmin, floor,
               out, cur, at_n, at_k):
    """SuffixTree.speculate on ``ctx[clo:chi]``, ``known`` = the last ``nknown`` live
    suffixes of sequence ``s``; the draft into ``out``: (length, score, match_len)."""
    nd, hk, hv, arena, sq, act, meta = tree
    maxd = meta[_M_DEPTH]
    n = chi - clo
    nat = min(nknown, n - 1)
    if nat < 0:
        nat = 0
    na = sq[s, 2] if s >= 0 else 0
    for m in range(1, nat + 1):
        at_n[m - 1] = act[s, na - m]
        at_k[m - 1] = -1
    if not unique_after:
        for m in range(nat + 1, n):
            node = 0
            k = -1
            ok = True
            for i in range(chi - m, chi):
                tok = ctx[i]
                if k == -1:
                    if nd[node, _RSQ] == -1:
                        node = _find(nd, hk, hv, node, tok)
                        if node < 0:
                            ok = False
                            break
                        continue
                    k = 0
                rs = nd[node, _RSQ]
                pos = nd[node, _RPS]
                if ((nd[node, _DEP] & _DMASK) + k >= maxd or pos + k >= sq[rs, 1]
                        or arena[sq[rs, 0] + pos + k] != tok):
                    ok = False
                    break
                k += 1
            if not ok:
                break
            at_n[m - 1] = node
            at_k[m - 1] = k
            nat = m
    best_len, best_score, best_m = 0, 0.0, 0
    for m in range(nat, 0, -1):
        node = at_n[m - 1]
        k = at_k[m - 1]
        max_tokens = min(max_spec, caps[m])
        if best_m or floor >= 0.0:
            if max_tokens <= 0:
                continue
            top = max(best_score, floor)
            if max_tokens * 1.000001 < top:  # the bound below is at most max_tokens
                continue
            if k == -1:
                f = nd[node, _FST]
                if f != -1:
                    bound = max_tokens * nd[f, _CNT] / nd[node, _CNT]
                else:
                    bound = float(max_tokens) if nd[node, _RSQ] != -1 else 0.0
            else:
                bound = float(max_tokens)
            if bound * 1.000001 < top:
                continue
        elif max_tokens <= 0:
            best_m = m
            continue
        nt, score, prob = 0, 0.0, 1.0
        while nt < max_tokens and prob >= pmin:
            if k == -1:
                f = nd[node, _FST]
                if f != -1:
                    q = np.float64(np.float32(nd[f, _CNT] / nd[node, _CNT]))
                    prob = np.float64(np.float32(prob * q))
                    node = f
                    if not prob >= pmin:
                        break
                    cur[nt] = nd[f, _TOK]
                    nt += 1
                    score = np.float64(np.float32(score + prob))
                    continue
                if nd[node, _RSQ] == -1:
                    break
                q = np.float64(np.float32(1.0 / nd[node, _CNT]))
                prob = np.float64(np.float32(prob * q))
                k = 0
                if not prob >= pmin:
                    break
            rs = nd[node, _RSQ]
            pos = nd[node, _RPS]
            if (nd[node, _DEP] & _DMASK) + k >= maxd or pos + k >= sq[rs, 1]:
                break
            cur[nt] = arena[sq[rs, 0] + pos + k]
            nt += 1
            score = np.float64(np.float32(score + prob))
            k += 1
        if score > best_score or not best_m:
            for i in range(nt):
                out[i] = cur[i]
            best_len, best_score, best_m = nt, score, m
    return best_len, best_score, best_m


@_njit
def _spec_cache(local, glob, gseq, ctx, clo, chi, max_spec, caps, pmin, out, cur, at_n,
                at_k, out2):
    """SuffixCache.speculate on ``ctx[clo:chi]`` (already the last max depth tokens);
    ``gseq`` the request's global sequence (-1: not cached)."""
    n = chi - clo
    lnd, lhk, lhv, larena, lsq, lact, lmeta = local
    lln = lsq[0, 1]
    lend = lsq[0, 0] + lln
    tail = lln >= n
    if tail:
        for i in range(n):
            if larena[lend - n + i] != ctx[clo + i]:
                tail = False
                break
    nk = _tail_count(local, 0, ctx, clo, chi) if tail else 0
    l1, s1, m1 = _spec_tree(local, 0, nk, tail, ctx, clo, chi, max_spec, caps, pmin, -1.0,
                            out, cur, at_n, at_k)
    if s1 >= max_spec:
        return l1, s1, m1
    nk = 0
    unique = False
    if gseq >= 0:
        gsq = glob[4]
        garena = glob[3]
        nk = _tail_count(glob, gseq, ctx, clo, chi)
        gln = gsq[gseq, 1]
        if nk < min(gln, n):
            gend = gsq[gseq, 0] + gln
            unique = True
            for i in range(nk + 1):
                if garena[gend - 1 - i] != ctx[chi - 1 - i]:
                    unique = False
                    break
    l2, s2, m2 = _spec_tree(glob, gseq, nk, unique, ctx, clo, chi, max_spec, caps, pmin, s1,
                            out2, cur, at_n, at_k)
    if s1 >= s2:
        return l1, s1, m1
    for i in range(l2):
        out[i] = out2[i]
    return l2, s2, m2


# --- the stepping loop (step._suffix_steps) ------------------------------------------------

@_njit
def _ensure(local, glob, gseq, full, prompt_len, target):
    """Local sequence up to ``full[:target]``, the global one up to ``full[prompt_len:
    target]``; 0 done, 1 / 2: the local / global tree is out of room."""
    lsq = local[4]
    have = lsq[0, 1]
    if have < target:
        if _extend(local, 0, full, have, target) < target:
            return 1
    if gseq >= 0:
        gsq = glob[4]
        gh = prompt_len + gsq[gseq, 1]
        if gh < target:
            if _extend(glob, gseq, full, gh, target) < target:
                return 2
    return 0


@_njit
def _steps(local, glob, gseq, full, prompt_len, gl, order, cap, caps, pmin, nxt, rec, nrec,
           bufs, at_n, at_k):
    """One request's steps for every gamma ``gl`` (step._suffix_steps); resumable: returns
    0 when done, 1 / 2 when the local / global tree needs room (grow, call again)."""
    n_tok = full.size
    lsq = local[4]
    depth = local[6][_M_DEPTH]
    have0 = min(prompt_len + 1, n_tok)
    st = _ensure(local, glob, gseq, full, prompt_len, max(have0, lsq[0, 1]))
    if st:
        return st
    draft = bufs[0]
    while True:
        T = n_tok
        for j in range(gl.size):
            if nxt[j] < T:
                T = nxt[j]
        if T >= n_tok:
            break
        st = _ensure(local, glob, gseq, full, prompt_len, T)
        if st:
            return st
        clo = T - depth if T > depth else 0
        dlen = -1
        for jj in range(order.size):
            j = order[jj]
            if nxt[j] != T:
                continue
            k = min(gl[j], cap - T)
            if k <= 0:
                dlen = 0
            elif dlen == -1 or dlen > k:
                dlen = _spec_cache(local, glob, gseq, full, clo, T, k, caps, pmin, draft,
                                   bufs[1], at_n, at_k, bufs[2])[0]
            a = 0
            while a < dlen:
                if T + a >= n_tok or draft[a] != full[T + a]:
                    break
                a += 1
            i = nrec[j]
            rec[j, 0, i] = T
            rec[j, 1, i] = dlen
            rec[j, 2, i] = a
            nrec[j] = i + 1
            nxt[j] = T + a + 1
    return _ensure(local, glob, gseq, full, prompt_len, n_tok)


# --- the arrays and the cache --------------------------------------------------------------

class _Tree:
    """One tree's arrays (see the module docstring); ``t`` the tuple the compiled functions
    take, rebuilt after each growth."""

    def __init__(self, max_depth: int, nodes: int = 1 << 12, seqs: int = 1,
                 arena: int = 1 << 12):
        self.max_depth = int(max_depth)
        self.nd = np.empty((nodes, 8), dtype=np.int32)
        self.hk = np.full(_pow2(2 * nodes), -1, dtype=np.int64)
        self.hv = np.empty(self.hk.size, dtype=np.int32)
        self.arena = np.empty(arena, dtype=np.int32)
        self.sq = np.zeros((seqs, 3), dtype=np.int64)
        self.act = np.empty((seqs, self.max_depth + 1), dtype=np.int32)
        self.meta = np.array([1, 0, 0, -1, self.max_depth, self.hk.size // 2], dtype=np.int64)
        self.nd[0] = (0, -1, _BIG, -1, 0, -1, -1, -1)
        self._pack()

    def _pack(self):
        self.t = (self.nd, self.hk, self.hv, self.arena, self.sq, self.act, self.meta)

    def reset(self) -> None:
        """Empty (the root alone, one empty sequence), keeping the arrays."""
        self.hk.fill(-1)
        self.sq[:] = 0
        self.meta[:] = (1, 0, 0, -1, self.max_depth, self.hk.size // 2)
        self.nd[0] = (0, -1, _BIG, -1, 0, -1, -1, -1)

    def grow(self) -> None:
        """Twice the nodes and/or hash entries where fewer than one token's worst case (2 x
        max depth + 1 new nodes) are left."""
        need = (2 * _SMALL + 4) * self.max_depth + 1
        used = int(self.meta[_M_NODES])
        if used + need > self.nd.shape[0]:
            nd = np.empty((2 * self.nd.shape[0] + need, 8), dtype=np.int32)
            nd[:used] = self.nd[:used]
            self.nd = nd
        if int(self.meta[_M_HASH]) + need > self.meta[_M_HLIM]:
            nk = np.full(_pow2(2 * self.hk.size + 2 * need), -1, dtype=np.int64)
            nv = np.empty(nk.size, dtype=np.int32)
            _rehash(self.hk, self.hv, nk, nv)
            self.hk, self.hv = nk, nv
            self.meta[_M_HLIM] = nk.size // 2
        self._pack()

    def room(self, seq: int, tokens: int) -> None:
        """Room in the arena for ``tokens`` more of ``seq`` (moved to the end) and a row
        for ``seq``."""
        if seq >= self.sq.shape[0]:
            n = max(2 * self.sq.shape[0], seq + 1)
            sq = np.zeros((n, 3), dtype=np.int64)
            sq[:self.sq.shape[0]] = self.sq
            act = np.empty((n, self.act.shape[1]), dtype=np.int32)
            act[:self.act.shape[0]] = self.act
            self.sq, self.act = sq, act
        need = int(self.meta[_M_ARENA]) + int(self.sq[seq, 1]) + int(tokens)
        if need > self.arena.size:
            arena = np.empty(max(2 * self.arena.size, need), dtype=np.int32)
            arena[:self.meta[_M_ARENA]] = self.arena[:self.meta[_M_ARENA]]
            self.arena = arena
        self._pack()

    def extend(self, seq: int, toks: np.ndarray) -> None:
        self.room(seq, toks.size)
        lo = 0
        while lo < toks.size:
            lo = _extend(self.t, seq, toks, lo, toks.size)
            if lo < toks.size:
                self.grow()


def _pow2(n: int) -> int:
    return 1 << max(4, (int(n) - 1).bit_length())


def _ids(tokens) -> np.ndarray:
    """Token ids as int32 (ValueError outside int32's range)."""
    a = np.asarray(tokens)
    if a.size and (a.dtype.kind not in "iu" or a.min() < -(1 << 31) or a.max() >= 1 << 31):
        a = np.asarray(tokens, dtype=np.int64)
        if a.min() < -(1 << 31) or a.max() >= 1 << 31:
            raise ValueError("the numba suffix backend takes token ids below 2**31")
    return np.ascontiguousarray(a, dtype=np.int32)


class NumbaCache:
    """:class:`~specnb.replay.suffix.SuffixCache`'s methods and results on compiled array
    trees (the ``"numba"`` backend), plus :meth:`steps`: a request's whole replay in one
    compiled call.

    Raises
    ------
    ImportError
        numba does not import.
    """

    def __init__(self, max_tree_depth: int = 24, max_cached_requests: int = 10000):
        if not _HAVE:
            raise ImportError("the numba suffix backend needs numba (pip install numba)")
        self.max_tree_depth = int(max_tree_depth)
        self.max_cached_requests = int(max_cached_requests)
        self.glob = _Tree(self.max_tree_depth, nodes=1 << 14, seqs=64, arena=1 << 14)
        self.local = {}
        self.cached = {}  # req_id -> seq_id, insertion (FIFO) order
        self._next_seq = 0
        self._scratch = None
        d = self.max_tree_depth
        self._at_n = np.empty(d + 1, dtype=np.int32)
        self._at_k = np.empty(d + 1, dtype=np.int32)
        self._bufs = np.empty((3, 64), dtype=np.int32)

    def _start(self, req_id) -> None:
        """SuffixCache.start_request's global part (the cached responses, FIFO eviction)."""
        seq = admit(self, req_id)
        if seq is not None:
            self.glob.room(seq, 0)  # its row

    def start_request(self, req_id, prompt) -> None:
        if req_id in self.local:
            raise ValueError(f"request {req_id!r} is already active")
        tree = self.local[req_id] = _Tree(self.max_tree_depth, nodes=256, arena=256)
        tree.extend(0, _ids(prompt))
        self._start(req_id)

    def evict(self, req_id) -> None:
        seq = self.cached.pop(req_id)
        _remove(self.glob.t, seq)

    def stop_request(self, req_id) -> None:
        del self.local[req_id]

    def add_active_response(self, req_id, tokens) -> None:
        toks = _ids(tokens)
        self.local[req_id].extend(0, toks)
        if req_id in self.cached:
            self.glob.extend(self.cached[req_id], toks)

    def _buf(self, k: int) -> None:
        if k > self._bufs.shape[1]:
            self._bufs = np.empty((3, k), dtype=np.int32)

    def speculate(self, req_id, context, max_spec_tokens: int, max_spec_factor: float = 1.0,
                  max_spec_offset: float = 0.0, min_token_prob: float = 0.1):
        """``(token ids, score, match_len)`` as :meth:`SuffixCache.speculate`."""
        ctx = _ids(context)[-self.max_tree_depth:]
        local = self.local[req_id]
        caps = np.array(_caps(max_spec_factor, max_spec_offset, self.max_tree_depth),
                        dtype=np.int64)
        k = int(max_spec_tokens)
        self._buf(k)
        gseq = self.cached.get(req_id, -1)
        n, score, m = _spec_cache(local.t, self.glob.t, gseq, ctx, 0, ctx.size, k, caps,
                                  _r32(min_token_prob), self._bufs[0], self._bufs[1],
                                  self._at_n, self._at_k, self._bufs[2])
        return self._bufs[0, :n].tolist(), float(score), int(m)

    def steps(self, req_id, full, prompt_len: int, gammas, *, max_spec_factor: float = 1.0,
              min_token_prob: float = 0.1, max_model_len: int | None = None) -> dict:
        """:func:`specnb.replay.step.suffix_steps` for this cache: the request started,
        stepped and stopped in one compiled loop (the same ``{gamma: (T, d, a)}``)."""
        if req_id in self.local:
            raise ValueError(f"request {req_id!r} is already active")
        full = _ids(full)
        n_tok = full.size
        prompt_len = int(prompt_len)
        d = self.max_tree_depth
        loc = self._scratch
        if loc is None:
            loc = self._scratch = _Tree(d, nodes=1 << 15, arena=max(n_tok, 1 << 12))
        else:
            loc.reset()
        loc.room(0, n_tok)
        self._start(req_id)
        gseq = self.cached.get(req_id, -1)
        if gseq >= 0:
            self.glob.room(gseq, max(n_tok - prompt_len, 0))
        gl = np.array([int(g) for g in gammas], dtype=np.int64)
        order = np.argsort(-gl, kind="stable").astype(np.int64)
        cap = (1 << 62) if max_model_len is None else int(max_model_len) - 1
        caps = np.array(_caps(max_spec_factor, 0.0, d), dtype=np.int64)
        self._buf(int(gl.max()) if gl.size else 1)
        nxt = np.full(gl.size, prompt_len + 1, dtype=np.int64)
        rec = np.empty((gl.size, 3, max(n_tok - prompt_len, 1)), dtype=np.int64)
        nrec = np.zeros(gl.size, dtype=np.int64)
        pmin = _r32(min_token_prob)
        while True:
            st = _steps(loc.t, self.glob.t, gseq, full, prompt_len, gl, order, cap, caps,
                        pmin, nxt, rec, nrec, self._bufs, self._at_n, self._at_k)
            if st == 0:
                break
            (loc if st == 1 else self.glob).grow()
        return {int(g): tuple(rec[j, c, :nrec[j]].copy() for c in range(3))
                for j, g in enumerate(gl)}
