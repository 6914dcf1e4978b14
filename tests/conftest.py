"""Shared fixtures. ``executed_notebooks`` runs every notebook once per test session through
the runner (as ``make run`` does) and hands out the results; notebook tests read the values the
notebooks recorded, and the browser tests open the report it wrote."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORT_DIR = ROOT / "build" / "test-report"


@pytest.fixture(scope="session")
def executed_notebooks():
    """{notebook stem: specnb.runner.Result} for every notebook, executed once per session.

    The report (executed notebooks, HTML pages, index.html) is written to build/test-report/.
    """
    from specnb.runner import run_notebooks

    results = run_notebooks(None, output_dir=REPORT_DIR, progress=False)
    return {r.name: r for r in results}


@pytest.fixture(scope="session")
def records(executed_notebooks):
    """{notebook stem: {name: value}} of everything the notebooks recorded."""
    from specnb.nb import read_records

    return {name: read_records(r.output) for name, r in executed_notebooks.items() if r.output.exists()}
