"""Calibration on ``vllm bench serve`` runs (TPOT and throughput, speculation on and off):
:func:`calibrate_bench`, :func:`predict_bench`, :class:`BenchCalibration`,
:func:`published_bench_results` (published sweeps as ``--save-result`` dicts). The fit is
:mod:`specnb.serving.calibrate`'s least-squares solve with extra columns.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .. import _check
from ..notes import Note
from .calibrate import _fit_role, _numbers, _shown_cell, _terms_at
from .setup import Setup
from .step import Efficiency

__all__ = ["BENCH_COLUMNS", "BENCH_FIT", "BenchCalibration", "calibrate_bench", "predict_bench",
           "PUBLISHED_SWEEPS", "published_bench_results"]

# --------------------------------------------------------------------------- bench runs
#: Columns of one ``vllm bench serve`` run as :func:`calibrate_bench` takes it (read from a
#: ``--save-result`` file by :func:`specnb.vllm.bench_points`): ``file`` (a name), ``model_id``,
#: ``speculation`` (bool), ``concurrency`` (``max_concurrency``: the batch size), ``input_len``
#: and ``output_len`` (mean tokens per request), ``tpot_ms`` (mean TPOT), ``ttft_ms`` (mean
#: TTFT), ``output_throughput`` (tokens/s), ``tau`` (vLLM's mean acceptance length, per
#: draft) and ``gamma`` (num_speculative_tokens); tau and gamma NaN with speculation off.
BENCH_COLUMNS = ("file", "model_id", "speculation", "concurrency", "input_len", "output_len",
                 "tpot_ms", "ttft_ms", "output_throughput", "tau", "gamma")

#: Parameters :func:`calibrate_bench` can fit: the target's efficiencies and the engine's
#: per-verification overhead (``sd_overhead_ms``) and per-verified-token cost
#: (``verify_token_us``).
BENCH_FIT = ("bandwidth", "compute", "fixed_ms", "token_us", "sd_overhead_ms",
             "verify_token_us")
_BENCH_KEYS = {"bandwidth": "bandwidth", "compute": "compute", "fixed_ms": "fixed",
               "token_us": "token", "sd_overhead_ms": "overhead", "verify_token_us": "vtoken"}


@dataclass
class BenchCalibration:
    """Result of :func:`calibrate_bench`.

    ``setup``: the input setup with the fitted target efficiency (its bandwidth and compute
    shared by a model, self or head draft), per-verification overhead and engine cost per
    verified token; ``report``: one row per run (file, speculation,
    concurrency, context, gamma, tau, tpot_ms, predicted_tpot_ms, tpot_error,
    output_throughput, predicted_throughput, throughput_error; errors are predicted /
    measured - 1); ``fitted``: parameter -> value; ``tau``: gamma -> the mean tau of the
    runs with speculation on; ``context``: the runs' mean decode context; ``runs``: the
    checked runs; ``notes``: coded :class:`specnb.notes.Note` (``fit-underdetermined``,
    ``fit-one-batch``, ``bench-other-model``, ``efficiency-above-one``,
    ``throughput-row-dropped``)."""

    setup: Setup
    report: object
    fitted: dict
    tau: dict
    context: int
    runs: object
    notes: list = field(default_factory=list)

    def predict(self, concurrencies, *, context=None):
        """The calibrated model at ``concurrencies`` (ints >= 1), for each gamma run with
        speculation on at its mean tau: tpot_off_ms, tpot_on_ms, speedup (TPOT off / on),
        decode throughput off and on (concurrency x 1000 / TPOT, tokens/s: no prefill),
        ``fits`` (the KV cache fits, :func:`~specnb.serving.memory_cap`) and ``run`` (a run
        at this concurrency was fitted). ``context`` defaults to the runs' mean."""
        import pandas as pd

        from .setup import memory_cap
        from .speedup import _Times, check_axis

        b = check_axis("concurrencies", concurrencies, 1).astype(float)
        s = float(self.context if context is None else
                  _check.scalar_int("context", context, lo=0))
        tm = _Times(self.setup)
        cap = memory_cap(self.setup, int(s))["max_batch"]
        ran = set(self.runs["concurrency"].astype(int))
        out = []
        for g, tau in sorted(self.tau.items()):
            tp = tm.plain(b, s)
            *_, cost, _, _, _, gain = tm.parts(b, s, float(g), tau)
            on = cost / gain
            for i, bb in enumerate(b.astype(int)):
                out.append({"concurrency": int(bb), "context": int(s), "gamma": int(g),
                            "tau": float(tau), "tpot_off_ms": float(tp[i]),
                            "tpot_on_ms": float(on[i]), "speedup": float(tp[i] / on[i]),
                            "throughput_off": 1000.0 * bb / float(tp[i]),
                            "throughput_on": 1000.0 * bb / float(on[i]),
                            "fits": bool(bb <= cap), "run": bool(bb in ran)})
        return pd.DataFrame(out)


def _bench_runs(runs, tau=None, gamma=None, both=True):
    """``runs`` (DataFrame or list of dicts with :data:`BENCH_COLUMNS`) checked: one model,
    speculation on and off present, tau and gamma known for every run with speculation on
    (``tau`` / ``gamma`` fill the gaps)."""
    import pandas as pd

    df = pd.DataFrame(list(runs) if not isinstance(runs, pd.DataFrame) else runs).copy()
    if df.empty:
        raise ValueError("calibrate_bench needs at least one run with speculation on and one "
                         "with it off; got none")
    missing = [c for c in BENCH_COLUMNS if c not in df.columns and c != "file"]
    if missing:
        raise ValueError(f"bench runs: missing column(s) {', '.join(missing)}; read the files "
                         "with specnb.vllm.bench_points")
    if "file" not in df.columns:
        df["file"] = [f"run {i + 1}" for i in range(len(df))]
    df = df.reset_index(drop=True)
    models = {str(m) for m in df["model_id"].dropna()}
    if len(models) > 1:
        which = "; ".join(f"{f}: {m}" for f, m in zip(df["file"], df["model_id"]))
        raise ValueError(f"mixed models in one calibration set ({which}): calibrate one "
                         "model at a time")
    for col, lo, what in (("concurrency", 1, "max_concurrency"), ("output_len", 2,
                          "output tokens per request (TPOT needs 2)"), ("input_len", 0,
                          "input tokens per request")):
        v = _numbers(df[col])
        bad = df.index[v.isna() | (v < lo)]
        if len(bad):
            i = bad[0]
            raise ValueError(f"{df.loc[i, 'file']}: {col} ({what}) must be >= {lo}, got "
                             f"{_shown_cell(df.loc[i, col], v[i])}")
        df[col] = v.astype(float)
    for col in ("tpot_ms", "ttft_ms", "output_throughput"):
        v = _numbers(df[col])
        bad = df.index[v.isna() | ~(v > 0) | ~np.isfinite(v)]
        if len(bad):
            i = bad[0]
            raise ValueError(f"{df.loc[i, 'file']}: {col} must be a positive number, got "
                             f"{_shown_cell(df.loc[i, col], v[i])}")
        df[col] = v.astype(float)
    df["speculation"] = df["speculation"].astype(bool)
    if both and (df["speculation"].all() or not df["speculation"].any()):
        state = "on" if df["speculation"].all() else "off"
        raise ValueError(f"every run has speculation {state}; calibrate_bench needs runs with "
                         "speculation on and off (give each file's state with --label on|off "
                         "where its keys do not say)")
    for col, given, lo in (("tau", tau, 1.0), ("gamma", gamma, 1)):
        v = _numbers(df[col]).astype(float)
        if given is not None:
            given = (_check.scalar_int(col, given, lo=1) if col == "gamma"
                     else _check.scalar_real(col, given, lo=1.0))
            v = v.where(v.notna() | ~df["speculation"], float(given))
        gap = df.index[df["speculation"] & v.isna()]
        if len(gap):
            files = ", ".join(map(str, df.loc[gap, "file"]))
            key = ("spec_decode_acceptance_length" if col == "tau" else
                   "spec_decode_num_drafts and spec_decode_draft_tokens (or the per-position "
                   "rates)")
            raise ValueError(f"{files}: speculation on but no {col} ({key} missing: vLLM writes "
                             "them when the server exposes spec-decode counters); give "
                             f"{col}= (specnb plan: --{col} with one value)")
        bad = df.index[df["speculation"] & (v < lo)]
        if len(bad):
            raise ValueError(f"{df.loc[bad[0], 'file']}: {col} must be >= {lo}, got "
                             f"{v[bad[0]]!r}")
        df[col] = v
    over = df.index[df["speculation"] & (df["tau"] > df["gamma"] + 1)]
    if len(over):
        i = over[0]
        raise ValueError(f"{df.loc[i, 'file']}: tau {df.loc[i, 'tau']:g} exceeds gamma + 1 = "
                         f"{df.loc[i, 'gamma'] + 1:g}")
    df["context"] = np.round(df["input_len"] + df["output_len"] / 2.0)
    return df


def _bench_predict(st: Setup, df):
    """Predicted TPOT (ms) and output throughput (tokens/s) of each run."""
    from .speedup import _Times

    tm = _Times(st)
    b, s = df["concurrency"].to_numpy(float), df["context"].to_numpy(float)
    on = df["speculation"].to_numpy(bool)
    tpot = np.asarray(tm.plain(b, s), dtype=float).copy()
    if on.any():
        g, tau = df["gamma"].to_numpy(float)[on], df["tau"].to_numpy(float)[on]
        *_, cost, _, _, _, gain = tm.parts(b[on], s[on], g, tau)
        tpot[on] = cost / gain
    n = df["output_len"].to_numpy(float)
    thr = 1000.0 * b * n / (df["ttft_ms"].to_numpy(float) + (n - 1.0) * tpot)
    return tpot, thr


def predict_bench(st: Setup, runs):
    """The model's TPOT and output throughput for each bench run, beside the measured ones
    (check a :func:`calibrate_bench` fit on runs it was not fitted on). Throughput:
    concurrency x output_len x 1000 / (TTFT + (output_len - 1) TPOT), with the run's
    measured TTFT (a closed loop of ``max_concurrency`` requests).

    Returns
    -------
    DataFrame: file, speculation, concurrency, context, gamma, tau, tpot_ms,
    predicted_tpot_ms, tpot_error, output_throughput, predicted_throughput,
    throughput_error.

    Raises
    ------
    ValueError
        as :func:`calibrate_bench` for the runs.
    """
    df = _bench_runs(runs, both=False) if not _is_checked(runs) else runs
    tpot, thr = _bench_predict(st, df)
    out = df[["file", "speculation", "concurrency", "context", "gamma", "tau", "tpot_ms"]].copy()
    out["concurrency"] = out["concurrency"].astype(int)
    out["context"] = out["context"].astype(int)
    out["predicted_tpot_ms"] = tpot
    out["tpot_error"] = tpot / df["tpot_ms"].to_numpy() - 1.0
    out["output_throughput"] = df["output_throughput"]
    out["predicted_throughput"] = thr
    out["throughput_error"] = thr / df["output_throughput"].to_numpy() - 1.0
    return out.reset_index(drop=True)


def _is_checked(runs) -> bool:
    return hasattr(runs, "columns") and "context" in runs.columns and "file" in runs.columns


def _implied_tpot_ms(concurrency, output_len, output_throughput, ttft_ms):
    """The TPOT (ms) a closed loop's output throughput implies: each of ``concurrency``
    requests takes TTFT + (output_len - 1) TPOT for output_len tokens (the first comes with
    the prefill, as vLLM's TPOT excludes it), so throughput = concurrency x output_len x 1000 /
    (TTFT + (output_len - 1) TPOT), solved for TPOT."""
    return (1000.0 * concurrency * output_len / output_throughput - ttft_ms) / (output_len - 1.0)


def calibrate_bench(st: Setup, runs, *, tau=None, gamma=None, fit="auto") -> BenchCalibration:
    """Fit the target's efficiencies and the engine's speculative costs to ``vllm bench serve``
    runs with speculation on and off, at one or more ``--max-concurrency`` values.

    Each run gives two measurements of the time per decode step per sequence: its mean TPOT,
    and the one its output throughput implies for a closed loop of ``concurrency`` requests,
    ``(concurrency x output_len x 1000 / output_throughput - TTFT) / (output_len - 1)``. A run
    with speculation off is a plain step (batch = concurrency, context = input_len +
    output_len / 2, the mean over the decode); a run with speculation on measures
    ``(gamma T_D + T_V + overhead + engine) / (1 + M (tau - 1))`` (tau, gamma from the run, M
    the setup's proposal rate). A bench run cannot tell the draft's bandwidth and compute from
    the target's, so a draft model, self-draft or head shares the fitted ones (same GPU and
    engine); its fixed cost per forward, a head's extra weights and the engine profile's
    draft-step costs keep their values. Fitted besides: the per-verification overhead and the
    engine's per-verified-token cost. All rows go into
    one weighted least-squares fit (relative errors; :func:`calibrate`'s active-set solve).

    Parameters
    ----------
    st : Setup (the model, GPU and draft the runs were made with)
    runs : DataFrame or list of dicts with :data:`BENCH_COLUMNS`
        (``specnb.vllm.bench_points(files, labels)`` reads ``--save-result`` files)
    tau, gamma : float >= 1, int >= 1, or None
        for runs with speculation on whose files carry no spec-decode keys (older vLLM)
    fit : "auto" or names from :data:`BENCH_FIT`
        "auto": bandwidth, fixed_ms and sd_overhead_ms, plus compute, token_us and
        verify_token_us when the runs give at least 7 distinct (concurrency, context, query
        tokens) points

    Returns
    -------
    BenchCalibration (``.report``: the fit's error on each run; ``.predict(concurrencies)``)

    Raises
    ------
    ValueError
        no runs; a missing column; mixed models (``model_id``) in one set; runs all on or
        all off; a run with speculation on and no tau or gamma (and none given); tau >
        gamma + 1; a non-positive TPOT, TTFT or throughput; concurrency < 1, output_len < 2;
        an unknown name in ``fit``.
    """
    from .catalogue import model_id
    from .speedup import _Times

    df = _bench_runs(runs, tau=tau, gamma=gamma)
    on = df["speculation"].to_numpy(bool)
    b, s = df["concurrency"].to_numpy(float), df["context"].to_numpy(float)
    m = float(st.proposal_rate)
    g = np.where(on, df["gamma"].fillna(0).to_numpy(float), 0.0)
    q = np.where(on, 1.0 + m * g, 1.0)
    gain = np.where(on, 1.0 + m * (df["tau"].fillna(1).to_numpy(float) - 1.0), 1.0)
    points = len({(bb, ss, qq) for bb, ss, qq in zip(b, s, q)})
    if isinstance(fit, str) and fit == "auto":
        names = ["bandwidth", "fixed_ms", "sd_overhead_ms"]
        if points >= 7:
            names += ["compute", "token_us", "verify_token_us"]
    else:
        names = [fit] if isinstance(fit, str) else list(fit)
        for f in names:
            _check.choice("fit", f, BENCH_FIT)
    free = {_BENCH_KEYS[f] for f in names}
    # the draft shares the fitted bandwidth and compute (same GPU and engine: a bench run
    # cannot tell them apart); its fixed and per-token costs per forward, a head's extra
    # weights and the engine's draft-step and logits costs are modelled and taken off
    shared = st.draft.kind in ("model", "self", "head")
    d_eff = st.draft_efficiency
    tm = _Times(dataclasses.replace(st, engine=dataclasses.replace(st.engine,
                                                                   verify_token_us=0.0)))
    drafting = np.zeros_like(b)
    if on.any():
        bo, so, go = b[on], s[on], g[on]
        drafting[on] = tm.engine(bo, go)
        if shared:  # per draft forward: fixed + per-token costs; a head's extra weights
            first, rest = st.draft.extra_params
            latency_d = (2 * st.draft.arch.n_layers * d_eff.allreduce_us * 1e-3
                         if st.gpus > 1 else 0.0)  # all-reduce latency, not in the terms
            drafting[on] += (go * (d_eff.fixed_ms + latency_d + d_eff.token_us * 1e-3 * bo)
                             + tm._extra_ms(first, bo) + (go - 1.0) * tm._extra_ms(rest, bo))
        else:  # n-gram / suffix: a fraction of the verification, as modelled
            drafting[on] += tm.draft(bo, so, go, tm.verify(bo, so, go)[0])
    implied = _implied_tpot_ms(b, df["output_len"].to_numpy(float),
                               df["output_throughput"].to_numpy(float),
                               df["ttft_ms"].to_numpy(float))
    ys, rows_b, rows_s, rows_q, rows_on, keeps, notes = [], [], [], [], [], [], []
    for kind, per_token in (("tpot", df["tpot_ms"].to_numpy(float)), ("throughput", implied)):
        y = per_token * gain - drafting
        keep = y > 0
        for i in np.flatnonzero(~keep):
            notes.append(Note("throughput-row-dropped" if kind == "throughput" else
                              "bench-row-dropped",
                              f"{df.loc[i, 'file']}: the step time its {kind} implies "
                              f"({per_token[i]:.3g} ms per token) leaves no time for the "
                              "verification after the modelled drafting; not fitted"))
        ys.append(y[keep])
        keeps.append(keep)
        rows_b.append(b[keep]), rows_s.append(s[keep]), rows_q.append(q[keep])
        rows_on.append(on[keep])
    y = np.concatenate(ys)
    rb, rs, rq, ron = map(np.concatenate, (rows_b, rows_s, rows_q, rows_on))
    terms = _terms_at(st, "target", rb, rs, rq)
    rg = np.concatenate([g[keep_i] for keep_i in keeps])
    if shared and ron.any():  # + gamma draft forwards' bytes and FLOPs at unit efficiency
        dt = _terms_at(st, "draft", rb, rs, np.ones_like(rb))
        terms = tuple(t + np.where(ron, rg, 0.0) * d for t, d in zip(terms[:6], dt[:6])
                      ) + (terms[6],)
    base = st.target_efficiency
    layers = st.target.n_layers
    latency = 2 * layers * base.allreduce_us * 1e-3 if st.gpus > 1 else 0.0
    start = dataclasses.replace(base, fixed_ms=base.fixed_ms + latency)
    extra = {"overhead": (ron.astype(float), st.sd_overhead_ms),
             "vtoken": (ron * rb * rq * 1e-3, st.engine.verify_token_us)}
    bw, cp, fixed, tok, ext = _fit_role(terms, y, start, free, extra)
    eff = Efficiency(bandwidth=bw, compute=cp, fixed_ms=max(fixed, 0.0),
                     token_us=max(tok, 0.0), allreduce_us=0.0, overlap=base.overlap)
    prof = dataclasses.replace(st.engine, name=f"{st.engine.name}, calibrated",
                               verify_token_us=max(ext["vtoken"], 0.0))
    out = dataclasses.replace(st, target_efficiency=eff, engine=prof,
                              sd_overhead_ms=max(ext["overhead"], 0.0))
    if shared:
        out = dataclasses.replace(out, draft_efficiency=dataclasses.replace(
            d_eff, bandwidth=bw, compute=cp))
    fitted = {"bandwidth": bw, "compute": cp, "fixed_ms": eff.fixed_ms,
              "token_us": eff.token_us, "sd_overhead_ms": out.sd_overhead_ms,
              "verify_token_us": prof.verify_token_us}
    fitted = {k: float(v) for k, v in fitted.items() if k in names}
    for nm in ("bandwidth", "compute"):
        if nm in fitted and fitted[nm] > 1.0:
            notes.append(Note("efficiency-above-one",
                              f"target: fitted {nm} efficiency {fitted[nm]:.2f} is above 1 "
                              "(faster than the datasheet): check the GPU, the model and the "
                              "runs' lengths"))
    if df["concurrency"].nunique() == 1 and df["context"].nunique() == 1:
        notes.append(Note("fit-one-batch",
                          f"every run has concurrency {int(b[0])} and one context: a fixed "
                          "cost per step and a cost per token cannot be told apart, so "
                          "predictions at other concurrencies are guesses; run at least two "
                          "--max-concurrency values, one near your peak"))
    if points < len(names) + 1:
        notes.append(Note("fit-underdetermined",
                          f"{points} distinct (concurrency, context, query tokens) points for "
                          f"{len(names)} parameters ({', '.join(names)}): the fit is "
                          "underdetermined; add runs at other concurrencies"))
    want = model_id(st.target).lower()
    other = sorted({str(x) for x in df["model_id"].dropna()
                    if want not in str(x).lower() and st.target.name.lower()
                    not in str(x).lower()})
    if other:
        notes.append(Note("bench-other-model",
                          f"the runs name model {', '.join(other)}, the setup's target is "
                          f"{st.target.name} ({model_id(st.target)}): the fit is that model's"))
    taus = (df[on].groupby(df.loc[on, "gamma"].astype(int))["tau"].mean())
    return BenchCalibration(out, predict_bench(out, df), fitted,
                            {int(k): float(v) for k, v in taus.items()},
                            int(round(float(df["context"].mean()))), df, notes)


#: Published sweeps :func:`published_bench_results` turns into bench results.
PUBLISHED_SWEEPS = ("magicdec-table3a", "vllm-i20780-eagle", "vllm-i20780-eagle3")


def published_bench_results(source: str, *, output_len: int = 256, ttft_ms: float = 50.0,
                            requests_per_run: int = 4) -> list[dict]:
    """Published step times written as ``vllm bench serve --save-result`` results (dicts with
    vLLM's keys), to try :func:`calibrate_bench` on numbers someone measured.

    * ``magicdec-table3a``: MagicDec appendix Table 3(a) (8x A100, LLaMA-2-7B-32K, self-draft
      with a 512-token KV, gamma 2): per (context, batch) a run with speculation off (TPOT =
      the printed T_AR) and one with it on (TPOT = T_SD, tau = the printed Omega),
      ``max_concurrency`` = the batch.
    * ``vllm-i20780-eagle`` / ``-eagle3``: vLLM issue #20780 (vLLM V1, 1x H100, Llama-3.1-8B,
      batch 1): the plain TPOT (7.07 ms) and one run per K = 2..7 with TPOT = 7.07 / the
      printed ratio and tau = the printed mean acceptance length
      (``data/engine_measurements.csv``).

    ASSUMED (not printed by the sources): ``output_len`` tokens per request, input tokens
    such that the mean decode context is the printed one, ``ttft_ms``, and an output
    throughput of a closed loop (concurrency x output_len x 1000 / (TTFT + (output_len - 1)
    TPOT)); spec-decode counters from 1,000 drafts of gamma tokens. Each dict also carries
    ``specnb_source`` (the row it came from).

    Raises
    ------
    ValueError
        an unknown source (the known ones: :data:`PUBLISHED_SWEEPS`), output_len < 2.
    """
    from .. import data
    from .reference import magicdec_table

    _check.choice("source", source, PUBLISHED_SWEEPS)
    n = _check.scalar_int("output_len", output_len, lo=2)
    ttft = _check.scalar_real("ttft_ms", ttft_ms, lo=0.0)
    k = _check.scalar_int("requests_per_run", requests_per_run, lo=1)

    def run(model, b, ctx, tpot, where, gamma=None, tau=None):
        reqs = k * b
        d = {"model_id": model, "max_concurrency": int(b), "completed": reqs,
             "num_prompts": reqs, "total_input_tokens": int(reqs * max(ctx - n // 2, 0)),
             "total_output_tokens": reqs * n, "mean_tpot_ms": float(tpot),
             "mean_ttft_ms": ttft, "output_throughput": 1000.0 * b * n / (ttft + (n - 1) * tpot),
             "specnb_source": where}
        if gamma is not None:
            d.update(spec_decode_num_drafts=1000, spec_decode_draft_tokens=1000 * int(gamma),
                     spec_decode_accepted_tokens=int(round(1000 * (tau - 1.0))),
                     spec_decode_acceptance_length=float(tau),
                     spec_decode_acceptance_rate=100.0 * (tau - 1.0) / gamma)
        return d

    out = []
    if source == "magicdec-table3a":
        for _, r in magicdec_table("table3a").iterrows():
            where = f"MagicDec Table 3(a), context {r['context']}, batch {r['batch_size']}"
            model = "togethercomputer/LLaMA-2-7B-32K"
            out.append(run(model, int(r["batch_size"]), int(r["context"]), r["t_ar_ms"], where))
            out.append(run(model, int(r["batch_size"]), int(r["context"]), r["t_sd_ms"], where,
                           int(r["gamma"]), float(r["omega"])))
        return out
    head = source.rsplit("-", 1)[1]
    pts = data.load("engine_measurements")
    pts = pts[(pts["source_key"] == "vllm-i20780") & (pts["draft"] == head)]
    first = pts.iloc[0]
    model = "meta-llama/Llama-3.1-8B-Instruct"
    out.append(run(model, 1, int(first["context"]), float(first["t_plain_ms"]),
                   f"vLLM issue #20780, plain ({first['id']})"))
    for _, r in pts.iterrows():
        out.append(run(model, int(r["batch"]), int(r["context"]),
                       float(r["t_plain_ms"]) / float(r["speedup"]), f"vLLM issue #20780, {r['id']}",
                       int(r["gamma"]), float(r["tau"])))
    return out
