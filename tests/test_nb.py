"""specnb.nb: the Answer output, the lab's pre-save hook, controls that neither clip nor snap
silently (typed values are used as typed or refused, with a note code), records, headless
interact, labels with room, exact number boxes and the heatmap."""

import html
import json
import subprocess
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from specnb import nb

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------------ answer

def test_answer_markdown_is_one_markdown_paragraph():
    md = nb.answer_markdown(f"At alpha {0.7} the speedup is\n   {2.5:.2f}x.")
    assert md == "**Answer.** At alpha 0.7 the speedup is 2.50x."
    assert nb.answer("outside IPython") is None  # shows nothing, returns nothing


@pytest.mark.parametrize("fn", [nb.answer, nb.answer_markdown])
@pytest.mark.parametrize("bad, exc", [("", ValueError), ("  \n ", ValueError),
                                      ("**Answer.** twice", ValueError), (3, TypeError)])
def test_answer_refuses_empty_or_doubled_text(fn, bad, exc):
    with pytest.raises(exc):
        fn(bad)


def test_a_cell_ending_in_answer_shows_it_once():
    """Trial 5 K1: the Answer cell ends in ``nb.answer(...)`` with no ``;``. In an IPython shell
    (what the notebook kernel runs) the cell shows one display output and has no
    execute_result (the returned value used to become a second, quoted copy)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shown = []
    publish = shell.display_pub.publish
    shell.display_pub.publish = lambda data, *a, **k: shown.append(data)
    results = []
    shell.displayhook.write_format_data = lambda data, *a, **k: results.append(data)
    try:
        run = shell.run_cell("from specnb import nb\nx = 2\nnb.answer(f'Pays up to batch {24 * x}.')",
                             store_history=True)
    finally:
        shell.display_pub.publish = publish
        del shell.displayhook.write_format_data
        InteractiveShell.clear_instance()
    assert run.success and run.result is None and results == []
    assert len(shown) == 1
    assert shown[0]["text/markdown"] == "**Answer.** Pays up to batch 48."
    assert shown[0][nb.ANSWER_MIME] == {"answer": "**Answer.** Pays up to batch 48."}


def test_read_answer_takes_the_last_answer_output(tmp_path):
    cell = new_code_cell("nb.answer(...)")
    for text in ("**Answer.** first", "**Answer.** second"):
        cell.outputs.append(new_output("display_data",
                                       data={nb.ANSWER_MIME: {"answer": text}, "text/plain": text}))
    notebook = new_notebook(cells=[new_markdown_cell("# t"), cell])
    path = tmp_path / "x.ipynb"
    nbformat.write(notebook, path)
    assert nb.read_answer(path) == "**Answer.** second"
    assert nb.read_answer(new_notebook(cells=[new_code_cell("1")])) == ""


# ------------------------------------------------------------------------ make lab: pre-save hook

def _with_outputs():
    cell = new_code_cell("print(1)", metadata={"tags": ["parameters"]}, execution_count=3)
    cell.outputs = [new_output("stream", name="stdout", text="1\n")]
    notebook = new_notebook(cells=[new_markdown_cell("# t"), cell])
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return notebook


def test_pre_save_hook_strips_outputs_through_a_real_contents_manager(tmp_path):
    """What JupyterLab's save and autosave go through: the server's default contents manager
    (AsyncLargeFileManager), configured by class name as scripts/lab.sh configures it."""
    import asyncio

    pytest.importorskip("jupyter_server", reason="jupyter_server comes with the lab extra")
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
    from traitlets.config import Config

    config = Config()
    config.ContentsManager.pre_save_hook = "specnb.nb.strip_outputs_hook"
    cm = AsyncLargeFileManager(root_dir=str(tmp_path), config=config)
    model = {"type": "notebook", "format": "json",
             "content": json.loads(nbformat.writes(_with_outputs()))}
    asyncio.run(cm.save(model, "x.ipynb"))
    saved = nbformat.read(tmp_path / "x.ipynb", as_version=4)
    code = saved.cells[1]
    assert code.outputs == [] and code.execution_count is None
    assert code.source == "print(1)" and code.metadata["tags"] == ["parameters"]
    assert "widgets" not in saved.metadata
    # other files pass unchanged
    asyncio.run(cm.save({"type": "file", "format": "text", "content": "a,b\n"}, "x.csv"))
    assert (tmp_path / "x.csv").read_text() == "a,b\n"


def test_lab_script_installs_the_hook_and_turns_off_the_news_prompt(tmp_path):
    """scripts/lab.sh hands JupyterLab the pre-save hook, the settings overrides (fetchNews
    false) and news_url None; checked by running it with a stand-in interpreter."""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    fake.chmod(0o755)
    out = subprocess.run(["sh", str(ROOT / "scripts" / "lab.sh"), "--no-browser"],
                         env={"PATH": "/usr/bin:/bin", "SPECNB_PYTHON": str(fake)},
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert "--ContentsManager.pre_save_hook=specnb.nb.strip_outputs_hook" in out
    assert "--LabApp.news_url=None" in out and out[-1] == "--no-browser"
    settings = next(a.split("=", 1)[1] for a in out if a.startswith("--LabApp.app_settings_dir="))
    overrides = json.loads((Path(settings) / "overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    # the hook named there is importable and strips
    from traitlets.utils.importstring import import_item
    hook = import_item("specnb.nb.strip_outputs_hook")
    model = {"type": "notebook", "content": json.loads(nbformat.writes(_with_outputs()))}
    hook(model=model, path="x.ipynb", contents_manager=None)
    assert not model["content"]["cells"][1]["outputs"]


# ------------------------------------------------------------------------------ controls

def _type(control, text):
    control.text.value = text
    return control


def test_slider_keeps_the_parameter_value_and_rounds_float_step_noise():
    a = nb.slider(0.333, 0.05, 0.95, 0.05, description="alpha")
    assert a.value == 0.333 and a.text.value == "0.333"
    a.track.value = 0.35  # the browser snapping the handle to its step: not a move
    assert a.value == 0.333
    b = nb.slider(0.6, 0.05, 0.95, 0.05, description="alpha")
    b.track.value = 0.6000000000000001  # 0.05 + 11 * 0.05 in floating point
    assert b.value == 0.6 and b.text.value == "0.60"
    b.track.value = 0.3  # a real move of the handle
    assert b.value == 0.3 and b.text.value == "0.30" and b.note_code == ""


@pytest.mark.parametrize("typed, value, code", [
    ("1", 1.0, "beyond-track"), ("0", 0.0, "beyond-track"), ("0.333", 0.333, "between-steps"),
    ("0.35", 0.35, ""), ("5", 0.6, "out-of-range"), ("abc", 0.6, "not-a-number"),
    ("nan", 0.6, "not-a-number")])
def test_typed_float_is_used_as_typed_or_refused_with_a_note(typed, value, code):
    a = _type(nb.slider(0.6, 0.05, 0.95, 0.05, description="alpha", valid=(0, 1)), typed)
    assert a.value == value and a.note_code == code
    assert code in nb.NOTE_CODES
    if code:
        assert "alpha" in a.note or a.note.startswith(a.text.value)
        assert html.escape(a.note) in a.message.value  # shown beside the control
    assert a.text.value == a.format(value)  # the box shows the value in use


@pytest.mark.parametrize("typed, value, code", [
    ("100", 100, "beyond-track"), ("2.5", 3, "not-whole"), ("-3", 3, "out-of-range"),
    ("1e1", 10, "beyond-track"), ("4", 4, "")])
def test_typed_integer_is_never_truncated(typed, value, code):
    g = _type(nb.slider(3, 1, 8, 1, description="gamma", valid=(1, None)), typed)
    assert g.value == value and isinstance(g.value, int) and g.note_code == code
    assert g.track.value == min(max(value, 1), 8)


def test_number_box_takes_exact_values_and_refuses_invalid_ones_by_name():
    n = nb.number(1.5e9, "draft parameters", valid=(0, None))
    assert _type(n, "3e9").value == 3e9 and n.note_code == ""
    _type(n, "-5")
    assert n.value == 3e9 and n.note_code == "out-of-range" and "draft parameters" in n.note
    peak = nb.number(8, "peak batch")
    assert _type(peak, "1e9").value == 1_000_000_000 and isinstance(peak.value, int)


def test_log_slider_typed_value_beyond_its_track():
    lr = _type(nb.log_slider(1e-3, -5, 0, "rate"), "10")
    assert lr.value == 10.0 and lr.note_code == "beyond-track" and lr.track.value == 1.0
    lr.track.value = 0.01
    assert lr.value == 0.01 and lr.note_code == ""


def test_interact_shows_a_refused_value_in_one_line_and_aligns_labels(monkeypatch, capsys):
    import ipywidgets as widgets

    monkeypatch.delenv("SPECNB_HEADLESS", raising=False)
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: None)

    def view(size, rate):
        if size < 0:
            raise ValueError(f"n_params must be >= 0, got {size}")
        return f"size {size}, rate {rate}"

    size = nb.number(1.0, "draft parameters (e.g. 1.5e9)")
    rate = nb.slider(0.5, 0.0, 1.0, 0.1, "a")
    ui = nb.interact(view, size=size, rate=rate)
    assert isinstance(ui, widgets.interactive)
    widths = {size.label_widget.style.description_width, rate.label_widget.style.description_width}
    assert len(widths) == 1  # one label width: the tracks and boxes line up
    capsys.readouterr()
    _type(size, "-5")  # no valid range on the box: the function behind it refuses
    out = capsys.readouterr().out.replace("\x1b[2K\r", "")  # clear_output's escapes
    assert out.startswith("not computed (draft parameters (e.g. 1.5e9) = -5, a = 0.5): "
                          "n_params must be >= 0")
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1


def test_interact_headless_still_raises(monkeypatch):
    monkeypatch.setenv("SPECNB_HEADLESS", "1")

    def view(x):
        raise ValueError("bad x")

    with pytest.raises(ValueError, match="bad x"):
        nb.interact(view, x=nb.number(1.0, "x"))


def test_left_aligned_styles_only_the_text_columns():
    import pandas as pd

    table = pd.DataFrame({"rule": ["a", "b"], "source": ["x y", "z"], "n": [1, 2]})
    page = nb.left_aligned(table).to_html()
    import re
    styled = set(re.findall(r"#T_\w+_row\d+_col(\d+)", page.split("</style>")[0]))
    assert styled == {"0", "1"} and "text-align: left" in page
    with pytest.raises(KeyError, match="nope"):
        nb.left_aligned(table, ["nope"])


def test_valid_must_be_a_pair_and_the_error_names_the_control():
    with pytest.raises(ValueError, match="alpha: valid must be a pair"):
        nb.slider(0.5, 0.0, 1.0, 0.1, "alpha", valid=(0,))


# ------------------------------------------------- records, headless interact, labels, heatmap
def test_record_roundtrip_and_types(tmp_path, monkeypatch):
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
