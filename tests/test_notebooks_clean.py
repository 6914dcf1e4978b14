"""Notebooks are committed without outputs and follow the collection's conventions."""

import json
from pathlib import Path

import pytest

NB_DIR = Path(__file__).resolve().parent.parent / "notebooks"
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
