"""specnb.advise.plan: the schedule from a serving grid (vLLM's rules), the config and its
coded notes, the plan pipeline."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb import advise as A
from specnb import serving as S
from specnb.advise.plan import check_v0_draft
from specnb.vllm import check_speculative_config, schedule_lookup, validate_schedule
from tests.serving.configs import LLAMA_CFG
from tests.tier import examples


def _vllm_valid(rows, nst):
    """vLLM's rules (reference 5.2), checked directly rather than through validate_schedule."""
    assert rows and all(len(r) == 3 and all(type(x) is int for x in r) for r in rows)
    assert all(r[0] >= 1 and r[0] <= r[1] and r[2] >= 0 for r in rows)
    srt = sorted(rows)
    assert srt[0][0] == 1
    assert all(b[0] > a[1] for a, b in zip(srt, srt[1:]))
    assert nst > 0 and all(r[2] <= nst for r in rows)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 600), st.integers(0, 8)), min_size=1, max_size=12,
                unique_by=lambda x: x[0]))
def test_schedule_follows_vllms_rules_and_means_what_was_asked(pairs):
    b = [p[0] for p in pairs]
    k = [p[1] for p in pairs]
    rows = A.schedule(b, k)
    nst = max(max(k), 1)
    _vllm_valid(rows, nst)
    assert [list(r) for r in validate_schedule(rows, nst)] == rows
    assert [r[1] + 1 for r in rows[:-1]] == [r[0] for r in rows[1:]]  # contiguous
    assert all(x[2] != y[2] for x, y in zip(rows, rows[1:]))  # equal neighbours merged
    lookup = np.array(schedule_lookup(rows, nst, max(b))[1:])  # index 0 = batch 1
    order = np.argsort(b)
    for i, j in enumerate(order):  # each listed batch size gets its own K, up to the next
        nxt = b[order[i + 1]] if i + 1 < len(b) else max(b) + 1
        lo = 1 if i == 0 else b[j]
        assert (lookup[lo - 1:nxt - 1] == k[j]).all()


@pytest.mark.parametrize("sched", [
    [[1, 64, 3], [65, 128, 1], [129, 512, 0]],  # EAGLE-1 docs example
    [[1, 16, 5], [17, 32, 4], [33, 64, 3], [65, 128, 1], [129, 512, 0]],  # EAGLE-3 example
    [[1, 16, 3], [32, 128, 2]],  # a gap is allowed
])
def test_documented_schedules_pass(sched):
    assert [list(r) for r in validate_schedule(sched, 5)] == sched
    cfg = A.schedule_config(sched, "eagle3", model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    assert cfg["num_speculative_tokens_per_batch_size"] == sched
    assert check_speculative_config(cfg).accepted


def test_plan_schedule_builds_an_accepted_config():
    st_ = S.setup("H100", "Llama-3.1-8B", "eagle3")
    rows = A.plan_schedule(st_, [1000], [1, 2, 3, 4, 5], max_batch=1024, alpha=0.6)
    ks = [r[2] for r in rows]
    # issue 16: vLLM V1's profile adds about 0.5 ms per EAGLE-3 draft forward: the best K falls
    assert ks == sorted(ks, reverse=True) and ks[0] >= 2 and ks[-1] < ks[0]
    cfg, notes = A.setup_config(st_, rows, checkpoint="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    _vllm_valid(cfg["num_speculative_tokens_per_batch_size"], cfg["num_speculative_tokens"])
    assert cfg["num_speculative_tokens"] == max(ks)
    assert check_speculative_config(cfg).accepted
    (tax,) = [n for n in notes if n.code == "schedule-tax"]
    assert "+6.6%" in tax.message and "+21.6%" in tax.message
    # every K 0: leave speculation off; one K everywhere: a static config
    assert A.schedule_config([[1, 512, 0]], "eagle3", model="x/y") is None
    assert "num_speculative_tokens_per_batch_size" not in A.schedule_config(
        [[1, 512, 2]], "ngram", prompt_lookup_min=2, prompt_lookup_max=5)


def test_plan_schedule_gives_vllm_the_chosen_gamma_at_every_batch_size():
    st_ = S.setup("H100-SXM", "Llama-3.1-8B", "Llama-3.2-1B")  # FA3: no multi-token cost
    gammas = [1, 2, 3, 4, 6]
    rows = A.plan_schedule(st_, [2000, 16000], gammas, max_batch=300, alpha=0.75)
    grid = S.evaluate(st_, np.arange(1, 301), [2000, 16000], gammas, alpha=0.75)
    chosen, worst = A.schedule_gammas(grid)
    nst = max(r[2] for r in rows)
    # issue 16: the schedule stops where the KV cache fits at no context (the shortest's cap);
    # a batch counts only at the contexts where it fits
    limit = A.memory_limit(st_, [2000, 16000], 300)
    assert rows[-1][1] == limit == S.max_batch_in_memory(st_, 2000) < 300
    assert S.max_batch_in_memory(st_, 16000) < limit
    assert (np.array(schedule_lookup(rows, nst, limit)[1:]) == chosen[:limit]).all()
    assert (chosen[limit:] == 0).all()  # beyond it nothing runs at once: never pays
    # the chosen gamma is the best for the least favourable context
    masked = np.where(grid.fits, grid.speedup, np.inf).min(axis=1)
    i = np.argmax(masked, axis=1)
    assert (np.where(np.isfinite(worst) & (worst > 1), grid.gammas[i], 0) == chosen).all()


def test_model_id_of_a_json_file_is_its_folder_and_the_config_says_so(tmp_path):
    p = tmp_path / "draft.json"
    p.write_text(json.dumps(LLAMA_CFG))
    st = S.setup("H100", "Llama-3.1-8B", str(p))
    assert S.model_id(st.draft.arch) == str(tmp_path)
    cfg, notes = A.setup_config(st, [[1, 4, 2]])
    assert cfg["model"] == str(tmp_path)
    (named,) = [n for n in notes if n.code == "config-file-name"]
    assert "draft.json has another name" in named.message


# --------------------------------------------------------------------------- the pipeline
def test_serving_plan_is_the_grid_schedule_config_and_serve_line():
    st_ = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    p = A.serving_plan(st_, [256, 1, 16, 64], [4000], [1, 2, 3, 4, 5], alpha=0.7)
    assert p.grid.batch_sizes.tolist() == [1, 16, 64, 256]  # sorted
    # the parts, each computed on its own, agree with the pipeline
    # issue 16: the schedule and --max-num-seqs stop where the KV cache stops fitting (104 at
    # vLLM's gpu_memory_utilization 0.92; the issue's 101 at vLLM < 0.20's 0.9)
    # (T7-06: 113 on the 79.11 GiB an H100 reports, by hand below)
    cap = S.max_batch_in_memory(st_, 4000)
    room = 0.92 * st_.gpu.total_memory_bytes - st_.target.weight_bytes() \
        - st_.draft.weight_params * 2.0
    assert p.schedule == A.plan_schedule(st_, [4000], [1, 2, 3, 4, 5], max_batch=256,
                                         alpha=0.7) == [[1, cap, 3]]
    assert cap == int(room // (4000 * (131072 + 4096))) == 113
    cfg, notes = A.setup_config(st_, p.schedule)
    assert p.config == cfg and check_speculative_config(cfg).accepted
    assert p.serve.endswith(f"--max-num-seqs {cap}") and p.max_num_seqs == cap
    assert p.crossover_batch == {4000: int(S.crossover_batch(st_, 4000, [1, 2, 3, 4, 5],
                                                             max_batch=256, alpha=0.7))}
    assert p.paying_batches == {4000: S.paying_batches(st_, 4000, [1, 2, 3, 4, 5],
                                                       max_batch=256, alpha=0.7)}
    assert p.max_batch_in_memory == {4000: S.max_batch_in_memory(st_, 4000)}
    # one K up to the cap: a static config, so no schedule tax note
    assert [n.code for n in p.notes] == ["checkpoint-placeholder", "kv-does-not-fit",
                                         "draft-displaces-sequences"]
    assert f"at most {cap} sequences" in p.notes[-2].message
    assert f"--max-num-seqs at {cap}" in p.notes[-2].message
    d = S.memory_cap(st_, 4000)
    assert p.displaced == {4000: d["displaced"]} and d["displaced"] > 0
    assert f"{d['displaced']} sequences at context 4000" in p.notes[-1].message
    rows = p.rows()
    assert len(rows) == 4 * 5 and rows[0]["batch_size"] == 1 and rows[0]["gamma"] == 1
    assert rows[0]["speedup"] == pytest.approx(float(p.grid.speedup[0, 0, 0]))


def test_serving_plan_notes_carry_codes():
    # context beyond the target's maximum first, then the config's, the setup's and the grid's
    # (MagicDec's engine, not vLLM: the model's defaults alone; on vLLM an A100 runs
    # FlashAttention-2, whose unsplit walk a multi-head target pays at every step)
    st_ = S.setup("A100", "Llama-2-7B", "TinyLlama-1.1B", gpus=8, draft_kv_budget=512,
                  engine="specdecode-bench")
    p = A.serving_plan(st_, [32, 64], [2000, 16000], [2], tau=2.17)
    assert [n.code for n in p.context_notes] == ["context-over-max-positions",
                                                 "draft-kv-budget-not-expressible"]
    assert p.notes[:2] == p.context_notes
    assert "schedule-serves-every-context" in [n.code for n in p.notes]
    # tensor parallelism reaches the serve line
    # 16000 is above Llama-2-7B's 4096 positions: no verdict there (T5-C2), the schedule is
    # for 2000; it pays there only from a batch on: K 0 below it, 2 from it
    assert p.over_max_positions == [16000] and p.paying_batches[16000] == []
    assert "no-advice-over-max-positions" in [n.code for n in p.notes]
    first = p.paying_batches[2000][0][0]
    assert first > 1 and p.schedule == [[1, first - 1, 0], [first, 64, 2]]
    assert p.serve.endswith("--max-num-seqs 64 --tensor-parallel-size 8")
    # nothing pays at every context, but something pays at one: that note, not no-gamma-pays
    st2 = S.setup("H100-SXM", "Llama-3.1-8B", "self", draft_kv_budget=256)
    p2 = A.serving_plan(st2, [1, 64], [500, 60000], [2, 3], alpha=0.8)
    codes = [n.code for n in p2.notes]
    assert p2.config is None and p2.serve is None
    assert all(k == 0 for _, _, k in p2.schedule)
    assert "no-schedule-for-every-context" in codes and "no-gamma-pays" not in codes
    assert any(p2.paying_batches.values())
    # a setup whose weights do not fit, and a draft that never pays anywhere
    p3 = A.serving_plan(S.setup("L40S", "Llama-3.1-70B", "eagle3"), [1, 512], [100], [1],
                        alpha=0.2)
    # fault N3: nothing fits, so no on/off advice and no KV-room note, only what to change
    codes3 = {n.code for n in p3.notes}
    assert "weights-do-not-fit" in codes3
    assert not codes3 & {"kv-does-not-fit", "no-gamma-pays", "no-schedule-for-every-context"}
    assert p3.cannot_serve.code == "weights-do-not-fit"
    assert p3.schedule is None and p3.config is None and p3.serve is None


def _profile(method="ngram"):
    """Two context buckets with known counters: [0, 2000) tau 3, M 1/2; [2000, inf) tau 1.48,
    M 1/4 (gamma 2); the whole log sums them."""
    from specnb import acceptance_profile as AP

    lo = AP.Counters(100, 50, 100, 100, (50, 50), (50, 50))
    hi = AP.Counters(100, 25, 50, 12, (10, 2), (25, 25))
    return AP.build(method, {2: [(None, {0: lo}), (None, {1: hi})]}, context_edges=[2000],
                    params={"prompt_lookup_min": 2, "prompt_lookup_max": 3})


def test_an_acceptance_profile_gives_tau_and_m_per_context():
    from specnb.advise import plan as P

    prof = _profile()
    tau, m, notes = P.profile_acceptance(prof, [1000, 4000], [2], proposal_rate=True)
    assert tau.tolist() == [[3.0], [1.48]] and m.tolist() == [[0.5], [0.25]] and not notes
    st_ = S.setup("H100-SXM", "Llama-3.1-8B", "ngram")
    p = A.serving_plan(st_, [1, 8], [1000, 4000], [2], acceptance_profile=prof)
    assert p.grid.tau[:, :, 0].tolist() == [[3.0, 1.48], [3.0, 1.48]]
    # each context's cell is the model with that context's tau and M
    for j, (s, t, mm) in enumerate([(1000, 3.0, 0.5), (4000, 1.48, 0.25)]):
        one = S.evaluate(S.setup("H100-SXM", "Llama-3.1-8B", "ngram", proposal_rate=mm),
                         [1, 8], [s], [2], tau=t)
        assert p.grid.speedup[:, j, 0].tolist() == one.speedup[:, 0, 0].tolist()
    assert '"prompt_lookup_max": 3' in p.serve  # the settings replayed are the ones served
    with pytest.raises(ValueError, match="gamma 3 is not in the acceptance profile"):
        A.serving_plan(st_, [1], [1000], [3], acceptance_profile=prof)
    with pytest.raises(ValueError, match="replays ngram, the plan's draft is eagle3"):
        A.serving_plan(S.setup("H100-SXM", "Llama-3.1-8B", "eagle3"), [1], [1000], [2],
                       acceptance_profile=prof)


@pytest.mark.parametrize("lengths", [(8000, 16), (200, 2000)])
def test_a_profile_with_lengths_follows_the_end_to_end_figure_as_the_scalar_path(lengths):
    # issue 26's verdict rule on the profile path (issue 21): the 1..limit grid behind the
    # schedule, paying ranges and crossover had no lengths, so they followed decoding alone.
    # A profile whose tau at each gamma is alpha 0.5's (1.5, 1.75, 1.875: exact in binary)
    # must give the same verdicts as --alpha 0.5
    from specnb import acceptance_profile as AP

    per = {g: [(None, {0: AP.Counters(8, 8, 8 * g, acc, (0,) * g, (8,) * g)})]
           for g, acc in ((1, 4), (2, 6), (3, 7))}
    prof = AP.build("draft_model", per, params={})
    st_ = S.setup("H100-SXM", "Llama-3.1-8B", "Llama-3.2-1B")
    n_in, n_out = lengths
    kw = dict(input_len=n_in, output_len=n_out)
    got = A.serving_plan(st_, [1, 16, 64], [8000], [1, 2, 3], acceptance_profile=prof, **kw)
    want = A.serving_plan(st_, [1, 16, 64], [8000], [1, 2, 3], alpha=0.5, **kw)
    assert np.allclose(got.grid.speedup_end_to_end, want.grid.speedup_end_to_end)
    assert got.schedule == want.schedule and got.serve == want.serve
    assert got.paying_batches == want.paying_batches
    assert got.crossover_batch == want.crossover_batch
    assert np.array_equal(got.best[0], want.best[0])
    codes = [n.code for n in got.notes]
    assert ("loses-end-to-end" in codes) == ("loses-end-to-end" in [n.code for n in want.notes])
    # and the lengths decide: without them the same profile's verdicts differ in one case
    plain = A.serving_plan(st_, [1, 16, 64], [8000], [1, 2, 3], acceptance_profile=prof)
    if n_out == 16:  # 8000-token prefills for 16 output tokens: e2e loses where decoding pays
        assert "loses-end-to-end" in codes and got.serve is None and plain.serve is not None
        assert all(k == 0 for *_, k in got.schedule)


def test_moe_target_at_the_default_fixed_cost_is_told_to_calibrate():
    st = S.setup("H200", "DeepSeek-V3", "mtp", gpus=8, dtype="fp8")
    p = A.serving_plan(st, [1, 16], [2000], [3], tau=2.4)
    note = next(n for n in p.notes if n.code == "moe-fixed-cost")
    row = S.moe_plain_steps("sglang-pr2643").iloc[0]
    assert f"{row['ms']:.1f} ms published" in note.message
    assert f"{float(S.t_plain_ms(st, 1, int(row['context']))):.1f} ms" in note.message
    # calibrated (here on the published plain steps themselves) or dense: no such note
    cal = S.calibrated_on_plain_steps("sglang-pr2643", "mtp").setup
    for other in (cal, S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")):
        q = A.serving_plan(other, [1, 16], [2000], [3], tau=2.4)
        assert "moe-fixed-cost" not in [n.code for n in q.notes]


def test_a_max_num_seqs_below_what_fits_is_said_to_be_the_largest_batch():
    su = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    p = A.serving_plan(su, [1, 16], [4000], [3], alpha=0.7)
    fit = int(S.max_batch_in_memory(su, 4000))
    assert "--max-num-seqs 16" in p.serve and fit > 16
    note = [n for n in p.notes if n.code == "max-num-seqs-is-batch"]
    assert len(note) == 1 and f"{fit} sequences fit" in note[0].message
    full = A.serving_plan(su, [1, fit + 10], [4000], [3], alpha=0.7)
    assert "max-num-seqs-is-batch" not in [n.code for n in full.notes]
    # trial4 C8: context 0 reads no KV, so no count (it printed 2**53 sequences)
    zero = A.serving_plan(su, [1, 16], [0], [3], alpha=0.7)
    (note,) = [n for n in zero.notes if n.code == "max-num-seqs-is-batch"]
    assert str(2 ** 53) not in note.message and "limits no batch" in note.message


@pytest.mark.parametrize("draft", ["Llama-3.2-1B", "eagle3"])
def test_a_draft_kv_budget_is_said_to_be_beyond_vllm(draft):
    su = S.setup("H100-SXM", "Llama-3.1-8B", draft, draft_kv_budget=512)
    p = A.serving_plan(su, [1, 8], [32000], [3], alpha=0.8)
    assert "draft-kv-budget-not-in-vllm" in [n.code for n in p.notes]
    plain = A.serving_plan(S.setup("H100-SXM", "Llama-3.1-8B", draft), [1, 8], [32000], [3],
                           alpha=0.8)
    assert "draft-kv-budget-not-in-vllm" not in [n.code for n in plain.notes]


def test_a_context_beyond_the_profiles_log_is_noted_as_extrapolated():
    from specnb.advise.plan import profile_acceptance
    from specnb import replay as R
    from specnb import request_log

    log = request_log.read()
    sub = request_log.RequestLog(log.path, log.requests[:4], tokenizer=log.tokenizer)
    prof = R.replay(sub, "ngram", gammas=[3])
    lo, hi = prof.source["context_range"]
    assert 0 < lo <= hi
    su = S.setup("H100-SXM", "Llama-3.1-8B", "ngram")
    _, _, inside = profile_acceptance(prof, [hi], [3], proposal_rate=True)
    _, _, beyond = profile_acceptance(prof, [hi, 100000], [3], proposal_rate=True)
    assert "profile-context-extrapolated" not in [n.code for n in inside]
    note = [n for n in beyond if n.code == "profile-context-extrapolated"]
    assert len(note) == 1 and "context 100,000 is beyond" in note[0].message and f"{lo}-{hi}" in note[0].message
    assert su.draft.method == "ngram"


def test_no_placeholder_note_without_a_serve_line():
    su = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    pays = A.serving_plan(su, [1], [4000], [3], alpha=0.7)
    none = A.serving_plan(su, [1], [4000], [3], alpha=0.01)
    assert pays.serve and "checkpoint-placeholder" in [n.code for n in pays.notes]
    assert none.serve is None and "checkpoint-placeholder" not in [n.code for n in none.notes]


@pytest.mark.parametrize("draft, flagged", [("Llama-3.1-70B", True), ("Llama-3.2-1B", False)])
def test_a_draft_model_not_smaller_than_the_target_is_flagged(draft, flagged):
    """T4-K6: a draft as large as the target, or larger, is said (swapped flags?)."""
    su = S.setup("H100-SXM", "Llama-3.1-8B", draft)
    p = A.serving_plan(su, [1], [4000], [3], alpha=0.7)
    assert ("draft-not-smaller" in [n.code for n in p.notes]) is flagged


def test_no_note_prints_context_0s_unbounded_room():
    """T4-C8's rest: at context 0 the KV room is 2**53 (no limit); the draft-displaces note
    names only the contexts with a bound."""
    from specnb._check import MAX_EXACT_INT

    su = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    p = A.serving_plan(su, [1], [0, 4000], [3], alpha=0.7)
    assert "draft-displaces-sequences" in [n.code for n in p.notes]
    assert not any(str(MAX_EXACT_INT) in n.message for n in p.notes)


def test_profile_verification_is_charged_at_the_mean_draft_length():
    """T5-M8: suffix / n-gram drafts stop where the match does and vLLM verifies each
    request's own draft, so a profile's num_draft_tokens / num_drafts is the L of
    B (1 + M L) verified tokens, not gamma."""
    from specnb import acceptance_profile as AP
    from specnb.advise import plan as P

    # gamma 4, 40 drafts of 70 tokens in all: 1.75 tokens a draft; 40 of 100 steps drafted
    c = AP.Counters(100, 40, 70, 30, (20, 6, 3, 1), (40, 20, 8, 2))
    prof = AP.build("suffix", {4: [(None, {0: c})]})
    assert P.profile_draft_lengths(prof, [1000], [4]).tolist() == [[1.75]]
    st_ = S.setup("H100-SXM", "Llama-3.1-8B", "suffix")
    p = A.serving_plan(st_, [1, 64], [1000], [4], acceptance_profile=prof)
    assert "profile-mean-draft-length" in [n.code for n in p.notes]
    # suffix runs on Model Runner V1, synchronous scheduling charged (T9-01)
    want = S.evaluate(P.with_sync_host(S.setup("H100-SXM", "Llama-3.1-8B", "suffix",
                                               proposal_rate=0.4, mean_draft_len=1.75),
                                       "v1")[0], [1, 64], [1000], [4], tau=1.75)
    assert p.grid.speedup[:, 0, 0].tolist() == want.speedup[:, 0, 0].tolist()
    # the verification is the target step at 1 + 0.4 x 1.75 = 1.7 query tokens per sequence
    st_l = S.setup("H100-SXM", "Llama-3.1-8B", "suffix", proposal_rate=0.4,
                   mean_draft_len=1.75)
    # (the same query tokens as M 0.7 at gamma 1: 1 + 0.7 x 1)
    same = S.setup("H100-SXM", "Llama-3.1-8B", "suffix", proposal_rate=0.7)
    assert float(S.t_verify_ms(st_l, 64, 1000, 4)) == pytest.approx(
        float(S.t_verify_ms(same, 64, 1000, 1)))
    full = S.setup("H100-SXM", "Llama-3.1-8B", "suffix", proposal_rate=0.4)
    assert S.t_verify_ms(st_l, 64, 1000, 4) < S.t_verify_ms(full, 64, 1000, 4)
    # without a profile a suffix plan says it charges the whole gamma
    q = A.serving_plan(full, [1, 64], [1000], [4], tau=1.75)
    assert "suffix-full-draft-assumed" in [n.code for n in q.notes]


def test_an_mtp_schedule_longer_than_the_targets_mtp_layers_is_noted():
    """T5-C4: DeepSeek-V3 ships one MTP layer; a schedule of 3 reruns it (vLLM's warning),
    which the plan's one acceptance for every position does not see."""
    st_ = S.setup("H200", "DeepSeek-V3", "mtp", gpus=8, dtype="fp8")
    assert st_.target.mtp_layers == 1
    p = A.serving_plan(st_, [1, 8], [4000], [1, 2, 3], alpha=0.8)
    assert max(r[2] for r in p.schedule) == 3
    (note,) = [n.message for n in p.notes if n.code == "mtp-reruns-layer"]
    assert "num_speculative_tokens 3" in note and "same MTP layer" in note
    one = A.serving_plan(st_, [1, 8], [4000], [1], alpha=0.8)
    assert "mtp-reruns-layer" not in [n.code for n in one.notes]


def test_a_profile_bucket_the_log_never_reached_is_noted_and_the_whole_log_stands_in():
    from specnb import acceptance_profile as AP
    from specnb.advise import plan as P

    lo = AP.Counters(100, 50, 100, 100, (50, 50), (50, 50))
    prof = AP.build("ngram", {2: [(None, {0: lo})]}, context_edges=[2000])
    assert prof.entry(2, context=4000).counters.num_steps == 0
    tau, m, notes = P.profile_acceptance(prof, [1000, 4000], [2], proposal_rate=True)
    assert tau.tolist() == [[3.0], [3.0]] and m.tolist() == [[0.5], [0.5]]
    assert "profile-bucket-empty" in [n.code for n in notes]
    assert P.profile_draft_lengths(prof, [1000, 4000], [2]).tolist() == [[2.0], [2.0]]


def test_a_suffix_plan_serves_one_static_k_vllm_runs():
    # trial 7 T7-05: vLLM 0.33 drops suffix's per-batch-size schedule (Model Runner V1), so
    # the plan serves the static K it runs, with a coded note
    st_ = S.setup("H100-SXM", "Llama-3.1-8B", "suffix")
    p = A.serving_plan(st_, [1, 64, 256], [2000], [1, 4], alpha=0.4)
    assert len({r[2] for r in p.schedule}) == 1 and p.schedule[0][:2] == [1, p.max_num_seqs]
    assert "num_speculative_tokens_per_batch_size" not in p.config
    assert p.config["num_speculative_tokens"] == p.schedule[0][2]
    assert "dynamic-schedule-disabled-for-method" in [n.code for n in p.notes]
    assert "schedule-tax" not in [n.code for n in p.notes]
    # the static K is the gamma of the highest mean worst-case speedup over batch 1..max
    full = S.batch_range_grid(st_, [2000], [1, 4], p.max_num_seqs, alpha=0.4)
    means = np.where(full.fits, full.deciding, np.nan).min(axis=1)
    k = [1, 4][int(np.nanargmax(np.nanmean(means, axis=0)))]
    assert p.schedule[0][2] == k
    # eagle3 keeps its schedule (Model Runner V2)
    e = A.serving_plan(S.setup("H100-SXM", "Llama-3.1-8B", "eagle3"), [1, 64, 256], [2000],
                       [1, 4], alpha=0.6)
    assert "dynamic-schedule-disabled-for-method" not in [n.code for n in e.notes]


def test_check_v0_draft_allows_only_v0s_proposers():
    """T7-07: V0_DRAFT_METHODS (vLLM v0.6.3); other engines are not judged."""
    from specnb._check import ParamValueError

    for draft in ("ngram", "eagle", "Llama-3.2-1B", "self"):
        check_v0_draft(S.setup("A100", "Llama-3.1-8B", draft, engine="vllm-v0"))
    for draft in ("suffix", "eagle3", "dflash"):
        with pytest.raises(ParamValueError) as info:
            check_v0_draft(S.setup("A100", "Llama-3.1-8B", draft, engine="vllm-v0"))
        assert info.value.param == "draft"
        check_v0_draft(S.setup("A100", "Llama-3.1-8B", draft, engine="vllm"))
    with pytest.raises(ParamValueError):
        check_v0_draft(S.setup("H200", "DeepSeek-V3", "mtp", engine="vllm-v0", gpus=8))


def test_the_sglang_ngram_line_serves_the_planned_chain():
    """T7-13: SGLang's _handle_ngram sets topk to --speculative-ngram-max-bfs-breadth
    (default 10) and ignores --speculative-eagle-topk: the chain of gamma tokens is breadth 1
    and gamma + 1 draft tokens; a tree's topk is its breadth."""
    import shlex

    from specnb.advise.plan import sglang_launch

    st = S.setup("H100-SXM", "Qwen3-8B", "ngram", engine="sglang")
    line, notes = sglang_launch(st, {"method": "ngram", "num_speculative_tokens": 3})
    w = shlex.split(line)
    assert "--speculative-eagle-topk" not in w and "--speculative-num-steps" not in w
    assert w[w.index("--speculative-algorithm") + 1] == "NGRAM"
    assert w[w.index("--speculative-ngram-max-bfs-breadth") + 1] == "1"
    assert w[w.index("--speculative-num-draft-tokens") + 1] == "4"
    assert "sglang-ngram-matcher" in [n.code for n in notes]
    tree = {"steps": 3, "topk": 2, "num_draft_tokens": 6}
    w = shlex.split(sglang_launch(st, {"method": "ngram", "num_speculative_tokens": 3},
                                  tree=tree)[0])
    assert w[w.index("--speculative-ngram-max-bfs-breadth") + 1] == "2"
    assert w[w.index("--speculative-num-draft-tokens") + 1] == "6"


def test_an_sglang_plan_uses_sglangs_memory_share_and_context_flag():
    """T7-03: SGLang's mem_fraction_static (not vLLM's 0.92) sizes the memory; the line
    carries --context-length (not vLLM's --max-model-len note) where one sequence of the
    model's positions does not fit; an explicit share is put in the line."""
    import shlex

    from specnb import limits

    st = S.setup("RTX-4090", "Llama-3.1-8B", "ngram", dtype="fp8", engine="sglang")
    # SGLang reads torch's device total (get_gpu_memory_capacity), the catalogue's reported one
    total = S.gpu("RTX-4090").device_memory_bytes
    assert st.memory_fraction == limits.sglang_mem_fraction_static(total, 1)
    assert 0.69 < st.memory_fraction < 0.75
    assert S.setup("RTX-4090", "Llama-3.1-8B", "ngram").memory_fraction == 0.92
    p = A.serving_plan(st, [1, 4], [4000], [2], alpha=0.7)
    codes = [n.code for n in p.notes]
    w = shlex.split(p.serve)
    assert w[:3] == ["python", "-m", "sglang.launch_server"]
    assert w[w.index("--context-length") + 1] == "4000" and "--max-model-len" not in w
    assert {"sglang-context-length-set", "sglang-memory-share"} <= set(codes)
    assert not {"max-model-len-set", "max-model-len-capped"} & set(codes)
    st9 = S.setup("RTX-4090", "Llama-3.1-8B", "ngram", dtype="fp8", engine="sglang",
                  gpu_memory_utilization=0.9)
    w = shlex.split(A.serving_plan(st9, [1, 4], [4000], [2], alpha=0.7).serve)
    assert w[w.index("--mem-fraction-static") + 1] == "0.9"


def test_v1_methods_pay_the_synchronous_scheduling_host_time_simulate_charges():
    """T9-01: on Model Runner V1 suffix (always) and ngram (a V1 profile or M < 1) turn vLLM's
    async scheduling off while the plain run keeps it: plan charges simulate's per-sequence
    host time on every speculative step, with a note; V2's ngram and eagle3 pay none."""
    from specnb.advise import plan as P
    from specnb.simulate import host as H

    sfx = S.setup("H100-SXM", "Llama-3.1-8B", "suffix", proposal_rate=0.5)
    p = A.serving_plan(sfx, [64], [1000], [4], tau=2.0)
    assert "v1-sync-scheduling" in [n.code for n in p.notes]
    charged = P.with_sync_host(sfx, "v1")[0]
    assert charged.sync_host_us_per_seq == H.SYNC_HOST_US_PER_REQUEST
    extra = float(S.t_engine_ms(charged, 64, 1000, 4) - S.t_engine_ms(sfx, 64, 1000, 4))
    assert extra == pytest.approx(64 * H.SYNC_HOST_US_PER_REQUEST * 1e-3)
    assert p.grid.speedup[0, 0, 0] == S.evaluate(charged, [64], [1000], [4],
                                                 tau=2.0).speedup[0, 0, 0]
    ng = S.setup("H100-SXM", "Llama-3.1-8B", "ngram")
    assert P.with_sync_host(ng, P.plan_runner("ngram"))[1] is None  # V2: async kept
    assert P.with_sync_host(ng, "v1")[1].code == "v1-sync-scheduling"
    eagle = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    assert "v1-sync-scheduling" not in [n.code for n in A.serving_plan(
        eagle, [64], [1000], [4], tau=2.0).notes]
