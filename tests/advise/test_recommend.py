"""specnb.advise.recommend: situation inputs in, advice out by sourced rules, with the peak-batch
threshold (fixed or from the step-time model; measure_threshold alone: test_threshold.py)."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb.advise import (MEASURE_BATCH, SAMPLING_GAMMA_CAP, WORKLOADS, measure_threshold,
                           recommend)
from specnb.notes import codes, messages
from specnb.theory import optimal_gamma, walltime_speedup
from specnb.vllm import check_speculative_config
from tests.tier import examples


# ----------------------------------------------------------------------------- model threshold
def _tau(method: str, dataset: str, gamma: int) -> float:
    """SpecDecode-Bench's path-followed tau(gamma), read here from the CSV's tau_k columns, not
    via advise; gamma 4 (no column) the midpoint of tau(3) and tau(5)."""
    from specnb import data

    df = data.load("specdecode_bench_acceptance")
    row = df[(df["method"] == method) & (df["dataset"] == dataset)].iloc[0]
    if gamma == 4:
        return (float(row["tau_k3"]) + float(row["tau_k5"])) / 2
    return float(row[f"tau_k{gamma}"])


#: (recommend's situation, setup arguments for specnb.serving, acceptance for crossover_batch)
MODEL_CASES = [
    (dict(eagle3_drafter=True, workload="chat", peak_batch=64, gpu="H200",
          model="Llama-3.1-8B", context=4000),
     ("H200", "Llama-3.1-8B", "eagle3", 1), dict(tau=_tau("acc_eagle", "ShareGPT", 3))),
    (dict(workload="copy-heavy", peak_batch=256, gpu="h200", model="meta-llama/Llama-3.1-8B",
          context=1000),
     ("H200", "Llama-3.1-8B", "ngram", 1), dict(tau=_tau("acc_ngram", "CNN/DM", 4))),
    # T9-05: the tester's two cases (H100, context 2000), at the CSV's path tau
    (dict(workload="copy-heavy", peak_batch=64, gpu="H100-SXM", model="Llama-3.1-8B",
          context=2000),
     ("H100-SXM", "Llama-3.1-8B", "ngram", 1), dict(tau=_tau("acc_ngram", "CNN/DM", 4))),
    (dict(workload="code", peak_batch=64, gpu="H100-SXM", model="Llama-3.1-8B", context=2000),
     ("H100-SXM", "Llama-3.1-8B", "ngram", 1), dict(tau=_tau("acc_ngram", "InstructCoder",
                                                             4))),
    (dict(target_has_mtp=True, alpha=0.8, c=0.05, peak_batch=512, gpu="H200",
          model="DeepSeek-V3", gpus=8, context=8000),
     ("H200", "DeepSeek-V3", "mtp", 8), dict(alpha=0.8)),
    (dict(small_draft_model=True, spare_memory=True, draft_model="Llama-3.2-1B", alpha=0.7,
          c=0.1, peak_batch=8, gpu="A100", model="Llama-3.1-8B", context=2000),
     ("A100", "Llama-3.1-8B", "Llama-3.2-1B", 1), dict(alpha=0.7)),
]


@pytest.mark.parametrize("temperature", [0.1, 0.7, 1.0])
def test_any_sampling_temperature_caps_long_drafts(temperature):
    """No unsourced 'high temperature' threshold: every temperature > 0 is sampling."""
    for kwargs in ({"workload": "copy-heavy"}, {"small_draft_model": True, "spare_memory": True}):
        rec = recommend(temperature=temperature, **kwargs)
        assert rec.gamma == SAMPLING_GAMMA_CAP and "sampling" in rec.rules
    assert recommend(workload="copy-heavy", temperature=0.0).gamma == 4


@settings(max_examples=examples(120), deadline=None)
@given(st.sampled_from(list(WORKLOADS)), st.booleans(), st.sampled_from([True, False, None]),
       st.booleans(), st.booleans(), st.integers(1, 512), st.floats(0, 2),
       st.sampled_from(["latency", "throughput"]))
def test_every_situation_gets_checked_advice_that_explains_its_gamma(workload, mtp, eagle, small,
                                                                     spare, batch, temp, goal):
    rec = recommend(workload=workload, target_has_mtp=mtp, eagle3_drafter=eagle,
                    small_draft_model=small, spare_memory=spare, peak_batch=batch,
                    temperature=temp, goal=goal)
    if rec.method is None:  # only creative output with nothing but n-gram is kept off
        assert workload == "creative" and not mtp and eagle is False
        assert not (small and spare) and rec.config is None
        return
    assert check_speculative_config(rec.config).accepted
    assert rec.gamma >= 1 and rec.config["num_speculative_tokens"] == rec.gamma
    assert rec.measure_first == (batch >= MEASURE_BATCH)
    # the reasons explain the gamma shown (the widget showed gamma 2 beside "gamma 4: ...")
    gamma_notes = [r for r in rec.reasons if r.code in ("gamma-start", "gamma-sampling-cap")]
    assert len(gamma_notes) == 1 and gamma_notes[0].message.startswith(f"gamma {rec.gamma}")
    assert not any(m.startswith("gamma ") and not m.startswith(f"gamma {rec.gamma}")
                   for m in messages(rec.reasons))
    if temp > 0:
        assert rec.gamma <= SAMPLING_GAMMA_CAP
    if mtp:
        assert rec.method == "mtp"


def test_creative_with_a_trained_drafter_drafts_short():
    rec = recommend(workload="creative", temperature=1.0, eagle3_drafter=True)
    assert rec.method == "eagle3" and rec.gamma == 3 <= SAMPLING_GAMMA_CAP
    unchecked = recommend(workload="creative", temperature=1.0, eagle3_drafter=None)
    assert unchecked.alternatives == () and unchecked.reasons[-2].code == "eagle3-check-drafter"
    assert "keep it off" in unchecked.reasons[-2].message


def test_copy_heavy_is_a_workload_not_a_flag():
    # the old copy_heavy=True flag is gone (issue 15): the workload says it
    assert recommend(workload="copy-heavy").method == "ngram"
    assert "copy_heavy" not in inspect.signature(recommend).parameters
    with pytest.raises(TypeError):
        recommend(copy_heavy=True)
    assert "workload" in inspect.signature(recommend).parameters


def test_measured_alpha_sets_gamma_through_the_theory():
    rec = recommend(eagle3_drafter=True, alpha=0.8, c=0.05)
    assert optimal_gamma(0.8, 0.05)[0] == 8  # the article: at alpha 0.8 gamma 8 reaches 3.09x
    # the smallest gamma within 1 % of that: 7 gives 3.07x (T5-M6)
    assert walltime_speedup(0.8, 7, 0.05) >= 0.99 * optimal_gamma(0.8, 0.05)[1]
    assert walltime_speedup(0.8, 6, 0.05) < 0.99 * optimal_gamma(0.8, 0.05)[1]
    assert rec.gamma == 7
    assert "gamma-measured" in codes(rec.reasons)
    text = " ".join(messages(rec.reasons))
    assert "optimum is gamma 8 (3.09x)" in text and "upper bound" not in text
    off = recommend(alpha=0.05, c=0.1)
    assert codes(off.reasons)[-1] == "alpha-not-above-c"
    assert off.method is None and off.config is None and off.label == "keep it off"


def test_model_ids_go_into_the_config():
    rec = recommend(small_draft_model=True, spare_memory=True, draft_model="Qwen/Qwen3-0.6B")
    assert rec.config["model"] == "Qwen/Qwen3-0.6B"
    assert recommend(eagle3_drafter=True, eagle3_model="a/b.eagle3").config["model"] == \
        "a/b.eagle3"


def test_no_spare_memory_means_no_draft_model():
    rec = recommend(small_draft_model=True, spare_memory=False)
    assert rec.method == "ngram"
    assert "draft-model-takes-memory" in codes(rec.reasons)


@pytest.mark.parametrize("kwargs,match", [
    ({"target_has_mtp": "yes"}, "target_has_mtp must be True or False"),
    ({"eagle3_drafter": 1}, "eagle3_drafter must be True, False or None"),
    ({"workload": "poetry"}, "workload must be one of"),
    ({"peak_batch": 0}, "peak_batch"),
    ({"temperature": -1}, "temperature"),
    ({"goal": "speed"}, "goal must be one of"),
    ({"alpha": 0.8}, "alpha and c go together"),
    ({"alpha": 1.5, "c": 0.1}, "alpha"),
    ({"draft_model": ""}, "draft_model must be a checkpoint"),
])
def test_bad_inputs_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        recommend(**kwargs)


@pytest.mark.parametrize("situation,setup,acceptance", MODEL_CASES)
def test_model_threshold_is_the_crossover_batch(situation, setup, acceptance):
    from specnb import serving

    rec = recommend(**situation)
    gpu, model, spec, gpus = setup
    st = serving.setup(gpu, model, spec, gpus=gpus)
    top = max(1024, situation["peak_batch"])
    cross = serving.crossover_batch(st, situation["context"], [rec.gamma], max_batch=top,
                                    **acceptance)
    assert rec.crossover == cross
    assert rec.measure_first == (situation["peak_batch"] > cross)
    assert "peak_batch_model" in rec.rules and "peak_batch" not in rec.rules
    (reason,) = [r.message for r in rec.reasons if r.code.startswith("peak-batch-")]
    for part in (st.target.name, st.gpu.name, f"{situation['context']:,} tokens",
                 f"crossover {cross}", "A model prediction, not a measurement",
                 f"says {MEASURE_BATCH}"):
        assert part in reason
    if rec.measure_first:
        assert rec.label == "measure on and off under real load"
        assert f"crossover {cross}" in rec.why and "compare" in reason


def test_path_tau_moves_the_copy_heavy_crossover_below_the_memory_cap():
    """T9-05: at CNN/DM's path tau(4) (1.356, not 1 + the p_ge shares, 1.863) n-gram at gamma 4
    on one H100 at context 2000 stops paying well before the batch that fits in memory."""
    from specnb import serving

    st_ = serving.setup("H100-SXM", "Llama-3.1-8B", "ngram")
    fits = int(serving.max_batch_in_memory(st_, 2000))
    rec = recommend(workload="copy-heavy", peak_batch=64, gpu="H100-SXM", model="Llama-3.1-8B",
                    context=2000)
    tau = _tau("acc_ngram", "CNN/DM", 4)
    assert rec.gamma == 4 and rec.crossover == serving.crossover_batch(
        st_, 2000, [4], max_batch=1024, tau=tau) < fits
    assert rec.measure_first and f"pays up to batch {rec.crossover} and not from" in \
        rec.reasons[-1].message and f"tau {tau:.3f}" in rec.reasons[-1].message
    # the old reading (1 + the shares) would have paid at every batch that fits
    shares = serving.crossover_batch(st_, 2000, [4], max_batch=1024, acceptance_rates=[
        0.299, 0.231, 0.184, 0.149])
    assert shares == fits > rec.crossover


def test_model_cases_cover_both_sides_of_the_crossover():
    firsts = {recommend(**s).measure_first for s, _, _ in MODEL_CASES}
    assert firsts == {True, False}


def test_fixed_threshold_stays_the_fallback():
    rec = recommend(eagle3_drafter=True, peak_batch=64)
    assert rec.crossover is None and rec.measure_first and "peak_batch" in rec.rules
    assert measure_threshold()[0] == MEASURE_BATCH
    assert recommend(eagle3_drafter=True, peak_batch=MEASURE_BATCH - 1).measure_first is False
    # the model can move the threshold either way: below 24 ...
    # (issue 16: vLLM V1's fitted per-verification overhead, 0.26 ms, moved the alpha 0.2
    # crossover to 21; at alpha 0.1 it is 8)
    low = recommend(workload="copy-heavy", peak_batch=16, gpu="H200", model="Llama-3.1-8B",
                    context=100, alpha=0.1, c=0.02)
    assert low.crossover is not None and low.crossover < 16 and low.measure_first


def test_context_beyond_the_model_maximum_is_a_reason_not_an_error():
    # Llama-2-7B takes 4,096 positions (data/model_architectures.csv): at context 16,000 the
    # crossover is still modelled, and the threshold sentence and recommend's reasons say so
    threshold, sentence = measure_threshold("A100", "Llama-2-7B", 16000)
    assert threshold >= 1
    assert ("Note: context 16000 exceeds the target Llama-2-7B's maximum of 4096 positions"
            in sentence and "LLaMA-2-7B-32K" in sentence)
    rec = recommend(eagle3_drafter=True, peak_batch=64, gpu="A100", model="Llama-2-7B",
                    context=16000)
    assert rec.method == "eagle3"
    assert any("exceeds the target Llama-2-7B's maximum of 4096" in r
               for r in messages(rec.reasons))
    within = recommend(eagle3_drafter=True, peak_batch=64, gpu="A100", model="Llama-2-7B",
                       context=4096)
    assert not any("exceeds" in r for r in messages(within.reasons))
    _, long = measure_threshold("A100", "LLaMA-2-7B-32K", 16000)
    assert "exceeds" not in long


@pytest.mark.parametrize("kwargs,match", [
    (dict(gpu="H200"), r"gpu, model and context go together.*missing model, context"),
    (dict(model="Llama-3.1-8B", context=1000), r"missing gpu"),
    (dict(gpus=2), r"gpus only with them"),
    (dict(gpu="H9000", model="Llama-3.1-8B", context=1000), r"gpu='H9000': unknown GPU.*H200"),
    (dict(gpu="H200", model="Llama-9", context=1000), r"model='Llama-9': unknown model"),
    (dict(gpu="H200", model="no/such/config.json", context=1000), r"model='no/such"),
    (dict(gpu="H200", model="Llama-3.1-8B", context=0), r"context must be an integer >= 1"),
    (dict(gpu="H200", model="Llama-3.1-8B", context=1000, gpus=0), r"gpus"),
    (dict(target_has_mtp=True, gpu="H200", model="DeepSeek-V3", gpus=8, context=1000),
     r"acceptance of mtp.*pass the measured alpha"),
    (dict(target_has_mtp=True, gpu="H200", model="Llama-3.1-8B", context=1000, alpha=0.8,
          c=0.05), r"target_has_mtp=True: draft mtp .*Llama-3\.1-8B has none"),
    (dict(workload="creative", eagle3_drafter=True, gpu="H200", model="Llama-3.1-8B",
          context=1000), r"acceptance of eagle3 on creative"),
    (dict(small_draft_model=True, spare_memory=True, gpu="H200", model="Llama-3.1-8B",
          context=1000, alpha=0.7, c=0.1), r"give draft_model="),
    (dict(small_draft_model=True, spare_memory=True, draft_model="Qwen3-0.6B", gpu="H200",
          model="Llama-3.1-8B", context=1000, alpha=0.7, c=0.1),
     r"draft_model='Qwen3-0.6B'.*vocab_size"),
])
def test_model_threshold_bad_inputs_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        recommend(**kwargs)



def test_recommend_with_a_huge_peak_batch_searches_a_bounded_range():
    from specnb import serving

    rec = recommend(gpu="H100", model="meta-llama/Llama-3.1-8B", context=4096,
                    peak_batch=10 ** 9, eagle3_drafter=True, draft_model="org/draft")
    assert rec.crossover <= serving.MAX_BATCH_SEARCH and rec.measure_first
    assert rec.reasons[-1].code == "peak-batch-beyond-crossover"
    assert f"crossover {rec.crossover}" in rec.reasons[-1].message


def test_measure_threshold_uses_the_memory_cap_and_the_moe_model():
    """recommend(gpu=, model=): a crossover set by memory is said so (not "does not pay from
    the next batch"); an MoE target that loses at batch 1 and pays later says where it pays."""
    from specnb import serving as S
    from specnb.advise.recommend import measure_threshold

    st = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    fits = S.max_batch_in_memory(st, 4000)
    nxt, text = measure_threshold("H100-SXM", "Llama-3.1-8B", 4000, alpha=0.7)
    assert nxt == fits + 1
    assert f"pays at every batch that fits in memory: up to {fits} sequences" in text
    assert "not from batch" not in text
    moe = S.setup("H100-SXM", "Qwen3-30B-A3B", "eagle3")
    ranges = S.paying_batches(moe, 2048, [3], max_batch=1024, alpha=0.7)
    assert ranges and ranges[0][0] > 1  # the model's claim, recomputed
    _, text = measure_threshold("H100-SXM", "Qwen3-30B-A3B", 2048, alpha=0.7)
    spans = ", ".join(f"{a}-{e}" if a != e else f"{a}" for a, e in ranges)
    assert f"does not pay at batch 1; pays at batch {spans}" in text
    assert "MoE target" in text
    _, text = measure_threshold("RTX-3090", "Llama-3.1-70B", 2048, alpha=0.7)
    assert "does not run: the weights do not fit in 1x RTX-3090 memory" in text


def test_measured_gamma_is_a_config_vllm_users_run_not_the_search_limit():
    """T5-M6: with c = 0 Theorem 3.8 rises with every gamma toward 1 / (1 - alpha), so
    optimal_gamma returns its search limit (64); the advice takes the smallest gamma within
    1 % of the best, at most the longest num_speculative_tokens a bundled vLLM measurement ran
    (data/engine_measurements.csv: 7)."""
    from specnb import data
    from specnb.advise.evidence import vllm_gamma_limit

    d = data.load("engine_measurements")
    longest = int(d[d["engine"].str.startswith("vLLM")]["gamma"].max())
    assert vllm_gamma_limit()[0] == longest == 7
    rec = recommend(workload="copy-heavy", alpha=0.6, c=0.0)
    assert optimal_gamma(0.6, 0.0)[0] == 64  # the search limit, not an optimum
    # gamma 9 is the smallest within 1 % of 2.50x; the vLLM bound caps it at 7 (2.46x)
    assert round(float(walltime_speedup(0.6, 9, 0.0)), 3) >= 0.99 * 2.5 - 5e-4
    assert rec.gamma == 7 and rec.config["num_speculative_tokens"] == 7
    text = " ".join(messages(rec.reasons))
    assert "search limit 64" in text and "capped at 7" in text and "2.46x" in text
    mtp = recommend(target_has_mtp=True, alpha=0.95, c=0.01)
    assert optimal_gamma(0.95, 0.01)[0] == 40 and mtp.gamma == 7
    assert "mtp-single-layer" in codes(mtp.reasons)
    # a real optimum below the cap and within tolerance: unchanged
    assert recommend(alpha=0.7, c=0.1).gamma == optimal_gamma(0.7, 0.1)[0] == 4


def test_unchecked_eagle3_drafter_is_eagle3_if_one_exists_for_copy_heavy_too():
    """T5-M5: eagle3_drafter=None (not checked) reads as 'eagle3 (if a drafter exists)' for
    copy-heavy output as for every other workload (EAGLE-3 Table 1: 5.01x on CNN/DM against
    prompt lookup's 2.42x); False keeps n-gram."""
    rec = recommend(workload="copy-heavy", eagle3_drafter=None)
    assert rec.method == "eagle3" and rec.label == "eagle3 (if a drafter exists)"
    assert rec.rules == ("eagle3_unchecked",) and rec.alternatives == ("ngram", "suffix")
    (check,) = [n.message for n in rec.reasons if n.code == "eagle3-check-drafter"]
    assert "start with ngram or suffix (prompt lookup 2.42x on CNN/DM, against EAGLE-3's " \
           "5.01x there)" in check
    for w in ("general", "code", "copy-heavy"):
        assert recommend(workload=w, eagle3_drafter=None).label == \
            "eagle3 (if a drafter exists)", w
    assert recommend(workload="copy-heavy", eagle3_drafter=False).method == "ngram"
