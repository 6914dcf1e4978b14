"""How well does the serving model, with the engine profiles of data/engine_profiles.csv,
predict the published engine measurements (data/engine_measurements.csv), and how do MoE
targets change the verification cost? (Issue 16; to be folded into bench_serving_model.py.)

Prints:
1. the points per source and why some are not scored;
2. per source, the profile it belongs to, "uncalibrated" (the profile as data/ holds it):
   median and max |relative error| of the speedup and the share of right pays / does-not-pay
   verdicts, (a) with the published tau (or the #20780 proxy where a source prints none) and
   (b) with tau anchored on each series' lowest batch (batch series only);
3. held-out errors of the profile fits: leave one source out where a profile has two sources,
   leave one draft series out where its parameters are shared between methods;
4. MoE step-time ratios: T_V (gamma = 3) / T_AR by batch for MoE targets beside dense ones
   (uniform routing: an upper bound on the experts read).

Goals (issue 16): every handed vLLM source median <= 5 % and verdicts >= 95 %; SGLang median
<= 8 %. Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_engines.py
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from specnb import serving as S
from specnb.serving import engines as F

GOALS = {"vllm": (0.05, 0.95), "vllm-v0": (0.05, 0.95), "sglang": (0.08, None)}


def scored():
    pts = F.load_points()
    return pts, F.points_table(pts)


def per_source(t: pd.DataFrame) -> list[str]:
    lines, ok = [], True
    for key, part in t.groupby("source_key", sort=False):
        prof = part["profile"].iloc[0]
        if prof not in F.FREE:
            lines.append(f"  {key:18s} ({prof}: no profile; model defaults) "
                         + F.summary(part, F.predict(part, ["draft_step_ms:*"],
                                                     {"draft_step_ms:*": 0.0})))
            continue
        free, theta = F.FREE[prof][0], F.fitted_profile(prof)
        med, mx, ver = F.summary_numbers(part, F.predict(part, free, theta))
        goal = GOALS.get(prof)
        passed = goal is not None and med <= goal[0] and (goal[1] is None or ver >= goal[1])
        ok &= passed or goal is None
        tau_a = F.anchored_tau(part, free, theta)
        anch = ""
        if np.isfinite(tau_a).any():
            sel = part[np.isfinite(tau_a)]
            a_med, a_max, a_ver = F.summary_numbers(sel, F.predict(sel, free, theta,
                                                                    tau_a[np.isfinite(tau_a)]))
            anch = (f"; tau anchored on the lowest batch: median {100 * a_med:.1f} %, max "
                    f"{100 * a_max:.1f} %, verdicts {100 * a_ver:.0f} %")
        kind = ", ".join(sorted(set(part["tau_kind"])))
        lines.append(f"  {key:18s} {prof:8s} tau {kind}: median {100 * med:.1f} %, max "
                     f"{100 * mx:.1f} %, verdicts {100 * ver:.0f} % ({len(part)} points)"
                     f"{anch}  [{'goal met' if passed else 'GOAL MISSED'}]")
    lines.append(f"  all goals met: {ok}")
    return lines


def held_out(t: pd.DataFrame) -> list[str]:
    out = []
    for name, (free, _) in F.FREE.items():
        rows = t[t["profile"] == name]
        keys = sorted(rows["source_key"].unique())
        if len(keys) > 1:
            for k in keys:
                th = F.fit(rows[rows["source_key"] != k], free)
                test = rows[rows["source_key"] == k]
                out.append(f"  {name}: fit without {k}, predict it: "
                           f"{F.summary(test, F.predict(test, free, th))}")
        if not any(f.startswith("draft_step_ms:") and not f.endswith("*") for f in free):
            for m in sorted(rows["draft"].unique()):
                th = F.fit(rows[rows["draft"] != m], free)
                test = rows[rows["draft"] == m]
                out.append(f"  {name}: fit without the {m} series, predict it: "
                           f"{F.summary(test, F.predict(test, free, th))}")
        elif len(keys) == 1:
            out.append(f"  {name}: one source, method-specific parameters: no held-out fit")
    return out


#: (model, GPU, GPUs, weight dtype) of the step-time ratio table.
MOE_SETUPS = [("DeepSeek-V3", "H200", 8, "fp8"), ("Kimi-K2", "H200", 16, "fp8"),
              ("Qwen3-235B-A22B", "H100", 8, "bf16"), ("Qwen3-30B-A3B", "H100", 1, "bf16"),
              ("gpt-oss-120b", "H100", 1, "int4"), ("Mixtral-8x7B", "H100", 2, "bf16"),
              ("Llama-3.1-70B", "H100", 4, "bf16"), ("Llama-3.1-8B", "H100", 1, "bf16")]


def moe_ratios(context: int = 2048, gamma: int = 3) -> pd.DataFrame:
    b = np.array([1, 4, 16, 64, 256])
    rows = []
    for name, gpu, n, dtype in MOE_SETUPS:
        kw = dict(dtype=dtype, gpus=n)
        p = S.step_breakdown(name, gpu, b, context, 1, **kw)
        v = S.step_breakdown(name, gpu, b, context, gamma + 1, **kw)
        rows.append({"model": name, "setup": f"{n}x {gpu} {dtype}",
                     **{f"B={int(x)}": round(float(r), 2)
                        for x, r in zip(b, v["time_ms"] / p["time_ms"])},
                     **{f"W ratio B={int(x)}": round(float(r), 2)
                        for x, r in zip(b[:2], (v["weight_bytes"] / p["weight_bytes"])[:2])}})
    return pd.DataFrame(rows)


def main():
    pd.set_option("display.width", 200)
    pts, t = scored()
    print("== 1. points ==")
    for key, part in pts.groupby("source_key", sort=False):
        why = sorted(set(part["skip"]) - {""})
        print(f"  {key:18s} {part['profile'].iloc[0]:8s} {len(part):3d} points, "
              f"{int((part['skip'] == '').sum()):3d} scored"
              + (f"; not scored: {'; '.join(why)}" if why else ""))
    print("\n== 2. per source, with its engine profile (uncalibrated) ==")
    print("\n".join(per_source(t)))
    print("\n== 3. held-out errors of the profile fits ==")
    print("\n".join(held_out(t)))
    print("\n== 4. MoE: T_V (gamma 3) / T_AR by batch, context 2048 (uniform routing: an upper "
          "bound);\n   W ratio: weight bytes read by the verification / by the plain step ==")
    print(moe_ratios().to_string(index=False))


if __name__ == "__main__":
    main()
