"""Published numbers with provenance, as tidy CSVs under the project's ``data/`` folder.

Every table has the provenance columns ``source``, ``arxiv_version``, ``table`` and ``note``.
Inconsistencies inside a paper are recorded in ``note``, never fixed. See ``data/README.md``
for what each file holds.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_DIR", "names", "load", "path"]

#: The folder holding the CSVs: ``$SPECNB_DATA`` if set, else ``data/`` beside the package.
DATA_DIR = Path(os.environ.get("SPECNB_DATA", Path(__file__).resolve().parent.parent / "data"))

PROVENANCE_COLUMNS = ("source", "arxiv_version", "table", "note")


def names() -> list[str]:
    """Names of every published table, sorted (the CSV file names without ``.csv``)."""
    if not DATA_DIR.is_dir():
        raise FileNotFoundError(
            f"specnb's data folder {DATA_DIR} does not exist; install specnb from a checkout "
            "with `pip install -e .` or point SPECNB_DATA at the data/ folder"
        )
    return sorted(p.stem for p in DATA_DIR.glob("*.csv"))


def path(name: str) -> Path:
    """The CSV file of table ``name``.

    Raises
    ------
    ValueError
        ``name`` is not one of :func:`names`; the message lists the valid names.
    """
    valid = names()
    if name not in valid:
        raise ValueError(f"name must be one of {', '.join(valid)}; got {name!r}")
    return DATA_DIR / f"{name}.csv"


def load(name: str):
    """Load published table ``name`` as a pandas DataFrame (one row per observation).

    Numbers are parsed as floats/ints; provenance columns are strings (missing = ""). Empty
    cells are empty strings, never NaN.

    Raises
    ------
    ValueError
        unknown ``name`` (the message lists the valid ones).
    """
    import pandas as pd

    return pd.read_csv(path(name), dtype={c: str for c in PROVENANCE_COLUMNS},
                       keep_default_na=False)
