"""specnb.runners: vLLM 0.33's model-runner rule for a speculative method, and the environment
a serve line needs to run the method on a given runner."""

from specnb.runners import model_runner, runner_env


def test_v2_unless_the_method_is_one_v2_does_not_run_or_the_env_says_otherwise():
    assert [model_runner(m) for m in ("ngram", "ngram_gpu", "eagle3", "suffix")] == \
        ["v2", "v2", "v2", "v1"]
    assert model_runner("ngram", {"VLLM_USE_V2_MODEL_RUNNER": "0"}) == "v1"
    assert model_runner("suffix", {"VLLM_USE_V2_MODEL_RUNNER": "1"}) == "refused"


def test_the_env_a_line_needs_for_a_runner():
    assert runner_env("ngram", "v2") == {} and runner_env("suffix", "v1") == {}
    assert runner_env("ngram", "v1") == {"VLLM_USE_V2_MODEL_RUNNER": "0"}
    # and what the env says is what vLLM then picks
    for m, r in (("ngram", "v1"), ("eagle3", "v1"), ("suffix", "v1"), ("ngram", "v2")):
        assert model_runner(m, runner_env(m, r)) == r


def test_vllm_refuses_a_non_integer_env_and_dspark_on_v1():
    # trial 9, T9-03: envs.py maybe_convert_bool is bool(int(value)); config/vllm.py
    # _get_v1_model_runner_unsupported_features names dspark
    from specnb.runners import runner_refusal

    for value in ("true", "yes", "", "1.0"):
        env = {"VLLM_USE_V2_MODEL_RUNNER": value}
        assert runner_refusal("ngram", env)[0] == "v2-runner-env-not-integer"
        assert model_runner("ngram", env) == "refused"
    for value, runner in ((" 1", "v2"), ("+0", "v1"), ("2", "v2"), ("-1", "v2")):
        assert model_runner("eagle3", {"VLLM_USE_V2_MODEL_RUNNER": value}) == runner
    v1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
    assert runner_refusal("dspark", v1)[0] == "v1-runner-unsupported-method"
    assert model_runner("dspark", v1) == "refused" and model_runner("dspark") == "v2"
    assert runner_refusal("suffix", {"VLLM_USE_V2_MODEL_RUNNER": "1"})[0] == \
        "v2-runner-unsupported-method"
    assert runner_refusal("suffix") is None and runner_refusal("dspark") is None


def test_the_v1_runner_overlaps_only_the_gpu_drafters():
    # trial 9, T9-02: config/vllm.py v1_async_sched_incompat
    from specnb.runners import ASYNC_COMPATIBLE_METHODS, v1_async_incompat
    from specnb.simulate import host

    assert host.ASYNC_COMPATIBLE_METHODS is ASYNC_COMPATIBLE_METHODS  # one home
    v1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
    assert v1_async_incompat("suffix") == "suffix-based speculative decoding"
    assert v1_async_incompat("ngram", v1) == "ngram-based speculative decoding"
    assert v1_async_incompat("ngram") is None  # Model Runner V2 by default
    for m in ("eagle3", "ngram_gpu", "draft_model", "dflash", "deepseek_mtp"):
        assert v1_async_incompat(m, v1) is None
    assert v1_async_incompat("eagle3", v1, disable_padded_drafter_batch=True) == \
        "disable_padded_drafter_batch=True"
    assert v1_async_incompat("eagle3", v1, pipeline_parallel_size=2) == "pipeline parallelism"
    assert v1_async_incompat("eagle3", pipeline_parallel_size=2) is None  # V2
