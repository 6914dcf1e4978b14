"""specnb.replay.ngram: vLLM's n-gram rule on hand-made sequences (longest n wins, its earliest
occurrence, shorter drafts near the end, the max_model_len cap) and a transcription of vLLM's
KMP scan (vllm/v1/spec_decode/ngram_proposer.py, 0.33.0) on random sequences."""

import numpy as np
import pytest

from specnb.replay import ngram


def _vllm_kmp(tokens, lo, hi, max_model_len, k):
    """_find_longest_matched_ngram_and_propose_tokens, line for line, without numba."""
    total = len(tokens)
    if total < lo:
        return []
    k = min(k, max_model_len - total)
    if k <= 0:
        return []
    t = tokens[::-1]
    lps = [0] * hi
    longest, position, prev, i = 0, 0, 0, 1
    while i < total:
        if t[prev] == t[i]:
            prev += 1
            if prev >= longest:
                longest, position = prev, i
            if i < hi:
                lps[i] = prev
            if prev == hi:
                prev = lps[hi - 1]
            i += 1
        elif prev != 0:
            prev = lps[prev - 1]
        else:
            i += 1
    if longest < lo:
        return []
    start = total - 1 - position + longest
    return list(tokens[start:start + min(k, total - start)])


def test_longest_n_then_earliest_occurrence():
    # suffix "1 2": "1 2" occurs at 0 and 4; "9 1 2" (n = 3) occurs at 3 -> the longest wins
    seq = [1, 2, 7, 9, 1, 2, 8, 9, 1, 2]
    assert ngram.propose(seq, 3, prompt_lookup_min=2, prompt_lookup_max=3).tolist() == [8, 9, 1]
    # with n <= 2 only: the earliest "1 2" (at 0) -> what follows it
    assert ngram.propose(seq, 3, prompt_lookup_min=2, prompt_lookup_max=2).tolist() == [7, 9, 1]


def test_short_drafts_near_the_end_and_the_caps():
    seq = [5, 6, 5, 6]  # "5 6" at 0: two tokens follow before the end
    assert ngram.propose(seq, 5, prompt_lookup_min=2, prompt_lookup_max=2).tolist() == [5, 6]
    assert ngram.propose(seq, 5, prompt_lookup_min=2, prompt_lookup_max=2,
                         max_model_len=5).tolist() == [5]
    assert ngram.propose(seq, 5, prompt_lookup_min=2, prompt_lookup_max=2,
                         max_model_len=4).size == 0
    assert ngram.propose([5], 3, prompt_lookup_min=2, prompt_lookup_max=4).size == 0
    assert ngram.propose([1, 2, 3], 3, prompt_lookup_min=1, prompt_lookup_max=3).size == 0


@pytest.mark.parametrize("seed", range(6))
def test_every_prefix_matches_vllms_scan(seed):
    rng = np.random.default_rng(seed)
    seq = rng.integers(0, [2, 3, 4, 8, 30, 2][seed], 160).tolist()
    lo, hi = [(1, 1), (1, 3), (2, 4), (3, 5), (2, 2), (4, 7)][seed]
    table = ngram.NgramTable(seq, lo, hi)
    for T in range(1, len(seq) + 1):
        assert table.draft(T, 4, 150).tolist() == _vllm_kmp(seq[:T], lo, hi, 150, 4), T


def test_agreement_counts_the_leading_matches_up_to_the_end():
    seq = [1, 2, 3, 1, 2, 3, 1, 2]
    table = ngram.NgramTable(seq, 2, 2)
    run = table.agreement(3)
    # T = 5: "1 2" first at 0 -> 3 1 2, and seq[5:] is 3 1 2
    assert table.draft(5, 3).tolist() == [3, 1, 2] and run[5] == 3
    # T = 6: "2 3" first at 1 -> 1 2 3, but seq[6:] is 1 2: the end stops the agreement at 2
    assert table.draft(6, 3).tolist() == [1, 2, 3] and run[6] == 2
    # T = 3 and 4: the suffix n-gram has no earlier occurrence
    assert table.draft(3, 3).size == table.draft(4, 3).size == 0 and run[3] == run[4] == 0
    assert run[len(seq)] == 0
