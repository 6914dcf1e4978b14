"""Reference implementation of the verification rule of speculative sampling, and a lenient
(lossy) variant, for Monte Carlo checks on a small vocabulary.

Standard rule (Leviathan et al., arXiv 2211.17192 v2, Algorithm 1 and Appendix A.1; Chen et al.
2023): draw x ~ q; accept with probability min(1, p(x) / q(x)); on rejection draw from
norm(max(0, p - q)). The output is distributed exactly as p, and the acceptance probability is
beta = sum_x min(p(x), q(x)) (Theorem 3.5).

Lenient rule (transformers ``assistant_ensemble_weight`` w, v5.14+): the same rule against the
mixture m = w p + (1 - w) q. Its residual norm(max(0, m - q)) equals norm(max(0, p - q)), so the
output is distributed as m, not p: lossy for w < 1.

Distributions are 1-D arrays over a vocabulary of size V (non-negative, summing to 1 within
1e-9). Sampling is vectorized over ``n`` independent single-token steps.
"""

from __future__ import annotations

import numpy as np

from . import _check

__all__ = ["acceptance_probability", "mixture", "speculative_sample", "lenient_sample",
           "empirical", "chi_square", "total_variation"]


def _dist(name: str, p) -> np.ndarray:
    arr = _check.real(name, p, lo=0.0)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"{name} must be a 1-D distribution over at least 2 tokens, got shape {arr.shape}")
    if abs(arr.sum() - 1.0) > 1e-9:
        raise ValueError(f"{name} must sum to 1, got {arr.sum()!r}")
    return arr


def _tokens(tokens, vocab_size: int) -> np.ndarray:
    """Sampled token ids as a non-empty 1-D int array of ids in [0, vocab_size)."""
    if np.ndim(tokens) != 1 or np.size(tokens) == 0:
        raise ValueError(f"tokens must be a non-empty 1-D array of token ids, got shape "
                         f"{np.shape(tokens)}")
    return _check.integer("tokens", tokens, lo=0, hi=vocab_size - 1)


def _rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got "
                        f"{type(rng).__name__}")
    return rng


def _pair(p, q):
    p, q = _dist("p", p), _dist("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must cover the same vocabulary, got sizes {p.size} and {q.size}")
    return p, q


def acceptance_probability(p, q) -> float:
    """beta = sum_x min(p(x), q(x)) = 1 - D_LK(p, q) (Leviathan Theorem 3.5, Lemma 3.3)."""
    p, q = _pair(p, q)
    return float(np.minimum(p, q).sum())


def mixture(p, q, w: float) -> np.ndarray:
    """The lenient rule's acceptance target m = w p + (1 - w) q, w in (0, 1].

    Raises
    ------
    ValueError
        w outside (0, 1], malformed distributions.
    """
    p, q = _pair(p, q)
    w = float(_check.real("w", w, lo=0.0, hi=1.0, lo_open=True))
    m = w * p + (1.0 - w) * q
    return m / m.sum()


def empirical(tokens, vocab_size: int) -> np.ndarray:
    """Empirical distribution (V,) of sampled token ids in [0, vocab_size).

    Raises
    ------
    ValueError
        ``tokens`` empty, not 1-D, or holding an id outside [0, vocab_size); vocab_size < 1.
    TypeError
        non-integer ids (bools, strings...).
    """
    v = _check.scalar_int("vocab_size", vocab_size, lo=1)
    t = _tokens(tokens, v)
    return np.bincount(t, minlength=v) / t.size


def speculative_sample(p, q, n: int, rng: np.random.Generator):
    """Run the standard verification rule ``n`` times; return (tokens, accepted).

    Parameters
    ----------
    p, q : array (V,), target and draft distributions.
    n : int >= 1, independent steps.
    rng : numpy Generator (seeded by the caller).

    Returns
    -------
    tokens : int array (n,), the emitted token of each step.
    accepted : bool array (n,), whether the draft token was accepted.

    Raises
    ------
    ValueError
        malformed distributions or n < 1.
    TypeError
        ``rng`` is not a numpy Generator.
    """
    p, q = _pair(p, q)
    n = _check.scalar_int("n", n, lo=1)
    rng = _rng(rng)
    v = p.size
    x = rng.choice(v, size=n, p=q)
    ratio = np.divide(p[x], q[x], out=np.ones(n), where=q[x] > 0)
    accepted = rng.random(n) < np.minimum(1.0, ratio)
    residual = np.maximum(p - q, 0.0)
    if residual.sum() > 0:
        residual /= residual.sum()
        resampled = rng.choice(v, size=n, p=residual)
    else:  # p == q: every draft is accepted
        resampled = x
    return np.where(accepted, x, resampled), accepted


def lenient_sample(p, q, w: float, n: int, rng: np.random.Generator):
    """The standard rule against m = w p + (1 - w) q (transformers ensemble verification).

    ``w`` in (0, 1]; w = 1 is the standard rule. Returns (tokens, accepted) as
    :func:`speculative_sample`; tokens are distributed as m.

    Raises
    ------
    ValueError
        w outside (0, 1], malformed distributions, n < 1.
    """
    return speculative_sample(mixture(p, q, w), q, n, rng)


def chi_square(tokens, p) -> dict:
    """Pearson chi-square goodness of fit of sampled ``tokens`` to distribution ``p``.

    Returns {"chi2", "dof", "z"}: z is the statistic mapped to a standard normal deviate under
    H0 by the Wilson-Hilferty cube-root transform, z = ((chi2/dof)^(1/3) - (1 - 2/(9 dof))) /
    sqrt(2/(9 dof)) (Wilson & Hilferty, PNAS 17, 1931), which stays accurate in the tail for
    small dof, where (chi2 - dof) / sqrt(2 dof) is skewed (at dof 2 that plain z exceeds 6 with
    probability 9e-4, the cube-root z with about 1e-9). |z| below about 4 is "within sampling
    error"; expected counts should be >= 5.
    Categories with p = 0 must have no samples (else chi2 is infinite) and are not counted.

    Raises
    ------
    ValueError
        malformed ``p`` or fewer than 2 tokens with p > 0 (no degree of freedom); ``tokens``
        empty, not 1-D or holding an id outside [0, len(p)).
    """
    p = _dist("p", p)
    tokens = _tokens(tokens, p.size)
    if (p > 0).sum() < 2:
        raise ValueError("p must give probability > 0 to at least 2 tokens for a chi-square "
                         f"test (degrees of freedom = positive tokens - 1), got {p!r}")
    counts = np.bincount(tokens, minlength=p.size).astype(float)
    n = counts.sum()
    keep = p > 0
    if (counts[~keep] > 0).any():
        return {"chi2": float("inf"), "dof": int(keep.sum() - 1), "z": float("inf")}
    expected = n * p[keep]
    chi2 = float(((counts[keep] - expected) ** 2 / expected).sum())
    dof = int(keep.sum() - 1)
    v = 2.0 / (9.0 * dof)
    return {"chi2": chi2, "dof": dof, "z": float((np.cbrt(chi2 / dof) - (1.0 - v)) / np.sqrt(v))}


def total_variation(tokens, p) -> float:
    """Total variation distance between the empirical distribution of ``tokens`` and ``p``.

    Raises
    ------
    ValueError
        malformed ``p``; ``tokens`` empty, not 1-D or holding an id outside [0, len(p)).
    """
    p = _dist("p", p)
    counts = np.bincount(_tokens(tokens, p.size), minlength=p.size).astype(float)
    return float(0.5 * np.abs(counts / counts.sum() - p).sum())
