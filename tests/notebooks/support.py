"""Helpers for the notebook tests: the notebooks' sources and parameters cells, and what an
executed notebook shows (its HTML tables and output text). The executed notebooks come from
the session fixtures in tests/conftest.py (``executed_notebooks``, ``records``) and
tests/notebooks/conftest.py (``shown``)."""

from __future__ import annotations

import ast
import json
from html.parser import HTMLParser
from pathlib import Path

from specnb import article, nb

ROOT = Path(__file__).resolve().parent.parent.parent
#: the article's notebooks 01-05 by number
ARTICLE_NOTEBOOKS = {"01": "01_method_comparison", "02": "02_cost_per_token", "03": "03_batch_size",
                     "04": "04_draft_length", "05": "05_quality_and_memory"}
REF = article.printed()


def source(stem):
    """The committed notebook notebooks/<stem>.ipynb as JSON."""
    return json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))


def parameters(stem):
    """{name: value} of the notebook's parameters cell."""
    cell = next(c for c in source(stem)["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    return {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse("".join(cell["source"])).body}


def first_cell(stem):
    """The source of the notebook's first cell."""
    return "".join(source(stem)["cells"][0]["source"])


class _Tables(HTMLParser):
    """Every <table> in an HTML fragment as a list of rows, each a list of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables, self._row, self._cell = [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, d):
        if self._cell is not None:
            self._cell.append(d)


def outputs(path):
    """(html tables, all output text) of an executed notebook; the Answer output is left out
    (its numbers must come from the other outputs)."""
    executed = json.loads(Path(path).read_text(encoding="utf-8"))
    parser, texts = _Tables(), []
    for cell in executed["cells"]:
        for out in cell.get("outputs", []) or []:
            if nb.ANSWER_MIME in out.get("data", {}):
                continue
            if out.get("output_type") == "stream":
                texts.append("".join(out["text"]))
            d = out.get("data", {})
            for mime in ("text/html", "text/markdown", "text/plain"):
                if mime in d:
                    texts.append("".join(d[mime]))
            if "text/html" in d:
                parser.feed("".join(d["text/html"]))
    return parser.tables, "\n".join(texts)
