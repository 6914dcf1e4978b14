"""Notebooks are committed without outputs and follow the collection's conventions: one
parameters cell of literals, the question up front and one cell computing the Answer, corrected
statements gone. These read the committed sources only (no notebook runs), so they are not
slow."""

import json

import pytest

from tests.notebooks.support import ROOT, source

NB_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_without_outputs_and_one_parameters_cell(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), \
        f"{path.name} has outputs; clear them (the executed copy belongs in build/)"
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{path.name} needs exactly one cell tagged 'parameters'"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    # the parameters cell holds literal assignments only
    import ast
    for node in ast.parse("".join(tagged[0]["source"])).body:
        assert isinstance(node, ast.Assign), f"{path.name}: parameters cell must only assign literals"
        ast.literal_eval(node.value)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_question_first_and_a_computed_answer(path):
    """The first Markdown cell carries a **Question.** paragraph and no static Answer; one code
    cell shows the Answer with ``nb.answer(...)`` from the values the run computed (the
    report's index shows the question and that cell's output)."""
    import re

    from specnb.runner import notebook_summary

    s = notebook_summary(path)
    assert s["question"], f"{path.name}: no '**Question.** ...' paragraph in the first cell"
    nb = json.loads(path.read_text(encoding="utf-8"))
    first = "".join(next(c for c in nb["cells"] if c["cell_type"] == "markdown")["source"])
    assert "**Answer.**" not in first, \
        f"{path.name}: a static Answer in the first cell; show it with nb.answer(...) instead"
    calls = [c for c in nb["cells"] if c["cell_type"] == "code"
             and re.search(r"\bnb\.answer\(", "".join(c["source"]))]
    assert len(calls) == 1, f"{path.name}: needs exactly one cell calling nb.answer(...)"


STATEMENTS_REMOVED = {
    "02_cost_per_token": ["one sequence keeps the whole GPU busy", "one H100 SXM, LLaMA"],
    "03_batch_size": ["7-14% more per token"],
    "04_draft_length": ["so real speedups come out lower", "leave room on both sides",
                        "## Theory against measurement: Leviathan's T5-XXL experiment (Table 4)"],
}


@pytest.mark.parametrize("stem,phrases", STATEMENTS_REMOVED.items())
def test_corrected_statements_are_gone(stem, phrases):
    src = "".join("".join(c["source"]) for c in source(stem)["cells"])
    for phrase in phrases:
        assert phrase not in src, (stem, phrase)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_markdown_has_no_escaped_newlines(path):
    """A literal backslash-n in a Markdown cell (an edit that wrote an escape into the text)
    shows as ``\\n`` on the page."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    bad = [i for i, c in enumerate(nb["cells"])
           if c["cell_type"] == "markdown" and "\\n" in "".join(c["source"])]
    assert not bad, f"{path.name}: Markdown cell(s) {bad} hold a literal \\n"
