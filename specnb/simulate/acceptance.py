"""Accepted lengths drawn per request per step: from tau, per-position rates or an
acceptance profile, with n-gram / suffix proposing only on a share M of the steps.

:class:`Acceptance`, :func:`acceptance`.
"""

from __future__ import annotations

import numpy as np

from .. import _check, limits, theory

__all__ = ["Acceptance", "acceptance"]


def _conditional_of(rates: np.ndarray) -> np.ndarray:
    """P(accepted at i | accepted before i) from per-position acceptance rates (0 after a
    position no draft reached)."""
    prev = np.concatenate([[1.0], rates[:-1]])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(prev > 0, rates / np.maximum(prev, 1e-300), 0.0)


class Acceptance:
    """Where accepted lengths come from. Build with :func:`acceptance`.

    :meth:`conditional` gives, for a draft of k tokens at a context, the probability that
    position i is accepted given positions < i were (length k), and :meth:`proposes` the
    share M of steps with a draft; :meth:`draw` the accepted counts of one step.
    """

    def __init__(self, kind, value, proposal_rate=1.0, gamma=None):
        self.kind, self.value, self.m, self.gamma = kind, value, float(proposal_rate), gamma
        self._cache: dict = {}

    def describe(self) -> str:
        if self.kind == "alpha":
            return f"alpha {self.value:.3f} (i.i.d.)" + (f", tau {self.tau(self.gamma):.2f} at "
                                                         f"gamma {self.gamma}" if self.gamma else "")
        if self.kind == "rates":
            return "per-position rates " + " ".join(f"{r:g}" for r in self.value)
        return f"acceptance profile ({self.value.method}, gammas {list(self.value.gammas)})"

    def check_gamma(self, k: int) -> None:
        """ValueError when drafts of k tokens cannot be drawn (more than the rates given, or a
        gamma the profile lacks)."""
        if self.kind == "rates" and k > len(self.value):
            raise ValueError(f"acceptance_rates has {len(self.value)} rate(s) but the policy "
                             f"drafts {k} tokens: give at least {k}")
        if self.kind == "profile" and k not in self.value.gammas:
            raise ValueError(f"the acceptance profile has gammas {list(self.value.gammas)} "
                             f"but the policy drafts {k} tokens (replay with --gamma {k})")

    def _profile_entry(self, k, context):
        e = self.value.entry(k, context=None)
        if self.value.context_edges:
            try:
                e = self.value.entry(k, context=context)
            except ValueError:
                pass
        return e

    def conditional(self, k: int, context: float = 0.0) -> np.ndarray:
        """Conditional acceptance probabilities of positions 1..k (array of k)."""
        if self.kind == "alpha":
            return np.full(k, self.value)
        if self.kind == "rates":
            return _conditional_of(np.asarray(self.value[:k], dtype=float))
        bucket = self.value.bucket_of(context) if self.value.context_edges else None
        key = (k, bucket)
        if key not in self._cache:
            e = self._profile_entry(k, context)
            rates = list(e.acceptance_rates) + [0.0] * k
            self._cache[key] = (np.asarray(rates[:k], dtype=float), float(e.proposal_rate))
        return self._cache[key][0]

    def proposal_rate(self, k: int, context: float = 0.0) -> float:
        """M: the share of a request's steps that carry a draft."""
        if self.kind != "profile":
            return self.m
        self.conditional(k, context)
        bucket = self.value.bucket_of(context) if self.value.context_edges else None
        return self._cache[(k, bucket)][1]

    def tau(self, k: int, context: float = 0.0) -> float:
        """Mean acceptance length per draft of k tokens (1 + sum of cumulative products)."""
        return float(1.0 + np.cumprod(self.conditional(k, context)).sum())

    def _lengths(self, k, context):
        """Profile: (P(draft has a token at i), P(accepted at i | a token at i and accepted
        before)) for i = 1..k, from ``num_draft_tokens_per_pos`` / ``num_drafts``; cached per
        (k, context bucket) as :meth:`conditional` is (the engine asks every step)."""
        bucket = self.value.bucket_of(context) if self.value.context_edges else None
        key = ("lengths", k, bucket)
        if key not in self._cache:
            c = self._profile_entry(k, context).counters
            dpp = np.asarray(c.num_draft_tokens_per_pos, dtype=float)
            acc = np.asarray(c.num_accepted_tokens_per_pos, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(dpp > 0, acc / np.maximum(dpp, 1e-300), 0.0)
            self._cache[key] = (dpp / max(c.num_drafts, 1), np.clip(_conditional_of(r), 0.0, 1.0))
        return self._cache[key]

    def draft_length(self, rng, k: int, context: float = 0.0) -> int:
        """Tokens in one proposed draft at gamma k: k, or for a profile a length drawn as
        its drafts ran (``num_draft_tokens_per_pos``: n-gram / suffix drafts stop early;
        vLLM verifies each request's own draft, T8a-14; plan charges the mean of the same)."""
        if self.kind != "profile":
            return k
        has = self._lengths(k, context)[0]
        u = rng.random()
        return max(1, int(np.sum(has > u)))

    def draw(self, rng, k: int, contexts, lengths=None) -> np.ndarray:
        """Accepted tokens of drafts of k tokens, one per context: the first rejected
        position of independent uniform draws against :meth:`conditional`. ``lengths``
        (profile only): each draft's own length (<= k); position i is then accepted at the
        profile's rate given a token there, so the expected accepted count per position is
        the profile's ``num_accepted_tokens_per_pos`` / ``num_drafts``."""
        n = len(contexts)
        if lengths is not None and self.kind == "profile":
            L = np.asarray(lengths, dtype=int)
            p = np.stack([self._lengths(k, c)[1] for c in contexts])
            ok = (rng.random((n, k)) < p) & (np.arange(k)[None, :] < L[:, None])
            return np.where(ok.all(axis=1), k, np.argmin(ok, axis=1))
        if self.kind == "profile" and self.value.context_edges:
            p = np.stack([self.conditional(k, c) for c in contexts])
        else:
            p = np.broadcast_to(self.conditional(k), (n, k))
        ok = rng.random((n, k)) < p
        return np.where(ok.all(axis=1), k, np.argmin(ok, axis=1))


def acceptance(*, tau=None, gamma=None, alpha=None, acceptance_rates=None, profile=None,
               proposal_rate=None) -> Acceptance:
    """An :class:`Acceptance` from exactly one of ``tau`` (measured at ``gamma``: alpha by
    Leviathan Eq. 1, i.i.d. at every draft length), ``alpha``, ``acceptance_rates`` (vLLM's
    per-position rates r_1, r_2, ...: accepted at position i / drafts, non-increasing) or
    ``profile`` (an :class:`specnb.acceptance_profile.AcceptanceProfile`: per gamma and
    context bucket, with its own proposal rate). ``proposal_rate`` M in (0, 1] (n-gram,
    suffix; not with a profile, which carries its own).

    Raises
    ------
    ValueError
        none or several sources; tau outside [1, gamma + 1] or without gamma; a rate outside
        [0, 1] or increasing; M outside (0, 1] or given with a profile.
    """
    given = [k for k, v in (("tau", tau), ("alpha", alpha),
                            ("acceptance_rates", acceptance_rates), ("profile", profile))
             if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of tau, alpha, acceptance_rates or an acceptance "
                         "profile, got " + (", ".join(given) if given else "none"))
    m = 1.0
    if proposal_rate is not None:
        if profile is not None:
            raise ValueError("proposal_rate comes from the acceptance profile (num_drafts / "
                             "num_steps); do not give both")
        m = limits.proposal_rate(proposal_rate)
    if profile is not None:
        return Acceptance("profile", profile)
    if alpha is not None:
        return Acceptance("alpha", _check.scalar_real("alpha", alpha, lo=0.0, hi=1.0), m)
    if tau is not None:
        if gamma is None:
            raise ValueError("tau is measured at one gamma: give the gamma it was measured at")
        g = _check.scalar_int("gamma", gamma, lo=1)
        if np.ndim(tau) != 0:
            raise _check.ParamTypeError(f"tau must be a single number, got {tau!r}", "tau")
        _, a, _ = theory.tau_by_gamma(tau, [g])  # the one rule: measured at g, Eq. 1's alpha
        return Acceptance("alpha", a, m, g)
    r = np.atleast_1d(_check.real("acceptance_rates", acceptance_rates, lo=0.0, hi=1.0))
    if r.ndim != 1 or r.size == 0:
        raise ValueError("acceptance_rates must be a non-empty list of rates")
    if np.any(np.diff(r) > 1e-12):
        raise ValueError(f"acceptance_rates must not increase (accepted at position i / "
                         f"drafts), got {r.tolist()}")
    return Acceptance("rates", [float(x) for x in r], m)
