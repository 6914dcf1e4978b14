"""One entry point for every spec-decode input vLLM writes: :func:`read_acceptance`.

It recognises the input (Prometheus scrape, scrape pair, log lines of any vLLM version, the
offline example's printout), reads it with :mod:`specnb.vllm.metrics` or
:mod:`specnb.vllm.logs`, and returns the :class:`~specnb.vllm.metrics.AcceptanceStats` with a
header that says what was read and how the lines were combined. ``specnb metrics`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import logs
from .metrics import (FORMATS, AcceptanceStats, UsageError, acceptance_stats, metrics_delta,
                      read_metrics)

__all__ = ["Reading", "UsageError", "detect_format", "read_acceptance"]


@dataclass(frozen=True)
class Reading:
    """What :func:`read_acceptance` read.

    Attributes
    ----------
    stats : AcceptanceStats
    format : "prometheus", "prometheus pair", "log" or "offline printout".
    header : lines saying what was read (source, how lines were combined, skipped lines).
    """

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

    Parameters
    ----------
    texts : str or sequence of 1-2 str
        A /metrics scrape, a BEFORE/AFTER pair of scrapes, a log, or a spec_decode.py printout.
    num_speculative_tokens : int or None
        gamma; needed for tau when the input prints no draft count (v0.8 log lines).
    model_name : str or None
        For scrapes: keep only series with this ``model_name`` label.

    Returns
    -------
    Reading

    Raises
    ------
    ValueError
        two inputs that are not both scrapes ("usage" in the message); text that is none of the
        formats (the message names them); what the readers and
        :func:`~specnb.vllm.acceptance_stats` raise.
    TypeError
        a text that is not a string.
    """
    if isinstance(texts, str):
        texts = [texts]
    texts = list(texts)
    if not 1 <= len(texts) <= 2:
        raise UsageError(f"usage: give one input or a before/after pair of scrapes, got "
                          f"{len(texts)}")
    kinds = [detect_format(t) for t in texts]
    if len(texts) == 2 and kinds != ["prometheus", "prometheus"]:
        raise UsageError("usage: two inputs must be a before/after pair of /metrics scrapes; "
                          "give a log or a printout alone (a log's lines are combined)")
    kind = kinds[0]
    if kind == "prometheus":
        if not any(t.strip() for t in texts):
            raise ValueError(f"the input is empty; specnb reads {FORMATS}")
        counts = (metrics_delta(*texts, model_name) if len(texts) == 2
                  else read_metrics(texts[0], model_name))
        what = "window between the two scrapes" if len(texts) == 2 else "one scrape"
        header = (f"source: {what}, {counts.label_sets} label set(s) summed",)
        return Reading(acceptance_stats(counts, num_speculative_tokens),
                       "prometheus pair" if len(texts) == 2 else "prometheus", header)
    if kind == "offline printout":
        counts = logs.read_offline_printout(texts[0])
        header = ("source: printout of vLLM's examples/offline_inference/spec_decode.py (counts "
                  "summed over the run" + ("; per-position counts = printed rate x drafts, rates "
                                           "printed to 2 decimals" if counts.accepted_per_position
                                           else "") + ")",)
        return Reading(acceptance_stats(counts, num_speculative_tokens), kind, header)
    text = texts[0]
    frame = logs.read_spec_decode_log(text, strict=False)
    v0 = logs._is_v0(frame)
    n_lines = len(text.splitlines())
    lines_word = "log line" if n_lines == 1 else "log lines"
    if (~v0).any():
        fmts = sorted(set(frame.loc[~v0, "format"]))
        header = [f"source: {n_lines} {lines_word}; {int((~v0).sum())} V1 spec-decode line(s) "
                  f"({', '.join(fmts)}) summed: each covers one logging interval"]
        if v0.any():
            header.append(f"note: {int(v0.sum())} V0 line(s) ignored (V1 lines present)")
    else:
        last = frame.iloc[-1]
        total = ("its rates cover the whole run" if last["format"] == "v0 (rates only)"
                 else "its counters are the total")
        header = [f"source: {n_lines} {lines_word}; {len(frame)} V0 'Speculative metrics' line(s): "
                  f"V0 counters are cumulative since the server started, so the last line (line "
                  f"{last['line']}) is used and {total}; earlier lines are not added"]
    also = [what for what, found in (
        ("a /metrics scrape (vllm:spec_decode_* series)", "vllm:spec_decode_" in text),
        ("a spec_decode.py printout (num_drafts: ...)", logs.is_offline_printout(text))) if found]
    if also:
        header.append(f"note: the input also holds {' and '.join(also)}, not read: only the log "
                      "lines are; give that part as its own file to read it")
    skipped = frame.attrs["skipped"]
    if skipped:
        header.append(f"note: skipped unreadable spec-decode line(s) {skipped} "
                      f"({frame.attrs['first_error']})")
    stats = logs._stats_from_log(frame, num_speculative_tokens)
    return Reading(stats, "log", tuple(header))
