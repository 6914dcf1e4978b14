"""The notebooks' controls that neither clip nor snap a value silently (used through
:mod:`specnb.nb`, which re-exports :func:`slider`, :func:`log_slider`, :func:`choice`,
:func:`number`, :func:`labelled`, :func:`align` and :data:`NOTE_CODES`)."""

from __future__ import annotations

__all__ = ["slider", "log_slider", "choice", "number", "labelled", "align", "NOTE_CODES",
           "label_widget", "fmt_plain", "CONTROL_WIDTH_PX"]


def fmt_plain(v) -> str:
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


def label_widget(widget):
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

    target = label_widget(widget)
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

    targets = [label_widget(w) for w in controls]
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
                allowed = (f"[{fmt_plain(lo) if lo is not None else '-inf'}, "
                           f"{fmt_plain(hi) if hi is not None else 'inf'}]")
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
