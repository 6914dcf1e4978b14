"""The simulator benchmark: its speed run, its per-source summary and the physics check on
small loads (the full run is `make bench`)."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "bench_simulate.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_simulate", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_speed_run_counts_steps_and_fewer_steps_with_speculation():
    t_on, n_on, t_off, n_off = _bench().speed(num_prompts=16, input_len=200, output_len=32,
                                              concurrency=8)
    assert t_on > 0 and t_off > 0
    # 16 x 32 tokens at 8 in flight: off needs >= 2 x 32 steps; k = 3 at tau 2.8 fewer
    assert n_off >= 64 and n_on < n_off


def test_summary_scores_errors_and_verdicts_without_the_anchor():
    rows = [{"source": "s", "measured": 1.2, "simulated": 1.32},
            {"source": "s", "measured": 0.9, "simulated": 1.08},
            {"source": "s", "measured": 2.0, "simulated": 2.0, "anchor": True},
            {"source": "t", "measured": 1.0, "skip": "why"}]
    s = _bench().summary(rows)
    assert list(s) == ["s"]
    assert s["s"]["n"] == 2 and s["s"]["median"] == pytest.approx(0.15)
    assert s["s"]["max"] == pytest.approx(0.2) and s["s"]["verdicts"] == 0.5


def test_static_batch_decode_throughput_times_the_steps_after_the_prefill():
    import numpy as np

    from specnb import serving as S
    from specnb import simulate as M

    st = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    w = M.Workload(np.array([10, 10]), np.array([3, 3]), np.zeros(2), 2)
    tr = M.run(st, w, M.policy("off"), config=M.EngineConfig(4, 100, 1000, 131072))
    assert tr.prefill == [20, 0, 0] and tr.generated == [2, 2, 2]
    want = 4 / (tr.step_ms[1] + tr.step_ms[2]) * 1e3  # the two decode steps' tokens / time
    assert _bench().decode_throughput(tr, 2) == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="no decode step ran all 3"):
        _bench().decode_throughput(tr, 3)


def test_tree_points_are_listed_not_simulated():
    rows = _bench().batch_points(sources={"angelslim-i163"}, closed_loop=False)
    assert rows and all("SGLang tree" in r["skip"] and "simulated" not in r for r in rows)


@pytest.mark.slow
def test_one_published_source_and_the_long_prompt_check_run():
    mod = _bench()
    rows = mod.batch_points(prompts_per_batch=1, sources={"eagle3-t3-sglang"})
    assert len(rows) == 18 and all(r["simulated"] > 0 for r in rows)
    lp = mod.long_prompt_ngram(concurrencies=(1,), input_lens=(500,))
    ratio, off_batch, on_batch = lp[(500, 1)]
    assert ratio > 0 and off_batch == on_batch == 1
