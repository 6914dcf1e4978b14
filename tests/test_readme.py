"""The README's Python examples run and print what they say (doctest)."""

import doctest
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_examples():
    result = doctest.testfile(str(README), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_readme_names_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert "make test" in text and "make run" in text
