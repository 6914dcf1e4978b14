"""specnb.advise.watch: the verdicts on measured acceptance (Corollary 3.9, Theorem 3.8, the
article's tau rule, per-position tails, thin windows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specnb.advise import (MIN_DRAFTS, acceptance_advice, best_draft_length, gamma1_verdict,
                           thin_window, watch_table)
from specnb.advise.evidence import MAX_PLAUSIBLE_K, theorem_sentence
from specnb.notes import codes, messages
from specnb.vllm import (SpecDecodeCounts, acceptance_stats, log_counts, read_acceptance,
                         read_metrics, sample_path)


CASES = Path(__file__).parent.parent / "cases"


#: ../shared/reference/vllm.md section 3.5 (b), verbatim.
SECTION_3_5 = (CASES / "vllm_metrics_section_3_5.prom").read_text()


FIELD = CASES / "field-reports"


def field(name: str) -> str:
    return (FIELD / name).read_text(encoding="utf-8")


def advice_text(stats, c=None) -> str:
    return " ".join(messages(acceptance_advice(stats, c)))


def advice_codes(stats, c=None) -> list[str]:
    return codes(acceptance_advice(stats, c))


# ----------------------------------------------------------------------------- watch
def test_gamma1_verdict_follows_corollary_3_9():
    # PR #48892's k = 1 run: 83.39 % acceptance
    action, text = gamma1_verdict(0.8339, 0.05)
    assert action == "grow" and f"{(1 + 0.8339) / 1.05:.2f}x" in text
    assert gamma1_verdict(0.05, 0.05)[0] == "off"  # alpha <= c: no gamma pays
    assert gamma1_verdict(0.06, 0.05)[0] != "off"  # just above c it pays, whatever 50 % says
    assert gamma1_verdict(0.3, 0.2)[0] == "ok"  # optimal_gamma(0.3, 0.2) is 1
    with pytest.raises(ValueError, match="acceptance_rate"):
        gamma1_verdict(1.2, 0.05)


def test_watch_table_has_no_unsourced_fifty_percent():
    from specnb.advise.watch import WATCH

    w = watch_table()
    text = " ".join(w["act when"])
    assert "50%" not in text and "50 %" not in text and "Corollary 3.9" in text
    assert "the draft adds prefill work" not in text  # a possibility, not a known cause
    assert "per-request acceptance" in set(w["what"])
    assert [tuple(r) for r in w.itertuples(index=False)] == list(WATCH)  # one list, not two


def test_advice_restates_gamma1_and_theorem_lines():
    from specnb.theory import optimal_gamma
    from specnb.vllm import metrics_delta

    k1 = acceptance_stats(log_counts(sample_path("spec_decode_v09.log").read_text()))
    notes = acceptance_advice(k1, c=0.05)
    lines = messages(notes)
    assert codes(notes)[0] == "gamma1-grow"
    assert lines[0].startswith(gamma1_verdict(k1.acceptance_rate, 0.05)[1])
    assert lines[0].startswith("gamma 1, acceptance rate 83.4%") and "Corollary 3.9" in lines[0]
    # the theory line is folded into the gamma-1 verdict, which names the best gamma
    assert f"gamma {optimal_gamma(k1.alpha, 0.05)[0]} would give" in lines[0]
    assert not any(x.startswith("at the implied alpha") for x in lines)
    k8 = acceptance_stats(metrics_delta(sample_path("metrics_before.prom").read_text(),
                                        sample_path("metrics_after.prom").read_text()))
    text = advice_text(k8, c=0.05)
    assert "upper bound" not in text and "0.68x to 1.29x" in text
    assert "theorem-at-alpha" in advice_codes(k8, c=0.05)
    assert "theorem-at-alpha" not in advice_codes(k8) and "Theorem 3.8" not in advice_text(k8)


def test_theorem_advice_names_both_gammas_and_table4():
    from specnb.theory import optimal_gamma, walltime_speedup
    from specnb.advise import theorem_advice

    g, best = optimal_gamma(0.6, 0.05)
    line = theorem_advice(0.6, 8, 0.05)
    assert f"{walltime_speedup(0.6, 8, 0.05):.2f}x at gamma 8 and {best:.2f}x at gamma {g}" in line
    assert theorem_sentence() in line
    assert "already the best gamma" in theorem_advice(0.6, g, 0.05)
    assert "turn it off" in theorem_advice(0.1, 3, 0.2)
    with pytest.raises(ValueError, match="gamma"):
        theorem_advice(0.6, 0, 0.05)


def test_advice_follows_the_article_and_the_theory():
    from specnb.theory import optimal_gamma, walltime_speedup
    from specnb.advise import theorem_vs_measured

    t = theorem_vs_measured()["ratio"]
    either_side = f"{t.min():.2f}x to {t.max():.2f}x of it"  # Leviathan Table 4: 0.68 to 1.29
    good = acceptance_stats(read_metrics(SECTION_3_5))
    line = messages(acceptance_advice(good, c=0.05))[-1]
    assert "already the best gamma" in line and either_side in line
    poor = acceptance_stats(SpecDecodeCounts(1000, 4000, 500, (400, 80, 15, 5)))
    assert "< 2 at gamma 4: shrink num_speculative_tokens" in messages(acceptance_advice(poor))[0]
    g, best = optimal_gamma(poor.alpha, 0.05)  # a shorter gamma would do better
    line = messages(acceptance_advice(poor, c=0.05))[-1]
    assert 1 <= g < 4 and f"{walltime_speedup(poor.alpha, 4, 0.05):.2f}x at gamma 4" in line
    assert f"{best:.2f}x at gamma {g}" in line and either_side in line
    assert not any("upper bound" in x for x in messages(acceptance_advice(good, c=0.05)) + messages(acceptance_advice(poor, c=0.05)))
    hopeless = acceptance_stats(SpecDecodeCounts(1000, 4000, 40, (40, 0, 0, 0)))
    assert "turn it off" in messages(acceptance_advice(hopeless, c=0.5))[-1]


def test_advice_depends_on_gamma():
    # PR #48892's MTP k = 1 run: tau 1.83 can never reach 2 at gamma 1, and gamma cannot shrink
    k1 = acceptance_stats(log_counts(sample_path("spec_decode_v09.log").read_text()))
    assert k1.num_speculative_tokens == 1
    first = messages(acceptance_advice(k1))[0]
    assert advice_codes(k1)[0] == "gamma1-grow"
    assert "shrink" not in first
    assert "gamma 1" in first and "try a larger num_speculative_tokens" in first
    # at gamma 1 Corollary 3.9 decides: 30 % acceptance pays against c 0.05 (assumed, and said
    # so), does not against a measured c of 0.5 -- no fixed 50 % bar
    weak = acceptance_stats(SpecDecodeCounts(1000, 1000, 300, (300,)))
    assumed = messages(acceptance_advice(weak))[0]
    assert advice_codes(weak)[0] == "gamma1-grow" and advice_codes(weak, c=0.5)[0] == "gamma1-off"
    assert "alpha > c, so it pays (Corollary 3.9)" in assumed and "0.05 assumed" in assumed
    assert "50%" not in assumed and "shrink" not in assumed
    measured = messages(acceptance_advice(weak, c=0.5))[0]
    assert "alpha <= c" in measured and "change method" in measured
    assert "assumed" not in measured
    # from gamma 2 on, the article's rule holds, and the gamma is named
    two = acceptance_stats(SpecDecodeCounts(1000, 2000, 800, (600, 200)))
    assert "1.80 < 2 at gamma 2: shrink num_speculative_tokens" in messages(acceptance_advice(two))[0]
    assert advice_codes(two)[0] == "acceptance-length-shrink"


def test_acceptance_length_advice_actions():
    from specnb.theory import optimal_gamma
    from specnb.advise import acceptance_length_advice, gamma1_verdict

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


def test_promql_uses_series_that_exist():
    from specnb.advise.watch import WATCH
    from specnb.vllm import PROMQL

    for query in PROMQL.values():
        for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
            assert f"vllm:spec_decode_{name}[" not in query  # the docstring's missing _total
    assert {w[1] for w in WATCH} >= set(PROMQL.values())


# --------------------------------------------------------------------------- few drafts, tail
def test_few_drafts_numbers_as_printed_and_thin_and_tail_advice():
    s = read_acceptance(field("metrics_few_drafts.log")).stats
    c = s.counts
    assert (c.draft_tokens, c.accepted_tokens, c.drafts) == (161 + 385, 44 + 106, 23 + 55)
    assert f"{100 * 44 / 161:.1f}" == "27.3" and f"{100 * 106 / 385:.1f}" == "27.5"
    assert f"{1 + 44 / 23:.2f}" == "2.91" and f"{1 + 106 / 55:.2f}" == "2.93"
    assert thin_window(s) and c.drafts < MIN_DRAFTS
    assert advice_codes(s)[:1] == ["thin-window"] and "shorter-draft-pays" in advice_codes(s)
    text = advice_text(s)
    assert "78 drafts" in text and "cannot support a verdict" in text and "95% CI" in text
    assert "positions 6-7 of 7" in text and "num_speculative_tokens = 5" in text
    assert all(r < 0.10 for r in s.per_position[5:])  # positions 6-7 under 10 %
    # with a c, Theorem 3.8 at the implied alpha, stated as Leviathan Table 4 shows it
    text = advice_text(s, c=0.05)
    assert "Theorem 3.8 gives" in text and "either side of Theorem 3.8" in text
    assert "upper bound" not in text


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
    assert not thin_window(s)
    assert "thin-window" not in advice_codes(s) and "every-position-pays" in advice_codes(s)
    text = advice_text(s)
    assert "cannot support" not in text and "every position pays" in text


# --------------------------------------------------------------------------- zero accepted
def test_zero_accepted_points_to_misconfiguration():
    s = read_acceptance(field("metrics_v0_cumulative.log")).stats
    assert s.counts.accepted_tokens == 0 and advice_codes(s)[0] == "no-accepted-tokens"
    assert "misconfiguration" in messages(acceptance_advice(s))[0]
    text = ("INFO SpecDecoding metrics: Mean acceptance length: 1.00, Accepted throughput: 0.00 "
            "tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: 0 tokens, Drafted: 2000 "
            "tokens, Per-position acceptance rate: 0.000, 0.000, 0.000, 0.000, Avg Draft "
            "acceptance rate: 0.0%\n")
    own = read_acceptance(text, num_speculative_tokens=4).stats
    assert advice_codes(own) == ["no-accepted-tokens"]
    advice = messages(acceptance_advice(own))
    assert "misconfiguration" in advice[0] and "not to tuning" in advice[0]


def test_v08_window_of_1000_draft_tokens_is_not_judged_as_1000_drafts():
    # 1000 draft tokens hold only 125 drafts at k = 8: without -k the window is thin unless
    # even k = MAX_PLAUSIBLE_K (32) gives MIN_DRAFTS drafts
    line = ("INFO 04-01 00:00:00 [loggers.py:80] SpecDecoding metrics: Draft acceptance rate: "
            "70.0%, Accepted: {a} tokens, Drafted: {n} tokens")
    s = read_acceptance(line.format(a=700, n=1000)).stats
    assert thin_window(s) and s.counts.drafts != s.counts.drafts  # NaN: unknown
    assert advice_codes(s)[0] == "thin-window-drafts-unknown"
    text = advice_text(s)
    assert f"{1000 / 8:,.0f} at k = 8" == "125 at k = 8" and "125 at k = 8" in text
    assert f"only if k <= {1000 // MIN_DRAFTS}" in text and "only if k <= 2" in text
    assert f"1-{MAX_PLAUSIBLE_K}" in text and MAX_PLAUSIBLE_K == 32
    # k given: 1000 / 2 = 500 drafts >= 385, not thin; k = 3: 333, thin
    assert not thin_window(read_acceptance(line.format(a=700, n=1000), 2).stats)
    assert thin_window(read_acceptance(line.format(a=700, n=1000), 3).stats)
    # enough tokens that even k = 32 gives >= 385 drafts: 12320 / 32 = 385
    big = read_acceptance(line.format(a=8624, n=385 * MAX_PLAUSIBLE_K)).stats
    assert not thin_window(big) and "no draft count" not in advice_text(big)
    assert thin_window(read_acceptance(line.format(a=8623, n=385 * MAX_PLAUSIBLE_K - 1)).stats)
