"""specnb/simulate/host.py: vLLM's CPU n-gram proposer's time between two forwards."""

import numpy as np
import pytest

from specnb import serving as S
from specnb import simulate as M
from specnb.simulate import host as H

A40_NGRAM = S.setup("A40", "Llama-3.1-8B", "ngram", proposal_rate=0.17)
BLOG = S.setup("H100-SXM", "Llama-3.1-70B", "ngram", gpus=4, engine="vllm-v0")


def test_which_proposer_by_method_and_engine():
    assert M.host_cost(S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")).kind == "none"
    v1 = M.host_cost(A40_NGRAM, runner="v1")
    assert (v1.kind, v1.threads, v1.sizes) == ("v1-ngram", H.NGRAM_MAX_THREADS, 4)
    # numba threads: cpu_count // 2 // tp, at most 8, at least 1
    assert M.host_cost(A40_NGRAM, runner="v1", cpus=6).threads == 3
    assert M.host_cost(BLOG, cpus=6).kind == "v0-ngram"
    assert M.host_cost(S.setup("H100-SXM", "Llama-3.1-70B", "ngram", gpus=4), cpus=4,
                       runner="v1").threads == 1
    assert M.host_cost(A40_NGRAM, runner="v1", prompt_lookup_min=2, prompt_lookup_max=5).sizes == 4


def test_v1_scan_is_every_token_over_the_threads_at_least_the_longest():
    hc = M.host_cost(A40_NGRAM, runner="v1")
    ns = H.NGRAM_SCAN_NS_PER_TOKEN * 1e-6
    assert M.ngram_host_ms(hc, [8000] * 25) == pytest.approx(ns * 25 * 8000 / hc.threads)
    assert M.ngram_host_ms(hc, [100_000, 10]) == pytest.approx(ns * 100_000)
    # PR #56732's microbenchmark, one thread: 66.3M tokens in 70.28 ms
    one = H.HostCost("v1-ngram", threads=1)
    assert M.ngram_host_ms(one, [129_536] * 512) == pytest.approx(70.28, rel=0.01)


def test_v0_loop_is_per_sequence_and_stops_at_the_first_match():
    hc = M.host_cost(BLOG)
    (a, b), (p, q) = H.V0_NGRAM_CONVERT, H.V0_NGRAM_PASS
    one = lambda L, passes: 1e-3 * (a + b * 1e-3 * L + passes * (p + q * 1e-3 * L))  # noqa: E731
    assert M.ngram_host_ms(hc, [1000], 0.0) == pytest.approx(one(1000, 4))
    assert M.ngram_host_ms(hc, [1000], 1.0) == pytest.approx(one(1000, 2.5))
    assert M.ngram_host_ms(hc, [1000] * 60, 1.0) == pytest.approx(60 * one(1000, 2.5))
    assert M.ngram_host_ms(M.HostCost(), [1000] * 60) == 0.0


def test_a_speculating_ngram_run_pays_the_host_time_and_off_does_not():
    w = M.synthetic(16, 1000, 32, concurrency=8)
    acc = M.acceptance(tau=2.5, gamma=4)
    with_host = M.engine_config(BLOG, chunked_prefill=False)
    without = M.engine_config(BLOG, chunked_prefill=False, host=M.HostCost())
    on = [M.run(BLOG, w, M.policy("static", k=4), acc, config=c) for c in (with_host, without)]
    off = [M.run(BLOG, w, M.policy("off"), config=c) for c in (with_host, without)]
    assert off[0].step_ms == off[1].step_ms
    assert on[0].batch == on[1].batch  # the same schedule, only slower steps
    extra = np.array(on[0].step_ms) - np.array(on[1].step_ms)
    assert extra.max() > 0 and extra.min() >= 0


@pytest.mark.parametrize("kw, match", [({"prompt_lookup_min": 0}, "prompt_lookup_min"),
                                       ({"prompt_lookup_min": 3, "prompt_lookup_max": 2},
                                        "below prompt_lookup_min"),
                                       ({"cpus": 0}, "cpus")])
def test_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        M.host_cost(A40_NGRAM, runner="v1", **kw)
    with pytest.raises(ValueError, match="contexts"):
        M.ngram_host_ms(M.host_cost(A40_NGRAM, runner="v1"), [-1])
    with pytest.raises(ValueError, match="proposal_rate"):
        M.ngram_host_ms(M.host_cost(A40_NGRAM, runner="v1"), [1], 1.5)
    with pytest.raises(TypeError, match="HostCost"):
        M.engine_config(A40_NGRAM, host="v1")


def test_async_scheduling_host_time_is_derived_from_pr23914():
    # the constant is the CSV's slope at its printed precision; each row lies near it
    assert H.SYNC_HOST_US_PER_REQUEST == round(H.sync_host_us_per_request(), 1)
    from specnb import data
    d = data.load("vllm_async_scheduling")
    d = d[d["series"] == "pr23914"]
    per_row = (1 / d["sync_tps"] - 1 / d["async_tps"]) * 1e6
    assert per_row.min() > 10 and per_row.max() < 14


def test_async_scheduling_off_only_for_cpu_proposers_on_v1():
    sync = H.SYNC_HOST_US_PER_REQUEST
    assert M.host_cost(A40_NGRAM, runner="v1").sync_us_per_request == sync
    assert M.host_cost(S.setup("A40", "Llama-3.1-8B", "suffix")).sync_us_per_request == sync
    # EAGLE / MTP keep async scheduling (vllm/config/vllm.py), V0 has none, 2025 releases
    # ran the plain engine synchronously too
    assert M.host_cost(S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")).sync_us_per_request == 0
    assert M.host_cost(BLOG).sync_us_per_request == 0
    assert M.host_cost(A40_NGRAM, runner="v1", async_plain=False).sync_us_per_request == 0
    assert "ngram" not in H.ASYNC_COMPATIBLE_METHODS and "ngram_gpu" in H.ASYNC_COMPATIBLE_METHODS
    hc = M.host_cost(A40_NGRAM, runner="v1")
    assert M.sync_host_ms(hc, 64) == pytest.approx(sync * 64 / 1e3)
    assert M.sync_host_ms(M.HostCost(), 64) == 0.0
    with pytest.raises(ValueError, match="batch"):
        M.sync_host_ms(hc, -1)
    with pytest.raises(ValueError, match="async_plain"):
        M.host_cost(A40_NGRAM, runner="v1", async_plain="yes")


def test_every_step_of_a_speculating_run_pays_the_exposed_host_time():
    w = M.synthetic(16, 1000, 32, concurrency=8)
    acc = M.acceptance(tau=2.0, gamma=4, proposal_rate=0.17)
    hc = M.host_cost(A40_NGRAM, runner="v1")
    cfg = M.engine_config(A40_NGRAM, host=hc)
    base = M.engine_config(A40_NGRAM, host=H.HostCost("v1-ngram", hc.threads, hc.sizes))
    on, on0 = (M.run(A40_NGRAM, w, M.policy("static", k=4), acc, config=c) for c in (cfg, base))
    assert on.batch == on0.batch
    extra = np.array(on.step_ms) - np.array(on0.step_ms)
    assert extra == pytest.approx(np.array(on.batch) * hc.sync_us_per_request / 1e3)
    # a policy that configures speculation but drafts nothing at this batch still pays it
    # (async scheduling is off for the whole engine); the plain run does not
    never = M.policy("disable_by_batch_size", k=4, max_batch=1)
    d, d0 = (M.run(A40_NGRAM, w, never, acc, config=c) for c in (cfg, base))
    assert d.batch == d0.batch and min(np.array(d.step_ms) - np.array(d0.step_ms)) > 0
    off, off0 = (M.run(A40_NGRAM, w, M.policy("off"), config=c) for c in (cfg, base))
    assert off.step_ms == off0.step_ms


def test_model_runner_v2_has_no_host_proposer_and_keeps_async_scheduling():
    """T8a-01: vLLM 0.33 serves ngram on Model Runner V2 by default (a GPU kernel; the V1
    async-scheduling incompatibility is computed only off V2): no host term; V1 keeps both."""
    assert M.host_cost(A40_NGRAM) == M.HostCost()
    assert M.host_cost(A40_NGRAM, runner="v2") == M.HostCost()
    v1 = M.host_cost(A40_NGRAM, runner="v1")
    assert v1.kind == "v1-ngram" and v1.sync_us_per_request == H.SYNC_HOST_US_PER_REQUEST
    suffix = S.setup("A40", "Llama-3.1-8B", "suffix")  # V2 does not run suffix: V1's terms
    assert M.host_cost(suffix).sync_us_per_request == H.SYNC_HOST_US_PER_REQUEST
    with pytest.raises(ValueError, match="runner"):
        M.host_cost(A40_NGRAM, runner="v3")
