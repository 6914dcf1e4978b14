"""specnb run (specnb.cli.run): bad parameters files and usage errors exit 2."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from specnb import runner
from specnb.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def usage_exit(capsys, *argv):
    """argparse usage errors exit 2 through SystemExit; return the stderr text."""
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    assert info.value.code == 2
    return capsys.readouterr().err


# =========================================================================== CLI: run
@pytest.fixture(scope="module")
def one_nb(tmp_path_factory):
    d = tmp_path_factory.mktemp("nbs")
    nb = new_notebook(cells=[new_code_cell("alpha = 0.5", metadata={"tags": ["parameters"]})])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, d / "04_one.ipynb")
    return d


@pytest.mark.parametrize("yaml_text,words", [
    ("- 1\n- 2\n", "must map notebook names"),
    ("[]\n", "must map notebook names"),  # trial4 C4: an empty list ran with the defaults
    ("true: {alpha: 1}\n", "True is not a notebook name"),
    ("04: {alpha: 2020-01-01}\n", "04.alpha is of type date"),
    ("04: {alpha: !!set {a, b}}\n", "04.alpha is of type set"),
    ("04: {alpha: [1, {2: 3}]}\n", "mapping keys must be strings"),
    ("99: {alpha: 1}\n", "parameters for notebook '99' matches no notebook"),
    ("04: {beta: 1}\n", "unknown parameter(s) beta"),
    # fault N19: one line with the line and column, not PyYAML's 8-line dump
    ("04:\n  alpha: 1\n beta: [2\n", "not valid YAML/JSON at line 3, column 2"),
])
def test_cli_run_bad_parameters_files(capsys, tmp_path, one_nb, yaml_text, words):
    params = tmp_path / "p.yaml"
    params.write_text(yaml_text)
    code, _, err = run(capsys, "run", "--notebooks", str(one_nb), "--output",
                       str(tmp_path / "out"), "--parameters", str(params))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # nothing ran


def test_cli_run_usage_errors(capsys, tmp_path, one_nb):
    code, _, err = run(capsys, "run", "--notebooks", str(one_nb), "--parameters", str(tmp_path))
    assert code == 2 and "cannot be read" in err
    code, _, err = run(capsys, "run", "--notebooks", str(tmp_path), "--output", str(tmp_path))
    assert code == 2 and "no notebooks named NN_slug.ipynb" in err
    code, _, err = run(capsys, "run", "--notebooks", str(one_nb), "--output", "/dev/null/x")
    assert code == 2 and "cannot create the output folder" in err
    assert "positive integer" in usage_exit(capsys, "run", "--cell-timeout", "0")
    with pytest.raises(ValueError, match="cell_timeout must be an integer >= 1"):
        runner.run_notebooks(notebook_dir=one_nb, cell_timeout=-1, output_dir=tmp_path)


def _in_one_process(cases):
    """Run each argv of ``cases`` through ``specnb.cli.main`` in one fresh process: [exit
    status, stderr, the heavy modules (papermill, nbconvert, nbformat, jupyter_client) then
    imported] per case."""
    import json
    import subprocess
    import sys

    script = ("import contextlib, io, json, sys\nfrom specnb.cli import main\nres = []\n"
              "for argv in json.loads(sys.argv[1]):\n"
              "    err = io.StringIO()\n"
              "    with contextlib.redirect_stderr(err):\n"
              "        code = main(argv)\n"
              "    heavy = {'papermill', 'nbconvert', 'nbformat', 'jupyter_client'}\n"
              "    res.append([code, err.getvalue(), sorted(heavy & set(sys.modules))])\n"
              "print(json.dumps(res))\n")
    got = subprocess.run([sys.executable, "-c", script, json.dumps(cases)], capture_output=True,
                         text=True, check=True)
    return json.loads(got.stdout)


def test_bad_run_flags_are_refused_before_papermill_or_the_kernel_is_imported(tmp_path, one_nb):
    """Fault C4 (trial 3): `run --only 42` took 14 s to refuse. --only, --notebooks and the
    parameters file's notebook names are checked against the notebook list before papermill,
    nbconvert, nbformat or jupyter_client is imported (asserted on sys.modules, one process)."""
    params = tmp_path / "p.yaml"
    params.write_text("99: {alpha: 1}\n")
    out = str(tmp_path / "out")
    cases = [["run", "--only", "42", "--notebooks", str(one_nb), "--output", out],
             ["run", "--notebooks", str(tmp_path / "none"), "--output", out],
             ["run", "--parameters", str(params), "--notebooks", str(one_nb), "--output", out]]
    words = ["--only '42' matches no notebook; valid names: 04_one", "does not exist",
             "parameters for notebook '99' matches no notebook"]
    for w, (code, err, heavy) in zip(words, _in_one_process(cases), strict=True):
        assert code == 2 and w in err and len(err.strip().splitlines()) == 1, err
        assert heavy == [], heavy
    assert not (tmp_path / "out").exists()  # nothing ran, no folder made


def test_bad_parameter_values_exit_2_before_papermill(tmp_path):
    """Trial 8a T8a-13: `{"04": {"alpha": 1.5}}` ran notebook 04 and exited 1 (ParamValueError
    in the kernel); a wrong kind or a value out of the library's range now exits 2 naming the
    notebook, parameter and value, with papermill, nbformat and the kernel never imported."""
    import json

    from specnb import theory

    with pytest.raises(ValueError) as lib:
        theory.summary(1.5, 5, 0.05, 0.05, gamma_max=16)  # notebook 04's cell, alpha 1.5
    cases, words = [], [f"04_draft_length: alpha = 1.5: {lib.value}",
                        "04_draft_length: parameter alpha must be a number (as in its "
                        "parameters cell), got 'x'",
                        "09_batch_and_context: parameter gammas must be a list of integers (as "
                        "in its parameters cell), got [1, 2.5]"]
    for i, p in enumerate([{"04": {"alpha": 1.5}}, {"04": {"alpha": "x"}},
                           {"09": {"gammas": [1, 2.5]}}]):
        (tmp_path / f"p{i}.json").write_text(json.dumps(p))
        cases.append(["run", "--only", next(iter(p)), "--parameters", str(tmp_path / f"p{i}.json"),
                      "--output", str(tmp_path / "out")])
    for w, (code, err, heavy) in zip(words, _in_one_process(cases), strict=True):
        assert code == 2 and w in err and len(err.strip().splitlines()) == 1, err
        assert heavy == [], heavy
    assert not (tmp_path / "out").exists()
