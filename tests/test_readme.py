"""The README's and the docs pages' Python examples run and print what they say (doctest)."""

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# Hand-written pages under docs/ (not the generated docs/api/) whose examples are doctests.
DOC_PAGES = sorted(p for p in (ROOT / "docs").glob("*.md") if ">>> " in p.read_text(encoding="utf-8"))


def _run(path: Path):
    return doctest.testfile(str(path), module_relative=False,
                            optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)


def test_readme_examples():
    result = _run(README)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.parametrize("page", DOC_PAGES, ids=[p.name for p in DOC_PAGES])
def test_docs_page_examples(page):
    result = _run(page)
    assert result.attempted > 0
    assert result.failed == 0


def test_docs_pages_with_examples_are_found():
    """The pages that carry the moved README examples are among those run."""
    assert {"vllm.md", "serving.md", "data.md"} <= {p.name for p in DOC_PAGES}


def test_readme_names_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert "make test" in text and "make run" in text


def test_readme_has_one_example_per_command():
    """The front page shows each `specnb` command once, in a bash block."""
    import re

    blocks = "\n".join(re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S))
    for command in ("run", "measure", "config check", "config build", "metrics", "bench", "plan"):
        assert re.search(rf"^(?:\.venv/bin/)?specnb {command}\b", blocks, re.M), command
