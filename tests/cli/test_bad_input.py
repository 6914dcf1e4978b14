"""Bad input on the command line: no traceback, the documented exit status."""

from __future__ import annotations

import io
import sys

import pytest

from specnb.cli import main
from specnb.vllm import sample_path


NGRAM = '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, ' \
        '"prompt_lookup_max": 5}'


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def usage_exit(capsys, *argv):
    """argparse usage errors exit 2 through SystemExit; return the stderr text."""
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    assert info.value.code == 2
    return capsys.readouterr().err


def bytes_stdin(monkeypatch, data: bytes):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


# =========================================================================== CLI: config
def test_cli_check_edge_values(capsys):
    assert run(capsys, "config", "check", "")[0] == 0
    assert run(capsys, "config", "check", "   ")[0] == 1
    code, out, _ = run(capsys, "config", "check", "[" * 5000)
    assert code == 1 and "nested too deeply" in out
    code, out, _ = run(capsys, "config", "check", "42")
    assert code == 1 and "must be a JSON object" in out


def test_cli_check_non_utf8_stdin(capsys, monkeypatch):
    # stdin is a file specnb reads, not a command-line value vLLM decodes: bad input, exit 2
    # (README; trial 5 C8), naming stdin and the byte
    bytes_stdin(monkeypatch, b'\xff\xfe{"a": 1}')
    code, out, err = run(capsys, "config", "check", "-")
    assert code == 2 and out == "" and "stdin" in err and "0xff" in err


def test_cli_check_big_stdin(capsys, monkeypatch):
    bytes_stdin(monkeypatch, ('{"method": "' + "x" * 1_000_000 + '"}').encode())
    code, out, _ = run(capsys, "config", "check", "-")
    assert code == 1 and "unknown method" in out


def test_cli_check_version_garbage_is_a_usage_error(capsys):
    code, _, err = run(capsys, "config", "check", NGRAM, "--vllm-version", "0.11.0junk")
    assert code == 2 and "vllm_version must be a release" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("argv,words", [
    (["--set", "method=eagle"], "give method with the METHOD argument"),
    (["--set", "num_speculative_tokens=5"], "give num_speculative_tokens with -k"),
    (["--set", "model=x"], "give model with --model"),
    (["--set", "=3"], "non-empty KEY"),
    (["--set", "prompt_lookup_min=2", "--set", "prompt_lookup_min=3"], "given twice"),
    (["--set", "x=" + "[" * 5000], "nested too deeply"),
])
def test_cli_build_set_conflicts_are_usage_errors(capsys, argv, words):
    code, _, err = run(capsys, "config", "build", "ngram", "-k", "4", *argv)
    assert code == 2 and words in err


def test_cli_build_blank_model_is_rejected(capsys):
    code, _, err = run(capsys, "config", "build", "eagle3", "-k", "3", "--model", "")
    assert code == 1 and "blank string" in err


# =========================================================================== CLI: metrics, bench
def test_cli_metrics_files(capsys, tmp_path, monkeypatch):
    empty = tmp_path / "empty.prom"
    empty.write_text("")
    binary = tmp_path / "bin.prom"
    binary.write_bytes(b"\xff\xfe\x00")
    after, before = sample_path("metrics_after.prom"), sample_path("metrics_before.prom")
    assert run(capsys, "metrics", str(tmp_path / "missing.prom"))[0] == 2
    code, _, err = run(capsys, "metrics", str(tmp_path))
    assert code == 2 and "Is a directory" in err
    code, _, err = run(capsys, "metrics", str(empty))
    assert code == 2 and "empty" in err
    code, _, err = run(capsys, "metrics", str(binary))
    assert code == 2 and "not UTF-8 text" in err
    code, _, err = run(capsys, "metrics", str(after), str(before))
    assert code == 2 and "swapped" in err
    assert run(capsys, "metrics", "-", "-")[0] == 2
    assert "positive integer" in usage_exit(capsys, "metrics", str(after), "-k", "0")


def test_cli_metrics_reports_skipped_log_lines(capsys, tmp_path):
    log = tmp_path / "mixed.log"
    log.write_text(sample_path("spec_decode_current.log").read_text()
                   + "INFO SpecDecoding metrics: Mean acceptance length: 2.00, Accepted: 1 tokens, "
                     "Drafted: 4 tokens, Per-position acceptance rate: 0.5,,0.3\n")
    code, out, _ = run(capsys, "metrics", str(log))
    assert code == 0 and "note: skipped unreadable spec-decode line(s) [2]" in out


def test_cli_bench_files(capsys, tmp_path):
    on = str(sample_path("bench_on.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"output_throughput": "fast"}')
    code, _, err = run(capsys, "bench", on, str(tmp_path))
    assert code == 2 and "Is a directory" in err
    code, _, err = run(capsys, "bench", on, str(bad))
    assert code == 2 and "output_throughput must be a finite number" in err
    assert "in [0, 1)" in usage_exit(capsys, "bench", on, on, "--tolerance", "2")
    assert "in [0, 1)" in usage_exit(capsys, "bench", on, on, "--tolerance", "nan")


# =========================================================================== CLI: pipes
def test_cli_output_into_a_closed_pipe_is_quiet(tmp_path):
    import subprocess

    big = tmp_path / "big.json"
    big.write_text('{"method": "' + "x" * 1_000_000 + '"}')  # output far beyond a pipe buffer
    with big.open("rb") as stdin:
        proc = subprocess.Popen([sys.executable, "-m", "specnb", "config", "check", "-"],
                                stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout.read(10) == b"error: met"
        proc.stdout.close()  # like `| head -c 10`
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err


HUGE = "1" + "0" * 400  # an integer no float holds: math.isfinite and pandas raise on it


@pytest.mark.parametrize("name, text, argv", [
    ("m.prom", "# TYPE vllm:spec_decode_num_drafts_total counter\n"
               f'vllm:spec_decode_num_drafts_total{{engine="0"}} {HUGE}\n', ["metrics"]),
    ("s.log", f"Decode batch. #running-req: 1, #token: 9, token usage: 0.01, accept len: {HUGE}, "
              "gen throughput (token/s): 10\n", ["metrics"]),
    ("s2.log", f"Decode batch. #running-req: {HUGE}, #token: 9, token usage: 0.01, accept len: "
               "2.5, gen throughput (token/s): 10\n", ["metrics"]),
    ("b.json", f'{{"completed": {HUGE}, "output_throughput": 5}}', ["bench", "@", "@"]),
    ("r.jsonl", f'{{"prompt_len": {HUGE}, "output_len": 3}}\n',
     ["simulate", "--gpu", "H100", "--model", "Llama-3.1-8B", "--draft", "eagle3", "--gamma", "3",
      "--tau", "2.5", "--concurrency", "2", "--requests"]),
    ("t.jsonl", f'{{"timestamp": {HUGE}, "prompt_len": 10, "output_len": 3}}\n',
     ["simulate", "--gpu", "H100", "--model", "Llama-3.1-8B", "--draft", "eagle3", "--gamma", "3",
      "--tau", "2.5", "--requests"]),
    ("c.csv", f"role,batch_size,context,query_tokens,ms\ntarget,1,100,1,{HUGE}\n",
     ["plan", "--gpu", "H100", "--model", "Llama-3.1-8B", "--draft", "eagle3", "--context", "100",
      "--batch", "1", "--gamma", "3", "--alpha", "0.7", "--calibrate"]),
    ("c2.csv", f"role,batch_size,context,query_tokens,ms\ntarget,{HUGE},100,1,5\n",
     ["plan", "--gpu", "H100", "--model", "Llama-3.1-8B", "--draft", "eagle3", "--context", "100",
      "--batch", "1", "--gamma", "3", "--alpha", "0.7", "--calibrate"]),
])
def test_numbers_too_large_for_a_float_are_bad_input_not_a_traceback(capsys, tmp_path, name,
                                                                    text, argv):
    # bigscan's finding: a counter of 400 digits made `metrics` raise OverflowError
    path = tmp_path / name
    path.write_text(text)
    args = [str(path) if a == "@" else a for a in argv]
    if "@" not in argv:
        args.append(str(path))
    code, out, err = run(capsys, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and name in err, (code, err)
    assert "Traceback" not in err and "OverflowError" not in err
