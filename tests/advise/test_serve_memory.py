"""specnb.advise.serve_memory: the serve-line memory and token-budget rules (T5-W2, T5-W4),
called with parsed settings as the CLI calls them."""

from __future__ import annotations

from specnb import serving as S
from specnb.advise.serve_memory import serve_batch_findings, serve_memory_findings
from specnb.simulate.engine import default_batch_limits

NGRAM = {"method": "ngram", "num_speculative_tokens": 3}


def codes(found):
    return {f.code: f for f in found}


def test_the_weight_dtype_of_the_line_sets_the_cap():
    bf16 = codes(serve_memory_findings({"max_model_len": 4096, "max_num_seqs": 4},
                                       "meta-llama/Llama-3.1-70B", NGRAM, "H100-SXM"))
    fp8 = codes(serve_memory_findings({"max_model_len": 4096, "max_num_seqs": 8,
                                       "quantization": "fp8"},
                                      "meta-llama/Llama-3.1-70B", NGRAM, "H100-SXM"))
    # 141 GB of bf16 weights leave nothing on 80 GB: vLLM does not start
    assert bf16["kv-cache-below-max-model-len"].severity == "error"
    st = S.setup("H100-SXM", "Llama-3.1-70B", "ngram", dtype="fp8")
    # by hand: the fp8 layers at 1 byte, the embedding and LM head at 2 (T7-02), in 0.92 of
    # the 79.11 GiB the device reports (T7-06)
    a = st.target
    w = (a.params - 2 * a.embedding_params) + 4 * a.embedding_params
    cap = int((0.92 * st.gpu.total_memory_bytes - w) // (4096 * 327680))
    assert int(S.max_batch_in_memory(st, 4096)) == cap == 4
    assert f"would hold {cap} of them" in fp8["verify-memory-cap"].message
    assert fp8["verify-memory-cap"].severity == "note"


def test_one_sequence_that_does_not_fit_is_vllms_start_up_refusal_with_its_fix():
    found = codes(serve_memory_findings({}, "meta-llama/Llama-3.1-8B", NGRAM, "RTX-4090"))
    f = found["kv-cache-below-max-model-len"]
    st = S.setup("RTX-4090", "Llama-3.1-8B", "ngram")
    n = S.max_model_len_that_fits(st, 131072)
    assert f.severity == "error" and f.fix.startswith(f"give --max-model-len {n} or less")
    assert "max-num-seqs" not in f.fix
    assert serve_memory_findings({"max_model_len": n, "max_num_seqs": 1},
                                 "meta-llama/Llama-3.1-8B", NGRAM, "RTX-4090") == ()
    # a lower share: the fix names vLLM's default share where that alone makes it fit
    low = codes(serve_memory_findings({"max_model_len": 4096, "gpu_memory_utilization": 0.15},
                                      "meta-llama/Llama-3.1-8B", NGRAM, "H100-SXM"))
    assert "--gpu-memory-utilization 0.92" in low["kv-cache-below-max-model-len"].fix


def test_max_model_len_auto_is_fitted_to_the_kv_cache_as_vllm_does():
    """T6-W10: vLLM 0.33 reads 'auto' / -1 as -1 and _auto_fit_max_model_len binary-searches
    the longest length that fits; it refuses only when not one token fits."""
    st = S.setup("RTX-4090", "Llama-3.1-8B", "ngram")
    n = S.max_model_len_that_fits(st, 131072)
    found = codes(serve_memory_findings({"max_model_len": -1, "max_num_seqs": 1},
                                        "meta-llama/Llama-3.1-8B", NGRAM, "RTX-4090"))
    assert set(found) == {"max-model-len-auto-fit"}  # no refusal, one sequence at n fits
    f = found["max-model-len-auto-fit"]
    assert f.severity == "note" and f"about {n} of the target Llama-3.1-8B's 131072" in f.message
    full = codes(serve_memory_findings({"max_model_len": -1, "max_num_seqs": 1},
                                       "meta-llama/Llama-3.1-8B", NGRAM, "H100-SXM"))
    assert "full 131072 positions fit" in full["max-model-len-auto-fit"].message
    none = codes(serve_memory_findings({"max_model_len": -1}, "meta-llama/Llama-3.1-70B",
                                       NGRAM, "H100-SXM"))  # 141 GB of weights on 80 GB
    assert set(none) == {"max-model-len-auto-fit-fails"}
    assert none["max-model-len-auto-fit-fails"].severity == "error"


def test_a_width_not_in_the_line_is_not_checked():
    found = codes(serve_memory_findings({"quantization": "compressed-tensors"},
                                        "meta-llama/Llama-3.1-8B", NGRAM, "RTX-4090"))
    assert set(found) == {"memory-not-checked"}


def test_the_default_budget_below_max_num_seqs_is_an_error_only_without_the_flag():
    tokens = default_batch_limits("H100-SXM")[0]
    assert tokens == 8192
    assert codes(serve_batch_findings({"max_num_seqs": tokens + 1}, "H100-SXM"))[
        "serve-default-batched-tokens-below-seqs"].severity == "error"
    assert serve_batch_findings({"max_num_seqs": tokens}, "H100-SXM") == ()
    assert serve_batch_findings({"max_num_seqs": tokens + 1, "max_num_batched_tokens": 9000},
                                "H100-SXM") == ()
    # throughput mode doubles an unset default (EngineArgs, vLLM 0.33)
    assert serve_batch_findings({"max_num_seqs": tokens + 1, "performance_mode": "throughput"},
                                "H100-SXM") == ()
    assert serve_batch_findings({"max_num_seqs": 2049}, "RTX-4090")  # 2048 on a 24 GB GPU


def test_the_target_rules_need_no_gpu():
    from specnb.advise.serve_memory import serve_target_findings

    found = codes(serve_target_findings({"max_model_len": 131073, "tensor_parallel_size": 3},
                                        "meta-llama/Llama-3.1-8B"))
    assert found["serve-max-model-len-above-target"].severity == "error"
    assert found["serve-tensor-parallel"].severity == "error"  # 32 heads do not split by 3
    assert serve_target_findings({"max_model_len": 131072}, "meta-llama/Llama-3.1-8B") == ()
    assert serve_target_findings({"max_model_len": 10 ** 9}, "some/unknown-model") == ()


def test_plans_target_placeholder_is_checked_as_the_model_and_dtype_it_names():
    """T6-C8: plan's ``<NAME-DTYPE-checkpoint>`` is read as NAME with DTYPE weights."""
    from specnb.advise.serve_memory import serve_target_findings

    model, _, _ = S.serve_weight_args(S.architecture("Llama-3.1-70B"), "int4")
    settings = {"max_model_len": 4096, "max_num_seqs": 64, "tensor_parallel_size": 2}
    found = codes(serve_memory_findings(settings, model, NGRAM, "L40S"))
    assert "memory-not-checked" not in found
    st = S.setup("L40S", "Llama-3.1-70B", "ngram", gpus=2, dtype="int4")
    held = int(S.max_batch_in_memory(st, 4096))
    assert f"would hold {held} of them" in found["verify-memory-cap"].message
    warned = codes(serve_target_findings(settings, model))
    assert warned["target-placeholder"].severity == "warning"
    assert "Llama-3.1-70B" in warned["target-placeholder"].message


def test_the_default_budget_with_speculation_below_8192_is_vllms_warning():
    # trial 7 T7-01: vLLM 0.33's default budget (2048 on L4, 8192 on H100) is
    # max_num_scheduled_tokens; below 8192 _set_max_num_scheduled_tokens warns
    eagle = {"method": "eagle3", "model": "org/head", "num_speculative_tokens": 3}
    assert default_batch_limits("L4")[0] == 2048
    found = codes(serve_batch_findings({"max_num_seqs": 256}, "L4", eagle))
    assert found["spec-scheduled-tokens-below-8192"].severity == "warning"
    assert serve_batch_findings({"max_num_seqs": 256}, "H100-SXM", eagle) == ()
    assert serve_batch_findings({"max_num_seqs": 256}, "L4") == ()  # no speculation
    # capped at max_num_seqs x max_model_len as vLLM caps the default: 4 x 1000 < 8192
    assert "spec-scheduled-tokens-below-8192" in codes(serve_batch_findings(
        {"max_num_seqs": 4, "max_model_len": 1000}, "H100-SXM", eagle))
    # the line's own --max-num-batched-tokens is the serve-line rule's, not this one's
    assert serve_batch_findings({"max_num_batched_tokens": 2048}, "L4", eagle) == ()


def test_mtp_on_a_catalogue_target_without_mtp_layers_is_vllms_refusal():
    """T7-10: the catalogue's mtp_layers 0 passed to vLLM's rule (specnb.vllm.mtp_target_finding);
    DeepSeek-V3 (1 layer) and a draft named by model are not judged."""
    from specnb.advise.serve_memory import serve_target_findings

    spec = {"method": "mtp", "num_speculative_tokens": 1}
    for model in ("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-8B"):
        found = codes(serve_target_findings({}, model, speculative_config=spec))
        assert found["mtp-target-without-mtp"].severity == "error"
    assert serve_target_findings({"tensor_parallel_size": 8}, "deepseek-ai/DeepSeek-V3",
                                 speculative_config=spec) == ()
    assert serve_target_findings({}, "meta-llama/Llama-3.1-8B", speculative_config={
        "method": "eagle3", "model": "x", "num_speculative_tokens": 1}) == ()
