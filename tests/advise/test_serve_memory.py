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
    fp8 = codes(serve_memory_findings({"max_model_len": 4096, "max_num_seqs": 4,
                                       "quantization": "fp8"},
                                      "meta-llama/Llama-3.1-70B", NGRAM, "H100-SXM"))
    # 141 GB of bf16 weights leave nothing on 80 GB: vLLM does not start
    assert bf16["kv-cache-below-max-model-len"].severity == "error"
    st = S.setup("H100-SXM", "Llama-3.1-70B", "ngram", dtype="fp8")
    assert int(S.max_batch_in_memory(st, 4096)) == 2
    assert "would hold 2 of them" in fp8["verify-memory-cap"].message
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
