"""Read the spec-decode lines vLLM writes to its log (``SpecDecodingLogging.log``,
``vllm/v1/spec_decode/metrics.py`` @ ``ee4ceaae``; older forms from the issues named), and the
offline example's printout: V1 ``SpecDecoding metrics:`` lines, current (``Mean acceptance
length``, ``Accepted: N tokens``, ``Drafted: M tokens``, ``Per-position acceptance rate``, ``Avg
Draft acceptance rate``; extra fields such as ``Current speculative depth`` tolerated), v0.9
(issue #19254) and v0.8 (PR #15902: no mean length, no per-position rates, so drafts and tau
need k); V0 ``Speculative metrics:`` lines with counts (issues #9539, #7301) or with rates only
(issue #16258); the printout of ``examples/offline_inference/spec_decode.py`` (issue #26191).

V1 lines cover one logging interval each and are summed; V0 counters are cumulative, so the
last line is the total. V0's "draft acceptance rate" also counts accepted tokens after a
rejection (issue #9565); tau comes from the system efficiency: efficiency x (k + 1) = emitted /
steps.
"""

from __future__ import annotations

import math
import re
from itertools import zip_longest

from .._numbers import MAX_EXACT_INT, number_text
from .metrics import AcceptanceStats, SpecDecodeCounts, acceptance_stats

__all__ = ["read_spec_decode_log", "read_spec_decode_lines", "log_counts", "log_stats",
           "read_offline_printout", "is_spec_decode_log", "is_offline_printout",
           "printout_keys"]

V1_MARK, V0_MARK = "SpecDecoding metrics:", "Speculative metrics:"

_NUM = r"([0-9]*\.?[0-9]+|nan)"
_RE = {
    "mean_acceptance_length": re.compile(r"Mean acceptance length:\s*" + _NUM),
    "accepted": re.compile(r"Accepted:\s*(\d+)\s*tokens"),
    "drafted": re.compile(r"Drafted:\s*(\d+)\s*tokens"),
    "per_position": re.compile(r"Per-position acceptance rate:\s*([0-9.,\s]*)"),
    "avg_rate": re.compile(r"Avg Draft acceptance rate:\s*" + _NUM + "%"),
    "old_rate": re.compile(r"Draft acceptance rate:\s*" + _NUM + "%"),
    "depth": re.compile(r"Current speculative depth:\s*(\d+)"),
}
_V0 = re.compile(
    r"Speculative metrics: Draft acceptance rate:\s*" + _NUM + r",\s*System efficiency:\s*"
    + _NUM + r",\s*Number of speculative tokens:\s*(\d+),\s*Number of accepted tokens:\s*(\d+),"
    r"\s*Number of draft tokens:\s*(\d+),\s*Number of emitted tokens:\s*(\d+)")
_V0_RATES = re.compile(
    r"Speculative metrics: Draft acceptance rate:\s*" + _NUM + r",\s*System efficiency:\s*"
    + _NUM + r",\s*Number of speculative tokens:\s*(\d+)\s*[,.]?\s*$")
_OFFLINE = {k: re.compile(rf"^\s*{name}:\s*{num}\s*$", re.M) for k, name, num in (
    ("drafts", "num_drafts", r"(\d+)"), ("draft_tokens", "num_draft_tokens", r"(\d+)"),
    ("accepted_tokens", "num_accepted_tokens", r"(\d+)"),
    ("mean_acceptance_length", "mean acceptance length", _NUM),
    ("output_tokens", "total_num_output_tokens", r"(\d+)"))}
_OFFLINE_POS = re.compile(r"^\s*acceptance at token\s*(\d+)\s*:\s*" + _NUM + r"\s*$", re.M)


def is_spec_decode_log(text: str) -> bool:
    """True when ``text`` has a V1 ``SpecDecoding metrics:`` or V0 ``Speculative metrics:`` line."""
    return V1_MARK in text or V0_MARK in text


def is_offline_printout(text: str) -> bool:
    """True when ``text`` looks like the printout of ``spec_decode.py`` (``num_drafts: N``)."""
    return printout_keys(text) == set(_PRINTOUT_KEYS)


#: The printout's lines :func:`is_offline_printout` needs, both.
_PRINTOUT_KEYS = ("drafts", "draft_tokens")


def printout_keys(line: str) -> set:
    """Which of the lines :func:`is_offline_printout` needs (``num_drafts: N``, ``"drafts"``;
    ``num_draft_tokens: N``, ``"draft_tokens"``) ``line`` holds: text is a printout when its lines
    hold both between them (a streamed file is checked a line at a time)."""
    return {k for k in _PRINTOUT_KEYS if _OFFLINE[k].search(line)}


def _count(text: str, what: str, lineno, line: str) -> int:
    """``int(text)`` of a count the line prints (``what``: its words), refused above
    :data:`MAX_EXACT_INT`: vLLM's counters never reach it, and the sums and ratios are float64
    (a 400-digit ``Drafted: N tokens`` was an OverflowError, trial 6 T6-T5)."""
    n = int(text)
    if n > MAX_EXACT_INT:
        where = f"line {lineno}: " if lineno is not None else ""
        raise ValueError(f"{where}{what} {number_text(n)} is too large for a "
                         f"count vLLM prints (at most 2**53); the log is damaged or was edited"
                         + (f": {line.strip()[:80]}" if line.strip() else ""))
    return n


def _length(text: str, what: str, lineno, line: str) -> float:
    """``float(text)`` of a printed mean acceptance length: nan (as printed) or a finite
    number >= 1 (1 + accepted / drafts); anything else is a damaged line (T6-C4: a 400-digit
    length read as inf made drafts 0 and 'no speculation')."""
    al = float(text)
    if al == al and not 1.0 <= al < math.inf:
        where = f"line {lineno}: " if lineno is not None else ""
        shown = text if len(text) <= 24 else number_text(text)
        raise ValueError(f"{where}{what} {shown} is not a mean acceptance length (a finite "
                         f"number >= 1, 1 + accepted / drafts); the log is damaged or was "
                         "edited" + (f": {line.strip()[:80]}" if line.strip() else ""))
    return al


def _parse_v1(line: str, lineno: int):
    body = line.split(V1_MARK, 1)[1]
    got = {k: r.search(body) for k, r in _RE.items()}
    missing = [k for k in ("accepted", "drafted") if not got[k]]
    if missing:
        what = " or ".join(f"'{k.capitalize()}: N tokens'" for k in missing)
        raise ValueError(f"line {lineno}: SpecDecoding line without {', '.join(missing)} "
                         f"(no {what} with N a whole number >= 0): {line.strip()[:120]}")
    rates = []
    if got["per_position"]:
        listed = got["per_position"].group(1).strip().rstrip(",").strip()
        try:
            rates = [float(x) for x in listed.split(",")] if listed else []
        except ValueError:
            raise ValueError(f"line {lineno}: per-position acceptance rates {listed!r} are not "
                             "a comma-separated list of numbers") from None
        if not all(0.0 <= r <= 1.0 for r in rates):
            raise ValueError(f"line {lineno}: per-position acceptance rates must be fractions "
                             f"in [0, 1], got {listed!r}")
    # "older": v0.9 (issue #19254; the name kept for compatibility); "v0.8": no mean acceptance
    # length (PR #15902)
    fmt = "current" if got["avg_rate"] else "older" if got["mean_acceptance_length"] else "v0.8"
    printed = got["avg_rate"] or got["old_rate"]
    accepted = _count(got["accepted"].group(1), "Accepted:", lineno, line)
    drafted = _count(got["drafted"].group(1), "Drafted:", lineno, line)
    if accepted > drafted:
        raise ValueError(f"line {lineno}: Accepted {accepted} tokens exceeds Drafted {drafted}: "
                         "the line is damaged")
    al = (_length(got["mean_acceptance_length"].group(1), "Mean acceptance length:", lineno,
                  line) if got["mean_acceptance_length"] else math.nan)
    k = len(rates) or None
    drafts = None
    if k and drafted % k == 0:
        drafts = drafted // k
        if drafts and al == al and abs(1 + accepted / drafts - al) > 0.006:
            drafts = None  # not every step drafted k tokens (grammar, dynamic depth)
    if drafts is None and al == al and al > 1:
        drafts = accepted / (al - 1)  # from the printed (rounded) length: approximate
    return {
        "line": lineno, "format": fmt, "mean_acceptance_length": al,
        "accepted": accepted, "drafted": drafted,
        "acceptance_rate": (float(printed.group(1)) / 100) if printed else
        (accepted / drafted if drafted else float("nan")),
        "per_position": rates, "num_speculative_tokens": k,
        "speculative_depth": _count(got["depth"].group(1), "Current speculative depth:", lineno,
                                    line) if got["depth"] else None,
        "drafts": drafts, "emitted": None,
    }


def _parse_v0(line: str, lineno: int):
    m = _V0.search(line)
    rates_only = None if m else _V0_RATES.search(line)
    if not m and not rates_only:
        raise ValueError(f"line {lineno}: V0 'Speculative metrics' line not understood: "
                         f"{line.strip()[:120]}")
    rate, eff, k, *counts = (m or rates_only).groups()
    k = _count(k, "Number of speculative tokens:", lineno, line)
    if k < 1:
        raise ValueError(f"line {lineno}: 'Number of speculative tokens: {k}' must be >= 1: "
                         f"{line.strip()[:120]}")
    eff_f = float(eff)
    if not 0.0 <= eff_f <= 1.0:
        raise ValueError(f"line {lineno}: System efficiency {eff} must be in [0, 1]: "
                         f"{line.strip()[:120]}")
    row = {"line": lineno, "acceptance_rate": float(rate), "per_position": [],
           "num_speculative_tokens": k, "speculative_depth": None, "system_efficiency": eff_f}
    if rates_only:
        return {**row, "format": "v0 (rates only)", "mean_acceptance_length": eff_f * (k + 1),
                "accepted": None, "drafted": None, "drafts": None, "emitted": None}
    acc, draft, emitted = (_count(c, f"Number of {w} tokens:", lineno, line)
                           for c, w in zip(counts, ("accepted", "draft", "emitted")))
    steps = draft / k
    return {**row, "format": "v0", "mean_acceptance_length": emitted / steps if steps else
            float("nan"), "accepted": acc, "drafted": draft, "drafts": steps, "emitted": emitted}


def read_spec_decode_log(text: str, strict: bool = True):
    """Parse vLLM's spec-decode log lines (every format of the module docstring, any prefix
    before the marker) into a DataFrame, one row per line: line, format ("current", "older"
    (v0.9), "v0.8", "v0", "v0 (rates only)"), mean_acceptance_length (NaN when not printed),
    accepted, drafted, acceptance_rate (fraction, as printed: V0's counts tokens after a
    rejection too), per_position (list), num_speculative_tokens, speculative_depth, drafts (V1:
    drafted / k when that reproduces the printed length, else accepted / (length - 1); None
    when neither is printed: v0.8 lines need k), emitted and system_efficiency (V0 only).
    ``strict``: raise on a marked line that cannot be read, else skip it (its number in
    ``df.attrs["skipped"]``). Raises TypeError for a ``text`` not a str, ValueError for no
    spec-decode line (or an unreadable one when ``strict``)."""
    errors: list = []
    return _frame(list(_parsed(_numbered(text), strict, errors)), errors)


_COLS = ["line", "format", "mean_acceptance_length", "accepted", "drafted",
         "acceptance_rate", "per_position", "num_speculative_tokens", "speculative_depth",
         "drafts", "emitted", "system_efficiency", "lines", "per_position_counts"]


def _parsed(numbered, strict: bool, errors: list):
    """The rows of the marked lines of ``(line number, line)`` pairs; with ``strict`` False an
    unreadable one is skipped, its (line number, message) appended to ``errors``."""
    for lineno, line in numbered:
        try:
            if V1_MARK in line:
                yield _parse_v1(line, lineno)
            elif V0_MARK in line:
                yield _parse_v0(line, lineno)
        except ValueError as exc:
            if strict:
                raise
            errors.append((lineno, str(exc)))


def _frame(rows, errors, v1_lines=None, v0_lines=None):
    import pandas as pd

    skipped = [n for n, _ in errors]
    first_error = errors[0][1] if errors else ""
    if not rows:
        raise ValueError(f"no '{V1_MARK}' or '{V0_MARK}' line "
                         + (f"could be read (unreadable lines: {_shown(skipped)}; "
                            f"{first_error})" if skipped else "found"))
    df = pd.DataFrame(rows).reindex(columns=_COLS)
    v0 = _is_v0(df)
    df.attrs.update(skipped=skipped, first_error=first_error,
                    v1_lines=int((~v0).sum()) if v1_lines is None else v1_lines,
                    v0_lines=int(v0.sum()) if v0_lines is None else v0_lines)
    return df


def _shown(skipped, most: int = 20):
    """The first ``most`` skipped line numbers, and how many more."""
    if len(skipped) <= most:
        return skipped
    return f"{skipped[:most]} and {len(skipped) - most} more"


def read_spec_decode_lines(numbered, strict: bool = False):
    """:func:`read_spec_decode_log` of ``(line number, line)`` pairs (a streamed file's kept
    lines) in constant memory: V1 lines summed into one row as they are read (``lines``: how
    many; ``per_position_counts``: rate x drafts summed), only the last V0 line kept (V0
    counters are cumulative); ``attrs``: ``v1_lines``, ``v0_lines``, ``skipped``,
    ``first_error``. Raises ValueError as :func:`read_spec_decode_log`."""
    acc, last_v0, formats, errors = None, None, set(), []
    n_v1 = n_v0 = 0
    for row in _parsed(numbered, strict, errors):
        if row["format"] in _V0_FORMATS:
            last_v0, n_v0 = row, n_v0 + 1
        else:
            n_v1 += 1
            formats.add(row["format"])
            d = row["drafts"]
            if acc is None:
                acc = dict(row, lines=0, drafts=0, accepted=0, drafted=0, per_position_counts=[])
            acc["drafts"] = None if acc["drafts"] is None or d is None else acc["drafts"] + d
            acc.update(accepted=acc["accepted"] + row["accepted"], lines=acc["lines"] + 1,
                       drafted=acc["drafted"] + row["drafted"], line=row["line"])
            acc["per_position_counts"] = [a + r * (d or 0) for a, r in zip_longest(
                acc["per_position_counts"], row["per_position"], fillvalue=0.0)]
    rows = []
    if acc is not None:
        acc["format"] = ", ".join(sorted(formats))
        acc["num_speculative_tokens"] = len(acc["per_position_counts"]) or None
        acc["acceptance_rate"] = acc["accepted"] / acc["drafted"] if acc["drafted"] else \
            float("nan")
        acc["mean_acceptance_length"] = (1 + acc["accepted"] / acc["drafts"]
                                         if acc["drafts"] else float("nan"))
        rows.append(acc)
    if last_v0 is not None:
        rows.append(last_v0)
    return _frame(rows, errors, n_v1, n_v0)


_V0_FORMATS = ("v0", "v0 (rates only)")


def _numbered(text: str):
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (log text), got {type(text).__name__}")
    return enumerate(text.splitlines(), 1)


def log_counts(text: str, strict: bool = True) -> SpecDecodeCounts:
    """Spec-decode counts from log text: V1 lines summed (each covers one interval); with only
    V0 lines the last one (cumulative), accepted tokens = emitted - steps (so tau matches V0's
    efficiency). v0.8 lines print no mean acceptance length: ``drafts`` is then NaN and
    :func:`~specnb.vllm.acceptance_stats` needs ``num_speculative_tokens`` for tau. Raises
    ValueError as :func:`read_spec_decode_log`, or for a V0 log whose last line prints rates only
    (use :func:`log_stats`)."""
    return _counts_from_log(read_spec_decode_lines(_numbered(text), strict))


def _is_v0(df):
    return df["format"].isin(_V0_FORMATS)


def _counts_from_log(df) -> SpecDecodeCounts:
    """:func:`log_counts` of a frame :func:`read_spec_decode_lines` returned."""
    v1 = df[~_is_v0(df)]
    if len(v1):
        row = v1.iloc[0]
        drafts = math.nan if row["drafts"] is None else float(row["drafts"])
        return SpecDecodeCounts(drafts, float(row["drafted"]), float(row["accepted"]),
                                tuple(row["per_position_counts"]), 1, "log", True)
    last = df.iloc[-1]
    if last["format"] == "v0 (rates only)":
        raise ValueError(f"line {last['line']}: this V0 line prints rates only (no counts); "
                         "read it with log_stats")
    steps = float(last["drafts"])
    return SpecDecodeCounts(steps, float(last["drafted"]), float(last["emitted"]) - steps, (),
                            1, "log (V0, cumulative)", False)


def _v0_rate_stats(row, k: int) -> AcceptanceStats:
    """AcceptanceStats from a V0 line with rates only: tau = efficiency x (k + 1)."""
    from ..theory import alpha_from_acceptance_length

    eff = float(row["system_efficiency"])
    tau = eff * (k + 1)
    rate = (tau - 1.0) / k
    printed = float(row["acceptance_rate"])
    counts = SpecDecodeCounts(*(math.nan,) * 3, (), 1, "log (V0, rates only)", False)
    notes = (
        f"V0 line with rates only (line {row['line']}, the last one: V0's rates cover the "
        "whole run): tau = system efficiency x (k + 1) = "
        f"{eff:.3f} x {k + 1} = {tau:.2f}; acceptance rate = (tau - 1) / k = {rate:.3f}",
        f"V0's printed 'draft acceptance rate' {printed:.3f} counts accepted draft tokens after "
        "a rejection too (issue #9565), so it is not the prefix acceptance that tau is made "
        "of; use the efficiency-based numbers above",
    )
    alpha = alpha_from_acceptance_length(tau, k) if 1.0 <= tau <= k + 1 else None
    return AcceptanceStats(rate, tau, (), k, alpha, counts, notes, None)


def log_stats(text: str, num_speculative_tokens: int | None = None,
              strict: bool = True) -> AcceptanceStats:
    """Acceptance from log text in any format :func:`read_spec_decode_log` reads: V1 lines
    summed, V0's last line (a V0 line with rates only: tau = system efficiency x (k + 1),
    acceptance (tau - 1) / k, no counts). Raises ValueError, TypeError as
    :func:`read_spec_decode_log` and :func:`~specnb.vllm.acceptance_stats`."""
    return _stats_from_log(read_spec_decode_lines(_numbered(text), strict),
                           num_speculative_tokens)


def _stats_from_log(df, num_speculative_tokens=None) -> AcceptanceStats:
    if _is_v0(df).all():  # V0 alone: the last line prints k, which a -k must match
        from .. import _check

        row, given = df.iloc[-1], num_speculative_tokens
        k = int(row["num_speculative_tokens"])
        if given is not None and (given := _check.scalar_int("num_speculative_tokens", given,
                                                               lo=1)) != k:
            raise ValueError(f"num_speculative_tokens={given} contradicts the log line "
                             f"{row['line']}, which prints 'Number of speculative tokens: {k}'")
        if row["format"] == "v0 (rates only)":
            return _v0_rate_stats(row, k)
    return acceptance_stats(_counts_from_log(df), num_speculative_tokens)


def read_offline_printout(text: str) -> SpecDecodeCounts:
    """Counts from the printout of vLLM's ``examples/offline_inference/spec_decode.py``: its
    exact ``num_drafts``, ``num_draft_tokens``, ``num_accepted_tokens``, the printed ``mean
    acceptance length`` checked against 1 + accepted / drafts (to 2 decimals), per-position
    counts r x drafts from the ``acceptance at token i: r`` lines (approximate). Raises
    TypeError for a ``text`` not a str; ValueError for a missing count, a per-position rate
    outside [0, 1], or a printed length the counts contradict (edited or mixed)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (the printout), got {type(text).__name__}")
    got = {k: r.findall(text) for k, r in _OFFLINE.items()}
    names = ("drafts", "draft_tokens", "accepted_tokens")
    missing = [f"num_{k}" for k in names if not got[k]]
    if missing:
        raise ValueError(f"spec_decode.py printout without {', '.join(missing)}")
    many = [k for k in names if len(got[k]) > 1]
    if many:
        raise ValueError(f"the printout holds {len(got[many[0]])} runs (num_{many[0]} printed "
                         "more than once); give one run's printout")
    drafts, tokens, accepted = (float(_count(got[k][0], f"num_{k}:", None, ""))
                                for k in names)
    if got["mean_acceptance_length"] and drafts > 0:
        printed = _length(got["mean_acceptance_length"][0], "mean acceptance length:", None,
                          "")
        if abs(1 + accepted / drafts - printed) > 0.006:
            raise ValueError(f"the printed mean acceptance length {printed} disagrees with "
                             f"1 + num_accepted_tokens / num_drafts = {1 + accepted / drafts:.4f}"
                             ": the printout was edited or mixes two runs")
    per_pos = {}
    for pos, rate in _OFFLINE_POS.findall(text):
        if len(pos) > 6:  # a position is below num_speculative_tokens (a few, at most 32)
            raise ValueError(f"acceptance at token {pos[:12]}...: not a draft position (the "
                             "printout is damaged or was edited)")
        r = float(rate)
        if not 0.0 <= r <= 1.0:
            raise ValueError(f"acceptance at token {pos}: {rate} must be a fraction in [0, 1]")
        per_pos[int(pos)] = r * drafts
    return SpecDecodeCounts(drafts, tokens, accepted, tuple(per_pos.get(i, 0.0) for i in range(
        max(per_pos, default=-1) + 1)), 1, "offline printout", False)
