"""Read vLLM's speculative-decoding counters (``/metrics``) and log lines into acceptance.

vLLM V1 exposes four Prometheus counters per engine (``vllm/v1/spec_decode/metrics.py`` @
``ee4ceaae``; ``_total`` and ``_created`` series come from prometheus_client):

* ``vllm:spec_decode_num_drafts_total`` -- verification steps that had draft tokens;
* ``vllm:spec_decode_num_draft_tokens_total`` -- draft tokens proposed;
* ``vllm:spec_decode_num_accepted_tokens_total`` -- draft tokens accepted;
* ``vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}`` -- steps that accepted
  at least i + 1 drafts (acceptance is prefix-based, so these sum to the accepted tokens).

From them (the ``SpecDecodingProm`` docstring, and ``vllm bench serve`` @ ``009e6d4a``):

* acceptance rate = accepted / draft tokens (a fraction here; vLLM prints it in %);
* mean acceptance length tau = 1 + accepted / drafts (bonus token included);
* per-position acceptance = per_pos[i] / drafts;
* the alpha they imply: Leviathan et al.'s Eq. 1 inverted at gamma = num_speculative_tokens
  (:func:`specnb.theory.alpha_from_acceptance_length`).

Parsing uses :func:`prometheus_client.parser.text_string_to_metric_families` and matches the
four ``_total`` sample names exactly, so the ``_created`` timestamps and the ``_per_pos``
series that share the name prefixes are never mixed in. Counters are summed across label
sets (data-parallel engines). A before/after pair gives the counts of the window between them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

__all__ = [
    "COUNTERS", "PROMQL", "WATCH", "MIN_ACCEPTANCE_LENGTH", "MIN_ACCEPTANCE_RATE_GAMMA_1",
    "SpecDecodeCounts", "AcceptanceStats", "read_metrics", "metrics_delta",
    "read_spec_decode_log", "log_counts", "acceptance_stats", "acceptance_length_advice",
]

#: Exposed sample names of vLLM's V1 spec-decode counters.
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

#: The article's threshold (checklist step 3): below 2 tokens per verification, shrink gamma
#: or change method. It applies from gamma = 2 on: at gamma = 1, tau = 1 + acceptance rate
#: can never exceed 2 and gamma cannot go lower (see :func:`acceptance_length_advice`).
MIN_ACCEPTANCE_LENGTH = 2.0
#: The bar at gamma = 1, where tau cannot reach 2: the acceptance rate. 0.5 is the i.i.d.
#: alpha at which tau = (1 - alpha^(gamma+1)) / (1 - alpha) tends to the article's 2 as gamma
#: grows, so it is the same bar expressed per token.
MIN_ACCEPTANCE_RATE_GAMMA_1 = 0.5

#: What to watch after launch: (what, where, act when). Sources: the article's checklist,
#: vLLM's metrics (``vllm/v1/spec_decode/metrics.py``) and ``vllm bench serve`` keys.
WATCH = (
    ("mean acceptance length", PROMQL["mean acceptance length"],
     f"below {MIN_ACCEPTANCE_LENGTH:g} at gamma >= 2: shrink num_speculative_tokens or change "
     f"method (at gamma 1, tau <= 2 always: judge by the acceptance rate, below "
     f"{MIN_ACCEPTANCE_RATE_GAMMA_1:.0%} change method, above it try a larger gamma)"),
    ("per-position acceptance", PROMQL["per-position acceptance"],
     "the last positions near 0: those draft tokens are wasted work; lower gamma"),
    ("acceptance rate", PROMQL["acceptance rate"],
     "a drop after a traffic change (e.g. more chat, less code): retune"),
    ("TPOT p50/p99 (latency goal)", "vllm bench serve: median_tpot_ms, p99_tpot_ms",
     "no better than with speculation off: turn it off (judge TPOT, not ITL)"),
    ("output tokens/s at peak (throughput goal)", "vllm bench serve: output_throughput",
     "below the off run at the peak batch: turn it off or use dynamic speculation"),
    ("TTFT p99", "vllm bench serve: p99_ttft_ms", "a rise: the draft adds prefill work"),
)

def acceptance_length_advice(tau: float, gamma: int | None = None,
                             acceptance_rate: float | None = None) -> tuple[str, str]:
    """The article's step-3 rule made to depend on gamma: ``(action, sentence)``.

    * gamma >= 2 (or unknown): tau below :data:`MIN_ACCEPTANCE_LENGTH` -> ``"shrink"`` (shrink
      num_speculative_tokens or change method), else ``"ok"``;
    * gamma = 1: tau = 1 + acceptance rate <= 2 always and gamma cannot go lower, so the rule
      is judged by the acceptance rate: below :data:`MIN_ACCEPTANCE_RATE_GAMMA_1` ->
      ``"change"`` (a better method, or turn speculation off), else ``"grow"`` (the drafter is
      good: try a larger num_speculative_tokens and measure).

    Parameters
    ----------
    tau : mean acceptance length (tokens per verification, bonus token included).
    gamma : num_speculative_tokens, or None when unknown.
    acceptance_rate : accepted / draft tokens (fraction); at gamma 1 it defaults to tau - 1.
    """
    if gamma == 1:
        rate = tau - 1.0 if acceptance_rate is None else acceptance_rate
        head = (f"acceptance rate {100 * rate:.1f}% at gamma 1 (there tau = 1 + acceptance "
                f"rate <= 2, so the 'tau < {MIN_ACCEPTANCE_LENGTH:g}' rule does not apply)")
        if rate < MIN_ACCEPTANCE_RATE_GAMMA_1:
            return "change", (f"{head}: below {MIN_ACCEPTANCE_RATE_GAMMA_1:.0%} and gamma cannot "
                              "go lower: change method (a better drafter) or turn speculation "
                              "off if TPOT / throughput does not improve")
        return "grow", (f"{head}: the drafter is usually right; try a larger "
                        "num_speculative_tokens (e.g. 2-4) and compare TPOT / throughput")
    if tau < MIN_ACCEPTANCE_LENGTH:
        at = f" at gamma {gamma}" if gamma is not None else ""
        return "shrink", (f"mean acceptance length {tau:.2f} < {MIN_ACCEPTANCE_LENGTH:g}{at}: "
                          "shrink num_speculative_tokens or change method")
    most = f" (at most {gamma + 1} at gamma {gamma})" if gamma is not None else ""
    return "ok", (f"mean acceptance length {tau:.2f} >= {MIN_ACCEPTANCE_LENGTH:g}: each "
                  f"verification fixes {tau:.2f} tokens on average{most}")


_V0_GAUGES = ("vllm:spec_decode_draft_acceptance_rate", "vllm:spec_decode_efficiency")


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
        """The counts of the window ``before`` -> ``self`` (counter deltas).

        Raises
        ------
        ValueError
            a counter went down (the server restarted between the scrapes, or the files are
            swapped).
        """
        if not isinstance(before, SpecDecodeCounts):
            return NotImplemented
        n = max(len(self.accepted_per_position), len(before.accepted_per_position))
        a = list(self.accepted_per_position) + [0.0] * (n - len(self.accepted_per_position))
        b = list(before.accepted_per_position) + [0.0] * (n - len(before.accepted_per_position))
        delta = {
            "drafts": self.drafts - before.drafts,
            "draft_tokens": self.draft_tokens - before.draft_tokens,
            "accepted_tokens": self.accepted_tokens - before.accepted_tokens,
        }
        per_pos = tuple(x - y for x, y in zip(a, b))
        bad = [k for k, v in delta.items() if v < 0] + (
            ["accepted_per_position"] if any(v < 0 for v in per_pos) else [])
        if bad:
            raise ValueError(f"counter(s) {', '.join(bad)} decreased between the two scrapes: "
                             "the server restarted in between, or before/after are swapped")
        return SpecDecodeCounts(delta["drafts"],
                                delta["draft_tokens"], delta["accepted_tokens"], per_pos,
                                max(self.label_sets, before.label_sets), "metrics window",
                                self.drafts_estimated or before.drafts_estimated)


def _parse_families(text: str):
    from prometheus_client.parser import text_string_to_metric_families

    try:
        return [s for fam in text_string_to_metric_families(text) for s in fam.samples]
    except Exception as exc:  # the parser raises ValueError/IndexError/... on bad lines
        hint = (" (this looks like a Prometheus UI table with '|'; save the raw text of "
                "GET /metrics instead)" if "|" in text else "")
        raise ValueError(f"not Prometheus text exposition format: {exc}{hint}") from None


def read_metrics(text: str, model_name: str | None = None) -> SpecDecodeCounts:
    """Read one ``/metrics`` scrape (Prometheus text) into spec-decode counts.

    Parameters
    ----------
    text : str
        The body of ``GET /metrics`` from a vLLM server.
    model_name : str or None
        Keep only series whose ``model_name`` label equals this; None keeps all.

    Returns
    -------
    SpecDecodeCounts, summed across label sets (engines under data parallelism).

    Raises
    ------
    TypeError
        ``text`` is not a string.
    ValueError
        empty or not Prometheus text; no ``vllm:spec_decode_*_total`` counters (speculation
        off, a V0 server, or not vLLM); a counter that is negative, NaN or infinite;
        ``model_name`` matches no series (the message lists the names).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (the /metrics body), got {type(text).__name__}")
    if not text.strip():
        raise ValueError("text is empty: no /metrics scrape to read (save the body of GET "
                         "/metrics from the vLLM server)")
    samples = _parse_families(text)
    names_seen = {s.labels.get("model_name") for s in samples
                  if s.name in COUNTERS.values() and "model_name" in s.labels}
    if model_name is not None and model_name not in names_seen:
        raise ValueError(f"model_name {model_name!r} matches no spec-decode series; the "
                         f"scrape has {sorted(map(str, names_seen)) or 'no model_name labels'}")
    totals = {"drafts": 0.0, "draft_tokens": 0.0, "accepted_tokens": 0.0}
    per_pos: dict[int, float] = {}
    found = set()
    label_sets = set()
    by_name = {v: k for k, v in COUNTERS.items()}
    for s in samples:
        what = by_name.get(s.name)
        if what is None:
            continue
        if model_name is not None and s.labels.get("model_name") != model_name:
            continue
        if not math.isfinite(s.value) or s.value < 0:
            shown = ",".join(f'{k}="{v}"' for k, v in s.labels.items())
            raise ValueError(f"{s.name}{{{shown}}} is {s.value!r}: a counter is a finite count "
                             ">= 0; the scrape is damaged or was edited by hand")
        found.add(what)
        labels = {k: v for k, v in s.labels.items() if k != "position"}
        label_sets.add(tuple(sorted(labels.items())))
        if what == "accepted_per_position":
            try:
                pos = int(s.labels["position"])
            except (KeyError, ValueError):
                raise ValueError(f"{s.name} sample without an integer position label: "
                                 f"{s.labels}") from None
            per_pos[pos] = per_pos.get(pos, 0.0) + s.value
        else:
            totals[what] += s.value
    missing = [COUNTERS[k] for k in ("drafts", "draft_tokens", "accepted_tokens")
               if k not in found]
    if missing:
        v0 = any(s.name in _V0_GAUGES for s in samples)
        raise ValueError(
            f"no {', '.join(missing)} in this scrape: "
            + ("it is a V0 server (it exposes vllm:spec_decode_draft_acceptance_rate); V0 "
               "counted acceptance differently" if v0 else
               "speculative decoding is off on this server, or this is not a vLLM /metrics "
               "scrape (the counters exist only when --speculative-config is set)"))
    n = max(per_pos) + 1 if per_pos else 0
    return SpecDecodeCounts(totals["drafts"], totals["draft_tokens"], totals["accepted_tokens"],
                            tuple(per_pos.get(i, 0.0) for i in range(n)), len(label_sets),
                            "metrics")


def metrics_delta(before: str, after: str, model_name: str | None = None) -> SpecDecodeCounts:
    """Counts of the window between two ``/metrics`` scrapes: ``read(after) - read(before)``.

    This is what ``vllm bench serve`` does (it scrapes before and after the run); traffic from
    other clients during the window is included.

    Raises
    ------
    ValueError
        as :func:`read_metrics`, or a counter decreased (restart between scrapes, or swapped).
    """
    return read_metrics(after, model_name) - read_metrics(before, model_name)


# --------------------------------------------------------------------------- log lines
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


def _float(s):
    return float("nan") if s == "nan" else float(s)


def _parse_v1(line: str, lineno: int):
    body = line.split("SpecDecoding metrics:", 1)[1]
    got = {k: r.search(body) for k, r in _RE.items()}
    need = ["mean_acceptance_length", "accepted", "drafted"]
    missing = [k for k in need if not got[k]]
    if missing:
        raise ValueError(f"line {lineno}: SpecDecoding line without {', '.join(missing)}: "
                         f"{line.strip()[:120]}")
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
    fmt = "current" if got["avg_rate"] else ("older" if got["old_rate"] else "current")
    printed = got["avg_rate"] or got["old_rate"]
    accepted, drafted = int(got["accepted"].group(1)), int(got["drafted"].group(1))
    al = _float(got["mean_acceptance_length"].group(1))
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
        "acceptance_rate": (_float(printed.group(1)) / 100) if printed else
        (accepted / drafted if drafted else float("nan")),
        "per_position": rates, "num_speculative_tokens": k,
        "speculative_depth": int(got["depth"].group(1)) if got["depth"] else None,
        "drafts": drafts, "emitted": None,
    }


def _parse_v0(line: str, lineno: int):
    m = _V0.search(line)
    if not m:
        raise ValueError(f"line {lineno}: V0 'Speculative metrics' line not understood: "
                         f"{line.strip()[:120]}")
    rate, eff, k, acc, draft, emitted = m.groups()
    k, draft, emitted = int(k), int(draft), int(emitted)
    if k < 1:
        raise ValueError(f"line {lineno}: 'Number of speculative tokens: {k}' must be >= 1: "
                         f"{line.strip()[:120]}")
    steps = draft / k
    return {
        "line": lineno, "format": "v0",
        "mean_acceptance_length": emitted / steps if steps else float("nan"),
        "accepted": int(acc), "drafted": draft, "acceptance_rate": _float(rate),
        "per_position": [], "num_speculative_tokens": k, "speculative_depth": None,
        "drafts": steps, "emitted": emitted, "system_efficiency": _float(eff),
    }


def read_spec_decode_log(text: str, strict: bool = True):
    """Parse vLLM's spec-decode log lines into a DataFrame, one row per line.

    Formats (``SpecDecodingLogging.log``, ``vllm/v1/spec_decode/metrics.py``):

    * current: ``SpecDecoding metrics: Mean acceptance length: 4.50, Accepted throughput: ...
      tokens/s, Drafted throughput: ... tokens/s, Accepted: N tokens, Drafted: M tokens,
      Per-position acceptance rate: 0.762, ..., Avg Draft acceptance rate: 43.7%`` (extra
      fields such as ``Current speculative depth`` are tolerated);
    * older V1 (v0.9): ``SpecDecoding metrics: Draft acceptance rate: 61.0%, Mean acceptance
      length: 2.83, Accepted: N tokens, Drafted: M tokens, Per-position acceptance rate: ...``;
    * V0: ``Speculative metrics: Draft acceptance rate: 0.642, System efficiency: 0.598,
      Number of speculative tokens: 3, Number of accepted tokens: ..., Number of draft
      tokens: ..., Number of emitted tokens: ...``. V0's acceptance rate also counts tokens
      after a rejection; the mean acceptance length here is emitted / steps (steps = draft
      tokens / k), which equals V0's system efficiency x (k + 1).

    V1 lines cover one logging interval each (the logger resets after printing). They print
    no draft count; ``drafts`` is drafted / k (k = number of per-position rates) when that
    reproduces the printed length, else accepted / (length - 1) from the rounded length.

    Parameters
    ----------
    text : str
        Log text; lines without these markers are ignored (any prefix is fine).
    strict : bool
        Raise on a marked line that cannot be read (True), or skip it (False; the skipped line
        numbers are in ``df.attrs["skipped"]``).

    Returns
    -------
    pandas.DataFrame with columns line, format, mean_acceptance_length, accepted, drafted,
    acceptance_rate (fraction), per_position (list), num_speculative_tokens, speculative_depth,
    drafts, emitted (V0 only), system_efficiency (V0 only).

    Raises
    ------
    ValueError
        no spec-decode line at all; an unreadable marked line when ``strict``.
    """
    import pandas as pd

    if not isinstance(text, str):
        raise TypeError(f"text must be a str (log text), got {type(text).__name__}")
    rows, skipped, first_error = [], [], ""
    for i, line in enumerate(text.splitlines(), 1):
        try:
            if "SpecDecoding metrics:" in line:
                rows.append(_parse_v1(line, i))
            elif "Speculative metrics:" in line:
                rows.append(_parse_v0(line, i))
        except ValueError as exc:
            if strict:
                raise
            skipped.append(i)
            first_error = first_error or str(exc)
    if not rows:
        raise ValueError("no 'SpecDecoding metrics:' or 'Speculative metrics:' line "
                         + (f"could be read (unreadable lines: {skipped}; {first_error})"
                            if skipped else "found"))
    cols = ["line", "format", "mean_acceptance_length", "accepted", "drafted",
            "acceptance_rate", "per_position", "num_speculative_tokens", "speculative_depth",
            "drafts", "emitted", "system_efficiency"]
    df = pd.DataFrame(rows).reindex(columns=cols)
    df.attrs["skipped"] = skipped
    return df


def log_counts(text: str, strict: bool = True) -> SpecDecodeCounts:
    """Spec-decode counts from log text: V1 lines summed (each covers one interval).

    A log with only V0 lines uses the last one (V0 counters are cumulative since start), with
    accepted tokens = emitted - steps (prefix-accepted drafts, so tau matches V0's efficiency).

    Raises
    ------
    ValueError
        as :func:`read_spec_decode_log`.
    """
    return _counts_from_log(read_spec_decode_log(text, strict=strict))


def _counts_from_log(df) -> SpecDecodeCounts:
    """:func:`log_counts` of a frame :func:`read_spec_decode_log` already returned."""
    v1 = df[df["format"] != "v0"]
    if len(v1):
        drafts = float(v1["drafts"].fillna(0).sum())
        k = int(max((len(p) for p in v1["per_position"]), default=0))
        per_pos = [0.0] * k
        for rates, d in zip(v1["per_position"], v1["drafts"].fillna(0)):
            for i, r in enumerate(rates):
                per_pos[i] += r * d
        return SpecDecodeCounts(drafts, float(v1["drafted"].sum()),
                                float(v1["accepted"].sum()), tuple(per_pos), 1, "log", True)
    last = df.iloc[-1]
    steps = float(last["drafts"])
    return SpecDecodeCounts(steps, float(last["drafted"]), float(last["emitted"]) - steps, (),
                            1, "log (V0, cumulative)", False)


# --------------------------------------------------------------------------- statistics
@dataclass(frozen=True)
class AcceptanceStats:
    """Acceptance read off spec-decode counts.

    Attributes
    ----------
    acceptance_rate : accepted / draft tokens, a fraction in [0, 1] (vLLM prints it x 100).
    mean_acceptance_length : tau = 1 + accepted / drafts, tokens per verification.
    per_position : per-position acceptance, fractions (position 0 first).
    num_speculative_tokens : gamma used for alpha (given, or inferred), or None.
    alpha : the i.i.d. acceptance rate that gives tau at gamma through Leviathan et al.'s
        Eq. 1 (:func:`specnb.theory.alpha_from_acceptance_length`), or None without gamma.
    counts : the :class:`SpecDecodeCounts` these come from.
    notes : caveats (estimated drafts, gamma inferred...).
    """

    acceptance_rate: float
    mean_acceptance_length: float
    per_position: tuple
    num_speculative_tokens: int | None
    alpha: float | None
    counts: SpecDecodeCounts
    notes: tuple = field(default=())

    def to_frame(self, formatted: bool = False):
        """One row per quantity: name, value, unit, from (the counter or formula used).

        Parameters
        ----------
        formatted : bool
            False: numeric values (None where unknown). True: values as text the way
            ``specnb metrics`` prints them (counts as whole numbers with thousands separators,
            % and tokens/step to 2 decimals, alpha to 3; "-" where unknown).
        """
        import pandas as pd

        c = self.counts
        if c.source.startswith("log (V0"):
            where = ("log: draft tokens / k", "log: Number of draft tokens",
                     "log: emitted - steps")
        elif c.source.startswith("log"):
            where = ("log: Drafted / k, or Accepted / (length - 1) (estimated)",
                     "log: Drafted: N tokens (lines summed)",
                     "log: Accepted: N tokens (lines summed)")
        else:
            where = ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
                     "vllm:spec_decode_num_accepted_tokens")
        rows = [
            ("drafts (verification steps)", c.drafts, "steps", where[0]),
            ("draft tokens", c.draft_tokens, "tokens", where[1]),
            ("accepted tokens", c.accepted_tokens, "tokens", where[2]),
            ("acceptance rate", 100 * self.acceptance_rate, "%", "accepted / draft tokens"),
            ("mean acceptance length (tau)", self.mean_acceptance_length, "tokens/step",
             "1 + accepted / drafts"),
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

    def advice(self, c: float | None = None) -> list[str]:
        """What these numbers say to do (article checklist, step 3; theory with ``c``).

        The first line is :func:`acceptance_length_advice` at this gamma: the article's
        "tau below 2: shrink gamma" from gamma 2 on; at gamma 1 (where tau <= 2 always) a
        judgement on the acceptance rate, suggesting a larger gamma when it is high.

        Parameters
        ----------
        c : float or None
            Draft/target cost per forward; with it, the gamma that maximises Theorem 3.8 at the
            implied alpha is suggested (:func:`specnb.theory.optimal_gamma`).

        Raises
        ------
        ValueError, TypeError
            ``c`` negative, NaN, infinite or not a single number.
        """
        from .. import _check
        from ..theory import optimal_gamma, walltime_speedup

        if c is not None:
            c = _check.scalar_real("c", c, lo=0.0)
        out = [acceptance_length_advice(self.mean_acceptance_length,
                                        self.num_speculative_tokens, self.acceptance_rate)[1]]
        if self.per_position:
            last = self.per_position[-1]
            out.append(f"the last draft position is accepted in {100 * last:.1f}% of steps")
        if c is not None and self.alpha is not None and self.num_speculative_tokens:
            g, best = optimal_gamma(self.alpha, c)
            k = self.num_speculative_tokens
            now = walltime_speedup(self.alpha, k, c)
            head = f"at alpha {self.alpha:.3f} and c {c:g}, Theorem 3.8 gives {now:.2f}x at gamma {k}"
            if g == k:
                out.append(f"{head}, already the best gamma (an upper bound; measure)")
            elif g == 0:
                out.append(f"{head}; no gamma beats plain decoding (alpha <= c): turn it off")
            else:
                out.append(f"{head} and at most {best:.2f}x at gamma {g} (upper bounds; "
                           "measure)")
        return out

    def __str__(self) -> str:
        pos = ", ".join(f"{100 * p:.2f}" for p in self.per_position)
        lines = [f"acceptance rate         {100 * self.acceptance_rate:.2f} %",
                 f"mean acceptance length  {self.mean_acceptance_length:.2f}"]
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

    Parameters
    ----------
    counts : SpecDecodeCounts
        From :func:`read_metrics`, :func:`metrics_delta` or :func:`log_counts`.
    num_speculative_tokens : int or None
        gamma, the configured draft length. None infers it from the number of per-position
        series, else from draft tokens / drafts when that is a whole number; without it
        ``alpha`` is None.

    Returns
    -------
    AcceptanceStats

    Raises
    ------
    TypeError
        ``counts`` is not a SpecDecodeCounts.
    ValueError
        no drafts or no draft tokens in the window (nothing was speculated); a count that is
        negative, NaN or infinite; accepted tokens above draft tokens, or a per-position count
        above the drafts (inconsistent counts); gamma < 1; a ``num_speculative_tokens`` the
        counts contradict (draft tokens above gamma x drafts, or more per-position series than
        gamma; the message names the gamma the data implies); a tau above gamma + 1.
    TypeError
        a count that is not a number; ``num_speculative_tokens`` not an integer.
    """
    from .. import _check
    from ..theory import alpha_from_acceptance_length

    if not isinstance(counts, SpecDecodeCounts):
        raise TypeError(f"counts must be a SpecDecodeCounts, got {type(counts).__name__}")
    for name in ("drafts", "draft_tokens", "accepted_tokens"):
        _check.real(f"counts.{name}", getattr(counts, name), lo=0.0)
    _check.real("counts.accepted_per_position", list(counts.accepted_per_position), lo=0.0)
    if counts.drafts <= 0 or counts.draft_tokens <= 0:
        raise ValueError(f"no speculation in this window (drafts={counts.drafts:g}, draft "
                         f"tokens={counts.draft_tokens:g}); vLLM reports no acceptance then")
    if counts.accepted_tokens > counts.draft_tokens:
        raise ValueError(f"accepted tokens ({counts.accepted_tokens:g}) exceed draft tokens "
                         f"({counts.draft_tokens:g}): the counts are inconsistent (scrapes of "
                         "different servers, or counters edited by hand)")
    over = [i for i, x in enumerate(counts.accepted_per_position) if x > counts.drafts]
    if over:
        raise ValueError(f"accepted at position {over[0]} "
                         f"({counts.accepted_per_position[over[0]]:g}) exceeds the drafts "
                         f"({counts.drafts:g}): a position is accepted at most once per draft; "
                         "the counts are inconsistent")
    notes = []
    rate = counts.accepted_tokens / counts.draft_tokens
    tau = 1.0 + counts.accepted_tokens / counts.drafts
    per_pos = tuple(x / counts.drafts for x in counts.accepted_per_position)
    if counts.drafts_estimated:
        notes.append("drafts estimated from log lines (they print no draft count)")
    if "V0" in counts.source:
        notes.append("V0 log: accepted = emitted - steps (prefix-accepted drafts); V0's own "
                     "printed acceptance rate also counts tokens after a rejection")
    gamma = None
    # The counts bound gamma from below: a step drafts at most gamma tokens, and vLLM keeps
    # one per-position series per draft position. Drafts read from log lines are estimated
    # from a rounded tau, hence the slack there.
    ratio = counts.draft_tokens / counts.drafts
    slack = 1.01 if counts.drafts_estimated else 1.0 + 1e-9
    if num_speculative_tokens is not None:
        gamma = _check.scalar_int("num_speculative_tokens", num_speculative_tokens, lo=1)
        implied = []
        if ratio > gamma * slack:
            implied.append(f"draft tokens / drafts = {counts.draft_tokens:,.0f} / "
                           f"{counts.drafts:,.0f} = {ratio:.2f} tokens per step")
        if len(per_pos) > gamma:
            implied.append(f"{len(per_pos)} per-position series (positions 0-{len(per_pos) - 1})")
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
    else:
        if math.isclose(ratio, round(ratio)) and round(ratio) >= 1:
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
        notes.append(f"draft tokens != gamma x drafts ({counts.draft_tokens:g} vs "
                     f"{gamma * counts.drafts:g}): some steps drafted fewer tokens (structured "
                     "output, dynamic depth), so alpha is approximate")
    alpha = alpha_from_acceptance_length(tau, gamma) if gamma is not None else None
    return AcceptanceStats(rate, tau, per_pos, gamma, alpha, counts, tuple(notes))
