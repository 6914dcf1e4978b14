"""specnb.measure.head_replay: the stepping rule on hand-made acceptance (fast, exact
counters); a head copied from a bigram target accepts every draft at T = 0 and, at T > 0, its
acceptance probabilities are 1 where p = q; replay_head on a small log writes a profile that
acceptance_profile reads back, by task and context bucket."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb import acceptance_profile as AP  # noqa: E402
from specnb.measure import head_replay as HR  # noqa: E402
from specnb.measure import heads as Hd  # noqa: E402

from . import heads_support as S  # noqa: E402


def test_step_counters_by_hand():
    # R = 8 tokens; row n - 1 is the round after n generated tokens; entries past the
    # response's end are False (accept[n - 1, j - 1] predicts r_{n - 1 + j})
    acc = np.zeros((7, 3), dtype=bool)
    acc[0] = [True, True, False]   # n = 1: accept 2 -> n = 4
    acc[3] = [True, False, True]   # n = 4: accept 1 -> n = 6
    acc[5] = [True, True, False]   # n = 6: accept 2 (r_6, r_7: the end) -> n = 9, done
    by = HR.step_counters(acc, 3, prompt_len=5, response_len=8, context_edges=[9])
    c = by[None]
    # vLLM drafts gamma every step
    assert (c.num_steps, c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (3, 3, 9, 5)
    assert c.num_accepted_tokens_per_pos == (3, 2, 0)
    assert c.num_draft_tokens_per_pos == (3, 3, 3)
    # contexts 5 + 1 = 6 (bucket 0), 9 and 11 (bucket 1)
    assert by[0].num_steps == 1 and by[1].num_steps == 2
    assert by[0] + by[1] == c
    # the reference loop's cap: min(3, 7 - n) drafts; at n = 6 one draft, accepted
    capped = HR.step_counters(acc, 3, prompt_len=5, response_len=8, cap_at_end=True)[None]
    assert (capped.num_draft_tokens, capped.num_accepted_tokens) == (7, 4)
    assert capped.num_draft_tokens_per_pos == (3, 2, 2)


def test_step_counters_draws_follow_the_probabilities():
    acc = np.full((999, 2), 0.5)
    by = HR.step_counters(acc, 2, prompt_len=1, response_len=1000,
                          rng=np.random.default_rng(0))[None]
    # per draft: first accepted w.p. 0.5, both w.p. 0.25
    assert abs(by.num_accepted_tokens_per_pos[0] / by.num_drafts - 0.5) < 0.05
    assert abs(by.num_accepted_tokens_per_pos[1] / by.num_drafts - 0.25) < 0.05


@pytest.fixture(scope="module")
def copied():
    target = S.llama_target(layers=2, bigram=True)
    head = Hd.new_head(S.eagle1_config(), target)
    S.copy_next_token_path(head, target)
    return target, head.eval()


@pytest.mark.slow
def test_copied_head_accepts_everything(copied):
    target, head = copied
    prompt = torch.randint(0, S.VOCAB, (6,))
    resp = []
    x = prompt
    with torch.no_grad():  # the target's greedy continuation
        for _ in range(20):
            nxt = target(input_ids=x[None]).logits[0, -1].argmax()
            resp.append(int(nxt))
            x = torch.cat([x, nxt[None]])
    c = HR.request_counters(target, head, prompt, torch.tensor(resp), temperature=0.0,
                            gammas=[1, 4])
    for g in (1, 4):
        cc = c[g][None]
        assert cc.num_accepted_tokens == cc.num_draft_tokens > 0
    # at T = 1 on the same path beta = sum min(p, q) = 1: every draft still accepted
    c1 = HR.request_counters(target, head, prompt, torch.tensor(resp), temperature=1.0,
                             gammas=[4])[4][None]
    assert c1.num_accepted_tokens == c1.num_draft_tokens
    # along a random response (not the target's) agreement is rare
    cr = HR.request_counters(target, head, prompt, torch.randint(0, S.VOCAB, (20,)),
                             temperature=0.0, gammas=[4])[4][None]
    assert cr.num_accepted_tokens < cr.num_draft_tokens / 2


@pytest.mark.slow  # builds transformers models (their import alone takes seconds)
def test_replay_head_profile(copied, tmp_path):
    target, head = copied
    log = tmp_path / "log.jsonl"
    rows = [{"task": t, "prompt_ids": [1, 2, 3], "temperature": 0.0,
             "response_ids": list(range(3 + i, 15 + i))} for i, t in
            enumerate(["chat", "code", "chat"])]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    prof, info = HR.replay_head(log, method="eagle", gammas=[2, 3], context_edges=[8],
                                tokenizer=False, models={"target": target, "head": head})
    assert info["target_passes"] == 3 and info["positions"] == 36
    again = AP.from_dict(json.loads(AP.dumps(prof)))
    assert again.method == "eagle" and again.gammas == (2, 3) and again.tasks == ("chat", "code")
    whole = again.entry(3)
    assert whole.num_requests == 3 and whole.counters.num_steps > 0
    parts = again.entry(3, context=0).counters + again.entry(3, context=10).counters
    assert parts == whole.counters


def test_replay_head_bad_input(tmp_path):
    with pytest.raises(ValueError, match="method"):
        HR.replay_head(method="medusa")
    with pytest.raises(ValueError, match="gammas"):
        HR.replay_head(method="eagle3", gammas=[0])
    with pytest.raises(ValueError, match="needs a head"):
        HR._default_head("eagle3", None, tmp_path)
    with pytest.raises(ValueError, match="context_edges"):
        HR.replay_head(method="eagle3", context_edges=[5, 5])
