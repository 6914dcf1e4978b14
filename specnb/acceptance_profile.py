"""Acceptance profiles: vLLM's speculative-decoding counters by gamma, task and context, as a
replay of a request log writes them (``specnb replay --out``) and ``specnb plan`` /
``specnb simulate`` read them (``--acceptance-profile``), so that acceptance follows the context
and the task mix instead of one scalar.

Counters carry vLLM's own names (``vllm:spec_decode_*`` in ``/metrics``; ``SpecDecodingStats``
in ``vllm/v1/spec_decode/metrics.py``):

* ``num_drafts`` -- verifications that had at least one draft token;
* ``num_draft_tokens`` -- draft tokens proposed (a draft may be shorter than gamma: n-gram and
  suffix near a request's end, or when fewer tokens match);
* ``num_accepted_tokens`` -- draft tokens accepted;
* ``num_accepted_tokens_per_pos`` -- length gamma: drafts whose position i (0-based) was
  accepted;

plus specnb's own:

* ``num_steps`` -- decode sequence-steps (one per request per engine step after its prefill),
  drafting or not, so ``proposal_rate = num_drafts / num_steps`` (M of
  :mod:`specnb.serving.workload`);
* ``num_draft_tokens_per_pos`` -- length gamma: drafts that had a token at position i, so the
  conditional rate at i divides by the drafts that reached i with a token there.

Derived: ``tau = 1 + num_accepted_tokens / num_drafts`` (vLLM's mean acceptance length, per
draft); ``acceptance_rates[i] = accepted_per_pos[i] / accepted_per_pos[i-1]`` restricted to
drafts with a token at i (``accepted_per_pos[-1]`` means ``num_drafts``), i.e. the probability
that position i is accepted given that position i-1 was (not vLLM's unconditional per-position
rate, accepted at i / drafts, which ``specnb metrics`` prints and ``plan --acceptance-rates``
reads); ``acceptance_rate = accepted / draft tokens`` (vLLM's acceptance rate, as ``specnb
metrics`` names it: not Leviathan's alpha, and lower than it at gamma > 1 and when drafts are
shorter than gamma); ``implied_alpha`` = the alpha for which Eq. 1 at gamma gives tau
(:func:`specnb.theory.alpha_from_acceptance_length`: what ``plan --alpha`` means). Profiles
written before trial 5 carry ``alpha`` for the acceptance rate; :func:`load` ignores derived
fields, so they read unchanged.

The file (JSON, ``format: specnb-acceptance-profile``, ``version: 1``)::

    {"format": "specnb-acceptance-profile", "version": 1,
     "method": "ngram",                 # vLLM's method name
     "runner": "v2",                    # the model runner whose proposer was stepped:
                                        # "v2" (vLLM 0.33's default for ngram), "v1" (suffix;
                                        # ngram with VLLM_USE_V2_MODEL_RUNNER=0), null (a
                                        # draft model's profile); absent in a file written
                                        # before trial 8a: read as "v1" for ngram / suffix
     "params": {"prompt_lookup_min": 2, "prompt_lookup_max": 5},   # the method's settings
     "source": {"log": "requests.jsonl", "requests": 500, "skipped": 0, "tokenizer": "...",
                "context_range": [120, 2480]},   # the steps' contexts, min and max
     "gammas": [1, 3, 5],
     "context_edges": [2000, 8000, 32000],   # bucket i = [edge[i-1], edge[i]); first [0, e0);
                                              # last [e_last, inf)
     "tasks": ["chat", "code"],
     "entries": [{"gamma": 3, "task": null, "context": null,   # null = all
                  "num_requests": 500, "num_steps": ..., "num_drafts": ..., ...counters...,
                  "tau": 2.41, "tau_ci": [2.30, 2.52], "proposal_rate": 0.62,
                  "acceptance_rates": [...], "acceptance_rate": 0.47,
                  "implied_alpha": 0.61}, ...]}

Every (gamma, task or null, context bucket index or null) has one entry; ``context`` is the
bucket's ``[lo, hi]`` (``hi`` null for the last). A step's context is the tokens before it
(prompt + tokens generated so far), so one request's steps can fall in several buckets.
The derived fields are written for people; :func:`load` recomputes them from the counters.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path


from . import _check
from .acceptance import ratio_ci
from .runners import RUNNERS, forced_env, model_runner

__all__ = ["FORMAT", "VERSION", "Counters", "Entry", "AcceptanceProfile", "entry_from_requests",
           "build", "from_dict", "load", "dumps", "save",
           "check_target"]

FORMAT = "specnb-acceptance-profile"
VERSION = 1

_COUNTS = ("num_steps", "num_drafts", "num_draft_tokens", "num_accepted_tokens")


@dataclass(frozen=True)
class Counters:
    """vLLM's spec-decode counters for one gamma (see the module docstring). Counts are ints
    >= 0; the two per-position lists have length gamma. Add two with ``+``."""

    num_steps: int
    num_drafts: int
    num_draft_tokens: int
    num_accepted_tokens: int
    num_accepted_tokens_per_pos: tuple
    num_draft_tokens_per_pos: tuple

    @classmethod
    def zero(cls, gamma: int) -> "Counters":
        """All counts 0 for draft length gamma."""
        return cls(0, 0, 0, 0, (0,) * gamma, (0,) * gamma)

    @property
    def gamma(self) -> int:
        return len(self.num_accepted_tokens_per_pos)

    def __add__(self, other: "Counters") -> "Counters":
        pos = lambda a, b: tuple(int(x) + int(y) for x, y in zip(a, b))  # noqa: E731
        return Counters(*(getattr(self, k) + getattr(other, k) for k in _COUNTS),
                        pos(self.num_accepted_tokens_per_pos, other.num_accepted_tokens_per_pos),
                        pos(self.num_draft_tokens_per_pos, other.num_draft_tokens_per_pos))

    @property
    def tau(self) -> float:
        """1 + accepted / drafts (vLLM's mean acceptance length); NaN with no draft."""
        return 1.0 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else math.nan

    @property
    def proposal_rate(self) -> float:
        """drafts / decode sequence-steps (M); NaN with no step."""
        return self.num_drafts / self.num_steps if self.num_steps else math.nan

    @property
    def acceptance_rate(self) -> float:
        """accepted / draft tokens: vLLM's acceptance rate (``specnb metrics``' "acceptance
        rate"), not Leviathan's alpha (:attr:`implied_alpha`); NaN with no draft token."""
        return (self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens
                else math.nan)

    @property
    def implied_alpha(self) -> float:
        """The per-token alpha for which Leviathan's Eq. 1 at this gamma gives :attr:`tau`
        (:func:`specnb.theory.alpha_from_acceptance_length`): the alpha ``plan --alpha`` and
        the theorems mean. Drafts shorter than gamma (n-gram, suffix) count as full ones, so
        it is the alpha of an i.i.d. draft with the same tau. NaN with no draft."""
        if not self.num_drafts:
            return math.nan
        from .theory import alpha_from_acceptance_length

        return float(alpha_from_acceptance_length(self.tau, self.gamma))

    @property
    def acceptance_rates(self) -> list:
        """Conditional per-position rates (length gamma): P(accept i | accepted i-1, a token at
        i); NaN where no draft reached position i."""
        acc, has = self.num_accepted_tokens_per_pos, self.num_draft_tokens_per_pos
        out, prev = [], self.num_drafts
        for i in range(self.gamma):
            # drafts reaching i accepted through i-1 AND having a token at i: bounded by both
            den = min(prev, has[i])
            out.append(acc[i] / den if den else math.nan)
            prev = acc[i]
        return out

    def to_dict(self) -> dict:
        d = {k: int(getattr(self, k)) for k in _COUNTS}
        d["num_accepted_tokens_per_pos"] = [int(x) for x in self.num_accepted_tokens_per_pos]
        d["num_draft_tokens_per_pos"] = [int(x) for x in self.num_draft_tokens_per_pos]
        return d


@dataclass(frozen=True)
class Entry:
    """One row of a profile: counters for (gamma, task, context bucket); ``task`` None = every
    task, ``context`` None = every context, else ``(lo, hi)`` with ``hi`` None for the last
    bucket. ``tau_ci``: 95 % cluster-bootstrap interval over requests (NaN with one)."""

    gamma: int
    task: str | None
    context: tuple | None
    num_requests: int
    counters: Counters
    tau_ci: tuple = (math.nan, math.nan)

    @property
    def tau(self) -> float:
        return self.counters.tau

    @property
    def proposal_rate(self) -> float:
        return self.counters.proposal_rate

    @property
    def acceptance_rates(self) -> list:
        return self.counters.acceptance_rates

    def to_dict(self) -> dict:
        c = self.counters
        return {"gamma": self.gamma, "task": self.task,
                "context": None if self.context is None else list(self.context),
                "num_requests": self.num_requests, **c.to_dict(),
                "tau": _num(c.tau), "tau_ci": [_num(x) for x in self.tau_ci],
                "proposal_rate": _num(c.proposal_rate),
                "acceptance_rates": [_num(x) for x in c.acceptance_rates],
                "acceptance_rate": _num(c.acceptance_rate),
                "implied_alpha": _num(c.implied_alpha)}


def _num(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)


def entry_from_requests(gamma: int, per_request, *, task=None, context=None) -> Entry:
    """An :class:`Entry` from one :class:`Counters` per request (those of its steps in this
    task / bucket; requests with no step are left out of the count), with the tau interval
    from :func:`specnb.acceptance.ratio_ci` over requests that drafted."""
    reqs = [c for c in per_request if c.num_steps > 0]
    total = sum(reqs, Counters.zero(gamma))
    drafted = [c for c in reqs if c.num_drafts > 0]
    ci = (math.nan, math.nan)
    if len(drafted) >= 2:
        _, lo, hi = ratio_ci([c.num_accepted_tokens for c in drafted],
                             [c.num_drafts for c in drafted])
        ci = (1.0 + lo, 1.0 + hi)
    return Entry(gamma, task, None if context is None else tuple(context), len(reqs), total, ci)


@dataclass(frozen=True)
class AcceptanceProfile:
    """A whole profile (see the module docstring). Look entries up with :meth:`entry`."""

    method: str
    gammas: tuple
    context_edges: tuple
    tasks: tuple
    entries: tuple
    params: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    runner: str | None = None

    def buckets(self) -> list:
        """The context buckets as ``(lo, hi)`` pairs, ``hi`` None for the last."""
        e = list(self.context_edges)
        return list(zip([0] + e, e + [None]))

    def bucket_of(self, context) -> tuple:
        """The bucket ``(lo, hi)`` holding a context of ``context`` tokens (>= 0)."""
        s = _check.scalar_real("context", context, lo=0.0)
        for lo, hi in self.buckets():
            if hi is None or s < hi:
                return (lo, hi)
        raise AssertionError("unreachable")

    def entry(self, gamma, *, context=None, task=None) -> Entry:
        """The entry for ``gamma`` (one of :attr:`gammas`), the bucket holding ``context``
        (None: all contexts) and ``task`` (None: the log's own mix; else one of
        :attr:`tasks`).

        Raises
        ------
        ValueError
            gamma not in the profile (naming the gammas it has), an unknown task, a negative
            context.
        """
        g = _check.scalar_int("gamma", gamma, lo=1)
        if g not in self.gammas:
            raise ValueError(f"gamma {g} is not in the acceptance profile (it has gammas "
                             f"{list(self.gammas)}); replay the log with --gamma {g}")
        if task is not None:
            _check.choice("task", task, self.tasks)
        ctx = None if context is None else self.bucket_of(context)
        for e in self.entries:
            if e.gamma == g and e.task == task and e.context == ctx:
                return e
        raise ValueError(f"the acceptance profile has no entry for gamma {g}, task {task!r}, "
                         f"context {ctx}")

    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "method": self.method,
                "runner": self.runner, "params": dict(self.params), "source": dict(self.source),
                "gammas": list(self.gammas), "context_edges": list(self.context_edges),
                "tasks": list(self.tasks), "entries": [e.to_dict() for e in self.entries]}


def build(method: str, per_request: dict, *, context_edges=(), tasks=(), params=None,
          source=None, runner=None) -> AcceptanceProfile:
    """A profile from per-request counters.

    Parameters
    ----------
    method : vLLM's method name (``ngram``, ``suffix``, ``eagle3``, ...)
    per_request : ``{gamma: [(task or None, {bucket index or None: Counters}), ...]}``, one
        item per request; bucket index i is ``context_edges``' bucket i (0 .. len(edges)),
        None the request's whole counters (summed from the buckets when absent)
    context_edges : increasing ints > 0 (may be empty: one bucket)
    tasks, params, source, runner : as in the file

    Raises
    ------
    ValueError
        edges not increasing or not positive, a gamma < 1, a task not in ``tasks``.
    """
    edges = tuple(int(x) for x in context_edges)
    if edges:
        _check.integer("context_edges", list(edges), lo=1)
    if any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"context_edges must increase, got {list(edges)}")
    tasks = tuple(sorted(set(tasks)))
    prof = AcceptanceProfile(method, (), edges, tasks, (), params or {}, source or {})
    buckets = prof.buckets()
    entries = []
    for g in sorted(per_request):
        _check.scalar_int("gamma", g, lo=1)
        rows = per_request[g]
        for t, _ in rows:
            if t is not None and t not in tasks:
                raise ValueError(f"task {t!r} is not in tasks {list(tasks)}")
        whole = [(t, by.get(None) or sum((c for k, c in by.items() if k is not None),
                                         Counters.zero(g))) for t, by in rows]
        for task in (None, *tasks):
            sel = [(t, by) for (t, by) in rows if task is None or t == task]
            entries.append(entry_from_requests(
                g, [c for (t, c) in whole if task is None or t == task], task=task))
            for i, ctx in enumerate(buckets):
                entries.append(entry_from_requests(
                    g, [by[i] for _, by in sel if i in by], task=task, context=ctx))
    return AcceptanceProfile(method, tuple(sorted(per_request)), edges, tasks, tuple(entries),
                             params or {}, source or {}, runner)


def _counters(d: dict, gamma: int, where: str) -> Counters:
    try:
        vals = [int(d[k]) for k in _COUNTS]
        acc = tuple(int(x) for x in d["num_accepted_tokens_per_pos"])
        has = tuple(int(x) for x in d.get("num_draft_tokens_per_pos", [d["num_drafts"]] * gamma))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: counters missing or not integers ({exc})") from None
    if len(acc) != gamma or len(has) != gamma:
        raise ValueError(f"{where}: per-position counters must have length gamma = {gamma}, "
                         f"got {len(acc)} and {len(has)}")
    if min(vals + list(acc) + list(has)) < 0:
        raise ValueError(f"{where}: counters must be >= 0")
    if vals[1] > vals[0] or vals[3] > vals[2]:
        raise ValueError(f"{where}: num_drafts <= num_steps and num_accepted_tokens <= "
                         f"num_draft_tokens must hold, got {dict(zip(_COUNTS, vals))}")
    return Counters(*vals, acc, has)


def from_dict(d: dict, where: str = "acceptance profile") -> AcceptanceProfile:
    """A profile from its JSON object (checked; derived fields recomputed)."""
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise ValueError(f"{where}: not an acceptance profile (no \"format\": \"{FORMAT}\"); "
                         "write one with specnb replay LOG --out PROFILE.json")
    if d.get("version") != VERSION:
        raise ValueError(f"{where}: version {d.get('version')!r} is not supported "
                         f"(this specnb reads version {VERSION})")
    try:
        gammas = tuple(int(g) for g in d["gammas"])
        edges = tuple(int(x) for x in d.get("context_edges", []))
        tasks = tuple(d.get("tasks", []))
        raw = d["entries"]
        method = str(d["method"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: a required field is missing or malformed ({exc})") from None
    if any(x < 1 for x in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"{where}: context_edges must be increasing ints >= 1, got "
                         f"{list(edges)}")  # build's rule (T8a-05)
    entries = []
    for i, e in enumerate(raw):
        w = f"{where}: entry {i}"
        g = int(e.get("gamma", 0))
        if g not in gammas:
            raise ValueError(f"{w}: gamma {g} not in gammas {list(gammas)}")
        ctx = e.get("context")
        ci = tuple(math.nan if x is None else float(x) for x in e.get("tau_ci", [None, None]))
        entries.append(Entry(g, e.get("task"), None if ctx is None else tuple(ctx),
                             int(e.get("num_requests", 0)), _counters(e, g, w), ci))
    params = dict(d.get("params", {}))
    runner = _runner(d, method, where)
    if runner == "v2" and method in ("ngram", "ngram_gpu") and params.get("max_model_len") is None:
        for i, e in enumerate(entries):  # V2's kernel drafts gamma tokens at every step
            c = e.counters
            if c.num_drafts != c.num_steps or c.num_draft_tokens != e.gamma * c.num_drafts:
                raise ValueError(
                    f"{where}: entry {i}: a runner v2 {method} profile drafts gamma tokens at "
                    f"every step (num_drafts = num_steps, num_draft_tokens = gamma x "
                    f"num_drafts), got num_steps {c.num_steps}, num_drafts {c.num_drafts}, "
                    f"num_draft_tokens {c.num_draft_tokens} at gamma {e.gamma}")
    return AcceptanceProfile(method, gammas, edges, tasks, tuple(entries), params,
                             dict(d.get("source", {})), runner)


#: The replayed methods whose profiles written before the ``runner`` field stepped vLLM's
#: Model Runner V1 proposers (every replay did until trial 8a, T8a-01).
_V1_BEFORE_RUNNER = ("ngram", "ngram_gpu", "suffix")


def _runner(d: dict, method: str, where: str):
    r = d.get("runner")
    if r is None:
        return "v1" if method in _V1_BEFORE_RUNNER else None
    if r not in RUNNERS:
        raise ValueError(f"{where}: runner must be \"v1\", \"v2\" or null, got {r!r}")
    if model_runner(method, forced_env(r)) != r:  # replay.check_runner's rule
        raise ValueError(f"{where}: runner {r!r} cannot serve method {method!r}: vLLM 0.33 "
                         f"refuses to start it so (specnb replay --method {method} refuses "
                         "that runner too)")
    return r


def load(path) -> AcceptanceProfile:
    """Read a profile file (``--acceptance-profile``).

    Raises
    ------
    ValueError
        the file is missing, not JSON, not a profile, or a counter is malformed (naming the
        file and entry).
    """
    p = Path(path)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"acceptance profile {str(p)!r} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"acceptance profile {str(p)!r} is not readable JSON ({exc})") from None
    return from_dict(d, f"acceptance profile {str(p)!r}")


def dumps(profile: AcceptanceProfile) -> str:
    """The profile as JSON text (indented, NaN written as null)."""
    return json.dumps(profile.to_dict(), indent=1, allow_nan=False)


def check_target(path, force: bool = False) -> None:
    """Refuse to write a profile over a file that is not one (``force`` allows it).

    Raises
    ------
    ValueError
        ``path`` exists and is a folder, or a file that is not an acceptance profile, and
        ``force`` is false.
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{str(p)!r} is a folder; give a file name for the acceptance profile")
    if force or not p.exists():
        return
    try:
        load(p)
    except ValueError:
        raise ValueError(f"{str(p)!r} exists and is not an acceptance profile: not replaced "
                         "(give another file name, or --force / force=True)") from None


def save(profile: AcceptanceProfile, path, *, force: bool = False) -> None:
    """Write :func:`dumps` to ``path``; an existing file is replaced only when it is an
    acceptance profile or ``force`` is true (:func:`check_target`)."""
    check_target(path, force)
    Path(path).write_text(dumps(profile) + "\n", encoding="utf-8")

