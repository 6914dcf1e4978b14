"""specnb.vllm's face: the bundled samples."""

from __future__ import annotations

import pytest

from specnb.vllm import sample_path


def test_sample_files():
    from specnb.vllm import sample_names

    assert "metrics_after.prom" in sample_names()
    with pytest.raises(ValueError, match="must be one of"):
        sample_path("nope.prom")
