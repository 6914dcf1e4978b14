"""The serving step-time model (specnb.serving): catalogues against the reference, the
physics, tau sources, reproduction of MagicDec rows it was not fitted on, vLLM's schedule
rules, calibration and bad input. Reference numbers: shared/reference/batch-model.md."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb import data, theory
from specnb import serving as S
from specnb.vllm import check_speculative_config


# --------------------------------------------------------------------------- catalogues
@pytest.mark.parametrize("model, kib", [("Llama-3.1-8B", 128), ("Llama-3.1-70B", 320),
                                        ("Llama-2-7B", 512)])
def test_kv_bytes_per_token_match_the_reference(model, kib):
    # reference 6.2: 131,072 B = 128 KiB; 327,680 B = 320 KiB; 524,288 B = 512 KiB (bf16)
    assert S.architecture(model).kv_bytes_per_token("bf16") == kib * 1024
    assert S.architecture(model).kv_bytes_per_token("fp8") == kib * 512


def test_parameter_counts_match_the_reference_at_printed_precision():
    a = S.architecture("Llama-3.1-8B")
    assert round(a.params / 1e9, 3) == 8.030  # "8.030 B (6.980 B non-embedding)"
    assert round((a.params - 2 * a.embedding_params) / 1e9, 3) == 6.980
    assert round(a.weight_bytes("bf16") / 1e9, 2) == 16.06  # "16.06 GB"
    b = S.architecture("Llama-3.1-70B")
    assert round(b.params / 1e9, 2) == 70.55 and round(b.weight_bytes() / 1e9, 1) == 141.1


@pytest.mark.parametrize("model, k_tokens", [("Llama-3.1-8B", 122.5), ("Llama-3.1-70B", 430.6),
                                             ("Llama-2-7B", 25.7)])
def test_batch_tokens_where_kv_equals_weights(model, k_tokens):
    a = S.architecture(model)
    assert round(a.weight_bytes() / a.kv_bytes_per_token() / 1e3, 1) == k_tokens


def test_every_catalogue_model_agrees_with_its_published_count():
    for name in S.architecture_names():
        a = S.architecture(name)
        assert abs(a.params / a.params_published - 1) < 0.01, name
    # Qwen3-0.6B: 0.44 B non-embedding on its card; tied embeddings
    q = S.architecture("qwen3-0.6b")
    assert round((q.params - q.embedding_params) / 1e9, 2) == 0.44


@pytest.mark.parametrize("gpu, ridge", [("H100-SXM", 295), ("H200", 206), ("A100-SXM-80GB", 153),
                                        ("L40S", 419), ("RTX-3090", 76), ("RTX-4090", 164),
                                        ("B200", 281)])
def test_ridge_points_match_the_reference(gpu, ridge):
    assert round(S.ridge_point(gpu)) == ridge


def test_catalogues_hold_the_required_rows_with_provenance():
    gpus = {"H100-SXM", "H200", "A100-SXM-80GB", "A40", "L40", "L40S", "RTX-3090", "RTX-4090",
            "B200"}
    assert gpus <= set(S.gpu_names())
    models = {"Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.2-1B", "Llama-2-7B", "LLaMA-2-7B-32K",
              "TinyLlama-1.1B", "Mistral-7B-v0.3", "Qwen2.5-7B", "Qwen2.5-32B", "Qwen3-8B",
              "Qwen3-0.6B"}
    assert models <= set(S.architecture_names())
    for name in ("gpus", "model_architectures"):
        assert (data.load(name)["source"] != "").all()


def test_names_are_case_insensitive_and_aliases_work():
    assert S.gpu("h100").name == S.gpu("H100 SXM 80GB").name == "H100-SXM"
    assert S.architecture("LLAMA-3.1-8B-INSTRUCT").name == "Llama-3.1-8B"
    assert S.gpu("a100").fp8_flops is None and S.gpu("A100").flops("fp8") == 312e12
    assert S.gpu("H100").flops("fp8") == pytest.approx(2 * S.gpu("H100").flops("bf16"), rel=1e-3)


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ValueError, match="unknown GPU 'V100'.*H100-SXM.*B200"):
        S.gpu("V100")
    with pytest.raises(ValueError, match="unknown model 'gpt-5'.*Llama-3.1-8B.*Qwen3-0.6B"):
        S.architecture("gpt-5")


def _llama8b_config():
    return {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
            "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
            "vocab_size": 128256, "tie_word_embeddings": False}


def test_config_json_reads_like_the_catalogue(tmp_path):
    path = tmp_path / "m" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(_llama8b_config()))
    for arg in (path, str(path), str(path.parent)):
        a = S.architecture(arg)
        assert a.params == S.architecture("Llama-3.1-8B").params
        assert a.kv_bytes_per_token() == 131072
    # a multimodal config's text_config; Qwen2 gets q/k/v biases by default
    qwen = {"text_config": {"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584,
                            "num_attention_heads": 28, "num_key_value_heads": 4,
                            "intermediate_size": 18944, "vocab_size": 152064}}
    assert S.architecture(qwen).params == S.architecture("Qwen2.5-7B").params


def test_bad_config_json(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"num_hidden_layers": 32,\n "hidden_size": 4096,}')
    with pytest.raises(ValueError, match="line 2, column"):
        S.architecture(bad)
    cfg = _llama8b_config()
    del cfg["vocab_size"]
    with pytest.raises(ValueError, match="missing key 'vocab_size'"):
        S.architecture(cfg)
    with pytest.raises(ValueError, match="mixture-of-experts"):
        S.architecture({**_llama8b_config(), "num_local_experts": 8})
    with pytest.raises(ValueError, match="hidden_size must be a positive integer"):
        S.architecture({**_llama8b_config(), "hidden_size": 0})
    with pytest.raises(FileNotFoundError):
        S.architecture(str(tmp_path / "nothing" / "config.json"))


# --------------------------------------------------------------------------- max positions
def test_catalogue_max_position_embeddings_with_their_source():
    # each row's value sits in its note with where it was read (a config.json or a copy of it)
    expected = {"Llama-3.1-8B": 131072, "Llama-3.1-70B": 131072, "Llama-3.2-1B": 131072,
                "Llama-2-7B": 4096, "LLaMA-2-7B-32K": 32768, "TinyLlama-1.1B": 2048,
                "Mistral-7B-v0.3": 32768, "Qwen2.5-7B": 131072, "Qwen2.5-32B": 131072,
                "Qwen3-8B": 40960, "Qwen3-0.6B": 40960}
    assert set(S.architecture_names()) == set(expected)
    rows = data.load("model_architectures").set_index("model")
    for name, value in expected.items():
        assert S.architecture(name).max_position_embeddings == value
        assert f"max_position_embeddings {value}" in rows.loc[name, "note"] + \
            rows.loc[name, "source"], name
    # -Instruct / -Base aliases whose config.json differs carry their own value and name
    inst = S.architecture("qwen2.5-7b-instruct")
    assert (inst.name, inst.max_position_embeddings) == ("Qwen2.5-7B-Instruct", 32768)
    assert S.architecture("Qwen3-8B-Base").max_position_embeddings == 32768
    assert S.architecture("Llama-3.1-8B-Instruct").max_position_embeddings == 131072
    # MagicDec's 32K target is its own row (same shape as Llama-2-7B), no longer an alias
    long = S.architecture("togethercomputer/LLaMA-2-7B-32K")
    short = S.architecture("Llama-2-7b-hf")
    assert long.name == "LLaMA-2-7B-32K" and short.name == "Llama-2-7B"
    assert dataclasses.replace(long, name="x", source="", max_position_embeddings=None) == \
        dataclasses.replace(short, name="x", source="", max_position_embeddings=None)
    assert S.model_id(long) == "togethercomputer/LLaMA-2-7B-32K"
    assert S.magicdec_setup("table3a").target.name == "LLaMA-2-7B-32K"


def test_config_json_max_position_embeddings(tmp_path):
    assert S.architecture(_llama8b_config()).max_position_embeddings is None  # absent: unknown
    cfg = {**_llama8b_config(), "max_position_embeddings": 8192}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert S.architecture(path).max_position_embeddings == 8192
    with pytest.raises(ValueError, match="max_position_embeddings must be a positive integer"):
        S.architecture({**_llama8b_config(), "max_position_embeddings": "4k"})
    # a config with a maximum gets the note; one without gets none
    assert S.context_limit_notes(cfg, [8192]) == []
    (note,) = S.context_limit_notes(cfg, [1000, 10000])
    assert "context 10000 exceeds" in note and "maximum of 8192 positions" in note
    assert S.context_limit_notes(_llama8b_config(), [10 ** 6]) == []


def test_context_beyond_the_maximum_is_a_note_not_an_error():
    # the README's old example: Llama-2-7B (4,096 positions) at context 16,000
    st_ = S.setup("A100", "Llama-2-7B", "TinyLlama-1.1B", gpus=8, draft_kv_budget=512)
    grid = S.evaluate(st_, [32], [16000], [2], tau=2.17)  # evaluated: no error
    assert grid.speedup.shape == (1, 1, 1)
    notes = S.context_limit_notes(st_, [1000, 16000])
    assert len(notes) == 2
    target, draft = notes
    assert "context 16000 exceeds the target Llama-2-7B's maximum of 4096 positions" in target
    assert "1000" not in target.split("exceeds")[0]  # only the contexts above it
    assert "LLaMA-2-7B-32K, 32768 positions" in target and "within 4096" in target
    # TinyLlama (2,048) reads 512 tokens in the model, but vLLM has no draft KV budget
    assert "draft TinyLlama-1.1B takes at most 2048 positions" in draft
    assert "no KV budget" in draft
    assert S.context_limit_notes(st_, [4096]) == [draft.replace("(16000)", "(4096)")]
    assert S.context_limit_notes(st_, 2048) == []
    # the 32K variant serves 16,000; a draft model without a budget beyond its maximum
    st32 = S.setup("A100", "LLaMA-2-7B-32K", "TinyLlama-1.1B", gpus=8)
    (note,) = S.context_limit_notes(st32, [16000])
    assert "exceeds the draft TinyLlama-1.1B's maximum of 2048" in note
    assert "long-context variant of the model" in note  # no same-shape row to name
    assert S.context_limit_notes(S.setup("H100", "Llama-2-7B", "eagle3"), [5000])[0].startswith(
        "context 5000 exceeds the target Llama-2-7B's")
    with pytest.raises(ValueError, match="contexts"):
        S.context_limit_notes(st32, [-1])


# --------------------------------------------------------------------------- step time
def test_step_breakdown_bytes_and_flops():
    br = S.step_breakdown("Llama-3.1-8B", "H100", 32, 1000, 4)
    a = S.architecture("Llama-3.1-8B")
    assert br["kv_bytes"] == 32 * 1000 * 131072
    assert br["weight_bytes"] == a.step_params * 2
    assert br["linear_flops"] == 2 * a.matmul_params_per_token * 32 * 4
    assert br["attention_flops"] == 4 * 32 * 32 * 128 * 32 * 4 * 1000
    assert str(br["bound"]) == "memory"
    assert str(S.step_breakdown("Llama-3.1-8B", "H100", 512, 0, 8)["bound"]) == "compute"
    # tensor parallelism splits weights and FLOPs n ways, KV min(n, kv_heads) ways
    tp = S.step_breakdown("Llama-3.1-8B", "H100", 32, 1000, 4, gpus=16)
    assert tp["weight_bytes"] == br["weight_bytes"] / 16 and tp["kv_bytes"] == br["kv_bytes"] / 8
    assert tp["t_comm_ms"] > 0 and br["t_comm_ms"] == 0
    # weight dtypes: fp8 halves, int4 quarters the weight bytes
    assert S.step_breakdown("Llama-3.1-8B", "H100", 1, 0, dtype="int4")["weight_bytes"] == \
        br["weight_bytes"] / 4
    # a KV budget caps the context read
    capped = S.step_breakdown("Llama-3.1-8B", "H100", 32, 100000, kv_budget=512)
    assert capped["kv_bytes"] == 32 * 512 * 131072


def test_additive_default_reproduces_specdecode_bench_fit():
    """With the defaults (derived from SpecDecode-Bench's Llama8BH100 constants), the target step
    is c_kv x KV tokens + c_compute x query tokens + c_fixed up to attention FLOPs."""
    pred = data.load("specdecode_bench_predictor").set_index("constant")["value"]
    eff = S.DEFAULT_EFFICIENCY
    g = S.gpu("H100-SXM")
    assert round(131072 / pred["target_c_kv"] / g.bandwidth, 3) == eff.bandwidth
    a = S.architecture("Llama-3.1-8B")
    assert round(2 * a.matmul_params_per_token / pred["target_c_compute"] / g.bf16_flops, 3) \
        == eff.compute
    w = a.step_params * 2 / (eff.bandwidth * g.bandwidth)
    assert round(1e3 * pred["target_c_fixed"] - 1e3 * w, 2) == eff.fixed_ms
    b, s, q = 16, 2000, 4
    br = S.step_breakdown("Llama-3.1-8B", "H100-SXM", b, s, q)
    additive = 1e3 * (pred["target_c_kv"] * b * s + pred["target_c_compute"] * b * q
                      + pred["target_c_fixed"])
    assert float(br["time_ms"]) == pytest.approx(additive, rel=0.02)


def test_allreduce_default_is_derived_from_magicdec_table4():
    st = S.magicdec_setup("table4", target_efficiency=S.Efficiency(allreduce_us=0.0))
    r = S.magicdec_table("table4")
    res = r["t_ar_ms"].to_numpy() - S.t_plain_ms(st, r["batch_size"].to_numpy(),
                                                r["context"].to_numpy())
    assert round(res.mean() / 64 * 1e3) == S.DEFAULT_EFFICIENCY.allreduce_us


@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 512), s=st.integers(0, 100_000), q=st.integers(1, 16),
       overlap=st.sampled_from([0.0, 0.5, 1.0]))
def test_step_time_grows_with_batch_context_and_query(b, s, q, overlap):
    eff = S.Efficiency(overlap=overlap)
    t = lambda *a: S.step_time_ms("Llama-3.1-8B", "A100", *a, efficiency=eff)  # noqa: E731
    # strictly with partial overlap; the ideal roofline is flat while memory-bound
    grows = (lambda x, y: x > y) if overlap < 1 else (lambda x, y: x >= y)  # noqa: E731
    assert grows(t(b + 1, s, q), t(b, s, q))
    assert t(b, s + 1000, q) > t(b, s, q)
    assert grows(t(b, s, q + 1), t(b, s, q))
    # the ideal roofline (overlap 1) is never slower than partial overlap
    assert S.step_time_ms("Llama-3.1-8B", "A100", b, s, q, efficiency=S.Efficiency(overlap=1)) \
        <= t(b, s, q) + 1e-12


def test_step_time_bad_input():
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got 0"):
        S.step_time_ms("Llama-3.1-8B", "H100", 0, 100)
    with pytest.raises(ValueError, match="dtype must be one of"):
        S.step_time_ms("Llama-3.1-8B", "H100", 1, 100, dtype="fp4")
    with pytest.raises(ValueError, match="gpus must be an integer >= 1"):
        S.step_time_ms("Llama-3.1-8B", "H100", 1, 100, gpus=0)
    with pytest.raises(ValueError, match="overlap must be in"):
        S.Efficiency(overlap=2)
    with pytest.raises(ValueError, match="bandwidth must be in"):
        S.Efficiency(bandwidth=0)


# --------------------------------------------------------------------------- drafts
def test_drafts():
    tgt = "Llama-3.1-8B"
    head = S.draft("eagle3", tgt)
    assert head.kind == "head" and head.arch.n_layers == 1 and head.arch.vocab_size == 128256
    assert S.draft("ngram", tgt).arch is None
    assert S.draft("Llama-3.2-1B", tgt).method == "draft_model"
    assert S.draft("self", tgt, kv_budget=512).kv_budget == 512
    with pytest.raises(ValueError, match="vocab_size 151936 but the target Llama-3.1-8B has "
                                         "128256"):
        S.draft("Qwen3-0.6B", tgt)
    with pytest.raises(ValueError, match="ngram drafting reads no KV"):
        S.draft("ngram", tgt, kv_budget=512)
    with pytest.raises(ValueError, match="unknown draft 'medusa2'.*ngram.*Llama-3.2-1B"):
        S.draft("medusa2", tgt)
    with pytest.raises(ValueError, match="draft_kv_budget must be an integer >= 1"):
        S.draft("self", tgt, kv_budget=0)


def test_draft_times_follow_the_draft():
    st_ng = S.setup("H100", "Llama-3.1-8B", "ngram")
    assert S.t_draft_ms(st_ng, 8, 1000, 3) == pytest.approx(
        S.NGRAM_DRAFT_FRACTION * S.t_verify_ms(st_ng, 8, 1000, 3))
    st_self = S.setup("H100", "Llama-3.1-8B", "self")
    assert S.t_draft_ms(st_self, 8, 1000, 3) == pytest.approx(3 * S.t_plain_ms(st_self, 8, 1000))
    budget = S.setup("H100", "Llama-3.1-8B", "self", draft_kv_budget=512)
    assert S.t_draft_ms(budget, 8, 100000, 1) == pytest.approx(S.t_plain_ms(budget, 8, 512))


# --------------------------------------------------------------------------- tau
def test_tokens_per_step_sources():
    g = np.arange(1, 6)
    assert np.allclose(S.tokens_per_step(g, alpha=0.7), theory.expected_tokens_per_step(0.7, g))
    assert S.tokens_per_step(3, tau=2.5) == 2.5
    # SpecDecode-Bench GSM8K acc_eagle: P(L >= 1 + i) for i = 1..5
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


# --------------------------------------------------------------------------- speedup, grid
def test_speedup_formula_and_grid_agree():
    st_ = S.setup("A100", "Llama-3.1-8B", "Llama-3.2-1B")
    b, s, g = 16, 4000, 3
    tau = float(S.tokens_per_step(g, alpha=0.6))
    cost = S.t_draft_ms(st_, b, s, g) + S.t_verify_ms(st_, b, s, g) + S.SD_OVERHEAD_MS
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
    st_ = S.setup("H100", "Llama-3.1-8B", "eagle3")
    sp = S.speedup(st_, np.array([1, 1024])[:, None], np.array([500, 32000])[None, :], 3,
                   alpha=0.7)
    assert sp[0, 0] > 1 > sp[1, 0]  # short context: pays at batch 1, not at 1024
    assert sp[1, 1] > sp[0, 1] > 1  # long context: pays more at 1024 (MagicDec's finding)
    cross = S.crossover_batch(st_, [500, 32000], [3], max_batch=1024, alpha=0.7)
    assert 1 < cross[0] < 1024 and cross[1] == 1024
    assert S.crossover_batch(st_, 500, [1, 2, 3], max_batch=64, tau=1.0) == 0


def test_paying_batches_finds_speculation_that_pays_only_from_a_larger_batch():
    # MagicDec's setting (8x A100, TinyLlama draft with a 512-token KV, context 16000): it loses
    # at batch 1, where crossover_batch stops (0), and pays from a few sequences on
    st_ = S.setup("A100", "LLaMA-2-7B-32K", "TinyLlama-1.1B", gpus=8, draft_kv_budget=512)
    assert S.crossover_batch(st_, 16000, [2], max_batch=64, tau=2.17) == 0
    ranges = S.paying_batches(st_, 16000, [2], max_batch=64, tau=2.17)
    sp = S.evaluate(st_, np.arange(1, 65), [16000], [2], tau=2.17).speedup[:, 0, 0]
    pays = np.flatnonzero(sp > 1) + 1
    assert ranges == [[int(pays[0]), 64]] and pays[0] > 1 and pays.size == 65 - pays[0]
    assert S.describe_paying(ranges, 64) == (f"does not pay at batch 1-{pays[0] - 1}; pays at "
                                              f"batch {pays[0]}-64")
    # one list per context; agrees with crossover_batch where the run starts at batch 1
    st2 = S.setup("H100", "Llama-3.1-8B", "eagle3")
    both = S.paying_batches(st2, [500, 32000], [3], max_batch=1024, alpha=0.7)
    cross = S.crossover_batch(st2, [500, 32000], [3], max_batch=1024, alpha=0.7)
    assert both[0][0] == [1, int(cross[0])] and both[1] == [[1, 1024]]
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


# --------------------------------------------------------------------------- MagicDec
@pytest.mark.parametrize("table", ["table3a", "table3b"])
@pytest.mark.parametrize("limits", [{"max_train_batch": 64}, {"max_train_context": 8000}],
                         ids=["batch-split", "context-split"])
def test_magicdec_rows_not_fitted_on_are_reproduced(table, limits):
    """Fit on some rows of MagicDec appendix Table 3, predict the others' speedup (printed to 2
    decimals) within 10 %, the calibrated goal (benchmarks/bench_serving_model.py prints the
    median and max: 2.6 % and 9.7 % for the batch split, 3.2 % and 9.2 % for the context split),
    and every pays / does-not-pay verdict."""
    _, pred = S.fit_and_predict(table, **limits)
    assert pred["fitted"].sum() >= 8
    pred = pred[~pred["fitted"]]
    assert len(pred) >= 2
    assert pred["relative_error"].abs().max() <= 0.10
    assert ((pred["speedup"] > 1) == (pred["speedup_printed"] > 1)).all()


def test_magicdec_tables_transcribed_consistently():
    """Every row satisfies x = T_AR / T_SD within 0.01 (reference 2.2), and the model's
    speedup formula reproduces x from the printed times within MagicDec's overhead gap."""
    df = data.load("magicdec_steps")
    assert len(df) == 39
    assert ((df["t_ar_ms"] / df["t_sd_ms"] - df["speedup"]).abs() <= 0.01 + 1e-9).all()
    gap = df["omega"] * df["t_sd_ms"] - df["gamma_t_draft_ms"] - df["t_verify_ms"]
    t3 = df["table_id"].str.startswith("table3")
    assert gap[t3].between(1.25, 1.85).all()  # 1.29-1.81 ms; SD_OVERHEAD_MS is 1.21 ms


def test_fit_and_predict_needs_rows_on_both_sides():
    with pytest.raises(ValueError, match="leave some rows to fit and some to predict"):
        S.fit_and_predict("table4", max_train_batch=64)


def test_eagle3_batch_table_beside_the_model():
    res = S.batch_table_comparison("eagle3_table3_sglang_batch", "H100", alpha=0.7)
    assert len(res) == 18 and set(res["gamma"]) == {3}
    assert res["printed"].tolist()[:2] == [1.40, 1.38]
    with pytest.raises(ValueError, match="name must be one of"):
        S.batch_table_comparison("eagle3_table1", "H100", alpha=0.7)


def test_uncalibrated_defaults_meet_the_goal_on_magicdec():
    pred = pd.concat([S.predict_table(S.magicdec_setup(t), S.magicdec_table(t))
                      for t in S.MAGICDEC_TABLES])
    assert pred["relative_error"].abs().median() <= 0.20
    assert ((pred["speedup"] > 1) == (pred["speedup_printed"] > 1)).mean() >= 0.85


# --------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("overlap", [0.0, 1.0])
def test_calibration_recovers_known_efficiencies(overlap):
    true = S.Efficiency(bandwidth=0.8, compute=0.5, fixed_ms=2.0, token_us=5.0, overlap=overlap)
    st_ = S.setup("H200", "Llama-3.1-8B", "self")
    b = np.array([1, 4, 16, 64, 256, 1, 4, 16, 64, 256, 8, 128])
    s = np.array([128, 128, 128, 128, 128, 8000, 8000, 8000, 8000, 8000, 30000, 512])
    q = np.array([1, 1, 4, 4, 8, 1, 4, 1, 8, 1, 2, 16])
    ms = S.step_time_ms(st_.target, st_.gpu, b, s, q, efficiency=true)
    df = pd.DataFrame({"role": "target", "batch_size": b, "context": s, "query_tokens": q,
                       "ms": ms})
    cal = S.calibrate(st_, df)
    got = cal.setup.target_efficiency
    assert got.overlap == overlap
    for f in ("bandwidth", "compute", "fixed_ms", "token_us"):
        assert getattr(got, f) == pytest.approx(getattr(true, f), rel=1e-6), f
    assert cal.report["relative_error"].abs().max() < 1e-9
    assert cal.setup.draft_efficiency == st_.draft_efficiency  # no draft rows: untouched


def test_calibration_csv_file(tmp_path):
    """A CSV in the calibration format (as a transformers measurement on one GPU would give:
    target rows only, ms to 2 decimals) is read and fitted directly."""
    true = S.Efficiency(bandwidth=0.85, compute=0.6, fixed_ms=3.0, token_us=10.0)
    st_ = S.setup("H200", "Llama-3.1-8B", "eagle3")
    grid = [(b, s, q) for b in (1, 4, 16, 64) for s in (512, 4096) for q in (1, 4)]
    lines = ["role,batch_size,context,query_tokens,ms"]
    for b, s, q in grid:
        ms = S.step_time_ms(st_.target, st_.gpu, b, s, q, efficiency=true)
        lines.append(f"target,{b},{s},{q},{ms:.2f}")
    p = tmp_path / "steps.csv"
    p.write_text("\n".join(lines) + "\n")
    cal = S.calibrate(st_, p)
    assert cal.report["relative_error"].abs().max() < 0.005
    assert S.t_plain_ms(cal.setup, 256, 8192) == pytest.approx(
        S.step_time_ms(st_.target, st_.gpu, 256, 8192, efficiency=true), rel=0.02)


@pytest.mark.parametrize("text, match", [
    ("role,batch_size,context,ms\ntarget,1,10,5\n", "missing column.*query_tokens"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,0\n", "row 2: ms must be a positive"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,-3\n", "ms must be a positive"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,abc\n", "ms must be a positive"),
    ("role,batch_size,context,query_tokens,ms\nverify,1,10,1,3\n", "role must be 'target' or"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1.5,10,1,3\n", "batch_size must be an "
                                                                      "integer >= 1"),
    ("role,batch_size,context,query_tokens,ms\n", "no rows"),
    ("", "empty file"),
])
def test_bad_calibration_csv(tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        S.read_measurements(p)


def test_calibration_rejects_draft_rows_without_a_draft_model():
    df = pd.DataFrame({"role": ["draft"], "batch_size": [1], "context": [1], "query_tokens": [1],
                       "ms": [1.0]})
    with pytest.raises(ValueError, match="no model to time"):
        S.calibrate(S.setup("H100", "Llama-3.1-8B", "ngram"), df)
    with pytest.raises(ValueError, match="fit must be one of"):
        S.calibrate(S.setup("H100", "Llama-3.1-8B", "self"), df, fit=("speed",))


# --------------------------------------------------------------------------- schedule
def _vllm_valid(rows, nst):
    """vLLM's rules (reference 5.2), checked directly rather than through check_schedule."""
    assert rows and all(len(r) == 3 and all(type(x) is int for x in r) for r in rows)
    assert all(r[0] >= 1 and r[0] <= r[1] and r[2] >= 0 for r in rows)
    srt = sorted(rows)
    assert srt[0][0] == 1
    assert all(b[0] > a[1] for a, b in zip(srt, srt[1:]))
    assert nst > 0 and all(r[2] <= nst for r in rows)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 600), st.integers(0, 8)), min_size=1, max_size=12,
                unique_by=lambda x: x[0]))
def test_schedule_follows_vllms_rules_and_means_what_was_asked(pairs):
    b = [p[0] for p in pairs]
    k = [p[1] for p in pairs]
    rows = S.schedule(b, k)
    nst = max(max(k), 1)
    _vllm_valid(rows, nst)
    assert S.check_schedule(rows, nst) == rows
    assert [r[1] + 1 for r in rows[:-1]] == [r[0] for r in rows[1:]]  # contiguous
    assert all(x[2] != y[2] for x, y in zip(rows, rows[1:]))  # equal neighbours merged
    lookup = S.schedule_lookup(rows, nst, max(b))
    order = np.argsort(b)
    for i, j in enumerate(order):  # each listed batch size gets its own K, up to the next
        nxt = b[order[i + 1]] if i + 1 < len(b) else max(b) + 1
        lo = 1 if i == 0 else b[j]
        assert (lookup[lo - 1:nxt - 1] == k[j]).all()


def test_schedule_lookup_follows_vllm_semantics():
    # vLLM's code comment: [(1,16,3),(32,128,2)] maps 17-31 to K = 3; past the last range -> last
    lk = S.schedule_lookup([[1, 16, 3], [32, 128, 2]], 3, 200)
    assert (lk[16:31] == 3).all() and (lk[31:128] == 2).all() and (lk[128:] == 2).all()
    assert (S.schedule_lookup([[1, 64, 5]], 3, 10) == 3).all()  # clamped to num_speculative_tokens


@pytest.mark.parametrize("sched", [
    [[1, 64, 3], [65, 128, 1], [129, 512, 0]],  # EAGLE-1 docs example
    [[1, 16, 5], [17, 32, 4], [33, 64, 3], [65, 128, 1], [129, 512, 0]],  # EAGLE-3 example
    [[1, 16, 3], [32, 128, 2]],  # a gap is allowed
])
def test_documented_schedules_pass(sched):
    assert S.check_schedule(sched, 5) == sched
    cfg = S.schedule_config(sched, "eagle3", model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    assert cfg["num_speculative_tokens_per_batch_size"] == sched
    assert check_speculative_config(cfg).accepted


@pytest.mark.parametrize("sched, nst, match", [
    ([], None, "non-empty list"),
    ([[1, 64]], None, r"\[range_start, range_end, K\]"),
    ([[1, 64, True]], None, "integers"),
    ([[0, 64, 3]], None, "must be positive"),
    ([[1, 64, 3], [70, 65, 1]], None, "range_start must be <= range_end"),
    ([[1, 64, -1]], None, "K must be >= 0"),
    ([[1, 64, 3], [64, 128, 1]], None, "must not overlap"),
    ([[2, 64, 3]], None, "start at batch size 1"),
    ([[1, 64, 5]], 3, "every K must be <= num_speculative_tokens = 3"),
])
def test_bad_schedules(sched, nst, match):
    with pytest.raises(ValueError, match=match):
        S.check_schedule(sched, nst)


def test_plan_schedule_builds_an_accepted_config():
    st_ = S.setup("H100", "Llama-3.1-8B", "eagle3")
    rows = S.plan_schedule(st_, [1000], [1, 2, 3, 4, 5], max_batch=1024, alpha=0.6)
    ks = [r[2] for r in rows]
    assert ks == sorted(ks, reverse=True) and ks[0] >= 3 and ks[-1] < ks[0]
    cfg, notes = S.setup_config(st_, rows, checkpoint="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    _vllm_valid(cfg["num_speculative_tokens_per_batch_size"], cfg["num_speculative_tokens"])
    assert cfg["num_speculative_tokens"] == max(ks)
    assert check_speculative_config(cfg).accepted
    assert any("+6.6 %" in n for n in notes)
    # every K 0: leave speculation off; one K everywhere: a static config
    assert S.schedule_config([[1, 512, 0]], "eagle3", model="x/y") is None
    assert "num_speculative_tokens_per_batch_size" not in S.schedule_config(
        [[1, 512, 2]], "ngram", prompt_lookup_min=2, prompt_lookup_max=5)


def test_schedule_tax_matches_the_report():
    lo, hi = S.SCHEDULE_TAX["tpot_increase"]
    # printed +6.56 % and +21.58 %; 93.820 / 77.164 - 1 = 0.215852 (the report truncates)
    assert abs((15.317 / 14.374 - 1) - lo) < 5e-5 and abs((93.820 / 77.164 - 1) - hi) < 1e-4


def test_max_batch_in_memory():
    st_ = S.setup("H100", "Llama-3.1-8B", "ngram")
    room = 0.9 * 80e9 - S.architecture("Llama-3.1-8B").weight_bytes()
    assert S.max_batch_in_memory(st_, 8000) == int(room // (8000 * 131072))
    assert S.max_batch_in_memory(S.setup("RTX-4090", "Llama-3.1-70B", "ngram"), 100) == 0


def test_setup_is_a_plain_dataclass():
    st_ = S.setup("H100", "Llama-3.1-8B", "eagle")
    fast = dataclasses.replace(st_, gpu=S.gpu("B200"))
    assert S.t_plain_ms(fast, 8, 1000) < S.t_plain_ms(st_, 8, 1000)


@settings(max_examples=30, deadline=None)
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


def test_plan_schedule_gives_vllm_the_chosen_gamma_at_every_batch_size():
    st_ = S.setup("A100", "Llama-3.1-8B", "Llama-3.2-1B")
    gammas = [1, 2, 3, 4, 6]
    rows = S.plan_schedule(st_, [2000, 16000], gammas, max_batch=300, alpha=0.75)
    grid = S.evaluate(st_, np.arange(1, 301), [2000, 16000], gammas, alpha=0.75)
    chosen, worst = S.schedule_gammas(grid)
    nst = max(r[2] for r in rows)
    assert (S.schedule_lookup(rows, nst, 300) == chosen).all()
    # the chosen gamma is the best for the least favourable context
    i = np.argmax(grid.speedup.min(axis=1), axis=1)
    assert (np.where(worst > 1, grid.gammas[i], 0) == chosen).all()


# ----------------------------------------------------------------- our own measured step times
def test_measured_h200_files_calibrate_and_predict_held_out_rows():
    from specnb import data
    path = data.DATA_DIR / "measured" / "h200_llama_steps.csv"
    rows = S.read_measurements(path)
    assert set(rows["role"]) == {"target", "draft"} and (rows["gpu"] == "NVIDIA H200").all()
    st = S.setup("H200", "Llama-3.1-8B", "Llama-3.2-1B")
    train = rows["batch_size"] <= 16
    cal = S.calibrate(st, rows[train])
    # the report of calibrate is predict_measurements on the rows it was fitted on
    again = S.predict_measurements(cal.setup, rows[train])
    np.testing.assert_allclose(again["predicted_ms"], cal.report["predicted_ms"])
    held = S.predict_measurements(cal.setup, rows[~train])
    assert len(held) == int((~train).sum()) and held["predicted_ms"].gt(0).all()
    np.testing.assert_allclose(held["relative_error"],
                               held["predicted_ms"] / held["ms"] - 1.0)


def test_predict_measurements_refuses_draft_rows_without_a_draft_model():
    rows = pd.DataFrame({"role": ["draft"], "batch_size": [1], "context": [10],
                         "query_tokens": [1], "ms": [1.0]})
    with pytest.raises(ValueError, match="no model to time"):
        S.predict_measurements(S.setup("H200", "Llama-3.1-8B", "ngram"), rows)


# ----------------------------------------------------------------- edge and bad input (r2)
LLAMA_CFG = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
             "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
             "vocab_size": 128256}


@pytest.mark.parametrize("change, match", [
    ({"head_dim": 0}, "head_dim must be a positive integer, got 0"),
    ({"num_key_value_heads": 0}, "num_key_value_heads must be a positive integer, got 0"),
    ({"num_key_value_heads": 3}, r"num_attention_heads \(4\) must be a multiple of "
                                 r"num_key_value_heads \(3\)"),
    ({"num_key_value_heads": 8}, "must be a multiple of num_key_value_heads"),
    ({"tie_word_embeddings": "false"}, "tie_word_embeddings must be true or false"),
    ({"attention_bias": "false"}, "attention_bias must be true or false"),
])
def test_config_values_are_not_replaced_or_misread(change, match):
    """0 is not 'absent' (no silent default) and "false" is not True."""
    with pytest.raises(ValueError, match=match):
        S.architecture({**LLAMA_CFG, **change})


def test_config_numpy_ints_null_defaults_bom_and_foreign_model_type(tmp_path):
    a = S.architecture({**LLAMA_CFG, "num_hidden_layers": np.int64(2), "head_dim": None,
                        "num_key_value_heads": None, "tie_word_embeddings": True})
    assert (a.n_layers, a.head_dim, a.n_kv_heads, a.tie_word_embeddings) == (2, 16, 4, True)
    p = tmp_path / "config.json"
    p.write_text("\ufeff" + json.dumps(LLAMA_CFG), encoding="utf-8")
    assert S.architecture(p).n_layers == 2
    with pytest.raises(ValueError, match="model_type 'gpt2' names its sizes differently"):
        S.architecture({"model_type": "gpt2", "n_layer": 4, "n_embd": 256, "n_head": 4,
                        "vocab_size": 2048})


def test_model_names_empty_and_hugging_face_ids():
    with pytest.raises(ValueError, match="model must not be empty; known models"):
        S.architecture("  ")
    assert S.architecture("meta-llama/Llama-3.1-8B").name == "Llama-3.1-8B"
    assert S.architecture("qwen/qwen3-8b").name == "Qwen3-8B"


@pytest.mark.parametrize("model, gpus, match", [
    ("Llama-3.1-8B", 3, r"gpus = 3 does not divide the target Llama-3.1-8B's "
                        r"num_attention_heads \(32\).*allowed GPU counts: 1, 2, 4, 8, 16, 32"),
    ("Llama-3.1-8B", 64, "num_attention_heads"),
    ("Qwen2.5-7B", 8, r"num_attention_heads \(28\)"),
])
def test_tensor_parallel_sizes_vllm_refuses(model, gpus, match):
    with pytest.raises(ValueError, match=match):
        S.setup("H100", model, "eagle3", gpus=gpus)
    assert S.setup("H100", "Llama-3.1-8B", "eagle3", gpus=16).gpus == 16  # KV heads x 2


def test_tensor_parallel_checks_the_draft_model_too():
    cfg = {**LLAMA_CFG, "num_attention_heads": 6, "num_key_value_heads": 6, "hidden_size": 96}
    st = S.setup("H100", "Llama-3.1-8B", cfg, gpus=1)
    assert st.draft.kind == "model"
    with pytest.raises(ValueError, match="the draft config's num_attention_heads"):
        S.setup("H100", "Llama-3.1-8B", cfg, gpus=4)


def test_a_kv_budget_given_beside_a_built_draft_is_not_dropped():
    d = S.draft("self", "Llama-3.1-8B")
    with pytest.raises(ValueError, match="draft_kv_budget 512 given with a Draft whose "
                                         "kv_budget is None"):
        S.setup("H100", "Llama-3.1-8B", d, draft_kv_budget=512)
    assert S.draft(S.draft("self", "Llama-3.1-8B", kv_budget=512), "Llama-3.1-8B",
                   kv_budget=512).kv_budget == 512


def test_check_schedule_takes_integer_arrays_and_context_zero_is_quiet():
    assert S.check_schedule(np.array([[1, 8, 3], [9, 16, 0]])) == [[1, 8, 3], [9, 16, 0]]
    with pytest.raises(ValueError, match="with integers"):
        S.check_schedule(np.array([[1.0, 8.0, 3.0]]))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert S.max_batch_in_memory(S.setup("H100", "Llama-3.1-8B", "eagle3"), 0) == 2 ** 53


def test_model_id_of_a_json_file_is_its_folder_and_the_config_says_so(tmp_path):
    p = tmp_path / "draft.json"
    p.write_text(json.dumps(LLAMA_CFG))
    st = S.setup("H100", "Llama-3.1-8B", str(p))
    assert S.model_id(st.draft.arch) == str(tmp_path)
    cfg, notes = S.setup_config(st, [[1, 4, 2]])
    assert cfg["model"] == str(tmp_path)
    assert any("draft.json has another name" in n for n in notes)


@pytest.mark.parametrize("text, match", [
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,3,9\n",
     r"a row has more fields than the header \(5: role, batch_size"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,3\ntarget,2,10,1,3,9\n",
     "not a regular CSV.*line 3"),
    ("role,batch_size,context,query_tokens,ms,ms\ntarget,1,10,1,3,4\n",
     "column.s. ms appear more than once"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1e30,10,1,3\n",
     r"batch_size must be an integer >= 1 \(at most 2\*\*53\), got 1e\+30"),
    ("role,batch_size,context,query_tokens,ms\ntarget,,10,1,3\n",
     "batch_size must be an integer >= 1 .*got a missing value"),
    ("role,batch_size,context,query_tokens,ms\n,1,10,1,3\n",
     "role must be 'target' or 'draft', got a missing value"),
    ("role,batch_size,context,query_tokens,ms\ntarget,1,10,1,-1\n",
     "ms must be a positive time in milliseconds, got -1$"),
])
def test_calibration_csv_structure_errors(tmp_path, text, match):
    p = tmp_path / "m.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        S.read_measurements(p)


def test_calibration_csv_paths_bom_crlf_and_duplicate_rows(tmp_path):
    with pytest.raises(ValueError, match="is a folder"):
        S.read_measurements(tmp_path)
    with pytest.raises(FileNotFoundError, match="calibration CSV .*no.csv' does not exist"):
        S.read_measurements(tmp_path / "no.csv")
    p = tmp_path / "m.csv"
    p.write_bytes(("\ufeffrole,batch_size,context,query_tokens,ms\r\n"
                   + "target,1,1024,1,7.1\r\n" * 6).encode("utf-8"))
    assert list(S.read_measurements(p)["ms"]) == [7.1] * 6
    cal = S.calibrate(S.setup("H200", "Llama-3.1-8B", "ngram"), p)
    # six copies of one point still determine one parameter: the note says so
    assert any("only 1 distinct (batch_size, context, query_tokens) points (6 rows)" in n
               for n in cal.notes)


@pytest.mark.parametrize("extra, method", [
    ({"architectures": ["LlamaForCausalLMEagle3"], "draft_vocab_size": 32000}, "eagle3"),
    ({"architectures": ["MedusaModel"]}, "medusa"),
])
def test_a_draft_head_config_is_not_modelled_as_a_draft_model(tmp_path, extra, method):
    """An EAGLE-3 head's config.json given as a draft model would give a draft_model config,
    the misconfiguration vLLM runs with acceptance near 0 (issue 11)."""
    cfg = {**LLAMA_CFG, "hidden_size": 4096, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 1,
           **extra}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=f"is a checkpoint for method {method} .config.json "
                                         "architectures"):
        S.setup("H100", "Llama-3.1-8B", str(tmp_path))
    plain = {k: v for k, v in cfg.items() if k not in extra}
    assert S.setup("H100", "Llama-3.1-8B", plain).draft.method == "draft_model"


def test_calibration_notes_measurements_labelled_with_another_gpu_or_model():
    path = data.DATA_DIR / "measured" / "h200_llama_steps.csv"
    same = S.calibrate(S.setup("H200", "Llama-3.1-8B", "Llama-3.2-1B"), path)
    assert not any("measured on" in n or "name GPU" in n for n in same.notes)
    other = S.calibrate(S.setup("H100", "Llama-3.1-8B", "eagle3"), path)
    assert any(n.startswith("the measurements name GPU NVIDIA H200, the setup H100-SXM")
               for n in other.notes)
    assert any(n.startswith("the draft rows were measured on Llama-3.2-1B") for n in other.notes)
