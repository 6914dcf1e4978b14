"""notebooks/02_cost_per_token.ipynb (executed once per session by tests/conftest.py): the
widget's wording at the extremes, from specnb.cost."""

import pytest

from specnb import cost

pytestmark = pytest.mark.slow  # reads the session's executed notebooks


def test_02_widget_wording_at_the_extremes(records):
    df = records["02_cost_per_token"]["cost.describe_change_extremes"]
    assert df["change"].tolist() == [cost.describe_change(2000 / 10), cost.describe_change(10 / 2000),
                                     cost.describe_change(137.0 / 158.34)]
    assert df["change"].iloc[1] == "200.0x the cost per token"
