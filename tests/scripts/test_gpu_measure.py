"""scripts/gpu_measure.sh reports failure: exit 2 when its Python cannot run the stages at all,
1 when any stage failed, with the failed stages named on stderr (not only in run.log)."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_measure.sh"


def _stub(tmp_path, imports_ok: bool) -> Path:
    """A stand-in interpreter: the torch/transformers check passes or fails; all else fails."""
    stub = tmp_path / "python"
    check = "exit 0" if imports_ok else "exit 1"
    stub.write_text("#!/bin/sh\n"
                    f'case "$*" in *"import torch, transformers"*) {check};; esac\n'
                    "exit 3\n")
    stub.chmod(0o755)
    return stub


def _run(tmp_path, python):
    env = {**os.environ, "PYTHON": str(python), "SPECNB_GPU_SMOKE": "1",
           "OUT": str(tmp_path / "out"), "SPECNB_GPU_PAIR_DIR": str(tmp_path / "pair")}
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_python_without_torch_is_refused_up_front(tmp_path):
    res = _run(tmp_path, _stub(tmp_path, imports_ok=False))
    assert res.returncode == 2
    assert "cannot import torch and transformers" in res.stderr and "PYTHON" in res.stderr
    assert not (tmp_path / "out" / "run.log").exists()  # nothing ran


def test_failed_stages_give_exit_1_and_are_named(tmp_path):
    res = _run(tmp_path, _stub(tmp_path, imports_ok=True))
    assert res.returncode == 1
    assert "stage(s) failed" in res.stderr
    for stage in ("bundled", "bundled_logged", "bench_logged", "train", "gpu_pair", "summary"):
        assert stage in res.stderr.split("failed:")[1]
    assert "exit 3" in (tmp_path / "out" / "run.log").read_text()
