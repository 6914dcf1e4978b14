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


def test_below_min_prompts_the_bootstrap_is_the_range():
    """Trial 8a T8a-10: over 3 prompts the 95 % bootstrap interval is the prompts' lowest and
    highest speedup (what is_range says), over more it lies inside them."""
    from specnb import acceptance

    rng = np.random.default_rng(1)
    for n in (S.MIN_PROMPTS - 2, S.MIN_PROMPTS + 15):
        wall = rng.uniform(0.5, 1.5, n)
        _, lo, hi = S.speedup_interval([48] * n, wall, [48] * n, [1.0] * n)
        per_prompt = 1.0 / wall
        is_minmax = (lo, hi) == pytest.approx((per_prompt.min(), per_prompt.max()))
        assert S.is_range(n) == is_minmax
        num = rng.uniform(5, 20, n)  # alpha's cluster bootstrap behaves alike
        _, lo, hi = acceptance.ratio_ci(num, [24] * n)
        assert S.is_range(n) == ((lo, hi) == pytest.approx((num.min() / 24, num.max() / 24)))


def test_interval_label_follows_the_rule():
    """The label of a table's intervals from its rows' prompt counts (T8a-10): a range below
    MIN_PROMPTS, a 95 % CI from it, both named in a table that mixes them."""
    small, large = S.MIN_PROMPTS - 2, 2 * S.MIN_PROMPTS
    assert S.is_range(small) and not S.is_range(large) and not S.is_range(S.MIN_PROMPTS)
    assert S.interval_label(small) == f"range of {small} prompts, not a 95% CI"
    assert S.interval_label(large) == "95% CI over prompts"
    assert S.interval_label(S.MIN_PROMPTS) == "95% CI over prompts"
    # rows of one prompt have no interval: they do not make a 95 % CI a range
    assert S.interval_label([1, 1, 1, large]) == "95% CI over prompts"
    assert S.interval_label([1, 1, small]) == f"range of {small} prompts, not a 95% CI"
    assert S.interval_label([2, small]) == f"range of 2-{small} prompts per row, not a 95% CI"
    assert S.interval_label([2, 2, large]) == (
        f"95% CI over prompts; range where a row has under {S.MIN_PROMPTS} prompts")
    assert S.interval_label(np.array([1, 1])) == "one prompt: no interval"
    assert S.interval_label([0, float("nan")]) == "no interval (no prompts)"
