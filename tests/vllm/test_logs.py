"""specnb.vllm.logs: vLLM's log lines (V1 of every version, V0) and the offline printout."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from specnb.vllm import acceptance_stats, log_counts, sample_path
from specnb.vllm.logs import read_spec_decode_log
from specnb.vllm import read_acceptance
from specnb.advise import acceptance_advice
from specnb.notes import codes


#: Printed values: PR #48892 via section 3.5.
PRINTED_RATE, PRINTED_LENGTH = "43.71", "4.50"


# --------------------------------------------------------------------------- log lines
#: Current format with an extra field and a prefix (published in a public GitHub file).
DFLASH_LINE = ("(APIServer pid=1) INFO 09-04 11:01:16 [metrics.py:125] SpecDecoding metrics: "
               "Mean acceptance length: 6.82, Current speculative depth: 7, Accepted throughput: "
               "6.46 tokens/s, Drafted throughput: 7.77 tokens/s, Accepted: 256 tokens, "
               "Drafted: 308 tokens, Per-position acceptance rate: 1.000, 1.000, 1.000, 1.000, "
               "0.795, 0.614, 0.409, Avg Draft acceptance rate: 83.1%")


CASES = Path(__file__).parent.parent / "cases"


FIELD = CASES / "field-reports"


def field(name: str) -> str:
    return (FIELD / name).read_text(encoding="utf-8")


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


def test_a_negative_log_count_is_named():
    line = ("INFO [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 2.50, "
            "Accepted: -150 tokens, Drafted: 300 tokens\n")
    with pytest.raises(ValueError, match=r"without accepted \(no 'Accepted: N tokens' with N a "
                                         r"whole number >= 0\)"):
        read_spec_decode_log(line)


# --------------------------------------------------------------------------- V0 rates only
def test_v0_rates_only_line_gives_tau_from_the_system_efficiency():
    r = read_acceptance(field("metrics_v0_rates_only.log"))
    s = r.stats
    assert f"{s.mean_acceptance_length:.2f}" == "2.56"  # 0.426 x (5 + 1)
    assert f"{s.acceptance_rate:.3f}" == "0.311"         # (2.56 - 1) / 5
    assert s.num_speculative_tokens == 5
    notes = " ".join(s.notes)
    assert "0.698" in notes and "after a rejection" in notes
    # no counts: the window's size is unknown (specnb.advise says so)
    assert "window-size-unknown" in codes(acceptance_advice(s))


def test_v0_rates_only_own_input_with_a_prefix():
    text = ("vllm-1  | INFO 05-01 09:00:00 metrics.py:477] Speculative metrics: Draft acceptance "
            "rate: 0.500, System efficiency: 0.600, Number of speculative tokens: 3\n")
    s = read_acceptance(text).stats
    assert s.mean_acceptance_length == pytest.approx(0.6 * 4)
    assert s.acceptance_rate == pytest.approx((2.4 - 1) / 3)
    with pytest.raises(ValueError, match="contradicts the log line"):
        read_acceptance(text, num_speculative_tokens=4)


def test_v08_own_input_two_intervals_are_summed():
    text = ("INFO [loggers.py:80] SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: "
            "30 tokens, Drafted: 60 tokens\n"
            "INFO [loggers.py:80] SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: "
            "10 tokens, Drafted: 20 tokens\n")
    s = read_acceptance(text, num_speculative_tokens=4).stats
    assert (s.counts.drafts, s.counts.accepted_tokens) == (20, 40)
    assert s.mean_acceptance_length == pytest.approx(3.0)
    assert math.isnan(read_acceptance(text).stats.mean_acceptance_length)


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


def test_v0_counts_line_a_k_other_than_the_printed_one_is_an_error():
    # a V0 line prints 'Number of speculative tokens: 3': -k 5 gave another alpha silently
    text = sample_path("spec_decode_v0.log").read_text()
    assert read_acceptance(text, num_speculative_tokens=3).stats.num_speculative_tokens == 3
    with pytest.raises(ValueError, match="num_speculative_tokens=5 contradicts the log line"):
        read_acceptance(text, num_speculative_tokens=5)


_LINE = ("INFO [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.91, Accepted: "
         "44 tokens, Drafted: 161 tokens, Avg Draft acceptance rate: 27.3%")
_V0 = ("INFO Speculative metrics: Draft acceptance rate: 0.500, System efficiency: 0.600, "
       "Number of speculative tokens: 3, Number of accepted tokens: 100, Number of draft "
       "tokens: 200, Number of emitted tokens: 150.")


@pytest.mark.parametrize("line, old, new, match", [
    (_LINE, "Drafted: 161", "Drafted: " + "9" * 400, r"line 1: Drafted: 999999999999\.\.\.9999 "
                                                      r"\(400 digits\) is too large"),
    (_LINE, "Accepted: 44", "Accepted: " + "9" * 400, r"line 1: Accepted: .* is too large"),
    (_LINE, "Drafted: 161", f"Drafted: {2 ** 53 + 1}", "is too large"),
    (_LINE, "length: 2.91", "length: " + "9" * 400, r"line 1: Mean acceptance length: "
                                                    r"999999999999\.\.\.9999 \(400 digits\) is not"),
    (_LINE, "length: 2.91", "length: 0.5", r"Mean acceptance length: 0\.5 is not a mean "
                                           r"acceptance length \(a finite number >= 1"),
    (_V0, "draft tokens: 200", "draft tokens: " + "9" * 400, "Number of draft tokens: .* is too "
                                                              "large"),
])
def test_counts_no_float_holds_and_absurd_lengths_are_damaged_lines(line, old, new, match):
    # trial 6 T6-T5 (an OverflowError) and T6-C4 (a 400-digit length made drafts 0: "no
    # speculation in this window")
    with pytest.raises(ValueError, match=match):
        log_counts(line.replace(old, new))
    assert log_counts(line).draft_tokens == (161 if "SpecDecoding" in line else 200)  # intact
