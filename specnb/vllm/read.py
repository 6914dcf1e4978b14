"""One entry point for every spec-decode input vLLM writes: :func:`read_acceptance` (with
:mod:`specnb.vllm.metrics` or :mod:`specnb.vllm.logs`, and a header saying what was read)."""

from __future__ import annotations

from dataclasses import dataclass

from . import logs, metrics
from .metrics import FORMATS, AcceptanceStats, UsageError, acceptance_stats, read_metrics

__all__ = ["Reading", "UsageError", "detect_format", "read_acceptance",
           "read_acceptance_scans", "MARKERS", "LARGE_SCRAPE"]


@dataclass(frozen=True)
class Reading:
    """What :func:`read_acceptance` read: ``stats`` (:class:`AcceptanceStats`), ``format``
    ("prometheus", "prometheus pair", "log" or "offline printout"), ``header`` (lines saying
    what was read: source, how lines were combined, skipped lines)."""

    stats: AcceptanceStats
    format: str
    header: tuple


def detect_format(text: str) -> str:
    """"log", "offline printout" or "prometheus" (the last also for text that is none of them:
    the Prometheus reader then names the formats specnb reads)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if logs.is_spec_decode_log(text):
        return "log"
    if logs.is_offline_printout(text):
        return "offline printout"
    return "prometheus"


def read_acceptance(texts, num_speculative_tokens: int | None = None,
                    model_name: str | None = None) -> Reading:
    """Read one input (or a before/after pair of scrapes) into acceptance statistics.

    ``texts``: a str or 1-2 str (a /metrics scrape, a BEFORE/AFTER pair of scrapes, a log, or a
    spec_decode.py printout); ``num_speculative_tokens``: gamma, needed for tau when the input
    prints no draft count (v0.8 log lines); ``model_name``: for scrapes, keep only series with
    this ``model_name`` label.

    Returns :class:`Reading`. Raises TypeError for a text that is not a string; ValueError for
    two inputs not both scrapes (:class:`UsageError`), text of none of the formats (the message
    names them), and what the readers and :func:`~specnb.vllm.acceptance_stats` raise.
    """
    if isinstance(texts, str):
        texts = [texts]
    texts = list(texts)
    _count_ok(len(texts))
    kinds = [detect_format(t) for t in texts]
    _kinds_ok(kinds)
    kind = kinds[0]
    if kind == "prometheus":
        if not any(t.strip() for t in texts):
            raise ValueError(f"the input is empty; specnb reads {FORMATS}")
        return _prometheus_reading(texts, num_speculative_tokens, model_name, read_metrics)
    if kind == "offline printout":
        counts = logs.read_offline_printout(texts[0])
        header = ("source: printout of vLLM's examples/offline_inference/spec_decode.py (counts "
                  "summed over the run" + ("; per-position counts = printed rate x drafts, rates "
                                           "printed to 2 decimals" if counts.accepted_per_position
                                           else "") + ")",)
        return Reading(acceptance_stats(counts, num_speculative_tokens), kind, header)
    text = texts[0]
    frame = logs.read_spec_decode_lines(enumerate(text.splitlines(), 1))
    also = {"scrape": "vllm:spec_decode_" in text, "printout": logs.is_offline_printout(text)}
    return _log_reading(frame, len(text.splitlines()), also, num_speculative_tokens)


def _count_ok(n: int) -> None:
    if not 1 <= n <= 2:
        raise UsageError(f"usage: give one input or a before/after pair of scrapes, got {n}")


def _kinds_ok(kinds) -> None:
    if len(kinds) == 2 and kinds != ["prometheus", "prometheus"]:
        raise UsageError("usage: two inputs must be a before/after pair of /metrics scrapes; "
                          "give a log or a printout alone (a log's lines are combined)")


def _prometheus_reading(sources, num_speculative_tokens, model_name, read) -> Reading:
    """The Reading of one scrape or a before/after pair, ``read(source, model_name)`` giving
    each one's counts (:func:`read_metrics` of a text, or of a scan's lines)."""
    pair = len(sources) == 2
    counts = metrics._delta(*sources, model_name, read) if pair else read(sources[0], model_name)
    what = "window between the two scrapes" if pair else "one scrape"
    header = (f"source: {what}, {counts.label_sets} label set(s) summed",)
    return Reading(acceptance_stats(counts, num_speculative_tokens),
                   "prometheus pair" if pair else "prometheus", header)


def _log_reading(frame, n_lines, also, num_speculative_tokens):
    """The Reading of a log's :func:`logs.read_spec_decode_lines` frame (``n_lines``: the
    input's; ``also``: whether it also holds a scrape / a printout)."""
    v0 = logs._is_v0(frame)
    n_v1, n_v0 = frame.attrs["v1_lines"], frame.attrs["v0_lines"]
    lines_word = "log line" if n_lines == 1 else "log lines"
    if (~v0).any():
        fmts = sorted({f for x in frame.loc[~v0, "format"] for f in str(x).split(", ")})
        header = [f"source: {n_lines:,} {lines_word}; {n_v1:,} V1 spec-decode line(s) "
                  f"({', '.join(fmts)}) summed: each covers one logging interval"]
        if n_v0:
            header.append(f"note: {n_v0:,} V0 line(s) ignored (V1 lines present)")
    else:
        last = frame.iloc[-1]
        total = ("its rates cover the whole run" if last["format"] == "v0 (rates only)"
                 else "its counters are the total")
        header = [f"source: {n_lines:,} {lines_word}; {n_v0:,} V0 'Speculative metrics' "
                  f"line(s): V0 counters are cumulative since the server started, so the last "
                  f"line (line {last['line']}) is used and {total}; earlier lines are not "
                  "added"]
    found = [what for what, key in (
        ("a /metrics scrape (vllm:spec_decode_* series)", "scrape"),
        ("a spec_decode.py printout (num_drafts: ...)", "printout")) if also.get(key)]
    if found:
        header.append(f"note: the input also holds {' and '.join(found)}, not read: only the "
                      "log lines are; give that part as its own file to read it")
    skipped = frame.attrs["skipped"]
    if skipped:
        header.append(f"note: skipped unreadable spec-decode line(s) {logs._shown(skipped)} "
                      f"({frame.attrs['first_error']})")
    stats = logs._stats_from_log(frame, num_speculative_tokens)
    return Reading(stats, "log", tuple(header))


#: Byte markers of every line :func:`read_acceptance_scans` reads (:func:`specnb._stream.scan`):
#: the scrape's spec-decode series (with their HELP / TYPE lines), V1 and V0 log lines, the
#: offline printout's lines.
MARKERS = ("vllm:spec_decode_", logs.V1_MARK, logs.V0_MARK, "num_drafts:", "num_draft_tokens:",
           "num_accepted_tokens:", "mean acceptance length:", "acceptance at token",
           "total_num_output_tokens:")
#: A vLLM /metrics scrape is tens to hundreds of kB (a few hundred series); larger than this
#: (bytes) and :func:`read_acceptance_scans` warns with the size.
LARGE_SCRAPE = 16 << 20


def read_acceptance_scans(scans, num_speculative_tokens: int | None = None,
                          model_name: str | None = None) -> Reading:
    """:func:`read_acceptance` of files streamed by :func:`specnb._stream.scan` with
    :data:`MARKERS`: their kept lines are folded as :meth:`~specnb._stream.Scan.kept` hands
    them over (a log's V1 lines summed, a scrape's samples summed), so a 200 MB scrape or log
    is read in constant memory (plus O(series) for a scrape), whatever the share of its lines
    that are spec-decode lines. The header warns with the size of a scrape larger than
    :data:`LARGE_SCRAPE`. Raises ValueError, UsageError as :func:`read_acceptance` (a file with
    no kept line is read from its head, so the message names what it is instead).
    """
    scans = list(scans)
    _count_ok(len(scans))
    kinds = [_kind(sc) for sc in scans]
    _kinds_ok(kinds)
    if len(scans) == 1 and kinds[0] == "log":
        reading = _log_scan(scans[0], num_speculative_tokens)
    elif kinds == ["prometheus"] * len(scans) and any(sc.has_kept for sc in scans):
        reading = _prometheus_reading([sc.kept() if sc.has_kept else sc.head for sc in scans],
                                      num_speculative_tokens, model_name, _read_scrape)
    else:  # a printout (small), or files with no kept line (their heads)
        reading = read_acceptance([sc.text if sc.has_kept else sc.head for sc in scans],
                                  num_speculative_tokens, model_name)
    warn = [f"warning: {sc.where} is {sc.n_bytes / 1e6:,.1f} MB ({sc.n_lines:,} lines); a vLLM "
            f"/metrics scrape is usually under 1 MB: several scrapes pasted together, or a "
            f"dump of more than one server? (only its {sc.n_kept:,} spec-decode lines "
            "were read)" for sc, kind in zip(scans, kinds)
            if kind == "prometheus" and sc.n_bytes > LARGE_SCRAPE]
    return Reading(reading.stats, reading.format, tuple(warn) + reading.header)


def _read_scrape(source, model_name):
    """:func:`read_metrics` of a text (a head), or of a scan's kept lines."""
    if isinstance(source, str):
        return read_metrics(source, model_name)
    return metrics.read_metrics_lines(source, model_name)


def _kind(sc) -> str:
    """:func:`detect_format` of a scan's kept lines (its head when it kept none), from the
    markers it found and, for a printout, the lines holding its two markers."""
    if not sc.has_kept:
        return detect_format(sc.head)
    if {logs.V1_MARK, logs.V0_MARK} & sc.markers:
        return "log"
    if {"num_drafts:", "num_draft_tokens:"} <= sc.markers:
        keys = set()
        for _, line in sc.kept():
            if "num_draft" in line:
                keys |= logs.printout_keys(line)
                if len(keys) == 2:
                    return "offline printout"
    return "prometheus"


def _log_scan(sc, num_speculative_tokens) -> Reading:
    """The Reading of a scanned log: its lines folded by :func:`logs.read_spec_decode_lines`
    as they are read, noting on the way whether it also holds a scrape or a printout."""
    scrape, printout = False, set()

    def watched():
        nonlocal scrape, printout
        for n, t in sc.kept():
            scrape = scrape or t.lstrip().startswith(("vllm:spec_decode_", "# HELP vllm:spec_",
                                                      "# TYPE vllm:spec_"))
            if "num_draft" in t:
                printout |= logs.printout_keys(t)
            yield n, t

    frame = logs.read_spec_decode_lines(watched(), strict=False)  # unmarked lines skipped
    also = {"scrape": scrape, "printout": len(printout) == 2}
    return _log_reading(frame, sc.n_lines, also, num_speculative_tokens)
