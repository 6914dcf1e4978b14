"""Field reports (issue 11): every file in tests/cases/field-reports/ with its right value, and a
second input of our own making for each kind.

The right values are those computed by hand in tests/cases/field-reports/README.md; each is
computed here from the file and compared at the printed precision.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from specnb.cli import main
from specnb.vllm import (
    FORMATS,
    MIN_DRAFTS,
    acceptance_rate_ci,
    best_draft_length,
    check_speculative_config,
    compare_bench,
    describe_schedule,
    read_acceptance,
    read_offline_printout,
    schedule_lookup,
    suggest_fix,
    validate_schedule,
)
from specnb.vllm.metrics import MAX_PLAUSIBLE_K

CASES = Path(__file__).parent / "cases"
FIELD = CASES / "field-reports"


def field(name: str) -> str:
    return (FIELD / name).read_text(encoding="utf-8")


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def advice_text(stats, c=None) -> str:
    return " ".join(stats.advice(c))


# --------------------------------------------------------------------------- V0 rates only
def test_v0_rates_only_line_gives_tau_from_the_system_efficiency():
    r = read_acceptance(field("metrics_v0_rates_only.log"))
    s = r.stats
    assert f"{s.mean_acceptance_length:.2f}" == "2.56"  # 0.426 x (5 + 1)
    assert f"{s.acceptance_rate:.3f}" == "0.311"         # (2.56 - 1) / 5
    assert s.num_speculative_tokens == 5
    notes = " ".join(s.notes)
    assert "0.698" in notes and "after a rejection" in notes
    assert "cannot support a verdict" in advice_text(s)  # no counts: size unknown


def test_v0_rates_only_own_input_with_a_prefix():
    text = ("vllm-1  | INFO 05-01 09:00:00 metrics.py:477] Speculative metrics: Draft acceptance "
            "rate: 0.500, System efficiency: 0.600, Number of speculative tokens: 3\n")
    s = read_acceptance(text).stats
    assert s.mean_acceptance_length == pytest.approx(0.6 * 4)
    assert s.acceptance_rate == pytest.approx((2.4 - 1) / 3)
    with pytest.raises(ValueError, match="contradicts the log line"):
        read_acceptance(text, num_speculative_tokens=4)


# --------------------------------------------------------------------------- offline printout
def test_offline_printout_is_read_not_a_prometheus_error():
    s = read_acceptance(field("metrics_offline_printout.txt")).stats
    assert f"{100 * s.acceptance_rate:.2f}" == "36.21"   # 12208 / 33712
    assert f"{s.mean_acceptance_length:.2f}" == "3.53"   # 1 + 12208 / 4816
    assert s.num_speculative_tokens == 7                 # 33712 / 4816


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
    assert s.thin
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


def test_v08_own_input_two_intervals_are_summed():
    text = ("INFO [loggers.py:80] SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: "
            "30 tokens, Drafted: 60 tokens\n"
            "INFO [loggers.py:80] SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: "
            "10 tokens, Drafted: 20 tokens\n")
    s = read_acceptance(text, num_speculative_tokens=4).stats
    assert (s.counts.drafts, s.counts.accepted_tokens) == (20, 40)
    assert s.mean_acceptance_length == pytest.approx(3.0)
    assert math.isnan(read_acceptance(text).stats.mean_acceptance_length)


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


def test_v0_cumulative_own_input():
    line = ("vllm-1  | INFO 02-06 03:05:53 metrics.py:475] Speculative metrics: Draft acceptance "
            "rate: {r}, System efficiency: {e}, Number of speculative tokens: 4, Number of "
            "accepted tokens: {a}, Number of draft tokens: {d}, Number of emitted tokens: {m}.")
    text = "\n".join([line.format(r="0.450", e="0.500", a=18, d=40, m=25),
                      line.format(r="0.450", e="0.500", a=180, d=400, m=250)])
    s = read_acceptance(text).stats
    # last line: 100 steps, 250 emitted -> 150 prefix-accepted tokens, tau 2.5 = 0.5 x 5
    assert (s.counts.drafts, s.counts.draft_tokens, s.counts.accepted_tokens) == (100, 400, 150)
    assert s.mean_acceptance_length == pytest.approx(2.5)


# --------------------------------------------------------------------------- few drafts, tail
def test_few_drafts_numbers_as_printed_and_thin_and_tail_advice():
    s = read_acceptance(field("metrics_few_drafts.log")).stats
    c = s.counts
    assert (c.draft_tokens, c.accepted_tokens, c.drafts) == (161 + 385, 44 + 106, 23 + 55)
    assert f"{100 * 44 / 161:.1f}" == "27.3" and f"{100 * 106 / 385:.1f}" == "27.5"
    assert f"{1 + 44 / 23:.2f}" == "2.91" and f"{1 + 106 / 55:.2f}" == "2.93"
    assert s.thin and c.drafts < MIN_DRAFTS
    text = advice_text(s)
    assert "78 drafts" in text and "cannot support a verdict" in text and "95% CI" in text
    assert "positions 6-7 of 7" in text and "num_speculative_tokens = 5" in text
    assert all(r < 0.10 for r in s.per_position[5:])  # positions 6-7 under 10 %
    # with a c, Theorem 3.8 at the implied alpha, stated as Leviathan Table 4 shows it
    text = advice_text(s, c=0.05)
    assert "Theorem 3.8 gives" in text and "either side of Theorem 3.8" in text
    assert "upper bound" not in text


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


def test_few_drafts_own_input_names_a_shorter_k():
    text = ("(APIServer pid=7) INFO [metrics.py:120] SpecDecoding metrics: Mean acceptance "
            "length: 2.60, Accepted throughput: 1.00 tokens/s, Drafted throughput: 2.50 "
            "tokens/s, Accepted: 16 tokens, Drafted: 40 tokens, Per-position acceptance rate: "
            "0.900, 0.600, 0.100, 0.000, Avg Draft acceptance rate: 40.0%\n")
    s = read_acceptance(text).stats
    # tau(k) / (1 + 0.05 k): 1.81, 2.27, 2.26, 2.17 -> k = 2
    assert best_draft_length(s.per_position) == (2, pytest.approx(2.5 / 1.1))
    assert "positions 3-4 of 4" in advice_text(s) and "num_speculative_tokens = 2" in advice_text(s)
    # a measured cost changes the answer: at c = 0.5 only one position pays
    assert best_draft_length(s.per_position, 0.5)[0] == 1
    assert "num_speculative_tokens = 1" in advice_text(s, c=0.5)


def test_a_long_window_is_not_thin_and_every_position_pays():
    s = read_acceptance((CASES / "vllm_metrics_section_3_5.prom").read_text()).stats
    assert not s.thin
    text = advice_text(s)
    assert "cannot support" not in text and "every position pays" in text


def test_wilson_interval_matches_the_closed_form():
    lo, hi = acceptance_rate_ci(150, 546)
    z, n, p = 1.959963984540054, 546, 150 / 546
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert (lo, hi) == pytest.approx(((centre - half) / (1 + z * z / n),
                                      (centre + half) / (1 + z * z / n)), abs=1e-9)
    assert acceptance_rate_ci(0, 15)[0] == pytest.approx(0.0, abs=1e-12)
    assert acceptance_rate_ci(15, 15)[1] == pytest.approx(1.0)
    assert MIN_DRAFTS == 385  # ceil(1.96^2 x 0.25 / 0.05^2)
    with pytest.raises(ValueError):
        acceptance_rate_ci(5, 4)


# --------------------------------------------------------------------------- zero accepted
def test_zero_accepted_points_to_misconfiguration():
    s = read_acceptance(field("metrics_v0_cumulative.log")).stats
    assert s.counts.accepted_tokens == 0 and "misconfiguration" in s.advice()[0]
    text = ("INFO SpecDecoding metrics: Mean acceptance length: 1.00, Accepted throughput: 0.00 "
            "tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: 0 tokens, Drafted: 2000 "
            "tokens, Per-position acceptance rate: 0.000, 0.000, 0.000, 0.000, Avg Draft "
            "acceptance rate: 0.0%\n")
    own = read_acceptance(text, num_speculative_tokens=4).stats
    advice = own.advice()
    assert len(advice) == 1 and "misconfiguration" in advice[0] and "not to tuning" in advice[0]


# --------------------------------------------------------------------------- bad input
def test_unreadable_input_names_the_formats(capsys, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("this is not a metrics file {\n")
    code, _, err = run(capsys, "metrics", str(path))
    assert code == 1 and "spec_decode.py" in err and "Speculative metrics:" in err
    assert "Prometheus" in FORMATS
    code, _, err = run(capsys, "metrics", str(FIELD / "metrics_v08_no_tau.log"),
                       str(FIELD / "metrics_few_drafts.log"))
    assert code == 2 and "pair" in err


# --------------------------------------------------------------------------- bench
def test_single_request_bench_keeps_the_verdict_with_the_caution_above(capsys):
    on, off = FIELD / "bench_single_request_on.json", FIELD / "bench_single_request_off.json"
    r = compare_bench(on, off)
    assert r.verdict == "keep it off"
    flags = " ".join(r.comparability)
    assert "different numbers of output tokens" in flags and "1,000 off vs 947 on" in flags
    assert "single request" in flags and "not a benchmark" in flags
    text = str(r)
    assert text.index("not a like-for-like") < text.index("goal: latency -> keep it off")
    code, out, _ = run(capsys, "bench", str(on), str(off))
    assert code == 0 and "keep it off" in out and "not a benchmark" in out


def test_bench_own_input_flags_completed_dataset_and_tokens_per_request():
    base = {"output_throughput": 100.0, "median_tpot_ms": 10.0, "num_prompts": 200,
            "max_concurrency": 8, "request_rate": "inf"}
    off = {**base, "completed": 200, "total_output_tokens": 40000, "dataset_name": "sharegpt"}
    on = {**base, "completed": 180, "total_output_tokens": 36000, "dataset_name": "random",
          "output_throughput": 130.0, "median_tpot_ms": 8.0}
    r = compare_bench(on, off, goal="throughput")
    flags = " ".join(r.comparability)
    assert r.verdict == "turn it on"
    assert "completed" in flags and "dataset_name" in flags
    assert "output tokens" not in flags  # 200 per request in both runs
    assert "single request" not in flags
    r2 = compare_bench({**on, "total_output_tokens": 30000}, off, goal="throughput")
    assert "200.0 vs 166.7 per request" in " ".join(r2.comparability)


# --------------------------------------------------------------------------- configs
CONFIG_CASES = [json.loads(line) for line in field("configs.jsonl").splitlines() if line.strip()]


@pytest.mark.parametrize("case", CONFIG_CASES, ids=[c["id"] for c in CONFIG_CASES])
def test_field_report_configs_get_the_expected_severity(case):
    result = check_speculative_config(case.get("config_text") or case["config"])
    hits = [f for f in result if f.key == case["key"] and f.severity == case["expect"]]
    assert hits, str(result)
    if case["expect"] == "warning":
        assert result.accepted, str(result)


def test_method_vs_eagle_path_names_the_method_and_what_vllm_does():
    case = next(c for c in CONFIG_CASES if c["id"] == "explicit-method-vs-eagle-path")
    msg = " ".join(f.message + f.fix for f in check_speculative_config(case["config"]))
    assert "'eagle'" in msg and "runs 'eagle' instead of 'draft_model'" in msg and "47486" in msg


def test_toml_style_v0_fix_is_valid_for_current_vllm():
    case = next(c for c in CONFIG_CASES if c["id"] == "toml-style-v0-keys")
    (finding,) = check_speculative_config(case["config_text"])
    assert finding.fix.startswith("use ")
    fixed = json.loads(finding.fix[4:])
    assert fixed == {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 2}
    assert check_speculative_config(fixed).accepted


OWN_CONFIGS = [
    # (config, severity, key, words in the message)
    ({"method": "medusa", "model": "org/llama-eagle3-head", "num_speculative_tokens": 3},
     "warning", "method", "runs 'eagle3' instead of 'medusa'"),
    ({"method": "eagle", "model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
      "num_speculative_tokens": 2}, "warning", "method", "does not re-detect"),
    ({"model": "FasterDecoding/medusa-vicuna-7b-v1.3", "num_speculative_tokens": 3},
     "warning", "method", "likely method is 'medusa'"),
    ({"model": "my_eagle_head", "num_speculative_tokens": 3}, "warning", "method",
     "would load it as 'draft_model'"),
    ({"model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3}, "warning", "method",
     "likely method is 'draft_model'"),
    ({"method": "eagle", "model": "e", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": [[1, 8, 3], [6, 9, 1]]}, "error",
     "num_speculative_tokens_per_batch_size", "overlap"),
    ({"method": "eagle", "model": "e", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": []}, "error",
     "num_speculative_tokens_per_batch_size", "must not be empty"),
    ({"method": "eagle", "model": "e", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": [[1, 8, -1]]}, "error",
     "num_speculative_tokens_per_batch_size", "K must be >= 0"),
    ({"method": "eagle", "model": "e", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": [[1, 8, 2], [12, 9, 1]]}, "error",
     "num_speculative_tokens_per_batch_size", "range_start must be <= range_end"),
    ({"method": "eagle", "model": "e", "num_speculative_tokens": 3,
      "num_speculative_tokens_per_batch_size": [[1, 8, 1, 4, 2]]}, "error",
     "num_speculative_tokens_per_batch_size", "5-item"),
    ({"method": "mtp", "num_speculative_tokens": 1,
      "num_speculative_tokens_per_batch_size": [[1, 4, 3], [5, 64, 1]]}, "warning",
     "num_speculative_tokens_per_batch_size", "clamps it to 1"),
]


@pytest.mark.parametrize("cfg,severity,key,words", OWN_CONFIGS,
                         ids=[str(i) for i in range(len(OWN_CONFIGS))])
def test_own_configs(cfg, severity, key, words):
    result = check_speculative_config(cfg)
    hits = [f for f in result if f.key == key and f.severity == severity and words in f.message]
    assert hits, str(result)


def test_draft_config_json_architecture_is_read(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Eagle3LlamaForCausalLM"],
                                                      "model_type": "llama"}))
    cfg = {"method": "draft_model", "model": str(tmp_path), "num_speculative_tokens": 3}
    assert not [f for f in check_speculative_config(cfg) if f.key == "method"]
    msg = " ".join(f.message for f in check_speculative_config(cfg, draft_config=tmp_path))
    assert "architectures" in msg and "'eagle3'" in msg
    full = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}
    msg = " ".join(f.message for f in check_speculative_config(
        {"method": "eagle", "model": "m", "num_speculative_tokens": 3}, draft_config=full))
    assert "full causal LM" in msg
    mtp = {"architectures": ["DeepSeekMTPModel"], "model_type": "deepseek_mtp"}
    msg = " ".join(f.message for f in check_speculative_config(
        {"method": "draft_model", "model": "m", "num_speculative_tokens": 1}, draft_config=mtp))
    assert "runs 'mtp' instead of 'draft_model'" in msg
    with pytest.raises(ValueError, match="no config.json"):
        check_speculative_config(cfg, draft_config=tmp_path / "missing")


def test_draft_config_with_a_bom_is_read_and_non_utf8_is_named(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("\ufeff" + json.dumps({"architectures": ["Eagle3LlamaForCausalLM"]}),
                 encoding="utf-8")
    cfg = {"method": "draft_model", "model": "m", "num_speculative_tokens": 3}
    msg = " ".join(f.message for f in check_speculative_config(cfg, draft_config=p))
    assert "'eagle3'" in msg
    p.write_bytes(b'{"architectures": ["caf\xe9"]}')
    with pytest.raises(ValueError, match=r"config.json': not UTF-8 text \(byte 0xe9 at offset"):
        check_speculative_config(cfg, draft_config=p)


# --------------------------------------------------------------------------- the schedule
I9_LIKE = [[1, 16, 5], [17, 32, 4], [33, 64, 3], [65, 128, 1], [129, 512, 0]]


def test_a_valid_schedule_is_accepted_and_explained():
    cfg = {"method": "eagle3", "model": "org/head-eagle3", "num_speculative_tokens": 5,
           "num_speculative_tokens_per_batch_size": I9_LIKE}
    result = check_speculative_config(cfg)
    assert result.accepted, str(result)
    (w,) = [f for f in result if f.key == "num_speculative_tokens_per_batch_size"]
    for words in ("inclusive", "previous range's K", "last K", "K = 0 drafts nothing",
                  "--data-parallel-size > 1", "+6.6% at concurrency 2", "+21.6% at concurrency 189",
                  "#49548"):
        assert words in w.message, words


def test_schedule_lookup_follows_vllms_table():
    # gaps carry the previous K, sizes past the last range take the last K, K is clamped
    table = schedule_lookup([[1, 16, 3], [32, 128, 2]], num_speculative_tokens=4, max_num_seqs=200)
    assert table[1] == table[16] == 3 and table[17] == table[31] == 3
    assert table[32] == table[128] == table[200] == 2
    assert schedule_lookup([[1, 4, 9]], 2, 8)[1:] == [2] * 8
    assert validate_schedule([[65, 512, 0], [1, 64, 3]]) == [(1, 64, 3), (65, 512, 0)]
    assert "K=3 for the gap 17-31" in describe_schedule([[1, 16, 3], [32, 128, 2]])
    with pytest.raises(ValueError, match="first range must start at batch size 1"):
        validate_schedule([[2, 8, 1]])
    with pytest.raises(ValueError, match="max_num_seqs"):
        schedule_lookup(I9_LIKE, 5, 0)


# --------------------------------------------------------------------------- every fix passes
def _all_texts():
    texts = [line for line in (CASES / "vllm_configs.jsonl").read_text().splitlines() if line]
    out = [json.loads(t)["config"] for t in texts]
    out += [c.get("config_text") or c["config"] for c in CONFIG_CASES]
    out += [cfg for cfg, *_ in OWN_CONFIGS]
    out += ["{method: ngram}", "{method: eagle}", "{'method': 'eagle3', 'model': 'x-eagle3'}",
            "{speculative_model = \"[ngram]\", ngram_prompt_lookup_min = 1}",
            '{"speculative_model": "[ngram]", "num_speculative_tokens": 3,}',
            "{'speculative_model': 'facebook/opt-125m', 'num_speculative_tokens': 5, "
            "'temperature': 0.2}", '{"method": "ngram", "num_speculative_tokens": 4 // four\n}']
    return out


@pytest.mark.parametrize("text", _all_texts())
def test_every_suggested_json_fix_passes_the_checker_for_current_vllm(text):
    for finding in check_speculative_config(text):
        if finding.fix.startswith("use {"):
            fixed = json.loads(finding.fix[4:])
            assert check_speculative_config(fixed).accepted, (finding.fix, str(
                check_speculative_config(fixed)))
    if isinstance(text, dict):
        better = suggest_fix(text)
        assert better is None or check_speculative_config(better).accepted


def test_v08_window_of_1000_draft_tokens_is_not_judged_as_1000_drafts():
    # 1000 draft tokens hold only 125 drafts at k = 8: without -k the window is thin unless
    # even k = MAX_PLAUSIBLE_K (32) gives MIN_DRAFTS drafts
    line = ("INFO 04-01 00:00:00 [loggers.py:80] SpecDecoding metrics: Draft acceptance rate: "
            "70.0%, Accepted: {a} tokens, Drafted: {n} tokens")
    s = read_acceptance(line.format(a=700, n=1000)).stats
    assert s.thin and s.counts.drafts != s.counts.drafts  # NaN: unknown
    text = advice_text(s)
    assert f"{1000 / 8:,.0f} at k = 8" == "125 at k = 8" and "125 at k = 8" in text
    assert f"only if k <= {1000 // MIN_DRAFTS}" in text and "only if k <= 2" in text
    assert f"1-{MAX_PLAUSIBLE_K}" in text and MAX_PLAUSIBLE_K == 32
    # k given: 1000 / 2 = 500 drafts >= 385, not thin; k = 3: 333, thin
    assert not read_acceptance(line.format(a=700, n=1000), num_speculative_tokens=2).stats.thin
    assert read_acceptance(line.format(a=700, n=1000), num_speculative_tokens=3).stats.thin
    # enough tokens that even k = 32 gives >= 385 drafts: 12320 / 32 = 385
    big = read_acceptance(line.format(a=8624, n=385 * MAX_PLAUSIBLE_K)).stats
    assert not big.thin and "no draft count" not in advice_text(big)
    assert read_acceptance(line.format(a=8623, n=385 * MAX_PLAUSIBLE_K - 1)).stats.thin
