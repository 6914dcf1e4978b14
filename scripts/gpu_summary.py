"""Summarise what scripts/gpu_measure.sh wrote to OUT as Markdown (stdout). Missing or partial
files are reported as such; nothing here fails on them.

    python scripts/gpu_summary.py OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MEASURE_COLS = ["draft", "gamma", "temperature", "alpha", "alpha_counted", "tau_measured",
                "tau_predicted", "tau_betas", "speedup_measured", "speedup_predicted",
                "speedup_timing_model", "speedup_predicted_loo", "c", "lossless"]
LOGGED_COLS = ["draft", "gamma", "temperature", "alpha", "alpha_ci_low", "alpha_ci_high",
               "alpha_rounds", "tau_betas", "tau_predicted", "c", "speedup_predicted"]


def _load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return f"not available ({type(exc).__name__}: {str(exc)[:200]})"


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.3f}"
    return "" if v is None else str(v)


def _table(obj: dict, cols) -> list[str]:
    cols = [c for c in cols if c in obj]
    n = len(obj[cols[0]]) if cols else 0
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for i in range(n):
        lines.append("| " + " | ".join(_fmt(obj[c][i]) for c in cols) + " |")
    return lines


def _measure_section(title: str, obj) -> list[str]:
    lines = [f"## {title}", ""]
    if not isinstance(obj, dict):
        return lines + [str(obj), ""]
    cfg = obj.get("config", {})
    lines.append(f"target `{cfg.get('target')}`, drafts {cfg.get('drafts')}, "
                 f"{cfg.get('n_prompts')} prompts, {cfg.get('max_new_tokens')} new tokens, "
                 f"device {cfg.get('device')} {cfg.get('dtype')}, versions {cfg.get('versions')}, "
                 f"lossless_all {obj.get('lossless_all')}")
    if cfg.get("processing"):
        lines.append(f"processing: {cfg['processing']}")
    lines += [""] + _table(obj, MEASURE_COLS) + [""]
    if obj.get("timing"):
        keys = ["draft", "t_target_forward", "t_draft_forward", "c", "t_call", "t_target",
                "t_draft", "t_round", "c_fit", "r2"]
        ms = {k: [(1e3 * r[k] if k.startswith("t_") and isinstance(r.get(k), (int, float))
                   else r.get(k)) for r in obj["timing"]] for k in keys}
        lines += ["timing (t_* in ms):", ""] + _table(ms, keys) + [""]
    return lines


def main(out: str) -> int:
    o = Path(out)
    lines = ["# specnb GPU run (scripts/gpu_measure.sh)", ""]
    log = o / "run.log"
    if log.is_file():
        text = log.read_text(errors="replace").splitlines()
        lines += ["## Machine and stages", "", "```"]
        lines += [ln for ln in text if ln.startswith(("GPU ", "python ", "gpu ", "== "))]
        lines += ["```", ""]
    lines += _measure_section("Bundled pair (specnb measure)", _load(o / "bundled.json"))
    lg = _load(o / "bundled_logged.json")
    lines += ["## Bundled pair, alpha from logged responses (specnb measure --logged)", ""]
    if isinstance(lg, dict):
        lines += _table(lg, LOGGED_COLS) + [""]
    else:
        lines += [str(lg), ""]
    bench = o / "bench_logged.txt"
    lines += ["## Benchmark: logged alpha vs assisted generation", "", "```"]
    lines += (bench.read_text(errors="replace").splitlines() if bench.is_file()
              else ["not available"]) + ["```", ""]
    tr = _load(o / "gpu_training.json")
    lines += ["## GPU-trained pair (python -m specnb.measure.train --recipe gpu)", ""]
    if isinstance(tr, dict):
        lines.append(f"machine {tr.get('machine')}; total {tr.get('total_time_s')} s")
        lines += ["", "| model | layers x width | parameters | steps | train s | val loss |",
                  "|---|---|---:|---:|---:|---:|"]
        for m in tr.get("models", []):
            lines.append(f"| {m['name']} | {m['n_layer']} x {m['n_embd']} | {m['parameters']:,} "
                         f"| {m['steps']} | {m['train_time_s']} | {m['val_loss']} |")
        lines.append("")
    else:
        lines += [str(tr), ""]
    lines += _measure_section("GPU-trained pair (specnb measure)", _load(o / "gpu_pair.json"))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
