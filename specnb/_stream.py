"""Read a large text file once, in blocks, keeping only the lines a reader needs.

A ``/metrics`` scrape or a server log can be hundreds of MB, of which the spec-decode lines
are a few kB. :func:`scan` reads the file in 8 MB blocks and keeps the lines that contain
one of the given byte markers (found by ``bytes.find``, so the search runs in C), with their
line numbers, plus the first 64 kB (to name the format when nothing matched). Memory is one
block plus the kept lines, whatever the file's size.

Only the kept lines and the head are decoded as UTF-8 (the rest is never looked at); a bad
byte there raises the ValueError of :func:`specnb._check.utf8_error`.

Layer L0: imports only :mod:`specnb._check`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from . import _check

__all__ = ["Scan", "scan", "BLOCK", "HEAD"]

BLOCK = 8 << 20
HEAD = 64 << 10


@dataclass
class Scan:
    """What :func:`scan` kept of one file.

    Attributes
    ----------
    where : the file's name ("<stdin>" for -).
    lines : list of (line number from 1, line text without its end of line).
    n_lines, n_bytes : the whole file's size.
    head : the first :data:`HEAD` bytes, decoded (cut at a line end when there is one).
    markers : the markers that matched at least one line.
    """

    where: str
    lines: list = field(default_factory=list)
    n_lines: int = 0
    n_bytes: int = 0
    head: str = ""
    markers: set = field(default_factory=set)

    @property
    def text(self) -> str:
        """The kept lines joined by newlines."""
        return "\n".join(t for _, t in self.lines) + ("\n" if self.lines else "")


def _decode(raw: bytes, where: str, offset: int, hint: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        err = str(_check.utf8_error(where, exc, hint))
        raise ValueError(err.replace(f"offset {exc.start})", f"offset {offset + exc.start})")
                         ) from None


def scan(path, markers, hint: str = "", *, block: int = BLOCK) -> Scan:
    """Stream ``path`` (``-``: stdin) and keep the lines containing any of ``markers``.

    Parameters
    ----------
    path : str or Path, or "-"
    markers : iterable of str (ASCII)
    hint : what the input should be, for the not-UTF-8 message.

    Raises
    ------
    OSError
        the file cannot be opened or read.
    ValueError
        a kept line, or the head, is not UTF-8.
    """
    marks = [m.encode("ascii") for m in markers]
    where = "<stdin>" if str(path) == "-" else str(path)
    out = Scan(where)
    fh = sys.stdin.buffer if str(path) == "-" else open(path, "rb")
    head = bytearray()
    tail = b""
    lineno = 0  # lines before the current block
    offset = 0  # bytes before the current block
    try:
        while True:
            chunk = fh.read(block)
            data = tail + chunk
            if not chunk:
                if not data:
                    break
                cut = len(data)
            else:
                cut = data.rfind(b"\n") + 1
                if cut == 0:  # one line longer than a block: keep reading
                    tail = data
                    continue
            part, tail = data[:cut], data[cut:]
            if len(head) < HEAD:
                head += part[:HEAD - len(head)]
            hits = set()
            for m in marks:
                i = part.find(m)
                if i >= 0:
                    out.markers.add(m.decode())
                while i >= 0:
                    start = part.rfind(b"\n", 0, i) + 1
                    end = part.find(b"\n", i)
                    end = len(part) if end < 0 else end
                    hits.add((start, end))
                    i = part.find(m, end)
            prev, before = 0, 0
            for start, end in sorted(hits):
                before += part.count(b"\n", prev, start)
                prev = start
                text = _decode(part[start:end], where, offset + start, hint)
                out.lines.append((lineno + before + 1, text.rstrip("\r")))
            lineno += part.count(b"\n") + (0 if part.endswith(b"\n") else 1)
            offset += len(part)
            if not chunk:
                break
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    out.n_lines, out.n_bytes = lineno, offset
    cut = head.rfind(b"\n") + 1 if len(head) >= HEAD else len(head)
    out.head = _decode(bytes(head[:cut or len(head)]), where, 0, hint)
    return out
