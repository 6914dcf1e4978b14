"""Method families and views of EAGLE-3 Table 1 (arXiv 2503.01840 v3).

Families follow the EAGLE-3 paper and the article: training-free methods need no extra
training (SpS uses an off-the-shelf small model, Vicuna-68M); hidden-state methods train heads
on the target's hidden states. "Lenient" methods relax acceptance under sampling and have no
temperature-1 rows in Table 1 (its caption: they are not lossless there).
"""

from __future__ import annotations

from . import _check

__all__ = ["TRAINING_FREE", "HIDDEN_STATE_LADDER", "TASKS", "LATER_REVISION", "SPECBENCH_NAMES",
           "table1", "speedup_band", "is_increasing", "methods_without_temperature", "task_range",
           "later_revision_methods", "specbench_cross_check"]

TRAINING_FREE = ("SpS", "PLD", "Lookahead")
HIDDEN_STATE_LADDER = ("Medusa", "Hydra", "EAGLE", "EAGLE-2", "EAGLE-3")
TASKS = ("mtbench", "humaneval", "gsm8k", "alpaca", "cnndm")
#: Appended to a method's label where its row exists only in the later revision of EAGLE-3
#: (the HASS rows; not in arXiv v3).
LATER_REVISION = " (later revision only)"
#: Spec-Bench's method names -> EAGLE-3 Table 1's.
SPECBENCH_NAMES = {"EAGLE3": "EAGLE-3", "EAGLE2": "EAGLE-2", "EAGLE": "EAGLE", "Hydra": "Hydra",
                   "Medusa": "Medusa", "PLD": "PLD", "SpS": "SpS", "Lookahead": "Lookahead"}


def table1(model: str = "Vicuna 13B", temperature: int = 0, value: str = "speedup",
           label_revisions: bool = False):
    """EAGLE-3 Table 1 as a method x task DataFrame (tasks then ``mean``), in paper order.

    Parameters
    ----------
    model : str, a model of Table 1 (e.g. "Vicuna 13B", "LLaMA-Instruct 3.1 8B").
    temperature : 0 or 1.
    value : "speedup" (x) or "tau" (tokens per verification, bonus included).
    label_revisions : bool
        If True, methods whose rows exist only in the later revision of the paper (HASS) get
        :data:`LATER_REVISION` appended to their label, for display.

    Raises
    ------
    ValueError
        unknown model, temperature or value; the message lists the valid ones.
    """
    from . import data

    df = data.load("eagle3_table1")
    _check.choice("value", value, ["speedup", "tau"])
    _check.choice("temperature", temperature, sorted(set(df["temperature"])))
    sub = df[df["temperature"] == temperature]
    _check.choice("model", model, list(dict.fromkeys(sub["model"])))
    sub = sub[sub["model"] == model]
    order = list(dict.fromkeys(sub["method"]))
    wide = sub.pivot(index="method", columns="task", values=value).loc[order, [*TASKS, "mean"]]
    if label_revisions:
        later = set(_later_revision(sub))
        wide.index = [m + LATER_REVISION if m in later else m for m in wide.index]
        wide.index.name = "method"
    return wide


def later_revision_methods() -> list[str]:
    """Methods of EAGLE-3 Table 1 whose rows exist only in the later revision (not arXiv v3)."""
    from . import data

    return _later_revision(data.load("eagle3_table1"))


def _later_revision(table) -> list[str]:
    """Methods of (a part of) the ``eagle3_table1`` data whose rows are in the later revision
    only, in table order."""
    return list(dict.fromkeys(
        table.loc[table["arxiv_version"].str.startswith("later revision only"), "method"]))


def specbench_cross_check(model: str = "Vicuna 13B", specbench_model: str = "Vicuna-13B-v1.3"):
    """EAGLE-3 Table 1's mean speedup (temperature 0) beside Spec-Bench's independent one.

    Spec-Bench (hemingkx/Spec-Bench ``Leaderboard.md`` @ fd2c1cd7, ``data/specbench_a100``):
    one A100 80GB, greedy, FP16, batch 1, six tasks (multi-turn conversation, translation,
    summarization, QA, math, RAG), mean of 3 runs. Table 1 uses five other tasks and other
    hardware, so the two differ by harness, tasks and GPU, not by method alone.

    Returns
    -------
    DataFrame indexed by Table 1's method names (those in both), columns ``Table 1 mean (x)``,
    ``Spec-Bench overall (x)`` and ``Spec-Bench / Table 1`` (a ratio), in Table 1's order.

    Raises
    ------
    ValueError
        ``model`` not in Table 1 or ``specbench_model`` not in the Spec-Bench data.
    """
    import pandas as pd

    from . import data

    t1 = table1(model, 0, "speedup")["mean"]
    sb = data.load("specbench_a100")
    _check.choice("specbench_model", specbench_model, list(dict.fromkeys(sb["model"])))
    sb = sb[(sb["model"] == specbench_model) & (sb["task"] == "overall")]
    sb = sb[sb["method"].isin(list(SPECBENCH_NAMES))]
    sb = pd.Series(sb["speedup"].to_numpy(), index=sb["method"].map(SPECBENCH_NAMES))
    both = [m for m in t1.index if m in sb.index]
    out = pd.DataFrame({"Table 1 mean (x)": t1[both], "Spec-Bench overall (x)": sb[both]})
    out["Spec-Bench / Table 1"] = out["Spec-Bench overall (x)"] / out["Table 1 mean (x)"]
    out.index.name = "method"
    return out


def _methods(table, methods) -> list:
    if isinstance(methods, str):
        raise TypeError(f"methods must be a list of method names, got the string {methods!r} "
                        f"(write [{methods!r}])")
    methods = list(methods)
    missing = [m for m in methods if m not in table.index]
    if missing:
        raise ValueError(f"methods {missing} are not in the table; it has {list(table.index)}")
    return methods


def speedup_band(table, methods) -> tuple[float, float]:
    """(min, max) of the ``mean`` column over ``methods`` of a :func:`table1` view.

    Raises
    ------
    ValueError
        a method not in the table.
    TypeError
        ``methods`` is a single string instead of a list.
    """
    methods = _methods(table, methods)
    col = table.loc[methods, "mean"]
    return float(col.min()), float(col.max())


def task_range(table, method: str, exclude=()) -> tuple[float, float]:
    """(min, max) over the five tasks of ``method``, leaving out the tasks in ``exclude``."""
    _check.choice("method", method, list(table.index))
    tasks = [t for t in TASKS if t not in exclude]
    row = table.loc[method, tasks]
    return float(row.min()), float(row.max())


def is_increasing(table, methods=HIDDEN_STATE_LADDER, column: str = "mean") -> bool:
    """True when ``column`` strictly rises along ``methods`` (the article's hidden-state ladder).

    Raises
    ------
    ValueError
        a method or ``column`` not in the table.
    TypeError
        ``methods`` is a single string instead of a list.
    """
    methods = _methods(table, methods)
    _check.choice("column", column, list(table.columns))
    vals = table.loc[methods, column].tolist()
    return all(a < b for a, b in zip(vals, vals[1:]))


def methods_without_temperature(temperature: int = 1, model: str = "Vicuna 13B") -> list[str]:
    """Methods with a temperature-0 row but no row at ``temperature`` for ``model``."""
    from . import data

    df = data.load("eagle3_table1")
    df = df[df["model"] == model]
    t0 = list(dict.fromkeys(df.loc[df["temperature"] == 0, "method"]))
    tx = set(df.loc[df["temperature"] == temperature, "method"])
    return [m for m in t0 if m not in tx]
