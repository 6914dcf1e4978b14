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


@pytest.mark.slow
def test_one_published_source_and_the_long_prompt_check_run():
    mod = _bench()
    rows = mod.batch_points(prompts_per_batch=1, sources={"eagle3-t3-sglang"})
    assert len(rows) == 18 and all(r["simulated"] > 0 for r in rows)
    lp = mod.long_prompt_ngram(concurrencies=(1,), input_lens=(500,))
    assert lp[(500, 1)] > 0
