"""specnb.article: every article number the foundation functions produce, at the article's
printed precision; the comparison table, rounding, and bad input.

Printed values come from data/article_values.csv (transcribed from
shared/reference/article-tables.md); the exact values are computed here by specnb.
"""

import pytest

from specnb import article, cost, data, memory, theory
from tests.published import csv_rows

REF = article.printed()

GAMMA_ROWS = {1: (0.2, 0.0, 3), 2: (0.6, 0.05, 2), 3: (0.6, 0.05, 4),
              4: (0.8, 0.05, 3), 5: (0.8, 0.05, 5), 6: (0.8, 0.05, 8)}


def check(key, value):
    row = REF.loc[key]
    assert not row["loose"], key
    assert article.agrees(value, row["printed"], int(row["decimals"])), (key, value, row["printed"])


@pytest.mark.parametrize("row", GAMMA_ROWS)
def test_gamma_table(row):
    a, c, g = GAMMA_ROWS[row]
    check(f"gamma_table.{row}.tokens_per_step", theory.expected_tokens_per_step(a, g))
    check(f"gamma_table.{row}.speedup", theory.walltime_speedup(a, g, c))
    # the article sets c_hat = c
    check(f"gamma_table.{row}.operations", theory.operations_factor(a, g, c))


def test_gamma_5_to_8_trade():
    s5, s8 = theory.walltime_speedup(0.8, [5, 8], 0.05)
    o5, o8 = theory.operations_factor(0.8, [5, 8], 0.05)
    check("gamma_5_to_8.speed_gain_pct", 100 * (s8 / s5 - 1))
    check("gamma_5_to_8.operations_gain_pct", 100 * (o8 / o5 - 1))


def test_row_one_latency_cut_is_loose():
    """The article reads 1.25x as "latency falls 25%"; the exact latency cut is 19.9%."""
    row = REF.loc["gamma_table.1.latency_cut_pct"]
    assert row["loose"]
    exact = 100 * (1 - 1 / theory.walltime_speedup(0.2, 3, 0.0))
    assert round(exact, 1) == 19.9
    assert not article.agrees(exact, row["printed"], 0)


def _sglang_bs1():
    df = data.load("eagle3_table4_sglang_bs1").set_index("method")
    return df["throughput_tokens_per_s"]


def test_cost_table():
    price = float(data.load("gpu_prices").query("gpu == 'H100 SXM 80GB'")["usd_per_hour"].iloc[0])
    assert price == 4.29
    tps = _sglang_bs1()
    for key, method in [("none", "none"), ("eagle2", "EAGLE-2"), ("eagle3", "EAGLE-3")]:
        check(f"cost.{key}.usd_per_million", cost.usd_per_million_tokens(price, tps[method]))
        check(f"cost.{key}.answer_seconds", cost.seconds_for_tokens(500, tps[method]))


def test_cost_saving_58_percent():
    tps = _sglang_bs1()
    rel = cost.relative_cost(tps["EAGLE-3"] / tps["none"])
    check("cost.eagle3.relative_cost", rel)
    check("cost.eagle3.saving_pct", 100 * (1 - rel))


def test_batch_figures():
    df = data.load("eagle3_table3_sglang_batch")
    r64 = df.query("method == 'EAGLE-3' and batch_size == 64")["throughput_ratio"].item()
    r48 = df.query("method == 'EAGLE' and batch_size == 48")["throughput_ratio"].item()
    check("batch.eagle3_64.relative_cost_pct", 100 * cost.relative_cost(r64))
    check("batch.eagle3_64.saving_pct", 100 * (1 - cost.relative_cost(r64)))
    check("batch.eagle_48.relative_cost", cost.relative_cost(r48))
    check("batch.eagle_48.extra_cost_pct", 100 * (cost.relative_cost(r48) - 1))


def test_memory_figures():
    check("memory.draft_1b_bf16_gb", memory.weight_bytes(1e9, "bf16") / 1e9)
    check("memory.draft_135m_bf16_gb", memory.weight_bytes(135e6, "bf16") / 1e9)


def test_compare_table():
    df = article.compare({"gamma_table.5.speedup": theory.walltime_speedup(0.8, 5, 0.05)})
    assert df["agrees"].all() and df["printed"].iloc[0] == "2.95"
    with pytest.raises(KeyError):
        article.compare({"no.such.key": 1.0})


def test_compare_shows_the_printed_string_and_precision():
    rows = {r["key"]: r for r in csv_rows("article_values")}
    table = article.compare({k: float(r["printed"]) for k, r in rows.items()})
    for r in table.itertuples():
        assert r.printed == rows[r.key]["printed"]
        assert r.decimals == int(rows[r.key]["decimals"])
    assert article.rounded(1.62, 1) == "1.6" and article.rounded(1.02, 0) == "1"
    assert article.rounded(2.345, 2) == "2.35" and article.rounded(0.125, 2) == "0.13"


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("call,param", [
    (lambda: article.rounded(float("inf"), 2), "value"),
    (lambda: article.rounded(1.0, -1), "decimals"),
])
def test_new_helpers_name_the_bad_parameter(call, param):
    with pytest.raises(ValueError, match=param):
        call()


def test_scalar_helpers_refuse_arrays_and_bools():
    with pytest.raises(TypeError, match="value must be a single number"):
        article.agrees([3.2, 3.3], 3.2, 2)
    with pytest.raises(TypeError, match="computed must be a dict"):
        article.compare([("key", 1.0)])
