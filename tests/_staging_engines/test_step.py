"""specnb/_staging_engines/step.py: equals serving.step_breakdown on dense models; MoE steps."""

import numpy as np
import pytest

from specnb import serving as S
from specnb._staging_engines import catalogue as C
from specnb._staging_engines import moe as M
from specnb._staging_engines.step import step_parts

B = np.array([1, 8, 64, 512], float)[:, None, None]
CTX = np.array([0, 512, 32000], float)[None, :, None]
Q = np.array([1, 4, 8], float)[None, None, :]


@pytest.mark.parametrize("name, gpus, dtype", [("Llama-3.1-8B", 1, "bf16"),
                                               ("Llama-3.1-70B", 4, "fp8"),
                                               ("Qwen2.5-7B", 2, "bf16"),
                                               ("LLaMA-2-7B-32K", 8, "int4")])
def test_dense_models_reproduce_serving(name, gpus, dtype):
    eff = S.Efficiency(overlap=0.5, token_us=1.0)
    for e in (S.DEFAULT_EFFICIENCY, eff):
        want = S.step_breakdown(name, "H100", B, CTX, Q, gpus=gpus, dtype=dtype, efficiency=e)
        kv = "fp8" if dtype == "fp8" else "bf16"
        got = step_parts(C.shape(name), S.gpu("H100"), e, dtype, kv, gpus, B, CTX, Q)
        np.testing.assert_allclose(got["total"], want["time_ms"], rtol=1e-12)
        w = np.broadcast_to(got["w"], want["weight_bytes"].shape)
        np.testing.assert_allclose(w, want["weight_bytes"], rtol=1e-12)


def test_moe_verification_costs_more_than_dense_at_small_batch():
    eff, g = S.DEFAULT_EFFICIENCY, S.gpu("H200")
    ds = C.shape("DeepSeek-V3")
    plain = step_parts(ds, g, eff, "fp8", "bf16", 8, 1.0, 2048.0, 1.0)
    verify = step_parts(ds, g, eff, "fp8", "bf16", 8, 1.0, 2048.0, 4.0)
    dense = C.shape("Llama-3.1-70B")
    dp = step_parts(dense, g, eff, "fp8", "bf16", 8, 1.0, 2048.0, 1.0)
    dv = step_parts(dense, g, eff, "fp8", "bf16", 8, 1.0, 2048.0, 4.0)
    # 4 tokens read ~3.8x the routed experts of one: 2.57x the weight bytes, where a dense
    # model reads the same weights; T_V / T_AR 1.24 against 1.01 (8x H200, FP8, S = 2048)
    assert round(float(verify["w"] / plain["w"]), 2) == 2.57 and dv["w"] == dp["w"]
    assert round(float(verify["total"] / plain["total"]), 2) == 1.24
    assert round(float(dv["total"] / dp["total"]), 2) == 1.01
    # at batch 256 one token per sequence already touches nearly every expert
    big_p = step_parts(ds, g, eff, "fp8", "bf16", 8, 256.0, 2048.0, 1.0)
    big_v = step_parts(ds, g, eff, "fp8", "bf16", 8, 256.0, 2048.0, 4.0)
    assert big_v["w"] / big_p["w"] < 1.001


def test_mla_kv_is_not_split_over_ranks():
    ds, eff, g = C.shape("DeepSeek-V3"), S.DEFAULT_EFFICIENCY, S.gpu("H200")
    one = step_parts(ds, g, eff, "fp8", "bf16", 1, 4.0, 10000.0, 1.0)["kv"]
    eight = step_parts(ds, g, eff, "fp8", "bf16", 8, 4.0, 10000.0, 1.0)["kv"]
    assert one == eight == 4 * 10000 * M.kv_bytes_per_token(ds)
