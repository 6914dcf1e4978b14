"""Calibration from `vllm bench serve` runs (specnb.serving.calibrate_bench): fit on two
concurrencies of a published sweep written as bench results (serving.published_bench_results),
predict the others.

Prints, per sweep: the fit's largest TPOT error on the files it was fitted on; on the held-out
files the median and max |error| of TPOT and of the speedup (TPOT off / on), calibrated and
with the defaults; the time one calibration takes.

Goal (issue 16): calibrating on two concurrencies of a bench sweep predicts the others within
5 % (median; here read as the speedup, the quantity `specnb plan` decides on).
Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_calibrate_bench.py
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from specnb import serving as S
from specnb.vllm import bench_point

GOAL = 0.05


def speedup_errors(p: pd.DataFrame) -> pd.Series:
    key = ["context", "concurrency"]
    on, off = p[p["speculation"]].set_index(key), p[~p["speculation"]].set_index(key)
    return ((off["predicted_tpot_ms"] / on["predicted_tpot_ms"])
            / (off["tpot_ms"] / on["tpot_ms"]) - 1.0).abs().dropna()


def one(name, st, runs, train, label, goal=True):
    t0 = time.perf_counter()
    cal = S.calibrate_bench(st, runs[train])
    ms = 1e3 * (time.perf_counter() - t0)
    held, base = S.predict_bench(cal.setup, runs[~train]), S.predict_bench(st, runs[~train])
    sp, sp0 = speedup_errors(held), speedup_errors(base)
    tp, tp0 = held["tpot_error"].abs(), base["tpot_error"].abs()
    ok = sp.median() <= GOAL
    print(f"  {name}: fit on {label} ({int(train.sum())} files; fit error max "
          f"{100 * cal.report['tpot_error'].abs().max():.1f} %, {ms:.0f} ms; notes: "
          f"{', '.join(n.code for n in cal.notes) or 'none'})")
    print(f"    held out ({int((~train).sum())} files): TPOT median {100 * tp.median():.1f} %, max "
          f"{100 * tp.max():.1f} % (defaults {100 * tp0.median():.1f} %, {100 * tp0.max():.1f} %)")
    if len(sp):
        print(f"    speedup median {100 * sp.median():.1f} %, max {100 * sp.max():.1f} % (defaults "
              f"{100 * sp0.median():.1f} %, {100 * sp0.max():.1f} %)"
              + (f"  goal median <= {100 * GOAL:.0f} %: {'met' if ok else 'MISSED'}" if goal
                 else "  (a subset: no goal)"))
    return ok


def main():
    runs = pd.DataFrame([bench_point(d) for d in S.published_bench_results("magicdec-table3a")])
    runs["context"] = np.round(runs["input_len"] + runs["output_len"] / 2)
    st = S.magicdec_setup("table3a")
    print("== MagicDec Table 3(a) as bench runs (8x A100, self-draft, gamma 2) ==")
    one("every context", st, runs, runs["concurrency"].isin([32, 48]).to_numpy(),
        "concurrency 32 and 48")
    for ctx in (1024, 4000, 8000):
        sub = runs[runs["context"] == ctx].reset_index(drop=True)
        one(f"context {ctx}", st, sub, sub["concurrency"].isin([32, 48]).to_numpy(),
            "concurrency 32 and 48", goal=False)
    print("== vLLM V1, issue #20780 (1x H100, Llama-3.1-8B, batch 1): held-out K ==")
    for head in ("eagle", "eagle3"):
        r = pd.DataFrame([bench_point(d) for d in
                          S.published_bench_results(f"vllm-i20780-{head}")])
        r["context"] = np.round(r["input_len"] + r["output_len"] / 2)
        train = (~r["speculation"] | r["gamma"].isin([2, 4, 7])).to_numpy()
        one(head, S.setup("H100-SXM", "Llama-3.1-8B", head), r, train, "K = 2, 4, 7 and plain")


if __name__ == "__main__":
    main()
