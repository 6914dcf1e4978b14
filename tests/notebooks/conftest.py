"""Fixtures of the notebook tests (all slow: they read the session's executed notebooks)."""

import pytest

from tests.notebooks.support import ARTICLE_NOTEBOOKS, outputs


@pytest.fixture(scope="session")
def shown(executed_notebooks):
    """{notebook number: (tables, output text)} of the executed notebooks 01-05."""
    return {n: outputs(executed_notebooks[stem].output) for n, stem in ARTICLE_NOTEBOOKS.items()}
