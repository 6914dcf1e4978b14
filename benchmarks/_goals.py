"""How a benchmark reports a speed target: one line that ends in "met" or "MISSED".

``make bench`` collects the MISSED lines after all benchmarks ran and lists them (it exits 0
unless ``BENCH_STRICT=1``: timings depend on the machine and its load, so a miss on a busy
machine is not by itself a regression; rerun on an idle machine, or compare figures from one
run).
"""

MISSED = "MISSED"


def goal_line(label: str, value: float, limit: float, unit: str, *, fmt: str = "8.1f",
              at_most: bool = False) -> str:
    """``label  value unit  (target < limit unit): met`` or ``...: MISSED (x.x times the
    target)``; lower is better (``at_most``: the limit itself still meets it, "<=")."""
    ok = value <= limit if at_most else value < limit
    verdict = "met" if ok else f"{MISSED} ({value / limit:.1f} times the target)"
    return f"{label}  {value:{fmt}} {unit}  (target {'<=' if at_most else '<'} {limit:g} {unit}): {verdict}"
