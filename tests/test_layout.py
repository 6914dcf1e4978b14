"""The tests mirror the modules: tests/test_<module>.py for specnb/<module>.py and
tests/<pkg>/test_<module>.py for specnb/<pkg>/<module>.py (a leading underscore dropped:
tests/test_json.py for specnb/_json.py). Every tests folder is a package (an ``__init__.py``),
so equal basenames in different folders do not clash. Test files that follow no module say
what they test instead (notebooks, benchmarks, scripts, the README, the browser pages); the deliberate
exceptions are listed here with their reason.

Also here: the session's writes-nothing check (tests/conftest.py) finds a new file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import conftest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "specnb"
TESTS = ROOT / "tests"

_RULE = ("rules of the checker, run in specnb.vllm.rules.RULES' order: tested through "
         "check_speculative_config (tests/vllm/test_check.py, test_oracle_fixtures.py)")

#: Modules without a test file of their name: {module path under specnb/: reason}. A
#: package's ``__init__.py`` (its face) needs none: each name it lists is tested in its module's
#: file; tests/<pkg>/test_init.py is where a face's own tests go.
NO_TEST_FILE = {
    "controls.py": "the notebooks' controls, used through specnb.nb's face: tested in "
                   "tests/test_nb.py (and the browser test)",
    "__main__.py": "`python -m specnb` calls specnb.cli.main (tests/cli/)",
    "measure/card.py": "write_model_card runs inside train_family (tests/measure/test_train.py, "
                       "slow); no test file of its own yet",
    "vllm/rules/context.py": _RULE,
    "vllm/rules/keys.py": _RULE,
    "vllm/rules/method.py": _RULE,
    "vllm/rules/switches.py": _RULE,
    "vllm/rules/target.py": _RULE,
    "vllm/rules/serve.py": "the serve-line rules: tested through check_serve_line "
                           "(tests/vllm/test_serve.py)",
    "vllm/_versions.py": "the release tables and which one judges a version: tested through "
                         "tests/vllm/test_check.py and test_oracle_fixtures.py",
    "vllm/findings.py": "the checker's result types: tested through tests/vllm/test_check.py",
}

#: Test files that follow no single module: {path under tests/: what they test}.
NOT_A_MODULE = {
    "test_layout.py": "this layout",
    "cli/test_serve_line_memory.py": "the serve line plan / simulate print read back by "
                                     "config check --serve --gpu (specnb.cli.plan, "
                                     "specnb.cli.simulate, specnb.cli.vllm together)",
    "test_makefile.py": "the Makefile's bench target (every script runs, misses listed)",
    "test_tier.py": "the fast tier's rules (tests/tier.py, tests/conftest.py)",
    "vllm/test_oracle_fixtures.py": "vLLM's own verdicts, log lines, metrics and bench files "
                                    "(tests/cases/vllm/<version>/, written by make oracle) "
                                    "replayed through specnb.vllm",
    "replay/test_oracle_ngram_v2.py": "vLLM's Model Runner V2 n-gram kernels under Triton's "
                                      "interpreter (tests/cases/vllm/0.33.0/ngram_v2.jsonl, "
                                      "oracle/drive_ngram_v2.py) replayed through specnb.replay",
    "replay/test_oracle_proposals.py": "vLLM's own n-gram proposers and Arctic Inference's "
                                       "suffix cache (tests/cases/vllm/0.33.0/proposals.jsonl, "
                                       "written by oracle/drive_proposals.py) replayed through "
                                       "specnb.replay",
    "test_readme.py": "the README's and the docs/*.md pages' examples (doctest)",
    "test_readme_commands.py": "the README's and the docs/*.md pages' command lines run as written",
    "test_browser.py": "JupyterLab and the HTML report in a real Chromium (slow, browser)",
    "advise/test_bad_input.py": "bad input across specnb.advise's modules",
    "cli/test_bad_input.py": "bad input across the CLI's commands",
    "vllm/test_bad_input.py": "bad input across specnb.vllm's modules",
}
#: Folders whose test files follow notebooks or scripts, not modules.
NOT_MODULE_FOLDERS = {
    "notebooks": "notebooks/<NN>_<slug>.ipynb -> test_<NN>_<slug>.py (slow); test_all.py "
                 "(every notebook), test_answers.py (Answers follow --parameters, slow) and "
                 "test_sources.py (committed sources, not slow)",
    "benchmarks": "benchmarks/<name>.py -> test_<name>.py (a leading underscore dropped)",
    "scripts": "scripts/<name>.sh or .py -> test_<name>.py",
}


def _modules() -> list[Path]:
    return sorted(p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py")
                  if "__pycache__" not in p.parts)


def _test_file(module: Path) -> Path:
    name = module.stem.removeprefix("_") if module.stem not in ("__init__", "__main__") \
        else module.stem.strip("_")
    return module.parent / f"test_{name}.py"


def test_every_module_has_its_test_file():
    missing = [f"specnb/{m.as_posix()} -> tests/{_test_file(m).as_posix()}" for m in _modules()
               if m.name != "__init__.py" and m.as_posix() not in NO_TEST_FILE
               and not (TESTS / _test_file(m)).is_file()]
    assert not missing, "modules without their test file (add it, or list the module in " \
                        "NO_TEST_FILE with the reason):\n" + "\n".join(missing)


def test_the_exceptions_are_still_needed():
    modules = {m.as_posix() for m in _modules()}
    gone = [m for m in NO_TEST_FILE if m not in modules]
    has_file = [m for m in NO_TEST_FILE if m != "__main__.py" and (TESTS / _test_file(Path(m))).is_file()]
    assert not gone, f"NO_TEST_FILE lists modules that no longer exist: {gone}"
    assert not has_file, f"NO_TEST_FILE lists modules that now have their test file: {has_file}"
    stale = [t for t in NOT_A_MODULE if not (TESTS / t).is_file()]
    assert not stale, f"NOT_A_MODULE lists test files that no longer exist: {stale}"


def test_every_test_file_follows_a_module_or_says_what_it_tests():
    modules = {_test_file(m).as_posix() for m in _modules()}
    notebooks = {f"notebooks/test_{p.stem}.py" for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    benchmarks = {f"benchmarks/test_{p.stem.removeprefix('_')}.py"
                  for p in (ROOT / "benchmarks").glob("*.py")}
    scripts = {f"scripts/test_{p.stem}.py" for p in (ROOT / "scripts").glob("*.*")
               if p.suffix in (".sh", ".py")}
    extra = {"notebooks/test_all.py", "notebooks/test_answers.py", "notebooks/test_sources.py"}
    stray = []
    for path in sorted(TESTS.rglob("test_*.py")):
        rel = path.relative_to(TESTS).as_posix()
        if rel in modules or rel in NOT_A_MODULE or rel in notebooks | benchmarks | scripts | extra:
            continue
        stray.append(rel)
    rules = "\n".join(f"  tests/{k}/: {v}" for k, v in NOT_MODULE_FOLDERS.items())
    assert not stray, ("test files named after no module, notebook, benchmark or script (move "
                       "them to the file of what they test, or list them in NOT_A_MODULE):\n"
                       + "\n".join(stray) + "\nfolders that follow no module:\n" + rules)


def test_every_notebook_has_its_test_file():
    missing = [p.name for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
               if not (TESTS / "notebooks" / f"test_{p.stem}.py").is_file()]
    assert not missing, f"notebooks without tests/notebooks/test_<NN>_<slug>.py: {missing}"


def test_every_tests_folder_is_a_package():
    folders = {p.parent for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(f.relative_to(ROOT).as_posix() for f in folders
                     if not (f / "__init__.py").is_file())
    assert not missing, f"tests folders without __init__.py: {missing}"


def test_the_writes_nothing_check_sees_a_new_file_and_not_the_caches(tmp_path, monkeypatch):
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed (the session check is skipped without it too)")
    repo = tmp_path / "checkout"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("build/\n")
    monkeypatch.setattr(conftest, "ROOT", repo)
    before = conftest._checkout_entries()
    assert before == {"?? .gitignore"}
    (repo / ".hypothesis" / "examples").mkdir(parents=True)
    (repo / ".hypothesis" / "examples" / "x").write_text("cache")
    (repo / "pkg" / "__pycache__").mkdir(parents=True)
    (repo / "pkg" / "__pycache__" / "m.pyc").write_bytes(b"")
    assert conftest._checkout_entries() == before
    (repo / "build" / "test-report").mkdir(parents=True)
    (repo / "build" / "test-report" / "index.html").write_text("<html>")
    (repo / "notes.txt").write_text("x")
    assert conftest._checkout_entries() - before == {"!! build/test-report/index.html",
                                                     "?? notes.txt"}
