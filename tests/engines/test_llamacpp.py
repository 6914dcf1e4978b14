"""specnb.engines.llamacpp: llama-server's draft acceptance lines in specnb's tau and rate."""

from __future__ import annotations

from pathlib import Path

import pytest

from specnb.engines.llamacpp import read_llamacpp_log

CASES = Path(__file__).resolve().parents[1] / "cases" / "llamacpp"


def test_pr_24536_line_gives_rate_tau_and_positions():
    got = read_llamacpp_log((CASES / "server.log").read_text().splitlines())
    assert got.acceptance_rate == pytest.approx(167 / 259)
    # steps estimated from the printed 2.92; the statistics line of the same run says 87
    assert got.counts["num_drafts"] == pytest.approx(87, rel=0.01)
    assert got.tau == pytest.approx(2.92)
    assert got.per_position == pytest.approx([0.805, 0.632, 0.483])
    assert got.items == 1  # the statistics line is not a request line


def test_old_lines_give_the_rate_only():
    got = read_llamacpp_log((CASES / "server_old.log").read_text().splitlines())
    assert got.items == 2 and got.acceptance_rate == pytest.approx(13 / 19)
    assert got.tau != got.tau and got.counts == {}


@pytest.mark.parametrize("line, match", [
    ("draft acceptance = 0.50000 (   9 accepted /   4 generated)", "exceeds"),
    ("draft acceptance = 0.90000 (   1 accepted /   4 generated)", "disagrees"),
    ("nothing here", "no llama.cpp")])
def test_damaged_lines_are_refused(line, match):
    with pytest.raises(ValueError, match=match):
        read_llamacpp_log([line])
