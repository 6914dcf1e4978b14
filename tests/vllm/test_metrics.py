"""specnb.vllm.metrics: /metrics scrapes, acceptance and the alpha they imply."""

from __future__ import annotations

from pathlib import Path
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specnb.theory import expected_tokens_per_step
from specnb.vllm import (SpecDecodeCounts, acceptance_stats, log_counts, metrics_delta,
                         read_metrics, sample_path)
from specnb.advise import MIN_DRAFTS
from specnb.vllm.metrics import acceptance_rate_ci
from tests.tier import examples


CASES = Path(__file__).parent.parent / "cases"


#: ../shared/reference/vllm.md section 3.5 (b), verbatim.
SECTION_3_5 = (CASES / "vllm_metrics_section_3_5.prom").read_text()


#: Printed values: PR #48892 via section 3.5.
PRINTED_RATE, PRINTED_LENGTH = "43.71", "4.50"


PRINTED_PER_POS = ["76.17", "61.58", "51.25", "42.43", "36.40", "30.94", "27.22", "23.65"]


def _engine_lines(name, values, suffix="_total", extra=""):
    return "\n".join(f'{name}{suffix}{{engine="{i}",model_name="m"{extra}}} {v}'
                     for i, v in enumerate(values))


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


def test_a_series_twice_is_two_scrapes_in_one_file_not_a_sum():
    # trial4 W1: an appended second scrape doubled drafts (tau 4.50 -> 2.75) silently
    after = sample_path("metrics_after.prom").read_text()
    drafts = [line for line in after.splitlines()
              if line.startswith("vllm:spec_decode_num_drafts_total")]
    per_pos = [line for line in after.splitlines() if 'position="3"' in line
               and line.startswith("vllm:spec_decode_num_accepted_tokens_per_pos_total")]
    for extra in (drafts, per_pos, after.splitlines()):
        with pytest.raises(ValueError, match="appears twice"):
            read_metrics(after + "\n".join(extra) + "\n")
    assert read_metrics(after).drafts == 11043  # distinct engines are still summed (above)


def test_per_position_counts_from_log_rates_are_said_to_be_estimates():
    # trial4 K1: 8,415 ... 2,617 (sum 38,606) beside accepted 38,611, with no word
    log = log_counts(sample_path("spec_decode_current.log").read_text())
    stats = acceptance_stats(log)
    total = sum(log.accepted_per_position)
    assert round(total) != log.accepted_tokens
    assert any("estimates" in n and f"{total:,.0f}" in n for n in stats.notes)
    scrape = acceptance_stats(read_metrics(sample_path("metrics_after.prom").read_text()))
    assert not any("estimates" in n for n in scrape.notes)  # exact counters: no such note


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


@settings(max_examples=examples(200), deadline=None)
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


def test_a_gamma_above_the_per_position_series_is_a_usage_error():
    # vLLM exports one per-position series per draft position, so 8 series mean k = 8:
    # a larger gamma is not the server's (fault 21), whatever the format
    from specnb.vllm import UsageError, read_acceptance

    after = read_metrics(sample_path("metrics_after.prom").read_text())
    assert len(after.accepted_per_position) == 8
    for k in (9, 10 ** 9):
        with pytest.raises(UsageError, match=rf"num_speculative_tokens={k} is above the 8 "
                                             r"per-position series"):
            acceptance_stats(after, num_speculative_tokens=k)
    assert issubclass(UsageError, ValueError)
    with pytest.raises(UsageError, match="=4 is above the 3 per-position series"):
        acceptance_stats(SpecDecodeCounts(100, 250, 60, (30, 20, 10)), num_speculative_tokens=4)
    # a V1 log line lists k per-position rates: the same rule
    log = sample_path("spec_decode_current.log").read_text()
    n = len(read_acceptance(log).stats.per_position)
    with pytest.raises(UsageError, match=rf"above the {n} per-position series"):
        read_acceptance(log, num_speculative_tokens=n + 1)
    # without per-position series the input cannot tell: fewer drafted tokens stay a note
    s = acceptance_stats(SpecDecodeCounts(100, 250, 60), num_speculative_tokens=9)
    assert s.num_speculative_tokens == 9 and any("fewer tokens" in x for x in s.notes)


# ------------------------------- plain sample lines read before the parser (issue 26, bigscan)
_LINES = [
    'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0',
    'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 7',
    'vllm:spec_decode_num_drafts_total{engine="1",model_name="a, b=c {x} # y é"} 12',
    'vllm:spec_decode_num_drafts_total{engine="2",engine="3"} 1.0',  # repeated label: refused
    'vllm:spec_decode_num_drafts_total{__name__="x"} 1.0',
    'vllm:spec_decode_num_drafts_total{__x="y"} 1.0',
    'vllm:spec_decode_num_drafts_total{_x="y",_="z"} 1.0',
    'vllm:spec_decode_num_drafts_total{_x="y"} 1.0',
    'vllm:spec_decode_num_drafts_total{engine="0"} 1.0 1700000000000',  # a timestamp
    'vllm:spec_decode_num_drafts_total{engine="0"} 1e3',
    'vllm:spec_decode_num_drafts_total{engine="0"} NaN',
    'vllm:spec_decode_num_drafts_total{engine="0"} -1.0',
    'vllm:spec_decode_num_drafts_total{engine="a\\"b"} 1.0',  # an escape
    'vllm:spec_decode_num_drafts_total{engine="0",} 1.0',  # trailing comma
    '  vllm:spec_decode_num_drafts_total{engine="0"} 1.0  ',
    'vllm:spec_decode_num_drafts_total{} 4.0',
    'vllm:spec_decode_num_drafts_total 4.0',
    'vllm:spec_decode_num_drafts{engine="0"} 3.0',  # renamed to _total under its counter TYPE
    'vllm:spec_decode_num_drafts 3.0',
    'vllm:spec_decode_num_draft_tokens_total{engine="0"} 30.0',
    'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="1"} 5.0',
    '# TYPE vllm:spec_decode_num_drafts counter',
    '# TYPE vllm:spec_decode_num_drafts_total counter',
    '# HELP vllm:spec_decode_num_drafts_total Number of drafts.',
    '# TYPE vllm:spec_decode_num_drafts_total summary',
    '# TYPE vllm:spec_decode_num_drafts histogram',
    '# TYPE vllm:spec_decode_num_drafts_total bogus',
    '# TYPE',
    '# a comment',
    '',
    '   ',
    'vllm:spec_decode_num_drafts_total{engine=0} 1.0',  # bad line
    'not a line at all',
]


def _parsed(block):
    from specnb.vllm import metrics as M

    try:
        return list(M._samples([block]))
    except ValueError as exc:
        return str(exc)


def _parser_alone(block):
    from prometheus_client.parser import text_string_to_metric_families

    try:
        return [s for fam in text_string_to_metric_families(block) for s in fam.samples]
    except Exception:
        return "refused"


def test_plain_sample_lines_read_as_prometheus_clients_parser_reads_them():
    import random

    rng = random.Random(26)
    for _ in range(3000):
        block = "\n".join(rng.choice(_LINES) for _ in range(rng.randint(1, 10))) + "\n"
        want, got = _parser_alone(block), _parsed(block)
        if want == "refused":
            assert isinstance(got, str) and got.startswith("not a format"), block
        else:
            assert repr(got) == repr(want), block  # repr: NaN equal, 7 (int) not 7.0


def test_plain_lines_are_read_before_the_parser_and_runs_of_one_name_go_as_one_line():
    from specnb.vllm import metrics as M

    block = ("# TYPE vllm:spec_decode_num_drafts_total counter\n"
             + "".join(f'vllm:spec_decode_num_drafts_total{{engine="{i}"}} {i}.0\n'
                       for i in range(1000))
             + 'vllm:spec_decode_num_drafts_total{engine="a\\"b"} 1.0\n')
    text, runs = M._plain_lines(block)
    assert text.count("\n") == 3 and [len(r) for r in runs[:1]] == [1000] and runs[1] is None
    assert _parsed(block) == _parser_alone(block)


def test_per_position_counts_that_do_not_sum_to_the_accepted_tokens_are_noted(tmp_path):
    # trial 6 C9: vLLM adds one to positions 0 .. n-1 for n accepted tokens
    # (SpecDecodingStats.observe_draft), so the per-position series sum to the accepted
    # counter; a scrape where they do not mixes windows or servers
    from specnb.vllm import acceptance_stats, read_metrics

    lines = ["# TYPE vllm:spec_decode_num_drafts_total counter",
             'vllm:spec_decode_num_drafts_total{engine="0"} 100.0',
             "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
             'vllm:spec_decode_num_draft_tokens_total{engine="0"} 400.0',
             "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
             'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 200.0',
             "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter"]
    for per in ((80, 65, 50, 35), (80, 60, 40, 20)):
        text = "\n".join(lines + [f'vllm:spec_decode_num_accepted_tokens_per_pos_total'
                                  f'{{engine="0",position="{i}"}} {v}.0'
                                  for i, v in enumerate(per)]) + "\n"
        notes = acceptance_stats(read_metrics(text)).notes
        noted = any("sum to 230, not the 200 accepted tokens" in n for n in notes)
        assert noted == (sum(per) == 230)


def test_rising_per_position_counts_are_refused():
    """T8a-06: a draft token is accepted only after every one before it: vLLM's per-position
    counts never rise (the one rule `specnb bench` and `plan --calibrate-bench` reuse)."""
    from specnb.vllm.metrics import SpecDecodeCounts, acceptance_stats

    ok = acceptance_stats(SpecDecodeCounts(100.0, 300.0, 150.0, (70.0, 50.0, 30.0)))
    assert ok.per_position == pytest.approx((0.7, 0.5, 0.3))
    with pytest.raises(ValueError, match=r"accepted at position 2 \(40\) exceeds position 1 "
                                         r"\(30\).*cannot rise"):
        acceptance_stats(SpecDecodeCounts(100.0, 300.0, 140.0, (70.0, 30.0, 40.0)))
