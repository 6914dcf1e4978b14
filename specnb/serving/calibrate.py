"""Calibration: measured step times (CSV ``role, batch_size, context, query_tokens, ms``)
fitted into the efficiencies of a Setup, and the model beside rows it was not fitted on. The same fit
on ``vllm bench serve`` runs: :mod:`specnb.serving.bench_calibrate`.

:data:`MEASURED_COLUMNS`, :func:`read_measurements`, :class:`Calibration` (notes are coded
:class:`specnb.notes.Note`), :func:`calibrate`, :func:`predict_measurements`,
:data:`OVERLAP_GRID`, :data:`FIT_EFFICIENCY_RANGE`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field

import numpy as np

from .. import _check
from ..notes import Note
from .catalogue import _catalogue
from .setup import Setup
from .speedup import _draft_kw, _target_kw
from .step import Efficiency, _prep, _step, step_breakdown

__all__ = ["MEASURED_COLUMNS", "read_measurements", "Calibration", "calibrate",
           "predict_measurements", "OVERLAP_GRID", "FIT_EFFICIENCY_RANGE"]

MEASURED_COLUMNS = ("role", "batch_size", "context", "query_tokens", "ms")


def _as_float(x) -> float:
    try:
        return float(x)
    except OverflowError:  # an integer too large for a float
        return float("inf")
    except (TypeError, ValueError):
        return float("nan")


def _numbers(values):
    """``pd.to_numeric(values, errors="coerce")``, and a number too large for a float (on
    which pandas raises OverflowError even when coercing) read as inf, so the range checks
    refuse it with the row."""
    import pandas as pd

    try:
        return pd.to_numeric(values, errors="coerce")
    except OverflowError:
        return pd.to_numeric(values.map(_as_float), errors="coerce")


def _shown_cell(v, parsed=None) -> str:
    """A CSV cell for a message (:func:`specnb._check.number_text`: a 400-digit cell by its
    length), with ": too large" where :func:`_numbers` read it as inf but the cell is no
    infinity (trial 6, T6-C3)."""
    v = v.item() if isinstance(v, np.generic) else v
    text = _check.number_text(v)
    if parsed is not None and np.isinf(parsed) and not isinstance(v, float) and \
            str(v).strip().lower().lstrip("+-") not in ("inf", "infinity"):
        text += ": too large (no float holds it)"
    return text


def read_measurements(source):
    """Read measured step times: a CSV path, a file object or a DataFrame with columns
    ``role`` (``target`` or ``draft``), ``batch_size`` (>= 1), ``context`` (>= 0, tokens in
    each sequence's KV cache; for a draft with a KV budget give the full context, the budget
    is applied by the model), ``query_tokens`` (>= 1) and ``ms`` (> 0, one forward). Other
    columns are kept.

    Raises
    ------
    ValueError
        a missing or repeated column (named), a row with more fields than the header, an
        unknown role, a non-integer or out-of-range count (above 2**53 included), a
        non-positive or non-numeric time (row number given), no rows, a folder.
    FileNotFoundError
        a path that does not exist.
    """
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        df = source.copy()
        where = "measurements"
    else:
        where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "measurements"
        if isinstance(source, (str, os.PathLike)):
            if os.path.isdir(source):
                raise ValueError(f"calibration CSV {where!r} is a folder; give the CSV file")
            if not os.path.exists(source):
                raise FileNotFoundError(f"calibration CSV {where!r} does not exist")
        try:
            df = pd.read_csv(source)
        except pd.errors.EmptyDataError:
            raise ValueError(f"{where}: empty file; expected a CSV with columns "
                             f"{', '.join(MEASURED_COLUMNS)}") from None
        except pd.errors.ParserError as exc:
            raise ValueError(f"{where}: not a regular CSV ({str(exc).strip()}); every row "
                             f"needs as many fields as the header") from None
        except UnicodeDecodeError as exc:
            raise _check.utf8_error(where, exc, "give a CSV file") from None
        if not isinstance(df.index, pd.RangeIndex):  # pandas made the surplus field an index
            raise ValueError(f"{where}: a row has more fields than the header "
                             f"({len(df.columns)}: {', '.join(map(str, df.columns))}); every "
                             "row needs as many fields as the header, which is the first line")
    df.columns = [str(c).strip() for c in df.columns]
    twice = sorted({c for c in df.columns if df.columns.tolist().count(c) > 1}
                   | {c for c in MEASURED_COLUMNS if f"{c}.1" in df.columns})
    if twice:
        raise ValueError(f"{where}: column(s) {', '.join(twice)} appear more than once in the "
                         "header; keep one")
    missing = [c for c in MEASURED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}; a calibration CSV "
                         f"needs {', '.join(MEASURED_COLUMNS)} (got {', '.join(df.columns)})")
    if df.empty:
        raise ValueError(f"{where}: no rows")
    df = df.reset_index(drop=True)
    raw = df.copy()

    def shown(i, col, parsed=None):
        v = raw.loc[i, col]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "a missing value (an empty cell, NA or nan)"
        return _shown_cell(v, None if parsed is None else parsed[i])

    bad = df.index[df["role"].isna()]
    df["role"] = df["role"].astype(str).str.strip().str.lower()
    bad = bad.union(df.index[~df["role"].isin(["target", "draft"])])
    if len(bad):
        i = bad[0]
        raise ValueError(f"{where}: row {i + 2}: role must be 'target' or 'draft', got "
                         f"{shown(i, 'role')}")
    for col, lo in (("batch_size", 1), ("context", 0), ("query_tokens", 1)):
        vals = _numbers(df[col])
        bad = df.index[vals.isna() | (vals < lo) | (vals > _check.MAX_EXACT_INT)
                       | (vals != vals.round())]
        if len(bad):
            i = bad[0]
            raise ValueError(f"{where}: row {i + 2}: {col} must be an integer >= {lo} "
                             f"(at most 2**53), got {shown(i, col, vals)}")
        df[col] = vals.astype(np.int64)
    ms = _numbers(df["ms"])
    bad = df.index[ms.isna() | ~(ms > 0) | ~np.isfinite(ms)]
    if len(bad):
        i = bad[0]
        raise ValueError(f"{where}: row {i + 2}: ms must be a positive time in milliseconds, "
                         f"got {shown(i, 'ms', ms)}")
    df["ms"] = ms.astype(float)
    return df.reset_index(drop=True)


@dataclass
class Calibration:
    """Result of :func:`calibrate`: ``setup`` (the input setup with fitted efficiencies),
    ``report`` (a DataFrame: one row per measurement with ``predicted_ms`` and
    ``relative_error``), ``fitted`` (role -> names of the fields fitted) and ``notes`` (a
    list of :class:`specnb.notes.Note`; codes ``measured-on-other-gpu``,
    ``measured-on-other-model``, ``efficiency-above-one``, ``fit-underdetermined``,
    ``fit-one-batch``: every row of a role has one batch size)."""

    setup: Setup
    report: object
    fitted: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


_FIT_ORDER = ("fixed", "bandwidth", "compute", "token")


def _terms_at(st: Setup, role: str, b, s, q):
    """Per-row arrays of one role's step at unit efficiency on float arrays (q may be a
    fractional mean, 1 + M gamma): t_w, t_kv (ms at peak bandwidth), t_lin, t_att (ms at peak
    FLOP/s), tokens, the all-reduce bytes' time, the GPU count."""
    if role == "target":
        arch, dtype, budget = st.target, st.dtype, None
    else:
        arch = st.draft.arch
        dtype = st.draft.dtype or st.draft_dtype or st.dtype
        budget = st.draft.kv_budget
    unit = Efficiency(1.0, 1.0, 0.0, 0.0, 0.0)
    arch, g, unit, dtype, kv_dtype, n = _prep(arch, st.gpu, dtype, st.kv_dtype, st.gpus, unit)
    b, s, q = (np.asarray(x, dtype=float) for x in (b, s, q))
    p = _step(arch, g, unit, dtype, kv_dtype, n, b, s, q, budget, parts=True)
    full = lambda x: np.broadcast_to(np.asarray(x, dtype=float), p["tokens"].shape)  # noqa: E731
    t_w = full(p["w"]) / g.bandwidth * 1e3
    t_kv = full(p["kv"]) / g.bandwidth * 1e3
    t_lin = full(p["f_lin"]) / g.flops(dtype) * 1e3
    t_att = full(p["f_att"]) / g.flops(dtype) * 1e3
    return t_w, t_kv, t_lin, t_att, full(p["tokens"]), full(p["comm"]), n


def _role_terms(st: Setup, role: str, df):
    """Per-row arrays for a role: memory bytes, FLOPs per branch, tokens, comm bytes."""
    return _terms_at(st, role, df["batch_size"].to_numpy(), df["context"].to_numpy(),
                     df["query_tokens"].to_numpy())


#: Fitted efficiencies outside this range are treated as not determined by the data: the
#: factor is held at its starting value and the others refitted.
FIT_EFFICIENCY_RANGE = (0.05, 1.5)


def _fit_role(terms, y, start: Efficiency, free: set, extra: dict | None = None,
              kv_floor=None):
    """Fit (1/bandwidth, 1/compute, fixed_ms, token_us) by least squares on relative errors
    (rows weighted by 1/ms) with the roofline's active branches held fixed, re-deciding the
    branches until they stop changing (an active-set iteration; each solve is
    ``numpy.linalg.lstsq``). A cost that comes out negative is held at 0, an efficiency
    outside :data:`FIT_EFFICIENCY_RANGE` at its starting value, and the rest refitted.
    ``extra``: more linear costs, name -> (column per row, starting value), fitted when their
    name is in ``free`` and held at 0 when negative (:func:`calibrate_bench`'s
    per-verification overhead and per-verified-token cost). ``kv_floor``: the KV read's
    latency floor per row at 1 ns per cached token per layer (context x layers x 1e-6 ms),
    fitted as ``kv_token_ns`` when ``"kv_token"`` is in ``free`` (a row's KV read takes the
    larger of its bytes over the bandwidth and the floor; every row starts on the floor's side
    and the sides are re-decided with the others). Returns (bandwidth, compute, fixed_ms,
    token_us), kv_token_ns after them when ``kv_floor`` is given, and a dict of the extras'
    values when ``extra`` is given."""
    t_w, t_kv, t_lin, t_att, tokens, comm, _ = terms
    lo, hi = 1.0 / FIT_EFFICIENCY_RANGE[1], 1.0 / FIT_EFFICIENCY_RANGE[0]
    extra = extra or {}
    floor = np.zeros_like(y) if kv_floor is None else np.asarray(kv_floor, dtype=float)
    order = _FIT_ORDER + ("kv_token",) + tuple(extra)
    known = {"fixed": start.fixed_ms, "bandwidth": 1.0 / start.bandwidth,
             "compute": 1.0 / start.compute, "token": start.token_us * 1e-3,
             "kv_token": start.kv_token_ns,
             **{k: float(v[1]) for k, v in extra.items()}}
    held: set = set()
    prev = None
    wts = 1.0 / y
    first = True
    for _ in range(50):
        lin_mem = t_w * known["bandwidth"] >= t_lin * known["compute"]
        if first and "kv_token" in free and kv_floor is not None:
            on_floor = floor > 0  # start on the floor's side (else its column is all zero)
        else:
            on_floor = floor * known["kv_token"] > t_kv * known["bandwidth"]
        first = False
        kv_mem = np.where(on_floor, floor * known["kv_token"], t_kv * known["bandwidth"])
        att_mem = kv_mem >= t_att * known["compute"]
        key = (lin_mem.tobytes(), att_mem.tobytes(), on_floor.tobytes())
        if key == prev:
            break
        prev = key
        o = 1.0 - start.overlap
        att_w = np.where(att_mem, 1.0, o)
        cols = {"fixed": np.ones_like(y),
                "bandwidth": (np.where(lin_mem, 1.0, o) * t_w
                              + att_w * np.where(on_floor, 0.0, t_kv)),
                "compute": (np.where(lin_mem, o, 1.0) * t_lin + np.where(att_mem, o, 1.0) * t_att),
                "token": tokens, "kv_token": att_w * np.where(on_floor, floor, 0.0),
                **{k: np.asarray(v[0], dtype=float) for k, v in extra.items()}}
        # a column that is all zeros (e.g. never compute-bound) cannot be fitted
        active = [k for k in order if k in free and k not in held
                  and np.any(cols[k] != 0)]
        trial = dict(known)
        while active:
            rhs = y - comm - sum(cols[k] * trial[k] for k in order if k not in active)
            A = np.column_stack([cols[k] for k in active])
            coef = _least_change(A * wts[:, None], rhs * wts,
                                 np.array([known[k] for k in active]), y)
            bad = {}
            for k, c in zip(active, coef):
                if k not in ("bandwidth", "compute") and c < 0:
                    bad[k] = -c
                elif k in ("bandwidth", "compute") and not lo <= c <= hi:
                    bad[k] = max(lo / c if c > 0 else np.inf, c / hi)
            if not bad:
                trial.update({k: float(c) for k, c in zip(active, coef)})
                break
            drop = max(bad, key=bad.get)
            active.remove(drop)
            held.add(drop)
            if drop not in ("bandwidth", "compute"):
                trial[drop] = 0.0
            else:
                trial[drop] = known[drop]
        known = trial
    out = (1.0 / known["bandwidth"], 1.0 / known["compute"], known["fixed"],
           known["token"] * 1e3)
    if kv_floor is not None:
        out = (*out, max(known["kv_token"], 0.0))
    return (*out, {k: known[k] for k in extra}) if extra else out


def _least_change(A, b, x0, y) -> np.ndarray:
    """The least-squares solution of ``A x = b`` nearest the starting values ``x0``: the
    change ``x - x0`` is the minimum-norm least-squares solution of ``A d = b - A x0`` in
    units of each parameter's own size (its starting value; for one that starts at 0, a cost
    held off by default, 1 % of the value that would explain the median measured time alone,
    so that it is the last to take up what the others can explain). Where the rows determine x
    (full column rank) this is plain least squares; where they do not (fewer distinct points
    than parameters, collinear columns) the directions they cannot see keep their starting
    values, so a row the defaults already match moves nothing (T5-M7)."""
    col = np.max(np.abs(A), axis=0)
    scale = np.where(x0 > 0, x0, np.where(col > 0, 0.01 * float(np.median(y)) / np.where(
        col > 0, col, 1.0), 1.0))
    d, *_ = np.linalg.lstsq(A * scale[None, :], b - A @ x0, rcond=None)
    return x0 + scale * d


#: Overlap values :func:`calibrate` tries when ``"overlap"`` is fitted.
OVERLAP_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)

_FIT_FIELDS = {"bandwidth": "bandwidth", "compute": "compute", "fixed_ms": "fixed",
               "token_us": "token", "overlap": None, "kv_token_ns": "kv_token"}


def _role_time(st: Setup, role: str, rows) -> np.ndarray:
    kw = _target_kw(st) if role == "target" else _draft_kw(st)
    arch = st.target if role == "target" else st.draft.arch
    return step_breakdown(arch, st.gpu, rows["batch_size"].to_numpy(),
                          rows["context"].to_numpy(), rows["query_tokens"].to_numpy(),
                          **kw)["time_ms"]


def _label_notes(st: Setup, df) -> list[Note]:
    """Notes where a measurement file's optional ``model`` / ``gpu`` columns name another model
    or GPU than the setup it calibrates (the fit goes ahead: the columns are labels)."""
    notes = []
    if "gpu" in df.columns:
        names = {str(v) for v in df["gpu"].dropna().unique()}
        aliases = {k.replace(" ", "-") for k, rec in _catalogue("gpus", "gpu").items()
                   if rec["gpu"] == st.gpu.name}
        other = sorted(n for n in names
                       if not any(a in n.lower().replace(" ", "-") for a in aliases))
        if other:
            notes.append(Note("measured-on-other-gpu",
                              f"the measurements name GPU {', '.join(other)}, the setup "
                              f"{st.gpu.name}: the fitted efficiencies are that GPU's"))
    if "model" in df.columns:
        for role, want in (("target", st.target.name),
                           ("draft", st.draft.arch.name if st.draft.arch is not None else None)):
            got = sorted({str(v) for v in df.loc[df["role"] == role, "model"].dropna().unique()})
            if want is not None and got and any(g.lower() != want.lower() for g in got):
                notes.append(Note("measured-on-other-model",
                                  f"the {role} rows were measured on {', '.join(got)}, the "
                                  f"setup's {role} is {want}: its efficiencies are fitted to "
                                  "another model"))
    return notes


def calibrate(st: Setup, measurements, *, fit=("bandwidth", "compute", "fixed_ms", "token_us",
                                                 "overlap")) -> Calibration:
    """Fit the efficiency factors and fixed costs of each role to measured step times.

    For each role present (``target``; ``draft`` for model, self and EAGLE/MTP drafts), the
    step time of :func:`step_breakdown` is linear in 1/bandwidth, 1/compute, fixed_ms and
    token_us once it is known which side of each roofline a row sits on; the fit alternates
    between a weighted least-squares solve (relative errors; numpy ``lstsq``) and re-deciding
    the sides. ``overlap`` is chosen from :data:`OVERLAP_GRID` by the smallest squared
    relative error. The all-reduce latency is folded into ``fixed_ms`` (``allreduce_us``
    becomes 0; the per-byte term stays). A factor the rows cannot determine (e.g. compute when
    no row does much arithmetic) keeps its value from ``st``; so does an efficiency that would
    fall outside :data:`FIT_EFFICIENCY_RANGE`. A fitted efficiency above 1 is kept and reported
    in ``notes`` (the datasheet understates the hardware, or the shape or units are wrong).

    A CSV measured with transformers on one GPU (e.g. a Llama-3.1-8B-shaped model in bf16 on
    an H200, ``role`` target, plain and multi-token forwards) works directly:
    ``calibrate(setup("H200", "Llama-3.1-8B", "eagle3"), "steps.csv")``; target rows alone
    calibrate the target and leave the draft's defaults.

    Parameters
    ----------
    st : Setup
    measurements : CSV path, file object or DataFrame (see :func:`read_measurements`)
    fit : which fields to fit: any of bandwidth, compute, fixed_ms, token_us, overlap, and
        kv_token_ns (not fitted by default: the KV read's latency floor of a decode kernel
        that does not split a sequence's keys over blocks, :class:`Efficiency`)

    Returns
    -------
    Calibration

    Raises
    ------
    ValueError
        a malformed CSV (:func:`read_measurements`); draft rows for an n-gram / suffix draft
        (no model to time); an unknown name in ``fit``.
    """
    df = read_measurements(measurements)
    if isinstance(fit, str):
        fit = (fit,)
    for f in fit:
        _check.choice("fit", f, _FIT_FIELDS)
    free = {_FIT_FIELDS[f] for f in fit} - {None}
    out_setup = st
    fitted, notes = {}, _label_notes(st, df)
    for role in ("target", "draft"):
        rows = df[df["role"] == role]
        if rows.empty:
            continue
        if role == "draft" and st.draft.kind == "none":
            raise ValueError(f"the measurements hold draft rows but the draft is "
                             f"{st.draft.method!r}, which has no model to time; drop them")
        base = st.target_efficiency if role == "target" else st.draft_efficiency
        terms = _role_terms(st, role, rows)
        layers = (st.target if role == "target" else st.draft.arch).n_layers
        kv_floor = None
        if "kv_token" in free or base.kv_token_ns:  # context x layers at 1 ns per token-layer
            ctx = rows["context"].to_numpy(float)
            budget = None if role == "target" else st.draft.kv_budget
            kv_floor = (np.minimum(ctx, budget) if budget else ctx) * layers * 1e-6
        latency = 2 * layers * base.allreduce_us * 1e-3 if st.gpus > 1 else 0.0
        y = rows["ms"].to_numpy(float)
        best = None
        # the default first: where the rows cannot tell overlaps apart (ties) it stays
        grid = (base.overlap,) + tuple(o for o in OVERLAP_GRID if o != base.overlap)
        for ov in (grid if "overlap" in fit else (base.overlap,)):
            start = dataclasses.replace(base, fixed_ms=base.fixed_ms + latency, overlap=ov)
            bw, cp, fixed, tok, *kvt = _fit_role(terms, y, start, free, kv_floor=kv_floor)
            eff = Efficiency(bandwidth=bw, compute=cp, fixed_ms=max(fixed, 0.0),
                             token_us=max(tok, 0.0), allreduce_us=0.0, overlap=ov,
                             kv_token_ns=kvt[0] if kvt else base.kv_token_ns)
            trial = dataclasses.replace(
                out_setup, **{f"{role}_efficiency": eff})
            err = float(np.sum((_role_time(trial, role, rows) / y - 1.0) ** 2))
            if best is None or err < best[0] - 1e-12:
                best = (err, eff)
        eff = best[1]
        for nm in ("bandwidth", "compute"):
            v = getattr(eff, nm)
            if v > 1.0:
                notes.append(Note("efficiency-above-one",
                                  f"{role}: fitted {nm} efficiency {v:.2f} is above 1 (faster "
                                  "than the datasheet): check the GPU, the model shape and "
                                  "the units"))
        fitted[role] = sorted(fit)
        out_setup = dataclasses.replace(out_setup, **{f"{role}_efficiency": eff})
        points = len(rows[["batch_size", "context", "query_tokens"]].drop_duplicates())
        if rows["batch_size"].nunique() == 1:
            notes.append(Note("fit-one-batch",
                              f"{role}: every row has batch size {int(rows['batch_size'].iloc[0])}"
                              ": a fixed cost per step and a cost per token cannot be told "
                              "apart, so predictions at other batch sizes are guesses; measure "
                              "at least two batch sizes, one near your peak"))
        if points < 5:
            notes.append(Note("fit-underdetermined",
                              f"{role}: only {points} distinct (batch_size, context, "
                              f"query_tokens) point{'s' * (points != 1)} ({len(rows)} "
                              f"row{'s' * (len(rows) != 1)}) for up to 5 "
                              "parameters: the fit is underdetermined; the directions the "
                              "rows cannot determine keep their defaults (the smallest change "
                              "that fits the rows); measure at least 5 distinct points to fit "
                              "them all"))
    return Calibration(out_setup, predict_measurements(out_setup, df), fitted, notes)


def predict_measurements(st: Setup, measurements):
    """The model's step time for each measured row, beside the measurement.

    Use it to check a calibration on rows it was not fitted on (fit on small batches or short
    contexts with :func:`calibrate`, then predict the rest with the fitted ``.setup``).

    Parameters
    ----------
    st : Setup (its target and draft efficiencies are used for the rows of each role)
    measurements : CSV path, file object or DataFrame (see :func:`read_measurements`)

    Returns
    -------
    DataFrame: the rows with ``predicted_ms`` and ``relative_error`` (predicted / measured - 1)
    added.

    Raises
    ------
    ValueError
        a malformed CSV; draft rows for a draft with no model (n-gram / suffix).
    """
    df = read_measurements(measurements).reset_index(drop=True)
    if st.draft.arch is None and (df["role"] == "draft").any():
        raise ValueError(f"measurements: draft rows given, but the draft {st.draft.name!r} "
                         "has no model to time (n-gram / suffix)")
    pred = np.full(len(df), np.nan)
    for role in ("target", "draft"):
        idx = df.index[df["role"] == role]
        if len(idx):
            pred[idx] = _role_time(st, role, df.loc[idx])
    report = df.copy()
    report["predicted_ms"] = pred
    report["relative_error"] = pred / df["ms"].to_numpy() - 1.0
    return report
