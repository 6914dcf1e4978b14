"""benchmarks/bench_replay.py: its synthetic log is seeded and copies spans (so n-gram drafts
match), and a small run prints both goal lines."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "bench_replay.py"


def _bench():
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_replay", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_synthetic_log_is_seeded_and_repetitive():
    b = _bench()
    a = list(b.synthetic(3, 200, 60))
    c = list(b.synthetic(3, 200, 60))
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, c))
    assert all(p.size == 200 and r.size == 60 and r.max() < b.VOCAB for p, r in a)


@pytest.mark.slow  # replays, and times vLLM's proposer when the oracle's venv is there
def test_a_small_run_prints_the_goal_lines(capsys):
    from specnb.replay import suffix as SX

    assert _bench().main(["--requests", "30", "--prompt", "300", "--response", "80",
                          "--suffix-requests", "3", "--arctic-requests", "3", "--workers", "2",
                          "--no-models"]) == 0
    out = capsys.readouterr().out
    assert "ngram: read + replay of 30 requests" in out
    for w in (1, 2):  # each backend, one process and two, met or MISSED against the goal
        assert f"suffix, python backend (workers {w}): replay of 30 requests" in out
    lines = 3  # the n-gram line and python's two
    for name, have in (("numba", SX.numba_version()), ("arctic", SX.arctic_version())):
        if have is None:
            assert f"suffix, {name} backend: replay of 30 requests (not here)" in out
            lines += 1
        else:
            lines += 2
    if SX.numba_version() is not None:
        assert "suffix, numba " in out and "numba on python's 3 requests" in out
        assert "DIFFER" not in out and "tau equal" in out
    if SX.arctic_version() is None:
        assert "make suffix-backend" in out
    assert out.count("(target < 0.18 s)") == lines
