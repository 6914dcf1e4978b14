"""specnb._stream: a file read in blocks, only the marked lines kept, with their numbers."""

from __future__ import annotations

import pytest

from specnb._stream import scan


@pytest.mark.parametrize("block", [5, 16, 1 << 20])
def test_marked_lines_keep_their_numbers_across_blocks(tmp_path, block):
    lines = ["plain", "a MARK b", "x", "another MARK", "", "OTHER here", "tail MARK"]
    path = tmp_path / "f.txt"
    path.write_text("\n".join(lines))  # no newline at the end
    got = scan(path, ["MARK", "OTHER"], block=block)
    want = [(i + 1, t) for i, t in enumerate(lines) if "MARK" in t or "OTHER" in t]
    assert got.lines == want
    assert got.n_lines == len(lines) and got.n_bytes == path.stat().st_size
    assert got.markers == {"MARK", "OTHER"} and got.head == path.read_text()


def test_a_bad_byte_in_a_kept_line_names_its_offset(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"ok\n" + b"MARK \xff\n")
    with pytest.raises(ValueError, match="byte 0xff at offset 8"):
        scan(path, ["MARK"])
    path.write_bytes(b"ok\n" * 10 + b"\xfe no marker\n" + b"MARK fine\n")
    with pytest.raises(ValueError, match="byte 0xfe"):  # the head is decoded too
        scan(path, ["MARK"])


# ------------------------------------------- more kept lines than held (issue 26, bigscan)
def _many(tmp_path, n=400):
    lines = [f"MARK line {i} " + "x" * (i % 37) if i % 3 else f"plain {i}" for i in range(n)]
    path = tmp_path / "many.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, [(i + 1, t) for i, t in enumerate(lines) if "MARK" in t]


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
@pytest.mark.parametrize("keep", [0, 100, 5000, 1 << 30])
def test_lines_past_the_held_ones_are_read_again_in_order(tmp_path, block, keep):
    path, want = _many(tmp_path)
    got = scan(path, ["MARK"], block=block, keep=keep)
    # counted as a reader reads them past the held ones: no pass of its own
    assert (got.count is None) == (got.rest is not None) and got.has_kept
    assert list(got.kept()) == want and got.count == len(want)
    assert list(got.kept()) == want  # re-readable
    assert got.lines == want and got.n_kept == len(want)
    assert sum(len(t) for _, t in got.held) <= keep
    assert (got.rest is None) == (len(got.held) == len(want))
    assert got.text == "".join(t + "\n" for _, t in want)


def test_a_file_past_its_held_lines_is_read_only_up_to_the_size_scanned(tmp_path):
    path, want = _many(tmp_path)
    got = scan(path, ["MARK"], block=64, keep=100)
    with open(path, "a") as fh:  # a log still being written
        fh.write("MARK appended later\n")
    assert list(got.kept()) == want


def test_stdin_past_its_held_lines_is_copied_to_be_read_again(tmp_path, monkeypatch):
    import io
    import sys

    path, want = _many(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    got = scan("-", ["MARK"], block=64, keep=300)
    assert got.rest is not None and got.where == "<stdin>"
    assert list(got.kept()) == want and list(got.kept()) == want


def test_a_bad_byte_past_the_held_lines_is_found_by_the_scan_itself(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"MARK ok\n" * 50 + b"MARK \xff\n")
    with pytest.raises(ValueError, match="byte 0xff at offset 405"):
        scan(path, ["MARK"], block=64, keep=10)


@pytest.mark.parametrize("seed", range(6))
def test_dense_and_sparse_parts_keep_the_same_lines(tmp_path, seed):
    # a part where many lines hold a marker is decoded at once and split; one where few do is
    # searched line by line: either way, the lines of the plain definition, with their numbers
    import random

    rng = random.Random(seed)
    vocab = [b"MARK a", b"x MARK \xc3\xa9 b\r", b"OTHER c", b"plain", b"", b"p \xc3\xa9\r",
             b"MARKOTHER", b"no \xff here"]  # the bad byte in a line no marker keeps
    weights = [rng.random() for _ in vocab]
    head = [b"plain head line"] * 5000  # the head (64 kB, decoded whole) is clean
    raw = b"\n".join(head + rng.choices(vocab, weights, k=rng.randint(1, 300)))
    path = tmp_path / "f.txt"
    path.write_bytes(raw)
    want = [(i + 1, line.decode().rstrip("\r")) for i, line in enumerate(raw.split(b"\n"))
            if b"MARK" in line or b"OTHER" in line]
    for block in (8, 50, 100_000, 1 << 20):
        for keep in (0, 1 << 30):
            got = scan(path, ["MARK", "OTHER"], block=block, keep=keep)
            assert got.lines == want and got.n_kept == len(want)


@pytest.mark.parametrize("block", [1, 2, 5, 16, 1 << 20])
@pytest.mark.parametrize("keep", [0, 1 << 30])
def test_carriage_returns_alone_end_lines_and_crlf_stays_one_end(tmp_path, block, keep):
    """T6-C11: a log whose lines end in a lone \\r was one line; Python's universal newlines
    read \\r, \\n and \\r\\n each as one line end, and so does the scan (re-read too)."""
    lines = ["plain", "a MARK b", "x", "another MARK", "", "tail MARK"]
    path = tmp_path / "f.txt"
    ends = ["\r", "\r\n", "\r", "\n", "\r\n"]  # a \r\n cut between reads at small blocks
    path.write_bytes("".join(t + e for t, e in zip(lines, ends + [""])).encode())
    got = scan(path, ["MARK"], block=block, keep=keep)
    want = [(i + 1, t) for i, t in enumerate(lines) if "MARK" in t]
    assert list(got.kept()) == want and got.lines == want
    assert got.n_lines == len(lines) and got.n_bytes == path.stat().st_size
    cr_only = tmp_path / "cr.txt"
    cr_only.write_bytes(b"MARK 1\rMARK 2\rplain\rMARK 3\r")
    got = scan(cr_only, ["MARK"], block=block, keep=keep)
    assert got.lines == [(1, "MARK 1"), (2, "MARK 2"), (4, "MARK 3")] and got.n_lines == 4
