"""specnb._numbers: the number limits and their message text, the one home the numpy-free
modules (the CLI, the vLLM serve-line reader) share with :mod:`specnb._check` and the log
reader."""

from __future__ import annotations

import subprocess
import sys

from specnb import _numbers
from specnb._numbers import MAX_EXACT_INT, number_text


def test_max_exact_int_is_the_last_whole_number_a_float64_holds():
    assert float(MAX_EXACT_INT) == MAX_EXACT_INT
    assert float(MAX_EXACT_INT + 1) == float(MAX_EXACT_INT)  # 2**53 + 1 rounds down


def test_number_text_cuts_a_long_number_to_its_ends_and_length():
    assert number_text(12345) == "12345" and number_text("abc") == "'abc'"
    assert number_text(10 ** 400) == "100000000000...0000 (401 digits)"
    assert number_text(-10 ** 400) == "-10000000000...0000 (401 digits)"
    assert number_text("x" * 30) == repr("x" * 24 + "...")


def test_the_module_the_cli_and_the_serve_line_reader_start_without_numpy():
    code = ("import sys, specnb._numbers, specnb.cli, specnb.vllm.serve; "
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False", "a numpy-free reader imported numpy"


def test_the_cli_and_the_vllm_readers_use_this_limit():
    from specnb import cli
    from specnb.vllm import logs, serve

    assert cli.MAX_EXACT_INT is logs.MAX_EXACT_INT is serve.MAX_EXACT_INT \
        is _numbers.MAX_EXACT_INT
    assert cli.too_large(("--gamma", [3, 2 ** 53 + 1])).startswith("--gamma must be at most 2**53")
    assert cli.too_large(("--gamma", [3, 2 ** 53])) is None
