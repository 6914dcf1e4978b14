"""The committed API reference (docs/api/*.md) is what scripts/gen_docs.py writes today: a changed
docstring or face fails here until `make docs` is rerun."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
API = ROOT / "docs" / "api"
SCRIPT = ROOT / "scripts" / "gen_docs.py"


def _gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _gen_docs()
# specnb.measure imports torch and transformers (seconds): its page is checked in the slow tier.
FAST = [face for face, _ in gen.PACKAGES if face not in gen.NEEDS_TORCH]


def _stale(out: Path, names) -> list[str]:
    return [n for n in names
            if (out / n).read_text(encoding="utf-8") != (API / n).read_text(encoding="utf-8")]


def test_api_pages_are_current(tmp_path):
    written = gen.generate(tmp_path, only=FAST)
    names = sorted(p.name for p in written)
    assert names == sorted([f"{gen.page_name(f)}.md" for f in FAST] + ["README.md"])
    assert _stale(tmp_path, names) == [], "docs/api is out of date: run `make docs`"


@pytest.mark.slow
def test_measure_page_is_current(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    gen.generate(tmp_path, only=sorted(gen.NEEDS_TORCH))
    assert _stale(tmp_path, ["measure.md"]) == [], "docs/api/measure.md is out of date: run `make docs`"


def test_no_page_without_a_face():
    pages = sorted(p.name for p in API.glob("*.md"))
    assert pages == sorted([f"{gen.page_name(f)}.md" for f, _ in gen.PACKAGES] + ["README.md"])


def test_every_public_name_has_a_section():
    """Each name in a face's __all__ gets its own heading on its page, in __all__'s order."""
    import specnb.advise
    import specnb.serving
    import specnb.theory

    for face in (specnb.theory, specnb.advise, specnb.serving):
        text = (API / f"{gen.page_name(face.__name__)}.md").read_text(encoding="utf-8")
        where = [text.index(f"\n## `{name}`\n") for name in face.__all__]
        assert where == sorted(where), face.__name__


def test_docstring_sections_become_markdown():
    doc = """Speedup.

    Parameters
    ----------
    alpha : float, in [0, 1]
        Acceptance rate.

    Raises
    ------
    ValueError
        alpha outside [0, 1].
    """
    assert gen.markdown(doc) == ("Speedup.\n\n**Parameters**\n\n- `alpha` : float, in [0, 1]: "
                                 "Acceptance rate.\n\n**Raises**\n\n- ValueError: alpha outside [0, 1].")
    assert gen.markdown("See :func:`~specnb.theory.walltime_speedup` and ``gamma``.") == \
        "See `walltime_speedup` and `gamma`."
    assert gen.value_repr({"b", "a"}) == "{'a', 'b'}"


def test_changelog_renames_are_current():
    """docs/changelog.md holds every docs/changelog/*.md, as `make docs` assembles them."""
    text = gen.CHANGELOG.read_text(encoding="utf-8")
    assert gen.changelog(text) == text, "docs/changelog.md is out of date: run `make docs`"
    for part in sorted(gen.CHANGELOG_PARTS.glob("*.md")):
        assert f"<!-- from docs/changelog/{part.name} -->" in text


def _slug(heading: str) -> str:
    """The anchor a Git host gives a Markdown heading (GitHub's rule)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("page", [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    """Every relative link in the README and the docs points at a file (and heading) that exists."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(target)
    assert broken == [], f"{page.name}: broken links {broken}"
