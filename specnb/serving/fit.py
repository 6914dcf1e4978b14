"""Fitting the engine profiles (:mod:`specnb.serving.engines`) on the published engine points
of ``data/engine_measurements.csv``: the points (:func:`load_points`), the serving model's
parts per point (:func:`model_parts`, :func:`points_table`), the non-negative fit
(:func:`nnls`, :func:`fit_profile`, :func:`fit`), predictions and their scores
(:func:`predict`, :func:`summary`, :func:`summary_numbers`), and the profiles' free parameters
(:data:`FREE`). Used by ``scripts/fit_engine_profiles.py`` and
``benchmarks/bench_serving_model.py``.

Its own module so that the import order inside ``serving`` has no circle: ``engines`` (the
profiles) is imported by ``setup``; this module imports ``engines``, ``setup`` and
``speedup`` and is imported by none of them.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from .. import _check, data
from .engines import features, profile
from .setup import max_batch_in_memory, setup
from .speedup import speedup, t_draft_ms, t_plain_ms, t_verify_ms, tree_parts, tree_speedup

__all__ = ["nnls", "fit_profile", "TAU_PROXY", "FREE", "PHYSICS", "CONSUMER_GPUS", "fit_class",
           "TAU_PROXY_MODEL", "GOALS", "NOT_FITTED", "held_out_predictions", "batch_expansion_us_per_token", "PUBLISHED_COSTS",
           "predict_from_other_class", "accuracy_figures", "point_speedup",
           "load_points", "model_parts",
           "points_table", "columns", "base_cost", "fit", "predict", "summary",
           "summary_numbers", "anchored_tau", "fitted_profile"]


def nnls(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares ``min |A x - y|, x >= 0`` by trying every subset of columns
    (exact; for the few parameters of a profile, at most 10 columns).

    Raises
    ------
    ValueError
        more than 10 columns; shapes that do not match.
    """
    a, y = np.asarray(a, float), np.asarray(y, float)
    if a.ndim != 2 or y.shape != (a.shape[0],):
        raise ValueError(f"nnls needs A (n, p) and y (n,), got {a.shape} and {y.shape}")
    p = a.shape[1]
    if p > 10:
        raise ValueError(f"nnls tries every subset: at most 10 columns, got {p}")
    best, best_x = float(np.sum(y ** 2)), np.zeros(p)
    for r in range(1, p + 1):
        for cols in itertools.combinations(range(p), r):
            sub = a[:, cols]
            x, *_ = np.linalg.lstsq(sub, y, rcond=None)
            if (x < 0).any():
                continue
            res = float(np.sum((sub @ x - y) ** 2))
            if res < best - 1e-15:
                best, best_x = res, np.zeros(p)
                best_x[list(cols)] = x
    return best_x


def fit_profile(base_cost_ms, needed_cost_ms, columns: dict) -> dict:
    """Fit non-negative profile parameters to measured speedups.

    For each point, ``needed = tau x T_plain / measured speedup`` is the step cost the
    measurement implies and ``base`` the model's cost without the free parameters; the fit
    minimises the squared RELATIVE misfit ``(base + F theta - needed) / needed`` (about the
    relative error of the predicted speedup).

    Parameters
    ----------
    base_cost_ms, needed_cost_ms : arrays (n,), > 0
    columns : {parameter name: multiplier array (n,)} of the free parameters (from
        :func:`features`, masked per method for a method-specific ``draft_step_ms``)

    Returns
    -------
    dict {parameter name: fitted value >= 0}
    """
    base = _check.real("base_cost_ms", base_cost_ms, lo=0.0, lo_open=True)
    need = _check.real("needed_cost_ms", needed_cost_ms, lo=0.0, lo_open=True)
    names = list(columns)
    a = np.column_stack([np.asarray(columns[k], float) for k in names]) / need[:, None]
    x = nnls(a, (need - base) / need)
    return dict(zip(names, map(float, x)))


#: Free parameters per fitted profile (the others: the model's defaults or 0), and why.
#: A parameter of the step physics (``expert_us``, a :class:`~specnb.serving.moe.EngineStep`
#: field) changes the plain step too: its columns are taken from the model with the
#: parameter at 1 less at 0, on T_AR as on the speculative step.
FREE = {
    "vllm": (["sd_overhead_ms", "draft_step_ms:eagle", "draft_step_ms:eagle3"],
             "per-verification and per-draft-step costs only (every V1 point is at batch 1, so "
             "no per-token cost can be fitted; engines.md section 2 item 4 finds V1 needs none "
             "beyond SpecDecode-Bench's fitted defaults, which set the batch dependence)"),
    "vllm-v0": (["draft_step_ms:eagle", "draft_step_ms:eagle3", "verify_token_us"],
                "per-step costs and a per-verified-token cost (V0's scorer: vLLM PR #5691 "
                "measured 33-71 us per verified token for batch expansion)"),
    "sglang": (["draft_step_ms:*", "draft_logits_ns", "verify_token_us"],
               "per-draft-step (shared by EAGLE and EAGLE-3), per-draft-token x LM-head rows, "
               "and per-verified-token costs; the per-verification overhead stays the model's "
               "default (EAGLE-3 Table 3 has one draft length, 3, so a per-verification and a "
               "per-draft-step cost cannot be told apart on it; the per-step reading is the one "
               "that carries to SGLang PR #4716's 8-step tree: held out 29 % against 32 % "
               "since SGLang PR #5318 joined, 32 % against 35 % before)"),
    "sglang-moe": (["sd_overhead_ms", "draft_step_ms:*", "verify_token_us", "expert_us"],
                   "SGLang on mixture-of-experts targets (issue 25): per-verification, "
                   "per-draft-step and per-verified-token costs (the dense SGLang fit's kinds) "
                   "and a fixed cost per touched expert per MoE layer (each expert's GEMM runs "
                   "at least one tile: cost follows experts touched)"),
}

#: Parameters of the step physics among the free ones (EngineStep fields).
PHYSICS = ("expert_us",)

#: tau where a source prints none: vLLM issue #20780's mean acceptance lengths for the same
#: Llama-3.1-8B heads at the same K (engines.md section 1: "the closest published values").
TAU_PROXY = {("eagle", 2): 2.10, ("eagle", 3): 2.29, ("eagle3", 2): 2.36, ("eagle3", 3): 2.79}

#: The target :data:`TAU_PROXY` was measured on: a point of another model without a printed
#: tau is not scored (no proxy).
TAU_PROXY_MODEL = "Llama-3.1-8B"

#: GPUs counted as consumer / workstation cards (the consumer class of the benchmark).
CONSUMER_GPUS = ("RTX-3090", "RTX-4090", "A40", "L4", "L40", "L40S", "A10G")


#: Sources kept out of their engine's fit and scored only as held out: consumer-GPU runs of
#: an engine whose profile is fitted on datacenter GPUs (the GPU's difference is carried by
#: ``data/gpus.csv``'s ``layer_fixed_us``, not by the engine profile). source -> profile.
NOT_FITTED = {"vllm-pr24243": "vllm"}


def fit_class(row) -> str:
    """The profile a point is fitted into: its engine's, ``sglang-moe`` for SGLang on a
    mixture-of-experts target, or ``consumer:<profile>`` for a source of :data:`NOT_FITTED`
    (predicted by that profile, never fitted on)."""
    from .catalogue import architecture

    if row["source_key"] in NOT_FITTED:
        return "consumer:" + NOT_FITTED[row["source_key"]]
    if row["profile"] == "sglang" and architecture(row["model"]).moe is not None:
        return "sglang-moe"
    return row["profile"]


def load_points():
    """``data/engine_measurements.csv`` as a DataFrame with numeric columns, the tau used
    (``tau_used``, ``tau_kind``: ``published``; ``borrowed: ...`` where the row's tau was
    copied from another source, ``tau_borrowed``; or ``borrowed: issue #20780 AL (none
    printed)`` where the source prints none and :data:`TAU_PROXY` stands in), ``skip`` (why a
    point is not scored: no batch size, a model outside the catalogue, no tau; "" if scored)
    and ``fit_class`` (:func:`fit_class`; "" for points not scored)."""
    import pandas as pd

    from .catalogue import architecture_names

    d = data.load("engine_measurements")
    for c in ("batch", "tau", "context", "gpus", "draft_kv_budget", "t_plain_ms", "qps",
              "topk", "num_draft_tokens"):
        d[c] = pd.to_numeric(d[c].replace("", np.nan))
    taus, kinds, skip = [], [], []
    known = set(architecture_names())
    for r in d.itertuples():
        tau, kind = r.tau, "published"
        if str(r.tau_borrowed) == "True":
            kind = "borrowed: " + str(r.tau_note).removeprefix("borrowed from ")
        if math.isnan(tau) and r.model == TAU_PROXY_MODEL:
            tau = TAU_PROXY.get((r.draft, int(r.gamma)), math.nan)
            kind = "borrowed: issue #20780 AL (none printed)"
        why = ""
        if math.isnan(r.batch):
            why = "request-rate point (no batch size)"
        elif r.model not in known:
            why = f"model {r.model} not in the catalogue"
        elif str(r.source_key).startswith("lmsys-mtp"):
            why = ("DP attention + expert parallelism over 16-128 GPUs with PD disaggregation "
                   "(not the model's tensor-parallel layout), against a baseline without "
                   "overlap scheduling")
        elif math.isnan(r.context):
            why = "context not printed"
        elif math.isnan(tau):
            why = "no tau printed and no published proxy"
        taus.append(tau)
        kinds.append(kind if not math.isnan(tau) else "")
        skip.append(why)
    d["tau_used"], d["tau_kind"], d["skip"] = taus, kinds, skip
    d["fit_class"] = [fit_class(r) if why == "" else "" for r, why in
                      zip(d.to_dict("records"), skip)]
    return d


def _parts(r, moe: dict) -> tuple:
    kw = {}
    if not math.isnan(r.draft_kv_budget):
        kw["draft_kv_budget"] = int(r.draft_kv_budget)
    # the model's defaults, no engine cost; named for the engine where it drafts trees
    name = f"{r.profile}:specdecode-bench" if r.profile == "sglang" else "specdecode-bench"
    eng = dataclasses.replace(profile("specdecode-bench"), name=name, step=moe)
    st = setup(r.gpu, r.model, r.draft, gpus=int(r.gpus), engine=eng, **kw)
    b, s, g = int(r.batch), int(r.context), int(r.gamma)
    topk = 1 if math.isnan(r.topk) else int(r.topk)
    ndt = g + 1 if math.isnan(r.num_draft_tokens) else int(r.num_draft_tokens)
    if topk > 1 or ndt != g + 1:
        p = tree_parts(st, b, s, g, topk=topk, num_draft_tokens=ndt)
        return st, p["t_plain_ms"], p["t_verify_ms"], p["t_draft_ms"], topk, ndt
    return (st, t_plain_ms(st, b, s), t_verify_ms(st, b, s, g), t_draft_ms(st, b, s, g),
            topk, ndt)


def model_parts(r) -> dict:
    """The serving model's T_AR, T_V and drafting time for one point (a row of
    :func:`load_points`), ms, with the model's defaults and no engine cost (the
    ``specdecode-bench`` profile); the heads costed from their shapes; SGLang trees
    (``topk`` > 1 or ``num_draft_tokens`` != gamma + 1) by :func:`~specnb.serving.tree_parts`.
    ``d_tp:P``, ``d_tv:P``, ``d_td:P``: what one unit of each :data:`PHYSICS` parameter P adds
    to those times (MoE targets; 0 for dense)."""
    st, tp, tv, td, topk, ndt = _parts(r, {})
    out = {"tp": tp, "tv": tv, "td": td, "vocab": st.draft.lm_head_vocab,
           "default_over": st.sd_overhead_ms, "max_batch": max_batch_in_memory(st, int(r.context)),
           "topk_used": topk, "ndt_used": ndt}
    for par in PHYSICS:
        if st.target.moe is None:
            out.update({f"d_tp:{par}": 0.0, f"d_tv:{par}": 0.0, f"d_td:{par}": 0.0})
            continue
        _, tp1, tv1, td1, _, _ = _parts(r, {par: 1.0})
        out.update({f"d_tp:{par}": tp1 - tp, f"d_tv:{par}": tv1 - tv, f"d_td:{par}": td1 - td})
    return out


def points_table(points):
    """The scored points of :func:`load_points` with the model's parts (:func:`model_parts`)
    and ``needed``, the step cost the measurement implies (``tau x T_AR / speedup``)."""
    import pandas as pd

    use = points[points["skip"] == ""].copy()
    parts = pd.DataFrame([model_parts(r) for r in use.itertuples()], index=use.index)
    use = pd.concat([use, parts], axis=1)
    use["needed"] = use["tau_used"] * use["tp"] / use["speedup"]
    return use


def columns(rows, free: list[str]) -> dict:
    """{free parameter: its multiplier in the speculative step's cost, ms per unit} of
    ``rows`` (a :func:`points_table`): :func:`~specnb.serving.engines.features` for the
    engine costs (a tree's drafted and verified tokens), the model's derivative for a
    :data:`PHYSICS` parameter."""
    g = rows["gamma"].to_numpy(float)
    k = rows["topk_used"].to_numpy(float)
    drafted = np.where(k > 1, 1.0 + (g - 1.0) * k, g)
    f = features(rows["batch"].astype(int).to_numpy(), rows["gamma"].to_numpy(),
                 draft_vocab=rows["vocab"].to_numpy())
    b = rows["batch"].to_numpy(float)
    f["draft_logits_ns"] = b * drafted * rows["vocab"].to_numpy(float) / 1000.0 * 1e-6
    f["verify_token_us"] = b * rows["ndt_used"].to_numpy(float) * 1e-3
    out = {}
    for name in free:
        if name in PHYSICS:
            out[name] = rows[f"d_tv:{name}"].to_numpy() + rows[f"d_td:{name}"].to_numpy()
            continue
        par, _, method = name.partition(":")
        col = f[par]
        if par == "draft_step_ms" and method != "*":
            col = col * (rows["draft"].to_numpy() == method)
        out[name] = col
    return out


def _plain_columns(rows, free: list[str]) -> dict:
    """{free parameter: its multiplier in T_AR} (only :data:`PHYSICS` parameters move it)."""
    return {k: (rows[f"d_tp:{k}"].to_numpy() if k in PHYSICS else np.zeros(len(rows)))
            for k in free}


def base_cost(rows, free: list[str]) -> np.ndarray:
    over = 0.0 if "sd_overhead_ms" in free else rows["default_over"].to_numpy()
    return rows["tv"].to_numpy() + rows["td"].to_numpy() + over


def fit(rows, free: list[str]) -> dict:
    """Non-negative free parameters of ``free`` fitted to ``rows``: the relative misfit of
    ``cost(theta) - tau T_AR(theta) / speedup`` (linear in theta; T_AR moves with a
    :data:`PHYSICS` parameter), scaled by the implied cost at theta = 0."""
    cols, plain = columns(rows, free), _plain_columns(rows, free)
    ratio = rows["tau_used"].to_numpy() / rows["speedup"].to_numpy()
    adj = {k: cols[k] - ratio * plain[k] for k in free}
    need = rows["needed"].to_numpy()
    base = base_cost(rows, free)
    a = np.column_stack([np.asarray(adj[k], float) for k in free]) / need[:, None]
    x = nnls(a, (need - base) / need)
    return dict(zip(free, map(float, x)))


def predict(rows, free: list[str], theta: dict, tau=None) -> np.ndarray:
    """Predicted speedups of ``rows`` with the free parameters ``theta`` (tau: the rows'
    ``tau_used`` unless given, e.g. :func:`anchored_tau`)."""
    cols, plain = columns(rows, free), _plain_columns(rows, free)
    cost = base_cost(rows, free) + sum(theta[k] * v for k, v in cols.items())
    tp = rows["tp"].to_numpy() + sum(theta[k] * v for k, v in plain.items())
    tau = rows["tau_used"].to_numpy() if tau is None else np.asarray(tau, float)
    return tau * tp / cost


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


def anchored_tau(rows, free: list[str], theta: dict) -> np.ndarray:
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
    p = profile(name)
    out = {}
    for k in FREE[name][0]:
        par, _, method = k.partition(":")
        if par == "draft_step_ms":
            out[k] = p.draft_step(method if method != "*" else "*")
        elif par in PHYSICS:
            out[k] = float(p.step.get(par, 0.0))
        else:
            out[k] = float(getattr(p, par))
    return out


#: Accuracy goals of the published-point scores (issue 25): figure -> (median |error| at
#: most, share of right verdicts at least or None). Leave-one-source-out unless the name
#: says otherwise.
GOALS = {"vllm held out": (0.05, None), "sglang held out": (0.08, None),
         "sglang-moe held out": (0.08, 0.90), "moe held out": (0.08, 0.90),
         "consumer gpu held out": (0.10, None)}


def batch_expansion_us_per_token() -> float:
    """vLLM V0's cost per verified token of its batch-expansion scorer over the MQA scorer,
    microseconds: the least-squares slope through the origin of (batch-expansion less MQA
    scoring time) against the verified tokens, batch x (k + 1), over every row of
    ``data/vllm_pr5691_scoring.csv`` (vLLM PR #5691: Llama-7B, one A100, k = 5, batch
    4-128; per row 33-71 us). DERIVED from a published measurement; fitted on no speedup."""
    d = data.load("vllm_pr5691_scoring")
    tokens = d["batch_size"].to_numpy(float) * (d["num_speculative_tokens"].to_numpy(float) + 1)
    extra = d["batch_expansion_ms"].to_numpy(float) - d["mqa_scorer_ms"].to_numpy(float)
    return float(np.sum(tokens * extra) / np.sum(tokens * tokens) * 1e3)


#: Costs of a class that another profile predicts when held out (a class of one source), taken
#: from a published measurement of that engine, never from the class's points: class ->
#: {free parameter: function returning its value}. vLLM V0 scored verification by batch
#: expansion, whose extra cost per verified token vLLM PR #5691 measured; the V1 profile
#: carries no per-verified-token cost. UNVERIFIED for EAGLE-3 Table 5: vLLM PR #9298 (October
#: 2024) moved V0 towards an MQA scorer and the paper does not say which scorer its run used;
#: the vllm-v0 profile's own in-sample fit (35.5 us per verified token) lands inside #5691's
#: 33-71 us, which supports batch expansion.
PUBLISHED_COSTS = {"vllm-v0": {"verify_token_us": batch_expansion_us_per_token}}


def predict_from_other_class(t, key: str, base: str):
    """Predicted speedups of source ``key``'s points (``t``: :func:`points_table`) by profile
    ``base`` fitted on ``base``'s points other than ``key``'s, plus the source's class's
    :data:`PUBLISHED_COSTS` (none for a :data:`NOT_FITTED` source): the held-out prediction of
    a class with one source, or of a source kept out of its engine's fit."""
    part = t[t["source_key"] == key]
    free = list(FREE[base][0])
    theta = fit(t[(t["fit_class"] == base) & (t["source_key"] != key)], free)
    for par, value in PUBLISHED_COSTS.get(part["fit_class"].iloc[0], {}).items():
        free.append(par)
        theta[par] = value()
    return predict(part, free, theta)


def held_out_predictions(t, name: str, by: str = "source_key"):
    """Predictions of class ``name``'s points (``t``: :func:`points_table`), each from a fit
    of :data:`FREE` ``[name]`` on the class's other groups of ``by`` (a source, or a draft
    series), as a Series indexed like the points; empty where the class has one group."""
    import pandas as pd

    free = FREE[name][0]
    rows = t[t["fit_class"] == name]
    keys = sorted(rows[by].unique())
    if len(keys) < 2:
        return pd.Series(dtype=float)
    parts = []
    for k in keys:
        test = rows[rows[by] == k]
        theta = fit(rows[rows[by] != k], free)
        parts.append(pd.Series(predict(test, free, theta), index=test.index))
    return pd.concat(parts)


def accuracy_figures(t) -> dict:
    """The benchmark's scores of the serving model on the published points (``t``:
    :func:`points_table`): name -> dict ``median``, ``max``, ``verdicts`` (share right),
    ``points``, ``sources``, ``kind`` (``in-sample``: the profile fitted on these points;
    ``held out``: each source predicted by a fit without it; ``held out by series``: the
    class has one source, each draft series predicted by a fit without it; ``not fitted
    on``: another class's profile). In-sample per class; held out per class; ``moe held
    out`` pools every MoE point; ``consumer gpu held out``: points on :data:`CONSUMER_GPUS`,
    each predicted by a profile not fitted on it: its engine's datacenter profile for a
    :data:`NOT_FITTED` source, the vLLM V1 profile plus V0's published batch-expansion cost
    (:data:`PUBLISHED_COSTS`) for vLLM V0's EAGLE-3 Table 5 (the only source of its class;
    :func:`predict_from_other_class`)."""
    out = {}

    def score(name, rows, pred, kind):
        med, mx, ver = summary_numbers(rows, np.asarray(pred, float))
        out[name] = {"median": med, "max": mx, "verdicts": ver, "points": int(len(rows)),
                     "sources": sorted(rows["source_key"].unique()), "kind": kind}

    held = {}
    for name, (free, _) in FREE.items():
        rows = t[t["fit_class"] == name]
        if not len(rows):
            continue
        score(f"{name} in-sample", rows, predict(rows, free, fit(rows, free)), "in-sample")
        h = held_out_predictions(t, name)
        if len(h):
            held[name] = h
            score(f"{name} held out", t.loc[h.index], h, "held out")
    d = held_out_predictions(t, "sglang", by="draft")
    if len(d):
        score("sglang dense held out by series", t.loc[d.index], d, "held out by series")
    if "sglang-moe" in held:
        score("moe held out", t.loc[held["sglang-moe"].index], held["sglang-moe"], "held out")
    cons = t[t["gpu"].isin(CONSUMER_GPUS)]
    if len(cons):
        import pandas as pd

        parts = []
        for key, part in cons.groupby("source_key"):
            cls = part["fit_class"].iloc[0]
            base = cls.removeprefix("consumer:") if cls.startswith("consumer:") else "vllm"
            if cls in held and part.index.isin(held[cls].index).all():
                parts.append(held[cls].loc[part.index])  # its class without this source
                continue
            # never fitted on (NOT_FITTED), or a class of one source (vLLM V0's EAGLE-3
            # Table 5): the datacenter profile fitted without it, plus the class's own costs
            # where another source published them (PUBLISHED_COSTS)
            parts.append(pd.Series(predict_from_other_class(t, key, base), index=part.index))
        pred = pd.concat(parts).loc[cons.index]
        score("consumer gpu held out", cons, pred, "held out")
    return out


def point_speedup(row, engine) -> tuple[float, str]:
    """The model's speedup for one published point (a row of :func:`load_points`, as a
    namedtuple or dict) with ``engine`` (a profile name or :class:`EngineProfile`): its GPU,
    model, draft, GPUs, KV budget, batch, context and gamma, an SGLang tree where the row
    has one (``topk`` > 1 or ``num_draft_tokens`` != gamma + 1;
    :func:`~specnb.serving.tree_speedup`, the roofline profile ``ideal`` then named for the
    row's engine), its ``tau_used`` capped to gamma + 1. Returns (speedup, the profile's
    name as the setup took it: a mixture-of-experts target takes the engine's ``-moe``
    profile)."""
    r = row if isinstance(row, dict) else row._asdict()
    g = int(r["gamma"])
    topk = 1 if math.isnan(r["topk"]) else int(r["topk"])
    ndt = g + 1 if math.isnan(r["num_draft_tokens"]) else int(r["num_draft_tokens"])
    tree = topk > 1 or ndt != g + 1
    eng = profile(engine)
    if tree and not eng.trees:
        eng = dataclasses.replace(eng, name=f"{r['profile']}:{eng.name}")
    kw = {} if math.isnan(r["draft_kv_budget"]) else {"draft_kv_budget": int(r["draft_kv_budget"])}
    st = setup(r["gpu"], r["model"], r["draft"], gpus=int(r["gpus"]),
               engine=eng if eng.name != profile(engine).name else engine, **kw)
    b, s, tau = int(r["batch"]), int(r["context"]), min(float(r["tau_used"]), g + 1.0)
    if tree:
        sp = tree_speedup(st, b, s, g, topk=topk, num_draft_tokens=ndt, tau=tau)
    else:
        sp = speedup(st, b, s, g, tau=tau)
    return float(sp), st.engine.name
