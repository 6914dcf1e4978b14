"""Compare two ``vllm bench serve --save-result`` JSON files: speculation on against off.

Keys (``vllm/benchmarks/serve.py`` @ ``009e6d4a``): ``mean_<m>_ms``, ``median_<m>_ms``,
``std_<m>_ms`` and ``p<P>_<m>_ms`` for m in ttft, tpot, itl, e2el (p99 by default;
``--metric-percentiles 50,90,99`` adds more); ``output_throughput``, ``request_throughput``,
``total_token_throughput`` (tokens or requests per second); and, when the server exposes the
counters, ``spec_decode_acceptance_rate`` (percent), ``spec_decode_acceptance_length``,
``spec_decode_num_drafts``, ``spec_decode_draft_tokens``, ``spec_decode_accepted_tokens``,
``spec_decode_per_position_acceptance_rates`` (fractions).

TPOT (time per output token, excluding the first) is the per-user decode speed.
ITL is measured per streamed chunk; with speculation one chunk often carries several tokens,
so ITL can rise while TPOT falls (PR #48892: median TPOT -26%, median ITL +612%). The latency
verdict therefore rests on TPOT, not ITL.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import _check
from .metrics import acceptance_length_advice

__all__ = ["GOALS", "COMPARABLE", "read_bench", "bench_summary", "compare_bench",
           "comparability", "BenchComparison"]

GOALS = ("latency", "throughput")
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")
THROUGHPUTS = (("output_throughput", "output throughput", "tok/s"),
               ("total_token_throughput", "total token throughput", "tok/s"),
               ("request_throughput", "request throughput", "req/s"))
SPEC_KEYS = ("spec_decode_acceptance_rate", "spec_decode_acceptance_length",
             "spec_decode_num_drafts", "spec_decode_draft_tokens",
             "spec_decode_accepted_tokens", "spec_decode_per_position_acceptance_rates")
COMPARABLE = ("model_id", "num_prompts", "max_concurrency", "request_rate", "burstiness",
              "endpoint_type", "dataset_name", "dataset_path", "dataset", "completed")
_PCT = re.compile(r"^p(\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
#: Keys whose values must be finite numbers >= 0 (latencies, throughputs, counts).
_NUMERIC = re.compile(r"^(?:(?:mean|median|std|p\d+(?:\.\d+)?)_(?:ttft|tpot|itl|e2el)_ms"
                      r"|output_throughput|total_token_throughput|request_throughput|duration"
                      r"|completed|failed|total_input_tokens|total_output_tokens"
                      r"|spec_decode_(?:acceptance_rate|acceptance_length|num_drafts"
                      r"|draft_tokens|accepted_tokens))$")


def _check_values(data: dict, where: str) -> None:
    for k, v in data.items():
        if not isinstance(k, str):
            raise ValueError(f"{where}: keys must be strings, got {k!r}")
        if _NUMERIC.match(k) and (isinstance(v, bool) or not isinstance(v, (int, float))
                                  or not math.isfinite(v) or v < 0):
            raise ValueError(f"{where}: {k} must be a finite number >= 0, got {v!r}")
    rates = data.get("spec_decode_per_position_acceptance_rates")
    if rates is not None and (not isinstance(rates, list) or not all(
            not isinstance(r, bool) and isinstance(r, (int, float)) and 0 <= r <= 1
            for r in rates)):
        raise ValueError(f"{where}: spec_decode_per_position_acceptance_rates must be a list "
                         f"of fractions in [0, 1], got {rates!r}")


def read_bench(path_or_dict) -> dict:
    """Load one ``vllm bench serve --save-result`` JSON file (or take its dict).

    Parameters
    ----------
    path_or_dict : str, Path or dict

    Returns
    -------
    dict, the result as saved.

    Raises
    ------
    OSError
        the file cannot be read (FileNotFoundError, IsADirectoryError, PermissionError...).
    ValueError
        not UTF-8 text, not JSON, not an object, neither ``output_throughput`` nor any ``*_ms``
        latency key (not a bench result), or a latency, throughput, count or acceptance value
        that is not a finite number >= 0 (the message names the key).
    """
    if isinstance(path_or_dict, dict):
        data, where = path_or_dict, "the dict"
    elif isinstance(path_or_dict, (str, Path)):
        where = str(path_or_dict)
        try:
            data = json.loads(Path(path_or_dict).read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise _check.utf8_error(where, exc, "is it a `vllm bench serve --save-result` JSON "
                                    "file?") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not JSON ({exc.msg} at line {exc.lineno} column "
                             f"{exc.colno})") from None
        except RecursionError:
            raise ValueError(f"{where}: JSON nested too deeply to read") from None
    else:
        raise TypeError("path_or_dict must be a path or a dict, got "
                        f"{type(path_or_dict).__name__}")
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a bench result is a JSON object, got {type(data).__name__}")
    _check_values(data, where)
    if "output_throughput" not in data and not any(k.endswith("_ms") for k in data):
        raise ValueError(f"{where}: no output_throughput and no *_ms latency keys; is this a "
                         "`vllm bench serve --save-result` file?")
    return data


def _num(d, key):
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v)


def _rows(on: dict, off: dict):
    rows = []
    for m in LATENCY_METRICS:
        pct = sorted({float(hit.group(1)) for d in (on, off) for k in d
                      if (hit := _PCT.match(k)) and hit.group(2) == m})
        stats = [("mean", f"mean_{m}_ms"), ("median", f"median_{m}_ms")]
        stats += [(f"p{p:g}", f"p{p:g}_{m}_ms") for p in pct]
        for stat, key in stats:
            if key in on or key in off:
                rows.append((m.upper(), stat, "ms", _num(off, key), _num(on, key), "lower"))
    for key, name, unit in THROUGHPUTS:
        if key in on or key in off:
            rows.append((name, "", unit, _num(off, key), _num(on, key), "higher"))
    if "duration" in on or "duration" in off:
        rows.append(("duration", "", "s", _num(off, "duration"), _num(on, "duration"), "lower"))
    return rows


def bench_summary(path_or_dict):
    """One run's latency percentiles and throughputs as a table (metric, stat, unit, value).

    The article's baseline (checklist step 2): TTFT and TPOT p50/p99 and tokens/s. Rows appear
    only for keys the file has.

    Raises
    ------
    ValueError, FileNotFoundError
        as :func:`read_bench`.
    """
    import pandas as pd

    run = read_bench(path_or_dict)
    rows = [(metric, stat, unit, value) for metric, stat, unit, _, value, _ in _rows(run, {})]
    return pd.DataFrame(rows, columns=["metric", "stat", "unit", "value"])


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
    reasons : why, with the numbers.
    cautions : what else to look at (tail latency, TTFT, ITL, comparability, failures); the
        comparability flags come first.
    comparability : why the two runs are not like for like (model, prompts, dataset, request
        rate, concurrency, completed requests, output tokens, a single request); printed above
        the verdict, which stands but must be read with them.
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
        lines.append("")
        if self.comparability:
            lines.append("not a like-for-like comparison; read the verdict with this in mind:")
            lines += [f"  ! {c}" for c in self.comparability]
        lines.append(f"goal: {self.goal} -> {self.verdict}")
        lines += [f"  because {r}" for r in self.reasons]
        lines += [f"  caution: {c}" for c in self.cautions if c not in self.comparability]
        return "\n".join(lines)


def comparability(on, off, tolerance: float = 0.05) -> list[str]:
    """Why two ``vllm bench serve`` results are not like for like, as sentences.

    Flags (ours, stated): a different value of any :data:`COMPARABLE` key present in both
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
    out = []
    for k in COMPARABLE:
        if k in on_d and k in off_d and on_d[k] != off_d[k]:
            out.append(f"the runs differ in {k} ({off_d[k]!r} off vs {on_d[k]!r} on): "
                       "not a like-for-like comparison")
    tokens = [_num(d, "total_output_tokens") for d in (off_d, on_d)]
    done = [_num(d, "completed") for d in (off_d, on_d)]
    if not any(math.isnan(t) for t in tokens):
        per = [t / n if n == n and n > 0 else t for t, n in zip(tokens, done)]
        unit = "per request" if all(n == n and n > 0 for n in done) else "in total"
        if per[0] > 0 and abs(per[1] / per[0] - 1) > tol:
            out.append(f"the runs produced different numbers of output tokens: {tokens[0]:,.0f} "
                       f"off vs {tokens[1]:,.0f} on ({per[0]:,.1f} vs {per[1]:,.1f} {unit}, "
                       f"{100 * (per[1] / per[0] - 1):+.1f}%, beyond the {100 * tol:.0f}% "
                       "tolerance): TPOT and throughput average over different outputs (set "
                       "--ignore-eos or a fixed output length so both runs decode the same "
                       "number of tokens)")
    single = [name for name, d in (("OFF", off_d), ("ON", on_d))
              if _num(d, "completed") == 1 or _num(d, "num_prompts") == 1]
    if single:
        out.append(f"the {' and '.join(single)} run{'s' * (len(single) > 1)} measured a single "
                   "request: one output, no batching and no spread to put a percentile on; one "
                   "request is not a benchmark (run vllm bench serve with many prompts, at the "
                   "concurrency you serve)")
    return out


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
    from ..cost import relative_cost

    _check.choice("goal", goal, GOALS)
    tol = float(_check.real("tolerance", tolerance, lo=0.0, hi=1.0, hi_open=True))
    on_d, off_d = read_bench(on), read_bench(off)
    import pandas as pd

    records = []
    for metric, stat, unit, v_off, v_on, better in _rows(on_d, off_d):
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

    def row(metric, stat):
        hit = table[(table["metric"] == metric) & (table["stat"] == stat)]
        if hit.empty or math.isnan(hit.iloc[0]["on/off"]):
            return None
        return hit.iloc[0]

    reasons, cautions = [], []
    verdict = "cannot tell"
    if goal == "latency":
        r = row("TPOT", "median")
        r = r if r is not None else row("TPOT", "mean")
        if r is None:
            reasons.append("no TPOT (median or mean) in both runs, or the OFF run's is 0")
        else:
            verdict = {"on": "turn it on", "off": "keep it off",
                       "same": "no clear difference"}[r["better"]]
            reasons.append(f"{r['stat']} TPOT {r['off']:.2f} -> {r['on']:.2f} ms "
                           f"({r['change (%)']:+.1f}%, tolerance {100 * tol:.0f}%)")
    else:
        r = row("output throughput", "")
        if r is None:
            reasons.append("output_throughput is missing from one of the runs, or 0 in the OFF "
                           "run")
        else:
            verdict = {"on": "turn it on", "off": "keep it off",
                       "same": "no clear difference"}[r["better"]]
            reasons.append(f"output throughput {r['off']:.2f} -> {r['on']:.2f} tok/s "
                           f"({r['change (%)']:+.1f}%, tolerance {100 * tol:.0f}%); cost per "
                           f"token x{relative_cost(r['on/off']):.3f}")
    for metric, stat, what in (("TPOT", "p99", "tail TPOT"), ("TTFT", "median", "median TTFT"),
                               ("TTFT", "p99", "tail TTFT")):
        x = row(metric, stat)
        if x is not None and x["better"] == "off":
            cautions.append(f"{what} got worse: {x['off']:.2f} -> {x['on']:.2f} ms "
                            f"({x['change (%)']:+.1f}%)")
    itl = row("ITL", "median")
    itl = itl if itl is not None else row("ITL", "mean")
    tpot = row("TPOT", "median")
    if itl is not None and tpot is not None and itl["better"] == "off" and \
            tpot["better"] != "off":
        cautions.append(f"ITL rose {itl['change (%)']:+.1f}% while TPOT did not: ITL is per "
                        "streamed chunk and a chunk now carries several tokens; judge by TPOT")
    flags = comparability(on_d, off_d, tol)
    cautions = flags + cautions
    for name, d in (("ON", on_d), ("OFF", off_d)):
        if _num(d, "failed") > 0:
            cautions.append(f"the {name} run had {int(_num(d, 'failed'))} failed requests")
    acceptance = {k: on_d[k] for k in SPEC_KEYS if k in on_d}
    if not acceptance:
        cautions.append("the ON run has no spec-decode section (vllm bench serve before PR "
                        "#31739, or speculation was not on)")
    if any(k in off_d for k in SPEC_KEYS):
        cautions.append("the OFF run has spec-decode counters: was speculation really off?")
    length = acceptance.get("spec_decode_acceptance_length")
    if isinstance(length, (int, float)):
        action, sentence = acceptance_length_advice(length, _gamma(acceptance),
                                                    _rate(acceptance))
        if action != "ok":
            cautions.append(sentence + (" (article checklist, step 3)" if action == "shrink"
                                        else ""))
    return BenchComparison(table, acceptance, goal, verdict, tuple(reasons), tuple(cautions),
                           tuple(flags))
