"""make lab's JupyterLab, started through scripts/lab.sh (no browser needed): a notebook saved
through the contents API, as JupyterLab's save and autosave do, lands on disk without outputs,
and the news pop-up setting defaults to off."""

import json
import shutil
import urllib.request

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tests.browser_support import JupyterLab

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install -e '.[lab]')")
    work = tmp_path_factory.mktemp("labsrv")
    (work / "root").mkdir()
    server = JupyterLab(work / "root", work / "state")
    with server:
        yield server


def _put(lab, path, model):
    req = urllib.request.Request(f"{lab.url}/api/contents/{path}", method="PUT",
                                 data=json.dumps(model).encode(),
                                 headers={"Authorization": f"token {lab.token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=20) as r:
        return json.loads(r.read())


def test_a_saved_notebook_has_no_outputs_on_disk(lab):
    cell = new_code_cell("print(1)", execution_count=1, metadata={"tags": ["parameters"]})
    cell.outputs = [new_output("stream", name="stdout", text="1\n")]
    notebook = new_notebook(cells=[new_markdown_cell("# t"), cell])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    _put(lab, "x.ipynb", {"type": "notebook", "format": "json",
                          "content": json.loads(nbformat.writes(notebook))})
    saved = nbformat.read(lab.root_dir / "x.ipynb", as_version=4)
    assert saved.cells[1].outputs == [] and saved.cells[1].execution_count is None
    assert saved.cells[1].source == "print(1)"


def test_the_news_prompt_is_off_by_default(lab):
    req = urllib.request.Request(
        f"{lab.url}/lab/api/settings/@jupyterlab/apputils-extension:notification",
        headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(req, timeout=20) as r:
        settings = json.loads(r.read())
    assert settings["schema"]["properties"]["fetchNews"]["default"] == "false"
