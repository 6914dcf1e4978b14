"""vLLM's per-request acceptance: ``metrics.speculative_decoding`` in response bodies.

vLLM 0.33 adds it to a single-sequence response when the server runs with
``--per-request-spec-decode-metrics summary`` (or ``detailed``; default ``none``,
``vllm/config/observability.py``) (``SpeculativeDecodingMetrics``,
``vllm/entrypoints/generate/base/protocol.py``; ``RequestSpecDecodeMetrics.to_dict``,
``vllm/v1/metrics/stats.py``): the server counters' own definitions for one request, with an
``acceptance_histogram`` (index j: steps that accepted exactly j drafts), so accepted at position
i = steps with more than i accepted. A streamed response carries it on the final usage chunk
(``stream_options.include_usage``; ``entrypoints/openai/chat_completion/serving.py``): a stream
saved as it came (``curl -N``: ``data: {...}`` lines, blank lines, ``data: [DONE]``) is read
line by line through :func:`sse_data`.
"""

from __future__ import annotations

from itertools import zip_longest

from .metrics import SpecDecodeCounts

__all__ = ["read_request_metrics", "request_metrics", "sse_data", "is_sse"]

#: How a line of server-sent events starts (``data:``, and the other fields a stream may hold).
_SSE_FIELDS = ("data:", "event:", "id:", "retry:", ":")


def is_sse(head: str) -> bool:
    """True when ``head`` (a file's first characters) is a saved event stream: its first
    non-blank line is a ``data:`` line (or an SSE ``event:`` / ``id:`` field or comment)."""
    first = next((x.strip() for x in head.splitlines() if x.strip()), "")
    return first.startswith(_SSE_FIELDS)


def sse_data(line: str) -> str | None:
    """The JSON text of one line of a saved event stream: a ``data: {...}`` line's payload;
    None for ``data: [DONE]``, a blank line and the other SSE fields (``event:``, ``id:``,
    ``retry:``, ``:`` comments); any other line as it is (a JSON-lines file reads unchanged)."""
    t = line.strip()
    if t.startswith("data:"):
        t = t[5:].strip()
        return None if t in ("", "[DONE]") else t
    return None if not t or t.startswith(_SSE_FIELDS) else t

_KEYS = ("num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens",
         "acceptance_histogram")


def request_metrics(response) -> dict | None:
    """The ``speculative_decoding`` section of one response (a response body, its
    ``metrics``, or the section itself), or None when it has none."""
    if not isinstance(response, dict):
        return None
    for cand in (response.get("metrics", {}) if isinstance(response.get("metrics"), dict)
                 else {}, response):
        sec = cand.get("speculative_decoding") if isinstance(cand, dict) else None
        if isinstance(sec, dict):
            return sec
    return response if all(k in response for k in _KEYS) else None


def read_request_metrics(responses) -> SpecDecodeCounts:
    """Sum the per-request spec-decode metrics of vLLM responses into counts.

    ``responses``: an iterable of dicts (response bodies, as saved). Returns
    :class:`SpecDecodeCounts` (source "requests", ``label_sets`` = responses read).

    Raises ValueError for no response with a ``speculative_decoding`` section (the server needs
    ``--per-request-spec-decode-metrics summary`` or ``detailed``; n > 1 requests carry none;
    a stream carries it only with ``stream_options.include_usage``), a count not a whole
    number >= 0, a histogram the steps or accepted counts contradict, or responses of different
    ``num_spec_tokens``.
    """
    totals, hist, n = dict.fromkeys(_KEYS[:3], 0), [], 0  # steps, drafted, accepted
    gammas = set()
    for i, r in enumerate(responses, 1):
        sec = request_metrics(r)
        if sec is None:
            continue
        vals = {k: sec.get(k) for k in _KEYS[:3]}
        for k, v in vals.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"response {i}: speculative_decoding.{k} must be a whole "
                                 f"number >= 0, got {v!r}")
        h = sec.get("acceptance_histogram")
        if not isinstance(h, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                               and x >= 0 for x in h):
            raise ValueError(f"response {i}: acceptance_histogram must be a list of whole "
                             f"numbers >= 0, got {h!r}")
        if sum(h) != vals["num_spec_steps"] or \
                sum(j * x for j, x in enumerate(h)) != vals["num_accepted_draft_tokens"]:
            raise ValueError(f"response {i}: acceptance_histogram {h} disagrees with "
                             f"num_spec_steps {vals['num_spec_steps']} / "
                             f"num_accepted_draft_tokens {vals['num_accepted_draft_tokens']}")
        if "num_spec_tokens" in sec:
            gammas.add(sec["num_spec_tokens"])
        n += 1
        totals = {k: totals[k] + v for k, v in vals.items()}
        hist = [a + b for a, b in zip_longest(hist, h, fillvalue=0)]
    if not n:
        raise ValueError("no response with metrics.speculative_decoding (start vLLM with "
                         "--per-request-spec-decode-metrics summary (or detailed); requests "
                         "with n > 1 carry none; a streamed one carries it on its final usage "
                         "chunk, sent with stream_options {\"include_usage\": true})")
    if len(gammas) > 1:
        raise ValueError(f"the responses come from servers with different num_spec_tokens "
                         f"{sorted(gammas)}: read each server's responses on their own")
    per_pos = tuple(float(sum(hist[j] for j in range(i + 1, len(hist))))
                    for i in range(len(hist) - 1))
    return SpecDecodeCounts(*map(float, totals.values()), per_pos, n, "requests", False)
