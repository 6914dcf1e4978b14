"""notebooks/04_draft_length.ipynb (executed once per session by tests/conftest.py): one search
limit and the optimum beyond it, the line chart's points, the bigram alpha from Table 3, and
Leviathan's T5 measurements against the theorem."""

import json

import pytest

from specnb import article, theory
from tests.notebooks.support import REF, parameters, source
from tests.published import csv_rows

pytestmark = pytest.mark.slow  # reads the session's executed notebooks


def test_t5_table(records):
    df = records["04_draft_length"]["t5.measured_over_expected_by_draft"].set_index("draft")
    assert df.loc["T5-large", "min"] < 0.75 and df.loc["T5-small", "min"] > 1.0


def test_04_one_search_limit_and_the_optimum_beyond_it(records):
    p = parameters("04_draft_length")
    src = json.dumps(source("04_draft_length"))
    assert 'slider(gamma, 1, gamma_max, 1, \\"gamma\\"' in src  # the slider's limit is gamma_max
    assert "gamma_max=64" not in src and "optimal_gamma(av, cv))" not in src
    edges = records["04_draft_length"]["gamma.widget_edges"].set_index("index")
    for col in edges.columns:
        assert edges.loc["optimal gamma", col].startswith(f"above {p['gamma_max']}")
        assert edges.loc["search limit (gamma_max)", col] == str(p["gamma_max"])


def test_04_line_chart_points_are_the_articles(records):
    line = records["04_draft_length"]["gamma.line_alpha08_c005"].set_index("gamma")
    for g in (3, 5, 8):
        row = REF.loc[f"faq.gamma{g}_speedup"]
        assert article.agrees(line.loc[g, "speedup (x)"], row["printed"], int(row["decimals"]))
        assert line.loc[g, "speedup (x)"] == pytest.approx(theory.walltime_speedup(0.8, g, 0.05))
    ops = {3: "gamma_table.4.operations", 5: "gamma_table.5.operations", 8: "gamma_table.6.operations"}
    for g, key in ops.items():
        assert article.agrees(line.loc[g, "operations (x)"], REF.loc[key, "printed"], 2)


def test_04_bigram_alpha_read_from_table_3(records):
    alpha = next(float(r["alpha"]) for r in csv_rows("leviathan_table3_alpha")
                 if r["target"] == "T5-XXL (EnDe)" and r["draft"] == "Bigram" and r["temperature"] == "0")
    assert records["04_draft_length"]["gamma_table.1.tokens_per_step"] == pytest.approx(
        theory.expected_tokens_per_step(alpha, 3))
    assert "leviathan_table3_alpha" in json.dumps(source("04_draft_length"))


def test_04_measured_over_theorem_range_stated(records, executed_notebooks):
    by = records["04_draft_length"]["t5.measured_over_expected_by_draft"]
    lo, hi = float(by["min"].min()), float(by["max"].max())
    assert f"{lo:.2f}-{hi:.2f}x of it" in executed_notebooks["04_draft_length"].answer
