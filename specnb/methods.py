"""Method families and views of EAGLE-3 Table 1 (arXiv 2503.01840 v3).

Families follow the EAGLE-3 paper and the article: training-free methods need no extra
training (SpS uses an off-the-shelf small model, Vicuna-68M); hidden-state methods train heads
on the target's hidden states. "Lenient" methods relax acceptance under sampling and have no
temperature-1 rows in Table 1 (its caption: they are not lossless there).
"""

from __future__ import annotations

from . import _check

__all__ = ["TRAINING_FREE", "HIDDEN_STATE_LADDER", "TASKS", "table1", "speedup_band",
           "is_increasing", "methods_without_temperature", "task_range"]

TRAINING_FREE = ("SpS", "PLD", "Lookahead")
HIDDEN_STATE_LADDER = ("Medusa", "Hydra", "EAGLE", "EAGLE-2", "EAGLE-3")
TASKS = ("mtbench", "humaneval", "gsm8k", "alpaca", "cnndm")


def table1(model: str = "Vicuna 13B", temperature: int = 0, value: str = "speedup"):
    """EAGLE-3 Table 1 as a method x task DataFrame (tasks then ``mean``), in paper order.

    Parameters
    ----------
    model : str, a model of Table 1 (e.g. "Vicuna 13B", "LLaMA-Instruct 3.1 8B").
    temperature : 0 or 1.
    value : "speedup" (x) or "tau" (tokens per verification, bonus included).

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
    wide = sub.pivot(index="method", columns="task", values=value)
    return wide.loc[order, [*TASKS, "mean"]]


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
