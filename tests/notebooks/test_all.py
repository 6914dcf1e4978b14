"""Every notebook executes headless through the runner, the report links them all, and every
value the article prints is reproduced by a notebook at the article's printed precision
(data/article_values.csv) and shown beside its recomputation; the numbers each Answer states
appear in the outputs.

Rows marked ``loose`` are checked against the exact value instead (the article's wording does
not follow from its numbers there; the notebook says so). Tests of one notebook sit in
tests/notebooks/test_<NN>_<slug>.py."""

import math
import re

import pytest

from specnb import article, theory
from tests.notebooks.support import ARTICLE_NOTEBOOKS, REF, first_cell
from tests.published import csv_rows

pytestmark = pytest.mark.slow  # reads the session's executed notebooks

# The exact values of the loose rows, computed independently of the notebooks.
LOOSE_EXACT = {
    "gamma_table.1.latency_cut_pct": 100 * (1 - 1 / theory.walltime_speedup(0.2, 3, 0.0)),
    "methods.summary.training_free_low": 1.62,  # Lookahead's printed mean, EAGLE-3 Table 1
}


def test_every_notebook_runs(executed_notebooks):
    failed = {n: r.error for n, r in executed_notebooks.items() if r.status != "ok"}
    assert not failed
    for name in ARTICLE_NOTEBOOKS.values():
        assert name in executed_notebooks


def _all_records(records):
    merged = {}
    for values in records.values():
        merged.update(values)
    return merged


def test_every_printed_value_is_reproduced(records):
    got = _all_records(records)
    missing = sorted(set(REF.index) - set(got))
    assert not missing, f"article values no notebook reproduces: {missing}"


@pytest.mark.parametrize("key", list(REF.index))
def test_printed_value(records, key):
    got = _all_records(records)
    row = REF.loc[key]
    value = got[key]
    if row["loose"]:
        assert value == pytest.approx(LOOSE_EXACT[key], abs=1e-9)
        assert not article.agrees(value, row["printed"], int(row["decimals"])), \
            f"{key} is marked loose but agrees with the printed value"
    else:
        assert article.agrees(value, row["printed"], int(row["decimals"])), (key, value, row["printed"])


def test_report_written(executed_notebooks, report_dir):
    index = (report_dir / "index.html").read_text(encoding="utf-8")
    for name, r in executed_notebooks.items():
        assert r.html is not None and r.html.exists(), name
        assert f'href="{r.html.name}"' in index
        assert not math.isnan(r.seconds)


@pytest.mark.parametrize("stem", ARTICLE_NOTEBOOKS.values())
def test_question_up_front_and_a_short_computed_answer(stem, executed_notebooks):
    """The question leads the first cell; the Answer the run computed is 2-5 sentences."""
    assert first_cell(stem).split("\n\n")[1].startswith("**Question.**"), stem
    answer = executed_notebooks[stem].answer
    assert answer.startswith("**Answer.**"), stem
    sentences = re.split(r"(?<=[.;])\s+(?=[A-Z])", answer.removeprefix("**Answer.**").strip())
    assert 2 <= len(sentences) <= 5, (stem, sentences)


@pytest.mark.parametrize("n,stem", ARTICLE_NOTEBOOKS.items())
def test_answer_numbers_appear_in_the_outputs(shown, n, stem, executed_notebooks):
    """Every number the computed answer states (beyond small counts) is printed by another cell."""
    answer = executed_notebooks[stem].answer
    _, text = shown[n]
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)  # 200,000 is 200000
    # numbers, not parts of names (A100, H100, EAGLE-3)
    text_ = re.sub(r"notebook \d+", "", answer.replace(",", ""))
    numbers = set(re.findall(r"(?<![A-Za-z\d.-])(\d+\.\d+|\d{2,})", text_))
    missing = sorted(x for x in numbers if not re.search(rf"(?<![\d.]){re.escape(x)}(?!\d)", text))
    assert not missing, f"{stem}: the answer's {missing} appear in no output"


def _compare_rows(tables):
    """{key: printed cell} from every table whose header has a 'printed' column."""
    found = {}
    for table in tables:
        header = next((r for r in table if "printed" in r), None)
        if header is None:
            continue
        col = header.index("printed")
        for row in table:
            if row and row[0] in REF.index and len(row) == len(header):
                found[row[0]] = row[col]
    return found


def test_printed_strings_shown_beside_the_exact_values(shown):
    seen = {}
    for tables, _ in shown.values():
        seen.update(_compare_rows(tables))
    # 03's batch table and 04's six-row table show the printed strings in their own layout
    tables3 = shown["03"][0]
    side = next(t for t in tables3 if t and "article prints" in t[0])
    for row in side:
        if row and row[0].isdigit():
            b = row[0]
            seen[f"batch_table.sglang.eagle3.{b}"], seen[f"batch_table.sglang.eagle.{b}"] = row[1], row[2]
    six = next(t for t in shown["04"][0] if t and "tokens per step" in t[0] and "setting" in t[0])
    for row in six:
        if row and row[0] in {str(i) for i in range(1, 7)}:
            i = row[0]
            # row: index, alpha, c, gamma, tokens article, exact, speedup article, exact, ops article, exact, agrees
            seen[f"gamma_table.{i}.tokens_per_step"] = row[4]
            seen[f"gamma_table.{i}.speedup"] = row[6]
            seen[f"gamma_table.{i}.operations"] = row[8]
    expected = {k: r["printed"] for k, r in ((r["key"], r) for r in csv_rows("article_values"))}
    not_shown = sorted(set(expected) - set(seen) - {"gamma_table.1.latency_cut_pct"})
    assert not not_shown, f"article values with no printed string in a table: {not_shown}"
    wrong = {k: (seen[k], expected[k]) for k in seen if seen[k] != expected[k]}
    assert not wrong, f"shown differently from the article (shown, printed): {wrong}"
