"""Shared fixtures and two session checks.

``executed_notebooks`` runs every notebook once per test session through the runner (as
``make run`` does) and hands out the results; notebook tests read the values the notebooks
recorded, and the browser tests open the report it wrote. It takes minutes, so only tests
marked ``slow`` may use it (directly or through ``records``): collection fails naming any
other, and ``pytest -m "not slow"`` (``make check``) runs no notebook. Tests marked
``browser`` must be marked ``slow`` too.

The fast tier (``-m "not slow"``): what it leaves out is one rule each, in tests/tier.py: an
eighth of each property test's examples (the Hypothesis profile ``check``), a sample of the
cases of a test marked ``fast_sample`` (the others get the ``slow`` mark here), and no module
whose every test is slow is even imported (``pytest_ignore_collect``).

The session writes nothing into the checkout except caches (.pytest_cache, .hypothesis,
__pycache__): the report goes to pytest's temporary directory (or ``$SPECNB_TEST_REPORT``),
and at the end of the session ``git status --porcelain --ignored`` must show no entry that was
not there at its start; the session fails listing any new one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from tests import tier

ROOT = Path(__file__).resolve().parent.parent

# jsonschema (imported by nbformat: the notebook and runner tests) would import rfc3987_syntax,
# 2-3 s of CPU, for format checks nothing here uses: the rule and its reason are in
# specnb.runner.skip_iri_format_checks, which `specnb run` calls too.
from specnb.runner import skip_iri_format_checks  # noqa: E402  (stdlib imports only)

skip_iri_format_checks()

#: Path parts a test session may create in the checkout.
CACHES = (".pytest_cache", ".hypothesis", "__pycache__")


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory) -> Path:
    """Where the session's report goes: ``$SPECNB_TEST_REPORT``, else ``test-report`` under
    pytest's temporary directory (``/tmp/pytest-of-$USER/pytest-N/``, the last 3 kept)."""
    wanted = os.environ.get("SPECNB_TEST_REPORT")
    return Path(wanted) if wanted else tmp_path_factory.mktemp("test-report", numbered=False)


#: The parameters the test session runs the notebooks with (``make run`` uses the notebooks'
#: own defaults). Notebook 08 measures on the bundled pair, about 6 of make test's minutes with
#: its defaults: here 3 gammas instead of 4 (three keep the leave-one-gamma-out fit usable:
#: specnb.measure.loo_warning), 32 new tokens instead of 48 and 1 timed run per setting instead of
#: 2, about a quarter of the generate work (204 timed calls of 32 tokens against 528 of 48). Both
#: temperatures, both drafts, both loops, prompt lookup, the head and every section still run,
#: and tests/notebooks/test_08_measure_alpha.py checks the same things.
NOTEBOOK_TEST_PARAMETERS = {"08_measure_alpha": {"gammas": [1, 3, 5], "max_new_tokens": 32,
                                                 "repeats": 1}}


@pytest.fixture(scope="session")
def executed_notebooks(report_dir):
    """{notebook stem: specnb.runner.Result} for every notebook, executed once per session
    with :data:`NOTEBOOK_TEST_PARAMETERS`.

    The report (executed notebooks, HTML pages, index.html) is written to ``report_dir``.
    """
    from specnb.runner import run_notebooks

    results = run_notebooks(None, output_dir=report_dir, parameters=NOTEBOOK_TEST_PARAMETERS,
                            progress=False)
    return {r.name: r for r in results}


@pytest.fixture(scope="session")
def records(executed_notebooks):
    """{notebook stem: {name: value}} of everything the notebooks recorded."""
    from specnb.nb import read_records

    return {name: read_records(r.output) for name, r in executed_notebooks.items() if r.output.exists()}


# ------------------------------------------------------------------------- tiers, markers

settings.register_profile("full", deadline=None)
settings.register_profile("check", deadline=None, max_examples=12)  # an eighth: tests/tier.py


def pytest_configure(config):
    # registered here, not in pyproject.toml (whose change makes `make` reinstall the package)
    config.addinivalue_line("markers", "fast_sample(every, groups=0): a long parametrized test whose fast "
                            "tier runs a sample of its cases (tests/tier.py); make test runs all")
    named = config.getoption("hypothesis_profile", None) or os.environ.get("HYPOTHESIS_PROFILE")
    fast = "not slow" in (config.getoption("markexpr", "") or "")
    settings.load_profile(named or ("check" if fast else "full"))
    tier.SCALE = settings().max_examples / 100


#: ``pytestmark = pytest.mark.slow`` or ``pytestmark = [pytest.mark.slow, ...`` at a module's top.
_SLOW_MODULE = re.compile(r"^pytestmark\s*=\s*\[?\s*pytest\.mark\.slow\b", re.MULTILINE)


def _fast_tier(config) -> bool:
    """-m is ``not slow`` (or ``not slow and ...``): no test marked slow is selected."""
    expr = " ".join((config.getoption("markexpr", "") or "").split())
    return expr == "not slow" or expr.startswith("not slow and ")


def pytest_ignore_collect(collection_path, config):
    """In the fast tier, leave out a module whose every test is slow (``pytestmark =
    pytest.mark.slow``, or a list that starts with it, at its top: the notebooks, the browser,
    transformers runs) without
    importing it: -m would deselect all its tests anyway, after their imports (playwright,
    papermill, transformers' models) had cost seconds. Read as text, not imported."""
    if (collection_path.suffix == ".py" and collection_path.name.startswith("test_")
            and _fast_tier(config)):
        try:
            text = collection_path.read_text(encoding="utf-8")
        except OSError:
            return None
        if _SLOW_MODULE.search(text):
            return True
    return None


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the cases it marks slow go too
def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` the cases of a ``fast_sample`` test that the fast tier leaves out (the
    rule: tests/tier.py), then refuse a test that runs the notebooks, or drives a browser,
    without the ``slow`` mark."""
    _sample(items)
    unmarked = [item.nodeid for item in items if item.get_closest_marker("slow") is None
                and ("executed_notebooks" in getattr(item, "fixturenames", ())
                     or item.get_closest_marker("browser") is not None)]
    if unmarked:
        raise pytest.UsageError(
            "these tests execute the notebooks (the executed_notebooks fixture) or drive a "
            "browser but are not marked slow; add @pytest.mark.slow (or pytestmark):\n  "
            + "\n  ".join(unmarked))


def _sample(items):
    """``@pytest.mark.fast_sample(every=N[, groups=K])``: of each such test's parametrized cases, those
    ``tier.sampled`` leaves out of the fast tier get the ``slow`` mark (``make test`` runs them
    all). A case already marked slow stays slow; an xfail case is always kept."""
    by_test: dict[str, list] = {}
    for item in items:
        mark = item.get_closest_marker("fast_sample")
        if mark is not None and getattr(item, "callspec", None) is not None:
            by_test.setdefault(item.nodeid.split("[", 1)[0], []).append((item, mark))
    for cases in by_test.values():
        mark = cases[0][1]
        if mark.args or "every" not in mark.kwargs or set(mark.kwargs) - {"every", "groups"}:
            raise pytest.UsageError(f"{cases[0][0].nodeid}: write fast_sample(every=N) or "
                                    f"fast_sample(every=N, groups=K); got "
                                    f"fast_sample(*{mark.args}, **{mark.kwargs})")
        keep = [i for i, (item, _) in enumerate(cases) if item.get_closest_marker("xfail")]
        try:
            runs = tier.sampled([item.callspec.id for item, _ in cases], keep=keep, **mark.kwargs)
        except ValueError as e:
            raise pytest.UsageError(f"{cases[0][0].nodeid}: {e}") from None
        for (item, _), fast in zip(cases, runs):
            if not fast:
                item.add_marker(pytest.mark.slow)


# ------------------------------------------------------------------- writes nothing here

def _checkout_entries() -> set[str] | None:
    """``git status --porcelain --ignored`` of the checkout, one entry per file (caches and
    the virtual environment left out), or None outside a git checkout."""
    excluded = {".venv"}
    prefix = Path(sys.prefix).resolve()
    if prefix.is_relative_to(ROOT):
        excluded.add(prefix.relative_to(ROOT).as_posix())
    cmd = ["git", "-C", str(ROOT), "status", "--porcelain", "--ignored", "--untracked-files=all",
           "--", ".", *(f":(exclude){p}" for p in sorted(excluded))]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return {line for line in done.stdout.splitlines()
            if not any(part in CACHES for part in Path(line[3:].strip('"')).parts)}


def pytest_sessionstart(session):
    session.config._specnb_checkout = _checkout_entries()


def pytest_sessionfinish(session, exitstatus):
    before = getattr(session.config, "_specnb_checkout", None)
    if before is None:
        return
    after = _checkout_entries()
    new = sorted((after or set()) - before)
    if new:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = ("entries of git status --porcelain --ignored that are new since the session "
                "started (tests write under tmp_path instead; a file you edited meanwhile shows "
                "here too):\n  " + "\n  ".join(new))
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_sep("=", "files written into the checkout", red=True)
            reporter.write_line(text)
        else:
            print(text, file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
