"""specnb.runner: a plain number names a notebook (moved here from test_bad_input.py).

Pending: fold into tests/test_runner.py, which branch ``faults`` is editing (this branch leaves
that file to it); tests/test_layout.py lists this file until then."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from specnb import runner


@pytest.fixture(scope="module")
def one_nb(tmp_path_factory):
    d = tmp_path_factory.mktemp("nbs")
    nb = new_notebook(cells=[new_code_cell("alpha = 0.5", metadata={"tags": ["parameters"]})])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, d / "04_one.ipynb")
    return d


def test_a_plain_number_names_a_notebook(one_nb):
    assert runner.resolve(["4", "04", "one"], runner.find_notebooks(one_nb)) == ["04_one"]
