"""Read a large text file once, in blocks, keeping only the lines a reader needs.

A ``/metrics`` scrape or a server log can be hundreds of MB, of which the spec-decode lines
are usually a few kB. :func:`scan` reads the file in 8 MB blocks and finds the lines that
contain one of the given byte markers (found by ``bytes.find``, so the search runs in C), with
their line numbers, plus the first 64 kB (to name the format when nothing matched). It holds the
first :data:`KEEP` characters of those lines; a file with more (one of only spec-decode lines)
is read again from where holding stopped when a reader asks for its lines
(:meth:`Scan.kept`), so that a reader that folds them as they come holds one block, whatever
the share of the file's lines that match. Standard input cannot be read twice: its part past
the held lines is copied to a temporary file as it is read.

Only the kept lines and the head are decoded as UTF-8 (the rest is never looked at); a bad
byte there raises the ValueError of :func:`specnb._check.utf8_error`.

Layer L0: imports only :mod:`specnb._check`.
"""

from __future__ import annotations

import re
import sys
import tempfile
from dataclasses import dataclass, field

from . import _check

__all__ = ["Scan", "scan", "BLOCK", "HEAD", "KEEP"]

BLOCK = 8 << 20
HEAD = 64 << 10
#: Characters of kept lines :func:`scan` holds in memory; past them the file is read again.
KEEP = 8 << 20


@dataclass
class Scan:
    """What :func:`scan` found in one file.

    Attributes
    ----------
    where : the file's name ("<stdin>" for -).
    n_lines, n_bytes : the whole file's size.
    head : the first :data:`HEAD` bytes, decoded (cut at a line end when there is one).
    markers : the markers that matched at least one line.
    held : the first kept lines, (line number from 1, text without its end of line), all of
        them when ``rest`` is None.
    rest : None, or where reading resumes for the kept lines past ``held``: (the file's name,
        or the temporary copy of standard input; where to seek in it; the file offset and the
        lines before that point): see :meth:`kept`.
    """

    where: str
    n_lines: int = 0
    n_bytes: int = 0
    head: str = ""
    markers: set = field(default_factory=set)
    held: list = field(default_factory=list, repr=False)
    rest: tuple | None = field(default=None, repr=False)
    marks: tuple = field(default=(), repr=False)
    hint: str = field(default="", repr=False)
    block: int = field(default=BLOCK, repr=False)
    count: int | None = field(default=None, repr=False)  # kept lines, once known

    @property
    def has_kept(self) -> bool:
        """Whether any line holds a marker."""
        return bool(self.held) or self.rest is not None

    @property
    def n_kept(self) -> int:
        """How many lines hold a marker: counted as :meth:`kept` reads them past the held
        ones (so known once a reader has read them all; else counted here, reading them)."""
        if self.count is None:
            for _ in self.kept():
                pass
        return self.count

    def kept(self):
        """The kept lines in file order, (line number, text), as an iterator: the held ones,
        then (when the file had more than :data:`KEEP` bytes of them) the rest read again, a
        block at a time, up to the size the scan saw. Raises OSError, ValueError as
        :func:`scan`."""
        yield from self.held
        if self.rest is None:
            return
        source, seek, offset, lineno = self.rest
        fh = source if not isinstance(source, str) else open(source, "rb")
        n = len(self.held)
        try:
            fh.seek(seek)
            for part, at in _parts(fh, self.block, self.n_bytes - offset):
                for line in _lines_of(part, self.marks, self.where, offset + at, self.hint,
                                      lineno):
                    n += 1
                    yield line
                lineno += _count_lines(part)
            self.count = n
        finally:
            if isinstance(source, str):
                fh.close()

    @property
    def lines(self) -> list:
        """Every kept line, as a list (memory O(kept lines): readers iterate :meth:`kept`)."""
        return list(self.kept())

    @property
    def text(self) -> str:
        """The kept lines joined by newlines (memory O(kept lines))."""
        return "".join(t + "\n" for _, t in self.kept())


def _decode(raw: bytes, where: str, offset: int, hint: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        err = str(_check.utf8_error(where, exc, hint))
        raise ValueError(err.replace(f"offset {exc.start})", f"offset {offset + exc.start})")
                         ) from None


def _parts(fh, block: int, limit: int | None = None):
    """``(part, offset in the stream read)`` of ``fh`` read in ``block``-byte reads, each part
    cut after a line end (the last one as it ends); ``limit``: read at most that many bytes.
    A lone ``\r`` (old Mac / a terminal's progress-style log) is a line end too, as Python's
    universal newlines read it: it comes back as ``\n`` (one byte for one, so offsets hold);
    ``\r\n`` stays as it is (trial 6 C11)."""
    tail = b""
    at = 0
    left = limit
    while True:
        want = block if left is None else min(block, left)
        chunk = fh.read(want) if want > 0 else b""
        if left is not None:
            left -= len(chunk)
        data = tail + chunk
        hold = b""
        if b"\r" in data:
            if chunk and data.endswith(b"\r"):  # maybe a \r\n cut between two reads
                data, hold = data[:-1], b"\r"
            data = _LONE_CR.sub(b"\n", data)
        if not chunk:
            if data:
                yield data, at
            return
        cut = data.rfind(b"\n") + 1
        if cut == 0:  # one line longer than a block: keep reading
            tail = data + hold
            continue
        yield data[:cut], at
        at += cut
        tail = data[cut:] + hold


#: A carriage return not followed by a line feed (read as a line end by :func:`_parts`).
_LONE_CR = re.compile(rb"\r(?!\n)")


def _count_lines(part: bytes) -> int:
    return part.count(b"\n") + (0 if part.endswith(b"\n") else 1)


def _spans(part: bytes, marks) -> list:
    """The sorted (start, end) byte spans of the lines of ``part`` holding one of ``marks``."""
    hits = set()
    for m in marks:
        i = part.find(m)
        while i >= 0:
            start = part.rfind(b"\n", 0, i) + 1
            end = part.find(b"\n", i)
            end = len(part) if end < 0 else end
            hits.add((start, end))
            i = part.find(m, end)
    return sorted(hits)


def _lines_of(part: bytes, marks, where: str, offset: int, hint: str, lineno: int):
    """(line number, text) of the kept lines of ``part`` (``offset``: its first byte's in the
    file, ``lineno``: lines before it). A part where a quarter of the lines or more hold a
    marker, and that is UTF-8, is decoded at once and split (faster than finding each line)."""
    present = [m for m in marks if m in part]
    if present and sum(part.count(m) for m in present) * 4 >= part.count(b"\n") + 1:
        try:
            text = part.decode("utf-8")
        except UnicodeDecodeError:
            pass  # the lines one by one: the error names the first kept line that is not
        else:
            yield from _split_lines(text, [m.decode() for m in present], lineno)
            return
    prev, before = 0, 0
    for start, end in _spans(part, marks):
        before += part.count(b"\n", prev, start)
        prev = start
        text = _decode(part[start:end], where, offset + start, hint)
        yield lineno + before + 1, text.rstrip("\r")


def _split_lines(text: str, marks: list, lineno: int):
    """(line number, text) of the lines of ``text`` holding one of ``marks`` (str)."""
    if len(marks) == 1:
        mark = marks[0]
        for i, line in enumerate(text.split("\n"), lineno + 1):
            if mark in line:
                yield i, line.rstrip("\r")
        return
    for i, line in enumerate(text.split("\n"), lineno + 1):
        for mark in marks:
            if mark in line:
                yield i, line.rstrip("\r")
                break


def scan(path, markers, hint: str = "", *, block: int = BLOCK, keep: int | None = None
         ) -> Scan:
    """Stream ``path`` (``-``: stdin) and find the lines containing any of ``markers``.

    Parameters
    ----------
    path : str or Path, or "-"
    markers : iterable of str (ASCII)
    hint : what the input should be, for the not-UTF-8 message.
    block : bytes read at a time.
    keep : characters of kept lines held in memory (None: :data:`KEEP`); past them,
        :meth:`Scan.kept` reads the file again (standard input: its copy).

    Raises
    ------
    OSError
        the file cannot be opened or read.
    ValueError
        a kept line, or the head, is not UTF-8.
    """
    keep = KEEP if keep is None else keep
    marks = tuple(m.encode("ascii") for m in markers)
    stdin = str(path) == "-"
    where = "<stdin>" if stdin else str(path)
    out = Scan(where, marks=marks, hint=hint, block=block)
    fh = sys.stdin.buffer if stdin else open(path, "rb")
    head = bytearray()
    lineno = 0  # lines before the current part
    offset = 0  # bytes before the current part
    held = 0  # characters of kept lines held
    spool = None  # standard input from the first line not held
    try:
        for part, offset in _parts(fh, block):
            if len(head) < HEAD:
                head += part[:HEAD - len(head)]
            for m in marks:
                if part.find(m) >= 0:
                    out.markers.add(m.decode())
            lines = _lines_of(part, marks, where, offset, hint, lineno)  # decoded: checked
            if out.rest is None:
                lines = list(lines)
                size = sum(len(t) for _, t in lines)
                if held + size <= keep:
                    out.held += lines
                    held += size
                else:  # too many to hold: from this part on, read again when asked
                    if stdin:
                        spool = tempfile.TemporaryFile(prefix="specnb-stdin-")
                    out.rest = (spool or str(path), 0 if stdin else offset, offset, lineno)
            if spool is not None:
                spool.write(part)
            if not isinstance(lines, list):  # past the held lines: check they are UTF-8
                try:  # all of the part is (its lines then are: a line end is one byte)
                    part.decode("utf-8")
                except UnicodeDecodeError:
                    for _ in lines:  # raises at the first kept line that is not
                        pass
            lineno += _count_lines(part)
            offset += len(part)
    finally:
        if not stdin:
            fh.close()
    if spool is not None:
        spool.flush()
    out.n_lines, out.n_bytes = lineno, offset
    if out.rest is None:
        out.count = len(out.held)
    cut = head.rfind(b"\n") + 1 if len(head) >= HEAD else len(head)
    out.head = _decode(bytes(head[:cut or len(head)]), where, 0, hint)
    return out
