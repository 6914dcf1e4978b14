"""The notebook runner: names, parameters, failures, summary and exit status (tiny notebooks;
the tests that start a kernel are marked slow)."""

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


def test_a_plain_number_names_a_notebook(tmp_path):
    _nb(tmp_path / "04_one.ipynb", "alpha = 0.5", "pass")
    for name in ("4", "04", "one", "04_one.ipynb"):
        assert runner.resolve([name], runner.find_notebooks(tmp_path)) == ["04_one"]


def test_a_notebook_named_twice_is_refused(tmp_path):
    """T5-C1 addendum: `run --only 02 02` (or 02 2) is refused as `plan --gamma 3 3` is."""
    _nb(tmp_path / "04_one.ipynb", "alpha = 0.5", "pass")
    for names in (["04", "04"], ["4", "one"]):
        with pytest.raises(ValueError, match="--only lists a notebook twice: .* are both 04_one"):
            runner.resolve(names, runner.find_notebooks(tmp_path))


def test_unknown_parameter_is_an_error(nbdir, tmp_path):
    with pytest.raises(ValueError, match="unknown parameter.*nope.*its parameters are x"):
        runner.run_notebooks(["01"], tmp_path, parameters={"01": {"nope": 1}}, notebook_dir=nbdir)
    assert not list(tmp_path.glob("*.ipynb"))  # checked before anything runs


def test_parameter_values_are_checked_against_the_parameters_cell(tmp_path):
    """Trial 8a T8a-13: a value of another kind than the parameter's default in the parameters
    cell is refused before anything runs; an int passes for a float, null passes, an
    expression's parameter takes any value, and a ``# type:`` comment widens the kind."""
    cell = ("n = 3\nx = 0.5\nname = 'a'\non = False\ngs = [1, 2]\nts = [0.0, 1.0]\n"
            "mixed = [1, 'a']\npath = None\nexpr = 2 * 3\nmode = 'auto'  # type: str|bool  "
            "help\nann: int = 4\n")
    _nb(tmp_path / "05_k.ipynb", cell, "pass")
    nb = tmp_path / "05_k.ipynb"
    good = dict(n=7, x=1, name="b", on=True, gs=[3], ts=[1, 0.5], mixed=["b", 2.0], path=3,
                expr="anything", mode=False, ann=None)
    runner.check_parameters(nb, good)
    runner.check_parameters(nb, {"mode": "x"})
    bad = [("n", 2.5, "an integer"), ("n", True, "an integer"), ("x", "0.5", "a number"),
           ("name", 1, "a string"), ("on", 1, "true or false"), ("gs", [1, 2.0], "a list of integers"),
           ("ts", 0.5, "a list of numbers"), ("mixed", {"a": 1}, "a list"),
           ("mode", 1, "a string or true or false"), ("ann", "4", "an integer")]
    for name, value, words in bad:
        with pytest.raises(ValueError) as info:
            runner.check_parameters(nb, {name: value})
        assert str(info.value) == (f"05_k: parameter {name} must be {words} (as in its "
                                   f"parameters cell), got {value!r}")


def test_the_parameters_cell_is_read_as_papermill_reads_it():
    """The names check no longer asks papermill: the bundled notebooks' parameter names (and
    their ``# type:`` comments) read alike both ways."""
    pm = pytest.importorskip("papermill")
    for stem, path in runner.find_notebooks().items():
        mine = runner._cell_parameters(path)
        theirs = pm.inspect_notebook(str(path))
        assert list(mine) == list(theirs), stem


def test_notebook_04_ranges_are_the_librarys():
    """T8a-13: notebook 04's alpha 1.5 is refused with theory's own message, before a kernel."""
    from specnb import theory

    nb = runner.NOTEBOOK_DIR / "04_draft_length.ipynb"
    defaults = {k: d for k, (d, _) in runner._cell_parameters(nb).items()}
    for name, value in (("alpha", 1.5), ("gamma", -1), ("c", -0.1), ("gamma_max", 0)):
        p = {**defaults, name: value}
        with pytest.raises(ValueError) as lib:
            theory.summary(p["alpha"], p["gamma"], p["c"], p["c_hat"], gamma_max=p["gamma_max"])
        with pytest.raises(ValueError) as info:
            runner.check_parameters(nb, {name: value})
        assert str(info.value) == f"04_draft_length: {name} = {value!r}: {lib.value}"
    runner.check_parameters(nb, {"alpha": 1, "gamma": 8})


@pytest.mark.slow  # starts a kernel
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


def _nb_with_intro(path, intro, answer_src=None):
    cells = [nbformat.v4.new_markdown_cell(intro),
             new_code_cell("x = 1", metadata={"tags": ["parameters"]})]
    if answer_src:
        cells.append(new_code_cell(answer_src))
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


INTRO = ("# 9. A title\n\n**Question.** Does it pay\nat <my> batch?\n\n"
         "**Answer.** A static answer.\n\nMore text.")
ANSWER_SRC = ("from specnb import nb\n"
              "nb.answer(f'Yes below batch {24 * x} (`ratio` 1.4x);\\nmeasure above it.')")


@pytest.mark.slow  # starts a kernel
def test_notebook_summary_reads_question_and_the_computed_answer(tmp_path):
    """The question comes from the first Markdown cell; the answer only from an executed
    notebook's Answer output, never from static Markdown."""
    _nb_with_intro(tmp_path / "09_x.ipynb", INTRO, ANSWER_SRC)
    s = runner.notebook_summary(tmp_path / "09_x.ipynb")
    assert s == {"title": "9. A title", "question": "**Question.** Does it pay at <my> batch?",
                 "answer": ""}  # not executed: no answer, and the static paragraph is ignored
    results = runner.run_notebooks(None, tmp_path / "out", notebook_dir=tmp_path,
                                   parameters={"09": {"x": 2}}, progress=False)
    assert results[0].answer == "**Answer.** Yes below batch 48 (`ratio` 1.4x); measure above it."
    assert runner.notebook_summary(tmp_path / "out" / "09_x.ipynb")["answer"] == results[0].answer


def test_index_shows_each_answer_beside_its_question(tmp_path):
    _nb_with_intro(tmp_path / "09_x.ipynb", INTRO)
    r = runner.Result("09_x", "ok", 1.0, tmp_path / "09_x.ipynb",
                      **{**runner.notebook_summary(tmp_path / "09_x.ipynb"),
                         "answer": "**Answer.** Yes below batch 24 (`ratio` 1.4x); measure."})
    page = runner.write_report([r], tmp_path).read_text()
    row = page.split("<tbody>")[1].split("</tbody>")[0]
    assert row.index("Question.") < row.index("Answer.")  # same row, question first
    assert "<strong>Answer.</strong> Yes below batch 24 (<code>ratio</code> 1.4x)" in row
    assert "&lt;my&gt;" in row and "<my>" not in row  # Markdown rendered, raw HTML escaped
    assert "More text" not in row and "static answer" not in row


def test_index_says_why_a_notebook_has_no_answer(tmp_path):
    _nb_with_intro(tmp_path / "09_x.ipynb", INTRO)
    summary = runner.notebook_summary(tmp_path / "09_x.ipynb")
    failed = runner.Result("09_x", "failed", 1.0, tmp_path / "09_x.ipynb", **summary)
    ok = runner.Result("10_y", "ok", 1.0, tmp_path / "09_x.ipynb", **summary)
    page = runner.write_report([failed, ok], tmp_path).read_text()
    assert page.count("class='a noanswer'") == 2
    assert "2 notebooks run: 1 ok, 1 failed" in page


@pytest.mark.slow  # starts a kernel
def test_failure_names_the_prompt_number_the_html_shows(nbdir, tmp_path):
    """A failing cell is named as the executed notebook shows it (In [n]), and by position."""
    d = tmp_path / "nbs"
    d.mkdir()
    nb = new_notebook(cells=[nbformat.v4.new_markdown_cell("# t"),
                             new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                             nbformat.v4.new_markdown_cell("text"),
                             new_code_cell("raise ValueError('bad x')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, d / "01_f.ipynb")
    (res,) = runner.run_notebooks(None, tmp_path / "out", notebook_dir=d, progress=False)
    executed = nbformat.read(tmp_path / "out" / "01_f.ipynb", as_version=4)
    shown = [c.execution_count for c in executed.cells
             if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.outputs)]
    assert res.error == f"In [{shown[0]}]: ValueError: bad x"
    banner = executed.cells[0].source  # papermill's "An Exception was encountered at ..."
    assert f"In [{shown[0]}]" in banner


@pytest.mark.parametrize("case", ["not-writable", "index-is-a-folder"])
def test_output_folder_that_cannot_be_written_is_a_usage_error(nbdir, tmp_path, capsys, case):
    """An existing --output folder that refuses writes: exit 2, one line, nothing run."""
    import os
    import stat
    import subprocess

    out = tmp_path / "out"
    out.mkdir()
    undo = None
    if case == "not-writable":
        if os.geteuid() == 0:  # root writes through permissions: make the folder immutable
            if subprocess.run(["chattr", "+i", str(out)], capture_output=True).returncode:
                pytest.skip("running as root without chattr +i support")
            undo = ["chattr", "-i", str(out)]
        else:
            out.chmod(stat.S_IRUSR | stat.S_IXUSR)
    else:
        (out / "index.html").mkdir()
    try:
        code = cli.main(["run", "--notebooks", str(nbdir), "--only", "01", "--output", str(out)])
    finally:
        if undo:
            subprocess.run(undo, check=True)
        out.chmod(stat.S_IRWXU)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("specnb run: error: cannot write") and str(out) in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not list(out.glob("*.ipynb"))  # checked before anything ran


# ------------------------------------------------------- safe output folders (faults N6a, N6b, R1)
def _result(tmp, name, answer="**Answer.** yes.", figure=False):
    page = tmp / f"{name}.html"
    page.write_text("<html>page</html>")
    fig = None
    if figure:
        fig = tmp / f"{name}.png"
        fig.write_bytes(b"\x89PNG")
    return runner.Result(name, "ok", 1.0, tmp / f"{name}.ipynb", html=page, title=name,
                         answer=answer, figure=fig)


def test_a_folder_with_the_users_files_is_refused_naming_the_file(tmp_path, capsys, nbdir):
    (tmp_path / "index.html").write_text("mine")
    with pytest.raises(ValueError, match=r"will not replace .*index.html: specnb run did not "
                                         r"write it .*--force"):
        runner.check_output_dir(tmp_path, ["01_ok.ipynb"])
    assert cli.main(["run", "--notebooks", str(nbdir), "--only", "01", "--output",
                     str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "will not replace" in err and str(tmp_path / "index.html") in err
    assert (tmp_path / "index.html").read_text() == "mine"
    # a same-named notebook beside a specnb index that did not list it
    (tmp_path / "r").mkdir()
    runner.write_report([], tmp_path / "r")
    (tmp_path / "r" / "01_ok.ipynb").write_text("{}")
    with pytest.raises(ValueError, match=r"will not replace .*01_ok.ipynb"):
        runner.check_output_dir(tmp_path / "r", ["01_ok.ipynb"])
    runner.check_output_dir(tmp_path / "r", ["01_ok.ipynb"], force=True)  # --force
    runner.check_output_dir(tmp_path / "r", ["02_fails.ipynb"])  # other names are fine


def test_specnb_files_and_an_older_report_are_replaced(tmp_path):
    r = _result(tmp_path, "01_ok", figure=True)
    (tmp_path / "01_ok.ipynb").write_text("{}")
    page = runner.write_report([r], tmp_path).read_text()
    assert runner.REPORT_MARKER in page
    runner.check_output_dir(tmp_path, ["01_ok.ipynb"])  # all listed in the manifest
    old = tmp_path / "old"
    old.mkdir()
    (old / "index.html").write_text('<title>specnb report</title><a href="02_x.html">')
    (old / "02_x.ipynb").write_text("{}")
    runner.check_output_dir(old, ["02_x.ipynb"])  # a report from before the manifest


def test_rerunning_one_notebook_keeps_the_rows_still_there(tmp_path):
    a, b = _result(tmp_path, "01_a"), _result(tmp_path, "02_b", figure=True)
    runner.write_report([a, b], tmp_path)
    again = _result(tmp_path, "02_b", answer="**Answer.** again.")
    page = runner.write_report([again], tmp_path).read_text()
    body = page.split("<tbody>")[1]
    assert body.index("01_a") < body.index("02_b")  # notebook order
    assert "(earlier run)" in body.split("02_b")[0] and "again." in body
    assert "1 row kept from earlier runs" in page
    # a page removed since: its row goes
    (tmp_path / "01_a.html").unlink()
    page = runner.write_report([again], tmp_path).read_text()
    assert "01_a" not in page.split("<tbody>")[1]


def test_a_second_run_into_the_folder_is_refused_with_the_pid(tmp_path, nbdir, capsys):
    import subprocess
    import sys

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / runner.LOCK).write_text(str(sleeper.pid))
        code = cli.main(["run", "--notebooks", str(nbdir), "--only", "01", "--output",
                         str(tmp_path)])
        err = capsys.readouterr().err
        assert code == 2 and f"in use by pid {sleeper.pid}" in err
    finally:
        sleeper.kill()
        sleeper.wait()
    # a lock left by a finished process is taken over, and released
    lock = runner._lock(tmp_path)
    assert lock.read_text() == str(__import__("os").getpid())
    runner._unlock(lock)
    assert not lock.exists()


def test_key_figure_is_the_tagged_cells_first_image(tmp_path):
    import base64

    png = base64.b64encode(b"\x89PNG-tagged").decode()
    other = base64.b64encode(b"\x89PNG-other").decode()
    nb = new_notebook(cells=[
        new_code_cell("a", outputs=[nbformat.v4.new_output("display_data", {"image/png": other})]),
        new_code_cell("b", metadata={"tags": [runner.KEY_FIGURE_TAG]},
                      outputs=[nbformat.v4.new_output("display_data", {"image/png": png})])])
    nbformat.write(nb, tmp_path / "01_x.ipynb")
    path = runner.key_figure(tmp_path / "01_x.ipynb")
    assert path == tmp_path / "01_x.png" and path.read_bytes() == b"\x89PNG-tagged"
    nbformat.write(new_notebook(cells=[new_code_cell("c")]), tmp_path / "02_y.ipynb")
    assert runner.key_figure(tmp_path / "02_y.ipynb") is None
    page = runner.write_report([_result(tmp_path, "01_x", figure=True)], tmp_path).read_text()
    assert "<div class='figure'><a href=\"01_x.html\"><img src='01_x.png'" in page


def test_every_notebook_that_draws_tags_one_key_figure():
    for stem, path in runner.find_notebooks().items():
        nb = nbformat.read(str(path), as_version=4)
        tagged = [c for c in nb.cells if runner.KEY_FIGURE_TAG in c.metadata.get("tags", [])]
        draws = any(c.cell_type == "code" and ("plt." in c.source or "heatmap(" in c.source)
                    for c in nb.cells)
        assert len(tagged) == int(draws), stem
        assert all(c.cell_type == "code" for c in tagged), stem


def test_the_test_sessions_notebook_parameters_are_the_notebooks_own():
    """The session fixture's parameters (tests/conftest.py) name notebooks and parameters that
    exist, and keep three gammas for notebook 08's leave-one-gamma-out fit: a slip shows here,
    not after minutes of notebook runs."""
    from tests.conftest import NOTEBOOK_TEST_PARAMETERS

    for stem, params in NOTEBOOK_TEST_PARAMETERS.items():
        runner.check_parameters(runner.NOTEBOOK_DIR / f"{stem}.ipynb", params)
    assert len(set(NOTEBOOK_TEST_PARAMETERS["08_measure_alpha"]["gammas"])) >= 3
