"""What the published data say, for the advice: EAGLE-3 Table 1 per workload, the batch tables,
Leviathan et al.'s Table 4 at temperature 1 and against Theorem 3.8, SpecDecode-Bench's
tau per workload.

Used by :mod:`specnb.advise.recommend`, :mod:`specnb.advise.article` and notebooks 06 and 07
(:func:`workload_evidence`, :func:`batch_evidence`, :func:`sampling_gamma_evidence`,
:func:`theorem_vs_measured`). Every function reads ``data/`` (sources in each docstring).
What a measured window can support: :func:`thin_window` (:data:`MIN_DRAFTS`, the drafts for a
95% interval of +-5 points on the acceptance rate) and :func:`drafts_unknown_sentence`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

__all__ = ["MEASURE_BATCH", "SAMPLING_GAMMA_CAP", "WORKLOADS", "TASK_NAMES", "table1",
           "workload_evidence", "batch_evidence", "batch_sentence", "sampling_gamma_evidence",
           "theorem_vs_measured", "theorem_sentence", "ACCEPTANCE_DATASETS",
           "workload_acceptance", "EVIDENCE_HALF_WIDTH", "MIN_DRAFTS", "MAX_PLAUSIBLE_K",
           "thin_window", "drafts_unknown_sentence", "GAMMA_TOLERANCE", "vllm_gamma_limit"]

#: Peak batch from which speculation has cost throughput: the smallest batch at which any
#: method in the EAGLE-3 paper's batch tables fell below 1x (Table 3, SGLang: EAGLE 0.93x at
#: batch 24; Table 5, vLLM: EAGLE 0.93x at 32). EAGLE-3 stayed above 1x in both.
MEASURE_BATCH = 24
#: Longest starting draft when sampling (temperature > 0): the upper end of the article's
#: "2-3". Backed by :func:`sampling_gamma_evidence`: on every temperature-1 row of Leviathan et
#: al. Table 4 (alpha 0.53-0.71, c 0.02-0.11), Theorem 3.8 at gamma 3 reaches at least 93% of the
#: best gamma's speedup, with fewer operations (Theorem 3.11) or, where 3 is itself the best, the same.
SAMPLING_GAMMA_CAP = 3

#: How close to Theorem 3.8's best speedup a measured alpha and c must bring gamma: the advice
#: takes the smallest gamma within 1 % of it (the speedup flattens as gamma grows while the
#: operations, Theorem 3.11, keep rising; at c = 0 it rises with every gamma toward
#: 1 / (1 - alpha) and optimal_gamma's search limit is no optimum).
GAMMA_TOLERANCE = 0.01

#: Workload kinds: the EAGLE-3 Table 1 task that stands for each (None: no task measures it).
WORKLOADS = {
    "general": "mean",        # mixed traffic: the mean over the five tasks
    "chat": "mtbench",        # multi-turn chat: MT-bench
    "code": "humaneval",      # writing code (a coding assistant): HumanEval
    "math": "gsm8k",          # step-by-step arithmetic: GSM8K
    "copy-heavy": "cnndm",    # output copies the input (RAG answers, summaries, code edits)
    "creative": None,         # creative writing: no benchmark in the tables, sampled
}
TASK_NAMES = {"mean": "the five-task mean", "mtbench": "MT-bench", "humaneval": "HumanEval",
               "gsm8k": "GSM8K", "cnndm": "CNN/DM", "alpaca": "Alpaca"}



@lru_cache(maxsize=1)
def table1():
    """EAGLE-3 Table 1 (arXiv 2503.01840), the Vicuna 13B rows at temperature 0 (read once)."""
    from .. import data

    df = data.load("eagle3_table1")
    return df[(df["model"] == "Vicuna 13B") & (df["temperature"] == 0)]


def workload_evidence(workload: str) -> dict:
    """What EAGLE-3 Table 1 (Vicuna 13B, temperature 0) measured on the workload's task.

    Returns ``{"task", "eagle3", "pld", "sps", "eagle3_best_task", "pld_best_task"}``: the
    task of :data:`WORKLOADS` (None for ``"creative"``, then the speedups are None), the
    speedups (x) of EAGLE-3, prompt lookup (PLD) and a draft model (SpS) on it, and the task on
    which EAGLE-3 and PLD are fastest. Source: arXiv 2503.01840 Table 1.

    Raises ValueError for a workload not in :data:`WORKLOADS`.
    """
    from .. import _check

    _check.choice("workload", workload, WORKLOADS)
    t1 = table1()
    tasks = t1[t1["task"] != "mean"]

    def best(method):
        rows = tasks[tasks["method"] == method]
        return str(rows.loc[rows["speedup"].idxmax(), "task"])

    task = WORKLOADS[workload]
    pld = tasks[(tasks["method"] == "PLD") & (tasks["task"] != task)]["speedup"]
    out = {"task": task, "eagle3_best_task": best("EAGLE-3"), "pld_best_task": best("PLD"),
           "pld_others": (float(pld.min()), float(pld.max()))}
    for key, method in (("eagle3", "EAGLE-3"), ("pld", "PLD"), ("sps", "SpS")):
        if task is None:
            out[key] = None
        else:
            (v,) = t1[(t1["method"] == method) & (t1["task"] == task)]["speedup"]
            out[key] = float(v)
    return out


@lru_cache(maxsize=1)
def batch_evidence():
    """The EAGLE-3 paper's batch tables, summarised per table and method.

    Returns a DataFrame with one row per (table, method): ``table`` ("SGLang, Table 3" or
    "vLLM, Table 5"), ``method`` ("EAGLE" = EAGLE-1, "EAGLE-3"), ``first_below_1x`` (smallest
    batch with throughput ratio < 1, or None), ``lowest`` (smallest ratio, x) and
    ``lowest_at`` (its batch). Source: arXiv 2503.01840 Tables 3 and 5
    (``data/eagle3_table3_sglang_batch.csv``, ``data/eagle3_table5_vllm_batch.csv``).
    """
    import pandas as pd

    from .. import batch

    rows = []
    for name, label in (("eagle3_table3_sglang_batch", "SGLang, Table 3"),
                        ("eagle3_table5_vllm_batch", "vLLM, Table 5")):
        ratios = batch.ratio_table(name)
        for m in ratios.columns:
            col = ratios[m].dropna()
            first = batch.first_losing_batch(col.index, col.to_numpy())
            rows.append({"table": label, "method": m,
                         "first_below_1x": None if first is None else int(first),
                         "lowest": float(col.min()), "lowest_at": int(col.idxmin())})
    out = pd.DataFrame(rows)
    out["first_below_1x"] = out["first_below_1x"].astype("Int64")
    return out


def batch_sentence(method: str | None) -> tuple[str, bool | None]:
    """(what the batch tables show for ``method``, did it fall below 1x: None = not measured)."""
    import pandas as pd

    ev = batch_evidence()

    def fell(m):
        sub = ev[ev["method"] == m]
        return ", ".join(f"{r.table}: from batch {int(r.first_below_1x)}"
                         for r in sub.itertuples() if pd.notna(r.first_below_1x))

    eagle1 = f"EAGLE-1 fell below 1x ({fell('EAGLE')})"
    e3 = ev[ev["method"] == "EAGLE-3"]
    eagle3 = ("EAGLE-3 never did (lowest " + ", ".join(
        f"{r.lowest:.2f}x at batch {r.lowest_at} on {r.table.split(',')[0]}"
        for r in e3.itertuples()) + ")")
    if method == "eagle3":
        below = bool(e3["first_below_1x"].notna().any())
        return f"{eagle1}; {eagle3}: the margin shrinks but stays above 1x", below
    return (f"{eagle1}; {eagle3}; no batch table measures {method or 'this method'}", None)


@lru_cache(maxsize=1)
@lru_cache(maxsize=1)
def vllm_gamma_limit() -> tuple[int, str]:
    """The longest ``num_speculative_tokens`` a bundled vLLM measurement ran
    (``data/engine_measurements.csv``, rows whose engine is vLLM) and the sources of the rows
    at it: ``(gamma, "source; source")``. :func:`specnb.advise.recommend` caps a measured-alpha
    gamma there: nothing bundled shows vLLM gaining beyond it, and Theorem 3.8's i.i.d. alpha
    overstates long drafts (acceptance falls with position: Leviathan Table 4, notebook 04)."""
    from .. import data

    df = data.load("engine_measurements")
    v = df[df["engine"].str.startswith("vLLM")]
    g = int(v["gamma"].max())
    srcs = sorted(set(v[v["gamma"] == g]["source"]))
    return g, "; ".join(srcs)


def sampling_gamma_evidence():
    """Theorem 3.8 and 3.11 at the temperature-1 rows of Leviathan et al. Table 4.

    One row per measured (task, draft) at temperature 1: ``alpha``, ``c``, the best gamma
    (:func:`specnb.theory.optimal_gamma`) and its speedup, the speedup and operations at gamma
    :data:`SAMPLING_GAMMA_CAP`, ``share_of_best`` (speedup at the cap / best speedup) and the
    operations at the best gamma. Operations take c_hat = c, as the article does. Source:
    arXiv 2211.17192 v2 Table 4 (``data/leviathan_table4_theory_vs_measured.csv``).
    """
    import pandas as pd

    from .. import data
    from ..theory import operations_factor, optimal_gamma, walltime_speedup

    df = data.load("leviathan_table4_theory_vs_measured")
    rows = []
    for r in df[df["temperature"] == 1].itertuples():
        g, best = optimal_gamma(r.alpha, r.c)
        at_cap = walltime_speedup(r.alpha, SAMPLING_GAMMA_CAP, r.c)
        rows.append({"task": r.task, "draft": r.draft, "alpha": r.alpha, "c": r.c,
                     "best gamma": g, "best speedup": best,
                     "operations at best": operations_factor(r.alpha, g, r.c),
                     f"speedup at {SAMPLING_GAMMA_CAP}": at_cap,
                     f"operations at {SAMPLING_GAMMA_CAP}":
                         operations_factor(r.alpha, SAMPLING_GAMMA_CAP, r.c),
                     "share_of_best": at_cap / best})
    return pd.DataFrame(rows)


@lru_cache(maxsize=1)
def theorem_vs_measured():
    """Measured speedup over Theorem 3.8's expected speedup, per row of Leviathan et al. Table 4.

    Returns a DataFrame with task, draft, temperature, gamma, ``expected`` (the paper's
    Theorem 3.8 value), ``measured`` and ``ratio`` (measured / expected). Source: arXiv
    2211.17192 v2 Table 4 (``data/leviathan_table4_theory_vs_measured.csv``).
    """
    from .. import data

    df = data.load("leviathan_table4_theory_vs_measured")
    out = df[["task", "draft", "temperature", "gamma"]].copy()
    out["expected"] = df["speedup_expected"]
    out["measured"] = df["speedup_measured"]
    out["ratio"] = df["speedup_measured"] / df["speedup_expected"]
    return out


def theorem_sentence() -> str:
    """What Leviathan Table 4 shows about Theorem 3.8 against measurement, in one clause."""
    t = theorem_vs_measured()
    small = t[t["draft"] == "T5-small"]["ratio"]
    return (f"measured speedups land on either side of Theorem 3.8 (Leviathan Table 4: "
            f"{t['ratio'].min():.2f}x to {t['ratio'].max():.2f}x of it; the T5-small draft "
            f"{small.min():.2f}x to {small.max():.2f}x), so measure")



#: Workload kind -> the SpecDecode-Bench dataset whose acceptance stands for it
#: (``data/specdecode_bench_acceptance.csv``; Llama-3.1-8B target); ``"mean"``: the mean over
#: the four datasets; None: no dataset measures it.
ACCEPTANCE_DATASETS = {
    "general": "mean",             # mixed traffic: the four datasets weighted equally
    "chat": "ShareGPT",            # real user conversations
    "code": "InstructCoder",       # instruction-driven code edits: the nearest to code
    "math": "GSM8K",
    "copy-heavy": "CNN/DM",        # summaries copy the input
    "creative": None,
}
#: vLLM method -> the method of ``data/specdecode_bench_acceptance.csv`` measured for it
#: (whether ``acc_eagle`` is EAGLE-1 or EAGLE-3 is not stated by the source).
_ACCEPTANCE_METHODS = {"eagle3": "acc_eagle", "ngram": "acc_ngram"}
#: Draft lengths k whose path-followed tau(k) ``data/specdecode_bench_acceptance.csv`` gives
#: (columns ``tau_k1``, ``tau_k2``, ``tau_k3``, ``tau_k5``).
BENCH_TAU_K = (1, 2, 3, 5)


@lru_cache(maxsize=1)
def _acceptance_table():
    """``data/specdecode_bench_acceptance.csv``, read once (callers filter, never modify)."""
    from .. import data

    return data.load("specdecode_bench_acceptance")


def workload_acceptance(method: str, workload: str, gamma: int):
    """The tau a vLLM method reaches at draft length ``gamma`` on the workload's dataset.

    Returns ``(tau, source)``: tau(gamma), the mean tokens per verification step when each
    request's real path is followed with chains of gamma drafts (the ``tau_k*`` columns; what
    a server counts, vLLM's 1 + accepted / drafts), and a clause naming the data, dataset
    and source; or None when no bundled table measures the method (``mtp``, ``draft_model``)
    or the workload (``creative``). The data give k = 1, 2, 3, 5 (:data:`BENCH_TAU_K`);
    tau(4) is interpolated linearly between tau(3) and tau(5), and the clause says so.
    ``"general"``: the mean over the four datasets. Not 1 + the sum of the ``p_ge_*`` shares:
    those count every token position, also those inside an accepted run that no step
    starts at, and are higher (CNN/DM ``acc_ngram`` at k 3: 1.714 against 1.334). Source:
    SpecDecode-Bench's released data, Llama-3.1-8B target (arXiv 2601.11580;
    ``data/specdecode_bench_acceptance.csv``, derived in ``shared/reference/batch-model.md``
    section 4.2); whether its EAGLE is EAGLE-1 or EAGLE-3 is not stated there.

    Raises
    ------
    ValueError
        a workload not in :data:`WORKLOADS`; gamma not an integer in [1, 5] (gamma > 5: the
        data stop at k 5).
    """
    from .. import _check

    _check.choice("workload", workload, WORKLOADS)
    gamma = _check.scalar_int("gamma", gamma, lo=1)
    if gamma > BENCH_TAU_K[-1]:
        raise _check.ParamValueError(
            f"gamma {gamma}: SpecDecode-Bench's released data give tau(k) at k = "
            f"{', '.join(map(str, BENCH_TAU_K))} only (4 interpolated); pass the measured "
            "alpha", "gamma")
    dataset = ACCEPTANCE_DATASETS[workload]
    key = _ACCEPTANCE_METHODS.get(method)
    if dataset is None or key is None:
        return None
    df = _acceptance_table()
    df = df[df["method"] == key]
    if dataset != "mean":
        df = df[df["dataset"] == dataset]
    where = f"the mean over {', '.join(df['dataset'])}" if dataset == "mean" else dataset
    tau_at = {k: float(df[f"tau_k{k}"].mean()) for k in BENCH_TAU_K}
    if gamma in tau_at:
        tau, how = tau_at[gamma], f"tau({gamma})"
    else:  # between two measured k: linear in k
        lo = max(k for k in BENCH_TAU_K if k < gamma)
        up = min(k for k in BENCH_TAU_K if k > gamma)
        tau = tau_at[lo] + (tau_at[up] - tau_at[lo]) * (gamma - lo) / (up - lo)
        how = (f"tau({gamma}) interpolated linearly between tau({lo}) {tau_at[lo]:.3f} and "
               f"tau({up}) {tau_at[up]:.3f}")
    return tau, (f"{how} of {key} on {where}, following each request's path as a server "
                 "counts it; SpecDecode-Bench's released data for a Llama-3.1-8B target, "
                 "arXiv 2601.11580" + ("; whether its EAGLE is EAGLE-1 or EAGLE-3 is not "
                                       "stated" if key == "acc_eagle" else ""))


# ----------------------------------------------------------------------------- a window
#: Half-width of the 95% interval on the acceptance rate below which a window supports a
#: verdict: 5 percentage points (our threshold; the same 5% ``specnb bench`` treats as noise).
EVIDENCE_HALF_WIDTH = 0.05
#: Drafts a window needs before its acceptance rate supports a verdict: the number of
#: independent trials at which the 95% interval at p = 0.5 (the widest) has half-width
#: :data:`EVIDENCE_HALF_WIDTH`: ceil(1.96^2 x 0.25 / 0.05^2) = 385. Drafts, not draft tokens,
#: are counted: acceptance inside one draft stops at the first rejection, so its tokens are
#: not independent trials.
MIN_DRAFTS = math.ceil(NormalDist().inv_cdf(0.975) ** 2 * 0.25 / EVIDENCE_HALF_WIDTH ** 2)
#: The largest ``num_speculative_tokens`` (k) assumed plausible when an input prints draft
#: tokens but no draft count (vLLM v0.8 lines ``Drafted: N tokens``) and no ``-k`` is given:
#: the N draft tokens are N / k drafts, at least N / 32. 32 is the largest k in vLLM's own
#: docs (suffix decoding, ``{"method": "suffix", "num_speculative_tokens": 32}``, suffix.md @
#: 05084858; ``../shared/reference/vllm.md``); the field reports here use 1-8. Such a window
#: counts as thin unless even N / 32 reaches :data:`MIN_DRAFTS`.
MAX_PLAUSIBLE_K = 32


def thin_window(stats) -> bool:
    """True when the window of ``stats`` (an :class:`specnb.vllm.AcceptanceStats`) is too small
    for a verdict: fewer than :data:`MIN_DRAFTS` drafts; when the drafts are unknown (draft
    tokens only, no ``-k``), unless even the fewest drafts the tokens allow, draft tokens /
    :data:`MAX_PLAUSIBLE_K`, reach :data:`MIN_DRAFTS`; or no counts."""
    c = stats.counts
    if c.drafts == c.drafts:
        return c.drafts < MIN_DRAFTS
    if c.draft_tokens == c.draft_tokens:
        return c.draft_tokens / MAX_PLAUSIBLE_K < MIN_DRAFTS
    return True


def drafts_unknown_sentence(draft_tokens: float) -> str:
    """What ``draft_tokens`` draft tokens say about the number of drafts when the input prints
    no draft count and no ``num_speculative_tokens`` (k) is given: N tokens are N / k drafts,
    shown for k = 1, 3, 5, 8 and :data:`MAX_PLAUSIBLE_K`. ``draft_tokens`` >= 0."""
    n = float(draft_tokens)
    ks = sorted({1, 3, 5, 8, MAX_PLAUSIBLE_K})
    shown = ", ".join(f"{n / k:,.0f} at k = {k}" for k in ks)
    return (f"{n:,.0f} draft tokens and no draft count in this input: the count needs "
            f"num_speculative_tokens k (drafts = draft tokens / k): {shown} (k assumed "
            f"1-{MAX_PLAUSIBLE_K})")
