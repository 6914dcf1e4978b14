"""n-gram (prompt lookup) drafts exactly as vLLM proposes them, on either model runner.

**Model Runner V2** (vLLM 0.33's default for ``method="ngram"`` and ``"ngram_gpu"``:
``VllmConfig.use_v2_model_runner``; ``v1/worker/gpu/spec_decode/ngram/speculator.py``,
``NgramGPUSpeculator``, Triton kernels ``_ngram_scan_kernel`` / ``_ngram_finalize_kernel``):
the longest n in ``[prompt_lookup_min, prompt_lookup_max]`` whose last-n tokens occurred earlier
with a token after them, of those occurrences the **rightmost** ("longest-n, rightmost-pos");
then **always k tokens**: the tokens after the match up to the end of what is known, every
other slot (all k without a match) the last sampled token, "verified as ordinary (rejectable)
drafts" (:meth:`NgramTable.padded_agreement`). Checked against vLLM's own kernels run by
Triton's interpreter (``tests/cases/vllm/0.33.0/ngram_v2.jsonl``, ``oracle/drive_ngram_v2.py``).

**Model Runner V1** (``VLLM_USE_V2_MODEL_RUNNER=0``): vLLM 0.33.0, ``vllm/v1/spec_decode/ngram_proposer.py``,
``_find_longest_matched_ngram_and_propose_tokens`` (the CPU proposer, ``method="ngram"``): over
the tokens so far (prompt + output), find the longest n in ``[prompt_lookup_min,
prompt_lookup_max]`` such that the last n tokens occurred earlier with at least one token after
them; of the occurrences of that n-gram take the **earliest**; propose the k tokens that follow
it, fewer where the sequence ends first (drafts shorter than k near the end of what is known),
and never past ``max_model_len`` (``k = min(k, max_model_len - num_tokens)``; none when that is
<= 0 or when fewer than ``prompt_lookup_min`` tokens exist). The GPU proposer
(``ngram_proposer_gpu.py``, ``NgramGPUKernel._find_first_and_extract_all_n_parallel``,
``method="ngram_gpu"``) applies the same rule (earliest match per n, the longest n that
matched, the tokens after it up to the end) without the ``max_model_len`` cap in the kernel.

:func:`propose` is the one-call rule (a KMP-free restatement, checked against vLLM's own
function in ``tests/cases/vllm/0.33.0/proposals.jsonl``); :class:`NgramTable` answers it for
every prefix of one known sequence at once (a replay knows the whole sequence: every step's
tokens are a prefix of prompt + logged response), in O(N log N) numpy work per n; its
``rightmost=True`` the V2 rule.
"""

from __future__ import annotations

import numpy as np

__all__ = ["propose", "NgramTable"]

_MULT = np.uint64(0x9E3779B97F4A7C15)


def propose(tokens, k: int, *, prompt_lookup_min: int, prompt_lookup_max: int,
            max_model_len: int | None = None) -> np.ndarray:
    """vLLM's n-gram draft for the sequence ``tokens`` (1-D ints) and draft length ``k``.

    Returns
    -------
    ndarray of 0 .. k token ids (int64).
    """
    t = np.asarray(tokens, dtype=np.int64)
    table = NgramTable(t, prompt_lookup_min, prompt_lookup_max)
    return table.draft(t.size, k, max_model_len)


def _first_index(keys: np.ndarray) -> np.ndarray:
    """For each position, the first position holding the same key (a stable sort)."""
    order = np.argsort(keys, kind="stable")
    ks = keys[order]
    new = np.empty(ks.size, dtype=bool)
    new[:1] = True
    np.not_equal(ks[1:], ks[:-1], out=new[1:])
    first = np.empty_like(order)
    first[order] = order[new][np.cumsum(new) - 1]
    return first


def _previous_index(keys: np.ndarray) -> np.ndarray:
    """For each position, the latest earlier position holding the same key (itself when
    there is none): the neighbour before it in a stable sort."""
    order = np.argsort(keys, kind="stable")
    ks = keys[order]
    prev = order.copy()
    same = np.zeros(ks.size, dtype=bool)
    np.equal(ks[1:], ks[:-1], out=same[1:])
    prev[same] = order[np.flatnonzero(same) - 1]
    out = np.empty_like(order)
    out[order] = prev
    return out


class NgramTable:
    """n-gram matches for every prefix of one sequence ``full`` (1-D int64).

    ``start[T]`` is where vLLM's draft for ``full[:T]`` starts (the position after the earliest
    occurrence, ``rightmost=True``: the latest, of the longest matching suffix n-gram), -1
    without a match; :meth:`agreement` / :meth:`padded_agreement` how many of the drafted
    tokens equal ``full[T:]`` (the agreement a replay accepts).
    """

    def __init__(self, full, prompt_lookup_min: int, prompt_lookup_max: int,
                 rightmost: bool = False):
        full = np.ascontiguousarray(full, dtype=np.int64)
        self.full = full
        self.rightmost = rightmost
        pick = _previous_index if rightmost else _first_index
        n_tok = full.size
        lo, hi = int(prompt_lookup_min), int(prompt_lookup_max)
        start = np.full(n_tok + 1, -1, dtype=np.int64)
        # rolling hash of the n-gram ending (exclusive) at p, for p = n .. N
        h = np.zeros(n_tok + 1, dtype=np.uint64)
        x = (full.astype(np.uint64) + np.uint64(1)) * _MULT
        with np.errstate(over="ignore"):
            for n in range(1, hi + 1):
                # h_n[p] = h_{n-1}[p-1] * M + x[p-1]  (n-gram full[p-n:p])
                nh = np.zeros(n_tok + 1, dtype=np.uint64)
                nh[n:] = h[n - 1:n_tok] * _MULT + x[n - 1:] ^ np.uint64(n)
                h = nh
                if n < lo or n > n_tok:
                    continue
                ends = np.arange(n, n_tok + 1)
                first_end = ends[pick(h[n:])]
                # an earlier occurrence (ending before T, so a token follows it)
                ok = first_end < ends
                if ok.any():
                    t_ok, e_ok = ends[ok], first_end[ok]
                    same = self._same(t_ok, e_ok, n)
                    if not same.all():  # a hash collision: settle those prefixes exactly
                        for t in t_ok[~same]:
                            e = self._exact(int(t), n)
                            if e is not None:
                                start[t] = e
                        t_ok, e_ok = t_ok[same], e_ok[same]
                    start[t_ok] = e_ok  # longer n (later in the loop) overwrites shorter
        self.start = start

    def _same(self, t, e, n) -> np.ndarray:
        """Whether ``full[e-n:e] == full[t-n:t]`` for each pair."""
        off = np.arange(-n, 0)
        return (self.full[e[:, None] + off] == self.full[t[:, None] + off]).all(axis=1)

    def _exact(self, t: int, n: int):
        """The earliest (``rightmost``: latest) end e < t with ``full[e-n:e] ==
        full[t-n:t]`` (exact, no hash)."""
        pat = self.full[t - n:t]
        for e in (range(t - 1, n - 1, -1) if self.rightmost else range(n, t)):
            if np.array_equal(self.full[e - n:e], pat):
                return e
        return None

    def draft(self, T: int, k: int, max_model_len: int | None = None) -> np.ndarray:
        """vLLM's draft for the prefix ``full[:T]`` with draft length ``k``."""
        if max_model_len is not None:
            k = min(k, max_model_len - T)
        s = int(self.start[T])
        if k <= 0 or s < 0:
            return self.full[:0]
        return self.full[s:s + min(k, T - s)]

    def lengths(self, T, k: int, max_model_len: int | None = None) -> np.ndarray:
        """Draft lengths for the prefixes ``T`` (array) at draft length ``k``."""
        T = np.asarray(T, dtype=np.int64)
        s = self.start[T]
        kk = np.full(T.shape, k, dtype=np.int64)
        if max_model_len is not None:
            kk = np.minimum(kk, max_model_len - T)
        d = np.minimum(kk, T - s)
        return np.where((s >= 0) & (kk > 0), np.maximum(d, 0), 0)

    def agreement(self, k: int) -> np.ndarray:
        """``run[T]`` for T = 0 .. N: how many leading tokens of ``full[start[T]:]`` equal
        ``full[T:]`` (at most k, and never past the end of ``full``); 0 without a match."""
        n_tok = self.full.size
        T = np.arange(n_tok + 1)
        s = self.start
        run = np.zeros(n_tok + 1, dtype=np.int64)
        alive = s >= 0
        for j in range(k):
            a, b = s + j, T + j
            ok = alive & (b < n_tok) & (a < n_tok)
            eq = np.zeros(n_tok + 1, dtype=bool)
            eq[ok] = self.full[a[ok]] == self.full[b[ok]]
            alive = eq
            run += alive
            if not alive.any():
                break
        return run

    def padded_draft(self, T: int, k: int) -> np.ndarray:
        """Model Runner V2's k draft tokens for the prefix ``full[:T]`` (T >= 1): the tokens
        after the match while there are any, the last token ``full[T-1]`` in every other slot."""
        s = int(self.start[T])
        out = np.full(k, self.full[T - 1], dtype=np.int64)
        if s >= 0:
            n = min(k, T - s)
            out[:n] = self.full[s:s + n]
        return out

    def padded_agreement(self, k: int) -> np.ndarray:
        """:meth:`agreement` of :meth:`padded_draft`: ``run[T]`` for T = 0 .. N, the leading
        drafted tokens equal to ``full[T:]`` (at most k, never past the end of ``full``; 0 at
        T = 0)."""
        n_tok = self.full.size
        T = np.arange(n_tok + 1)
        s = self.start
        last = self.full[np.maximum(T - 1, 0)]
        run = np.zeros(n_tok + 1, dtype=np.int64)
        alive = T >= 1
        for j in range(k):
            src = s + j
            from_match = (s >= 0) & (src < T)
            tok = np.where(from_match, self.full[np.minimum(src, n_tok - 1)], last)
            b = T + j
            ok = alive & (b < n_tok)
            eq = np.zeros(n_tok + 1, dtype=bool)
            eq[ok] = tok[ok] == self.full[b[ok]]
            alive = eq
            run += alive
            if not alive.any():
                break
        return run
