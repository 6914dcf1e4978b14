"""specnb config / metrics / bench (specnb.cli.vllm): exit codes and output."""

from __future__ import annotations

import math
import re
from pathlib import Path
import io
import json
import shlex
import subprocess
import sys

import pytest

from specnb.advise import acceptance_advice, compare_bench, thin_window
from specnb.cli import main
from specnb.notes import codes, messages
from specnb.vllm import read_acceptance, sample_path
from specnb.vllm.logs import read_offline_printout
from specnb.vllm.metrics import FORMATS


# ----------------------------------------------------------------- edge and bad input (r2)
from tests.vllm_support import CASES, FIELD, SCRAPE as _SCRAPE, field  # noqa: F401


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def advice_text(stats, c=None) -> str:
    return " ".join(messages(acceptance_advice(stats, c)))


ARTICLE = ('{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, '
           '"prompt_lookup_max": 5}')


def test_huge_counters_are_refused_not_a_traceback_or_a_10_to_the_298_tau(tmp_path, capsys):
    from specnb.cli import main
    from specnb.vllm.metrics import acceptance_rate_ci

    low, high = acceptance_rate_ci(1e300, 1e308)  # the fallback formula in floats
    assert 0 <= low <= high <= 1e-7
    p = tmp_path / "m.prom"
    p.write_text(_SCRAPE.format(d=100, t="1e308", a="1e300"))
    assert main(["metrics", str(p)]) == 2
    err = capsys.readouterr().err
    assert "draft tokens / drafts = 1e+308 / 100 = 1e+306 tokens per step is no draft" in err


def test_a_window_that_accepted_without_drafting_is_inconsistent_not_empty(tmp_path, capsys):
    from specnb.cli import main

    before, after = tmp_path / "a.prom", tmp_path / "b.prom"
    before.write_text(_SCRAPE.format(d=100, t=300, a=150))
    after.write_text(_SCRAPE.format(d=100, t=300, a=500))
    assert main(["metrics", str(before), str(after)]) == 2
    err = capsys.readouterr().err
    assert "accepted tokens (350) exceed draft tokens (0)" in err, err


def test_a_k_beyond_2_to_the_53_is_a_usage_error(tmp_path, capsys):
    from specnb.cli import main

    p = tmp_path / "m.prom"
    p.write_text(_SCRAPE.format(d=100, t=300, a=150))
    with pytest.raises(SystemExit) as info:
        main(["metrics", str(p), "-k", str(10 ** 21)])
    assert info.value.code == 2
    assert "must be at most 2**53" in capsys.readouterr().err


def test_offline_printout_own_input_with_positions(capsys, tmp_path):
    text = ("total_num_output_tokens: 900\n" + "-" * 50 + "\nnum_drafts: 200\n"
            "num_draft_tokens: 600\nnum_accepted_tokens: 300\nmean acceptance length: 2.50\n"
            + "-" * 50 + "\nacceptance at token 0: 0.70\nacceptance at token 1:0.50\n"
            "acceptance at token 2: 0.30\n")
    counts = read_offline_printout(text)
    assert (counts.drafts, counts.draft_tokens, counts.accepted_tokens) == (200, 600, 300)
    assert counts.accepted_per_position == pytest.approx((140, 100, 60))
    path = tmp_path / "printout.txt"
    path.write_text(text)
    code, out, _ = run(capsys, "metrics", str(path))
    assert code == 0 and "spec_decode.py" in out and "2.50" in out
    with pytest.raises(ValueError, match="disagrees"):
        read_offline_printout(text.replace("2.50", "2.80"))


# --------------------------------------------------------------------------- v0.8 lines
def test_v08_line_without_tau_needs_k(capsys):
    s = read_acceptance(field("metrics_v08_no_tau.log")).stats
    assert f"{100 * s.acceptance_rate:.0f}" == "100"
    assert math.isnan(s.mean_acceptance_length) and s.num_speculative_tokens is None
    assert "needs" in advice_text(s) and "-k" in advice_text(s)
    # without k the draft count is unknown: the 66 tokens are 66 / k drafts, never 385
    assert thin_window(s)
    text = advice_text(s)
    assert "66 draft tokens and no draft count in this input" in text
    assert "66 at k = 1, 22 at k = 3" in text and "reach at no k" in text and "pass -k" in text
    with_k = read_acceptance(field("metrics_v08_no_tau.log"), num_speculative_tokens=3).stats
    assert with_k.counts.drafts == 22
    assert f"{with_k.mean_acceptance_length:.2f}" == "4.00"
    code, out, _ = run(capsys, "metrics", str(FIELD / "metrics_v08_no_tau.log"), "-k", "3")
    assert code == 0 and "4.00" in out and "22" in out
    assert out.startswith("source: 1 log line; ")  # not "1 log lines"
    # at -k 1 the 100 % acceptance is judged by Corollary 3.9 (alpha > c, c assumed and named);
    # the best gamma of Theorem 3.8 at alpha 1 is optimal_gamma's search limit, and it says so
    code, out, _ = run(capsys, "metrics", str(FIELD / "metrics_v08_no_tau.log"), "-k", "1")
    assert code == 0 and "alpha > c, so it pays (Corollary 3.9)" in out
    assert "0.05 assumed" in out and "search limit" in out and "50%" not in out


# --------------------------------------------------------------------------- V0 cumulative
def test_v0_cumulative_lines_use_the_last_and_the_header_says_so(capsys):
    r = read_acceptance(field("metrics_v0_cumulative.log"))
    assert (r.stats.counts.draft_tokens, r.stats.counts.drafts) == (15, 3)
    header = " ".join(r.header)
    assert "cumulative" in header and "last line" in header and "summed" not in header
    code, out, _ = run(capsys, "metrics", str(FIELD / "metrics_v0_cumulative.log"))
    assert code == 0 and "cumulative" in out and "lines summed" not in out
    # the line prints "Number of accepted tokens: 1", yet no prefix was kept (emitted 3 = steps
    # 3): the advice says which "accepted" it means instead of contradicting the log
    assert "Number of accepted tokens: 1" in field("metrics_v0_cumulative.log")
    assert r.stats.counts.accepted_tokens == 0
    assert "no draft token was accepted as a prefix (15 drafted; V0 may still print" in out


def test_per_position_table_counts_positions_as_the_advice_does(capsys):
    # the advice names "positions 6-7 of 7" (from 1); the table shows that count beside vLLM's
    # position label (from 0), so the two cannot be read against each other wrongly
    code, out, _ = run(capsys, "metrics", str(FIELD / "metrics_few_drafts.log"))
    assert code == 0 and "positions 6-7 of 7" in out
    header = next(line for line in out.splitlines() if "acceptance accepted" in line)
    assert header.split()[:4] == ["draft", "position", "vLLM", "position"]
    rows = {int(line.split()[0]): line.split() for line in out.splitlines()
            if re.match(r"\s+[1-7]\s+[0-6]\s+\d", line)}
    assert sorted(rows) == list(range(1, 8)) and rows[6][1:3] == ["5", "7.71"]


# --------------------------------------------------------------------------- bad input
def test_unreadable_input_names_the_formats(capsys, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("this is not a metrics file {\n")
    code, _, err = run(capsys, "metrics", str(path))
    assert code == 2 and "spec_decode.py" in err and "Speculative metrics:" in err
    assert "Prometheus" in FORMATS
    code, _, err = run(capsys, "metrics", str(FIELD / "metrics_v08_no_tau.log"),
                       str(FIELD / "metrics_few_drafts.log"))
    assert code == 2 and "pair" in err


# --------------------------------------------------------------------------- bench
def test_single_request_bench_keeps_the_verdict_with_the_caution_above(capsys):
    on, off = FIELD / "bench_single_request_on.json", FIELD / "bench_single_request_off.json"
    r = compare_bench(on, off)
    assert r.verdict == "keep it off"
    assert {"output-tokens-differ", "single-request"} <= set(codes(r.comparability))
    flags = " ".join(messages(r.comparability))
    assert "different numbers of output tokens" in flags and "1,000 off vs 947 on" in flags
    assert "single request" in flags and "not a benchmark" in flags
    text = str(r)
    assert text.index("not a like-for-like") < text.index("goal: latency -> keep it off")
    code, out, _ = run(capsys, "bench", str(on), str(off))
    assert code == 0 and "keep it off" in out and "not a benchmark" in out


def test_check_accepts_the_articles_config(capsys):
    code, out, _ = run(capsys, "config", "check", ARTICLE)
    assert code == 0 and "would accept" in out


def test_check_warnings_still_exit_0(capsys):
    code, out, _ = run(capsys, "config", "check", '{"method": "mtp", "num_speculative_tokens": 2}')
    assert code == 0 and "warning" in out


def test_check_rejects_with_1_and_reads_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("{method: mtp, num_speculative_tokens: 1}"))
    code, out, _ = run(capsys, "config", "check", "-")
    assert code == 1 and "line 1, column 2" in out and "would reject" in out


def test_check_json_output(capsys):
    code, out, _ = run(capsys, "config", "check", "--json",
                       '{"method": "ngram", "num_speculative_tokens": 4, "top_p": 0.9}')
    data = json.loads(out)
    assert code == 1 and data["accepted"] is False
    assert "top_p" in {f["key"] for f in data["findings"]}


def test_check_version_flag(capsys):
    cfg = ARTICLE[:-1] + ', "ngram_prompt_lookup_max": 5}'
    assert run(capsys, "config", "check", cfg)[0] == 1
    code, _, err = run(capsys, "config", "check", "--vllm-version", "0.0.1", cfg)
    assert code == 2 and "older than every release" in err and len(err.splitlines()) == 1
    from specnb.vllm._versions import versions_checked
    code, out, _ = run(capsys, "config", "check", "--vllm-version", "9.99.0", ARTICLE)
    assert code == 0 and out.splitlines()[0] == (f"note: judged by vLLM {versions_checked()[-1]}"
                                                 "'s rules; no profile for 9.99.0")


@pytest.mark.parametrize("argv", [["config", "check"],
                                  ["config", "check", "{}", "--vllm-version", "new"],
                                  ["config"], ["bench", "x.json"]])
def test_usage_errors_exit_2(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    capsys.readouterr()
    assert code == 2


def test_build_renders_each_format(capsys):
    code, out, _ = run(capsys, "config", "build", "ngram", "-k", "4", "--set",
                       "prompt_lookup_min=2", "--set", "prompt_lookup_max=5", "--target",
                       "Qwen/Qwen3-8B")
    assert code == 0
    assert shlex.split(out)[-1] == ARTICLE
    code, out, _ = run(capsys, "config", "build", "mtp", "-k", "1", "--format", "json")
    assert json.loads(out) == {"method": "mtp", "num_speculative_tokens": 1}
    code, out, _ = run(capsys, "config", "build", "mtp", "-k", "1", "--format", "yaml")
    assert "speculative-config:" in out
    code, out, _ = run(capsys, "config", "build", "draft_model", "-k", "5", "--model",
                       "Qwen/Qwen3-0.6B", "--format", "python")
    assert "speculative_config={" in out


def test_build_refusals(capsys):
    code, _, err = run(capsys, "config", "build", "eagle3", "-k", "3")
    assert code == 1 and "without speculative model" in err
    code, _, err = run(capsys, "config", "build", "ngram", "--set", "oops")
    assert code == 2 and "KEY=VALUE" in err


def test_metrics_pair_and_log(capsys):
    code, out, _ = run(capsys, "metrics", str(sample_path("metrics_before.prom")),
                       str(sample_path("metrics_after.prom")))
    assert code == 0 and "43.71" in out and "4.50" in out and "76.17 %" in out
    # the implied alpha (0.812) sits beside a 43.71 % acceptance rate: the output says why
    from specnb.theory import expected_tokens_per_step
    assert f"{expected_tokens_per_step(0.812, 8):.2f}" == "4.50"  # Eq. 1 at the implied alpha
    assert "note: implied alpha 0.812 is the per-token acceptance" in out
    code, out, _ = run(capsys, "metrics", str(sample_path("spec_decode_current.log")))
    assert code == 0 and "4.50" in out


def test_metrics_errors(capsys, tmp_path):
    empty = tmp_path / "m.prom"
    empty.write_text("vllm:num_requests_running 1\n")
    assert run(capsys, "metrics", str(empty))[0] == 2  # no usable data: bad input, as missing
    assert run(capsys, "metrics", str(tmp_path / "missing"))[0] == 2


def test_metrics_gamma_the_data_contradicts_exits_2(capsys):
    code, out, err = run(capsys, "metrics", str(sample_path("metrics_after.prom")), "-k", "5")
    assert code == 2 and out == ""
    assert "num_speculative_tokens=5 contradicts" in err and "gamma >= 8" in err


def test_metrics_k_above_the_per_position_series_exits_2(capsys):
    # fault 21: the scrape has 8 per-position series (vLLM: one per position), so -k 9 is
    # refused as a usage error naming -k, the value and the observed count
    for k in ("9", "1000000000"):
        code, out, err = run(capsys, "metrics", str(sample_path("metrics_after.prom")), "-k", k)
        assert code == 2 and out == ""
        assert f"-k / num_speculative_tokens={k}" in err and "8 per-position series" in err
        assert "usage:" not in err
    assert run(capsys, "metrics", str(sample_path("metrics_after.prom")), "-k", "8")[0] == 0


def test_metrics_k1_log_advice_and_sources(capsys):
    code, out, _ = run(capsys, "metrics", str(sample_path("spec_decode_v09.log")))
    assert code == 0 and "shrink" not in out and "try a larger num_speculative_tokens" in out
    assert "log: Drafted" in out and "vllm:spec_decode_num_drafts" not in out
    # gamma 1: Corollary 3.9 with the assumed c named, no fixed 50 % bar
    assert "Corollary 3.9" in out and "0.05 assumed" in out and "50%" not in out


def test_metrics_draft_cost_decides_gamma1_and_states_theorem_3_8(capsys):
    # 83.4 % acceptance at gamma 1: pays at c 0.05; at a measured c 0.9, alpha <= c
    code, out, _ = run(capsys, "metrics", str(sample_path("spec_decode_v09.log")), "-c", "0.9")
    assert code == 0 and "(1 + 0.834) / (1 + 0.9) = 0.97x" in out
    assert "alpha <= c, so no gamma pays (Corollary 3.9)" in out and "assumed" not in out
    # gamma 8 with c: Theorem 3.8 as Leviathan Table 4 shows it, not "an upper bound"
    code, out, _ = run(capsys, "metrics", str(sample_path("metrics_before.prom")),
                       str(sample_path("metrics_after.prom")), "-c", "0.05")
    assert code == 0 and "Theorem 3.8 gives" in out and "0.68x to 1.29x of it" in out
    assert "upper bound" not in out


def test_metrics_error_prints_nothing_on_stdout(capsys):
    after = str(sample_path("metrics_after.prom"))
    code, out, err = run(capsys, "metrics", after, after)
    assert code == 2 and out == "" and "no speculation in this window" in err


def test_bench(capsys):
    code, out, _ = run(capsys, "bench", str(sample_path("bench_mtp8.json")),
                       str(sample_path("bench_mtp1.json")))
    assert code == 0 and "turn it on" in out and "-26.09" in out
    code, out, _ = run(capsys, "bench", str(sample_path("bench_off.json")),
                       str(sample_path("bench_on.json")), "--goal", "throughput")
    assert code == 0 and "keep it off" in out


def test_cli_module_imports_light():
    code = ("import sys, specnb.cli.vllm; "
            "sys.exit(1 if {'pandas', 'specnb.vllm', 'prometheus_client'} & set(sys.modules) "
            "else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_config_check_reads_a_file_argument_and_labels_it(capsys, tmp_path, monkeypatch):
    # fault 24: a file name is read as a file, and its findings are labelled with the file
    # name, not "-" (stdin)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.json").write_text("{\n")
    (tmp_path / "good.json").write_text(ARTICLE)
    code, out, _ = run(capsys, "config", "check", "broken.json")
    assert code == 1 and out.startswith("error: broken.json (line 1, column 2): ")
    code, out, _ = run(capsys, "config", "check", "broken.json", "--json")
    got = json.loads(out)
    assert code == 1 and got["source"] == "broken.json"
    assert [f["code"] for f in got["findings"]] == ["invalid-json"]
    code, out, _ = run(capsys, "config", "check", "good.json", "--json")
    assert code == 0 and json.loads(out)["source"] == "good.json"
    # inline text and stdin are labelled as such
    code, out, _ = run(capsys, "config", "check", "{", "--json")
    assert code == 1 and json.loads(out)["source"] == "<argument>"
    monkeypatch.setattr(sys, "stdin", io.StringIO("{\n"))
    code, out, _ = run(capsys, "config", "check", "-")
    assert code == 1 and out.startswith("error: <stdin> (line 1, column 2): ")
    # a path-like name that is no file, or a folder: a usage error that says what to do
    code, out, err = run(capsys, "config", "check", "nosuch.json")
    assert code == 2 and out == "" and "'nosuch.json' looks like a file name" in err
    assert "use - with < FILE" in err
    (tmp_path / "d").mkdir()
    code, _, err = run(capsys, "config", "check", "d")
    assert code == 2 and "'d' is a folder" in err


def test_config_check_names_the_json_type_of_a_non_object(capsys):
    # fault 40: "got a int" -> the JSON type, and the value
    for arg, kind in (("42", "number: 42"), ("[1]", "array: [1]"), ('"x"', 'string: "x"')):
        code, out, _ = run(capsys, "config", "check", arg, "--json")
        finding = json.loads(out)["findings"][0]
        assert code == 1 and finding["code"] == "not-an-object"
        assert finding["message"].endswith(f"got a JSON {kind}")


def test_config_build_warns_about_a_draft_length_beyond_any_context(capsys):
    # fault 40: accepted (vLLM does), with a coded warning on stderr
    code, out, err = run(capsys, "config", "build", "ngram", "-k", str(10 ** 23), "--format",
                         "json")
    assert code == 0 and json.loads(out)["num_speculative_tokens"] == 10 ** 23
    assert "warning: num_speculative_tokens: num_speculative_tokens=1e+23" in err
def test_config_check_against_the_target(tmp_path, capsys):
    # the oracle's stand-ins: target-llama (vocab 32000, 4096 positions), SmolLM2's (vocab 50000)
    standins = json.loads((Path(__file__).resolve().parent.parent / "cases" / "vllm"
                           / "standins.json").read_text())
    for name in ("target-llama", "draft-llama-vocab50k"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(
            json.dumps(standins["local"][name]["config"]))
    target = str(tmp_path / "target-llama")
    draft = str(tmp_path / "draft-llama-vocab50k")
    cfg = {"method": "draft_model", "model": draft, "num_speculative_tokens": 3,
           "draft_tensor_parallel_size": 2}
    assert main(["config", "check", json.dumps(cfg), "--target-config", target,
                 "--json"]) == 1
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert {"draft-tp-vs-target", "vocab-size-differs"} <= codes
    cfg = {"method": "draft_model", "model": draft, "num_speculative_tokens": 3,
           "draft_tensor_parallel_size": 2, "use_heterogeneous_vocab": True}
    assert main(["config", "check", json.dumps(cfg), "--target-config", target,
                 "--tensor-parallel-size", "2", "--max-model-len", "2048"]) == 0
    capsys.readouterr()
    cfg = {"method": "draft_model", "model": str(tmp_path / "missing"), "num_speculative_tokens": 3}
    assert main(["config", "check", json.dumps(cfg), "--target-config", target]) == 1
    assert "does not exist" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["config", "check", "{}", "--tensor-parallel-size", "0"])


def test_check_a_whole_serve_line(capsys, monkeypatch):
    line = ("vllm serve Qwen/Qwen3-8B -dp 2 --speculative-config.method ngram "
            "--speculative-config.num_speculative_tokens 3 "
            "--speculative-config.num_speculative_tokens_per_batch_size '[[1, 8, 3]]'")
    code, out, _ = run(capsys, "config", "check", "--serve", line, "--json")
    assert code == 0
    assert "schedule-with-data-parallel" in {f["code"] for f in json.loads(out)["findings"]}
    monkeypatch.setattr(sys, "stdin", io.StringIO("vllm serve M --speculative-config "
                                                  "'{\"method\": \"eagle\"}'"))
    code, out, _ = run(capsys, "config", "check", "--serve", "-", "--json")
    assert code == 1 and "model-missing" in {f["code"] for f in json.loads(out)["findings"]}
    for bad in ("vllm serve M --max-model-length 4096", "vllm serve M --max-num-seqs 2.5",
                "vllm serve 'M"):
        code, out, err = run(capsys, "config", "check", "--serve", bad)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    code, _, err = run(capsys, "config", "check", "--serve", "vllm serve M --max-model-length 1")
    assert "unrecognized arguments: --max-model-length 1" in err
    for args in (("{}", "--serve", "vllm serve M"), ()):
        assert run(capsys, "config", "check", *args)[0] == 2
    code, _, err = run(capsys, "config", "check", "--serve", "vllm serve M",
                       "--tensor-parallel-size", "2")
    assert code == 2 and "in the serve line" in err


def test_serve_line_memory_at_max_num_seqs(capsys):
    line = ("vllm serve Llama-3.1-8B --max-model-len 131072 --max-num-seqs 512 "
            "--speculative-config.method ngram --speculative-config.num_speculative_tokens 3")
    code, out, _ = run(capsys, "config", "check", "--serve", line, "--gpu", "H100-SXM", "--json")
    found = {f["code"]: f for f in json.loads(out)["findings"]}
    assert code == 0 and "verify-memory-cap" in found and found["verify-memory-cap"]["fix"]
    code, out, _ = run(capsys, "config", "check", "--serve", line.replace("512", "1"), "--gpu",
                       "H100-SXM", "--json")
    assert "verify-memory-cap" not in {f["code"] for f in json.loads(out)["findings"]}


def test_bench_refuses_a_zero_tpot_with_exit_2_and_reads_the_console_logs(capsys, tmp_path):
    # R2: a TPOT of 0 in the ON file said to turn speculation on
    on = json.loads(sample_path("bench_on.json").read_text())
    on["mean_tpot_ms"] = 0
    zero = tmp_path / "on.json"
    zero.write_text(json.dumps(on))
    code, out, err = run(capsys, "bench", str(zero), str(sample_path("bench_off.json")))
    assert code == 2 and "mean_tpot_ms" in err and out == ""
    bench = CASES / "vllm" / "0.33.0" / "bench"
    code, out, err = run(capsys, "bench", str(bench / "spec-k3.json"),
                         str(bench / "baseline.json"), "--on-log",
                         str(bench / "spec-k3.stdout.txt"), "--server-log",
                         str(bench.parent / "server" / "non_default_args_synthetic.log"))
    assert code == 0 and "[random-dataset]" in out and "[synthetic-acceptance]" in out
    assert "by TTFT:" in out
    code, out, err = run(capsys, "bench", str(bench / "spec-k3.json"),
                         str(bench / "baseline.json"), "--on-log", str(bench / "spec-k3.json"))
    assert code == 2 and "Namespace" in err


def test_metrics_reads_sglang_llamacpp_and_vllm_request_outputs(capsys):
    # issue 26: other engines' acceptance, put in specnb's tau and rate, definitions stated
    code, out, err = run(capsys, "metrics", str(CASES / "sglang" / "server.log"), "-k", "3")
    assert code == 0 and "source: sglang server log" in out and "definition:" in out
    assert "implied alpha" in out
    code, out, err = run(capsys, "metrics", str(CASES / "llamacpp" / "server.log"))
    assert code == 0 and "source: llama.cpp server log" in out and "draft position" in out
    code, out, err = run(capsys, "metrics", str(CASES / "sglang" / "meta_info.jsonl"))
    assert code == 0 and "sglang meta_info" in out and "mean acceptance length" in out
    code, out, err = run(capsys, "metrics", str(CASES / "vllm" / "0.33.0" / "requests" /
                                                "responses.jsonl"))
    assert code == 0 and "metrics.speculative_decoding" in out
    code, out, err = run(capsys, "metrics", "--engine", "llama.cpp",
                         str(CASES / "sglang" / "server.log"))
    assert code == 2 and "no llama.cpp" in err


def _stream(body: dict, with_metrics: bool = True) -> str:
    """One chat response as vLLM 0.33 streams it and `curl -N` saves it: content chunks, the
    final usage chunk (choices [], usage, metrics: chat_completion/serving.py ~l.883), each a
    `data:` line and a blank line, then `data: [DONE]`."""
    base = {k: body[k] for k in ("id", "created", "model")}
    chunks = [{**base, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
              {**base, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"content": "..."}, "finish_reason": "stop"}]},
              {**base, "object": "chat.completion.chunk", "choices": [], "usage": body["usage"],
               **({"metrics": body["metrics"]} if with_metrics else {})}]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def test_metrics_reads_a_streamed_response_saved_by_curl(capsys, tmp_path):
    """T8a-02: server-sent events (`data: {...}`, blank lines, `data: [DONE]`) read as the
    same responses' JSON lines are; a stream without the section says what the server needs;
    the "not a format" error names every format metrics --help names."""
    from specnb.vllm import acceptance_stats
    from specnb.vllm.requests import read_request_metrics

    src = CASES / "vllm" / "0.33.0" / "requests" / "responses.jsonl"
    bodies = [json.loads(x) for x in src.read_text().splitlines()]
    sse = tmp_path / "sse.txt"
    sse.write_text("".join(_stream(b) for b in bodies))
    code, out, err = run(capsys, "metrics", str(sse))
    assert code == 0, err
    code_j, out_j, _ = run(capsys, "metrics", str(src))
    assert out == out_j and f"source: {len(bodies)} vLLM response(s)" in out
    want = acceptance_stats(read_request_metrics(bodies))
    assert f"{want.mean_acceptance_length:.2f}" in out
    code, out, err = run(capsys, "metrics", "--engine", "vllm", str(sse))
    assert code == 0 and out == out_j
    bare = tmp_path / "bare.txt"
    bare.write_text("".join(_stream(b, with_metrics=False) for b in bodies))
    code, _, err = run(capsys, "metrics", str(bare))
    assert code == 2 and "--per-request-spec-decode-metrics summary" in err
    assert "include_usage" in err
    junk = tmp_path / "notes.txt"
    junk.write_text("this is not a metrics file {\n")
    code, _, err = run(capsys, "metrics", str(junk))
    assert code == 2
    for fmt in ("Prometheus", "'SpecDecoding metrics:'", "spec_decode.py",
                "metrics.speculative_decoding", "curl -N", "'accept len'", "meta_info",
                "'draft acceptance'"):
        assert fmt in err and fmt in FORMATS


def test_full_acceptance_does_not_claim_the_rate_is_lower(capsys):
    # N17: at 100 % acceptance the rate equals alpha; the note said it was lower
    code, out, _ = run(capsys, "metrics", str(FIELD / "metrics_v08_no_tau.log"), "-k", "3")
    assert code == 0
    note = [line for line in out.splitlines() if line.startswith("note: implied alpha")][0]
    assert "here they agree" in note


_EAGLE3 = ("vllm serve Qwen/Qwen3-8B --speculative-config "
           "'{\"method\":\"eagle3\",\"model\":\"x/y\",\"num_speculative_tokens\":3}' ")


@pytest.mark.parametrize("extra, code", [
    ("--max-model-len -5", "serve-max-model-len-range"),  # vllm/config/model.py:249 ge=-1
    ("--max-num-seqs 0", "serve-max-num-seqs-range"),  # vllm/config/scheduler.py:62 ge=1
    ("--max-num-batched-tokens 0", "serve-max-num-batched-tokens-range"),  # scheduler.py:48
    ("--max-num-batched-tokens 10 --max-num-seqs 1024", "serve-batched-tokens-below-seqs"),
    ("-tp 3", "serve-tensor-parallel"),  # ModelConfig.verify_with_parallel_config
])
def test_serve_line_refusals_vllm_gives_are_errors_exit_1(capsys, extra, code):
    rc, out, _ = run(capsys, "config", "check", "--serve", _EAGLE3 + extra, "--gpu", "H100-SXM",
                     "--json")
    found = {f["code"]: f["severity"] for f in json.loads(out)["findings"]}
    assert rc == 1 and found.get(code) == "error", found


@pytest.mark.parametrize("gpu", [(), ("--gpu", "H100-SXM")])
@pytest.mark.parametrize("extra, code", [
    ("-tp 3", "serve-tensor-parallel"),  # trial4 W2: a rule of the model, not of the GPU
    ("--max-model-len 99999999", "serve-max-model-len-above-target"),  # W4: model.py 2657
    ("--gpu-memory-utilization 1.5", "serve-gpu-memory-utilization-range"),  # W3
])
def test_target_refusals_need_no_gpu(capsys, gpu, extra, code):
    rc, out, _ = run(capsys, "config", "check", "--serve", _EAGLE3 + extra, *gpu, "--json")
    found = {f["code"]: f["severity"] for f in json.loads(out)["findings"]}
    assert rc == 1 and found.get(code) == "error" and "memory-not-checked" not in found, found
    from specnb.serving import architecture
    limit = architecture("Qwen3-8B").max_position_embeddings
    rc, out, _ = run(capsys, "config", "check", "--serve",
                     _EAGLE3 + f"-tp 2 --max-model-len {limit}", *gpu, "--json")
    assert rc == 0, out


def test_serve_memory_check_reads_kv_dtype_vllm_default_seqs_and_states_its_assumption(capsys):
    def found(extra):
        rc, out, _ = run(capsys, "config", "check", "--serve", _EAGLE3 + extra, "--gpu",
                         "H100-SXM", "--json")
        return rc, {f["code"]: f for f in json.loads(out)["findings"]}
    rc, auto = found("--max-model-len 4000 --max-num-seqs 1000")
    _, fp8 = found("--max-model-len 4000 --max-num-seqs 1000 --kv-cache-dtype fp8")
    held = [int(re.search(r"would hold (\d+)", f["verify-memory-cap"]["message"])[1])
            for f in (auto, fp8)]
    assert rc == 0 and held[1] > 1.5 * held[0]  # fp8 halves the KV bytes
    from specnb.simulate.engine import default_batch_limits
    _, default = found("--max-model-len 4000")
    assert f"--max-num-seqs {default_batch_limits('H100-SXM')[1]} " in \
        default["verify-memory-cap"]["message"]
    assert auto["verify-memory-cap"]["severity"] == "note"  # an assumption, not a refusal


def test_config_check_gpu_errors_name_the_flag_exit_2(capsys):
    for args in (("--serve", _EAGLE3, "--gpu", "Z100"),
                 ('{"method":"ngram","num_speculative_tokens":3}', "--gpu", "H100-SXM")):
        rc, out, err = run(capsys, "config", "check", *args)
        assert rc == 2 and out == "" and "--gpu" in err and len(err.strip().splitlines()) == 1


def test_serve_bounds_are_vllm_033s_own():
    root = Path("/work/main/.venv-vllm-0.33.0/lib/python3.11/site-packages/vllm/config")
    if not root.is_dir():
        pytest.skip("no vLLM 0.33.0 oracle venv")
    model, sched = (root / "model.py").read_text(), (root / "scheduler.py").read_text()
    assert "gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)" in \
        (root / "cache.py").read_text()
    assert "tensor_parallel_size: int = Field(default=1, ge=1)" in \
        (root / "parallel.py").read_text()
    assert "User-specified max_model_len" in model and "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in model
    assert "max_model_len: int = Field(default=None, ge=-1)" in model
    assert "max_num_seqs: int = Field(default=DEFAULT_MAX_NUM_SEQS, ge=1)" in sched
    assert "max_num_batched_tokens: int = Field(default=DEFAULT_MAX_NUM_BATCHED_TOKENS, ge=1)" \
        in sched and "if self.max_num_batched_tokens < self.max_num_seqs:" in sched


@pytest.mark.parametrize("content", [b"", b"  \n\t\n", b"\x7fELF\x02\x01\xd0\xff\x00"])
def test_config_check_files_that_are_empty_or_not_utf8_are_bad_input(capsys, tmp_path,
                                                                      monkeypatch, content):
    # trial 5 C8 / K5: a FILE or stdin that is empty or not UTF-8 is bad input (exit 2, one
    # line naming it), as for every reader; '' on the command line stays vLLM's "no config"
    path = tmp_path / "spec.json"
    path.write_bytes(content)
    code, out, err = run(capsys, "config", "check", str(path))
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and str(path) in err
    for argv in (("config", "check", "-"), ("config", "check", "--serve", "-")):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(content)))
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and len(err.splitlines()) == 1 and "stdin" in err
        assert "codec" not in err  # named as every reader names it, not Python's message
    code, out, _ = run(capsys, "config", "check", "")
    assert code == 0 and "would accept" in out


# ------------------------- metrics on a file of nothing but spec-decode lines (issue 26, bigscan)
@pytest.mark.parametrize("kind", ["log", "scrape", "stdin"])
def test_metrics_prints_the_same_when_the_kept_lines_are_read_again(tmp_path, capsys,
                                                                    monkeypatch, kind):
    from specnb import _stream
    from tests.vllm.test_read import _series, _spec_line

    text = ("\n".join(_spec_line(i) for i in range(1500)) + "\n" if kind != "scrape"
            else _series(1500))
    path = tmp_path / "in.txt"
    path.write_text(text)
    arg = str(path)
    if kind == "stdin":
        arg = "-"
    outs = []
    for keep in (_stream.KEEP, 1000):  # all held; held up to 1,000 characters, the rest re-read
        monkeypatch.setattr(_stream, "KEEP", keep)
        if kind == "stdin":
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        outs.append(run(capsys, "metrics", arg))
    assert outs[0] == outs[1] and outs[0][0] == 0, outs


def test_config_check_reads_the_target_config_as_plan_does(tmp_path, capsys):
    # trial 7 T7-08: one reader, one verdict: a malformed target config.json is bad input
    # with plan --model's own message; a family the serving model does not cover still checks
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"],
                                                 "num_hidden_layers": "32"}))
    cfg = json.dumps({"method": "draft_model", "model": "x", "num_speculative_tokens": 3})
    assert main(["plan", "--gpu", "H100", "--model", str(bad / "config.json"), "--draft",
                 "ngram", "--context", "100", "--batch", "1", "--gamma", "1",
                 "--alpha", "0.5"]) == 2
    plan_err = capsys.readouterr().err.split("error: ", 1)[1]
    assert main(["config", "check", cfg, "--target-config", str(bad / "config.json")]) == 2
    assert capsys.readouterr().err.split("error: ", 1)[1] == plan_err
    assert main(["config", "check", "--serve", f"vllm serve {bad} --speculative-config "
                 f"'{cfg}'"]) == 2
    assert capsys.readouterr().err.split("error: ", 1)[1] == plan_err  # the model's folder
    gpt2 = tmp_path / "gpt2.json"  # GPT-2 names its sizes otherwise: vLLM's rules still run
    gpt2.write_text(json.dumps({"architectures": ["GPT2LMHeadModel"], "n_layer": 12,
                                "vocab_size": 50257}))
    assert main(["config", "check", cfg, "--target-config", str(gpt2)]) == 0
