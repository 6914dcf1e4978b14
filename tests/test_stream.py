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
