"""Bad input on the command line: no traceback, the documented exit status."""

from __future__ import annotations

import io
import json
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


# Trial 6 (T6-T1..T6, C2..C4): a 400-digit integer fed to every reader and flag. Each is bad
# input: exit 2, one line, no traceback, naming the flag, the config field (and its file) or
# the log line / CSV row that holds it; never another flag (a config's max_position_embeddings
# is not --context) nor "a missing value".
BIG = "9" * 400
SPEC = """--speculative-config '{"method": "ngram", "num_speculative_tokens": 3}'"""
V1_LINE = ("INFO 08-05 12:25:03 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
           "2.91, Accepted throughput: 0.72 tokens/s, Drafted throughput: 2.64 tokens/s, "
           "Accepted: 44 tokens, Drafted: 161 tokens, Avg Draft acceptance rate: 27.3%\n")
V0_LINE = ("INFO Speculative metrics: Draft acceptance rate: 0.500, System efficiency: 0.600, "
           "Number of speculative tokens: 3, Number of accepted tokens: 100, Number of draft "
           "tokens: 200, Number of emitted tokens: 150.\n")
LLAMA = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
         "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
         "vocab_size": 128256, "max_position_embeddings": 131072}
HEAD = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096,
        "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
        "vocab_size": 128256, "draft_vocab_size": 32000}
PLAN = ["plan", "--gpu", "H100", "--model", "Llama-3.1-8B", "--draft", "eagle3", "--context",
        "4000", "--batch", "1", "--gamma", "3", "--alpha", "0.7"]
SIM = ["simulate", "--gpu", "L4", "--model", "Llama-3.1-8B", "--draft", "ngram", "--gamma", "3",
       "--tau", "1.6", "--input-len", "1000", "--output-len", "64", "--num-prompts", "16",
       "--concurrency", "4"]
CSV = "role,batch_size,context,query_tokens,ms\n"


def _with(argv, flag, value):
    """``argv`` with ``flag``'s value replaced by ``value`` (or the pair appended)."""
    argv = list(argv)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
        return argv
    return argv + [flag, value]


def _config(**change):
    return json.dumps({**LLAMA, **{k: int(v) for k, v in change.items()}})


@pytest.mark.parametrize("argv, files, names", [
    # config check --serve: the line's integer flags (T6-T2, T6-T3)
    (["config", "check", "--serve", f"vllm serve meta-llama/Llama-3.1-8B --max-num-seqs {BIG}",
      "--gpu", "A100"], {}, ["--max-num-seqs", "too large"]),
    (["config", "check", "--serve", f"vllm serve meta-llama/Llama-3.1-8B --max-model-len {BIG} "
      f"{SPEC}", "--gpu", "A100"], {}, ["--max-model-len", "too large"]),
    (["config", "check", "--serve", f"vllm serve meta-llama/Llama-3.1-8B -tp {BIG} {SPEC}",
      "--gpu", "A100"], {}, ["-tp", "too large"]),
    (["config", "check", "--serve", f"vllm serve meta-llama/Llama-3.1-8B --max-model-len {BIG}k"],
     {}, ["--max-model-len", "too large"]),
    # simulate's integer flags (T6-T4)
    *[(_with(SIM, flag, BIG), {}, [flag, "too large"]) for flag in (
        "--num-prompts", "--input-len", "--output-len", "--concurrency", "--max-num-seqs",
        "--max-num-batched-tokens")],
    # plan's flags, checked by the library (T6-C2: "too large", not "non-ragged shape")
    *[(_with(PLAN, flag, BIG), {}, [flag, "too large"]) for flag in ("--context", "--gpus")],
    *[(_with(PLAN, flag, BIG), {}, [flag, "(400 digits)"]) for flag in ("--batch", "--gamma")],
    (PLAN + ["--input-len", BIG, "--output-len", "64"], {}, ["--input-len", "too large"]),
    # vLLM log lines and the offline printout (T6-T5, T6-C4)
    (["metrics", "@log"], {"log": V1_LINE.replace("Drafted: 161", f"Drafted: {BIG}")},
     ["line 1", "Drafted:", "too large"]),
    (["metrics", "@log"], {"log": V1_LINE.replace("Accepted: 44", f"Accepted: {BIG}")},
     ["line 1", "Accepted:", "too large"]),
    (["metrics", "@log"], {"log": V1_LINE.replace("length: 2.91", f"length: {BIG}")},
     ["line 1", "Mean acceptance length:"]),
    (["metrics", "@log"], {"log": V0_LINE.replace("draft tokens: 200", f"draft tokens: {BIG}")},
     ["line 1", "Number of draft tokens:", "too large"]),
    (["metrics", "@log"], {"log": f"num_drafts: {BIG}\nnum_draft_tokens: 5\n"
                                  "num_accepted_tokens: 3\n"}, ["num_drafts", "too large"]),
    # config.json, the one reader: the field and its file, never --context (T6-T6, T6-C2)
    (_with(PLAN, "--model", "@cfg.json"), {"cfg.json": _config(num_hidden_layers=BIG)},
     ["cfg.json", "num_hidden_layers", "too large"]),
    (_with(PLAN, "--model", "@cfg.json"), {"cfg.json": _config(max_position_embeddings=BIG)},
     ["cfg.json", "max_position_embeddings", "too large"]),
    (_with(PLAN, "--model", "@cfg.json"), {"cfg.json": _config(vocab_size=BIG)},
     ["cfg.json", "vocab_size", "too large"]),
    (PLAN + ["--draft-config", "@head.json"],
     {"head.json": json.dumps({**HEAD, "num_hidden_layers": int(BIG)})},
     ["head.json", "num_hidden_layers", "too large"]),
    # replay's flags (found beside the trial's: --prompt-lookup-max was named as -min)
    *[(["replay", "@r.jsonl", "--method", "ngram", flag, BIG],
       {"r.jsonl": '{"prompt_ids": [1, 2, 3, 1, 2], "response_ids": [3], "temperature": 0}\n'},
       [flag, "(400 digits)"]) for flag in ("--gamma", "--prompt-lookup-max", "--max-model-len")],
    # calibration CSV cells: the row and column, "too large", not "a missing value" (T6-C3)
    (PLAN + ["--calibrate", "@c.csv"], {"c.csv": CSV + f"target,1,100,1,{BIG}\n"},
     ["c.csv", "row 2", "ms", "too large"]),
    (PLAN + ["--calibrate", "@c.csv"], {"c.csv": CSV + f"target,{BIG},100,1,5\n"},
     ["c.csv", "row 2", "batch_size", "too large"]),
])
def test_a_400_digit_integer_is_bad_input_naming_what_holds_it(capsys, tmp_path, argv, files,
                                                                names):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    args = [str(tmp_path / a[1:]) if a.startswith("@") else a for a in argv]
    code, out, err = run(capsys, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, err)
    assert "Traceback" not in err and "Error:" not in err and BIG not in err, err
    for name in names:
        assert name in err, (name, err)
    assert "missing value" not in err and ("--context" in names or "--context" not in err), err


@pytest.mark.parametrize("key, code, finding", [
    ("num_speculative_tokens", 0, "num-speculative-tokens-huge"),  # vLLM takes any int > 0
    ("suffix_decoding_min_token_prob", 1, "number-wrong-type"),  # pydantic's float_type refuses
])
def test_a_400_digit_integer_in_a_speculative_config(capsys, key, code, finding):
    # T6-T1: a formatting OverflowError; a float key given a 400-digit int is what pydantic
    # refuses (ValidationError float_type), not an OverflowError
    cfg = {"method": "suffix", "num_speculative_tokens": 8, key: int(BIG)}
    got, out, err = run(capsys, "config", "check", "--json", json.dumps(cfg))
    assert got == code and not err, (got, err)
    assert finding in [f["code"] for f in json.loads(out)["findings"]]
