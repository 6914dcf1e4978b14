"""Published tables beside the model: MagicDec's step times (``data/magicdec_steps.csv``,
arXiv 2408.11049) and EAGLE-3's batch tables (Tables 3 and 5, arXiv 2503.01840).

:data:`MAGICDEC_TABLES`, :data:`MAGICDEC_SNAPKV_BUDGET`, :func:`magicdec_table`,
:func:`magicdec_setup`, :func:`table_measurements`, :func:`predict_table`,
:func:`fit_and_predict`, :data:`EAGLE3_BATCH_TABLES`, :func:`batch_table_comparison`; the
published plain decode steps of mixture-of-experts targets (``data/moe_plain_steps.csv``, issue
25): :func:`moe_plain_steps`, :func:`plain_step_comparison`, :func:`calibrated_on_plain_steps`;
the published batch-1 plain steps of dense targets on GPUs without a fitted profile
(``data/gpu_plain_steps.csv``): :func:`gpu_plain_steps`, :func:`layer_fixed_from_plain_steps`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import _check
from .calibrate import MEASURED_COLUMNS, calibrate, predict_measurements, read_measurements
from .catalogue import _load, architecture, gpu
from .engines import profile_for, with_routing_skew
from .setup import Setup, setup
from .speedup import _Times, speedup, t_plain_ms
from .step import step_time_ms

__all__ = ["MAGICDEC_TABLES", "MAGICDEC_SNAPKV_BUDGET", "magicdec_table", "magicdec_setup",
           "table_measurements", "predict_table", "fit_and_predict", "EAGLE3_BATCH_TABLES",
           "batch_table_comparison", "moe_plain_steps", "plain_step_comparison",
           "calibrated_on_plain_steps", "routing_skew_from_plain_steps", "MEASURED_KV_FLOOR_FIT",
           "measured_context_split", "gpu_plain_steps", "layer_fixed_from_plain_steps"]

#: MagicDec tables in ``data/magicdec_steps.csv`` (arXiv 2408.11049): Table 2 and appendix
#: Table 4 (Llama-3.1-8B, SnapKV self-speculation, 8x H100), appendix Table 3 (a) and (b)
#: (LLaMA-2-7B-32K with a TinyLlama-1.1B draft or itself, StreamingLLM KV 512, 8x A100).
MAGICDEC_TABLES = ("table2", "table3a", "table3b", "table4")

#: SnapKV draft budget assumed where MagicDec does not print it (Tables 2 and 4): the best
#: SnapKV budget of P section 5.2 (2049 tokens). An assumption, stated wherever it is used.
MAGICDEC_SNAPKV_BUDGET = 2049

_HARDWARE = {"8x H100": ("H100-SXM", 8), "8x A100": ("A100-SXM-80GB", 8)}


def magicdec_table(table_id: str):
    """Rows of one MagicDec table (``data/magicdec_steps.csv``), one per (context, batch,
    gamma): gamma_t_draft_ms, t_verify_ms, omega (= tau), t_ar_ms, t_sd_ms, speedup as
    printed. table_id: one of :data:`MAGICDEC_TABLES`."""
    _check.choice("table_id", table_id, MAGICDEC_TABLES)
    df = _load("magicdec_steps")
    return df[df["table_id"] == table_id].reset_index(drop=True)


def magicdec_setup(table_id: str, **kwargs) -> Setup:
    """The :class:`Setup` of a MagicDec table: GPU and TP from its hardware, target and draft
    from its columns, the draft's KV budget (512 printed for Table 3; assumed
    :data:`MAGICDEC_SNAPKV_BUDGET` for Tables 2 and 4). ``kwargs`` go to :func:`setup`
    (e.g. efficiencies); the engine profile defaults to ``specdecode-bench`` (the model's
    defaults: MagicDec ran its own backend, not vLLM)."""
    return _magicdec_setup(magicdec_table(table_id), **kwargs)


def _magicdec_setup(rows, **kwargs) -> Setup:
    """:func:`magicdec_setup` from the rows of its table (read once by the caller)."""
    r = rows.iloc[0]
    g, n = _HARDWARE[r["hardware"]]
    budget = r["draft_kv_budget"]
    budget = int(budget) if str(budget).strip() not in ("", "nan") else MAGICDEC_SNAPKV_BUDGET
    kwargs.setdefault("engine", "specdecode-bench")  # MagicDec's own backend, not vLLM
    return setup(g, r["target"], r["draft"], gpus=n, draft_kv_budget=budget, **kwargs)


def table_measurements(rows):
    """Turn rows of a MagicDec table into step-time measurements (the calibration format):
    per row a target step at q = 1 (T_AR), a target step at q = gamma + 1 (T_V) and a draft
    step at q = 1 (gamma T_D / gamma). Columns: role, batch_size, context, query_tokens, ms,
    plus ``row`` (the table row index)."""
    import pandas as pd

    out = []
    for i, r in rows.iterrows():
        b, s, g = int(r["batch_size"]), int(r["context"]), int(r["gamma"])
        out.append(("target", b, s, 1, float(r["t_ar_ms"]), i))
        out.append(("target", b, s, g + 1, float(r["t_verify_ms"]), i))
        out.append(("draft", b, s, 1, float(r["gamma_t_draft_ms"]) / g, i))
    return pd.DataFrame(out, columns=[*MEASURED_COLUMNS, "row"])


def predict_table(st: Setup, rows):
    """Model predictions for MagicDec-style rows, with the printed tau (Omega) as the
    acceptance: columns t_ar_ms, t_verify_ms, gamma_t_draft_ms, speedup (predicted), and
    ``speedup_printed``, ``relative_error`` (predicted / printed - 1)."""
    import pandas as pd

    b = rows["batch_size"].to_numpy(float)
    s = rows["context"].to_numpy(float)
    g = rows["gamma"].to_numpy(float)
    tau = rows["omega"].to_numpy(float)
    tp, tv, td, cost, sp, *_ = _Times(st).parts(b, s, g, tau)
    out = pd.DataFrame({"batch_size": rows["batch_size"], "context": rows["context"],
                        "gamma": rows["gamma"], "tau": tau, "t_ar_ms": tp,
                        "t_verify_ms": tv, "gamma_t_draft_ms": td, "speedup": sp,
                        "speedup_printed": rows["speedup"].to_numpy(float)})
    out["relative_error"] = out["speedup"] / out["speedup_printed"] - 1.0
    return out


def fit_and_predict(table_id: str, *, max_train_batch: int | None = None,
                    max_train_context: int | None = None):
    """Calibrate on some rows of a MagicDec table and predict all of them.

    Rows with batch_size <= ``max_train_batch`` and context <= ``max_train_context`` (either
    limit may be None) are turned into step-time measurements (:func:`table_measurements`) and
    fitted (:func:`calibrate`); every row is then predicted with its printed tau.

    Returns
    -------
    (Calibration, DataFrame): the predictions of :func:`predict_table` plus a boolean column
    ``fitted`` (the row was used in the fit).

    Raises
    ------
    ValueError
        unknown table; no row or every row selected for the fit (nothing to predict).
    """
    rows = magicdec_table(table_id)
    train = np.ones(len(rows), dtype=bool)
    if max_train_batch is not None:
        train &= rows["batch_size"].to_numpy() <= _check.scalar_int(
            "max_train_batch", max_train_batch, lo=1)
    if max_train_context is not None:
        train &= rows["context"].to_numpy() <= _check.scalar_int(
            "max_train_context", max_train_context, lo=0)
    if not train.any() or train.all():
        raise ValueError(f"{table_id}: the limits select {int(train.sum())} of {len(rows)} rows "
                         "for the fit; leave some rows to fit and some to predict")
    cal = calibrate(_magicdec_setup(rows),
                    table_measurements(rows[train])[list(MEASURED_COLUMNS)])
    pred = predict_table(cal.setup, rows)
    pred["fitted"] = train
    return cal, pred


#: EAGLE-3 batch tables in ``data/`` (throughput ratio by batch size, no tau printed).
EAGLE3_BATCH_TABLES = ("eagle3_table3_sglang_batch", "eagle3_table5_vllm_batch")


def batch_table_comparison(name: str, gpu_name, *, context: int = 512, alpha=None, tau=None,
                           acceptance_rates=None, engine: str = "specdecode-bench"):
    """An EAGLE-3 batch table (Table 3, SGLang on 1x H100, chain 3; Table 5, vLLM, chain 2,
    hardware stated inconsistently) beside the model for Llama-3.1-8B on ``gpu_name``.

    The tables print no tau and no context, so both are assumptions the caller states: the
    acceptance (one of alpha, tau, acceptance_rates, applied to both EAGLE and EAGLE-3) and
    ``context`` (default 512 tokens, roughly an MT-bench turn). EAGLE rows use an ``eagle``
    draft, EAGLE-3 rows ``eagle3`` (each costed from its shape). ``engine``: the engine
    profile (default ``specdecode-bench``, the model's defaults; ``sglang`` for Table 3 and
    ``vllm-v0`` for Table 5 are the profiles fitted on them, ``data/engine_profiles.csv``).

    Returns
    -------
    DataFrame: method, batch_size, gamma (the chain length), printed (throughput ratio),
    model (predicted speedup), relative_error.

    Raises
    ------
    ValueError
        unknown table or GPU; acceptance errors as :func:`tokens_per_step`.
    """
    import pandas as pd

    _check.choice("name", name, EAGLE3_BATCH_TABLES)
    df = _load(name)
    out = []
    for method, part in df.groupby("method", sort=False):
        st = setup(gpu_name, "Llama-3.1-8B", "eagle3" if method == "EAGLE-3" else "eagle",
                   engine=engine)
        gamma = int(part["chain_length"].iloc[0])
        sp = speedup(st, part["batch_size"].to_numpy(), context, gamma, alpha=alpha, tau=tau,
                     acceptance_rates=acceptance_rates)
        out.append(pd.DataFrame({"method": method, "batch_size": part["batch_size"].to_numpy(),
                                 "gamma": gamma,
                                 "printed": part["throughput_ratio"].to_numpy(float),
                                 "model": np.atleast_1d(sp)}))
    res = pd.concat(out, ignore_index=True)
    res["relative_error"] = res["model"] / res["printed"] - 1.0
    return res


def moe_plain_steps(source_key: str | None = None):
    """Published plain decode step times of mixture-of-experts targets
    (``data/moe_plain_steps.csv``, one row per source and batch, in the calibration format:
    ``role``, ``batch_size``, ``context``, ``query_tokens``, ``ms``; ``ms`` DERIVED as batch x
    1000 / the printed output tokens/s), with ``source_key``, ``gpu``, ``gpus``, ``model``,
    ``dtype`` and the provenance columns. ``source_key`` None: every source.

    Raises
    ------
    ValueError
        an unknown ``source_key`` (the message lists the known ones).
    """
    df = _load("moe_plain_steps")
    if source_key is None:
        return df
    _check.choice("source_key", source_key, tuple(dict.fromkeys(df["source_key"])))
    return df[df["source_key"] == source_key].reset_index(drop=True)


def _plain_setup(rows, draft: str, engine, routing_skew=None, **kwargs) -> Setup:
    r = rows.iloc[0]
    prof = profile_for(engine, architecture(r["model"]))
    if routing_skew is not None:
        prof = with_routing_skew(prof, routing_skew)
    return setup(r["gpu"], r["model"], draft, gpus=int(r["gpus"]), dtype=r["dtype"],
                 engine=prof, **kwargs)


def plain_step_comparison(engine: str = "vllm", routing_skew=None):
    """Every published plain MoE step (:func:`moe_plain_steps`) beside the model's T_AR at the
    defaults (the engine profile's step parameters for the target's class; ``routing_skew``
    None keeps the profile's, else in the routing-skew range).

    Returns
    -------
    DataFrame: source_key, model, gpus, batch_size, published_ms, model_ms, gap_ms
    (published - model: what the model lacks per forward), and added_published_ms /
    added_model_ms (each step less the same source's step at its smallest batch, ms: the
    batch dependence, which a fixed cost per forward does not move).

    Raises
    ------
    ValueError
        an unknown engine; a skew outside its range.
    """
    import pandas as pd

    out = []
    for key, rows in moe_plain_steps().groupby("source_key", sort=False):
        st = _plain_setup(rows, "eagle3", engine, routing_skew)
        b = rows["batch_size"].to_numpy(int)
        tp = np.atleast_1d(t_plain_ms(st, b, rows["context"].to_numpy(int)))
        pub = rows["ms"].to_numpy(float)
        i = int(np.argmin(b))
        out.append(pd.DataFrame({"source_key": key, "model": rows["model"].to_numpy(),
                                 "gpus": rows["gpus"].to_numpy(int), "batch_size": b,
                                 "published_ms": pub, "model_ms": tp, "gap_ms": pub - tp,
                                 "added_published_ms": pub - pub[i],
                                 "added_model_ms": tp - tp[i]}))
    return pd.concat(out, ignore_index=True)


def routing_skew_from_plain_steps(source_key: str, *, engine: str = "vllm",
                                  grid_step: float = 0.01) -> float:
    """The routing skew whose plain step grows with batch as one source's published plain steps
    grow (:func:`moe_plain_steps`): on a grid of ``grid_step`` over
    :data:`~specnb.serving.moe.ROUTING_SKEW_RANGE`, the skew minimising the squared misfit of
    each step less the source's smallest batch's (published against the model's T_AR with the
    engine profile for the target's class). A fixed cost per forward does not move that
    difference, so the skew is fitted on the batch dependence alone, on no speedup. DERIVED:
    SGLang PR #2643's DeepSeek-V3 steps (batch 1, 8, 32) give 0.27; the Qwen3-30B-A3B sources
    grow faster than any skew allows (0: the model's growth is too small at every skew).

    Returns
    -------
    float in the routing-skew range, a multiple of ``grid_step``.

    Raises
    ------
    ValueError
        an unknown source or engine; ``grid_step`` outside (0, 0.95].
    """
    from .moe import ROUTING_SKEW_RANGE

    lo, hi = ROUTING_SKEW_RANGE
    step = _check.scalar_real("grid_step", grid_step, lo=0.0, hi=hi, lo_open=True)
    rows = moe_plain_steps(source_key)
    b = rows["batch_size"].to_numpy(int)
    s = rows["context"].to_numpy(int)
    pub = rows["ms"].to_numpy(float)
    i = int(np.argmin(b))
    best, best_err = lo, np.inf
    for skew in np.round(np.arange(lo, hi + 1e-9, step), 6):
        tp = np.atleast_1d(t_plain_ms(_plain_setup(rows, "eagle3", engine, float(skew)), b, s))
        err = float(np.sum(((tp - tp[i]) - (pub - pub[i])) ** 2))
        if err < best_err - 1e-12:
            best, best_err = float(skew), err
    return best


def calibrated_on_plain_steps(source_key: str, draft: str, *, engine: str = "vllm",
                              fit=("fixed_ms",), **kwargs):
    """A setup for one source's GPU, GPUs, model and dtype calibrated on its published plain
    steps (:func:`moe_plain_steps`; :func:`~specnb.serving.calibrate`, by default the fixed
    cost per target forward alone: the batch-1 gap, while the batch dependence stays the
    model's). The draft keeps its defaults (no published draft step times). ``kwargs`` go to
    :func:`setup`.

    Returns
    -------
    Calibration (its ``setup`` is the calibrated Setup)

    Raises
    ------
    ValueError
        an unknown source or engine; calibration errors as :func:`calibrate`.
    """
    rows = moe_plain_steps(source_key)
    st = _plain_setup(rows, draft, engine, **kwargs)
    return calibrate(st, rows[list(MEASURED_COLUMNS)], fit=fit)


def gpu_plain_steps(gpu_name: str | None = None):
    """Published plain decode steps (no speculation) of dense targets at batch 1 on GPUs the
    engine profiles were not fitted on (``data/gpu_plain_steps.csv``, issue 25), in the
    calibration format of :func:`moe_plain_steps` (``ms``: the printed inter-token latency or
    a run time over its tokens, see each row's ``note``): the sources of ``data/gpus.csv``'s
    ``layer_fixed_us`` (:func:`layer_fixed_from_plain_steps`). ``gpu_name`` None: every row;
    else that catalogue GPU's rows.

    Raises
    ------
    ValueError
        a GPU without a row (the message lists those with rows).
    """
    df = _load("gpu_plain_steps")
    if gpu_name is None:
        return df
    _check.choice("gpu_name", gpu_name, tuple(dict.fromkeys(df["gpu"])))
    return df[df["gpu"] == gpu_name].reset_index(drop=True)


def layer_fixed_from_plain_steps():
    """The fixed cost per layer per forward each published plain step of
    :func:`gpu_plain_steps` asks of its GPU (DERIVED, issue 25)::

        layer_fixed_us = (published ms - model ms) / target layers x 1000

    model ms: :func:`~specnb.serving.step_time_ms` at the row's batch, context, dtype and
    GPUs with the default efficiencies (fitted on H100 steps) and the GPU's own
    ``layer_fixed_us`` set to 0. ``data/gpus.csv`` holds the mean per GPU rounded to whole
    microseconds (RTX 4090: 129 from vLLM PR #24243's MiniCPM3-4B, prefill included; L4: 16
    from ai.wmx.dev's Qwen2.5-0.5B on vLLM v0.23.0); ``tests/serving/test_reference.py``
    recomputes them. One point per GPU: UNVERIFIED for other models and engines.

    Returns
    -------
    DataFrame: id, gpu, model, n_layers, context, published_ms, model_ms, gap_ms
    (published - model), layer_fixed_us (may be negative: the model above the published
    step).
    """
    import pandas as pd

    out = []
    for r in gpu_plain_steps().to_dict("records"):
        arch = architecture(r["model"])
        g = dataclasses.replace(gpu(r["gpu"]), layer_fixed_us=0.0)
        model = float(step_time_ms(arch, g, int(r["batch_size"]), int(r["context"]),
                                   int(r["query_tokens"]), dtype=r["dtype"],
                                   gpus=int(r["gpus"])))
        pub = float(r["ms"])
        out.append({"id": r["id"], "gpu": r["gpu"], "model": r["model"],
                    "n_layers": arch.n_layers, "context": int(r["context"]),
                    "published_ms": pub, "model_ms": model, "gap_ms": pub - model,
                    "layer_fixed_us": (pub - model) / arch.n_layers * 1e3})
    return pd.DataFrame(out)


#: The calibration fields for this project's own H200 step times (``data/measured/``): the
#: defaults' fields plus ``kv_token_ns``, because their attention kernel runs one block per
#: (sequence, KV head) without splitting the keys (``data/README.md``), so a small batch's KV
#: read is latency-bound (:class:`~specnb.serving.Efficiency`).
MEASURED_KV_FLOOR_FIT = ("bandwidth", "compute", "fixed_ms", "token_us", "overlap",
                         "kv_token_ns")


def measured_context_split(name: str = "h200_llama_steps", *, max_train_context: int = 2048,
                           fit=MEASURED_KV_FLOOR_FIT):
    """Calibrate on this project's own measured step times (``data/measured/<name>.csv``,
    Llama-3.1-8B and Llama-3.2-1B shapes on one H200) at context <= ``max_train_context`` and
    predict the longer contexts: the calibrated short-to-long context figure.

    Returns
    -------
    (Calibration, DataFrame): the calibration and :func:`predict_measurements` of the rows
    not fitted on (``relative_error``).

    Raises
    ------
    ValueError
        an unknown file name; a limit that leaves no row to fit or to predict; calibration
        errors as :func:`calibrate`.
    """
    from .. import data

    names = ("h200_llama_steps", "h200_llama_steps_gqa")
    _check.choice("name", name, names)
    limit = _check.scalar_int("max_train_context", max_train_context, lo=0)
    rows = read_measurements(data.DATA_DIR / "measured" / f"{name}.csv")
    train = rows["context"] <= limit
    if not train.any() or train.all():
        raise ValueError(f"max_train_context {limit} selects {int(train.sum())} of {len(rows)} "
                         "rows for the fit; leave some rows to fit and some to predict")
    st = setup("H200", "Llama-3.1-8B", "Llama-3.2-1B")
    cal = calibrate(st, rows[train], fit=fit)
    return cal, predict_measurements(cal.setup, rows[~train])
