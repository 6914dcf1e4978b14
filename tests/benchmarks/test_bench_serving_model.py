"""The serving benchmark sets MagicDec Table 5 (MLC-LLM, no Omega printed) beside the model."""

import importlib.util
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "bench_serving_model.py"
sys.path.insert(0, str(BENCH.parent))  # the benchmark imports benchmarks/_goals.py


def _bench():
    spec = importlib.util.spec_from_file_location("bench_serving_model", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_magicdec_mlc_table_is_shown_beside_the_model_step_times():
    mlc = _bench().magicdec_mlc_steps()
    assert list(mlc["batch_size"]) == [16, 32, 64]
    # T_AR = batch x 1000 / AR throughput: 16 x 1000 / 2471.4 = 6.47 ms (MagicDec Table 5)
    assert [round(v, 2) for v in mlc["t_ar_derived_ms"]] == [6.47, 9.66, 16.28]
    assert list(mlc["t_verify_printed_ms"]) == [13.60, 16.13, 28.26]
    model = mlc[["t_ar_model_ms", "t_draft_model_ms", "t_verify_model_ms"]].to_numpy()
    assert np.isfinite(model).all() and (model > 0).all()
    # the model's verification is a target forward only: shorter than MLC's, which includes
    # one draft step, and longer than its own plain step
    assert (mlc["t_verify_model_ms"] < mlc["t_verify_printed_ms"]).all()
    assert (mlc["t_verify_model_ms"] > mlc["t_ar_model_ms"]).all()
