"""End-to-end: the two web pages readers use, checked in a real (headless) Chromium.

* JupyterLab with live widgets: open the draft-length notebook, Run All, set alpha (typed into
  the box beside its slider), gamma (arrow keys on its slider's handle) and c beyond its track
  (used as typed, with a note), and check that the shown speedup becomes what
  :mod:`specnb.theory` gives for the new setting; no error output
  anywhere in the notebook; a save writes the notebook without outputs (``make lab``'s
  pre-save hook).
* The HTML report ``make run`` writes (here the test session's, under pytest's temporary
  directory; tests/conftest.py ``report_dir``): every notebook link resolves, every figure
  loads, no notebook shows an error.

Screenshots go to ``$SPECNB_SCREENSHOTS`` (default: ``specnb-screenshots`` in the system's
temporary directory, never the checkout) for a person to look at. The browser is Debian's
``chromium`` (``scripts/ensure_browser.sh`` installs it; ``make test`` runs that); without one
these tests skip and say why. JupyterLab and Chromium are shut down also when a test fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest

from tests.browser_support import (CHROMIUM_ARGS, ERROR_TEXT, JupyterLab,
                                   browser_unavailable_reason, find_chromium, stray_browsers)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SCREENSHOTS = Path(os.environ.get("SPECNB_SCREENSHOTS")
                   or Path(tempfile.gettempdir()) / "specnb-screenshots")
NOTEBOOK = "04_draft_length.ipynb"
VIEWPORT = {"width": 1400, "height": 1000}

_reason = browser_unavailable_reason()
pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(_reason is not None, reason=str(_reason))]


# ---------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium (Debian's, through Playwright), closed at the end of the module."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=find_chromium(), headless=True,
                                     args=CHROMIUM_ARGS, timeout=60_000)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        pw.stop()
    stray = stray_browsers()
    assert not stray, f"Chromium processes left after closing the browser (killed now): {stray}"


@pytest.fixture
def page(chromium):
    """A fresh browser tab in a context of its own."""
    context = chromium.new_context(viewport=VIEWPORT, device_scale_factor=1)
    context.set_default_timeout(30_000)
    tab = context.new_page()
    try:
        yield tab
    finally:
        context.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a free loopback port, serving a temporary copy of notebooks/."""
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install -e '.[lab]')")
    pytest.importorskip("ipywidgets", reason="ipywidgets is not installed (pip install -e '.[lab]')")
    work = tmp_path_factory.mktemp("lab")
    shutil.copytree(NOTEBOOKS, work / "notebooks",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.tmp"))
    server = JupyterLab(work / "notebooks", work / "state")
    with server:
        yield server
    left = server.leftovers()
    assert not left, f"JupyterLab left behind: {left}"


@pytest.fixture
def screenshot_on_failure(request):
    """Call with a page: if the test fails, a screenshot of it lands in SCREENSHOTS."""
    pages = []
    failed_before = request.session.testsfailed
    (SCREENSHOTS / f"FAILED_{request.node.name}.png").unlink(missing_ok=True)
    yield pages.append
    if pages and request.session.testsfailed > failed_before:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        try:
            pages[-1].screenshot(path=str(SCREENSHOTS / f"FAILED_{request.node.name}.png"))
        except Exception:  # noqa: BLE001 - best effort, the page may be gone
            pass


# ---------------------------------------------------------------------------------- helpers

def _shot(page, name: str, **kwargs) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path), **kwargs)
    return path


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def _wait_for_row(table, row: str, expected: float, timeout_s: float = 30.0) -> None:
    """Wait until the table's ``row`` shows ``expected`` (as rounded by the notebook)."""
    cell = table.locator("tr", has=table.page.locator("th", has_text=re.compile(rf"^\s*{row}\s*$")))
    deadline = time.monotonic() + timeout_s
    shown = None
    while time.monotonic() < deadline:
        texts = cell.locator("td").all_inner_texts()
        shown = texts[0] if texts else None
        if shown is not None and _number(shown) == pytest.approx(expected, abs=1e-9):
            return
        time.sleep(0.2)
    raise AssertionError(f"row {row!r} shows {shown!r}, expected {expected} "
                         f"(specnb.theory, rounded to 4 decimals)")


def _error_outputs(page) -> list[str]:
    """Texts of the stderr-coloured outputs on the page that are errors, not warnings."""
    texts = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
                         ).all_inner_texts()
    return [t[:500] for t in texts if ERROR_TEXT.search(t)]


def _run_all(page, timeout_s: float = 90.0) -> None:
    """Run > Run All Cells, then wait until every code cell has run ("[n]:") and the kernel
    is idle. Fails at once, with the error, if a cell fails (Run All stops there)."""
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    deadline = time.monotonic() + timeout_s
    while True:
        dialog = page.locator(".jp-Dialog")
        if dialog.count() and "Select Kernel" in dialog.inner_text():
            dialog.get_by_role("button", name="Select", exact=True).click()  # as a person would
        errors = _error_outputs(page)
        assert not errors, f"a cell failed during Run All: {errors[0]}"
        state = page.evaluate("""() => ({
            prompts: [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                     .map(p => p.textContent.trim()),
            status: document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status})""")
        if (state["prompts"] and state["status"] == "idle"
                and all(re.fullmatch(r"\[\d+\]:", p) for p in state["prompts"])):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"Run All did not finish within {timeout_s:.0f} s; kernel "
                                 f"{state['status']}, prompts {state['prompts']}")
        time.sleep(0.25)


def _slider(interact, page, name: str):
    return interact.locator(".widget-slider",
                            has=page.locator("label.widget-label", has_text=re.compile(rf"^{name}$")))


def _typed_box(interact, page, name: str):
    """The text box beside the slider labelled ``name`` (specnb.nb.slider's typed value)."""
    label = page.locator("label.widget-label", has_text=re.compile(rf"^{name}$"))
    control = interact.locator(".widget-hbox", has=page.locator(".widget-slider", has=label))
    return control.locator(".widget-text input")


# ---------------------------------------------------------------------------------- JupyterLab

def test_lab_widgets_follow_theory(lab, page, screenshot_on_failure):
    from playwright.sync_api import expect

    from specnb import theory

    screenshot_on_failure(page)
    page.goto(lab.lab_url(NOTEBOOK))
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
    # The kernel must be up before Run All, as a person waits for the status bar's
    # "Python 3 (ipykernel) | Idle" (the toolbar's indicator says idle even with no kernel);
    # running earlier makes JupyterLab ask for a kernel or start a second one.
    page.wait_for_function(
        """() => [...document.querySelectorAll('#jp-main-statusbar span')]
                 .some(e => /^(?!No Kernel).+ \\| Idle$/.test(e.textContent.trim()))""",
        timeout=60_000)

    _run_all(page)

    interact = page.locator(".widget-interact")
    try:
        interact.wait_for(timeout=20_000)
    except Exception:
        raise AssertionError(
            "the widgets did not render (is @jupyter-widgets/jupyterlab-manager installed?); "
            f"widget cell shows: {page.locator('.jp-CodeCell').last.inner_text()[-300:]!r}") from None
    assert interact.count() == 1, "expected one ipywidgets interactive in the notebook"
    broken = page.locator(".jp-OutputArea-output", has_text=re.compile("Error displaying widget|Loading widget"))
    assert not broken.count(), f"widgets that do not display: {broken.all_inner_texts()}"
    table = interact.locator(".widget-output table")
    try:
        table.wait_for(timeout=20_000)
    except Exception:
        raise AssertionError(
            "the interactive's output area shows no table: specnb.nb.interact must display "
            "draft_length_view's return value (ipywidgets.interactive needs "
            "{'auto_display': True} for that); output area text: "
            f"{interact.locator('.widget-output').inner_text()!r}") from None
    interact.scroll_into_view_if_needed()

    # The defaults first: alpha 0.8, gamma 5, c 0.05.
    _wait_for_row(table, "speedup", round(theory.walltime_speedup(0.8, 5, 0.05), 4))

    # alpha -> 0.6 through the box beside the slider, as a reader types a value.
    alpha = _slider(interact, page, "alpha")
    box = _typed_box(interact, page, "alpha")
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("0.6")
    page.keyboard.press("Enter")
    expect(box).to_have_value(re.compile(r"^\s*0\.60?\s*$"))
    expect(alpha.locator(".noUi-handle")).to_have_attribute("aria-valuenow", re.compile(r"^0\.60?$"))
    _wait_for_row(table, "speedup", round(theory.walltime_speedup(0.6, 5, 0.05), 4))
    _wait_for_row(table, "tokens per step", round(theory.expected_tokens_per_step(0.6, 5), 4))

    # gamma 5 -> 3 with the arrow keys on the slider handle.
    gamma = _slider(interact, page, "gamma")
    gamma.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(_typed_box(interact, page, "gamma")).to_have_value(re.compile(r"^\s*3\s*$"))
    _wait_for_row(table, "speedup", round(theory.walltime_speedup(0.6, 3, 0.05), 4))
    _wait_for_row(table, "operations", round(theory.operations_factor(0.6, 3, 0.05), 4))

    # c -> 0.7, beyond its slider's 0-0.5 track: used as typed (not clipped to 0.5), with a note.
    box_c = _typed_box(interact, page, "c")
    box_c.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("0.7")
    page.keyboard.press("Enter")
    expect(box_c).to_have_value(re.compile(r"^\s*0\.70?\s*$"))
    _wait_for_row(table, "speedup", round(theory.walltime_speedup(0.6, 3, 0.7), 4))
    note = interact.locator(".widget-hbox", has=page.locator(".widget-text input")).filter(
        has_text=re.compile(r"0\.70"))
    expect(note.first).to_be_visible()

    # Show the cell, its widgets and the table as a reader sees them.
    page.mouse.move(0, 0)
    page.locator(".jp-CodeCell", has=interact).evaluate("e => e.scrollIntoView({block: 'start'})")
    _shot(page, "lab_draft_length.png")

    errors = _error_outputs(page)
    assert not errors, f"error output in the notebook: {errors}"

    # Saving (as autosave does) writes the notebook without outputs: make lab's pre-save hook
    # keeps the served notebooks clean.
    before = lab.api(f"contents/{NOTEBOOK}?content=0")["last_modified"]
    gamma.locator(".noUi-handle").focus()  # out of the text box, which keeps its keystrokes
    with page.expect_response(lambda r: _is_save_of(r, NOTEBOOK), timeout=60_000) as saving:
        page.keyboard.press("Control+s")
    saved = _saved_notebook(lab, NOTEBOOK, saving.value, before)
    kept = [i for i, cell in enumerate(saved["cells"])
            if cell.get("outputs") or cell.get("execution_count") is not None]
    assert not kept, f"the saved notebook has outputs in cells {kept} (pre-save hook not active?)"


def _is_save_of(response, path: str) -> bool:
    """Whether ``response`` answers JupyterLab's save of ``path`` (a PUT to the contents API)."""
    return (response.request.method == "PUT"
            and urlparse(response.url).path.endswith(f"/api/contents/{quote(path)}"))


def _saved_notebook(lab: JupyterLab, path: str, response, before: str,
                    timeout_s: float = 30.0) -> dict:
    """The notebook as the save answered by ``response`` left it on disk.

    The server answers the PUT once the file is written, so the file is read only then: reading
    it while a save is being written (as polling the contents API did) sees a half-written
    file, and the server answers such a read with HTTP 400 "Unreadable Notebook". A read that
    still finds a half-written file (an autosave started meanwhile) is retried."""
    assert response.ok, f"saving {path} failed: HTTP {response.status} {response.text()[:300]}"
    model = response.json()
    assert model["last_modified"] != before, f"{path}: the save did not write the file"
    file = lab.root_dir / path
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return json.loads(file.read_text(encoding="utf-8"))
        except ValueError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


# ---------------------------------------------------------------------------------- the report

def check_report(page, index: Path, expected_pages: list[str]) -> dict:
    """Open the report's index.html like a reader: follow every notebook link and check each
    page; fail listing every problem found. Returns {page: number of images}. Requests to the
    network (the CDN scripts nbconvert links) are refused, so the check is the same with and
    without network."""
    page.route(re.compile(r"^https?://"), lambda route: route.abort())
    page.goto(index.resolve().as_uri())
    _shot(page, "report_index.png", full_page=True)
    assert page.title() == "specnb report"
    problems = []
    for row in page.locator("tbody tr").all():
        name, status, error = (row.locator(f"td.{c}").inner_text() for c in ("notebook", "status", "error"))
        if status.split()[0] != "ok":  # "ok (earlier run)" for a row kept from an earlier run
            problems.append(f"index.html: {name} is {status}: {error[:300]}")
    # each row links its page by name, and by its key figure's thumbnail (runner.key_figure)
    hrefs = [a.get_attribute("href") for a in page.locator("tbody td.notebook > a[href]").all()]
    assert sorted(hrefs) == sorted(expected_pages), "index.html should link every notebook page"
    thumbs = page.eval_on_selector_all(
        "tbody .figure a[href] img", "els => els.map(e => ({src: e.src.slice(-40),"
        " href: e.parentElement.getAttribute('href'), ok: e.complete && e.naturalWidth > 0}))")
    problems += [f"index.html: thumbnail does not load: {t['src']}" for t in thumbs if not t["ok"]]
    problems += [f"index.html: thumbnail links {t['href']}, not a notebook page"
                 for t in thumbs if t["href"] not in expected_pages]
    if not thumbs:
        problems.append("index.html: no key-figure thumbnail")

    images = {}
    for href in hrefs:
        page.locator(f'tbody td.notebook > a[href="{href}"]').click()
        page.wait_for_load_state("load")
        target = (index.parent / href).resolve()
        if page.url != target.as_uri() or not target.is_file():
            problems.append(f"{href}: the link does not resolve (went to {page.url})")
        elif page.locator(".jp-Notebook .jp-Cell").count() == 0:
            problems.append(f"{href}: shows no notebook")
        else:
            imgs = page.eval_on_selector_all(
                "img", "els => els.map(e => ({src: e.src.slice(0, 60),"
                       " ok: e.complete && e.naturalWidth > 0}))")
            images[href] = len(imgs)
            problems += [f"{href}: image does not load: {i['src']}" for i in imgs if not i["ok"]]
            problems += [f"{href}: error output: {e[:300]}" for e in _error_outputs(page)]
            if page.locator("#papermill-error-cell").count():
                problems.append(f"{href}: has papermill's error cell")
        page.go_back()
        page.wait_for_load_state("load")
    assert not problems, "the report, as a reader sees it:\n" + "\n".join(problems)
    return images


def test_report_links_figures_and_no_errors(executed_notebooks, page, screenshot_on_failure):
    screenshot_on_failure(page)
    results = list(executed_notebooks.values())
    assert results, "the runner executed no notebooks"
    index = results[0].output.parent / "index.html"
    assert index.is_file(), f"{index} was not written"
    expected = [r.html.name for r in results if r.html is not None]

    # One notebook page as a reader sees it (taken first, so it is there also when a check
    # below fails): the draft-length page at its first figure.
    shown = index.parent / "04_draft_length.html"
    if shown.is_file():
        page.route(re.compile(r"^https?://"), lambda route: route.abort())
        page.goto(shown.resolve().as_uri())
        figure = page.locator(".jp-OutputArea-output img").first
        if figure.count():
            figure.evaluate("e => e.scrollIntoView({block: 'center'})")
        _shot(page, "report_notebook.png")

    images = check_report(page, index, expected)
    assert sum(images.values()) > 0, "no figure in the whole report"
