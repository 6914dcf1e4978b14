"""benchmarks/bench_heads.py: head replay on the bundled pair makes one target forward per
request and max(gamma) head forwards per request, and prints its goal lines (slow: loads the
bundled models)."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "bench_heads.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_heads", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_one_target_pass_per_request(capsys):
    pytest.importorskip("torch")
    bench = _bench()
    r = bench.run(gammas=(1, 3), requests=4)
    assert r["requests"] == 4 and r["target_forwards"] == 4
    assert r["head_forwards"] == 4 * 3  # first pass + 2 chained steps per request
    assert r["positions"] > 0 and r["tokens_per_s"] > 0
    assert bench.main(["--gamma", "1", "--requests", "2"]) == 0
    out = capsys.readouterr().out
    assert "target forwards per request" in out
    assert out.count("met") + out.count("MISSED") >= 2
