"""Speculation on against off: the verdict on two ``vllm bench serve --save-result`` results.

The latency verdict rests on TPOT, not ITL: ITL is measured per streamed chunk, and with
speculation one chunk often carries several tokens, so ITL can rise while TPOT falls (PR
#48892: median TPOT -26%, median ITL +612%). The files are read by :mod:`specnb.vllm.bench`.

Note codes: reasons ``tpot-change``, ``tpot-missing``, ``throughput-change``,
``throughput-missing``; comparability ``same-file``, ``identical-results``, ``runs-differ``,
``output-tokens-differ``, ``single-request``; cautions ``tail-tpot-worse``, ``median-ttft-worse``, ``tail-ttft-worse``,
``itl-rose``, ``failed-requests``, ``no-spec-section``, ``off-has-spec-counters`` and the
:func:`~specnb.advise.watch.acceptance_length_advice` codes (``acceptance-length-shrink``,
``gamma1-off``, ``gamma1-grow``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import _check
from ..vllm import COMPARABLE, SPEC_KEYS, bench_rows, bench_value, read_bench
from ..notes import Note
from .watch import acceptance_length_advice

__all__ = ["GOALS", "compare_bench", "comparability", "BenchComparison"]

GOALS = ("latency", "throughput")


@dataclass(frozen=True)
class BenchComparison:
    """The result of :func:`compare_bench`.

    Attributes
    ----------
    table : pandas.DataFrame, one row per metric: metric, stat, unit, off, on, on/off,
        change (%), better ("on", "off" or "same" within the tolerance; "" if missing).
    acceptance : dict of the ON run's spec-decode section (empty if absent).
    goal : "latency" or "throughput".
    verdict : "turn it on", "keep it off", "no clear difference" or "cannot tell".
    reasons : why, with the numbers (:class:`~specnb.notes.Note` s; codes in the
        module docstring).
    cautions : what else to look at (tail latency, TTFT, ITL, comparability, failures); the
        comparability flags come first (Notes).
    comparability : why the two runs are not like for like (model, prompts, dataset, request
        rate, concurrency, completed requests, output tokens, a single request); printed above
        the verdict, which stands but must be read with them (Notes).
    """

    table: object
    acceptance: dict
    goal: str
    verdict: str
    reasons: tuple = field(default=())
    cautions: tuple = field(default=())
    comparability: tuple = field(default=())

    def __str__(self) -> str:
        import pandas as pd

        with pd.option_context("display.width", 120, "display.max_columns", 20):
            lines = [self.table.to_string(index=False, float_format=lambda x: f"{x:.2f}")]
        if self.acceptance:
            a = self.acceptance
            lines.append("")
            if "spec_decode_acceptance_rate" in a:
                lines.append(f"acceptance rate (ON)    {a['spec_decode_acceptance_rate']:.2f} %")
            if "spec_decode_acceptance_length" in a:
                lines.append(f"acceptance length (ON)  {a['spec_decode_acceptance_length']:.2f}")
            rates = a.get("spec_decode_per_position_acceptance_rates")
            if isinstance(rates, list) and rates:
                lines.append("per-position acceptance (ON) " + ", ".join(
                    f"{i}: {100 * float(r):.1f} %" for i, r in enumerate(rates)))
        lines.append("")
        if self.comparability:
            lines.append("not a like-for-like comparison; read the verdict with this in mind:")
            lines += [f"  ! {c}" for c in self.comparability]
        lines.append(f"goal: {self.goal} -> {self.verdict}")
        lines += [f"  because {r}" for r in self.reasons]
        lines += [f"  caution: {c}" for c in self.cautions if c not in self.comparability]
        return "\n".join(lines)


def comparability(on, off, tolerance: float = 0.05) -> list[Note]:
    """Why two ``vllm bench serve`` results are not like for like, as coded notes
    (``same-file``, ``identical-results``, ``runs-differ``, ``output-tokens-differ``,
    ``single-request``).

    Flags (ours, stated): the same file given twice, or two results with identical contents;
    a different value of any :data:`COMPARABLE` key present in both
    (model, prompts, concurrency, request rate, burstiness, endpoint, dataset, completed
    requests); output tokens per request (``total_output_tokens / completed``) that differ by
    more than ``tolerance`` (TPOT and throughput then average over different outputs); a run
    of a single request (``completed`` or ``num_prompts`` 1: one output, no batching, no spread
    to put a percentile on -- not a benchmark).

    Parameters
    ----------
    on, off : dict (as :func:`read_bench` returns) or path
    tolerance : float in [0, 1)
    """
    on_d, off_d = read_bench(on), read_bench(off)
    tol = float(_check.real("tolerance", tolerance, lo=0.0, hi=1.0, hi_open=True))
    return _comparability(on_d, off_d, tol, _same_file(on, off) and str(on))


def _comparability(on_d, off_d, tol, same_file):
    """:func:`comparability` of read results; ``same_file`` is the path when ON and OFF are
    one file, else False."""
    out = []
    if same_file:
        out.append(Note("same-file", f"ON and OFF are the same file ({same_file}): the run is "
                        "compared with itself, so any verdict says nothing about speculation; "
                        "give the result with speculation and the one without"))
    elif on_d == off_d:
        out.append(Note("identical-results", "the ON and OFF results are identical (the same "
                        "run saved twice?): any verdict says nothing about speculation; give "
                        "the result with speculation and the one without"))
    for k in COMPARABLE:
        if k in on_d and k in off_d and on_d[k] != off_d[k]:
            out.append(Note("runs-differ", f"the runs differ in {k} ({off_d[k]!r} off vs "
                            f"{on_d[k]!r} on): not a like-for-like comparison"))
    done = [bench_value(d, "completed") for d in (off_d, on_d)]
    inputs = [bench_value(d, "total_input_tokens") for d in (off_d, on_d)]
    if not any(math.isnan(t) for t in inputs) and all(n == n and n > 0 for n in done):
        per_in = [t / n for t, n in zip(inputs, done)]
        if per_in[0] > 0 and abs(per_in[1] / per_in[0] - 1) > tol:
            # vLLM 0.33 writes no dataset keys; the input lengths show a different prompt set
            out.append(Note(
                "input-lengths-differ",
                f"the runs sent prompts of different lengths: {per_in[0]:,.1f} off vs "
                f"{per_in[1]:,.1f} on input tokens per request (total_input_tokens / "
                f"completed, {100 * (per_in[1] / per_in[0] - 1):+.1f}%): different prompts, "
                "so TTFT and throughput are not comparable (use the same --dataset-name, "
                "input length and --seed)"))
    tokens = [bench_value(d, "total_output_tokens") for d in (off_d, on_d)]
    if not any(math.isnan(t) for t in tokens):
        per = [t / n if n == n and n > 0 else t for t, n in zip(tokens, done)]
        unit = "per request" if all(n == n and n > 0 for n in done) else "in total"
        if per[0] > 0 and abs(per[1] / per[0] - 1) > tol:
            out.append(Note(
                "output-tokens-differ",
                f"the runs produced different numbers of output tokens: {tokens[0]:,.0f} off vs "
                f"{tokens[1]:,.0f} on ({per[0]:,.1f} vs {per[1]:,.1f} {unit}, "
                f"{100 * (per[1] / per[0] - 1):+.1f}%, beyond the {100 * tol:.0f}% "
                "tolerance): TPOT and throughput average over different outputs (set "
                "--ignore-eos or a fixed output length so both runs decode the same "
                "number of tokens)"))
    single = [name for name, d in (("OFF", off_d), ("ON", on_d))
              if bench_value(d, "completed") == 1 or bench_value(d, "num_prompts") == 1]
    if single:
        out.append(Note(
            "single-request",
            f"the {' and '.join(single)} run{'s' * (len(single) > 1)} measured a single "
            "request: one output, no batching and no spread to put a percentile on; one "
            "request is not a benchmark (run vllm bench serve with many prompts, at the "
            "concurrency you serve)"))
    return out


def _same_file(a, b) -> bool:
    """True when the paths ``a`` and ``b`` name one file (dicts never do)."""
    import os

    if not isinstance(a, (str, os.PathLike)) or not isinstance(b, (str, os.PathLike)):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _change(off, on):
    if math.isnan(off) or math.isnan(on) or off == 0:
        return math.nan, math.nan
    return on / off, 100.0 * (on / off - 1.0)


def _gamma(acceptance: dict):
    """num_speculative_tokens implied by a run's spec-decode section, or None."""
    tokens, drafts = (acceptance.get("spec_decode_draft_tokens"),
                      acceptance.get("spec_decode_num_drafts"))
    if isinstance(tokens, (int, float)) and isinstance(drafts, (int, float)) and drafts > 0:
        ratio = tokens / drafts
        if ratio >= 1 and math.isclose(ratio, round(ratio)):
            return int(round(ratio))
    rates = acceptance.get("spec_decode_per_position_acceptance_rates")
    return len(rates) if isinstance(rates, list) and rates else None


def _rate(acceptance: dict):
    """The run's acceptance rate as a fraction, or None."""
    rate = acceptance.get("spec_decode_acceptance_rate")
    return rate / 100 if isinstance(rate, (int, float)) else None


def compare_bench(on, off, goal: str = "latency", tolerance: float = 0.05) -> BenchComparison:
    """Put a run with speculation (``on``) beside one without (``off``) and decide.

    Verdict rules (ours, stated so they can be argued with):

    * latency: median TPOT (mean if no median) on / off; below ``1 - tolerance`` -> "turn it
      on", above ``1 + tolerance`` -> "keep it off", else "no clear difference". TPOT, not ITL:
      ITL is per streamed chunk and rises when a chunk carries several accepted tokens.
    * throughput: output throughput on / off; above ``1 + tolerance`` -> "turn it on", below
      ``1 - tolerance`` -> "keep it off", else "no clear difference". Cost per token changes
      by 1 / ratio (:func:`specnb.cost.relative_cost`).

    Cautions flag runs that are not like for like (:func:`comparability`: model, prompts,
    dataset, concurrency, request rate, completed requests, output tokens per request, a
    single request; also in ``comparability`` and printed above the verdict, which stands), a
    p99 TPOT or median TTFT that got worse by more than the tolerance, ITL up while TPOT is
    down, failed requests, an ON run without a spec-decode section, and an OFF run with one.

    Parameters
    ----------
    on, off : path or dict
        ``vllm bench serve --save-result`` results with and without speculation.
    goal : "latency" or "throughput"
    tolerance : float in [0, 1)
        Relative change treated as noise (0.05 = 5%).

    Returns
    -------
    BenchComparison

    Raises
    ------
    ValueError
        unknown goal; tolerance outside [0, 1); files as in :func:`read_bench`.
    """
    _check.choice("goal", goal, GOALS)
    tol = float(_check.real("tolerance", tolerance, lo=0.0, hi=1.0, hi_open=True))
    on_d, off_d = read_bench(on), read_bench(off)
    table = _comparison_table(on_d, off_d, tol)
    verdict, reasons = _verdict(table, goal, tol)
    flags, cautions, acceptance = _cautions(table, on_d, off_d, tol,
                                         _same_file(on, off) and str(on))
    return BenchComparison(table, acceptance, goal, verdict, tuple(reasons), tuple(cautions),
                           tuple(flags))


def _comparison_table(on_d, off_d, tol):
    """One row per metric and statistic: off, on, on/off, change and which run is better."""
    import pandas as pd

    records = []
    for metric, stat, unit, v_off, v_on, better in bench_rows(on_d, off_d):
        ratio, change = _change(v_off, v_on)
        if math.isnan(ratio):
            who = ""
        elif abs(ratio - 1) <= tol:
            who = "same"
        elif (ratio < 1) == (better == "lower"):
            who = "on"
        else:
            who = "off"
        records.append({"metric": metric, "stat": stat, "unit": unit, "off": v_off, "on": v_on,
                        "on/off": ratio, "change (%)": change, "better": who})
    table = pd.DataFrame(records, columns=["metric", "stat", "unit", "off", "on", "on/off",
                                           "change (%)", "better"])
    return table


def _row(table, metric, stat):
    hit = table[(table["metric"] == metric) & (table["stat"] == stat)]
    if hit.empty or math.isnan(hit.iloc[0]["on/off"]):
        return None
    return hit.iloc[0]


def _verdict(table, goal, tol):
    """(verdict, reasons) by the goal's rule: median TPOT for latency, output throughput for
    throughput."""
    from ..cost import relative_cost

    reasons = []
    verdict = "cannot tell"
    if goal == "latency":
        r = _row(table, "TPOT", "median")
        r = r if r is not None else _row(table, "TPOT", "mean")
        if r is None:
            reasons.append(Note("tpot-missing",
                                "no TPOT (median or mean) in both runs, or the OFF run's is 0"))
        else:
            verdict = {"on": "turn it on", "off": "keep it off",
                       "same": "no clear difference"}[r["better"]]
            reasons.append(Note("tpot-change", f"{r['stat']} TPOT {r['off']:.2f} -> {r['on']:.2f} "
                                f"ms ({r['change (%)']:+.1f}%, tolerance {100 * tol:.0f}%)"))
    else:
        r = _row(table, "output throughput", "")
        if r is None:
            reasons.append(Note("throughput-missing", "output_throughput is missing from one of "
                                "the runs, or 0 in the OFF run"))
        else:
            verdict = {"on": "turn it on", "off": "keep it off",
                       "same": "no clear difference"}[r["better"]]
            reasons.append(Note("throughput-change", f"output throughput {r['off']:.2f} -> "
                                f"{r['on']:.2f} tok/s ({r['change (%)']:+.1f}%, tolerance "
                                f"{100 * tol:.0f}%); cost per token "
                                f"x{relative_cost(r['on/off']):.3f}"))
    return verdict, reasons


def _cautions(table, on_d, off_d, tol, same_file):
    """(comparability flags, every caution, the ON run's spec-decode section); ``same_file``:
    the path when ON and OFF name the same file, else False."""
    cautions = []
    for metric, stat, what in (("TPOT", "p99", "tail TPOT"), ("TTFT", "median", "median TTFT"),
                               ("TTFT", "p99", "tail TTFT")):
        x = _row(table, metric, stat)
        if x is not None and x["better"] == "off":
            cautions.append(Note(f"{what.replace(' ', '-').lower()}-worse",
                                 f"{what} got worse: {x['off']:.2f} -> {x['on']:.2f} ms "
                                 f"({x['change (%)']:+.1f}%)"))
    itl = _row(table, "ITL", "median")
    itl = itl if itl is not None else _row(table, "ITL", "mean")
    tpot = _row(table, "TPOT", "median")
    if itl is not None and tpot is not None and itl["better"] == "off" and \
            tpot["better"] != "off":
        cautions.append(Note("itl-rose", f"ITL rose {itl['change (%)']:+.1f}% while TPOT did "
                             "not: ITL is per streamed chunk and a chunk now carries several "
                             "tokens; judge by TPOT"))
    flags = _comparability(on_d, off_d, tol, same_file)
    cautions = flags + cautions
    for name, d in (("ON", on_d), ("OFF", off_d)):
        if bench_value(d, "failed") > 0:
            cautions.append(Note("failed-requests", f"the {name} run had "
                                 f"{int(bench_value(d, 'failed'))} failed requests"))
    acceptance = {k: on_d[k] for k in SPEC_KEYS if k in on_d}
    if not acceptance:
        cautions.append(Note("no-spec-section", "the ON run has no spec-decode section (vllm "
                             "bench serve before PR #31739, or speculation was not on)"))
    if any(k in off_d for k in SPEC_KEYS):
        cautions.append(Note("off-has-spec-counters", "the OFF run has spec-decode counters: "
                             "was speculation really off?"))
    length = acceptance.get("spec_decode_acceptance_length")
    if isinstance(length, (int, float)):
        action, sentence = acceptance_length_advice(length, _gamma(acceptance),
                                                    _rate(acceptance))
        gamma = _gamma(acceptance)
        if action != "ok":
            cautions.append(Note(f"gamma1-{action}" if gamma == 1 else
                                 f"acceptance-length-{action}",
                                 sentence + (" (article checklist, step 3)"
                                             if action == "shrink" else "")))
    return flags, cautions, acceptance
