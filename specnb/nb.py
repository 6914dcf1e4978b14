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
import sys
from pathlib import Path

__all__ = ["RECORD_MIME", "ANSWER_MIME", "show_versions", "record", "reproduce", "read_records",
           "answer", "read_answer", "strip_outputs", "strip_outputs_hook", "is_headless",
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


def answer(text: str) -> str:
    """Show the notebook's Answer and return it as Markdown: ``"**Answer.** " + text``.

    ``text`` is the answer to the notebook's **Question.**, written by the notebook from values
    this run computed (an f-string over the recorded numbers, never a copy of a default run's
    figures), so the answer follows ``specnb run --parameters``. Runs of whitespace, newlines
    included, become one space: the answer is one Markdown paragraph.

    The output carries Markdown (what the notebook shows), plain text, and the answer under
    :data:`ANSWER_MIME`, which :func:`read_answer` and the report's ``index.html`` read back
    from the executed notebook. Outside IPython it only returns the Markdown.

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
    md = f"{ANSWER_LEAD} {body}"
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover
        return md
    if get_ipython() is not None:
        display({"text/markdown": md, "text/plain": md, ANSWER_MIME: {"answer": md}}, raw=True)
    return md


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
    labels = {k: (_label_widget(w).description or k) for k, w in controls.items()}

    @functools.wraps(fn)  # keeps fn's signature, which ipywidgets matches to the controls
    def shown(**kwargs):
        try:
            result = fn(**kwargs)
        except (ValueError, TypeError) as exc:
            if headless:
                raise
            values = ", ".join(f"{labels.get(k, k)} = {_fmt_plain(v)}" for k, v in kwargs.items())
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


def _fmt_plain(v) -> str:
    return f"{v:.12g}" if isinstance(v, float) else str(v)


# --- controls that neither clip nor snap silently ------------------------------------------------
# ipywidgets clips a slider's value into [min, max] and snaps it to the step, silently, both for
# the parameter cell's value and for a value typed into the slider's readout; IntText turns 2.5
# into 2; a Dropdown refuses a value outside its options. The controls below keep the exact
# value: a slider's range is widened to include the parameter cell's value, and a value is typed
# into a text box beside the track (the slider's own readout is off), where it is used exactly
# as typed or refused, with a note either way (``note_code``, one of :data:`NOTE_CODES`).

#: Width of a control's track (slider, box, dropdown) beside its label, in CSS pixels.
CONTROL_WIDTH_PX = 300
#: Approximate CSS pixels per label character (JupyterLab's 13 px UI font), for the layout.
_PX_PER_CHAR = 8

#: A typed value's note, by code: "" none; the rest are shown beside the control.
NOTE_CODES = {
    "": "no note",
    "beyond-track": "the typed value lies outside the slider's track; used as typed",
    "between-steps": "the typed value lies between the slider's steps; used as typed",
    "not-a-number": "the text is not a finite number; refused, the value is unchanged",
    "not-whole": "the control takes whole numbers; refused, the value is unchanged",
    "out-of-range": "the value is outside the control's valid range; refused, unchanged",
}


def _label_widget(widget):
    """The part of a control that carries its label (the control itself for plain widgets)."""
    return getattr(widget, "label_widget", widget)


def _label_px(text: str) -> int:
    return _PX_PER_CHAR * len(text or "") + 16


def labelled(widget, description: str | None = None):
    """Give ``widget`` room for its whole label and return it.

    ipywidgets truncates a description to 80 px by default ("temperat...", "KV budge...").
    This sets ``style.description_width = "initial"`` (the label takes the width it needs)
    and widens the widget's layout by the label's length, so the control itself keeps
    :data:`CONTROL_WIDTH_PX`. The full text is also the widget's hover ``tooltip``.
    ``description`` (optional) replaces the widget's own. For this module's typed controls
    the label sits on their track or box (``label_widget``).
    """
    import ipywidgets as widgets

    target = _label_widget(widget)
    if description is not None:
        target.description = description
    text = target.description or ""
    target.style = {"description_width": "initial"}
    width = CONTROL_WIDTH_PX + _label_px(text)
    target.layout = widgets.Layout(width=f"{width}px", max_width="100%")
    if text:
        target.tooltip = text
    return widget


def align(controls) -> None:
    """Give every labelled control in ``controls`` the same label width (the longest label's),
    so their tracks and boxes start at one x position. Checkboxes (label on the right) and
    controls without a label are left as they are."""
    import ipywidgets as widgets

    targets = [_label_widget(w) for w in controls]
    targets = [t for t in targets if getattr(t, "description", "")
               and not isinstance(t, (widgets.Checkbox, widgets.ToggleButton, widgets.Button))]
    if not targets:
        return
    px = max(_label_px(t.description) for t in targets)
    for t in targets:
        t.style.description_width = f"{px}px"
        t.layout.width = f"{CONTROL_WIDTH_PX + px}px"


def _decimals(step) -> int | None:
    """Decimals of a step (0.05 -> 2, 1 -> 0); None for no step."""
    if step is None:
        return None
    text = f"{float(step):.8f}".rstrip("0")
    return min(len(text.split(".")[1]), 8)


_TYPED_CLASS = None


def _typed_class():
    """The TypedNumber widget class (built on first use, so importing specnb.nb needs no
    ipywidgets)."""
    global _TYPED_CLASS
    if _TYPED_CLASS is not None:
        return _TYPED_CLASS
    import html as _html
    import math

    import ipywidgets as widgets
    import traitlets

    class TypedNumber(widgets.HBox, widgets.ValueWidget):
        """A number control: an optional slider track, a text box to type an exact value, and
        a note. ``value`` is the number in use (kernel side); ``note_code`` and ``note`` say
        what happened to the last typed text (see :data:`NOTE_CODES`)."""

        value = traitlets.Any()

        def __init__(self, value, *, description, integer, valid, decimals, track=None,
                     log=False):
            self.integer, self.valid, self.decimals = integer, valid, decimals
            self.track, self.is_log = track, log
            self.label_text = description or "value"
            self.note_code, self.note = "", ""
            self.text = widgets.Text(continuous_update=False,
                                     layout=widgets.Layout(width="8em"))
            self.message = widgets.HTML("")
            if track is not None:
                track.description = description
                self.label_widget = track
                children = [track, self.text, self.message]
            else:
                self.text.description = description
                self.label_widget = self.text
                children = [self.text, self.message]
            super().__init__(children=children)
            self.value = value
            self.text.value = self.format(value)
            self.text.observe(self._typed, names="value")
            if track is not None:
                track.observe(self._moved, names="value")

        # -- formatting and the track's position for a value
        def format(self, v) -> str:
            if self.integer:
                return str(int(v))
            d = self.decimals
            if d is not None and abs(v - round(v, d)) <= 1e-9 * max(1.0, abs(v)):
                return f"{v:.{d}f}"
            return f"{v:.12g}"

        def position(self, v):
            """Where the track shows ``v``: clipped to its ends, snapped to its steps."""
            t = self.track
            if self.is_log:
                e = min(max(math.log10(v), t.min), t.max) if v > 0 else t.min
                e = t.min + round((e - t.min) / t.step) * t.step
                return 10.0 ** e
            p = min(max(v, t.min), t.max)
            p = t.min + round((p - t.min) / t.step) * t.step
            p = min(max(p, t.min), t.max)
            return int(round(p)) if self.integer else round(p, self.decimals or 12)

        def _same(self, a, b) -> bool:
            return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)

        def _set_note(self, code: str, text: str = "") -> None:
            self.note_code, self.note = code, text
            self.message.value = (f"<span style='color:#a04000'>{_html.escape(text)}</span>"
                                  if text else "")

        # -- events
        def _moved(self, change):
            new = change["new"]
            new = int(new) if self.integer else (new if self.is_log else
                                                 round(new, self.decimals or 12))
            if self._same(new, self.position(self.value)):
                return  # the track echoing (or snapping) the value in use: keep the value
            self.value = new
            self._set_note("")
            self.text.value = self.format(new)

        def _typed(self, change):
            raw = change["new"].strip()
            if raw == self.format(self.value):
                return
            keep = self.format(self.value)
            try:
                v = float(raw.replace(",", ""))
            except ValueError:
                v = math.nan
            if not math.isfinite(v):
                self._refuse("not-a-number", f"{self.label_text}: {raw!r} is not a finite number; "
                             f"kept {keep}")
                return
            if self.integer and not v.is_integer():
                self._refuse("not-whole", f"{self.label_text} takes whole numbers: {raw} refused; "
                             f"kept {keep}")
                return
            lo, hi = self.valid
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                allowed = (f"[{_fmt_plain(lo) if lo is not None else '-inf'}, "
                           f"{_fmt_plain(hi) if hi is not None else 'inf'}]")
                self._refuse("out-of-range", f"{self.label_text} must be in {allowed}: {raw} "
                             f"refused; kept {keep}")
                return
            v = int(v) if self.integer else v
            code, text = "", ""
            if self.track is not None:
                t = self.track
                inside = (t.min <= (math.log10(v) if self.is_log and v > 0 else v) <= t.max) \
                    if not (self.is_log and v <= 0) else False
                if not inside:
                    ends = ((10.0 ** t.min, 10.0 ** t.max) if self.is_log else (t.min, t.max))
                    code, text = "beyond-track", (
                        f"{self.format(v)} is beyond the slider's {self.format(ends[0])}-"
                        f"{self.format(ends[1])}: used as typed")
                elif not self._same(v, self.position(v)):
                    code, text = "between-steps", (
                        f"{self.format(v)} lies between the slider's steps: used as typed")
            self.value = v  # before moving the track, so its echo is recognised
            self._set_note(code, text)
            self.text.value = self.format(v)
            if self.track is not None:
                self.track.value = self.position(v) if not self.is_log else \
                    min(max(v, 10.0 ** self.track.min), 10.0 ** self.track.max)

        def _refuse(self, code, text):
            self._set_note(code, text)
            self.text.value = self.format(self.value)

    _TYPED_CLASS = TypedNumber
    return TypedNumber


def _valid(name, valid):
    if valid is None:
        return (None, None)
    if not (isinstance(valid, (tuple, list)) and len(valid) == 2):
        raise ValueError(f"{name or 'value'}: valid must be a pair (lo, hi) with None for no "
                         f"bound, got {valid!r}")
    return tuple(valid)


def slider(value, lo, hi, step=None, description: str = "", valid=None):
    """A slider whose track includes ``value``, with a box to type an exact value.

    An IntSlider track (int ``value``, bounds and step) or a FloatSlider track; its range is
    widened to include ``value``. ``value`` is used exactly, and so is a value typed into the
    box beside the track: one beyond the track or between its steps is used as typed (with a
    note, ``note_code`` "beyond-track" or "between-steps"), text that is not a number, a
    fraction for an integer slider, or a value outside ``valid`` is refused with a note and
    the value stays. Float values show with the step's decimals. Returns the control (its
    ``value`` is the number in use).

    Parameters
    ----------
    valid : (lo, hi) or None
        Inclusive bounds a typed value must respect (None for no bound); default no bounds,
        so the specnb function behind the widget decides and raises its own clear error.

    Raises
    ------
    TypeError
        ``value`` is not a real number (bool included).
    ValueError
        ``value`` is NaN or infinite; ``valid`` is not a pair.
    """
    import ipywidgets as widgets

    from . import _check

    name = description or "value"
    v = float(_check.real(name, value))
    is_int = all(isinstance(x, int) and not isinstance(x, bool) for x in (value, lo, hi)) and \
        (step is None or isinstance(step, int))
    lo, hi = min(lo, value), max(hi, value)
    if is_int:
        track = widgets.IntSlider(value=int(v), min=lo, max=hi, step=step or 1, readout=False)
        decimals = 0
    else:
        step = step if step is not None else (hi - lo) / 100 or 0.01
        decimals = _decimals(step)
        track = widgets.FloatSlider(value=v, min=lo, max=hi, step=step, readout=False)
    ctl = _typed_class()(int(v) if is_int else v, description=description, integer=is_int,
                         valid=_valid(name, valid), decimals=decimals, track=track)
    return labelled(ctl)


def log_slider(value, lo_exp: float, hi_exp: float, description: str = "", valid=None):
    """A log-scale slider (base 10) whose exponent range includes ``value``, with a box to type
    an exact value (used as typed, or refused with a note, as in :func:`slider`).

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
    track = widgets.FloatLogSlider(value=v, base=10, min=min(lo_exp, math.floor(e)),
                                   max=max(hi_exp, math.ceil(e)), readout=False)
    lo_valid, hi_valid = _valid(description, valid)
    ctl = _typed_class()(v, description=description, integer=False,
                         valid=(0.0 if lo_valid is None else lo_valid, hi_valid), decimals=None,
                         track=track, log=True)
    return labelled(ctl)


def choice(value, options, description: str = ""):
    """A Dropdown whose options include ``value`` (added, and numbers kept sorted, if missing)."""
    import ipywidgets as widgets

    opts = list(options)
    if value not in opts:
        opts.append(value)
        if all(isinstance(o, (int, float)) and not isinstance(o, bool) for o in opts):
            opts.sort()
    return labelled(widgets.Dropdown(options=opts, value=value, description=description))


def number(value, description: str = "", step=None, valid=None):
    """A number box that takes any exact value (an int ``value`` takes whole numbers only).

    There is no range and no snapping: typing 3e9 gives 3e9 (and 1e9 in a whole-number box
    gives 1000000000). Text that is not a number, a fraction in a whole-number box, or a value
    outside ``valid`` (inclusive ``(lo, hi)``, None for no bound) is refused with a note
    naming the label (``note_code`` as in :func:`slider`), and the value stays. ``step`` sets
    the decimals shown for floats.

    Raises
    ------
    TypeError
        ``value`` is not a real number (bool included).
    ValueError
        ``value`` is NaN or infinite; ``valid`` is not a pair.
    """
    from . import _check

    name = description or "value"
    v = float(_check.real(name, value))
    is_int = isinstance(value, int) and not isinstance(value, bool)
    ctl = _typed_class()(int(v) if is_int else v, description=description, integer=is_int,
                         valid=_valid(name, valid), decimals=0 if is_int else _decimals(step))
    return labelled(ctl)


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
