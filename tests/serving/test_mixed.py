"""specnb/serving/mixed.py: the mixed step of continuous batching against the steady-batch
rule it shares (_step_totals) and the draft forwards vLLM's proposers run."""

import numpy as np
import pytest

from specnb import serving as S
from specnb.serving import step as ST

EAGLE3 = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")


def test_alike_decoding_sequences_are_the_plain_step():
    r = S.mixed_step_ms(EAGLE3, [4000] * 64, [1] * 64, [0] * 64)
    assert r["target_ms"] == pytest.approx(S.t_plain_ms(EAGLE3, 64, 4000), rel=1e-12)
    assert r["draft_ms"] == r["engine_ms"] == 0.0
    assert r["total_ms"] == r["target_ms"]


def test_verify_step_is_the_steady_verify_plus_the_causal_block():
    r = S.mixed_step_ms(EAGLE3, [4000] * 16, [5] * 16, [4] * 16)
    # the steady rule reads q x S pairs; the mixed step adds the block's own q (q - 1) / 2
    assert r["target_ms"] == pytest.approx(S.t_verify_ms(EAGLE3, 16, 4000, 4), rel=1e-4)
    assert r["target_ms"] > S.t_verify_ms(EAGLE3, 16, 4000, 4)
    assert r["engine_ms"] == pytest.approx(EAGLE3.sd_overhead_ms
                                           + S.t_engine_ms(EAGLE3, 16, 4000, 4), rel=1e-12)


def test_draft_forwards_first_over_all_tokens_then_one_per_speculating_sequence():
    st = S.setup("H100-SXM", "Llama-3.1-8B", "Llama-3.2-1B")
    args = ST._prep(st.draft.arch, st.gpu, st.dtype, st.kv_dtype, 1, st.draft_efficiency)
    c = np.array([100, 200])
    q = np.array([3, 50])  # a verify and a prefill chunk
    k = np.array([2, 0])
    first = ST._step_totals(*args, 53.0, 300.0, 3 * 101 + 50 * (200 + 49 / 2))[0]
    second = ST._step_totals(*args, 1.0, 103.0, 103.0)[0]  # one token, context 100 + 3
    r = S.mixed_step_ms(st, c, q, k)
    assert r["draft_ms"] == pytest.approx(first + second, rel=1e-12)


def test_self_speculation_reads_the_targets_cache_no_draft_prefill():
    st = S.setup("H100-SXM", "Llama-3.1-8B", "self", draft_kv_budget=2048)
    dec = S.mixed_step_ms(st, [8000] * 4, [5] * 4, [4] * 4)
    # k one-token forwards per speculating sequence at the budget: the steady rule's T_D
    assert dec["draft_ms"] == pytest.approx(S.t_draft_ms(st, 4, 8000, 4), rel=1e-3)
    # a prefill chunk in the same step costs the draft nothing (MagicDec: no draft prefill)
    mix = S.mixed_step_ms(st, [8000] * 4 + [0], [5] * 4 + [2048], [4] * 4 + [0])
    assert mix["draft_ms"] == pytest.approx(dec["draft_ms"], rel=1e-12)
    assert mix["target_ms"] > dec["target_ms"]


def test_ngram_drafting_is_a_fraction_of_the_target_and_dflash_one_forward():
    ng = S.setup("H100-SXM", "Llama-3.1-8B", "ngram")
    r = S.mixed_step_ms(ng, [1000, 0], [5, 512], [4, 0])
    assert r["draft_ms"] == pytest.approx(S.NGRAM_DRAFT_FRACTION * r["target_ms"])
    df = S.setup("H100-SXM", "Llama-3.1-8B", "dflash")
    one = S.mixed_step_ms(df, [4000] * 8, [5] * 8, [4] * 8)
    two = S.mixed_step_ms(df, [4000] * 8, [5] * 8, [8] * 8)
    # one forward whatever k: the block costs far less than k sequential forwards would
    assert two["draft_ms"] < 1.2 * one["draft_ms"]
    assert one["draft_ms"] == pytest.approx(S.t_draft_ms(df, 8, 4000, 4), rel=0.05)


@pytest.mark.parametrize("args, match", [
    (([1, 2], [1], [0, 0]), "one entry per scheduled sequence"),
    (([-1], [1], [0]), "contexts"),
    (([1], [0], [0]), "query_tokens"),
    (([1], [1], [-1]), "draft_tokens"),
    (([], [], []), "non-empty"),
])
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        S.mixed_step_ms(EAGLE3, *args)
    with pytest.raises(TypeError, match="Setup"):
        S.mixed_step_ms("H100", [1], [1], [0])


def test_lm_head_only_on_the_logit_rows():
    # vLLM computes logits at each request's last scheduled token (+ its verified drafts): a
    # 2,048-token prefill chunk needs one LM-head row, not 2,048
    st = S.setup("A40", "Llama-3.1-8B", "ngram")
    c, q, k = [2000, 0], [5, 2048], [4, 0]
    full = S.mixed_step_ms(st, c, q, k)
    assert S.mixed_step_ms(st, c, q, k, logit_tokens=q)["target_ms"] == full["target_ms"]
    cut = S.mixed_step_ms(st, c, q, k, logit_tokens=[5, 1])
    t = st.target
    fl = st.target_efficiency.compute * st.gpu.flops(st.dtype)  # overlap 0: FLOPs' time adds
    saved = 2.0 * t.vocab_size * t.hidden_size * 2047 / fl * 1e3
    assert full["target_ms"] - cut["target_ms"] == pytest.approx(saved, rel=1e-9)
    assert saved / full["target_ms"] == pytest.approx(0.065, abs=0.01)  # the head's share


def test_draft_first_forward_lm_head_one_row_per_sequence():
    st = S.setup("H100-SXM", "Llama-3.1-8B", "Llama-3.2-1B")
    c, q, k = [100, 200], [3, 50], [2, 0]
    full = S.mixed_step_ms(st, c, q, k)
    cut = S.mixed_step_ms(st, c, q, k, logit_tokens=[3, 1])
    d = st.draft.arch
    fl = st.draft_efficiency.compute * st.gpu.flops(st.dtype)
    saved = 2.0 * d.vocab_size * d.hidden_size * (53 - 2) / fl * 1e3
    assert full["draft_ms"] - cut["draft_ms"] == pytest.approx(saved, rel=1e-9)


@pytest.mark.parametrize("lg, match", [([1], "one entry"), ([2, 1], r"logit_tokens\[0\]"),
                                       ([0, 1], "logit_tokens")])
def test_bad_logit_tokens(lg, match):
    with pytest.raises(ValueError, match=match):
        S.mixed_step_ms(EAGLE3, [1, 2], [1, 5], [0, 0], logit_tokens=lg)


def test_the_drafts_first_forward_leaves_the_decode_path_on_flash_attention_2():
    # trial 6 M4: the draft's first forward carries the verify step's query lengths, so on
    # FlashAttention-2 it walks its longest context unsplit, as the target's forward does
    st = S.setup("A100", "Llama-3.1-8B", "Llama-3.2-1B")
    m = S.MixedStep(st) if hasattr(S, "MixedStep") else __import__(
        "specnb.serving.mixed", fromlist=["MixedStep"]).MixedStep(st)
    drf = m.times.drf
    fm, walk = ST.multi_token_attention(drf[0], drf[1], drf[5], m.engine_step, drf[4])
    assert walk == pytest.approx(drf[0].n_layers * 40.8e-6 * drf[0].head_dim / 128)
    c, q, k = np.array([32000.0] * 4), np.array([4.0] * 4), np.array([3.0] * 4)
    first = m._forward_ms(drf, 16.0, float(c.sum()), m._att(c, q), 4.0, (fm, walk * 32000))
    plain = m._forward_ms(drf, 16.0, float(c.sum()), m._att(c, q), 4.0)
    assert first - plain >= walk * 32000 - 4 * 32000 * drf[0].kv_bytes_per_token() / (
        drf[2].bandwidth * drf[1].bandwidth) * 1e3 - 1e-9
    r = S.mixed_step_ms(st, c.astype(int), q.astype(int), k.astype(int))
    h = S.mixed_step_ms(S.setup("H100-SXM", "Llama-3.1-8B", "Llama-3.2-1B"), c.astype(int),
                        q.astype(int), k.astype(int))
    assert r["draft_ms"] > 2 * h["draft_ms"]
