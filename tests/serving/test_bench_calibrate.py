"""specnb.serving.bench_calibrate: the calibration on vllm bench serve runs (published sweeps as
--save-result dicts, a held-out concurrency, coded notes, bad runs)."""

from __future__ import annotations

import pandas as pd
import pytest

from specnb import serving as S


def _runs(source, keep=None, **kw):
    from specnb.vllm import bench_point

    out = [bench_point(d) for d in S.published_bench_results(source, **kw)]
    df = pd.DataFrame(out)
    return df if keep is None else df[keep(df)].reset_index(drop=True)


def test_published_bench_results_carry_the_printed_numbers():
    runs = S.published_bench_results("magicdec-table3a")
    t = S.magicdec_table("table3a")
    assert len(runs) == 2 * len(t)
    off, on = runs[0], runs[1]
    assert off["mean_tpot_ms"] == t["t_ar_ms"].iloc[0] and on["mean_tpot_ms"] == t["t_sd_ms"].iloc[0]
    assert on["spec_decode_acceptance_length"] == t["omega"].iloc[0]
    assert on["spec_decode_draft_tokens"] / on["spec_decode_num_drafts"] == t["gamma"].iloc[0]
    # mean decode context = input + output / 2 = the printed context
    n = off["completed"]
    assert off["total_input_tokens"] / n + off["total_output_tokens"] / n / 2 == t["context"].iloc[0]
    v1 = S.published_bench_results("vllm-i20780-eagle3")
    assert [d["max_concurrency"] for d in v1] == [1] * 7
    assert v1[0]["mean_tpot_ms"] == 7.07
    with pytest.raises(ValueError, match="source"):
        S.published_bench_results("nope")


def test_bench_calibration_fits_the_runs_and_predicts_a_held_out_concurrency():
    """MagicDec Table 3(a) as bench runs: fit on concurrencies 32 and 48 (every context),
    predict 64 and 128. The speedup (TPOT off / on) of the held-out runs is predicted within
    5 % (median), the fitted runs' TPOT within 3 %; the uncalibrated model is worse."""
    runs = _runs("magicdec-table3a")
    st = S.magicdec_setup("table3a")
    train = runs["concurrency"].isin([32, 48])
    cal = S.calibrate_bench(st, runs[train])
    assert set(cal.fitted) >= {"bandwidth", "fixed_ms", "sd_overhead_ms"}
    assert cal.report["tpot_error"].abs().max() < 0.03
    assert cal.report["throughput_error"].abs().max() < 0.03
    held = S.predict_bench(cal.setup, runs[~train])
    assert set(held["concurrency"]) == {64, 128}
    default = S.predict_bench(st, runs[~train])

    def speedup_error(p):
        key = ["context", "concurrency"]
        on, off = p[p["speculation"]].set_index(key), p[~p["speculation"]].set_index(key)
        return ((off["predicted_tpot_ms"] / on["predicted_tpot_ms"])
                / (off["tpot_ms"] / on["tpot_ms"]) - 1.0).abs()

    assert speedup_error(held).median() < 0.05
    assert held["tpot_error"].abs().median() < default["tpot_error"].abs().median()
    # predict() at a concurrency not run: TPOT from the calibrated setup, marked not run
    pred = cal.predict([48, 96], context=4000)
    row = pred[pred["concurrency"] == 96].iloc[0]
    assert not row["run"] and pred[pred["concurrency"] == 48].iloc[0]["run"]
    assert row["tpot_off_ms"] == pytest.approx(S.t_plain_ms(cal.setup, 96, 4000))
    assert row["speedup"] == pytest.approx(row["tpot_off_ms"] / row["tpot_on_ms"])
    assert row["tau"] == pytest.approx(runs.loc[train & runs["speculation"], "tau"].mean())
    assert row["speedup"] == pytest.approx(
        float(S.speedup(cal.setup, 96, 4000, 2, tau=row["tau"])))


def test_bench_calibration_at_one_concurrency_is_noted_and_predicts_held_out_gamma():
    """vLLM V1 (#20780, batch 1): fit on K = 2, 4, 7 and the plain run; K = 3, 5, 6 within
    5 % of their printed TPOT (the defaults miss by more); one concurrency is noted."""
    runs = _runs("vllm-i20780-eagle3")
    st = S.setup("H100-SXM", "Llama-3.1-8B", "eagle3")
    train = ~runs["speculation"] | runs["gamma"].isin([2, 4, 7])
    cal = S.calibrate_bench(st, runs[train])
    assert "fit-one-batch" in {n.code for n in cal.notes}
    held = S.predict_bench(cal.setup, runs[~train])
    assert held["tpot_error"].abs().max() < 0.05
    assert S.predict_bench(st, runs[~train])["tpot_error"].abs().median() > 0.05
    assert sorted(cal.tau) == [2, 4, 7]


@pytest.mark.parametrize("change, match", [
    (lambda r: r.assign(model_id=["a/x"] + ["b/y"] * (len(r) - 1)), "mixed models in one "
     "calibration set"),
    (lambda r: r.assign(speculation=False), "every run has speculation off"),
    (lambda r: r.assign(tau=float("nan")), "speculation on but no tau"),
    (lambda r: r.assign(tau=3.5), "tau 3.5 exceeds gamma \\+ 1 = 3"),
    (lambda r: r.assign(tpot_ms=0.0), "tpot_ms must be a positive number"),
    (lambda r: r.assign(output_len=1.0), "output_len .* must be >= 2"),
    (lambda r: r.drop(columns=["ttft_ms"]), "missing column\\(s\\) ttft_ms"),
])
def test_bench_calibration_bad_runs(change, match):
    runs = _runs("magicdec-table3a", keep=lambda d: d["concurrency"] == 32)
    with pytest.raises(ValueError, match=match):
        S.calibrate_bench(S.magicdec_setup("table3a"), change(runs))


def test_bench_calibration_tau_and_gamma_given_for_files_without_spec_keys():
    runs = _runs("vllm-i20780-eagle3", keep=lambda d: d["gamma"].isna() | (d["gamma"] == 3))
    bare = runs.assign(tau=float("nan"), gamma=float("nan"))
    with pytest.raises(ValueError, match="no gamma"):
        S.calibrate_bench(S.setup("H100-SXM", "Llama-3.1-8B", "eagle3"), bare, tau=2.79)
    cal = S.calibrate_bench(S.setup("H100-SXM", "Llama-3.1-8B", "eagle3"), bare, tau=2.79,
                            gamma=3)
    ref = S.calibrate_bench(S.setup("H100-SXM", "Llama-3.1-8B", "eagle3"), runs)
    assert cal.fitted == pytest.approx(ref.fitted)


def test_throughput_implied_tpot_excludes_the_first_token():
    # R6: a closed loop of 2 requests, 3 tokens each, TTFT 100 ms, TPOT 10 ms: each request
    # takes 100 + (3 - 1) x 10 = 120 ms, so 2 x 3 tokens / 0.12 s = 50 tok/s; dividing by
    # n = 3 instead of n - 1 = 2 would give (120 - 100) / 3 = 6.67 ms
    from specnb.serving.bench_calibrate import _implied_tpot_ms

    assert _implied_tpot_ms(2, 3, 50.0, 100.0) == pytest.approx(10.0)
    # and the published runs' own throughput (built the same way) gives back their TPOT
    for run in S.published_bench_results("magicdec-table3a")[:4]:
        n = run["total_output_tokens"] / run["completed"]
        assert _implied_tpot_ms(run["max_concurrency"], n, run["output_throughput"],
                                run["mean_ttft_ms"]) == pytest.approx(run["mean_tpot_ms"])
