"""The notebook runner: names, parameters, failures, summary and exit status (tiny notebooks)."""

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from specnb import cli, runner


def _nb(path, params_src, body_src):
    nb = new_notebook(cells=[new_code_cell(params_src, metadata={"tags": ["parameters"]}),
                             new_code_cell(body_src)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def nbdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("nbs")
    _nb(d / "01_ok.ipynb", "x = 1", "from specnb.nb import record\nimport os\n"
        "record('x', x)\nrecord('headless', os.environ.get('SPECNB_HEADLESS'))\n"
        "record('cwd', os.path.basename(os.getcwd()))")
    _nb(d / "02_fails.ipynb", "y = 2", "raise RuntimeError('boom')")
    _nb(d / "03_also_ok.ipynb", "z = 3", "print(z)")
    return d


def test_resolve_names(nbdir):
    avail = runner.find_notebooks(nbdir)
    assert runner.resolve(["01", "fails", "03_also_ok.ipynb"], avail) == ["01_ok", "02_fails", "03_also_ok"]
    with pytest.raises(ValueError, match="valid names: 01_ok, 02_fails, 03_also_ok"):
        runner.resolve(["99"], avail)


def test_unknown_parameter_is_an_error(nbdir, tmp_path):
    with pytest.raises(ValueError, match="unknown parameter.*nope.*its parameters are x"):
        runner.run_notebooks(["01"], tmp_path, parameters={"01": {"nope": 1}}, notebook_dir=nbdir)
    assert not list(tmp_path.glob("*.ipynb"))  # checked before anything runs


def test_run_continues_past_failure_and_reports(nbdir, tmp_path, capsys):
    pfile = tmp_path / "params.yaml"
    pfile.write_text("01:\n  x: 42\n")
    out = tmp_path / "out"
    code = cli.main(["run", "--notebooks", str(nbdir), "--output", str(out), "--parameters", str(pfile)])
    assert code == 1
    printed = capsys.readouterr().out
    assert "01_ok" in printed and "02_fails" in printed and "03_also_ok" in printed
    assert "RuntimeError: boom" in printed and "2 ok, 1 failed" in printed
    from specnb.nb import read_records
    rec = read_records(out / "01_ok.ipynb")
    assert rec == {"x": 42, "headless": "1", "cwd": nbdir.name}
    assert (out / "03_also_ok.html").exists()
    index = (out / "index.html").read_text()
    assert "02_fails" in index and "failed" in index


def test_cli_usage_errors(nbdir, tmp_path, capsys):
    assert cli.main(["run", "--notebooks", str(nbdir), "--only", "nope", "--output", str(tmp_path)]) == 2
    assert "valid names" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps([1, 2]))
    assert cli.main(["run", "--notebooks", str(nbdir), "--parameters", str(bad), "--output", str(tmp_path)]) == 2


def _nb_with_intro(path, intro):
    nb = new_notebook(cells=[nbformat.v4.new_markdown_cell(intro),
                             new_code_cell("x = 1", metadata={"tags": ["parameters"]})])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


INTRO = ("# 9. A title\n\n**Question.** Does it pay\nat <my> batch?\n\n"
         "**Answer.** Yes below batch 24 (`ratio` 1.4x);\nmeasure above it.\n\nMore text.")


def test_notebook_summary_reads_question_and_answer(tmp_path):
    _nb_with_intro(tmp_path / "09_x.ipynb", INTRO)
    s = runner.notebook_summary(tmp_path / "09_x.ipynb")
    assert s == {"title": "9. A title", "question": "**Question.** Does it pay at <my> batch?",
                 "answer": "**Answer.** Yes below batch 24 (`ratio` 1.4x); measure above it."}
    _nb_with_intro(tmp_path / "10_y.ipynb", "# Only a title")
    assert runner.notebook_summary(tmp_path / "10_y.ipynb")["answer"] == ""


def test_index_shows_each_answer_beside_its_question(tmp_path):
    _nb_with_intro(tmp_path / "09_x.ipynb", INTRO)
    r = runner.Result("09_x", "ok", 1.0, tmp_path / "09_x.ipynb",
                      **runner.notebook_summary(tmp_path / "09_x.ipynb"))
    page = runner.write_report([r], tmp_path).read_text()
    row = page.split("<tbody>")[1].split("</tbody>")[0]
    assert row.index("Question.") < row.index("Answer.")  # same row, question first
    assert "<strong>Answer.</strong> Yes below batch 24 (<code>ratio</code> 1.4x)" in row
    assert "&lt;my&gt;" in row and "<my>" not in row  # Markdown rendered, raw HTML escaped
    assert "More text" not in row


def test_index_of_the_real_notebooks_has_their_answers(tmp_path):
    """The report shows the answer of every notebook that has one (no execution needed)."""
    results = [runner.Result(stem, "ok", 0.0, path, **runner.notebook_summary(path))
               for stem, path in runner.find_notebooks().items()]
    page = runner.write_report(results, tmp_path).read_text()
    # 08 measures and 09 models: the intro does not say every page reproduces the article
    assert "Each notebook reproduces a section" not in page and "08 measures" in page
    for r in results:
        if r.answer:
            assert r.answer.split("**Answer.**")[1].split()[0] in page
