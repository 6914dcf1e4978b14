"""`specnb config`, `specnb metrics`, `specnb bench`: output and exit status."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys

import pytest

from specnb.cli import main
from specnb.vllm import sample_path

ARTICLE = ('{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, '
           '"prompt_lookup_max": 5}')


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


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
    assert run(capsys, "config", "check", "--vllm-version", "0.11.0", cfg)[0] == 0


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
    assert run(capsys, "metrics", str(empty))[0] == 1
    assert run(capsys, "metrics", str(tmp_path / "missing"))[0] == 2


def test_metrics_gamma_the_data_contradicts_exits_1(capsys):
    code, out, err = run(capsys, "metrics", str(sample_path("metrics_after.prom")), "-k", "5")
    assert code == 1 and out == ""
    assert "num_speculative_tokens=5 contradicts" in err and "gamma >= 8" in err


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
    assert code == 1 and out == "" and "no speculation in this window" in err


def test_bench(capsys):
    code, out, _ = run(capsys, "bench", str(sample_path("bench_mtp8.json")),
                       str(sample_path("bench_mtp1.json")))
    assert code == 0 and "turn it on" in out and "-26.09" in out
    code, out, _ = run(capsys, "bench", str(sample_path("bench_off.json")),
                       str(sample_path("bench_on.json")), "--goal", "throughput")
    assert code == 0 and "keep it off" in out


def test_cli_module_imports_light():
    code = ("import sys, specnb.vllm_cli; "
            "sys.exit(1 if {'pandas', 'specnb.vllm', 'prometheus_client'} & set(sys.modules) "
            "else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
