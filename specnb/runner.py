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
only warns), as is a notebook name that does not exist, a value of another kind than the
parameter's default there, and for the notebooks in :data:`RANGE_CHECKS` a value out of the
library's range (:func:`check_parameters`, before papermill is imported).

The output folder is safe to point anywhere: ``index.html`` carries :data:`REPORT_MARKER` and
the folder a manifest (:data:`MANIFEST`) of the files specnb wrote there; a file it is about to
write that it did not write before (a user's ``index.html``, a same-named ``.ipynb``) is
refused before anything runs, unless ``force`` (``--force``). Rerunning some notebooks keeps
the index rows of the others whose pages are still there; one run at a time per folder (a lock
file, :data:`LOCK`, naming the pid). Each notebook's key figure (the first image of the cell
tagged :data:`KEY_FIGURE_TAG`) is saved as ``NN_slug.png`` and shown in the index beside its
Answer, linking to the executed page.
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
           "notebook_summary", "key_figure", "REPORT_MARKER", "MANIFEST", "LOCK",
           "KEY_FIGURE_TAG", "skip_iri_format_checks"]

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
KERNEL = "python3"
CELL_TIMEOUT_S = 600
#: In every index.html specnb writes: an index.html without it is not specnb's.
REPORT_MARKER = '<meta name="generator" content="specnb report">'
#: The report's manifest in the output folder: the files specnb wrote and the index rows.
MANIFEST = ".specnb-report.json"
#: Held while a run writes into the folder; holds the pid of the run.
LOCK = ".specnb-run.lock"
#: Cell tag of a notebook's key figure (its first image is the index's thumbnail).
KEY_FIGURE_TAG = "key-figure"


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
    figure: Path | None = None
    earlier: bool = False  # a row kept from an earlier run into the same folder


def skip_iri_format_checks() -> None:
    """Make jsonschema (which nbformat, papermill and nbconvert import) leave out its optional
    ``iri`` / ``iri-reference`` format checks: block the import of ``rfc3987_syntax``, which
    compiles some 40 lark grammars when imported, 2-3 s of CPU before any notebook runs (the
    known slowness of python-jsonschema/jsonschema#1392 and #1521). Nothing here checks those
    formats: nbformat validates notebooks without a format checker, and jsonschema drops the
    two checks when the import fails. Process-wide, so only what owns its process calls it
    (``specnb run``, the test session); a no-op once jsonschema or rfc3987_syntax is imported.
    """
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)


def _kernel_prefix() -> str:
    """Where this process's kernels put their IPC sockets (``prefix-1``, ``prefix-2``, ...)."""
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"specnb-kernel-{os.getpid()}")


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
            self.ip = _kernel_prefix()

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
        a name that matches no notebook, or more than one (the message lists the valid
        names); two names of one notebook (``--only 02 2``: the rule of a value listed twice,
        :func:`specnb.cli.listed_twice`).
    """
    out = []
    given: dict[str, str] = {}
    for name in names:
        name = str(name).removesuffix(".ipynb")
        hits = [s for s in available if s == name or _number_matches(s, name)
                or s.split("_", 1)[-1] == name]
        if len(hits) != 1:
            what = "no notebook" if not hits else f"several notebooks ({', '.join(hits)})"
            raise ValueError(f"{source} {name!r} matches {what}; valid names: "
                             f"{', '.join(available) or '(none)'}")
        if hits[0] in given:
            raise ValueError(f"{source} lists a notebook twice: {given[hits[0]]!r} and {name!r} "
                             f"are both {hits[0]}")
        given[hits[0]] = name
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
        data = yaml.safe_load(text)
        if data is None:  # an empty file: no parameters ([] or 0 are refused below)
            data = {}
    except (yaml.YAMLError, RecursionError) as exc:
        raise ValueError(f"parameters file {path}: not valid YAML/JSON{_yaml_where(exc)}") from None
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


def _yaml_where(exc) -> str:
    """PyYAML's error in one line: ``" at line 3, column 5: could not find expected ':'"``
    (its own message spans several lines, with the offending text quoted)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    what = getattr(exc, "problem", None) or getattr(exc, "context", None)
    if mark is None:
        return f": {' '.join(str(exc).split())}"
    return f" at line {mark.line + 1}, column {mark.column + 1}" + (f": {what}" if what else "")


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


def _cell_parameters(notebook) -> dict:
    """The parameters a notebook's ``parameters`` cell (the first code cell tagged so, as
    papermill finds it) defines: {name: (default, kind)}; default the literal assigned (None
    for an expression), kind :func:`_kind` of it, or of the line's ``# type: str|bool``
    comment (papermill's convention) when it has one, None (any value) for an expression or a
    None default. Read with ``json`` and ``ast``, without papermill.

    Raises
    ------
    ValueError
        the notebook is not JSON with cells, or its parameters cell is not valid Python.
    """
    import ast
    import json
    import re

    try:
        cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
        cell = next((c for c in cells if c.get("cell_type") == "code"
                     and "parameters" in c.get("metadata", {}).get("tags", [])), None)
        if cell is None:
            return {}
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        tree = ast.parse(source)
    except (ValueError, KeyError, TypeError, AttributeError, SyntaxError) as exc:
        raise ValueError(f"{notebook}: cannot read its parameters cell: {exc}") from None
    lines = source.splitlines()
    out = {}
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AnnAssign) and node.value else [])
        declared = re.search(r"#\s*type:\s*(\S+)", lines[node.end_lineno - 1])
        for t in targets:
            if not isinstance(t, ast.Name):
                continue
            try:
                default = ast.literal_eval(node.value)
                kind = _kind(default)
            except ValueError:  # an expression: any value
                default = kind = None
            out[t.id] = (default, _declared_kind(declared.group(1)) if declared else kind)
    return out


#: The kinds of parameter values: name in a ``# type:`` comment -> (is one, words, plural).
_KINDS = {
    "bool": (lambda v: isinstance(v, bool), "true or false", "true/false values"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer", "integers"),
    "float": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number",
              "numbers"),
    "str": (lambda v: isinstance(v, str), "a string", "strings"),
    "dict": (lambda v: isinstance(v, dict), "a mapping", "mappings"),
    "list": (lambda v: isinstance(v, list), "a list", "lists"),
}


def _declared_kind(text: str):
    """(test, words) of a ``# type: str|bool`` comment; None when it names another type."""
    names = text.split("|")
    if not all(n in _KINDS for n in names):
        return None
    tests = [_KINDS[n][0] for n in names]
    return (lambda v: any(t(v) for t in tests)), " or ".join(_KINDS[n][1] for n in names)


def _kind(default):
    """(test, words) for the values a parameter whose default is ``default`` takes: a bool
    true/false, an int integers, a float any number, a str strings, a dict mappings, a list
    lists (of that kind when its elements are all of one); None for a default that fixes no
    kind (None)."""
    if isinstance(default, list):
        kinds = [_kind(x) for x in default]
        if default and all(k is not None and k[1] == kinds[0][1] for k in kinds):
            each, word = kinds[0]
            plural = next(k[2] for k in _KINDS.values() if k[1] == word)
            return (lambda v: isinstance(v, list) and all(each(x) for x in v)), f"a list of {plural}"
        return _KINDS["list"][:2]
    for name in ("bool", "int", "float", "str", "dict"):  # bool before int: True is an int
        if _KINDS[name][0](default):
            return _KINDS[name][:2]
    return None


def _range_check_04(p: dict) -> None:
    """Notebook 04's parameters, through the call its widget makes (:func:`theory.summary`)."""
    from . import theory

    theory.summary(p["alpha"], p["gamma"], p["c"], p["c_hat"], gamma_max=p["gamma_max"])


#: Notebooks whose parameter ranges are checked before the kernel starts, by the library
#: function the notebook applies to its parameters (defaults with the file's values); the
#: other notebooks check their ranges as they run (a bad value: the notebook fails, exit 1).
RANGE_CHECKS = {"04_draft_length": _range_check_04}


def check_parameters(notebook: Path, params: dict) -> None:
    """Raise ValueError if ``params`` names a parameter the notebook's parameters cell does not
    define, gives one a value of another kind than its default there (an integer, a number,
    a string, true/false, a list of..., a mapping; null passes), or, for a notebook in
    :data:`RANGE_CHECKS`, a value its library check refuses. No papermill, no kernel."""
    notebook = Path(notebook)
    known = _cell_parameters(notebook)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"{notebook.stem}: unknown parameter(s) {', '.join(unknown)}; "
                         f"its parameters are {', '.join(known) or '(none)'}")
    for name, value in params.items():
        kind = known[name][1]
        if value is not None and kind is not None and not kind[0](value):
            raise ValueError(f"{notebook.stem}: parameter {name} must be {kind[1]} (as in its "
                             f"parameters cell), got {value!r}")
    check = RANGE_CHECKS.get(notebook.stem)
    if check is not None and params:
        try:
            check({**{k: d for k, (d, _) in known.items()}, **params})
        except KeyError:  # a notebook of that name without those parameters: nothing to check
            return
        except (ValueError, TypeError) as exc:
            given = ", ".join(f"{k} = {v!r}" for k, v in params.items())
            raise ValueError(f"{notebook.stem}: {given}: {exc}") from None


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


def _targets(names) -> list[str]:
    """index.html, and per executed notebook its .ipynb, .html page and key-figure .png."""
    return ["index.html"] + [t for n in names for t in
                             (n, str(Path(n).with_suffix(".html")), str(Path(n).with_suffix(".png")))]


def _manifest(out_dir: Path) -> dict:
    """The folder's manifest ({"files": [...], "rows": [...]}); empty when there is none or it
    cannot be read (then no file counts as specnb's but a marked index.html)."""
    import json

    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"files": [], "rows": []}
    if not isinstance(data, dict):
        return {"files": [], "rows": []}
    files = [f for f in data.get("files", []) if isinstance(f, str)]
    rows = [r for r in data.get("rows", []) if isinstance(r, dict) and isinstance(r.get("name"), str)]
    return {"files": files, "rows": rows}


def _is_ours(out_dir: Path, name: str, manifest: dict) -> bool:
    """True when specnb wrote ``out_dir / name``: index.html carries :data:`REPORT_MARKER`
    (or, written before the marker, the old report's title); another file is listed in the
    manifest or, for a report from before the manifest, linked from its index.html."""
    import re

    index = out_dir / "index.html"
    try:
        page = index.read_text(encoding="utf-8", errors="replace") if index.is_file() else ""
    except OSError:
        page = ""
    legacy = "<title>specnb report</title>" in page
    if name == "index.html":
        return REPORT_MARKER in page or legacy
    if name in manifest["files"]:
        return True
    if legacy and REPORT_MARKER not in page:
        linked = set(re.findall(r'href="([^"/]+)"', page))
        return name in linked or str(Path(name).with_suffix(".html")) in linked
    return False


def check_output_dir(out_dir, names=(), *, force: bool = False) -> Path:
    """Create ``out_dir`` if needed and check that the report can be written there.

    ``names`` are the executed notebooks' file names (``04_draft_length.ipynb``); each, its
    ``.html`` page, its key figure ``.png`` and ``index.html`` must not be folders, and must
    not be files specnb did not write (:func:`_is_ours`: a marked index.html, the manifest's
    files) unless ``force``. A probe file is created and removed, so a folder that exists but
    refuses writes (permissions, read-only or immutable) is found before anything runs.

    Raises
    ------
    ValueError
        the folder cannot be created or written, a target name is taken by a folder, or by a
        file specnb did not write (without ``force``); the message names the path and what
        to do.
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
    manifest = _manifest(out_dir)
    for name in _targets(names):
        if (out_dir / name).is_dir():
            raise ValueError(f"cannot write {out_dir / name}: a folder of that name is in the "
                             "way; remove it or choose another --output")
        if not force and (out_dir / name).exists() and not _is_ours(out_dir, name, manifest):
            raise ValueError(f"will not replace {out_dir / name}: specnb run did not write it "
                             "(no specnb report there); move it, choose another --output, or "
                             "give --force to replace it")
    return out_dir


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    except OSError:
        return False
    return True


def _lock(out_dir: Path) -> Path:
    """Take the folder's :data:`LOCK` (a file holding this pid); a lock of a finished
    process is taken over. Raises ValueError naming the pid of a live one."""
    lock = out_dir / LOCK
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                pid = int(lock.read_text().strip() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid and pid != os.getpid() and _pid_alive(pid):
                raise ValueError(f"the output folder {out_dir} is in use by pid {pid} (another "
                                 "specnb run writing its report); wait for it to finish or "
                                 "choose another --output") from None
            lock.unlink(missing_ok=True)  # stale: that run ended without removing it
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return lock
    raise ValueError(f"cannot take the lock {lock}; remove it if no specnb run is writing there")


def _unlock(lock: Path) -> None:
    try:
        if lock.read_text().strip() == str(os.getpid()):
            lock.unlink()
    except OSError:
        pass


def key_figure(executed, target=None) -> Path | None:
    """Save an executed notebook's key figure: the first ``image/png`` output of its first
    cell tagged :data:`KEY_FIGURE_TAG` (``metadata.tags``), written to ``target`` (default:
    the notebook's path with ``.png``). Returns the path, or None when no tagged cell has an
    image (then nothing is written)."""
    import base64

    import nbformat

    executed = Path(executed)
    nb = nbformat.read(str(executed), as_version=4)
    for cell in nb.cells:
        if KEY_FIGURE_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            png = out.get("data", {}).get("image/png")
            if png:
                path = Path(target) if target is not None else executed.with_suffix(".png")
                path.write_bytes(base64.b64decode("".join(png) if isinstance(png, list) else png))
                return path
    return None


def _cleanup_kernel_files(prefix: str) -> None:
    """Remove the IPC socket files a kernel left under ``prefix`` (``prefix-1`` ...)."""
    import glob

    for f in glob.glob(glob.escape(prefix) + "-*"):
        try:
            os.unlink(f)
        except OSError:
            pass


def run_notebooks(names=None, output_dir="build", parameters: dict | None = None,
                  notebook_dir=NOTEBOOK_DIR, cell_timeout: int = CELL_TIMEOUT_S,
                  progress: bool = True, report: bool = True,
                  force: bool = False) -> list[Result]:
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
    force : bool
        Replace files in ``output_dir`` that specnb did not write (default: refuse,
        :func:`check_output_dir`).

    The index keeps the rows of notebooks not run this time whose pages are still in the
    folder (:func:`write_report`). One run at a time per folder: a second one is refused with
    the pid of the first (:data:`LOCK`).

    Raises
    ------
    ValueError
        unknown notebook names or parameters, a parameter value that is not a literal or not
        of its default's kind, or out of range (:func:`check_parameters`), no notebooks in
        ``notebook_dir``, ``cell_timeout`` < 1, an output folder that cannot be created or
        written, holds files specnb did not write (:func:`check_output_dir`) or is in use by
        another run (all before anything runs and before papermill is imported).
    FileNotFoundError
        ``notebook_dir`` does not exist.
    """
    from . import _check

    # Every check before papermill, nbconvert and the kernel are imported (seconds of CPU):
    # a bad name, folder or parameters file is refused at once.
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
    check_output_dir(out_dir, [available[s].name for s in stems], force=force)
    lock = _lock(out_dir)
    try:
        import papermill as pm
        from tqdm.auto import tqdm

        return _run(stems, available, per_nb, out_dir, cell_timeout, progress, report, pm, tqdm)
    finally:
        _cleanup_kernel_files(_kernel_prefix())
        _unlock(lock)


def _run(stems, available, per_nb, out_dir, cell_timeout, progress, report, pm, tqdm):
    """The body of :func:`run_notebooks`, with the folder locked."""
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
            res.figure = key_figure(dst)
            if res.figure is None:  # no key figure this time: drop an earlier run's
                dst.with_suffix(".png").unlink(missing_ok=True)
        results.append(res)
    if report:
        write_report(results, out_dir)
    return results


def _inline_markdown(text: str) -> str:
    """Markdown to HTML with mistune (nbconvert's Markdown library); raw HTML is escaped."""
    import mistune

    return mistune.create_markdown(escape=True)(text).strip()


def _row_record(r: Result) -> dict:
    """A Result as the manifest keeps it (file names relative to the folder)."""
    name = lambda p: None if p is None else Path(p).name  # noqa: E731
    return {"name": r.name, "status": r.status, "seconds": r.seconds, "output": name(r.output),
            "html": name(r.html), "figure": name(r.figure), "error": r.error,
            "title": r.title, "question": r.question, "answer": r.answer}


def _earlier_rows(out_dir: Path, manifest: dict, shown: set) -> list[Result]:
    """The manifest's rows of notebooks not in ``shown`` whose page is still in the folder."""
    kept = []
    for rec in manifest["rows"]:
        page = rec.get("html")
        if rec["name"] in shown or not page or not (out_dir / page).is_file():
            continue
        fig = rec.get("figure")
        kept.append(Result(rec["name"], str(rec.get("status", "ok")),
                           float(rec.get("seconds") or 0.0), out_dir / str(rec.get("output") or page),
                           html=out_dir / page, error=str(rec.get("error") or ""),
                           title=str(rec.get("title") or ""),
                           question=str(rec.get("question") or ""),
                           answer=str(rec.get("answer") or ""),
                           figure=out_dir / fig if fig and (out_dir / fig).is_file() else None,
                           earlier=True))
    return kept


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder (os.replace), so
    a reader never sees half a file; the temporary file is removed on failure."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_report(results: list[Result], out_dir) -> Path:
    """Write ``index.html``: every executed notebook's HTML page, its title, question (from
    the first Markdown cell), the Answer the run computed (see :func:`notebook_summary`) with
    the notebook's key figure beside it (a thumbnail linking to the page, :func:`key_figure`),
    status and time. A notebook without an Answer says why (it failed before its Answer cell,
    or it shows none).

    Rows of notebooks not in ``results`` that an earlier run wrote into the same folder, and
    whose pages are still there, are kept (marked "earlier run"), in notebook order. The
    page carries :data:`REPORT_MARKER`; the manifest :data:`MANIFEST` lists every file of
    the report and its rows (both written atomically)."""
    import json

    out_dir = Path(out_dir)
    manifest = _manifest(out_dir)
    shown = {r.name for r in results}
    allrows = sorted(list(results) + _earlier_rows(out_dir, manifest, shown),
                     key=lambda r: r.name)
    rows = []
    for r in allrows:
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
        fig = ""
        if r.figure is not None:
            img = (f"<img src='{html.escape(r.figure.name)}' alt='key figure of "
                   f"{html.escape(r.name)}'>")
            fig = (f'<a href="{html.escape(r.html.name)}">{img}</a>' if r.html else img)
        status = r.status + (" <span class='earlier'>(earlier run)</span>" if r.earlier else "")
        rows.append(f"<tr class='{r.status}'><td class='notebook'>{link}"
                    + (f"<div class='figure'>{fig}</div>" if fig else "") + "</td>"
                    f"<td class='question'>{qa}</td>"
                    f"<td class='status'>{status}</td><td class='seconds'>{r.seconds:.1f}</td>"
                    f"<td class='error'>{html.escape(r.error)}</td></tr>")
    total = sum(r.seconds for r in results)
    kept = len(allrows) - len(results)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>specnb report</title>
{REPORT_MARKER}
<style>body{{font-family:sans-serif;max-width:76em;margin:2em auto}}
td,th{{padding:.3em .8em;text-align:left;vertical-align:top}} tr.failed td{{color:#b00}}
td.question p{{margin:.3em 0}} td.question .title{{font-weight:bold}}
td.notebook{{width:16em}} td.notebook .figure img{{width:16em;margin-top:.4em;border:1px solid #ccc}}
.earlier{{color:#777;font-size:.85em}}
tbody tr{{border-top:1px solid #ddd}} table{{border-collapse:collapse}}</style></head>
<body><h1>specnb: executed notebooks</h1>
<p>Should I turn on speculative decoding, with which method and draft length, and what will it
save me? Each notebook answers one question: 01-07 follow the source article's sections and
recompute its numbers from published data, 08 measures alpha on a model pair, 09 models batch
size and context, 10 simulates a load under continuous batching. Beside each Answer, the notebook's key figure (click it for the executed
notebook).</p>
<table><thead><tr><th>notebook and its key figure</th><th>question and answer</th><th>status</th><th>seconds</th><th>error</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
<p>{_count_line(results)}, {total:.1f} s in all{_kept_line(kept)}.</p>
</body></html>
"""
    files = sorted({"index.html"} | {Path(p).name for r in allrows
                                     for p in (r.output, r.html, r.figure) if p is not None}
                   | {f for f in manifest["files"] if (out_dir / f).exists()})
    index = out_dir / "index.html"
    _write_atomic(out_dir / MANIFEST, json.dumps(
        {"files": files, "rows": [_row_record(r) for r in allrows]}, indent=1))
    _write_atomic(index, page)
    return index


def _kept_line(kept: int) -> str:
    return (f"; {kept} row{'s' * (kept != 1)} kept from earlier runs into this folder (their "
            "pages are still here)" if kept else "")


def _count_line(results: list[Result]) -> str:
    """"2 notebooks run: 1 ok, 1 failed" (the count of runs, then how they ended)."""
    n = len(results)
    failed = sum(r.status != "ok" for r in results)
    return f"{n} notebook{'s' if n != 1 else ''} run: {n - failed} ok, {failed} failed"

