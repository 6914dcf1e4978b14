"""specnb.nb unit tests (records, headless interact, controls that never clip, labels with room,
exact number boxes, the heatmap), moved here from test_helpers_modules.py and
test_fidelity_01_05.py.

Pending: fold into tests/test_nb.py, which branch ``faults`` adds (this branch leaves that file
to it); tests/test_layout.py lists this file until then."""

import numpy as np
import pytest

from specnb import nb


def test_record_roundtrip_and_types(tmp_path, monkeypatch):
    import json

    import pandas as pd

    df = pd.DataFrame({"a": [1, 2]}, index=["x", "y"])
    payload = {"values": {"n": nb._jsonable(np.float64(1.5)), "df": nb._jsonable(df), "l": nb._jsonable((1, 2))}}
    cell = {"cell_type": "code", "outputs": [{"output_type": "display_data", "data": {nb.RECORD_MIME: payload}}]}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps({"cells": [cell]}))
    got = nb.read_records(path)
    assert got["n"] == 1.5 and got["l"] == [1, 2]
    assert got["df"].to_dict("list") == {"index": ["x", "y"], "a": [1, 2]}
    with pytest.raises(TypeError, match="cannot store"):
        nb._jsonable(object())
    with pytest.raises(ValueError, match="name"):
        nb.record("", 1)


def test_interact_headless_calls_the_function(monkeypatch):
    import ipywidgets as widgets

    monkeypatch.setenv("SPECNB_HEADLESS", "1")
    seen = {}

    def fn(x):
        seen["x"] = x
        return None

    nb.interact(fn, x=widgets.IntSlider(value=3))
    assert seen == {"x": 3}

    def broken(x):
        raise RuntimeError("must surface")

    with pytest.raises(RuntimeError, match="must surface"):
        nb.interact(broken, x=widgets.IntSlider(value=3))


def test_controls_never_clip():
    s = nb.slider(1.7, 0.0, 1.0, 0.01, "alpha")
    assert s.value == 1.7 and s.track.max == 1.7  # the track widened to the value
    g = nb.slider(5, 1, 16, 1, "gamma")
    assert type(g.track).__name__ == "IntSlider" and g.value == 5 and isinstance(g.value, int)
    assert nb.slider(131072, 256, 32768, 256, "seq_len").value == 131072
    assert nb.log_slider(1e12, 7, 10, "params").value == 1e12
    assert nb.choice(128, [2, 64], "batch").options == (2, 64, 128)
    with pytest.raises(TypeError, match="alpha"):
        nb.slider(True, 0, 1, 1, "alpha")
    with pytest.raises(ValueError, match="params"):
        nb.log_slider(0.0, 7, 10, "params")


def test_controls_get_room_for_their_whole_label():
    long = "tokens/s with speculation"
    for w in (nb.slider(0.5, 0.0, 1.0, 0.01, long), nb.slider(3, 1, 10, 1, long),
              nb.log_slider(1e9, 7, 11, long), nb.choice("a", ["a", "b"], long), nb.number(3e9, long)):
        t = getattr(w, "label_widget", w)  # the typed controls carry the label on their track/box
        assert t.style.description_width == "initial", type(w).__name__
        assert int(t.layout.width.removesuffix("px")) >= nb.CONTROL_WIDTH_PX + 8 * len(long)
        assert t.description == long and t.tooltip == long


def test_number_box_keeps_exact_values():
    box = nb.number(3e9, "draft parameters")
    assert box.value == 3e9 and box.text.value == "3000000000"
    box.text.value = "7e9"  # no range, no snapping: 7B and 8B drafts are reachable
    assert box.value == 7e9 and box.note_code == ""
    layers = nb.number(16, "layers")
    assert layers.value == 16 and layers.integer
    with pytest.raises(TypeError, match="draft"):
        nb.number("big", "draft")


def test_heatmap_writes_every_value_and_refuses_an_empty_table():
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    df = pd.DataFrame([[1.0, 2.5], [3.25, 4.0]], index=["a", "b"], columns=["x", "y"])
    ax = nb.heatmap(df, fmt="{:.2f}")
    assert sorted(t.get_text() for t in ax.texts) == ["1.00", "2.50", "3.25", "4.00"]
    with pytest.raises(ValueError, match="table"):
        nb.heatmap(pd.DataFrame())
