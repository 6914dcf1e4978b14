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
