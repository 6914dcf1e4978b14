"""The published tables as the tests read them: each CSV's rows as plain strings through the
standard library's csv, independent of specnb.data's pandas parsing (so a test compares
specnb's numbers against the file, not against itself)."""

import csv

from specnb import data


def csv_rows(name: str) -> list[dict[str, str]]:
    """Rows of data/<name>.csv as {column: text}."""
    with open(data.path(name), newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))
