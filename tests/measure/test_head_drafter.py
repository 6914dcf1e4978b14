"""specnb.measure.head_drafter: a head in the reference loop. Greedy output equals the
target's plain greedy output (lossless at T = 0), and the loop's counters equal
``head_replay``'s on the loop's own responses (with the loop's draft cap, ``cap_at_end``),
round for round, for EAGLE-1, EAGLE-3 and MTP heads (with partial acceptance: a copied head
with noise)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specnb.acceptance_profile import Counters  # noqa: E402
from specnb.measure import head_replay as HR  # noqa: E402
from specnb.measure import heads as Hd  # noqa: E402
from specnb.measure.head_drafter import HeadDrafter  # noqa: E402
from specnb.measure.reference import reference_generate  # noqa: E402

from . import heads_support as S  # noqa: E402


def _noisy(head, scale):
    with torch.no_grad():
        g = torch.Generator().manual_seed(3)
        for name, p in head.named_parameters():
            if name.startswith(("embed.", "lm_head.")) or p.dim() < 2:
                continue
            p.add_(torch.randn(p.shape, generator=g) * scale)
    return head


def _heads(tmp_path):
    t = S.llama_target(layers=4, bigram=True)
    e1 = Hd.new_head(S.eagle1_config(), t)
    S.copy_next_token_path(e1, t)
    cfg = Hd.eagle3_config(t.config, layer_ids=[1, 2, 4], draft_vocab_size=50)
    e3 = Hd.new_head(cfg, t)
    with torch.no_grad():
        e3.d2t.copy_(torch.randperm(S.VOCAB, generator=torch.Generator().manual_seed(0))[:50]
                     .sort().values - torch.arange(50))
    ds = S.deepseek_target(tmp_path / "ds", bigram=True)
    mtp = Hd.load_head(tmp_path / "ds", ds, method="mtp")
    return {"eagle": (t, _noisy(e1, 0.05)), "eagle3": (t, e3), "mtp": (ds, _noisy(mtp, 0.05))}


def _loop_counters(run, g, mnt):
    """Counters of a reference-loop run: round 1 is the prefill; then k = min(g, mnt - n - 1)
    drafts and accepted = tokens appended - 1."""
    c, n = Counters.zero(g), run.accept_lengths[0]
    for L in run.accept_lengths[1:]:
        k, a = min(g, mnt - n - 1), L - 1
        c = c + Counters(1, int(k > 0), k, a, tuple(int(i < a) for i in range(g)),
                         tuple(int(i < k) for i in range(g)))
        n += L
    return c


@pytest.mark.slow
def test_loop_equals_replay_and_is_lossless(tmp_path):
    mnt = 24
    for kind, (target, head) in _heads(tmp_path).items():
        drafter = HeadDrafter(head.eval(), target)
        accepted = 0
        for seed in range(2):
            prompt = torch.randint(0, S.VOCAB, (9,), generator=torch.Generator().manual_seed(seed))
            plain = reference_generate(target, drafter, prompt, gamma=1, max_new_tokens=1)
            assert plain.draft_forwards == 0  # no target state before the prefill
            with torch.no_grad():
                x, greedy = prompt, []
                for _ in range(mnt):
                    nxt = target(input_ids=x[None]).logits[0, -1].argmax()
                    greedy.append(int(nxt))
                    x = torch.cat([x, nxt[None]])
            for g in (1, 3):
                run = reference_generate(target, drafter, prompt, gamma=g, max_new_tokens=mnt)
                assert run.tokens == greedy, kind
                replay = HR.request_counters(target, head, prompt, torch.tensor(run.tokens),
                                             temperature=0.0, gammas=[g],
                                             cap_at_end=True)[g][None]
                assert replay == _loop_counters(run, g, mnt), (kind, g)
                accepted += replay.num_accepted_tokens
        if kind != "eagle3":  # the copied heads accept some, not all
            assert accepted > 0, kind
