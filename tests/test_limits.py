"""specnb.limits: the serving model's and the load's scalar ranges, one home each, in a module
light enough for the command line to call before the serving model is imported."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from specnb import _check, limits


@pytest.mark.parametrize("check, good, bad, words", [
    (limits.routing_skew, [0.0, 0.5, 0.95], [-0.1, 0.96, math.nan], "routing_skew must"),
    (limits.proposal_rate, [1e-9, 0.5, 1.0], [0.0, 1.01, math.inf], "proposal_rate must"),
    (limits.gpu_memory_utilization, [0.1, 1.0], [0.0, 1.2], "gpu_memory_utilization must"),
    (limits.request_rate, [0.5, 1e6, math.inf], [0.0, -1.0, -math.inf, math.nan],
     "request_rate must"),  # inf: vllm bench serve's default (T7-04)
])
def test_each_range_accepts_its_values_and_refuses_naming_the_parameter(check, good, bad, words):
    assert [check(v) for v in good] == good
    for v in bad:
        with pytest.raises(_check.ParamValueError, match=words) as info:
            check(v)
        assert info.value.param == words.split()[0]
    with pytest.raises(TypeError):
        check("0.5")


def test_the_serving_model_uses_these_ranges():
    from specnb import serving as S

    assert S.ROUTING_SKEW_RANGE is limits.ROUTING_SKEW_RANGE
    with pytest.raises(ValueError, match="routing_skew must be in"):
        S.with_routing_skew("vllm", 0.99)


def test_importing_it_loads_neither_the_serving_model_nor_pandas():
    code = ("import sys, specnb.limits, specnb.theory; "
            "sys.exit(bool({'pandas', 'specnb.serving', 'specnb.simulate'} & set(sys.modules)))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_default_gpu_memory_utilization_is_the_newest_vllms():
    # trial4 M1: 0.9 was called vLLM's default; vLLM 0.20.0 and later default to 0.92
    import json
    from pathlib import Path

    import specnb
    from specnb import serving

    flags = sorted(Path(specnb.__file__).parent.glob("vllm/flags/*.json"),
                   key=lambda p: tuple(int(x) for x in p.stem.split(".")[:3]))[-1]
    table = json.loads(flags.read_text())
    table = table.get("flags", table)
    assert table["--gpu-memory-utilization"]["default"] == limits.DEFAULT_GPU_MEMORY_UTILIZATION
    assert serving.DEFAULT_GPU_MEMORY_UTILIZATION == limits.DEFAULT_GPU_MEMORY_UTILIZATION
    assert serving.setup("H100-SXM", "Llama-3.1-8B", "ngram").memory_fraction == \
        limits.DEFAULT_GPU_MEMORY_UTILIZATION


@pytest.mark.parametrize("memory, tp, share", [
    # H100 80 GB: 76,294 MiB, chunked prefill 8192, max_bs 256: reserved 512 + 12,288 + 128
    # + 512 = 13,440 MiB (above the 10 GiB floor): (76,294 - 13,440) / 76,294 = 0.824
    (80e9, 1, 0.824),
    (80e9, 8, 0.805),    # max_bs 512, tp 8: reserved 14,848 MiB
    (24e9, 1, 0.699),    # 22,888 MiB: 4096 / 48, reserved 6,880 MiB, no floor below 60 GiB
    (141e9, 1, 0.900),   # 134,468 MiB: reserved 13,440 MiB
])
def test_sglang_mem_fraction_static_is_sglangs_heuristic(memory, tp, share):
    """T7-03: SGLang's own default share (memory_hook.handle_gpu_memory_settings)."""
    assert round(limits.sglang_mem_fraction_static(memory, tp), 3) == share


def test_better_reads_a_ratio_inside_the_noise_band_as_the_same_run():
    """T8a-07: one noise band for bench and simulate (advise.bench re-exports it)."""
    from specnb.advise import bench

    assert bench.better is limits.better and bench.TOLERANCE == limits.RATIO_NOISE == 0.05
    assert limits.better(0.996, True) == "same" and limits.better(1.04, True) == "same"
    assert limits.better(0.94, True) == "on" and limits.better(0.94, False) == "off"
    assert limits.better(float("nan"), True) == "" and limits.better(None, True) == ""
