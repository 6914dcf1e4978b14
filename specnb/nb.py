"""Small helpers the notebooks share: versions, recorded values, widgets that degrade.

* :func:`show_versions` prints what the executed notebook ran with.
* :func:`record` stores a reproduced table or figure value in the notebook's outputs under a
  name, as a display output of MIME type :data:`RECORD_MIME`; :func:`read_records` reads them
  back from an executed ``.ipynb`` (for tests), without scrapbook.
* :func:`interact` wraps a pure function in ipywidgets. Headless (``SPECNB_HEADLESS=1``, set by
  ``specnb run``) it calls the function once with the default values and shows the result as a
  normal output, so an exception fails the run instead of hiding in a widget.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

__all__ = ["RECORD_MIME", "show_versions", "record", "reproduce", "read_records", "is_headless",
           "interact", "slider", "log_slider", "choice", "number", "labelled", "heatmap"]

#: MIME type of a recorded value in a notebook's outputs.
RECORD_MIME = "application/vnd.specnb.record+json"


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


def is_headless() -> bool:
    """True when run by ``specnb run`` / papermill (``SPECNB_HEADLESS=1``), False in Jupyter."""
    return os.environ.get("SPECNB_HEADLESS", "") not in ("", "0")


def interact(fn, **controls):
    """Show ``fn`` with ipywidgets controls; headless, show ``fn(**defaults)`` as plain output.

    ``controls`` maps each keyword of ``fn`` to an ipywidgets control (``FloatSlider``,
    ``IntSlider``, ``Dropdown``...); each control's current ``value`` is the default. ``fn``
    should return something displayable (a string, DataFrame, figure) or display it itself.

    Headless, ``fn`` is called once and its result displayed like any cell output, so an
    exception propagates and fails the run. Interactive, the controls and an output area are
    shown; the output area updates as the controls move.

    Returns the ipywidgets ``interactive`` object (interactive) or ``fn``'s result (headless).
    """
    import functools

    from IPython.display import display

    @functools.wraps(fn)  # keeps fn's signature, which ipywidgets matches to the controls
    def shown(**kwargs):
        result = fn(**kwargs)
        if isinstance(result, str):  # text reads better printed than as a quoted repr
            print(result)
            return None
        return result

    defaults = {k: w.value for k, w in controls.items()}
    if is_headless():
        result = shown(**defaults)
        if result is not None:
            display(result)
        return result
    import ipywidgets as widgets

    # auto_display: show fn's return value in the output area (interactive() does not by default)
    ui = widgets.interactive(shown, {"auto_display": True}, **controls)
    display(ui)
    return ui


# --- controls that never clip -------------------------------------------------------------------
# ipywidgets clips a slider's value into [min, max] and refuses a Dropdown value outside its
# options, silently in the first case. A notebook parameter outside a control's range would
# then be shown (and computed) as a different value. These builders widen the range, or add the
# option, so the parameter cell's value is always the one used; invalid values then reach the
# specnb function, which raises a clear error.

#: Width of a control's track (slider, box, dropdown) beside its label, in CSS pixels.
CONTROL_WIDTH_PX = 300
#: Approximate CSS pixels per label character (JupyterLab's 13 px UI font), for the layout.
_PX_PER_CHAR = 8


def labelled(widget, description: str | None = None):
    """Give ``widget`` room for its whole label and return it.

    ipywidgets truncates a description to 80 px by default ("temperat...", "KV budge...").
    This sets ``style.description_width = "initial"`` (the label takes the width it needs)
    and widens the widget's layout by the label's length, so the control itself keeps
    :data:`CONTROL_WIDTH_PX`. The full text is also the widget's hover ``tooltip``.
    ``description`` (optional) replaces the widget's own.
    """
    import ipywidgets as widgets

    if description is not None:
        widget.description = description
    text = widget.description or ""
    widget.style = {"description_width": "initial"}
    width = CONTROL_WIDTH_PX + _PX_PER_CHAR * len(text) + 16
    widget.layout = widgets.Layout(width=f"{width}px", max_width="100%")
    if text:
        widget.tooltip = text
    return widget


def slider(value, lo, hi, step=None, description: str = ""):
    """An IntSlider (int value, bounds and step) or FloatSlider whose range includes ``value``.

    Raises
    ------
    TypeError
        ``value`` is not a real number (bool included).
    ValueError
        ``value`` is NaN or infinite.
    """
    import ipywidgets as widgets

    from . import _check

    name = description or "value"
    v = float(_check.real(name, value))
    is_int = all(isinstance(x, int) and not isinstance(x, bool) for x in (value, lo, hi)) and \
        (step is None or isinstance(step, int))
    lo, hi = min(lo, value), max(hi, value)
    if is_int:
        return labelled(widgets.IntSlider(value=int(v), min=lo, max=hi, step=step or 1,
                                          description=description))
    step = step if step is not None else (hi - lo) / 100 or 0.01
    return labelled(widgets.FloatSlider(value=v, min=lo, max=hi, step=step, description=description))


def log_slider(value, lo_exp: float, hi_exp: float, description: str = ""):
    """A FloatLogSlider (base 10) whose exponent range includes ``value``.

    Raises
    ------
    ValueError
        ``value`` <= 0, NaN or infinite.
    """
    import math

    import ipywidgets as widgets

    from . import _check

    v = float(_check.real(description or "value", value, lo=0.0, lo_open=True))
    e = math.log10(v)
    return labelled(widgets.FloatLogSlider(value=v, base=10, min=min(lo_exp, math.floor(e)),
                                           max=max(hi_exp, math.ceil(e)), description=description))


def choice(value, options, description: str = ""):
    """A Dropdown whose options include ``value`` (added, and numbers kept sorted, if missing)."""
    import ipywidgets as widgets

    opts = list(options)
    if value not in opts:
        opts.append(value)
        if all(isinstance(o, (int, float)) and not isinstance(o, bool) for o in opts):
            opts.sort()
    return labelled(widgets.Dropdown(options=opts, value=value, description=description))


def number(value, description: str = "", step=None):
    """A number box (FloatText, or IntText for an int ``value``) that takes any exact value.

    Unlike a slider there is no range and no snapping to steps: typing 3e9 gives 3e9. Nothing
    is clipped (ipywidgets' Bounded* boxes would clip silently), so an invalid entry reaches
    the specnb function, which raises a clear error naming the parameter.

    Raises
    ------
    TypeError
        ``value`` is not a real number (bool included).
    ValueError
        ``value`` is NaN or infinite.
    """
    import ipywidgets as widgets

    from . import _check

    v = float(_check.real(description or "value", value))
    if isinstance(value, int) and not isinstance(value, bool):
        return labelled(widgets.IntText(value=int(v), step=step or 1, description=description))
    return labelled(widgets.FloatText(value=v, step=step, description=description))


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
