"""specnb.measure.spread: the speedup's bootstrap interval over prompts and rounding to it."""

import math

import numpy as np
import pytest

from specnb.measure import spread as S


def test_interval_brackets_the_ratio_of_sums():
    tok, wall = [48, 48, 40, 48], [0.5, 0.7, 0.4, 0.9]
    tok_b, wall_b = [48, 48, 40, 48], [0.4, 0.5, 0.35, 0.6]
    est, lo, hi = S.speedup_interval(tok, wall, tok_b, wall_b)
    assert est == pytest.approx((sum(tok) / sum(wall)) / (sum(tok_b) / sum(wall_b)))
    assert lo <= est <= hi and hi - lo > 0
    # the interval is a quantile of per-resample ratios: every ratio lies within the prompts'
    per_prompt = (np.array(tok) / wall) / (np.array(tok_b) / wall_b)
    assert per_prompt.min() <= lo and hi <= per_prompt.max()


def test_equal_prompts_give_no_spread_and_one_prompt_none():
    est, lo, hi = S.speedup_interval([10, 10], [1, 1], [10, 10], [2, 2])
    assert (est, lo, hi) == pytest.approx((2.0, 2.0, 2.0))
    est, lo, hi = S.speedup_interval([10], [1], [10], [2])
    assert est == 2.0 and math.isnan(lo) and math.isnan(hi)


def test_bad_input_named():
    with pytest.raises(ValueError, match="one entry per prompt"):
        S.speedup_interval([1, 2], [1], [1, 2], [1, 2])
    with pytest.raises(ValueError, match="wall_s"):
        S.speedup_interval([1], [-1], [1], [1])


@pytest.mark.parametrize("lo, hi, d", [(0.60, 0.86, 1), (0.70, 0.74, 2), (0.7, 0.7004, 3),
                                       (2.0, 9.0, 0), (float("nan"), float("nan"), 3)])
def test_decimals_follow_the_half_width(lo, hi, d):
    assert S.decimals_for(lo, hi) == d


def test_format():
    assert S.format_speedup(0.7123, 0.60, 0.86) == "0.7x (0.6-0.9)"
    assert S.format_speedup(1.1234, 1.10, 1.14) == "1.12x (1.10-1.14)"
    assert S.format_speedup(0.7123, float("nan"), float("nan")) == \
        "0.71x (one prompt: no interval)"
