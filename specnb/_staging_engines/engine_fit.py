"""Engine points beside the serving model, and the profile fits (issue 16, staged).

``data/engine_measurements.csv`` holds published speedups on serving engines. For each usable
point (a batch size, a catalogue dense model, a tau: published, or the closest published proxy
where the source prints none) the serving model gives the plain step T_AR, the verification
T_V and the drafting time (EAGLE-1 / EAGLE-3 heads costed from their shapes,
:mod:`.heads`); the measured speedup implies a step cost ``needed = tau x T_AR / speedup``;
a profile's free parameters (:data:`FREE`) are fitted non-negative to the relative misfit
(:func:`.profiles.fit_profile`). Used by ``scripts/fit_engine_profiles.py`` (writes
``data/engine_profiles.csv``) and ``benchmarks/bench_engines.py``; reusable for a
calibration from a user's own ``vllm bench serve`` runs (:func:`fit`, :func:`predict` take any
table with the columns of :func:`table`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from .. import data
from .. import serving as S
from . import catalogue, heads
from . import profiles as P

__all__ = ["TAU_PROXY", "FREE", "load_points", "model_parts", "table", "columns", "base_cost",
           "fit", "predict", "summary", "anchored_tau", "fitted_profile"]

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

#: tau where a source prints none: vLLM issue #20780's mean acceptance lengths for the same
#: Llama-3.1-8B heads at the same K (engines.md section 1: "the closest published values").
TAU_PROXY = {("eagle", 2): 2.10, ("eagle", 3): 2.29, ("eagle3", 2): 2.36, ("eagle3", 3): 2.79}

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


def predict(rows: pd.DataFrame, free: list[str], theta: dict, tau=None) -> np.ndarray:
    """Predicted speedups of ``rows`` with the free parameters ``theta`` (tau: the rows'
    ``tau_used`` unless given, e.g. :func:`anchored_tau`)."""
    cost = base_cost(rows, free) + sum(theta[k] * v for k, v in columns(rows, free).items())
    tau = rows["tau_used"].to_numpy() if tau is None else np.asarray(tau, float)
    return tau * rows["tp"].to_numpy() / cost


def summary(rows, pred) -> str:
    e = np.abs(pred / rows["speedup"].to_numpy() - 1)
    v = np.mean((pred > 1) == (rows["speedup"].to_numpy() > 1))
    return (f"median |error| {100 * np.median(e):4.1f} %, max {100 * e.max():4.1f} %, verdicts "
            f"{100 * v:3.0f} % ({len(rows)} points)")


def summary_numbers(rows, pred) -> tuple[float, float, float]:
    """(median |error|, max |error|, share of right verdicts) of predictions vs measured."""
    e = np.abs(pred / rows["speedup"].to_numpy() - 1)
    v = float(np.mean((pred > 1) == (rows["speedup"].to_numpy() > 1)))
    return float(np.median(e)), float(e.max()), v


def anchored_tau(rows: pd.DataFrame, free: list[str], theta: dict) -> np.ndarray:
    """tau per point set so that the model (with the profile) matches each series' lowest
    batch: ``tau = speedup(B_min) x cost(B_min) / T_AR(B_min)`` (a series: one source and
    draft method), capped to [1, gamma + 1]. Series with a single batch size get NaN."""
    cost = base_cost(rows, free) + sum(theta[k] * v for k, v in columns(rows, free).items())
    out = np.full(len(rows), np.nan)
    idx = np.arange(len(rows))
    for _, part in rows.assign(_i=idx).groupby(["source_key", "draft"]):
        if part["batch"].nunique() < 2:
            continue
        j = int(part.loc[part["batch"].idxmin(), "_i"])
        tau = rows["speedup"].iloc[j] * cost[j] / rows["tp"].iloc[j]
        tau = min(max(tau, 1.0), rows["gamma"].iloc[j] + 1.0)
        out[part["_i"].to_numpy()] = tau
    return out


def fitted_profile(name: str) -> dict:
    """The free parameters of profile ``name`` as ``data/engine_profiles.csv`` holds them
    (keys as in :data:`FREE`)."""
    p = P.profile(name)
    out = {}
    for k in FREE[name][0]:
        par, _, method = k.partition(":")
        if par == "draft_step_ms":
            out[k] = p.draft_step(method if method != "*" else "*")
        else:
            out[k] = float(getattr(p, par))
    return out
