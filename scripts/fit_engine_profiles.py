"""Fit the engine profiles of data/engine_profiles.csv on the published engine points of
data/engine_measurements.csv, and print how each fit predicts the sources it was not fitted on.

For each usable point (a batch size, a catalogue model, a tau: published, or the closest
published proxy where the source prints none), the serving model gives the plain step T_AR,
the verification T_V and the drafting time (EAGLE-1 / EAGLE-3 heads costed from their shapes,
specnb/_staging_engines/heads.py); the measured speedup implies a step cost
``needed = tau x T_AR / speedup``; the profile's free parameters are fitted, non-negative, to
the relative misfit (specnb._staging_engines.profiles.fit_profile).

Prints: per profile the fitted values, in-sample median / max |error| and verdicts per source;
leave-one-source-out errors (fit without a source, predict it) where a profile has two sources
with points, and leave-one-series-out (fit without a method's rows) where the free parameters
are shared between methods; every profile applied to every source. ``--write`` rewrites
data/engine_profiles.csv. Run from the repository root:
``PYTHONPATH=$PWD python scripts/fit_engine_profiles.py [--write]``.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from specnb import data
from specnb import serving as S
from specnb._staging_engines import catalogue, heads
from specnb._staging_engines import profiles as P

#: tau where a source prints none: vLLM issue #20780's mean acceptance lengths for the same
#: Llama-3.1-8B heads at the same K (engines.md section 1: "the closest published values").
TAU_PROXY = {("eagle", 2): 2.10, ("eagle", 3): 2.29, ("eagle3", 2): 2.36, ("eagle3", 3): 2.79}

#: Free parameters per fitted profile (the others: the model's defaults or 0), and why.
FREE = {
    "vllm": (["sd_overhead_ms", "draft_step_ms:eagle", "draft_step_ms:eagle3"],
             "per-verification and per-draft-step costs only (every V1 point is at batch 1, so "
             "no per-token cost can be fitted; engines.md section 2 item 4 finds V1 needs none "
             "beyond SpecDecode-Bench's fitted defaults, which set the batch dependence)"),
    "vllm-v0": (["draft_step_ms:eagle", "draft_step_ms:eagle3", "verify_token_us"],
                "per-step costs and a per-verified-token cost (V0's scorer: vLLM PR #5691 "
                "measured 33-71 us per verified token for batch expansion)"),
    "sglang": (["sd_overhead_ms", "draft_step_ms:*", "draft_logits_ns", "verify_token_us"],
               "per-verification, per-draft-step (shared by EAGLE and EAGLE-3), per-draft-token "
               "x LM-head rows, and per-verified-token costs"),
}

#: Fixed rows written beside the fits.
FIXED_ROWS = [
    ("ideal", "sd_overhead_ms", "", 0.0, "zero", "roofline only: no per-verification overhead"),
    ("ideal", "draft_step_ms", "", 0.0, "zero", "roofline only"),
    ("ideal", "draft_logits_ns", "", 0.0, "zero", "roofline only"),
    ("ideal", "verify_token_us", "", 0.0, "zero", "roofline only"),
    ("ideal", "bandwidth", "", 1.0, "ideal", "peak memory bandwidth"),
    ("ideal", "compute", "", 1.0, "ideal", "peak dense tensor FLOP/s"),
    ("ideal", "fixed_ms", "", 0.0, "ideal", "no fixed cost per target forward"),
    ("ideal", "head_fixed_ms", "", 0.0, "ideal", "no fixed cost per draft forward"),
    ("ideal", "overlap", "", 1.0, "ideal", "memory and compute overlap perfectly (max, not sum)"),
]

DESCRIPTION = {
    "vllm": "vLLM V1 (default): fitted on vLLM issue #20780 and PR #16937 (batch 1, 1x H100)",
    "vllm-v0": "vLLM V0 (2024 - early 2025): fitted on EAGLE-3 Table 5 (batch 2-56, RTX 3090)",
    "sglang": "SGLang v0.4.4: fitted on EAGLE-3 Table 3 (batch 2-64, 1x H100)",
    "ideal": "roofline only: datasheet peaks, no fixed or engine costs (an upper bound)",
}


def load_points() -> pd.DataFrame:
    """Engine points with numeric columns, the tau used and why a point is not scored."""
    d = data.load("engine_measurements")
    for c in ("batch", "tau", "context", "gpus", "draft_kv_budget", "t_plain_ms", "qps"):
        d[c] = pd.to_numeric(d[c].replace("", np.nan))
    taus, kinds, skip = [], [], []
    dense = set(S.architecture_names())
    for r in d.itertuples():
        tau, kind = r.tau, "published"
        if math.isnan(tau):
            tau, kind = TAU_PROXY.get((r.draft, int(r.gamma)), math.nan), "proxy: issue #20780 AL"
        why = ""
        if math.isnan(r.batch):
            why = "request-rate point (no batch size)"
        elif r.model not in dense:
            why = "MoE target (DeepSeek-V3): needs the MoE step model"
        elif math.isnan(tau):
            why = "no tau printed and no published proxy"
        taus.append(tau)
        kinds.append(kind if not math.isnan(tau) else "")
        skip.append(why)
    d["tau_used"], d["tau_kind"], d["skip"] = taus, kinds, skip
    return d


def _head_draft_ms(st, head, b, s, g) -> float:
    """gamma draft forwards of a head costed from its shape: the model's one-layer step with
    the head's LM-head rows, plus the weights the shape adds (EAGLE-1's fc every step,
    EAGLE-3's fc on the first step and its 2h-wide q/k/v), at the draft's efficiency."""
    base = replace(st.target.one_layer(f"{head.kind} head"), vocab_size=head.lm_head_vocab)
    eff = st.draft_efficiency
    t1 = S.step_time_ms(base, st.gpu, b, s, 1, gpus=st.gpus, efficiency=eff)
    bw, fl = eff.bandwidth * st.gpu.bandwidth, eff.compute * st.gpu.flops(st.dtype)
    total = 0.0
    for i in range(g):
        extra = heads.params_per_step(head, i) - base.step_params
        total += t1 + extra * 2.0 / bw * 1e3 / st.gpus + 2.0 * extra * b / fl * 1e3 / st.gpus
    return total


def model_parts(r) -> dict:
    """The serving model's T_AR, T_V and drafting time for one point, ms."""
    kw = {}
    if not math.isnan(r.draft_kv_budget):
        kw["draft_kv_budget"] = int(r.draft_kv_budget)
    st = S.setup(r.gpu, r.model, r.draft, gpus=int(r.gpus), **kw)
    b, s, g = int(r.batch), int(r.context), int(r.gamma)
    tp, tv = S.t_plain_ms(st, b, s), S.t_verify_ms(st, b, s, g)
    vocab = 0
    if r.draft in heads.HEAD_KINDS:
        head = heads.eagle_head(r.draft, catalogue.shape(r.model))
        td, vocab = _head_draft_ms(st, head, b, s, g), head.lm_head_vocab
    else:
        td = S.t_draft_ms(st, b, s, g)
    return {"tp": tp, "tv": tv, "td": td, "vocab": vocab, "default_over": st.sd_overhead_ms,
            "max_batch": S.max_batch_in_memory(st, s)}


def table(points: pd.DataFrame) -> pd.DataFrame:
    """Scored points with the model's parts and the cost the measurement implies."""
    use = points[points["skip"] == ""].copy()
    parts = pd.DataFrame([model_parts(r) for r in use.itertuples()], index=use.index)
    use = pd.concat([use, parts], axis=1)
    use["needed"] = use["tau_used"] * use["tp"] / use["speedup"]
    return use


def columns(rows: pd.DataFrame, free: list[str]) -> dict:
    f = P.features(rows["batch"].astype(int).to_numpy(), rows["gamma"].to_numpy(),
                   draft_vocab=rows["vocab"].to_numpy())
    out = {}
    for name in free:
        par, _, method = name.partition(":")
        col = f[par]
        if par == "draft_step_ms" and method != "*":
            col = col * (rows["draft"].to_numpy() == method)
        out[name] = col
    return out


def base_cost(rows: pd.DataFrame, free: list[str]) -> np.ndarray:
    over = 0.0 if "sd_overhead_ms" in free else rows["default_over"].to_numpy()
    return rows["tv"].to_numpy() + rows["td"].to_numpy() + over


def fit(rows: pd.DataFrame, free: list[str]) -> dict:
    return P.fit_profile(base_cost(rows, free), rows["needed"].to_numpy(), columns(rows, free))


def predict(rows: pd.DataFrame, free: list[str], theta: dict) -> np.ndarray:
    cost = base_cost(rows, free) + sum(theta[k] * v for k, v in columns(rows, free).items())
    return rows["tau_used"].to_numpy() * rows["tp"].to_numpy() / cost


def summary(rows, pred) -> str:
    e = np.abs(pred / rows["speedup"].to_numpy() - 1)
    v = np.mean((pred > 1) == (rows["speedup"].to_numpy() > 1))
    return (f"median |error| {100 * np.median(e):4.1f} %, max {100 * e.max():4.1f} %, verdicts "
            f"{100 * v:3.0f} % ({len(rows)} points)")


def as_profile_rows(name: str, theta: dict, rows: pd.DataFrame) -> list[tuple]:
    free, why = FREE[name]
    srcs = ", ".join(sorted(rows["source_key"].unique()))
    n = len(rows)
    out = []
    for par in P.PARAMETERS:
        if par == "draft_step_ms":
            keys = [k for k in free if k.startswith("draft_step_ms")]
            for k in keys:
                method = k.partition(":")[2]
                out.append((name, par, "" if method == "*" else method, theta[k], "fitted",
                            srcs, n, why))
            if not keys:
                out.append((name, par, "", 0.0, "zero", "", 0, why))
            continue
        if par in free:
            out.append((name, par, "", theta[par], "fitted", srcs, n, why))
        elif par == "sd_overhead_ms":
            out.append((name, par, "", S.SD_OVERHEAD_MS, "default", "", 0,
                        "the model's default (SpecDecode-Bench overhead_constant_per_step, vLLM "
                        "on 1x H100)"))
        else:
            out.append((name, par, "", 0.0, "zero", "", 0, why))
    return out


def write_csv(rows_out: list[tuple], path: Path) -> None:
    cols = ["engine", "parameter", "method", "value", "unit", "fit", "fitted_on", "n_points",
            "description", "source", "arxiv_version", "table", "note"]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(cols)
        for eng, par, method, value, how, on, n, why in rows_out:
            unit = P.PARAMETERS.get(par, "fraction of peak" if par in ("bandwidth", "compute")
                                    else ("ms" if par.endswith("_ms") else "fraction"))
            src = ("scripts/fit_engine_profiles.py on data/engine_measurements.csv ("
                   + on + ")") if how == "fitted" else (
                "specnb serving model defaults (data/specdecode_bench_predictor.csv)"
                if how == "default" else "by definition (no engine cost)")
            w.writerow([eng, par, method, f"{value:.6g}", unit, how, on, n,
                        DESCRIPTION[eng], src, "", "engine_profiles fit" if how == "fitted"
                        else "definition", why])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite data/engine_profiles.csv")
    args = ap.parse_args(argv)
    pd.set_option("display.width", 200)
    pts = load_points()
    print("== points ==")
    for key, part in pts.groupby("source_key", sort=False):
        why = sorted(set(part["skip"]) - {""})
        print(f"  {key:18s} {part['profile'].iloc[0]:8s} {len(part):3d} points, "
              f"{int((part['skip'] == '').sum()):3d} scored" + (f"; not scored: {'; '.join(why)}"
                                                                 if why else ""))
    t = table(pts)
    thetas, out_rows = {}, []
    print("\n== fits (in-sample) ==")
    for name, (free, why) in FREE.items():
        rows = t[t["profile"] == name]
        theta = fit(rows, free)
        thetas[name] = theta
        print(f"{name}: " + ", ".join(f"{k} = {v:.4g}" for k, v in theta.items()))
        for key, part in rows.groupby("source_key"):
            print(f"    {key:18s} {summary(part, predict(part, free, theta))}")
        out_rows += as_profile_rows(name, theta, rows)
    print("\n== held out ==")
    for name, (free, _) in FREE.items():
        rows = t[t["profile"] == name]
        keys = sorted(rows["source_key"].unique())
        if len(keys) > 1:
            for k in keys:
                train, test = rows[rows["source_key"] != k], rows[rows["source_key"] == k]
                th = fit(train, free)
                print(f"  {name}: fit without {k}, predict it: {summary(test, predict(test, free, th))}")
        shared = not any(f.startswith("draft_step_ms:") and not f.endswith("*") for f in free)
        if shared:
            for m in sorted(rows["draft"].unique()):
                train, test = rows[rows["draft"] != m], rows[rows["draft"] == m]
                th = fit(train, free)
                print(f"  {name}: fit without the {m} series, predict it: "
                      f"{summary(test, predict(test, free, th))}")
        if len(keys) == 1 and not shared:
            print(f"  {name}: one source and method-specific parameters: no held-out fit "
                  "possible (see the cross-engine table)")
    print("\n== every profile on every source (in-sample where the profile was fitted on it) ==")
    for key, part in t.groupby("source_key"):
        for name, (free, _) in FREE.items():
            print(f"  {key:18s} with {name:8s}: {summary(part, predict(part, free, thetas[name]))}")
        zero = {k: 0.0 for k in FREE['vllm'][0]}
        print(f"  {key:18s} with {'none':8s}: {summary(part, predict(part, FREE['vllm'][0], zero))}")
    if args.write:
        out_rows += FIXED_ROWS_AS(out_rows)
        path = data.DATA_DIR / "engine_profiles.csv"
        write_csv(out_rows, path)
        print(f"\nwrote {path}")
    return 0


def FIXED_ROWS_AS(_rows) -> list[tuple]:  # noqa: N802 - the ideal rows in write order
    return [(e, p, m, v, how, "", 0, why) for e, p, m, v, how, why in FIXED_ROWS]


if __name__ == "__main__":
    sys.exit(main())
