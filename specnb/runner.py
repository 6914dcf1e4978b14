"""Execute the notebooks headless with papermill and write an HTML report.

``specnb run [--only NAME ...] [--parameters FILE] [--output DIR]`` (:mod:`specnb.cli.run`; and
``make run``) runs
every ``notebooks/NN_slug.ipynb`` in order with an explicit kernel, the notebook folder as
working directory and a per-cell timeout; a failing notebook does not stop the others. It
writes the executed notebooks, one HTML page each (nbconvert) and ``index.html`` under the
output folder, prints a summary and exits non-zero if any notebook failed.

Parameters files are YAML or JSON mappings from a notebook (full name ``04_draft_length``
or its number ``04``) to the parameters to inject::

    04:
      alpha: 0.7
      gamma: 4

A parameter the notebook's ``parameters`` cell does not define is an error (papermill itself
only warns), as is a notebook name that does not exist.
"""

from __future__ import annotations

import html
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["NOTEBOOK_DIR", "KERNEL", "find_notebooks", "resolve", "load_parameters",
           "check_parameters", "check_output_dir", "run_notebooks", "write_report", "notebook_title",
           "notebook_summary"]

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
KERNEL = "python3"
CELL_TIMEOUT_S = 600


@dataclass
class Result:
    """Outcome of one notebook: ``status`` is "ok" or "failed"."""

    name: str
    status: str
    seconds: float
    output: Path
    html: Path | None = None
    error: str = ""
    parameters: dict = field(default_factory=dict)
    title: str = ""
    question: str = ""
    answer: str = ""


def _kernel_manager_class():
    """A kernel manager that talks to the kernel over local IPC sockets (in the temp folder).

    Over the default TCP loopback transport, ipykernel 7 warns on every start that the
    connection is unencrypted; IPC sockets are local files, so there is nothing to warn about.
    """
    import tempfile

    from jupyter_client.manager import AsyncKernelManager

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.transport = "ipc"
            self.ip = os.path.join(tempfile.gettempdir(), f"specnb-kernel-{os.getpid()}")

    return IPCKernelManager


def notebook_title(path) -> str:
    """The first Markdown heading of a notebook ("" if it has none)."""
    import nbformat

    return _title(nbformat.read(str(path), as_version=4))


def _title(nb) -> str:
    """:func:`notebook_title` of a notebook already read."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return ""


def _paragraph(text: str, lead: str) -> str:
    """The blank-line separated paragraph of ``text`` that starts with ``lead`` ("" if none)."""
    import re

    for para in re.split(r"\n\s*\n", text):
        if para.strip().startswith(lead):
            return " ".join(line.strip() for line in para.strip().splitlines())
    return ""


def notebook_summary(path) -> dict:
    """Title, question and answer of a notebook.

    Returns ``{"title": str, "question": str, "answer": str}``: the first heading and the first
    Markdown cell's paragraph that starts with ``**Question.**`` (lines joined with spaces, the
    bold lead kept), and the Answer the notebook showed when it ran
    (:func:`specnb.nb.answer`, read back with :func:`specnb.nb.read_answer`): an executed
    notebook's answer is computed from that run, so it follows ``--parameters``. A notebook
    that has not run (or stopped before its Answer cell) has answer "". Missing parts are "".
    """
    import nbformat

    from .nb import read_answer

    nb = nbformat.read(str(path), as_version=4)
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    return {"title": _title(nb), "question": _paragraph(first, "**Question.**"),
            "answer": read_answer(nb)}


def find_notebooks(folder: Path | str = NOTEBOOK_DIR) -> dict[str, Path]:
    """The notebooks ``NN_slug.ipynb`` in ``folder``, by stem, in order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"notebook folder {folder} does not exist")
    found = sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))
    return {p.stem: p for p in found}


def _number_matches(stem: str, name: str) -> bool:
    number = stem.split("_", 1)[0]
    return number == name or (name.isdigit() and number.isdigit() and int(name) == int(number))


def resolve(names, available: dict[str, Path], source: str = "--only") -> list[str]:
    """Map user-given names (full stem, number ``04`` or ``4``, or slug) to notebook stems.

    ``source`` names where the names came from in the error message.

    Raises
    ------
    ValueError
        a name that matches no notebook, or more than one; the message lists the valid names.
    """
    out = []
    for name in names:
        name = str(name).removesuffix(".ipynb")
        hits = [s for s in available if s == name or _number_matches(s, name)
                or s.split("_", 1)[-1] == name]
        if len(hits) != 1:
            what = "no notebook" if not hits else f"several notebooks ({', '.join(hits)})"
            raise ValueError(f"{source} {name!r} matches {what}; valid names: "
                             f"{', '.join(available) or '(none)'}")
        if hits[0] not in out:
            out.append(hits[0])
    return out


def load_parameters(path) -> dict:
    """Read a YAML/JSON parameters file: {notebook name: {parameter: value}}.

    Values must be literals papermill can inject unchanged: numbers, strings, booleans, null,
    lists and mappings with string keys (YAML dates, sets, binary... are refused rather than
    turned into strings).

    Raises
    ------
    ValueError
        the file cannot be read (missing, a directory, not UTF-8), is not valid YAML/JSON, is
        not a mapping of mappings, has a notebook key that is not a name or number, or holds
        a value that is not a literal; the message names the file and the entry.
    """
    import yaml  # papermill depends on PyYAML

    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"parameters file {path}: not UTF-8 text (byte "
                         f"0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
    except OSError as exc:
        raise ValueError(f"parameters file {path}: cannot be read: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text) or {}
    except (yaml.YAMLError, RecursionError) as exc:
        raise ValueError(f"parameters file {path}: not valid YAML/JSON: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError(f"parameters file {path} must map notebook names to mappings of "
                         "parameters, e.g. {'04': {'alpha': 0.7}}")
    out = {}
    for k, params in data.items():
        if isinstance(k, bool) or not isinstance(k, (int, str)):
            raise ValueError(f"parameters file {path}: {k!r} is not a notebook name or number "
                             "(e.g. 04 or 04_draft_length)")
        # YAML reads an unquoted 04 as the integer 4: turn numbers back into two-digit names.
        name = f"{k:02d}" if isinstance(k, int) else k
        for param, value in params.items():
            _check_literal(f"parameters file {path}: {name}.{param}", value)
        out[name] = params
    return out


def _check_literal(where: str, value) -> None:
    """Raise ValueError unless ``value`` is a literal papermill injects unchanged."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where}: mapping keys must be strings (papermill writes "
                                 f"them as strings), got {k!r}")
            _check_literal(f"{where}.{k}", v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_literal(f"{where}[{i}]", v)
    elif not isinstance(value, (str, int, float, bool, type(None))):
        raise ValueError(f"{where} is of type {type(value).__name__} ({value!r}), not a literal "
                         "(number, string, true/false, null, list or mapping); quote it to "
                         "pass a string")


def check_parameters(notebook: Path, params: dict) -> None:
    """Raise ValueError if ``params`` names a parameter the notebook does not define."""
    import papermill as pm

    try:
        known = pm.inspect_notebook(str(notebook))
    except ValueError as exc:  # nbformat's NotJSONError and validation errors
        raise ValueError(f"{notebook}: cannot read its parameters cell: {exc}") from None
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"{notebook.stem}: unknown parameter(s) {', '.join(unknown)}; "
                         f"its parameters are {', '.join(known) or '(none)'}")


def _export_html(executed: Path) -> Path:
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(executed, as_version=4)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    target = executed.with_suffix(".html")
    target.write_text(body, encoding="utf-8")
    return target


def _describe(exc: Exception) -> str:
    """One line naming the failing cell and the error (papermill's message starts with a rule).

    The cell is named by its prompt number, ``In [15]``, as the executed notebook and its HTML
    page show it ("An Exception was encountered at 'In [15]'"); papermill's cell index would
    count Markdown cells and its own inserted cells, which no page shows."""
    if hasattr(exc, "ename"):  # papermill.exceptions.PapermillExecutionError
        where = f"In [{exc.exec_count}]" if getattr(exc, "exec_count", None) else "a cell"
        return f"{where}: {exc.ename}: {exc.evalue}"
    lines = [ln for ln in str(exc).splitlines() if ln.strip() and not set(ln.strip()) <= set("-")]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def check_output_dir(out_dir, names=()) -> Path:
    """Create ``out_dir`` if needed and check that the report can be written there.

    ``names`` are the executed notebooks' file names (``04_draft_length.ipynb``); each, its
    ``.html`` page and ``index.html`` must not be folders. A probe file is created and removed,
    so a folder that exists but refuses writes (permissions, read-only or immutable) is found
    before anything runs.

    Raises
    ------
    ValueError
        the folder cannot be created or written, or a target name is taken by a folder; the
        message names the path and the reason.
    """
    import tempfile

    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot create the output folder {out_dir}: {exc.strerror}") from None
    try:
        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".specnb-write-check-"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot write to the output folder {out_dir}: {exc.strerror}; "
                         "choose another --output") from None
    targets = ["index.html"] + [t for n in names for t in (n, str(Path(n).with_suffix(".html")))]
    for name in targets:
        if (out_dir / name).is_dir():
            raise ValueError(f"cannot write {out_dir / name}: a folder of that name is in the "
                             "way; remove it or choose another --output")
    return out_dir


def run_notebooks(names=None, output_dir="build", parameters: dict | None = None,
                  notebook_dir=NOTEBOOK_DIR, cell_timeout: int = CELL_TIMEOUT_S,
                  progress: bool = True, report: bool = True) -> list[Result]:
    """Execute notebooks with papermill; return one :class:`Result` per notebook.

    Parameters
    ----------
    names : list of str or None
        Notebooks to run (stem, number or slug); None runs all, in order.
    output_dir : path
        Where executed notebooks, HTML pages and ``index.html`` go (created).
    parameters : dict or None
        {notebook name or number: {parameter: value}}, checked before anything runs.
    cell_timeout : int
        Seconds one cell may run before the notebook fails.

    Raises
    ------
    ValueError
        unknown notebook names or parameters, a parameter value that is not a literal, no
        notebooks in ``notebook_dir``, ``cell_timeout`` < 1, an output folder that cannot be
        created or written (:func:`check_output_dir`; all before anything runs).
    FileNotFoundError
        ``notebook_dir`` does not exist.
    """
    import papermill as pm
    from tqdm.auto import tqdm

    from . import _check

    cell_timeout = _check.scalar_int("cell_timeout", cell_timeout, lo=1)
    available = find_notebooks(notebook_dir)
    if not available:
        raise ValueError(f"no notebooks named NN_slug.ipynb in {notebook_dir}")
    stems = resolve(names, available) if names else list(available)
    per_nb: dict[str, dict] = {}
    for key, params in (parameters or {}).items():
        (stem,) = resolve([key], available, source="parameters for notebook")
        if not isinstance(params, dict):
            raise ValueError(f"parameters for {stem} must be a mapping {{name: value}}, got "
                             f"{params!r}")
        for param, value in params.items():
            _check_literal(f"{stem}.{param}", value)
        per_nb.setdefault(stem, {}).update(params)
    for stem, params in per_nb.items():
        check_parameters(available[stem], params)

    out_dir = Path(output_dir)
    check_output_dir(out_dir, [available[s].name for s in stems])
    os.environ["SPECNB_HEADLESS"] = "1"
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    results: list[Result] = []
    bar = tqdm(stems, desc="notebooks", unit="nb", disable=not progress, file=sys.stderr)
    for stem in bar:
        bar.set_postfix_str(stem)
        src = available[stem]
        dst = out_dir / src.name
        params = per_nb.get(stem, {})
        start = time.perf_counter()
        status, error = "ok", ""
        try:
            pm.execute_notebook(str(src), str(dst), parameters=params, kernel_name=KERNEL,
                                cwd=str(src.parent), execution_timeout=cell_timeout,
                                progress_bar=False, log_output=False,
                                kernel_manager_class=_kernel_manager_class())
        except Exception as exc:  # noqa: BLE001 - a failing notebook must not stop the run
            status = "failed"
            error = _describe(exc)
        seconds = time.perf_counter() - start
        res = Result(stem, status, seconds, dst, error=error, parameters=params,
                     **notebook_summary(dst if dst.exists() else src))
        if report and dst.exists():
            res.html = _export_html(dst)
        results.append(res)
    if report:
        write_report(results, out_dir)
    return results


def _inline_markdown(text: str) -> str:
    """Markdown to HTML with mistune (nbconvert's Markdown library); raw HTML is escaped."""
    import mistune

    return mistune.create_markdown(escape=True)(text).strip()


def write_report(results: list[Result], out_dir) -> Path:
    """Write ``index.html``: every executed notebook's HTML page, its title, question (from
    the first Markdown cell) and the Answer the run computed (see :func:`notebook_summary`),
    status and time. A notebook without an Answer says why (it failed before its Answer cell,
    or it shows none)."""
    out_dir = Path(out_dir)
    rows = []
    for r in results:
        link = (f'<a href="{html.escape(r.html.name)}">{html.escape(r.name)}</a>'
                if r.html else html.escape(r.name))
        qa = f"<div class='title'>{html.escape(r.title)}</div>"
        if r.question:
            qa += f"<div class='q'>{_inline_markdown(r.question)}</div>"
        if r.answer:
            qa += f"<div class='a'>{_inline_markdown(r.answer)}</div>"
        else:
            why = ("the run failed before its Answer cell" if r.status != "ok"
                   else "this notebook shows no Answer")
            qa += f"<div class='a noanswer'><em>No answer: {why}.</em></div>"
        rows.append(f"<tr class='{r.status}'><td class='notebook'>{link}</td>"
                    f"<td class='question'>{qa}</td>"
                    f"<td class='status'>{r.status}</td><td class='seconds'>{r.seconds:.1f}</td>"
                    f"<td class='error'>{html.escape(r.error)}</td></tr>")
    total = sum(r.seconds for r in results)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>specnb report</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto}}
td,th{{padding:.3em .8em;text-align:left;vertical-align:top}} tr.failed td{{color:#b00}}
td.question p{{margin:.3em 0}} td.question .title{{font-weight:bold}}
tbody tr{{border-top:1px solid #ddd}} table{{border-collapse:collapse}}</style></head>
<body><h1>specnb: executed notebooks</h1>
<p>Should I turn on speculative decoding, with which method and draft length, and what will it
save me? Each notebook answers one question: 01-07 follow the source article's sections and
recompute its numbers from published data, 08 measures alpha on a model pair, 09 models batch
size and context.</p>
<table><thead><tr><th>notebook</th><th>question and answer</th><th>status</th><th>seconds</th><th>error</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
<p>{_count_line(results)}, {total:.1f} s in all.</p>
</body></html>
"""
    index = out_dir / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


def _count_line(results: list[Result]) -> str:
    """"2 notebooks run: 1 ok, 1 failed" (the count of runs, then how they ended)."""
    n = len(results)
    failed = sum(r.status != "ok" for r in results)
    return f"{n} notebook{'s' if n != 1 else ''} run: {n - failed} ok, {failed} failed"

