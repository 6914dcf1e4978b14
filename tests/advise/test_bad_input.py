"""Bad input to specnb.advise: a clear error naming the parameter."""

from __future__ import annotations

import pytest

from specnb.advise import acceptance_advice, recommend
from specnb.vllm import acceptance_stats
from specnb.vllm import SpecDecodeCounts


def test_advice_checks_c():
    stats = acceptance_stats(SpecDecodeCounts(10, 40, 20))
    with pytest.raises(TypeError, match="c must be a number"):
        acceptance_advice(stats, c="0.1")
    with pytest.raises(ValueError, match="c must be in"):
        acceptance_advice(stats, c=-1)


def test_recommend_wants_single_numbers():
    with pytest.raises(TypeError, match="alpha must be a single number"):
        recommend(alpha=[0.5, 0.6], c=0.1)
    with pytest.raises(TypeError, match="temperature must be a number"):
        recommend(temperature="hot")
