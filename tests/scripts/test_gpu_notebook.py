"""scripts/gpu_notebook.sh with DEVICE=cpu and tiny sizes: the same stages as on a GPU (runner
check, a pair trained by ``python -m specnb.measure.train``, notebook 08 through papermill on the
bundled and the trained pair, results.csv and summary.md), one thread setting and bf16."""

import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("papermill")
pd = pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_notebook_script_runs_on_cpu(tmp_path):
    env = {**os.environ, "DEVICE": "cpu", "OUT": str(tmp_path), "THREADS_LIST": "1",
           "DTYPES_LIST": "bfloat16", "PYTHON": os.environ.get("PYTHON", "python3")}
    import sys
    env["PYTHON"] = sys.executable
    proc = subprocess.run(["bash", "scripts/gpu_notebook.sh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=2400)
    log = (tmp_path / "run.log").read_text()
    assert proc.returncode == 0, log[-3000:]
    assert "08_bundled_threads1_bfloat16: exit 0" in log and \
        "08_trained_threads1_bfloat16: exit 0" in log
    res = pd.read_csv(tmp_path / "results.csv")
    assert set(res["pair"]) == {"bundled", "trained"}
    assert set(res["loop"]) == {"transformers", "reference"}
    assert set(res["dtype"]) == {"bfloat16"} and (res["t_round_ms"] >= 0).all()
    assert "notebook 08 on cpu" in (tmp_path / "summary.md").read_text()
