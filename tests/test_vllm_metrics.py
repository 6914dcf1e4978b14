"""specnb.vllm metrics: /metrics scrapes, log lines, acceptance and the alpha they imply."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb.theory import expected_tokens_per_step
from specnb.vllm import (
    SpecDecodeCounts,
    acceptance_stats,
    log_counts,
    metrics_delta,
    read_metrics,
    read_spec_decode_log,
    sample_path,
)

CASES = Path(__file__).parent / "cases"
#: ../shared/reference/vllm.md section 3.5 (b), verbatim.
SECTION_3_5 = (CASES / "vllm_metrics_section_3_5.prom").read_text()
#: Printed values: PR #48892 via section 3.5.
PRINTED_RATE, PRINTED_LENGTH = "43.71", "4.50"
PRINTED_PER_POS = ["76.17", "61.58", "51.25", "42.43", "36.40", "30.94", "27.22", "23.65"]


def test_section_3_5_sample_gives_the_printed_values():
    stats = acceptance_stats(read_metrics(SECTION_3_5))
    assert f"{100 * stats.acceptance_rate:.2f}" == PRINTED_RATE
    assert f"{stats.mean_acceptance_length:.2f}" == PRINTED_LENGTH
    assert [f"{100 * p:.2f}" for p in stats.per_position] == PRINTED_PER_POS
    assert stats.num_speculative_tokens == 8


def test_implied_alpha_reproduces_tau_through_eq1():
    stats = acceptance_stats(read_metrics(SECTION_3_5))
    tau = expected_tokens_per_step(stats.alpha, stats.num_speculative_tokens)
    assert tau == pytest.approx(stats.mean_acceptance_length, rel=1e-9)
    assert 0 < stats.alpha < 1


def test_per_position_sums_to_accepted_tokens():
    counts = read_metrics(SECTION_3_5)
    assert sum(counts.accepted_per_position) == counts.accepted_tokens


def _engine_lines(name, values, suffix="_total", extra=""):
    return "\n".join(f'{name}{suffix}{{engine="{i}",model_name="m"{extra}}} {v}'
                     for i, v in enumerate(values))


def test_created_and_per_pos_series_do_not_leak_into_totals():
    # _created timestamps and per-position series share the totals' name prefixes
    created = "\n".join(
        f'vllm:spec_decode_num_{n}_created{{engine="0",model_name="m"}} 1756736798.733569'
        for n in ("drafts", "draft_tokens", "accepted_tokens"))
    per_pos_created = ('vllm:spec_decode_num_accepted_tokens_per_pos_created{engine="0",'
                       'model_name="m",position="0"} 1756736798.7338755')
    text = SECTION_3_5 + created + "\n" + per_pos_created + "\n"
    assert read_metrics(text) == read_metrics(SECTION_3_5)


def test_counters_are_summed_across_data_parallel_engines():
    # drafts per engine as shown in vLLM PR #24049 (8 DP engines)
    drafts = [22, 15, 29, 20, 25, 24, 27, 26]
    text = "\n".join([
        "# TYPE vllm:spec_decode_num_drafts counter",
        _engine_lines("vllm:spec_decode_num_drafts", drafts),
        _engine_lines("vllm:spec_decode_num_draft_tokens", [3 * d for d in drafts]),
        _engine_lines("vllm:spec_decode_num_accepted_tokens", [d for d in drafts]),
        _engine_lines("vllm:spec_decode_num_accepted_tokens_per_pos", [d for d in drafts],
                      extra=',position="0"'),
    ]) + "\n"
    counts = read_metrics(text)
    assert counts.drafts == sum(drafts) and counts.label_sets == 8
    assert counts.draft_tokens == 3 * sum(drafts)
    assert counts.accepted_per_position == (sum(drafts),)


def test_before_after_pair_gives_the_window():
    before, after = (sample_path(n).read_text() for n in
                     ("metrics_before.prom", "metrics_after.prom"))
    window = metrics_delta(before, after)
    assert window == read_metrics(after) - read_metrics(before)
    stats = acceptance_stats(window)
    assert f"{100 * stats.acceptance_rate:.2f}" == PRINTED_RATE
    assert f"{stats.mean_acceptance_length:.2f}" == PRINTED_LENGTH
    with pytest.raises(ValueError, match="restarted"):
        metrics_delta(after, before)


def test_model_name_filter():
    assert read_metrics(SECTION_3_5, model_name="<model>") == read_metrics(SECTION_3_5)
    with pytest.raises(ValueError, match="matches no spec-decode series"):
        read_metrics(SECTION_3_5, model_name="other")


@pytest.mark.parametrize("text,match", [
    ("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n",
     "speculative decoding is off"),
    ("vllm:spec_decode_draft_acceptance_rate 0.6\n", "V0 server"),
    ("vllm:spec_decode_num_drafts_total{engine=\"0\"} | 22\n", "Prometheus UI table"),
])
def test_scrapes_without_counters_say_why(text, match):
    with pytest.raises(ValueError, match=match):
        read_metrics(text)


def test_read_metrics_rejects_non_text():
    with pytest.raises(TypeError, match="text must be a str"):
        read_metrics(b"bytes")


# --------------------------------------------------------------------------- log lines
#: Current format with an extra field and a prefix (published in a public GitHub file).
DFLASH_LINE = ("(APIServer pid=1) INFO 09-04 11:01:16 [metrics.py:125] SpecDecoding metrics: "
               "Mean acceptance length: 6.82, Current speculative depth: 7, Accepted throughput: "
               "6.46 tokens/s, Drafted throughput: 7.77 tokens/s, Accepted: 256 tokens, "
               "Drafted: 308 tokens, Per-position acceptance rate: 1.000, 1.000, 1.000, 1.000, "
               "0.795, 0.614, 0.409, Avg Draft acceptance rate: 83.1%")


def test_current_format_sample_matches_the_scrape():
    counts = log_counts(sample_path("spec_decode_current.log").read_text())
    stats = acceptance_stats(counts)
    assert counts.drafts == 11043 and counts.drafts_estimated
    assert f"{100 * stats.acceptance_rate:.2f}" == PRINTED_RATE
    assert f"{stats.mean_acceptance_length:.2f}" == PRINTED_LENGTH


def test_current_format_with_extra_fields_and_prefix():
    df = read_spec_decode_log("noise line\n" + DFLASH_LINE + "\n")
    row = df.iloc[0]
    assert row["format"] == "current" and row["line"] == 2
    assert row["speculative_depth"] == 7 and row["num_speculative_tokens"] == 7
    assert row["drafts"] == 44  # 308 drafted / 7 positions
    stats = acceptance_stats(log_counts(DFLASH_LINE))
    assert f"{stats.mean_acceptance_length:.2f}" == "6.82"
    assert f"{100 * stats.acceptance_rate:.1f}" == "83.1"


def test_older_v1_format():
    df = read_spec_decode_log(sample_path("spec_decode_v09.log").read_text())
    assert df.iloc[0]["format"] == "older"
    stats = acceptance_stats(log_counts(sample_path("spec_decode_v09.log").read_text()))
    # PR #48892, MTP k=1: 83.39 % and 1.83
    assert f"{100 * stats.acceptance_rate:.2f}" == "83.39"
    assert f"{stats.mean_acceptance_length:.2f}" == "1.83"


def test_v0_format_uses_emitted_tokens():
    text = sample_path("spec_decode_v0.log").read_text()
    row = read_spec_decode_log(text).iloc[0]
    assert row["format"] == "v0" and row["acceptance_rate"] == 0.642
    # system efficiency = tau / (k + 1): 0.598 printed in issue #9539
    assert f"{row['mean_acceptance_length'] / 4:.3f}" == "0.598"
    stats = acceptance_stats(log_counts(text))
    assert stats.mean_acceptance_length == pytest.approx(row["mean_acceptance_length"])
    assert any("V0" in n for n in stats.notes)


def test_log_intervals_are_summed():
    one = sample_path("spec_decode_current.log").read_text()
    two = log_counts(one + DFLASH_LINE + "\n")
    assert two.accepted_tokens == 38611 + 256 and two.draft_tokens == 88344 + 308
    assert two.drafts == 11043 + 44


def test_unreadable_lines():
    bad = "INFO SpecDecoding metrics: Mean acceptance length: 2.00, ..."
    with pytest.raises(ValueError, match="line 1"):
        read_spec_decode_log(bad)
    df = read_spec_decode_log(bad + "\n" + DFLASH_LINE, strict=False)
    assert df.attrs["skipped"] == [1] and len(df) == 1
    with pytest.raises(ValueError, match="no 'SpecDecoding metrics:'"):
        read_spec_decode_log("nothing here")


# --------------------------------------------------------------------------- statistics
@st.composite
def prefix_counts(draw):
    k = draw(st.integers(1, 8))
    drafts = draw(st.integers(1, 10_000))
    per_pos, cap = [], drafts
    for _ in range(k):  # prefix acceptance: position i+1 never beats position i
        cap = draw(st.integers(0, cap))
        per_pos.append(cap)
    return SpecDecodeCounts(drafts, k * drafts, sum(per_pos), tuple(per_pos))


@settings(max_examples=200, deadline=None)
@given(prefix_counts())
def test_vllm_identities_hold(counts):
    s = acceptance_stats(counts)
    k = s.num_speculative_tokens
    assert s.mean_acceptance_length - 1 == pytest.approx(sum(s.per_position))
    assert s.acceptance_rate == pytest.approx((s.mean_acceptance_length - 1) / k)
    assert 1 <= s.mean_acceptance_length <= k + 1
    assert 0 <= s.alpha <= 1


def test_gamma_inference_and_override():
    counts = SpecDecodeCounts(100, 300, 150)  # no per-position series
    assert acceptance_stats(counts).num_speculative_tokens == 3
    assert acceptance_stats(counts, num_speculative_tokens=5).num_speculative_tokens == 5
    uneven = SpecDecodeCounts(100, 290, 150)
    s = acceptance_stats(uneven)
    assert s.alpha is None and any("gamma unknown" in n for n in s.notes)
    with pytest.raises(ValueError, match="num_speculative_tokens=1 contradicts.*gamma >= 3"):
        acceptance_stats(SpecDecodeCounts(100, 300, 250), num_speculative_tokens=1)


def test_no_speculation_in_window():
    with pytest.raises(ValueError, match="no speculation"):
        acceptance_stats(SpecDecodeCounts(0, 0, 0))
    with pytest.raises(TypeError, match="SpecDecodeCounts"):
        acceptance_stats({"drafts": 1})


def test_stats_tables():
    stats = acceptance_stats(read_metrics(SECTION_3_5))
    assert len(stats.per_position_frame()) == 8
    assert "mean acceptance length (tau)" in set(stats.to_frame()["quantity"])
    assert "43.71 %" in str(stats)


def test_advice_follows_the_article_and_the_theory():
    from specnb.theory import optimal_gamma, walltime_speedup
    from specnb.vllm.advise import theorem_vs_measured

    t = theorem_vs_measured()["ratio"]
    either_side = f"{t.min():.2f}x to {t.max():.2f}x of it"  # Leviathan Table 4: 0.68 to 1.29
    good = acceptance_stats(read_metrics(SECTION_3_5))
    line = good.advice(c=0.05)[-1]
    assert "already the best gamma" in line and either_side in line
    poor = acceptance_stats(SpecDecodeCounts(1000, 4000, 500, (400, 80, 15, 5)))
    assert "< 2 at gamma 4: shrink num_speculative_tokens" in poor.advice()[0]
    g, best = optimal_gamma(poor.alpha, 0.05)  # a shorter gamma would do better
    line = poor.advice(c=0.05)[-1]
    assert 1 <= g < 4 and f"{walltime_speedup(poor.alpha, 4, 0.05):.2f}x at gamma 4" in line
    assert f"{best:.2f}x at gamma {g}" in line and either_side in line
    assert not any("upper bound" in x for x in good.advice(c=0.05) + poor.advice(c=0.05))
    hopeless = acceptance_stats(SpecDecodeCounts(1000, 4000, 40, (40, 0, 0, 0)))
    assert "turn it off" in hopeless.advice(c=0.5)[-1]


def test_advice_depends_on_gamma():
    # PR #48892's MTP k = 1 run: tau 1.83 can never reach 2 at gamma 1, and gamma cannot shrink
    k1 = acceptance_stats(log_counts(sample_path("spec_decode_v09.log").read_text()))
    assert k1.num_speculative_tokens == 1
    first = k1.advice()[0]
    assert "shrink" not in first
    assert "gamma 1" in first and "try a larger num_speculative_tokens" in first
    # at gamma 1 Corollary 3.9 decides: 30 % acceptance pays against c 0.05 (assumed, and said
    # so), does not against a measured c of 0.5 -- no fixed 50 % bar
    weak = acceptance_stats(SpecDecodeCounts(1000, 1000, 300, (300,)))
    assumed = weak.advice()[0]
    assert "alpha > c, so it pays (Corollary 3.9)" in assumed and "0.05 assumed" in assumed
    assert "50%" not in assumed and "shrink" not in assumed
    measured = weak.advice(c=0.5)[0]
    assert "alpha <= c" in measured and "change method" in measured
    assert "assumed" not in measured
    # from gamma 2 on, the article's rule holds, and the gamma is named
    two = acceptance_stats(SpecDecodeCounts(1000, 2000, 800, (600, 200)))
    assert "1.80 < 2 at gamma 2: shrink num_speculative_tokens" in two.advice()[0]


def test_acceptance_length_advice_actions():
    from specnb.theory import optimal_gamma
    from specnb.vllm import acceptance_length_advice, gamma1_verdict

    # gamma 1: gamma1_verdict's action at the measured c, or at c = 0.05 (assumed, stated)
    assert acceptance_length_advice(1.9, 1)[0] == "grow"
    assert acceptance_length_advice(1.2, 1)[0] == gamma1_verdict(0.2, 0.05)[0] == "ok"
    assert optimal_gamma(0.2, 0.05)[0] == 1  # 20 % acceptance: it pays, gamma 1 is the best
    assert acceptance_length_advice(1.2, 1, c=0.2)[0] == "off"  # alpha = c: nothing pays
    assert acceptance_length_advice(1.3, 1, c=0.2)[0] == "ok"  # optimal_gamma(0.3, 0.2) = 1
    assert optimal_gamma(0.3, 0.2)[0] == 1
    assert acceptance_length_advice(1.2, 1, acceptance_rate=0.05)[0] == "off"  # rate decides
    sentence = acceptance_length_advice(1.2, 1, c=0.1)[1]
    assert sentence.startswith(gamma1_verdict(0.2, 0.1)[1]) and "at gamma 1" in sentence
    assert acceptance_length_advice(1.9, 3)[0] == "shrink"
    assert acceptance_length_advice(1.9, None)[0] == "shrink"
    assert acceptance_length_advice(2.5, 3) == (
        "ok", "mean acceptance length 2.50 >= 2: each verification fixes 2.50 tokens on "
              "average (at most 4 at gamma 3)")


def test_a_gamma_the_counts_contradict_is_an_error():
    after = read_metrics(sample_path("metrics_after.prom").read_text())  # k = 8 in the data
    with pytest.raises(ValueError, match=r"num_speculative_tokens=5 contradicts the counts.*"
                                         r"8\.00 tokens per step.*8 per-position series.*"
                                         r"gamma >= 8"):
        acceptance_stats(after, num_speculative_tokens=5)
    # the per-position series alone is enough
    with pytest.raises(ValueError, match=r"num_speculative_tokens=2 .* 3 per-position series"):
        acceptance_stats(SpecDecodeCounts(100, 200, 60, (30, 20, 10)), num_speculative_tokens=2)
    # fewer draft tokens than gamma x drafts stays allowed (structured output, dynamic depth)
    s = acceptance_stats(SpecDecodeCounts(100, 250, 60), num_speculative_tokens=3)
    assert s.num_speculative_tokens == 3 and any("fewer tokens" in n for n in s.notes)
    assert acceptance_stats(after, num_speculative_tokens=8).alpha == pytest.approx(0.812, abs=1e-3)
    with pytest.raises(ValueError, match="inconsistent.*exceeds the 2 per-position series"):
        acceptance_stats(SpecDecodeCounts(100, 300, 60, (40, 20)))


def test_formatted_frame_and_log_sources():
    scrape = acceptance_stats(read_metrics(SECTION_3_5)).to_frame(formatted=True)
    assert scrape["value"].iloc[0] == "11,043" and scrape["value"].iloc[-1] == "0.812"
    assert scrape["from"].iloc[0] == "vllm:spec_decode_num_drafts"
    log = acceptance_stats(log_counts(sample_path("spec_decode_current.log").read_text()))
    assert log.to_frame()["from"].iloc[0].startswith("log:")


def test_promql_uses_series_that_exist():
    from specnb.vllm import PROMQL, WATCH

    for query in PROMQL.values():
        for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
            assert f"vllm:spec_decode_{name}[" not in query  # the docstring's missing _total
    assert {w[1] for w in WATCH} >= set(PROMQL.values())


def test_sample_files():
    from specnb.vllm import sample_names

    assert "metrics_after.prom" in sample_names()
    with pytest.raises(ValueError, match="must be one of"):
        sample_path("nope.prom")


# ----------------------------------------------------------------- edge and bad input (r2)
_SCRAPE = ("# TYPE vllm:spec_decode_num_drafts_total counter\n"
           "vllm:spec_decode_num_drafts_total{{model_name=\"m\"}} {d}\n"
           "# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
           "vllm:spec_decode_num_draft_tokens_total{{model_name=\"m\"}} {t}\n"
           "# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
           "vllm:spec_decode_num_accepted_tokens_total{{model_name=\"m\"}} {a}\n")


def test_huge_counters_are_refused_not_a_traceback_or_a_10_to_the_298_tau(tmp_path, capsys):
    from specnb.cli import main
    from specnb.vllm.metrics import acceptance_rate_ci

    low, high = acceptance_rate_ci(1e300, 1e308)  # the fallback formula in floats
    assert 0 <= low <= high <= 1e-7
    p = tmp_path / "m.prom"
    p.write_text(_SCRAPE.format(d=100, t="1e308", a="1e300"))
    assert main(["metrics", str(p)]) == 1
    err = capsys.readouterr().err
    assert "draft tokens / drafts = 1e+308 / 100 = 1e+306 tokens per step is no draft" in err


def test_a_window_that_accepted_without_drafting_is_inconsistent_not_empty(tmp_path, capsys):
    from specnb.cli import main

    before, after = tmp_path / "a.prom", tmp_path / "b.prom"
    before.write_text(_SCRAPE.format(d=100, t=300, a=150))
    after.write_text(_SCRAPE.format(d=100, t=300, a=500))
    assert main(["metrics", str(before), str(after)]) == 1
    err = capsys.readouterr().err
    assert "accepted tokens (350) exceed draft tokens (0)" in err, err


def test_a_negative_log_count_is_named():
    line = ("INFO [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 2.50, "
            "Accepted: -150 tokens, Drafted: 300 tokens\n")
    with pytest.raises(ValueError, match=r"without accepted \(no 'Accepted: N tokens' with N a "
                                         r"whole number >= 0\)"):
        read_spec_decode_log(line)


def test_a_k_beyond_2_to_the_53_is_a_usage_error(tmp_path, capsys):
    from specnb.cli import main

    p = tmp_path / "m.prom"
    p.write_text(_SCRAPE.format(d=100, t=300, a=150))
    with pytest.raises(SystemExit) as info:
        main(["metrics", str(p), "-k", str(10 ** 21)])
    assert info.value.code == 2
    assert "must be at most 2**53" in capsys.readouterr().err


def test_a_log_that_also_holds_a_scrape_or_printout_says_which_part_it_read():
    from specnb.vllm.read import read_acceptance

    line = ("INFO [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 2.50, "
            "Accepted: 150 tokens, Drafted: 300 tokens, Per-position acceptance rate: 0.700, "
            "0.500, 0.300\n")
    scrape = _SCRAPE.format(d=100, t=300, a=150)
    header = read_acceptance(scrape + line).header
    assert any("also holds a /metrics scrape" in h for h in header), header
    printout = "num_drafts: 10\nnum_draft_tokens: 30\nnum_accepted_tokens: 15\n"
    assert any("spec_decode.py printout" in h for h in read_acceptance(printout + line).header)
    assert not any("also holds" in h for h in read_acceptance(line).header)
