"""Fit the engine profiles of data/engine_profiles.csv on the published engine points of
data/engine_measurements.csv, and print how each fit predicts the sources it was not fitted on.

For each usable point (a batch size, a catalogue model, a tau: published, or the closest
published proxy where the source prints none), the serving model gives the plain step T_AR,
the verification T_V and the drafting time (EAGLE-1 / EAGLE-3 heads costed from their shapes,
specnb/serving/heads.py); the measured speedup implies a step cost
``needed = tau x T_AR / speedup``; the profile's free parameters are fitted, non-negative, to
the relative misfit (specnb.serving.fit.fit_profile).

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
import sys
from pathlib import Path

import pandas as pd

from specnb import data
from specnb import serving as S
from specnb.serving import engines as P
from specnb.serving.fit import FREE, PHYSICS, fit, load_points, predict, summary
from specnb.serving.fit import points_table as table

#: Fixed rows written beside the fits.
FIXED_ROWS = [
    ("specdecode-bench", "sd_overhead_ms", "", S.SD_OVERHEAD_MS, "default",
     "the model's default: SpecDecode-Bench overhead_constant_per_step (vLLM v0.10 on 1x H100)"),
    ("specdecode-bench", "draft_step_ms", "", 0.0, "zero", "no engine cost beyond the model"),
    ("specdecode-bench", "draft_logits_ns", "", 0.0, "zero", "no engine cost beyond the model"),
    ("specdecode-bench", "verify_token_us", "", 0.0, "zero", "no engine cost beyond the model"),
    ("ideal", "sd_overhead_ms", "", 0.0, "zero", "roofline only: no per-verification overhead"),
    ("ideal", "draft_step_ms", "", 0.0, "zero", "roofline only"),
    ("ideal", "draft_logits_ns", "", 0.0, "zero", "roofline only"),
    ("ideal", "verify_token_us", "", 0.0, "zero", "roofline only"),
    ("ideal", "bandwidth", "", 1.0, "ideal", "peak memory bandwidth"),
    ("ideal", "compute", "", 1.0, "ideal", "peak dense tensor FLOP/s"),
    ("ideal", "fixed_ms", "", 0.0, "ideal", "no fixed cost per target forward"),
    ("ideal", "head_fixed_ms", "", 0.0, "ideal", "no fixed cost per draft forward"),
    ("ideal", "overlap", "", 1.0, "ideal", "memory and compute overlap perfectly (max, not sum)"),
    ("vllm", "graph_cap_tokens", "", 512, "published",
     "vLLM V1's default max_cudagraph_capture_size: min(max_num_seqs x (1 + "
     "num_speculative_tokens) x 2, 512) tokens, 512 with the default max_num_seqs; a step with "
     "more tokens runs without a CUDA graph",
     "vllm/config/vllm.py _set_cudagraph_sizes and v1/cudagraph_dispatcher.py (vllm-project/vllm)"),
    ("vllm", "eager_layer_us", "", 375, "derived",
     "DERIVED: Llama-2-7B at batch 1, 100 output tokens in 1.2 s without CUDA graphs (1.05 s "
     "with): 12 ms per eager step over 32 layers, read as the host's launch time; vLLM 2023 "
     "(V0), GPU not stated: UNVERIFIED for V1 (torch.compile lowers it)",
     "https://github.com/vllm-project/vllm/pull/1440 (description)"),
    ("vllm-v0", "graph_cap_tokens", "", 256, "published",
     "vLLM V0 (v0.6) captures CUDA graphs for decode-only batches of up to 256 sequences "
     "(_BATCH_SIZES_TO_CAPTURE 1, 2, 4, 8..256; _get_max_graph_batch_size(max_num_seqs 256)); "
     "its batch-expansion scorer runs each proposing sequence as k + 1 one-token sequences "
     "(spec_decode/batch_expansion.py), so a verify step is a decode batch of its scored "
     "tokens and runs without a graph beyond 256 of them; the MQA scorer is off with CUDA "
     "graphs (spec_decode_worker.py: 'Disabling MQA scorer as the target model is not running "
     "in eager mode') and excluded n-gram when added (PR #8839, 2024-09); V0 never graphs a "
     "prefill step (a prompt step under 256 tokens is timed as graphed: not modelled)",
     "vllm/worker/model_runner.py _BATCH_SIZES_TO_CAPTURE / _use_captured_graph and "
     "vllm/spec_decode/batch_expansion.py, spec_decode_worker.py (vllm-project/vllm, V0)"),
    ("vllm-v0", "eager_layer_us", "", 375, "derived",
     "DERIVED: Llama-2-7B at batch 1, 100 output tokens in 1.2 s without CUDA graphs (1.05 s "
     "with): 12 ms per eager step over 32 layers, read as the host's launch time; vLLM V0 "
     "(2023), GPU not stated; the launches of tensor-parallel all-reduces not counted apart",
     "https://github.com/vllm-project/vllm/pull/1440 (description)"),
]

DESCRIPTION = {
    "vllm": "vLLM V1 (default): fitted on vLLM issue #20780 and PRs #16937 and #16035 (batch 1, "
            "1x H100)",
    "vllm-v0": "vLLM V0 (2024 - early 2025): fitted on EAGLE-3 Table 5 (batch 2-56, RTX 3090)",
    "sglang": "SGLang on dense targets: fitted on EAGLE-3 Table 3 (v0.4.4, batch 2-64, 1x H100), "
              "SGLang PR #4716 (8-step tree, 8x H100, MT-bench and send_one), SGLang PR #4247 "
              "(5- and 8-step trees, 1x H100, baseline borrowed) and SGLang PR #5318 (a 3-step "
              "chain and a 5-step tree of 8 nodes, 1x H100 ASSUMED, its own baseline)",
    "sglang-moe": "SGLang on mixture-of-experts targets: fitted on SpecForge issue #339 and "
                  "AngelSlim issue #163 (Qwen3-30B-A3B, 2-4x H100, chains and trees)",
    "ideal": "roofline only: datasheet peaks, no fixed or engine costs (an upper bound)",
    "specdecode-bench": "the model's defaults alone (SpecDecode-Bench's fitted constants, vLLM "
                        "v0.10.1 on 1x H100): the profile of the MagicDec reference tables",
}


def as_profile_rows(name: str, theta: dict, rows: pd.DataFrame) -> list[tuple]:
    free, why = FREE[name]
    srcs = ", ".join(sorted(rows["source_key"].unique()))
    n = len(rows)
    out = []
    for par in [*P.PARAMETERS, *[k for k in free if k in PHYSICS]]:
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
        for eng, par, method, value, how, on, n, why, *given in rows_out:
            unit = {**P.PARAMETERS, **P.STEP_FIELDS}.get(
                par, "fraction of peak" if par in ("bandwidth", "compute")
                else ("ms" if par.endswith("_ms") else "fraction"))
            src = ("scripts/fit_engine_profiles.py on data/engine_measurements.csv ("
                   + on + ")") if how == "fitted" else given[0] if given else (
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
        print(f"  {key:18s} {part['profile'].iloc[0]:10s} {len(part):3d} points, "
              f"{int((part['skip'] == '').sum()):3d} scored" + (f"; not scored: {'; '.join(why)}"
                                                                 if why else ""))
    t = table(pts)
    thetas, out_rows = {}, []
    print("\n== fits (in-sample) ==")
    for name, (free, why) in FREE.items():
        rows = t[t["fit_class"] == name]
        theta = fit(rows, free)
        thetas[name] = theta
        print(f"{name}: " + ", ".join(f"{k} = {v:.4g}" for k, v in theta.items()))
        for key, part in rows.groupby("source_key"):
            print(f"    {key:18s} {summary(part, predict(part, free, theta))}")
        out_rows += as_profile_rows(name, theta, rows)
    print("\n== held out ==")
    for name, (free, _) in FREE.items():
        rows = t[t["fit_class"] == name]
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
        none = ["draft_step_ms:*"]  # the model's defaults alone (its 1.207 ms overhead)
        print(f"  {key:18s} with {'none':8s}: "
              f"{summary(part, predict(part, none, {'draft_step_ms:*': 0.0}))}")
    if args.write:
        out_rows += FIXED_ROWS_AS(out_rows)
        path = data.DATA_DIR / "engine_profiles.csv"
        write_csv(out_rows, path)
        print(f"\nwrote {path}")
    return 0


def FIXED_ROWS_AS(_rows) -> list[tuple]:  # noqa: N802 - the ideal rows in write order
    return [(e, p, m, v, how, "", 0, why, *src) for e, p, m, v, how, why, *src in FIXED_ROWS]


if __name__ == "__main__":
    sys.exit(main())
