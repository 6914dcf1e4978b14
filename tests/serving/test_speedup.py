"""specnb.serving.speedup: tau sources, the speedup and its grid, crossover and paying
batches, verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb import data, theory
from specnb import serving as S
from tests.tier import examples


def test_tokens_per_step_sources():
    g = np.arange(1, 6)
    assert np.allclose(S.tokens_per_step(g, alpha=0.7), theory.expected_tokens_per_step(0.7, g))
    assert S.tokens_per_step(3, tau=2.5) == 2.5
    # the survival sum on SpecDecode-Bench GSM8K acc_eagle P(L >= 1 + i), i = 1..5, as numbers
    # (arithmetic only: those shares are not vLLM per-step rates, T9-05)
    r = data.load("specdecode_bench_acceptance").iloc[0]
    rates = [r[f"p_ge_{i}"] for i in range(2, 7)]
    assert S.tokens_per_step(g, acceptance_rates=rates).tolist() == pytest.approx(
        [1.716, 2.198, 2.513, 2.719, 2.853])


@pytest.mark.parametrize("kwargs, match", [
    (dict(tau=4.5), r"tau must be in \[1, gamma \+ 1\] = \[1, 4\] for gamma = 3, got 4.5"),
    (dict(tau=0.5), "tau must be in"),
    (dict(alpha=1.2), r"alpha must be in \[0, 1\]"),
    (dict(acceptance_rates=[0.8, 1.3, 0.2]), r"acceptance_rates must be in \[0, 1\].*1.3"),
    (dict(acceptance_rates=[0.5, 0.7, 0.2]), "must not increase.*0.5 then 0.7"),
    (dict(acceptance_rates=[0.5, 0.3]), "gamma 3 needs 3 acceptance rates, got 2"),
    (dict(alpha=0.5, tau=2.0), "exactly one of alpha, tau or acceptance_rates"),
    (dict(), "exactly one"),
])
def test_tokens_per_step_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        S.tokens_per_step(3, **kwargs)


def test_speedup_formula_and_grid_agree():
    st_ = S.setup("A100", "Llama-3.1-8B", "Llama-3.2-1B")
    b, s, g = 16, 4000, 3
    tau = float(S.tokens_per_step(g, alpha=0.6))
    cost = (S.t_draft_ms(st_, b, s, g) + S.t_verify_ms(st_, b, s, g) + st_.sd_overhead_ms
            + S.t_engine_ms(st_, b, s, g))  # issue 16: the engine profile's costs
    assert S.speedup(st_, b, s, g, alpha=0.6) == pytest.approx(tau * S.t_plain_ms(st_, b, s) / cost)
    assert S.per_token_latency_ms(st_, b, s, g, alpha=0.6) == pytest.approx(cost / tau)
    grid = S.evaluate(st_, [1, 16, 256], [0, 4000], [1, 3, 5], alpha=0.6)
    assert grid.speedup.shape == (3, 2, 3)
    assert grid.speedup[1, 1, 1] == pytest.approx(S.speedup(st_, b, s, g, alpha=0.6))
    frame = grid.frame()
    assert len(frame) == 18 and set(frame["bound"]) <= {"memory", "compute"}
    best, sp = grid.best()
    i = np.argmax(grid.speedup, axis=2)
    assert np.array_equal(best, np.where(sp > 1, grid.gammas[i], 0))


def test_speculation_stops_paying_at_large_batch_and_long_context_brings_it_back():
    st_ = S.setup("H100", "Llama-3.1-8B", "eagle3", gpu_memory_utilization=0.9)  # issue 16's
    sp = S.speedup(st_, np.array([1, 1024])[:, None], np.array([500, 32000])[None, :], 3,
                   alpha=0.7)
    assert sp[0, 0] > 1 > sp[1, 0]  # short context: pays at batch 1, not at 1024
    assert sp[1, 1] > sp[0, 1] > 1  # long context: pays more at 1024 (MagicDec's finding)
    cross = S.crossover_batch(st_, [500, 32000], [3], max_batch=1024, alpha=0.7)
    # issue 16: at 32,000 tokens only 12 sequences' KV fit on one H100 (13 on the 79.11 GiB
    # the device reports, T7-06): it pays up to there
    assert 1 < cross[0] < 1024 and cross[1] == S.max_batch_in_memory(st_, 32000) == 13
    assert S.crossover_batch(st_, 500, [1, 2, 3], max_batch=64, tau=1.0) == 0


def test_paying_batches_finds_speculation_that_pays_only_from_a_larger_batch():
    # MagicDec's setting (8x A100, TinyLlama draft with a 512-token KV, context 16000): it loses
    # at batch 1, where crossover_batch stops (0), and pays from a few sequences on
    # (MagicDec's own engine, not vLLM: the model's defaults alone; under the vllm profile an
    # A100 runs FlashAttention-2, whose unsplit walk a multi-head target pays at every step)
    st_ = S.setup("A100", "LLaMA-2-7B-32K", "TinyLlama-1.1B", gpus=8, draft_kv_budget=512,
                  engine="specdecode-bench")
    assert S.crossover_batch(st_, 16000, [2], max_batch=64, tau=2.17) == 0
    ranges = S.paying_batches(st_, 16000, [2], max_batch=64, tau=2.17)
    sp = S.evaluate(st_, np.arange(1, 65), [16000], [2], tau=2.17).speedup[:, 0, 0]
    pays = np.flatnonzero(sp > 1) + 1
    assert ranges == [[int(pays[0]), 64]] and pays[0] > 1 and pays.size == 65 - pays[0]
    lose = "1" if pays[0] == 2 else f"1-{pays[0] - 1}"
    assert S.describe_paying(ranges, 64) == (f"does not pay at batch {lose}; pays at "
                                              f"batch {pays[0]}-64")
    # one list per context; agrees with crossover_batch where the run starts at batch 1
    st2 = S.setup("H100", "Llama-3.1-8B", "eagle3", gpu_memory_utilization=0.9)  # issue 16's
    both = S.paying_batches(st2, [500, 32000], [3], max_batch=1024, alpha=0.7)
    cross = S.crossover_batch(st2, [500, 32000], [3], max_batch=1024, alpha=0.7)
    # issue 16: at 32,000 tokens the paying range stops where the KV cache stops fitting
    assert both[0][0] == [1, int(cross[0])] and both[1] == [[1, int(cross[1])]]
    assert S.describe_paying(both[0][:1], 1024) == (f"pays up to batch {cross[0]}, not at "
                                                    f"{cross[0] + 1}")
    assert S.describe_paying([[1, 1024]], 1024) == "pays at every batch size up to 1024"
    assert S.describe_paying([], 8) == "does not pay at any batch size up to 8"
    assert S.describe_paying([[2, 3], [6, 6]], 8) == ("does not pay at batch 1, 4-5, 7-8; pays "
                                                      "at batch 2-3, 6")


def test_verdict():
    assert S.verdict(1.2) == "pays" and S.verdict(1.0) == "does not pay"
    assert S.verdict(1.02, tolerance=0.05) == "break-even"
    assert list(S.verdict(np.array([0.9, 1.1]))) == ["does not pay", "pays"]


@settings(max_examples=examples(30), deadline=None)
@given(b=st.integers(1, 1024), s=st.integers(0, 64_000), g=st.integers(1, 8),
       a=st.floats(0.0, 0.95), draft=st.sampled_from(["ngram", "eagle3", "Llama-3.2-1B", "self"]))
def test_speedup_properties(b, s, g, a, draft):
    st_ = S.setup("H100", "Llama-3.1-8B", draft)
    # nothing accepted: one token per step at a higher cost, always slower
    assert S.speedup(st_, b, s, g, tau=1.0) < 1
    # more acceptance never hurts
    assert S.speedup(st_, b, s, g, alpha=min(a + 0.05, 1.0)) >= S.speedup(st_, b, s, g, alpha=a)
    # per-token latency with speculation = plain step / speedup
    assert S.per_token_latency_ms(st_, b, s, g, alpha=a) == pytest.approx(
        S.t_plain_ms(st_, b, s) / S.speedup(st_, b, s, g, alpha=a))


# --------------------------------------------------------------------------- issue 16
def test_full_proposal_rate_gives_todays_numbers_and_partial_proposals_pay_more():
    one = S.setup("H100", "Llama-3.1-70B", "ngram", gpus=4)
    same = S.setup("H100", "Llama-3.1-70B", "ngram", gpus=4, proposal_rate=1.0)
    b, s, g = np.array([1, 64, 128]), 2000, 4
    assert np.array_equal(S.speedup(one, b, s, g, tau=1.8), S.speedup(same, b, s, g, tau=1.8))
    part = S.setup("H100", "Llama-3.1-70B", "ngram", gpus=4, proposal_rate=0.25)
    # a step verifies B (1 + M gamma) tokens and a sequence gains 1 + M (tau - 1)
    tv = S.t_verify_ms(part, 64, s, g)
    assert tv == pytest.approx(S.step_time_ms("Llama-3.1-70B", "H100", 64, s, 2, gpus=4))
    tau = 1 + 0.8 / 0.25  # vLLM's per-draft tau for 1.8 tokens per sequence-step: 4.2
    cost = (tv + S.t_draft_ms(part, 64, s, g) + part.sd_overhead_ms
            + S.t_engine_ms(part, 64, s, g))
    want = (1 + 0.25 * (tau - 1)) * S.t_plain_ms(part, 64, s) / cost
    assert S.speedup(part, 64, s, g, tau=tau) == pytest.approx(want)
    # the same tokens per step (1.8) verified more cheaply: more speedup at large batch
    assert S.speedup(part, 128, s, g, tau=tau) > S.speedup(one, 128, s, g, tau=1.8)


def test_prefill_and_end_to_end():
    st = S.setup("H100", "Llama-3.1-8B", "eagle3")
    p = S.prefill_ms(st, 128, 1000)
    # 16 chunks of 8,000 tokens at mean context 500
    assert p == pytest.approx(16 * S.step_time_ms("Llama-3.1-8B", "H100", 1, 500, 8000))
    assert S.prefill_ms(st, 4, 0) == 0.0
    assert S.end_to_end_speedup(0.0, 100.0, 2.0) == 2.0
    assert S.end_to_end_speedup(100.0, 100.0, 2.0, 10.0) == pytest.approx(200 / 160)
    g = S.evaluate(st, [1, 128], [1500], [3], alpha=0.7, input_len=1000, output_len=1000)
    pre = S.prefill_ms(st, np.array([1, 128]), 1000)
    pre_d = S.prefill_ms(st, np.array([1, 128]), 1000, draft=True)
    tp, sp = g.t_plain_ms[:, 0, 0], g.speedup[:, 0, 0]
    want = (pre + 999 * tp) / (pre + pre_d + 999 * tp / sp)  # 999 decode steps after prefill
    assert g.speedup_end_to_end[:, 0, 0] == pytest.approx(want)
    # one output token comes with the prefill: nothing to speed up, the draft's prefill costs
    one = S.evaluate(st, [1, 128], [1500], [3], alpha=0.7, input_len=1000, output_len=1)
    assert (one.speedup_end_to_end <= 1).all()
    assert (1 < g.speedup_end_to_end[:, 0, 0]).all() and (g.speedup_end_to_end < g.speedup).all()
    frame = g.frame()
    assert {"speedup_end_to_end", "prefill_ms", "fits", "t_engine_ms"} <= set(frame.columns)
    with pytest.raises(ValueError, match="give input_len and output_len together"):
        S.evaluate(st, [1], [100], [3], alpha=0.7, input_len=100)
    with pytest.raises(ValueError, match="input_len must be an integer >= 0"):
        S.evaluate(st, [1], [100], [3], alpha=0.7, input_len=-1, output_len=10)
    with pytest.raises(ValueError, match="output_len must be an integer >= 1"):
        S.evaluate(st, [1], [100], [3], alpha=0.7, input_len=10, output_len=0)


def test_batches_that_do_not_fit_never_pay():
    st = S.setup("H100", "Llama-3.1-8B", "eagle3")
    cap = S.max_batch_in_memory(st, 2000)
    grid = S.evaluate(st, [1, cap, cap + 1, 512], [2000], [3], alpha=0.7)
    assert grid.fits[:, 0, 0].tolist() == [True, True, False, False]
    best, sp = grid.best()
    assert (grid.speedup[2:, 0, 0] > 1).all() and (best[2:, 0] == 0).all()
    assert S.paying_batches(st, 2000, [3], max_batch=512, alpha=0.7) == [[1, cap]]
    assert S.crossover_batch(st, 2000, [3], max_batch=512, alpha=0.7) == cap
    assert S.describe_paying([[1, cap]], 512) == f"pays up to batch {cap}, not at {cap + 1}"


def test_sglang_tree_costs_topk_draft_steps_and_the_verified_nodes():
    st = S.setup("H100", "Llama-3.1-8B", "eagle3", engine="sglang")
    b, s = 8, 512
    chain = S.tree_parts(st, b, s, 3, topk=1, num_draft_tokens=4)
    # a chain is the chain model: T_V at gamma + 1, gamma one-token draft forwards
    assert chain["t_verify_ms"] == pytest.approx(S.t_verify_ms(st, b, s, 3))
    assert chain["t_draft_ms"] == pytest.approx(S.t_draft_ms(st, b, s, 3))
    assert chain["t_engine_ms"] == pytest.approx(S.t_engine_ms(st, b, s, 3))
    tree = S.tree_parts(st, b, s, 3, topk=4, num_draft_tokens=16)
    # the verify of 16 tokens per sequence is the target step at 16 query tokens
    assert tree["t_verify_ms"] == pytest.approx(S.step_time_ms(
        st.target, st.gpu, b, s, 16, efficiency=st.target_efficiency))
    assert tree["t_draft_ms"] > chain["t_draft_ms"]  # later steps run topk branches
    sp = S.tree_speedup(st, b, s, 3, topk=4, num_draft_tokens=16, tau=2.9)
    assert sp == pytest.approx(2.9 * tree["t_plain_ms"] / tree["cost_ms"])
    with pytest.raises(ValueError, match=r"tau must be in \[1, gamma \+ 1\]"):
        S.tree_speedup(st, b, s, 3, topk=4, num_draft_tokens=16, tau=4.5)
    with pytest.raises(ValueError, match="num_draft_tokens must be >= 2"):
        S.check_tree(st, 3, 2, 1)
    with pytest.raises(ValueError, match="verifies chains only"):
        S.check_tree(S.setup("H100", "Llama-3.1-8B", "eagle3"), 3, 2, 8)
    with pytest.raises(ValueError, match="topk must be an integer >= 1"):
        S.check_tree(st, 3, 0, 8)


def test_sglang_tree_shape_follows_sglangs_tree_builder_and_server_args():
    """SGLang's organize_draft_results keeps the top num_draft_tokens - 1 of the
    topk + (steps - 1) topk^2 scored candidates; server_args.py sets num_draft_tokens to
    steps + 1 when topk is 1 (T5-W3)."""
    from specnb import _check

    # steps 3, topk 4: 4 + 2 x 16 = 36 candidates, so at most 37 tokens verified
    assert S.max_tree_tokens(3, 4) == 37 and S.max_tree_tokens(3, 1) == 4
    assert S.max_tree_tokens(8, 8) == 1 + 8 + 7 * 64
    assert S.sglang_tree_shape(3, 4, 37) == (37, None)
    assert S.sglang_tree_shape(3, 4, 2) == (2, None)  # fewer than steps + 1: a shallow tree
    with pytest.raises(_check.ParamValueError, match=r"num_draft_tokens must be <= 37") as e:
        S.sglang_tree_shape(3, 4, 38)
    assert e.value.param == "num_draft_tokens"
    with pytest.raises(_check.ParamValueError, match=r"num_draft_tokens must be >= 2"):
        S.sglang_tree_shape(3, 4, 1)
    # topk 1: SGLang rewrites any value to steps + 1, and says so
    n, note = S.sglang_tree_shape(3, 1, 8)
    assert n == 4 and note.code == "sglang-num-draft-tokens-adjusted"
    assert S.sglang_tree_shape(3, 1, 4) == (4, None)
    st = S.setup("H100", "Llama-3.1-8B", "eagle3", engine="sglang")
    with pytest.raises(_check.ParamValueError, match="must be steps \\+ 1 = 4 with topk 1"):
        S.check_tree(st, 3, 1, 8)  # the library costs only what SGLang runs
    # every published SGLang point in data/ is a shape SGLang runs
    import pandas as pd
    from specnb.data import path
    d = pd.read_csv(path("engine_measurements"))
    d = d[d["topk"].notna()]
    for r in d.itertuples():
        g, k, n = int(r.gamma), int(r.topk), int(r.num_draft_tokens)
        assert S.sglang_tree_shape(g, k, n) == (n, None), r.id
    # a tree of 2 tokens holds one draft: tau at most 2 whatever the steps
    with pytest.raises(ValueError, match=r"tau must be in \[1, gamma \+ 1\]"):
        S.tree_speedup(st, 1, 512, 3, topk=4, num_draft_tokens=2, tau=2.5)
    assert S.tree_speedup(st, 1, 512, 3, topk=4, num_draft_tokens=2, tau=2.0) > 0


def test_flash_attention_2_verify_steps_share_the_multi_token_cost_by_proposal_rate():
    # on an A40 (FA2) a step where some sequence verifies leaves the decode path; with
    # proposal rate M that is 1 - (1 - M)^B of the steps (speedup._Times.verify)
    from specnb.serving import step as ST
    from specnb.serving.speedup import _Times

    st = S.setup("A40", "Llama-3.1-8B", "ngram", proposal_rate=0.17)
    tm = _Times(st)
    for b in (1, 8, 32):
        plain = ST._step(*tm.tgt, b, 2000.0, tm._q(4.0), engine_step=tm.moe)[0]
        multi = ST._step(*tm.tgt, b, 2000.0, tm._q(4.0), engine_step=tm.moe, multi=tm.multi)[0]
        share = 1 - 0.83 ** b
        assert tm.verify(b, 2000.0, 4.0)[0] == pytest.approx(
            share * multi + (1 - share) * plain, rel=1e-12)
    # the steady plan: n-gram pays alone and loses at batch 32 on the A40, not on the H100
    a40 = S.speedup(st, np.array([1, 32]), 2000, 4, tau=2.0)
    h100 = S.speedup(S.setup("H100-SXM", "Llama-3.1-8B", "ngram", proposal_rate=0.17),
                     np.array([1, 32]), 2000, 4, tau=2.0)
    assert a40[0] > 1.0 > a40[1]
    assert (h100 > 1.0).all()


def test_the_multi_token_note_names_the_gpu_and_the_walk_where_the_rule_applies():
    a100 = S.setup("A100", "Llama-3.1-8B", "eagle3")
    note = S.multi_token_note(a100, [1000, 4000])
    assert note.code == "fa2-multi-token-attention"
    assert "A100-SXM-80GB (compute capability 8.0)" in note.message and "4x" in note.message
    assert f"{4000 * 32 * 40.8e-6:.2f} ms a step at context 4,000" in note.message
    assert S.multi_token_note(S.setup("H100-SXM", "Llama-3.1-8B", "eagle3"), [4000]) is None
    assert S.multi_token_note(S.setup("A100", "Llama-3.1-8B", "eagle3", engine="sglang"),
                              [4000]) is None
