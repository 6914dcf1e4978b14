"""The bundled family's corpus and evaluation prompts (no torch): the Python standard library's
own source, split into training files and files held out whole, and the three prompt families
cut from the held-out files only (``data/prompts/``, ``python -m specnb.measure.train --prompts``).

Corpus: every ``.py`` file of the running interpreter's standard library
(``sysconfig.get_paths()["stdlib"]``) except tests, ``idlelib``, ``lib2to3``, ``ensurepip``,
``encodings`` (mapping tables), ``site-packages`` and build configuration. The files in
:data:`HELD_OUT` are held out *whole*: they give the validation loss and every evaluation
prompt, and the tokenizer never sees them.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import sysconfig
from pathlib import Path

__all__ = ["HELD_OUT", "EXCLUDED_DIRS", "stdlib_dir", "corpus_files", "read_corpus",
           "corpus_fingerprint", "TASKS", "build_prompts", "write_prompts"]

#: Standard-library files held out whole (paths relative to the stdlib folder). They give the
#: validation loss and all evaluation prompts; neither the tokenizer nor the models train on them.
HELD_OUT = (
    "bisect.py", "calendar.py", "colorsys.py", "difflib.py", "fnmatch.py", "fractions.py",
    "ftplib.py", "gettext.py", "glob.py", "graphlib.py", "heapq.py", "netrc.py", "numbers.py",
    "pprint.py", "queue.py", "sched.py", "shlex.py", "statistics.py", "string.py", "textwrap.py",
)

#: Folder names whose files are not part of the corpus at all.
EXCLUDED_DIRS = frozenset({
    "test", "tests", "idlelib", "lib2to3", "ensurepip", "encodings", "site-packages",
    "__pycache__", "turtledemo", "lib-dynload",
})



def stdlib_dir() -> Path:
    """The running interpreter's standard-library folder (``sysconfig`` ``stdlib`` path)."""
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_files(root: Path | None = None) -> tuple[list[Path], list[Path]]:
    """Split the standard library's ``.py`` files into (training files, held-out files).

    Parameters
    ----------
    root : Path, optional
        Standard-library folder; defaults to :func:`stdlib_dir`.

    Returns
    -------
    (train, held_out) : two sorted lists of absolute paths. ``held_out`` holds the files of
    :data:`HELD_OUT` that exist under ``root`` (all of them on CPython 3.11-3.13).

    Raises
    ------
    FileNotFoundError
        ``root`` is not a folder, or none of :data:`HELD_OUT` is in it.
    """
    root = Path(root) if root is not None else stdlib_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"root must be the standard-library folder; {root} is not a folder")
    held = set(HELD_OUT)
    train, held_out = [], []
    for p in sorted(_python_files(root)):
        rel = p.relative_to(root)
        if rel.name.startswith("_sysconfigdata"):
            continue
        (held_out if rel.as_posix() in held else train).append(p)
    if not held_out:
        raise FileNotFoundError(f"none of the held-out files {HELD_OUT} is under {root}")
    return train, held_out


def _python_files(root: Path):
    """The ``*.py`` files under ``root`` outside :data:`EXCLUDED_DIRS` and ``config-*`` folders
    (at any depth), as ``root.rglob("*.py")`` finds them (symlinked folders not entered), but
    without walking the excluded folders: ``site-packages`` and ``test`` alone hold some 30
    times the corpus's files (a full walk took over a second)."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in EXCLUDED_DIRS and not d.startswith("config-")]
        base = Path(folder)
        yield from (base / f for f in files if fnmatch.fnmatchcase(f, "*.py"))


def read_corpus(paths) -> list[str]:
    """The text of each file (UTF-8; undecodable bytes replaced), in the given order."""
    return [Path(p).read_text(encoding="utf-8", errors="replace") for p in paths]


def corpus_fingerprint(paths, root: Path | None = None) -> str:
    """SHA-256 over relative names and contents of ``paths``: identifies the corpus version."""
    root = Path(root) if root is not None else stdlib_dir()
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(Path(p).read_bytes())
    return h.hexdigest()



#: The three prompt families of ``data/prompts/``.
TASKS = ("code-completion", "prose", "copy-edit")


def _functions(tree):
    import ast

    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _prompt_candidates(rel: str, text: str, max_chars: int) -> dict:
    """Candidate prompts of each family from one held-out file (deterministic, source order)."""
    import ast
    import re

    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)
    out = {t: [] for t in TASKS}

    def src(a, b):  # 1-based inclusive line range
        return "".join(lines[a - 1:b])

    for fn in sorted(_functions(tree), key=lambda n: n.lineno):
        start = min([d.lineno for d in fn.decorator_list] + [fn.lineno])
        end = fn.end_lineno
        body = fn.body
        doc = ast.get_docstring(fn, clean=False)
        first_code = body[1] if doc is not None and len(body) > 1 else body[0]
        # code completion: header (+ docstring) + 2 lines of code; the rest is the answer
        cut = first_code.lineno + 2
        if doc is None or len(doc) < 300:
            if end - cut >= 6:
                p = src(start, cut - 1)
                if len(p) <= max_chars:
                    out["code-completion"].append(
                        {"prompt": p, "reference": src(cut, min(end, cut + 15)),
                         "source": f"{rel}:{start}-{cut - 1}"})
        # prose: a docstring of 4+ lines; prompt ends after its first line
        if doc is not None and doc.count("\n") >= 4:
            d0 = body[0]
            p = src(start, d0.lineno)
            if len(p) <= max_chars and d0.end_lineno - d0.lineno >= 4:
                out["prose"].append({"prompt": p,
                                     "reference": src(d0.lineno + 1, min(d0.end_lineno, d0.lineno + 12)),
                                     "source": f"{rel}:{start}-{d0.lineno}"})
        # copy-edit: a short function repeated with a renamed function or argument
        whole = src(start, end)
        if 4 <= end - fn.lineno <= 14 and len(whole) <= max_chars * 0.55:
            head_end = body[0].lineno - 1
            head, rest = src(start, head_end), src(head_end + 1, end)
            args = [a.arg for a in fn.args.args if a.arg not in ("self", "cls")]
            k = len(out["copy-edit"])
            if k % 2 == 1 and args and re.search(rf"\b{args[0]}\b", rest):
                old, new = args[0], args[0] + "_value"
                edit = f"# the same, with the argument {old!r} renamed to {new!r}\n"
                new_head = re.sub(rf"\b{old}\b", new, head)
                new_rest = re.sub(rf"\b{old}\b", new, rest)
            else:
                edit = f"# the same, renamed to {fn.name}_copy\n"
                new_head = re.sub(rf"\b{fn.name}\b", fn.name + "_copy", head, count=1)
                new_rest = rest
            indent = re.match(r"[ \t]*", lines[fn.lineno - 1]).group(0)
            p = whole + "\n" + indent + edit + new_head
            out["copy-edit"].append({"prompt": p, "reference": new_rest,
                                     "source": f"{rel}:{start}-{end}"})
    # prose: comment blocks of 3+ lines; prompt = 3 lines of code before + first comment line
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("#"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("#"):
                j += 1
            if j - i >= 3 and i >= 3:
                p = "".join(lines[i - 3:i + 1])
                if len(p) <= max_chars:
                    out["prose"].append({"prompt": p, "reference": "".join(lines[i + 1:j]),
                                         "source": f"{rel}:{i - 2}-{i + 1}"})
            i = j
        else:
            i += 1
    return out


def build_prompts(per_family: int = 12, *, root: Path | None = None, max_chars: int = 480) -> list[dict]:
    """Evaluation prompts from the held-out files only, ``per_family`` of each of :data:`TASKS`.

    * ``code-completion``: a function's header (and short docstring) and first two lines of
      code; the answer continues the function.
    * ``prose``: a docstring cut after its first line, or a comment block cut after its first
      line (with three lines of code before it); the answer is English.
    * ``copy-edit``: a short function, then a comment asking for the same function renamed (or
      with an argument renamed) and the edited ``def`` line; the answer repeats the body.

    Candidates are taken round-robin over the held-out files, in source order, so the result is
    deterministic for a given standard library. Prompts end on a line's last character (the
    newline goes to the reference). Each item: ``id``, ``task``, ``prompt``,
    ``reference`` (the file's own continuation, or the edited body), ``source``
    (``file:first-last line`` of the prompt).

    Raises
    ------
    ValueError
        per_family < 1 or max_chars < 100.
    """
    if not isinstance(per_family, int) or per_family < 1:
        raise ValueError(f"per_family must be an integer >= 1, got {per_family!r}")
    if max_chars < 100:
        raise ValueError(f"max_chars must be >= 100, got {max_chars!r}")
    root = Path(root) if root is not None else stdlib_dir()
    _, held = corpus_files(root)
    per_file = [_prompt_candidates(p.relative_to(root).as_posix(), t, max_chars)
                for p, t in zip(held, read_corpus(held))]
    items = []
    for task in TASKS:
        queues = [list(c[task]) for c in per_file]
        picked = []
        while len(picked) < per_family and any(queues):
            for q in queues:
                if q and len(picked) < per_family:
                    # spread picks through the file: take from the middle of what is left
                    picked.append(q.pop(len(q) // 2))
        for n, item in enumerate(picked):
            # End on the last character of a line, not on "\n": the byte-level BPE merges a
            # newline with the next line's indentation ("\n        "), so a prompt ending in a
            # bare "\n" would promise a line at column 0 (the prompt-boundary problem).
            prompt = item["prompt"].rstrip("\n")
            tail = item["prompt"][len(prompt):]
            items.append({"id": f"{task}-{n:02d}", "task": task, "prompt": prompt,
                          "reference": tail + item["reference"], "source": item["source"]})
    return items


def write_prompts(path, per_family: int = 12, *, root: Path | None = None) -> list[dict]:
    """:func:`build_prompts` written as JSON lines to ``path`` (one object a line)."""
    items = build_prompts(per_family, root=root)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")
    return items
