"""specnb.replay.step: a request stepped by hand (first token from prefill, accepted prefix,
accepted + 1 appended, nothing past the response) and its counters by context bucket."""

import numpy as np

from specnb.replay import step
from specnb.replay.suffix import SuffixCache

PROMPT, RESPONSE = [1, 2, 3, 1, 2], [3, 1, 2, 9]


def test_ngram_steps_by_hand():
    # T = 6 (prompt + the prefill's token 3): "2 3" first at 1 -> draft 1 2 3 against the
    # response's 1 2 9: two accepted, the step appends 3 tokens and the response is done
    out = step.ngram_steps(PROMPT + RESPONSE, 5, [1, 3], prompt_lookup_min=2,
                           prompt_lookup_max=2, runner="v1")
    assert [x.tolist() for x in out[3]] == [[6], [3], [2]]
    # gamma 1: T = 6 draft [1] accepted -> T = 8: "1 2" first at 0 -> [3] vs 9: rejected
    assert [x.tolist() for x in out[1]] == [[6, 8], [1, 1], [1, 0]]


def test_ngram_steps_on_runner_v2_take_the_rightmost_match_and_always_draft_gamma():
    full = [1, 2, 3, 1, 2, 4] + [1, 2, 4, 9]  # prompt 6, response 4
    kw = dict(prompt_lookup_min=1, prompt_lookup_max=1)
    # T = 7, suffix "1": ends at 1 and 4. V1 takes the earliest (draft 2 3 1 2 4 against the
    # response's 2 4 9: one accepted), V2 the rightmost (2 4 1, then the last token 1 in
    # slots 4 and 5: two accepted), and V2 counts all five slots as draft tokens
    v1 = step.ngram_steps(full, 6, [5], runner="v1", **kw)[5]
    v2 = step.ngram_steps(full, 6, [5], runner="v2", **kw)[5]
    assert [x.tolist() for x in v1] == [[7, 9], [5, 3], [1, 0]]
    assert [x.tolist() for x in v2] == [[7], [5], [2]]
    # no match at all: V1 drafts nothing; V2 drafts the last token twice, which the
    # response 7 7 7 accepts
    kw = dict(prompt_lookup_min=2, prompt_lookup_max=2)
    assert [x.tolist() for x in step.ngram_steps([5, 6, 7, 7, 7], 2, [2], runner="v1",
                                                 **kw)[2]] == [[3, 4], [0, 0], [0, 0]]
    assert [x.tolist() for x in step.ngram_steps([5, 6, 7, 7, 7], 2, [2], runner="v2",
                                                 **kw)[2]] == [[3], [2], [2]]
    # the scheduler's cap near max_model_len: at most max_model_len - T - 1 draft tokens
    for runner in ("v1", "v2"):
        capped = step.ngram_steps(full, 6, [5], runner=runner, max_model_len=10,
                                  prompt_lookup_min=1, prompt_lookup_max=1)[5]
        assert capped[1].tolist()[0] == 10 - 7 - 1


def test_suffix_steps_by_hand():
    # T = 6: the local tree of 1 2 3 1 2 3: "1 2 3" (twice) -> 1 2 (probs 1/2, 1/2; score 1.0,
    # the longest of the equal scores); the global tree holds only the response so far
    out = step.suffix_steps(SuffixCache(24, 10), 0, PROMPT + RESPONSE, 5, [2])
    assert [x.tolist() for x in out[2]] == [[6], [2], [2]]


def test_counters_by_context_bucket():
    T, d, a = np.array([3, 5, 9, 12]), np.array([3, 0, 2, 3]), np.array([2, 0, 2, 0])
    by = step.counters((T, d, a), 3, context_edges=[5, 10])
    # buckets [0, 5), [5, 10), [10, inf): a step's context is the tokens before it
    assert set(by) == {0, 1, 2, None}
    assert by[None].to_dict() == {"num_steps": 4, "num_drafts": 3, "num_draft_tokens": 8,
                                  "num_accepted_tokens": 4,
                                  "num_accepted_tokens_per_pos": [2, 2, 0],
                                  "num_draft_tokens_per_pos": [3, 3, 2]}
    assert by[0].num_steps == 1 and by[1].num_steps == 2 and by[1].num_drafts == 1
    assert by[2].num_accepted_tokens == 0 and by[2].num_draft_tokens == 3
