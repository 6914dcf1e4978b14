"""Small helpers the notebooks share: versions, recorded values, widgets that degrade.

* :func:`show_versions` prints what the executed notebook ran with.
* :func:`record` stores a reproduced table or figure value in the notebook's outputs under a
  name, as a display output of MIME type :data:`RECORD_MIME`; :func:`read_records` reads them
  back from an executed ``.ipynb`` (for tests), without scrapbook.
* :func:`answer` shows the notebook's **Answer.** paragraph, built by the notebook from the
  values this run computed; the report (:mod:`specnb.runner`) reads it back from the executed
  notebook with :func:`read_answer`, so the report's answer follows ``--parameters``.
* :func:`interact` wraps a pure function in ipywidgets. Headless (``SPECNB_HEADLESS=1``, set by
  ``specnb run``) it calls the function once with the default values and shows the result as a
  normal output, so an exception fails the run instead of hiding in a widget.
* :func:`strip_outputs_hook` is the Jupyter contents-manager pre-save hook ``make lab`` installs,
  so JupyterLab saves the notebooks without outputs.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

from .controls import CONTROL_WIDTH_PX  # noqa: F401  (re-exported: the track width)
from .controls import (NOTE_CODES, align, choice, fmt_plain, label_widget, labelled, log_slider,
                       number, slider)

__all__ = ["RECORD_MIME", "ANSWER_MIME", "show_versions", "record", "reproduce", "read_records",
           "answer", "answer_markdown", "read_answer", "strip_outputs", "strip_outputs_hook", "is_headless",
           "interact", "slider", "log_slider", "choice", "number", "labelled", "align",
           "NOTE_CODES", "left_aligned", "heatmap"]

#: MIME type of a recorded value in a notebook's outputs.
RECORD_MIME = "application/vnd.specnb.record+json"
#: MIME type of the Answer output (:func:`answer`) in a notebook's outputs.
ANSWER_MIME = "application/vnd.specnb.answer+json"
#: The bold lead every Answer paragraph starts with.
ANSWER_LEAD = "**Answer.**"


def show_versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """Print and return the versions of Python, the platform and the libraries in use.

    Reports specnb, numpy, pandas, matplotlib and ipywidgets, plus torch and transformers when
    they are importable, plus any module names in ``extra``.
    """
    import importlib
    import importlib.metadata as md

    versions = {"python": platform.python_version(), "platform": platform.platform()}
    names = ["specnb", "numpy", "pandas", "matplotlib", "ipywidgets", "torch", "transformers",
             *extra]
    for name in names:
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            try:
                versions[name] = getattr(importlib.import_module(name), "__version__", "?")
            except ImportError:
                continue
    width = max(map(len, versions))
    for k, v in versions.items():
        print(f"{k:<{width}}  {v}")
    return versions


def _jsonable(value):
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        pd = None
    if pd is not None and isinstance(value, pd.DataFrame):
        if not isinstance(value.index, pd.RangeIndex):
            value = value.reset_index()
        return {"__dataframe__": json.loads(value.to_json(orient="split", index=False))}
    if pd is not None and isinstance(value, pd.Series):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    from ._json import plain

    value = plain(value, arrays=True)  # numpy scalars and arrays -> Python (the one converter)
    if isinstance(value, list) or isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "tolist"):  # pandas Index, Categorical and the like
        return _jsonable(value.tolist())
    raise TypeError(f"record() cannot store a value of type {type(value).__name__}; "
                    "use a number, string, list, dict, numpy array or pandas DataFrame")


def record(name: str, value, *, quiet: bool = False):
    """Store ``value`` under ``name`` in the executing notebook's outputs and return it.

    ``value`` may be a number, string, bool, list, dict, numpy array or pandas DataFrame.
    The output shows a one-line "recorded NAME = VALUE" (nothing with ``quiet=True``).
    Outside IPython it only returns the value.

    Raises
    ------
    TypeError
        a value that cannot be stored as JSON.
    ValueError
        an empty ``name``.
    """
    _display_records({name: value}, quiet=quiet)
    return value


def _display_records(values: dict, quiet: bool) -> None:
    for name in values:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
    payload = {"values": {k: _jsonable(v) for k, v in values.items()}}
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover
        return
    if get_ipython() is None:
        return
    scalars = {k: v for k, v in values.items() if isinstance(v, (int, float, str, bool))}
    # Tables and lists are shown by the cell itself; only scalars get a "recorded" line.
    text = "" if quiet else "; ".join(f"recorded {k} = {v}" for k, v in scalars.items())
    display({RECORD_MIME: payload, "text/plain": text}, raw=True)


def reproduce(computed: dict):
    """Record each computed article value and return the article-vs-exact comparison table.

    ``computed`` maps keys of ``data/article_values.csv`` to exact values; each is stored with
    :func:`record` under its key, and :func:`specnb.article.compare` builds the table, indexed
    by key: the value as the article prints it ("1.6"), its decimals, the exact value rounded
    the same way, the exact value, whether they agree at the printed precision, notes.
    """
    from . import article

    table = article.compare(computed).set_index("key")
    _display_records({k: float(v) for k, v in computed.items()}, quiet=True)
    return table


def read_records(path) -> dict:
    """Read every value stored with :func:`record` from an executed notebook.

    DataFrames come back as DataFrames, everything else as plain JSON values. A name recorded
    twice keeps the last value.

    Raises
    ------
    FileNotFoundError
        no notebook at ``path``.
    """
    import pandas as pd

    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    found = {}
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) or []:
            data = out.get("data", {})
            if RECORD_MIME in data:
                for name, value in data[RECORD_MIME]["values"].items():
                    if isinstance(value, dict) and "__dataframe__" in value:
                        split = value["__dataframe__"]
                        value = pd.DataFrame(split["data"], columns=split["columns"])
                    found[name] = value
    return found


def answer_markdown(text: str) -> str:
    """The Answer paragraph :func:`answer` shows: ``"**Answer.** " + text`` as one paragraph.

    Runs of whitespace, newlines included, become one space: the answer is one Markdown
    paragraph.

    Raises
    ------
    TypeError
        ``text`` is not a string.
    ValueError
        ``text`` is empty or already starts with the ``**Answer.**`` lead.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    body = " ".join(text.split())
    if not body:
        raise ValueError("text must not be empty")
    if body.startswith(ANSWER_LEAD):
        raise ValueError(f"text must not start with {ANSWER_LEAD!r}; answer() adds it")
    return f"{ANSWER_LEAD} {body}"


def answer(text: str) -> None:
    """Show the notebook's Answer, :func:`answer_markdown` of ``text``, once.

    ``text`` is the answer to the notebook's **Question.**, written by the notebook from values
    this run computed (an f-string over the recorded numbers, never a copy of a default run's
    figures), so the answer follows ``specnb run --parameters``.

    The output carries Markdown (what the notebook shows), plain text, and the answer under
    :data:`ANSWER_MIME`, which :func:`read_answer` and the report's ``index.html`` read back
    from the executed notebook. It returns None, so a cell that ends in ``nb.answer(...)``
    has no execute_result beside the display (the Answer shows once on the HTML page); the
    Markdown itself is :func:`answer_markdown`, which raises on a bad ``text`` (its Raises).
    Outside IPython it shows nothing.
    """
    md = answer_markdown(text)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover
        return None
    if get_ipython() is not None:
        display({"text/markdown": md, "text/plain": md, ANSWER_MIME: {"answer": md}}, raw=True)
    return None


def read_answer(notebook) -> str:
    """The Answer an executed notebook showed with :func:`answer` ("" if none was shown).

    ``notebook`` is a path to an ``.ipynb`` file or a notebook already read (a dict or an
    nbformat node). The last Answer output wins.

    Raises
    ------
    FileNotFoundError
        no notebook at the path.
    """
    nb = notebook if isinstance(notebook, dict) else \
        json.loads(Path(notebook).read_text(encoding="utf-8"))
    found = ""
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) or []:
            data = out.get("data", {})
            if ANSWER_MIME in data:
                found = data[ANSWER_MIME].get("answer", "")
    return found


def strip_outputs(nb: dict) -> dict:
    """Remove outputs, execution counts and saved widget state from a notebook dict, in place.

    Returns ``nb``. Cells keep their source and metadata (tags such as ``parameters``).
    """
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    nb.get("metadata", {}).pop("widgets", None)
    return nb


def strip_outputs_hook(model, path=None, contents_manager=None, **kwargs):
    """Jupyter contents-manager pre-save hook: save notebooks without outputs.

    ``make lab`` (``scripts/lab.sh``) starts JupyterLab with
    ``--ContentsManager.pre_save_hook=specnb.nb.strip_outputs_hook``, so an autosave or a save
    after *Run All* writes the notebook's sources only and the repository stays clean; the
    outputs stay in the browser session, and ``make run`` writes executed copies to
    ``build/``. Called by jupyter_server with the contents ``model`` (a dict; ``type``
    "notebook" carries the notebook as a dict under ``content``); other files pass unchanged.
    """
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        strip_outputs(model["content"])


def is_headless() -> bool:
    """True when run by ``specnb run`` / papermill (``SPECNB_HEADLESS=1``), False in Jupyter."""
    return os.environ.get("SPECNB_HEADLESS", "") not in ("", "0")


def interact(fn, **controls):
    """Show ``fn`` with ipywidgets controls; headless, show ``fn(**defaults)`` as plain output.

    ``controls`` maps each keyword of ``fn`` to a control: one of this module's
    (:func:`slider`, :func:`log_slider`, :func:`number`, :func:`choice`) or any ipywidgets
    value widget; each control's current ``value`` is the default. ``fn`` should return
    something displayable (a string, DataFrame, figure) or display it itself.

    Headless, ``fn`` is called once and its result displayed like any cell output, so an
    exception propagates and fails the run. Interactive, the controls (their labels given one
    common width, so the tracks line up) and an output area are shown; the output area
    updates as the controls move, and a ValueError or TypeError from ``fn`` (a value the
    function refuses) is shown as one line naming the controls' values, not as a traceback.

    Returns the ipywidgets ``interactive`` object (interactive) or ``fn``'s result (headless).
    """
    import functools

    from IPython.display import display

    headless = is_headless()
    labels = {k: (label_widget(w).description or k) for k, w in controls.items()}

    @functools.wraps(fn)  # keeps fn's signature, which ipywidgets matches to the controls
    def shown(**kwargs):
        try:
            result = fn(**kwargs)
        except (ValueError, TypeError) as exc:
            if headless:
                raise
            values = ", ".join(f"{labels.get(k, k)} = {fmt_plain(v)}" for k, v in kwargs.items())
            print(f"not computed ({values}): {exc}")
            return None
        if isinstance(result, str):  # text reads better printed than as a quoted repr
            print(result)
            return None
        return result

    defaults = {k: w.value for k, w in controls.items()}
    if headless:
        result = shown(**defaults)
        if result is not None:
            display(result)
        return result
    import ipywidgets as widgets

    align(controls.values())
    # auto_display: show fn's return value in the output area (interactive() does not by default)
    ui = widgets.interactive(shown, {"auto_display": True}, **controls)
    display(ui)
    return ui


def left_aligned(table, columns=None):
    """A pandas Styler of ``table`` whose text columns read left-aligned.

    pandas right-aligns every cell, which leaves prose columns (sources, reasons, PromQL)
    ragged on the left. ``columns`` (default: every column of object or string dtype) are
    left-aligned and wrap at spaces; other columns keep the default alignment. For tables of
    text: numbers in the result are formatted by the Styler (6 decimals by default), so
    round or format them as strings first.

    Raises
    ------
    KeyError
        a name in ``columns`` that is not a column of ``table``.
    """
    import pandas as pd

    if columns is None:
        columns = [c for c in table.columns
                   if pd.api.types.is_object_dtype(table[c]) or pd.api.types.is_string_dtype(table[c])]
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise KeyError(f"columns {missing} are not in the table; its columns are "
                       f"{list(table.columns)}")
    return table.style.set_properties(subset=list(columns),
                                      **{"text-align": "left", "white-space": "pre-wrap"})


def heatmap(table, ax=None, fmt: str = "{:.2f}", title: str = "", colorbar_label: str = "",
            cmap: str = "viridis"):
    """Draw a DataFrame as a heatmap with every value written in its cell; return the axes.

    Rows and columns are categories (labels from the index and columns, in order), so nothing
    is interpolated between them; the text colour flips on dark cells so each value stays
    readable without hovering. ``fmt`` formats each value.

    Raises
    ------
    ValueError
        an empty table.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    values = np.asarray(table.to_numpy(), dtype=float)
    if values.size == 0:
        raise ValueError("table must have at least one row and one column, got shape "
                         f"{values.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(max(5.0, 0.8 * values.shape[1] + 2.5),
                                      0.45 * values.shape[0] + 1.6))
    im = ax.imshow(values, cmap=cmap, aspect="auto")
    ax.set_xticks(range(values.shape[1]), [str(c) for c in table.columns])
    ax.set_yticks(range(values.shape[0]), [str(i) for i in table.index])
    if table.columns.name:
        ax.set_xlabel(str(table.columns.name))
    if table.index.name:
        ax.set_ylabel(str(table.index.name))
    lo, hi = np.nanmin(values), np.nanmax(values)
    mid = lo + 0.5 * (hi - lo)
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=8,
                color="black" if v >= mid else "white")
    if title:
        ax.set_title(title)
    ax.figure.colorbar(im, ax=ax, label=colorbar_label)
    return ax
