"""Read vLLM's speculative-decoding counters (``/metrics``) into acceptance, and judge it.

Log lines and the offline example's printout are read in :mod:`specnb.vllm.logs`; one entry
point for every format is :func:`specnb.vllm.read.read_acceptance`.

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
from dataclasses import dataclass, field
from statistics import NormalDist

__all__ = [
    "COUNTERS", "PROMQL", "WATCH", "MIN_ACCEPTANCE_LENGTH",
    "EVIDENCE_HALF_WIDTH", "MIN_DRAFTS", "MAX_PLAUSIBLE_K", "TAIL_DRAFT_COST", "FORMATS",
    "drafts_unknown_sentence",
    "SpecDecodeCounts", "AcceptanceStats", "read_metrics", "metrics_delta",
    "acceptance_stats", "acceptance_length_advice", "acceptance_rate_ci", "best_draft_length",
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
#: can never exceed 2 and gamma cannot go lower, so there Leviathan et al.'s Corollary 3.9
#: decides (gamma 1 pays while the acceptance rate is above c; see
#: :func:`specnb.vllm.watch.gamma1_verdict` and :func:`acceptance_length_advice`).
MIN_ACCEPTANCE_LENGTH = 2.0
#: Half-width of the 95% interval on the acceptance rate below which a window supports a
#: verdict: 5 percentage points (our threshold; the same 5% ``specnb bench`` treats as noise).
EVIDENCE_HALF_WIDTH = 0.05
#: Drafts a window needs before its acceptance rate supports a verdict: the number of
#: independent trials at which the 95% interval at p = 0.5 (the widest) has half-width
#: :data:`EVIDENCE_HALF_WIDTH`: ceil(1.96^2 x 0.25 / 0.05^2) = 385. Drafts, not draft tokens,
#: are counted: acceptance inside one draft stops at the first rejection, so its tokens are
#: not independent trials.
MIN_DRAFTS = math.ceil(NormalDist().inv_cdf(0.975) ** 2 * 0.25 / EVIDENCE_HALF_WIDTH ** 2)
#: The largest ``num_speculative_tokens`` (k) assumed plausible when an input prints draft
#: tokens but no draft count (vLLM v0.8 lines ``Drafted: N tokens``) and no ``-k`` is given:
#: the N draft tokens are N / k drafts, at least N / 32. 32 is the largest k in vLLM's own
#: docs (suffix decoding, ``{"method": "suffix", "num_speculative_tokens": 32}``, suffix.md @
#: 05084858; ``../shared/reference/vllm.md``); the field reports here use 1-8. Such a window
#: counts as thin unless even N / 32 reaches :data:`MIN_DRAFTS`.
MAX_PLAUSIBLE_K = 32
#: Draft/target cost per forward assumed when none is measured, by the per-position tail rule
#: and the gamma-1 verdict (the advice says so and asks for the measured c): Leviathan et al.
#: (arXiv 2211.17192 v2), Definition 3.7: c "was always less than 0.05" in their experiments.
#: A costlier draft makes the best draft length shorter still.
TAIL_DRAFT_COST = 0.05

#: What to watch after launch: (what, where, act when). Sources: the article's checklist,
#: vLLM's metrics (``vllm/v1/spec_decode/metrics.py``), ``vllm bench serve`` keys, and vLLM's
#: per-request acceptance metrics (docs/features/speculative_decoding/acceptance_metrics.md @
#: 02cf515f; ``../shared/reference/vllm.md`` section 3.4). At gamma 1 the rule is Leviathan et
#: al.'s Corollary 3.9 (:func:`specnb.vllm.watch.gamma1_verdict`), not a fixed acceptance rate.
WATCH = (
    ("mean acceptance length", PROMQL["mean acceptance length"],
     f"below {MIN_ACCEPTANCE_LENGTH:g} at gamma >= 2: shrink num_speculative_tokens or change "
     "method (the article's checklist step 3). At gamma 1, tau = 1 + acceptance rate <= 2 "
     "always: it pays while the acceptance rate is above c (Corollary 3.9: "
     "(1 + alpha) / (1 + c) > 1); gamma1_verdict says whether a longer draft would pay"),
    ("per-position acceptance", PROMQL["per-position acceptance"],
     "the last positions near 0: those draft tokens are wasted work; lower gamma"),
    ("acceptance rate", PROMQL["acceptance rate"],
     "a drop after a traffic change (e.g. more chat, less code): retune"),
    ("TPOT p50/p99 (latency goal)", "vllm bench serve: median_tpot_ms, p99_tpot_ms",
     "no better than with speculation off: turn it off (judge TPOT, not ITL)"),
    ("output tokens/s at peak (throughput goal)", "vllm bench serve: output_throughput",
     "below the off run at the peak batch: turn it off or use dynamic speculation"),
    ("TTFT p99", "vllm bench serve: p99_ttft_ms",
     "a rise: find out why before blaming the draft (drafting in the prefill step, more "
     "queueing at the same load, different prompts)"),
    ("per-request acceptance",
     "--per-request-spec-decode-metrics summary|detailed: metrics.speculative_decoding in each "
     "response (mean_acceptance_length, draft_acceptance_rate; n == 1 only)",
     "some kinds of request accept far less than the average: the mean hides them, so look "
     "before changing gamma for everyone"),
)


def acceptance_length_advice(tau: float, gamma: int | None = None,
                             acceptance_rate: float | None = None,
                             c: float | None = None) -> tuple[str, str]:
    """The article's step-3 rule made to depend on gamma: ``(action, sentence)``.

    * gamma >= 2 (or unknown): tau below :data:`MIN_ACCEPTANCE_LENGTH` -> ``"shrink"`` (shrink
      num_speculative_tokens or change method), else ``"ok"``;
    * gamma = 1: tau = 1 + acceptance rate <= 2 always and gamma cannot go lower, so the
      article's rule cannot apply; Leviathan et al.'s Corollary 3.9 decides, through
      :func:`specnb.vllm.watch.gamma1_verdict`: ``"off"`` (acceptance rate <= c: no gamma
      pays; change method or turn speculation off), ``"grow"`` (it pays and a longer draft
      would pay more by Theorem 3.8: try it and measure) or ``"ok"`` (gamma 1 is the best).
      Without a measured ``c`` the verdict assumes :data:`TAIL_DRAFT_COST` (0.05, Leviathan et
      al. Definition 3.7) and says so.

    Parameters
    ----------
    tau : mean acceptance length (tokens per verification, bonus token included).
    gamma : num_speculative_tokens, or None when unknown.
    acceptance_rate : accepted / draft tokens (fraction); at gamma 1 it defaults to tau - 1.
    c : draft / target cost per forward (>= 0), used at gamma 1; None = not measured.

    Raises
    ------
    ValueError, TypeError
        at gamma 1: an acceptance rate outside [0, 1] or a negative ``c`` (as
        :func:`~specnb.vllm.watch.gamma1_verdict`).
    """
    if gamma == 1:
        from .watch import gamma1_verdict

        rate = tau - 1.0 if acceptance_rate is None else acceptance_rate
        action, sentence = gamma1_verdict(rate, TAIL_DRAFT_COST if c is None else c)
        if c is None:
            sentence += (f" (c not measured: {TAIL_DRAFT_COST:g} assumed, Leviathan et al. "
                         "Definition 3.7, where c was always below 0.05; pass the measured c)")
        return action, (f"{sentence}; at gamma 1, tau = 1 + acceptance rate <= 2, so the "
                        f"article's 'tau < {MIN_ACCEPTANCE_LENGTH:g}' rule does not apply")
    if tau < MIN_ACCEPTANCE_LENGTH:
        at = f" at gamma {gamma}" if gamma is not None else ""
        return "shrink", (f"mean acceptance length {tau:.2f} < {MIN_ACCEPTANCE_LENGTH:g}{at}: "
                          "shrink num_speculative_tokens or change method")
    most = f" (at most {gamma + 1} at gamma {gamma})" if gamma is not None else ""
    return "ok", (f"mean acceptance length {tau:.2f} >= {MIN_ACCEPTANCE_LENGTH:g}: each "
                  f"verification fixes {tau:.2f} tokens on average{most}")


def acceptance_rate_ci(accepted: float, draft_tokens: float, confidence: float = 0.95
                       ) -> tuple[float, float]:
    """Wilson score interval on the acceptance rate accepted / draft tokens.

    Uses ``scipy.stats.binomtest(...).proportion_ci(method="wilson")`` when SciPy is installed,
    else the same closed form (Wilson 1927, JASA 22: 209-212):
    ``(p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)``. Treats draft tokens as
    independent trials; they are not (acceptance stops at a draft's first rejection), so the
    true interval is wider: read it as a lower bound on the uncertainty.

    Parameters
    ----------
    accepted, draft_tokens : counts, 0 <= accepted <= draft_tokens, draft_tokens > 0 (whole
        numbers; log-derived counts are rounded).
    confidence : in (0, 1), default 0.95.

    Returns
    -------
    (low, high), fractions in [0, 1].

    Raises
    ------
    ValueError
        counts outside those ranges, NaN, or confidence outside (0, 1).
    """
    from .. import _check

    n = _check.scalar_real("draft_tokens", draft_tokens, lo=0.0)
    k = _check.scalar_real("accepted", accepted, lo=0.0)
    conf = _check.scalar_real("confidence", confidence, lo=0.0, hi=1.0)
    if n <= 0 or k > n or not 0 < conf < 1:
        raise ValueError(f"need 0 <= accepted <= draft_tokens, draft_tokens > 0 and confidence "
                         f"in (0, 1); got accepted={accepted!r}, draft_tokens={draft_tokens!r}, "
                         f"confidence={confidence!r}")
    n_i, k_i = int(round(n)), int(round(k))
    try:
        from scipy.stats import binomtest
    except ImportError:
        binomtest = None
    if binomtest is not None:
        ci = binomtest(k_i, n_i).proportion_ci(confidence_level=conf, method="wilson")
        return float(ci.low), float(ci.high)
    z = NormalDist().inv_cdf(0.5 + conf / 2)
    n_f = float(n_i)  # floats: 4 n^2 of a huge count overflows int -> float conversion
    p = k_i / n_i
    centre = p + z * z / (2 * n_f)
    half = z * math.sqrt(p * (1 - p) / n_f + z * z / (4 * n_f * n_f))
    den = 1 + z * z / n_f
    return max(0.0, (centre - half) / den), min(1.0, (centre + half) / den)


def best_draft_length(per_position, c: float = TAIL_DRAFT_COST) -> tuple[int, float]:
    """The draft length that pays best for measured per-position acceptance: (k, speedup).

    k maximises tau(k) / (1 + k c) over k = 0 .. len(per_position), with tau(k) = 1 + the sum
    of the first k per-position rates: Leviathan et al.'s cost model (arXiv 2211.17192 v2,
    Theorem 3.8: k draft forwards at c each plus one target forward per step) with the measured
    rates in place of the i.i.d. alpha; the AL(k) / time form vLLM's dynamic-SD manager uses.
    Acceptance is prefix-based, so the rate at a position does not depend on later positions
    and shortening the draft keeps the earlier rates. Ties go to the shorter draft.

    Parameters
    ----------
    per_position : sequence of fractions in [0, 1] (position 0 first).
    c : draft/target cost per forward, >= 0 (default :data:`TAIL_DRAFT_COST`).

    Returns
    -------
    (k, speedup): the best k (0 = speculation does not pay) and tau(k) / (1 + k c), an upper
    bound on the walltime gain (no batching or verification overhead).

    Raises
    ------
    ValueError
        a rate outside [0, 1] or NaN; c negative or NaN.
    """
    from .. import _check

    rates = [float(r) for r in _check.real("per_position", list(per_position), lo=0.0, hi=1.0)]
    c = _check.scalar_real("c", c, lo=0.0)
    best_k, best, tau = 0, 1.0, 1.0
    for k, r in enumerate(rates, 1):
        tau += r
        value = tau / (1 + k * c)
        if value > best + 1e-12:
            best_k, best = k, value
    return best_k, best


_V0_GAUGES = ("vllm:spec_decode_draft_acceptance_rate", "vllm:spec_decode_efficiency")


def drafts_unknown_sentence(draft_tokens: float) -> str:
    """What ``draft_tokens`` draft tokens say about the number of drafts when the input prints
    no draft count and no ``num_speculative_tokens`` (k) is given: N tokens are N / k drafts,
    shown for k = 1, 3, 5, 8 and :data:`MAX_PLAUSIBLE_K`. ``draft_tokens`` >= 0."""
    n = float(draft_tokens)
    ks = sorted({1, 3, 5, 8, MAX_PLAUSIBLE_K})
    shown = ", ".join(f"{n / k:,.0f} at k = {k}" for k in ks)
    return (f"{n:,.0f} draft tokens and no draft count in this input: the count needs "
            f"num_speculative_tokens k (drafts = draft tokens / k): {shown} (k assumed "
            f"1-{MAX_PLAUSIBLE_K})")


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


#: The inputs specnb reads, named in every "cannot read this" message.
FORMATS = ("a Prometheus /metrics scrape of a vLLM V1 server (vllm:spec_decode_*_total "
           "counters; one scrape, or a before/after pair), a vLLM log with 'SpecDecoding "
           "metrics:' lines (V1: current, v0.9, v0.8) or 'Speculative metrics:' lines (V0, with "
           "counts or rates only), or the printout of vLLM's "
           "examples/offline_inference/spec_decode.py (num_drafts: ..., num_draft_tokens: ...)")


def _parse_families(text: str):
    from prometheus_client.parser import text_string_to_metric_families

    try:
        return [s for fam in text_string_to_metric_families(text) for s in fam.samples]
    except Exception:  # the parser raises ValueError/IndexError/... on bad lines
        hint = (" (this looks like a Prometheus UI table with '|'; save the raw text of "
                "GET /metrics instead)" if "|" in text else "")
        raise ValueError(f"not a format specnb reads{hint}; it reads {FORMATS}") from None


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
    acceptance_rate_ci : 95% Wilson interval on the acceptance rate
        (:func:`acceptance_rate_ci`), or None without counts.

    ``mean_acceptance_length`` is NaN when the input prints no draft count and gamma is
    unknown (v0.8 log lines without ``-k``): tau needs k.
    """

    acceptance_rate: float
    mean_acceptance_length: float
    per_position: tuple
    num_speculative_tokens: int | None
    alpha: float | None
    counts: SpecDecodeCounts
    notes: tuple = field(default=())
    acceptance_rate_ci: tuple | None = None

    @property
    def thin(self) -> bool:
        """True when the window is too small for a verdict: fewer than :data:`MIN_DRAFTS`
        drafts; when the drafts are unknown (draft tokens only, no ``-k``), unless even the
        fewest drafts the tokens allow, draft tokens / :data:`MAX_PLAUSIBLE_K`, reach
        :data:`MIN_DRAFTS`; or no counts."""
        c = self.counts
        if c.drafts == c.drafts:
            return c.drafts < MIN_DRAFTS
        if c.draft_tokens == c.draft_tokens:
            return c.draft_tokens / MAX_PLAUSIBLE_K < MIN_DRAFTS
        return True

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
        if c.source == "log (V0, rates only)":
            where = ("not printed", "not printed", "not printed")
        elif c.source.startswith("log (V0"):
            where = ("log: draft tokens / k", "log: Number of draft tokens",
                     "log: emitted - steps")
        elif c.source == "offline printout":
            where = ("printout: num_drafts", "printout: num_draft_tokens",
                     "printout: num_accepted_tokens")
        elif c.source.startswith("log"):
            where = ("log: Drafted / k, or Accepted / (length - 1) (estimated)",
                     "log: Drafted: N tokens (lines summed)",
                     "log: Accepted: N tokens (lines summed)")
        else:
            where = ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
                     "vllm:spec_decode_num_accepted_tokens")
        rate_from = ("(system efficiency x (k + 1) - 1) / k" if c.source == "log (V0, rates only)"
                     else "accepted / draft tokens")
        tau_from = ("system efficiency x (k + 1)" if c.source == "log (V0, rates only)"
                    else "1 + accepted / drafts")
        ci = self.acceptance_rate_ci
        rows = [
            ("drafts (verification steps)", c.drafts, "steps", where[0]),
            ("draft tokens", c.draft_tokens, "tokens", where[1]),
            ("accepted tokens", c.accepted_tokens, "tokens", where[2]),
            ("acceptance rate", 100 * self.acceptance_rate, "%", rate_from),
            ("acceptance rate, 95% CI low", None if ci is None else 100 * ci[0], "%",
             "Wilson interval (tokens as independent trials)"),
            ("acceptance rate, 95% CI high", None if ci is None else 100 * ci[1], "%",
             "Wilson interval (tokens as independent trials)"),
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

    def advice(self, c: float | None = None) -> list[str]:
        """What these numbers say to do, most important first.

        1. No accepted token at all -> a misconfiguration (wrong method for the checkpoint, a
           draft with another tokenizer, a dummy or random-weight draft), not a tuning matter;
           nothing else is advised.
        2. A thin window (:attr:`thin`: fewer than :data:`MIN_DRAFTS` drafts) -> it cannot
           support a verdict; the 95% interval on the acceptance rate is given. With draft
           tokens but no draft count (v0.8 lines, no ``-k``): the drafts the tokens make at
           k = 1-:data:`MAX_PLAUSIBLE_K` and the largest k that would reach MIN_DRAFTS.
        3. :func:`acceptance_length_advice` at this gamma: the article's "tau below 2: shrink
           gamma" from gamma 2 on; at gamma 1 (where tau <= 2 always) Corollary 3.9 through
           :func:`specnb.vllm.watch.gamma1_verdict`: gamma 1 pays while the acceptance rate is
           above ``c`` (:data:`TAIL_DRAFT_COST` assumed, and said, without ``c``). Without tau
           (no draft count, no gamma): say that tau needs k.
        4. Per-position rates: when a shorter draft pays better, name it
           (:func:`best_draft_length` with ``c``, else :data:`TAIL_DRAFT_COST`), with the
           positions that do not pay and the rule.
        5. With ``c`` and gamma >= 2: Theorem 3.8 at this gamma and at the gamma that
           maximises it at the implied alpha (:func:`specnb.vllm.watch.theorem_advice`), with
           what Leviathan et al.'s Table 4 shows of the theorem against measurement (either
           side of it). At gamma 1 the verdict of item 3 already names the best gamma.

        Parameters
        ----------
        c : float or None
            Draft/target cost per forward (>= 0).

        Raises
        ------
        ValueError, TypeError
            ``c`` negative, NaN, infinite or not a single number.
        """
        from .. import _check

        if c is not None:
            c = _check.scalar_real("c", c, lo=0.0)
        counts = self.counts
        out = []
        if counts.accepted_tokens == 0:
            # V0 counts accepted = emitted - steps (prefix tokens); its own "accepted" count
            # also holds tokens after a rejection, so it can print 1 where no prefix was kept
            v0 = counts.source.startswith("log (V0")
            what = (f"no draft token was accepted as a prefix ({counts.draft_tokens:,.0f} "
                    "drafted; V0 may still print a few accepted tokens after a rejection, which "
                    "produce no output)" if v0 else
                    f"no draft token was accepted ({counts.draft_tokens:,.0f} drafted)")
            out.append(f"{what}: that "
                       "points to a misconfiguration, not to tuning -- a method that does not "
                       "match the draft checkpoint (e.g. an EAGLE head run as draft_model; check "
                       "it with `specnb config check`), a draft with another tokenizer or "
                       "vocabulary, or a dummy / random-weight draft")
        if self.thin:
            ci = self.acceptance_rate_ci
            if counts.drafts == counts.drafts:
                size = f"only {counts.drafts:,.0f} drafts in this window"
            elif counts.draft_tokens == counts.draft_tokens:
                size = drafts_unknown_sentence(counts.draft_tokens)
            else:
                size = None
            if size is None:
                out.append("this input prints no counts, so the window's size is unknown and it "
                           "cannot support a verdict; read a log with counts or scrape /metrics")
            else:
                interval = (f"; acceptance rate {100 * self.acceptance_rate:.1f}%, 95% CI "
                            f"{100 * ci[0]:.1f}-{100 * ci[1]:.1f}% (Wilson, tokens taken as "
                            "independent; the real interval is wider)" if ci else "")
                need = (f"{MIN_DRAFTS}, the drafts for a 95% interval of "
                        f"+-{100 * EVIDENCE_HALF_WIDTH:.0f} points on the acceptance rate")
                if counts.drafts == counts.drafts:
                    out.append(f"{size} (< {need}): it cannot support a verdict{interval}; "
                               "measure a longer window")
                else:
                    k_ok = math.floor(counts.draft_tokens / MIN_DRAFTS)
                    out.append(f"{size}; a verdict needs {need}, which these tokens reach "
                               + (f"only if k <= {k_ok}" if k_ok >= 1 else "at no k")
                               + f"; without k the window cannot support a verdict{interval}; "
                               "pass -k for the draft count, or measure a longer window")
        if counts.accepted_tokens == 0:
            return out
        tau = self.mean_acceptance_length
        if tau != tau:
            out.append(f"acceptance rate {100 * self.acceptance_rate:.1f}%; the mean acceptance "
                       "length tau needs the number of drafts, which this input does not print: "
                       "pass num_speculative_tokens (-k) to get drafts = draft tokens / k and tau")
        else:
            out.append(acceptance_length_advice(tau, self.num_speculative_tokens,
                                                 self.acceptance_rate, c)[1])
        k = self.num_speculative_tokens
        if self.per_position and k:
            cost = TAIL_DRAFT_COST if c is None else c
            best, gain = best_draft_length(self.per_position, cost)
            if best < len(self.per_position):
                tail = self.per_position[best:]
                where = (f"positions {best + 1}-{len(self.per_position)}" if len(tail) > 1
                         else f"position {best + 1}")
                rates = ", ".join(f"{100 * r:.1f}%" for r in tail)
                src = ("measured c" if c is not None else
                       "c = 0.05, Leviathan et al. Definition 3.7's bound; pass your c")
                if best == 0:
                    what = "no draft length pays: turn speculation off or change method"
                else:
                    what = f"consider num_speculative_tokens = {best} (now {k})"
                out.append(f"draft {where} of {len(self.per_position)} are accepted in only "
                           f"{rates} of steps: {what}. Rule: the k that maximises "
                           f"(1 + sum of the first k per-position rates) / (1 + k c) "
                           f"(Leviathan et al. Theorem 3.8's cost model with measured "
                           f"per-position rates; {src}), {gain:.2f}x at k = {best}")
            else:
                last = self.per_position[-1]
                out.append(f"the last draft position is accepted in {100 * last:.1f}% of steps; "
                           f"every position pays at c = {cost:g}")
        if c is not None and self.alpha is not None and k and k > 1:
            from .watch import theorem_advice

            out.append(theorem_advice(self.alpha, k, c))
        return out

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

    ``counts.drafts`` may be NaN with ``drafts_estimated=True`` (unknown: v0.8 log lines print
    no draft count; elsewhere NaN is refused). With
    ``num_speculative_tokens`` the drafts are then draft tokens / gamma (every step drafted
    gamma tokens, noted); without it only the acceptance rate is known and tau is NaN.
    """
    from .. import _check
    from ..theory import alpha_from_acceptance_length

    if not isinstance(counts, SpecDecodeCounts):
        raise TypeError(f"counts must be a SpecDecodeCounts, got {type(counts).__name__}")
    for name in ("draft_tokens", "accepted_tokens"):
        _check.real(f"counts.{name}", getattr(counts, name), lo=0.0)
    if counts.drafts_estimated and isinstance(counts.drafts, float) and math.isnan(counts.drafts):
        if counts.draft_tokens <= 0:
            raise ValueError("no speculation in this window (draft tokens=0); vLLM reports no "
                             "acceptance then")
        if counts.accepted_tokens > counts.draft_tokens:
            raise ValueError(f"accepted tokens ({counts.accepted_tokens:g}) exceed draft tokens "
                             f"({counts.draft_tokens:g}): the counts are inconsistent")
        if num_speculative_tokens is None:
            rate = counts.accepted_tokens / counts.draft_tokens
            return AcceptanceStats(
                rate, math.nan, (), None, None, counts,
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
    else:
        derived = None
    _check.real("counts.drafts", counts.drafts, lo=0.0)
    _check.real("counts.accepted_per_position", list(counts.accepted_per_position), lo=0.0)
    if counts.accepted_tokens > counts.draft_tokens:  # before "no speculation": 0 drafted
        raise ValueError(f"accepted tokens ({counts.accepted_tokens:g}) exceed draft tokens "
                         f"({counts.draft_tokens:g}): the counts are inconsistent (scrapes of "
                         "different servers, or counters edited by hand)")
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
    notes = [derived] if derived else []
    rate = counts.accepted_tokens / counts.draft_tokens
    tau = 1.0 + counts.accepted_tokens / counts.drafts
    per_pos = tuple(x / counts.drafts for x in counts.accepted_per_position)
    if counts.drafts_estimated and not derived:
        notes.append("drafts estimated from log lines (they print no draft count)")
    if "V0" in counts.source:
        notes.append("V0 log: accepted = emitted - steps (prefix-accepted drafts); V0's own "
                     "printed acceptance rate also counts tokens after a rejection")
    gamma = None
    # The counts bound gamma from below: a step drafts at most gamma tokens, and vLLM keeps
    # one per-position series per draft position. Drafts read from log lines are estimated
    # from a rounded tau, hence the slack there.
    ratio = counts.draft_tokens / counts.drafts
    if ratio > _check.MAX_EXACT_INT:
        raise ValueError(f"the counts are inconsistent: draft tokens / drafts = "
                         f"{counts.draft_tokens:g} / {counts.drafts:g} = {ratio:.3g} tokens per "
                         "step is no draft length (counters damaged or edited by hand)")
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
    ci = acceptance_rate_ci(counts.accepted_tokens, counts.draft_tokens)
    return AcceptanceStats(rate, tau, per_pos, gamma, alpha, counts, tuple(notes), ci)
