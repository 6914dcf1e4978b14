"""Read vLLM's speculative-decoding counters (``/metrics``) into acceptance numbers: from the
V1 counters :data:`COUNTERS` (``vllm/v1/spec_decode/metrics.py`` @ ``ee4ceaae``; the
``SpecDecodingProm`` docstring, ``vllm bench serve`` @ ``009e6d4a``) the acceptance rate
(accepted / draft tokens, a fraction), tau (1 + accepted / drafts), per-position acceptance
(per_pos[i] / drafts) and the alpha they imply. The ``_total`` sample names are matched exactly,
so ``_created`` and ``_per_pos`` series never mix in; label sets are summed.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from itertools import zip_longest
from statistics import NormalDist


from .. import _check

__all__ = ["COUNTERS", "PROMQL", "FORMATS", "SpecDecodeCounts", "AcceptanceStats", "UsageError",
           "read_metrics", "read_metrics_lines", "metrics_delta", "acceptance_stats",
           "acceptance_rate_ci"]


class UsageError(ValueError):
    """A ValueError about how the inputs or options were given (their number or mix, a
    ``num_speculative_tokens`` the input's own per-position series rule out), not about what
    the inputs hold; its message starts with "usage: ". ``specnb metrics`` exits 2 for it."""

#: Exposed sample names of vLLM's V1 spec-decode counters: verification steps with drafts,
#: draft tokens proposed, accepted, accepted per position (label ``position``).
COUNTERS = {
    "drafts": "vllm:spec_decode_num_drafts_total",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "accepted_tokens": "vllm:spec_decode_num_accepted_tokens_total",
    "accepted_per_position": "vllm:spec_decode_num_accepted_tokens_per_pos_total",
}
#: PromQL for a dashboard, from the ``SpecDecodingProm`` docstring with its one slip fixed:
#: the docstring divides by ``vllm:spec_decode_num_drafts`` without ``_total``, a series that
#: does not exist (the exposed counter is ``..._num_drafts_total``).
PROMQL = {
    "acceptance rate": "rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / "
                       "rate(vllm:spec_decode_num_draft_tokens_total[5m])",
    "mean acceptance length": "1 + rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / "
                              "rate(vllm:spec_decode_num_drafts_total[5m])",
    "per-position acceptance": "sum by (position) (rate(vllm:spec_decode_num_accepted_tokens_"
                               "per_pos_total[5m])) / ignoring(position) group_left "
                               "sum(rate(vllm:spec_decode_num_drafts_total[5m]))",
}


def acceptance_rate_ci(accepted: float, draft_tokens: float, confidence: float = 0.95
                       ) -> tuple[float, float]:
    """Wilson score interval (low, high), fractions in [0, 1], on accepted / draft tokens
    (Wilson 1927, JASA 22: 209-212; scipy's ``binomtest(...).proportion_ci(method="wilson")``).
    Draft tokens are taken as independent trials, which they are not (a draft stops at its first
    rejection): read it as a lower bound on the uncertainty. ``accepted``, ``draft_tokens``:
    counts, 0 <= accepted <= draft_tokens, draft_tokens > 0 (rounded to whole numbers);
    ``confidence`` in (0, 1). Raises ValueError outside those ranges or for NaN."""
    from .. import _check

    n = _check.scalar_real("draft_tokens", draft_tokens, lo=0.0)
    k = _check.scalar_real("accepted", accepted, lo=0.0)
    conf = _check.scalar_real("confidence", confidence, lo=0.0, hi=1.0)
    if n <= 0 or k > n or not 0 < conf < 1:
        raise ValueError(f"need 0 <= accepted <= draft_tokens, draft_tokens > 0 and confidence "
                         f"in (0, 1); got accepted={accepted!r}, draft_tokens={draft_tokens!r}, "
                         f"confidence={confidence!r}")
    n_i, k_i = int(round(n)), int(round(k))
    z = NormalDist().inv_cdf(0.5 + conf / 2)
    n_f = float(n_i)  # floats: 4 n^2 of a huge count overflows int -> float conversion
    p = k_i / n_i
    centre = p + z * z / (2 * n_f)
    half = z * math.sqrt(p * (1 - p) / n_f + z * z / (4 * n_f * n_f))
    den = 1 + z * z / n_f
    return max(0.0, (centre - half) / den), min(1.0, (centre + half) / den)


@dataclass(frozen=True)
class SpecDecodeCounts:
    """Spec-decode counter values (one scrape, a window between two, or summed log lines).

    Attributes
    ----------
    drafts : verification steps with draft tokens (vLLM's ``num_drafts``).
    draft_tokens, accepted_tokens : tokens proposed / accepted.
    accepted_per_position : accepted count at draft position 0, 1, ... (may be empty).
    label_sets : how many label sets (engines, models) were summed.
    source : where the numbers came from ("metrics", "metrics window", "log").
    drafts_estimated : True when ``drafts`` was derived (log lines print no draft count).
    """

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    accepted_per_position: tuple = ()
    label_sets: int = 1
    source: str = "metrics"
    drafts_estimated: bool = False

    def __sub__(self, before: "SpecDecodeCounts") -> "SpecDecodeCounts":
        """The counts of the window ``before`` -> ``self``; ValueError when a counter went
        down (the server restarted between the scrapes, or the files are swapped)."""
        if not isinstance(before, SpecDecodeCounts):
            return NotImplemented
        delta = {k: getattr(self, k) - getattr(before, k)
                 for k in ("drafts", "draft_tokens", "accepted_tokens")}
        per_pos = tuple(x - y for x, y in zip_longest(
            self.accepted_per_position, before.accepted_per_position, fillvalue=0.0))
        bad = [k for k, v in delta.items() if v < 0] + (
            ["accepted_per_position"] if any(v < 0 for v in per_pos) else [])
        if bad:
            raise ValueError(f"counter(s) {', '.join(bad)} decreased between the two scrapes: "
                             "the server restarted in between, or before/after are swapped")
        return SpecDecodeCounts(*delta.values(), per_pos, max(self.label_sets, before.label_sets),
                                "metrics window", self.drafts_estimated or before.drafts_estimated)


#: Gauges only a V0 server exposes (named in the "no counters" message).
_V0_GAUGES = ("vllm:spec_decode_draft_acceptance_rate", "vllm:spec_decode_efficiency")

#: Every input ``specnb metrics`` reads (its ``--help``), named in "not a format" errors.
FORMATS = ("a Prometheus /metrics scrape of a vLLM V1 server (vllm:spec_decode_*_total "
           "counters; one scrape, or a before/after pair), a vLLM log with 'SpecDecoding "
           "metrics:' lines (V1: current, v0.9, v0.8) or 'Speculative metrics:' lines (V0, with "
           "counts or rates only), the printout of vLLM's "
           "examples/offline_inference/spec_decode.py (num_drafts: ..., num_draft_tokens: ...), "
           "vLLM response bodies with metrics.speculative_decoding (JSON lines, or a streamed "
           "response saved by curl -N: 'data: {...}' lines), an SGLang server log with 'accept "
           "len' lines or SGLang responses with meta_info (spec_verify_ct), or a llama-server "
           "log with 'draft acceptance' lines")


#: Characters of a scrape parsed at a time by :func:`_samples` (cut at a line end).
_PARSE_BLOCK = 1 << 20


def _text_blocks(text: str):
    """``text`` in pieces of a little over :data:`_PARSE_BLOCK` characters, each cut after a
    line end (the last as it ends)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + _PARSE_BLOCK)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def _line_blocks(numbered):
    """The text of the lines of ``(line number, line)`` pairs, newline-ended, in the pieces
    :func:`_text_blocks` cuts their joined text into (so either reads the same samples)."""
    buf, size = [], 0
    for _, line in numbered:
        buf.append(line)
        size += len(line) + 1
        if size > _PARSE_BLOCK:
            yield "\n".join(buf) + "\n"
            buf, size = [], 0
    if buf:
        yield "\n".join(buf) + "\n"


def _samples(blocks):
    """The samples of Prometheus text given in ``blocks`` (pieces cut at line ends), parsed a
    block at a time and yielded as parsed, so that a reader that sums them holds one block, not
    every sample (a family cut between two blocks parses as two: the samples, names and labels
    are the same). prometheus_client's parser reads each block, with the plain sample lines
    read by :func:`_plain_lines` first. Raises ValueError (not a format specnb reads) for text
    the parser refuses."""
    from prometheus_client.parser import text_string_to_metric_families

    blocks = iter(blocks)
    for block in blocks:
        text, runs = _plain_lines(block)
        try:
            got = [s for fam in text_string_to_metric_families(text) for s in fam.samples]
        except Exception:  # the parser raises ValueError/IndexError/... on bad lines
            table = "|" in block or any("|" in b for b in blocks)
            hint = (" (this looks like a Prometheus UI table with '|'; save the raw text of "
                    "GET /metrics instead)" if table else "")
            raise ValueError(f"not a format specnb reads{hint}; it reads {FORMATS}") from None
        if len(got) != len(runs):  # cannot happen (one sample a sample line); parse it all
            yield from (s for fam in text_string_to_metric_families(block) for s in fam.samples)
            continue
        for sample, run in zip(got, runs):
            yield from (sample,) if run is None else run


#: A plain sample line: a name ending in ``_total``, labels of ``name="value"`` (the name not
#: reserved, ``__``; no escape or quote in the value), one space, a decimal value, no timestamp.
_LABEL = r'(?:[a-zA-Z][a-zA-Z0-9_]*|_[a-zA-Z0-9][a-zA-Z0-9_]*)="[^"\\]*"'
_PLAIN = re.compile(rf'([a-zA-Z_:][a-zA-Z0-9_:]*_total)\{{((?:{_LABEL},)*{_LABEL})\}} '
                    r'([0-9]+(?:\.[0-9]+)?)')
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\]*)"')


def _plain_lines(block: str):
    """``block`` for prometheus_client's parser with its plain sample lines (:data:`_PLAIN`)
    read here, ~10 times faster than the parser reads them (a scrape of millions of series).

    Returns (text, runs): ``text`` is ``block`` with each run of consecutive plain lines of
    one name (blank lines between dropped) put as one line ``NAME 0``, and ``runs`` has one
    entry a sample line of ``text``: None (the parser's sample stands) or the run's samples.
    The parser's samples of ``text`` are then those of ``block``, in order, with each
    placeholder's standing for its run: a sample line changes the parser's state (which family
    the next lines join) only through its name, the same for every line of a run and for its
    placeholder; a name ending in ``_total`` is never renamed (the parser appends ``_total``
    to a counter's samples only when its family's name lacks it, and a sample joins the
    family only under that name); and a plain line is one the parser reads without error, to
    the labels and value given here (an int when the text is one, as the parser gives it).
    Label sets with a repeated name are left to the parser (which refuses them).
    """
    from prometheus_client.samples import Sample

    out, runs, name = [], [], None
    for line in block.split("\n"):
        m = _PLAIN.fullmatch(line)
        if m:
            pairs = _PAIR.findall(m.group(2))
            labels = dict(pairs)
            if len(labels) == len(pairs):
                value = m.group(3)  # the parser's _parse_value: int() when it reads, else float()
                value = float(value) if "." in value else int(value)
                sample = Sample(m.group(1), labels, value, None)
                if sample.name == name:
                    runs[-1].append(sample)
                else:
                    name = sample.name
                    out.append(f"{name} 0")
                    runs.append([sample])
                continue
        stripped = line.strip()
        if not stripped:
            continue  # the parser skips blank lines
        out.append(line)
        name = None
        if not stripped.startswith("#"):
            runs.append(None)
    return "\n".join(out) + "\n", runs


def read_metrics(text: str, model_name: str | None = None) -> SpecDecodeCounts:
    """Read one ``/metrics`` scrape (``text``: the body of ``GET /metrics``) into spec-decode
    counts, summed across label sets (engines under data parallelism); ``model_name``: keep only
    series with this ``model_name`` label (None: all).

    Raises
    ------
    TypeError
        ``text`` is not a string.
    ValueError
        empty or not Prometheus text; no ``vllm:spec_decode_*_total`` counters (speculation
        off, a V0 server, or not vLLM); a counter that is negative, NaN or infinite; a series
        (name and labels) that appears twice, which one exposition never holds (two scrapes
        in one file: summing them would double the counts); ``model_name`` matches no series
        (the message lists the names).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (the /metrics body), got {type(text).__name__}")
    if not text.strip():
        raise ValueError("text is empty: no /metrics scrape to read (save the body of GET "
                         "/metrics from the vLLM server)")
    return _read_samples(_samples(_text_blocks(text)), model_name)


def read_metrics_lines(numbered, model_name: str | None = None) -> SpecDecodeCounts:
    """:func:`read_metrics` of a scrape given as ``(line number, line)`` pairs (a streamed
    file's kept lines, :meth:`specnb._stream.Scan.kept`), folded as they come: memory one parse
    block plus O(series). Raises ValueError as :func:`read_metrics` (no line: "not a vLLM
    scrape")."""
    return _read_samples(_samples(_line_blocks(numbered)), model_name)


def _digest(key: str) -> bytes:
    """A 16-byte digest (BLAKE2b) of a label set's key (the repr of its sorted labels), held
    in its place: a scrape of millions of series is then remembered in ~80 B a series, not
    ~500 B (two label sets share a digest with probability ~n^2 / 2^129: never, at any size a
    file has). A series' key is its label set's digest, a byte for its counter and its
    position label (``=`` and the value; nothing when it has none)."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


#: One byte a counter, in the series keys of :func:`_read_samples`.
_WHAT = {k: bytes([i]) for i, k in enumerate(COUNTERS)}


def _read_samples(samples, model_name):
    """The counts of :func:`read_metrics` from its parsed ``samples`` (an iterator)."""
    names_seen, v0 = set(), False
    totals = {"drafts": 0.0, "draft_tokens": 0.0, "accepted_tokens": 0.0}
    per_pos: dict[int, float] = {}
    found, label_sets, series = set(), set(), set()
    by_name = {v: k for k, v in COUNTERS.items()}
    for s in samples:
        what = by_name.get(s.name)
        v0 = v0 or s.name in _V0_GAUGES
        if what is not None and "model_name" in s.labels:
            names_seen.add(s.labels["model_name"])
        if what is None or (model_name is not None and s.labels.get("model_name") != model_name):
            continue
        if not _check.finite(s.value) or s.value < 0:
            shown = ",".join(f'{k}="{v}"' for k, v in s.labels.items())
            raise ValueError(f"{s.name}{{{shown}}} is {str(s.value)[:40]}: a counter is a "
                             "finite count >= 0; the scrape is damaged or was edited by hand")
        label_set = _digest(repr(sorted(kv for kv in s.labels.items() if kv[0] != "position")))
        position = s.labels.get("position")  # the series: counter, labels but position, position
        key = label_set + _WHAT[what] + (b"" if position is None else b"=" + position.encode(
            "utf-8", "surrogatepass"))
        if key in series:
            shown = ",".join(f'{k}="{v}"' for k, v in s.labels.items())
            raise ValueError(f"{s.name}{{{shown}}} appears twice: one /metrics scrape holds each "
                             "series once, so this file holds two scrapes (pasted or appended); "
                             "give each scrape its own file (before, after)")
        series.add(key)
        found.add(what)
        label_sets.add(label_set)
        if what == "accepted_per_position":
            try:
                pos = int(s.labels["position"])
            except (KeyError, ValueError):
                raise ValueError(f"{s.name} sample without an integer position label: "
                                 f"{s.labels}") from None
            per_pos[pos] = per_pos.get(pos, 0.0) + s.value
        else:
            totals[what] += s.value
    if model_name is not None and model_name not in names_seen:
        raise ValueError(f"model_name {model_name!r} matches no spec-decode series; the "
                         f"scrape has {sorted(map(str, names_seen)) or 'no model_name labels'}")
    missing = [COUNTERS[k] for k in totals if k not in found]
    if missing:
        raise ValueError(
            f"no {', '.join(missing)} in this scrape: "
            + ("it is a V0 server (it exposes vllm:spec_decode_draft_acceptance_rate); V0 "
               "counted acceptance differently" if v0 else
               "speculative decoding is off on this server, or this is not a vLLM /metrics "
               "scrape (the counters exist only when --speculative-config is set)"))
    return SpecDecodeCounts(*totals.values(), tuple(per_pos.get(i, 0.0) for i in range(
        max(per_pos, default=-1) + 1)), len(label_sets), "metrics")


def metrics_delta(before: str, after: str, model_name: str | None = None) -> SpecDecodeCounts:
    """Counts of the window between two ``/metrics`` scrapes, ``read(after) - read(before)``, as
    ``vllm bench serve`` takes them (traffic from other clients included). Raises ValueError as
    :func:`read_metrics`, or for a counter that decreased (restart between scrapes, or swapped).
    """
    return _delta(before, after, model_name, read_metrics)


def _delta(before, after, model_name, read) -> SpecDecodeCounts:
    """:func:`metrics_delta` with ``read(scrape, model_name)`` reading each (after first)."""
    return read(after, model_name) - read(before, model_name)


# --------------------------------------------------------------------------- statistics
#: (source prefix, where its drafts, draft tokens and accepted tokens come from), first match.
_WHERE = (
    ("log (V0, rates only)", ("not printed",) * 3),
    ("log (V0", ("log: draft tokens / k", "log: Number of draft tokens", "log: emitted - steps")),
    ("requests", ("responses: num_spec_steps", "responses: num_draft_tokens",
                  "responses: num_accepted_draft_tokens")),
    ("offline printout", ("printout: num_drafts", "printout: num_draft_tokens",
                          "printout: num_accepted_tokens")),
    ("log", ("log: Drafted / k, or Accepted / (length - 1) (estimated)",
             "log: Drafted: N tokens (lines summed)", "log: Accepted: N tokens (lines summed)")),
    ("", ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
          "vllm:spec_decode_num_accepted_tokens")),
)
@dataclass(frozen=True)
class AcceptanceStats:
    """Acceptance read off spec-decode counts.

    Attributes
    ----------
    acceptance_rate : accepted / draft tokens, a fraction in [0, 1] (vLLM prints it x 100).
    mean_acceptance_length : tau = 1 + accepted / drafts, tokens per verification; NaN when the
        input prints no draft count and gamma is unknown (v0.8 log lines without ``-k``).
    per_position : per-position acceptance, fractions (position 0 first).
    num_speculative_tokens : gamma used for alpha (given, or inferred), or None.
    alpha : the i.i.d. acceptance rate that gives tau at gamma through Leviathan et al.'s
        Eq. 1 (:func:`specnb.theory.alpha_from_acceptance_length`), or None without gamma.
    counts : the :class:`SpecDecodeCounts` these come from.
    notes : caveats (estimated drafts, gamma inferred...).
    acceptance_rate_ci : 95% Wilson interval on the acceptance rate
        (:func:`acceptance_rate_ci`), or None without counts.
    """

    acceptance_rate: float
    mean_acceptance_length: float
    per_position: tuple
    num_speculative_tokens: int | None
    alpha: float | None
    counts: SpecDecodeCounts
    notes: tuple = field(default=())
    acceptance_rate_ci: tuple | None = None

    def to_frame(self, formatted: bool = False):
        """One row per quantity: name, value, unit, from (the counter or formula used); values
        numeric (None where unknown), or with ``formatted`` text as ``specnb metrics`` prints
        them (counts whole with thousands separators, % and tokens/step to 2 decimals, alpha to
        3; "-" where unknown)."""
        import pandas as pd

        c = self.counts
        where = next((w for prefix, w in _WHERE if c.source.startswith(prefix)), _WHERE[-1][1])
        if c.source.startswith("engine"):
            where = (f"{c.source}: steps", f"{c.source}: drafted", f"{c.source}: accepted")
        rate_from, tau_from = (
            ("(system efficiency x (k + 1) - 1) / k", "system efficiency x (k + 1)")
            if c.source == "log (V0, rates only)" else
            ("accepted / draft tokens", "1 + accepted / drafts"))
        ci = self.acceptance_rate_ci
        rows = [
            ("drafts (verification steps)", c.drafts, "steps", where[0]),
            ("draft tokens", c.draft_tokens, "tokens", where[1]),
            ("accepted tokens", c.accepted_tokens, "tokens", where[2]),
            ("acceptance rate", 100 * self.acceptance_rate, "%", rate_from),
            *((f"acceptance rate, 95% CI {end}", None if ci is None else 100 * ci[i], "%",
               "Wilson interval (tokens as independent trials)")
              for i, end in enumerate(("low", "high"))),
            ("mean acceptance length (tau)", self.mean_acceptance_length, "tokens/step",
             tau_from),
            ("num_speculative_tokens (gamma)", self.num_speculative_tokens, "tokens",
             "given or inferred"),
            ("implied alpha", self.alpha, "", "Eq. 1 inverted at gamma"),
        ]
        table = pd.DataFrame(rows, columns=["quantity", "value", "unit", "from"])
        if formatted:
            digits = {"steps": 0, "tokens": 0, "%": 2, "tokens/step": 2, "": 3}
            table["value"] = [("-" if v is None or v != v else f"{v:,.{digits[u]}f}")
                              for v, u in zip(table["value"], table["unit"])]
        return table

    def per_position_frame(self):
        """Per-position acceptance: position, rate (fraction), count."""
        import pandas as pd

        return pd.DataFrame({"position": range(len(self.per_position)),
                             "acceptance": list(self.per_position),
                             "accepted": list(self.counts.accepted_per_position)})

    def __str__(self) -> str:
        pos = ", ".join(f"{100 * p:.2f}" for p in self.per_position)
        tau = self.mean_acceptance_length
        lines = [f"acceptance rate         {100 * self.acceptance_rate:.2f} %",
                 f"mean acceptance length  " + (f"{tau:.2f}" if tau == tau else
                                                "- (needs num_speculative_tokens)")]
        if pos:
            lines.append(f"per-position (%)        {pos}")
        if self.alpha is not None:
            lines.append(f"implied alpha           {self.alpha:.3f} "
                         f"(gamma = {self.num_speculative_tokens})")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def acceptance_stats(counts: SpecDecodeCounts, num_speculative_tokens: int | None = None
                     ) -> AcceptanceStats:
    """Acceptance rate, mean acceptance length, per-position rates and implied alpha.

    ``counts``: from :func:`read_metrics`, :func:`metrics_delta` or :func:`log_counts`;
    ``num_speculative_tokens``: gamma, the configured draft length, or None (inferred from the
    number of per-position series, else from draft tokens / drafts when whole; else ``alpha`` is
    None). Returns :class:`AcceptanceStats`.

    Raises
    ------
    TypeError
        ``counts`` not a SpecDecodeCounts; a count not a number; ``num_speculative_tokens`` not
        an integer.
    ValueError
        no drafts or no draft tokens in the window (nothing was speculated); a count that is
        negative, NaN or infinite; accepted tokens above draft tokens, a per-position count
        above the drafts or above the position before's (inconsistent counts); gamma < 1; a ``num_speculative_tokens`` the
        counts contradict (draft tokens above gamma x drafts, or more per-position series than
        gamma; the message names the gamma the data implies); a tau above gamma + 1.
    UsageError
        (a ValueError) ``num_speculative_tokens`` above the number of per-position series when
        the input has them: vLLM exports exactly one per draft position, so they give k.

    ``counts.drafts`` may be NaN with ``drafts_estimated=True`` (v0.8 log lines print no draft
    count; elsewhere NaN is refused): with ``num_speculative_tokens`` the drafts are then draft
    tokens / gamma (noted), without it only the acceptance rate is known and tau is NaN.
    """
    from .. import _check
    from ..theory import alpha_from_acceptance_length

    if not isinstance(counts, SpecDecodeCounts):
        raise TypeError(f"counts must be a SpecDecodeCounts, got {type(counts).__name__}")
    for name in ("draft_tokens", "accepted_tokens"):
        _check.real(f"counts.{name}", getattr(counts, name), lo=0.0)
    derived = None
    if counts.drafts_estimated and isinstance(counts.drafts, float) and math.isnan(counts.drafts):
        if counts.draft_tokens <= 0:
            raise ValueError("no speculation in this window (draft tokens=0); vLLM reports no "
                             "acceptance then")
        if counts.accepted_tokens > counts.draft_tokens:
            raise ValueError(f"accepted tokens ({counts.accepted_tokens:g}) exceed draft tokens "
                             f"({counts.draft_tokens:g}): the counts are inconsistent")
        if num_speculative_tokens is None:  # the acceptance rate alone
            return AcceptanceStats(
                counts.accepted_tokens / counts.draft_tokens, math.nan, (), None, None, counts,
                ("the input prints no number of drafts (vLLM v0.8 log lines), so tau = 1 + "
                 "accepted / drafts needs num_speculative_tokens (-k): drafts = draft tokens / k",),
                acceptance_rate_ci(counts.accepted_tokens, counts.draft_tokens))
        k = _check.scalar_int("num_speculative_tokens", num_speculative_tokens, lo=1)
        counts = SpecDecodeCounts(counts.draft_tokens / k, counts.draft_tokens,
                                  counts.accepted_tokens, counts.accepted_per_position,
                                  counts.label_sets, counts.source, True)
        derived = (f"drafts = draft tokens / k = {counts.draft_tokens:,.0f} / {k} = "
                   f"{counts.drafts:,.2f} (the input prints no draft count; assumes every step "
                   "drafted k tokens)")
    # counts vLLM could have written: some speculation, accepted <= drafted, each position
    # accepted at most once per draft
    _check.real("counts.drafts", counts.drafts, lo=0.0)
    _check.real("counts.accepted_per_position", list(counts.accepted_per_position), lo=0.0)
    if counts.accepted_tokens > counts.draft_tokens:  # before "no speculation": 0 drafted
        raise ValueError(f"accepted tokens ({counts.accepted_tokens:g}) exceed draft tokens "
                         f"({counts.draft_tokens:g}): the counts are inconsistent (scrapes of "
                         "different servers, or counters edited by hand)")
    if counts.drafts <= 0 or counts.draft_tokens <= 0:
        raise ValueError(f"no speculation in this window (drafts={counts.drafts:g}, draft "
                         f"tokens={counts.draft_tokens:g}); vLLM reports no acceptance then")
    over = [i for i, x in enumerate(counts.accepted_per_position) if x > counts.drafts]
    if over:
        raise ValueError(f"accepted at position {over[0]} "
                         f"({counts.accepted_per_position[over[0]]:g}) exceeds the drafts "
                         f"({counts.drafts:g}): a position is accepted at most once per draft; "
                         "the counts are inconsistent")
    app = counts.accepted_per_position
    up = [i for i in range(1, len(app)) if app[i] > app[i - 1] * (1 + 1e-9)]
    if up:  # a draft token is accepted only after every one before it in its draft
        i = up[0]
        raise ValueError(f"accepted at position {i} ({app[i]:g}) exceeds position {i - 1} "
                         f"({app[i - 1]:g}): a draft token is accepted only when every one "
                         "before it is, so the per-position counts cannot rise; the counts "
                         "are inconsistent")
    notes = [derived] if derived else []
    rate = counts.accepted_tokens / counts.draft_tokens
    tau = 1.0 + counts.accepted_tokens / counts.drafts
    per_pos = tuple(x / counts.drafts for x in counts.accepted_per_position)
    if counts.drafts_estimated and not derived:
        notes.append("drafts estimated from log lines (they print no draft count)")
    if counts.drafts_estimated and counts.accepted_per_position and abs(
            sum(counts.accepted_per_position) - counts.accepted_tokens) >= 0.5:
        notes.append(f"per-position accepted counts are estimates, the printed rates x the "
                     f"drafts: they sum to {sum(counts.accepted_per_position):,.0f}, not the "
                     f"{counts.accepted_tokens:,.0f} accepted tokens")
    elif counts.accepted_per_position and abs(
            sum(counts.accepted_per_position) - counts.accepted_tokens) >= 0.5:
        notes.append(f"the per-position accepted counts sum to "
                     f"{sum(counts.accepted_per_position):,.0f}, not the "
                     f"{counts.accepted_tokens:,.0f} accepted tokens: vLLM counts the same "
                     "tokens in both (v1/spec_decode/metrics.py), so the series come from "
                     "different windows or servers; tau uses the accepted-tokens counter")
    if "V0" in counts.source:
        notes.append("V0 log: accepted = emitted - steps (prefix-accepted drafts); V0's own "
                     "printed acceptance rate also counts tokens after a rejection")
    gamma = _gamma_of(counts, num_speculative_tokens, per_pos, notes)
    alpha = alpha_from_acceptance_length(tau, gamma) if gamma is not None else None
    ci = acceptance_rate_ci(counts.accepted_tokens, counts.draft_tokens)
    return AcceptanceStats(rate, tau, per_pos, gamma, alpha, counts, tuple(notes), ci)


def _gamma_of(counts, num_speculative_tokens, per_pos, notes):
    """gamma: given (checked against the counts: a step drafts at most gamma tokens, one
    per-position series per draft position), else inferred from the per-position series or draft
    tokens / drafts (None when neither says); appends what it did to ``notes``."""
    from .. import _check

    gamma = None
    ratio = counts.draft_tokens / counts.drafts
    if ratio > _check.MAX_EXACT_INT:
        raise ValueError(f"the counts are inconsistent: draft tokens / drafts = "
                         f"{counts.draft_tokens:g} / {counts.drafts:g} = {ratio:.3g} tokens per "
                         "step is no draft length (counters damaged or edited by hand)")
    slack = 1.01 if counts.drafts_estimated else 1.0 + 1e-9  # log drafts: from a rounded tau
    if num_speculative_tokens is not None:
        gamma = _check.scalar_int("num_speculative_tokens", num_speculative_tokens, lo=1)
        implied = []
        if ratio > gamma * slack:
            implied.append(f"draft tokens / drafts = {counts.draft_tokens:,.0f} / "
                           f"{counts.drafts:,.0f} = {ratio:.2f} tokens per step")
        if len(per_pos) > gamma:
            implied.append(f"{len(per_pos)} per-position series (positions 0-{len(per_pos) - 1})")
        if per_pos and gamma > len(per_pos):  # vLLM's series (and log rates) record k itself
            n = len(per_pos)
            raise UsageError(
                f"usage: -k / num_speculative_tokens={gamma} is above the {n} per-position "
                f"series in the input (positions 0-{n - 1}): vLLM exports one per draft "
                f"position, so the server ran with num_speculative_tokens={n}; give -k {n} "
                "or omit it")
        if implied:
            least = max(len(per_pos), math.ceil(ratio / slack))
            raise ValueError(
                f"num_speculative_tokens={gamma} contradicts the counts: "
                f"{' and '.join(implied)} imply gamma >= {least}; a step drafts at most gamma "
                f"tokens. Give the server's num_speculative_tokens (here at least {least}), or "
                "omit it to infer gamma")
    elif per_pos:
        gamma = len(per_pos)
        notes.append(f"gamma = {gamma} inferred from the per-position series")
    elif math.isclose(ratio, round(ratio)) and round(ratio) >= 1:
        gamma = int(round(ratio))
        notes.append(f"gamma = {gamma} inferred from draft tokens / drafts")
    else:
        notes.append("gamma unknown (draft tokens / drafts is not whole): pass "
                     "num_speculative_tokens to get alpha")
    if gamma is not None and ratio > gamma * slack:  # inferred from per-position series
        raise ValueError(
            f"the counts are inconsistent: draft tokens / drafts = {ratio:.2f} tokens per step "
            f"exceeds the {gamma} per-position series (gamma = {gamma}); a step drafts at most "
            "gamma tokens (scrapes of different servers, or counters edited by hand)")
    if gamma is not None and not math.isclose(counts.draft_tokens, gamma * counts.drafts):
        notes.append(f"draft tokens != gamma x drafts ({counts.draft_tokens:,.0f} vs "
                     f"{gamma * counts.drafts:,.0f}): some steps drafted fewer tokens (structured "
                     "output, dynamic depth), so alpha is approximate")
    return gamma
