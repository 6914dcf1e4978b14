"""The config-check benchmark times strings that exercise the rules it claims to time, and
prints its two goal lines."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "bench_config_check.py"


def _bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_config_check", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_timed_strings_reach_the_rules_they_name():
    from specnb.vllm import check_speculative_config
    from specnb.vllm.serve import parse_serve_line

    b = _bench()
    codes = {name: check_speculative_config(text).codes() for name, text in b.CONFIGS.items()}
    assert codes["ngram"] == []
    assert "schedule-explained" in codes["schedule"]
    assert {"int-got-string-number", "float-got-string"} <= set(codes["coerced"])
    assert parse_serve_line(b.SERVE).settings == {"max_model_len": 32000,
                                                  "tensor_parallel_size": 2}


def test_a_check_does_not_import_numpy_or_pandas():
    import subprocess
    code = ("import sys; from specnb.vllm import check_speculative_config as c; "
            "c('{\"method\": \"ngram\", \"num_speculative_tokens\": 3, "
            "\"num_speculative_tokens_per_batch_size\": [[1, 8, 3]]}'); "
            "print('numpy' in sys.modules, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(ROOT), "PATH": ""}).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.slow
def test_the_benchmark_prints_its_goal_lines(capsys):
    assert _bench().main() == 0
    goals = [line for line in capsys.readouterr().out.splitlines() if "(target <" in line]
    assert len(goals) == 2 and all(g.endswith("met") or "MISSED" in g for g in goals)
