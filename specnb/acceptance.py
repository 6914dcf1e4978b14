"""Acceptance bookkeeping for speculative decoding, without torch: per-position acceptance
(beta) sequences, the rounds they imply, tau predicted without the i.i.d. assumption, alpha
counted from assisted-generation rounds and confidence intervals (the timing model of
``generate`` calls is :mod:`specnb.timing`).

Vocabulary (as in :mod:`specnb.theory`, Leviathan et al., arXiv 2211.17192 v2):

* ``beta`` -- acceptance probability of one drafted token given the prefix (Definition 3.1).
  Teacher-forced along a target continuation: at temperature 0 it is 1 when the draft's argmax
  equals the target's token and 0 otherwise; at temperature T it is ``sum(min(p_T, q_T))``
  (Corollary 3.6). One value per generated position.
* ``alpha`` -- E(beta), the acceptance rate.
* ``gamma`` -- draft length (``num_speculative_tokens``; transformers' ``num_assistant_tokens``).
* ``tau`` -- mean acceptance length: tokens appended per target forward (verification), the
  bonus/correction token included, as vLLM, EAGLE and Spec-Bench count it.
* ``c`` -- draft forward time / target forward time.

Round structure follows transformers 5.x ``_assisted_decoding`` (checked on 5.24.0): at
``i`` tokens generated out of ``max_new_tokens``, the draft proposes
``k = min(gamma, max_new_tokens - i - 1)`` tokens (``AssistedCandidateGenerator.
_calculate_new_tokens``); the target verifies them in one forward, keeps the longest accepted
prefix plus one token of its own, and the output is cut after an end-of-sequence token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check

__all__ = [
    "draft_length",
    "Rounds",
    "greedy_rounds",
    "expected_rounds",
    "expected_round_counts",
    "tau_from_betas",
    "rounds_from_accept_lengths",
    "alpha_from_rounds",
    "draft_acceptance_rate",
    "speedup_from_tau",
    "ratio_ci",
]


def _betas(betas, *, binary: bool = False) -> np.ndarray:
    arr = _check.real("betas", betas, lo=0.0, hi=1.0)
    if arr.ndim != 1:
        raise ValueError(f"betas must be a 1-D sequence (one value per generated position), "
                         f"got shape {arr.shape}")
    if binary and not np.all((arr == 0.0) | (arr == 1.0)):
        bad = arr[(arr != 0.0) & (arr != 1.0)][0]
        raise ValueError(f"betas must hold only 0 and 1 for greedy rounds (temperature 0), "
                         f"got {bad!r}; use expected_rounds for probabilities")
    return arr


def _rounds_args(betas, gamma, max_new_tokens, *, binary: bool = False):
    """``(betas, gamma, max_new_tokens)`` checked; max_new_tokens defaults to len(betas)."""
    b = _betas(betas, binary=binary)
    g = _check.scalar_int("gamma", gamma, lo=1)
    n = b.size
    if n == 0:
        raise ValueError("betas must hold at least one position, got an empty sequence")
    if max_new_tokens is None:
        return b, g, n
    m = _check.scalar_int("max_new_tokens", max_new_tokens, lo=1)
    if m < n:
        raise ValueError(f"max_new_tokens must be >= the number of generated positions "
                         f"len(betas) = {n}, got {m}")
    return b, g, m


def draft_length(generated: int, gamma: int, max_new_tokens: int) -> int:
    """Tokens the draft proposes when ``generated`` tokens already exist.

    transformers 5.x ``AssistedCandidateGenerator._calculate_new_tokens``:
    ``min(gamma, max_new_tokens - generated - 1)`` (0 in the last position, where the target
    produces its token alone).

    Parameters
    ----------
    generated : int, in [0, max_new_tokens - 1]
    gamma : int, >= 1
    max_new_tokens : int, >= 1

    Raises
    ------
    ValueError
        Any argument out of its range.
    """
    m = _check.scalar_int("max_new_tokens", max_new_tokens, lo=1)
    i = _check.scalar_int("generated", generated, lo=0, hi=m - 1)
    g = _check.scalar_int("gamma", gamma, lo=1)
    return min(g, m - i - 1)


@dataclass(frozen=True)
class Rounds:
    """Per-round record of one speculative generation (arrays of equal length, one entry per
    target forward).

    Attributes
    ----------
    draft_len : ndarray of int, tokens the draft proposed (k).
    accepted : ndarray of int, draft tokens the target accepted (n_matches), in [0, k].
    rejected : ndarray of bool, whether a drafted token was examined and rejected.
    produced : ndarray of int, tokens appended (accepted + 1, fewer only when an
        end-of-sequence token cut the round).
    """

    draft_len: np.ndarray
    accepted: np.ndarray
    rejected: np.ndarray
    produced: np.ndarray

    @property
    def n_rounds(self) -> int:
        """Target forwards (one per round; the first one also does the prefill)."""
        return int(self.produced.size)

    @property
    def tau(self) -> float:
        """Mean acceptance length: tokens per target forward, bonus token included."""
        return float(self.produced.sum() / self.produced.size) if self.produced.size else float("nan")


def greedy_rounds(betas, gamma: int, max_new_tokens: int | None = None) -> Rounds:
    """The exact rounds greedy assisted decoding goes through, from a 0/1 beta sequence.

    At temperature 0 the draft's proposals inside a round are its argmaxes over the target's own
    greedy prefix as long as they are accepted, so the teacher-forced betas of the target's
    greedy continuation determine every round: accept while beta is 1, up to ``k`` tokens
    (:func:`draft_length`), then append one target token.

    Parameters
    ----------
    betas : 1-D sequence of 0/1, length N >= 1
        beta per generated position (1 = draft argmax equals the target's token).
    gamma : int, >= 1
        Draft length.
    max_new_tokens : int, >= N, optional
        The generation budget (defaults to N). When N < max_new_tokens the continuation ended
        with an end-of-sequence token, and the last round is cut there.

    Returns
    -------
    Rounds

    Raises
    ------
    ValueError
        betas not 1-D, empty, or not all 0/1; gamma < 1; max_new_tokens < N.
    """
    b, g, m = _rounds_args(betas, gamma, max_new_tokens, binary=True)
    b = b.astype(bool)
    n = b.size
    ks, acc, rej, prod = [], [], [], []
    i = 0
    while i < n:
        k = min(g, m - i - 1)
        a = 0
        while a < k and i + a < n and b[i + a]:
            a += 1
        produced = min(a + 1, n - i)
        ks.append(k)
        acc.append(produced - 1 if i + a >= n else a)
        rej.append(a < k and i + a < n)
        prod.append(produced)
        i += produced
    return Rounds(np.asarray(ks), np.asarray(acc), np.asarray(rej, dtype=bool), np.asarray(prod))


def expected_rounds(betas, gamma: int, max_new_tokens: int | None = None) -> float:
    """Expected number of target forwards to produce a continuation with per-position
    acceptance probabilities ``betas`` (no i.i.d. assumption).

    Dynamic programming over the number of tokens generated ``i``: from ``i`` a round accepts
    exactly ``a < k`` drafts with probability ``beta_i ... beta_{i+a-1} (1 - beta_{i+a})`` and
    all ``k`` with ``beta_i ... beta_{i+k-1}``, then appends one token. With 0/1 betas this
    equals ``greedy_rounds(...).n_rounds``. With beta = alpha everywhere and no length cap it
    tends to N / Eq. 1 (Leviathan et al.) as N grows.

    Parameters
    ----------
    betas : 1-D sequence in [0, 1], length N >= 1
    gamma : int, >= 1
    max_new_tokens : int, >= N, optional (see :func:`greedy_rounds`)

    Returns
    -------
    float, expected rounds, in [N / (gamma + 1), N].

    Raises
    ------
    ValueError
        betas outside [0, 1], NaN, not 1-D or empty; gamma < 1; max_new_tokens < N.
    """
    return expected_round_counts(betas, gamma, max_new_tokens)[0]


def expected_round_counts(betas, gamma: int, max_new_tokens: int | None = None):
    """Expected target forwards (rounds) and expected drafted tokens (draft forwards) to produce
    a continuation with per-position acceptance probabilities ``betas``: the dynamic programme
    of :func:`expected_rounds`, also summing the draft length ``k`` of every round
    (:func:`draft_length`). With 0/1 betas these equal ``greedy_rounds(...).n_rounds`` and
    ``greedy_rounds(...).draft_len.sum()``. They are the counts a timing model
    (:meth:`TimingModel.predict`) needs to predict a gamma that was not run.

    Parameters and errors as in :func:`expected_rounds`.

    Returns
    -------
    (rounds, drafted) : two floats.
    """
    b, g, m = _rounds_args(betas, gamma, max_new_tokens)
    n = b.size
    r = np.zeros(n + 1)
    d = np.zeros(n + 1)
    for i in range(n - 1, -1, -1):
        k = min(g, m - i - 1)
        prefix, e, dd = 1.0, 1.0, float(k)
        for a in range(k + 1):
            if i + a >= n:  # every remaining position accepted: the sequence ends here
                break
            if a == k:
                e += prefix * r[i + k + 1]
                dd += prefix * d[i + k + 1]
                break
            w = prefix * (1.0 - b[i + a])
            e += w * r[i + a + 1]
            dd += w * d[i + a + 1]
            prefix *= b[i + a]
        r[i], d[i] = e, dd
    return float(r[0]), float(d[0])


def tau_from_betas(beta_sequences, gamma: int, max_new_tokens: int | None = None) -> float:
    """Mean acceptance length predicted from per-position betas, pooled over sequences.

    ``sum(N_s) / sum(expected_rounds(beta_s))``: tokens over target forwards, the way a
    measured tau is pooled over prompts. Unlike Eq. 1 it keeps the order of the betas (runs of
    easy and hard positions) and the shorter drafts at the end of the budget.

    Parameters
    ----------
    beta_sequences : 1-D sequence, or a list of them
        One beta sequence per generated continuation (values in [0, 1]).
    gamma : int, >= 1
    max_new_tokens : int, optional
        The generation budget of every sequence (defaults to each sequence's length).

    Returns
    -------
    float, tau in [1, gamma + 1].

    Raises
    ------
    ValueError
        No sequence, or a bad sequence (see :func:`expected_rounds`).
    """
    seqs = _as_sequences(beta_sequences)
    tokens = sum(len(s) for s in seqs)
    rounds = sum(expected_rounds(s, gamma, max_new_tokens) for s in seqs)
    return float(tokens / rounds)


def _as_sequences(beta_sequences) -> list:
    if isinstance(beta_sequences, np.ndarray) and beta_sequences.ndim == 1:
        return [beta_sequences]
    seqs = list(beta_sequences)
    if not seqs:
        raise ValueError("beta_sequences must hold at least one sequence, got none")
    if all(np.ndim(s) == 0 for s in seqs):
        return [np.asarray(seqs, dtype=float)]
    return seqs


def rounds_from_accept_lengths(accept_lengths, gamma: int, max_new_tokens: int) -> Rounds:
    """Rebuild the rounds of one assisted generation from the tokens appended per round.

    ``accept_lengths`` is what a streamer sees in transformers' assisted loop after the prompt
    (one ``put`` of ``n_matches + 1`` tokens per target forward). The draft length of each round
    follows :func:`draft_length`. A round with fewer accepted tokens than drafted counts as a
    rejection, except the last round of a sequence that stopped before ``max_new_tokens`` (cut
    by end-of-sequence).

    Parameters
    ----------
    accept_lengths : sequence of int >= 1
    gamma : int, >= 1 (the fixed ``num_assistant_tokens``)
    max_new_tokens : int, >= sum(accept_lengths)

    Returns
    -------
    Rounds

    Raises
    ------
    ValueError
        An accept length < 1 or above draft length + 1, or a total above max_new_tokens.
    """
    lens = _check.integer("accept_lengths", accept_lengths, lo=1)
    if lens.ndim != 1 or lens.size == 0:
        raise ValueError(f"accept_lengths must be a non-empty 1-D sequence, got {accept_lengths!r}")
    g = _check.scalar_int("gamma", gamma, lo=1)
    m = _check.scalar_int("max_new_tokens", max_new_tokens, lo=1)
    total = int(lens.sum())
    if total > m:
        raise ValueError(f"max_new_tokens must be >= sum(accept_lengths) = {total}, got {m}")
    ks, acc, rej = [], [], []
    i = 0
    for r, L in enumerate(lens.tolist()):
        k = min(g, m - i - 1)
        if L > k + 1:
            raise ValueError(f"accept_lengths[{r}] = {L} exceeds draft length + 1 = {k + 1} "
                             f"(gamma = {g}, {i} of {m} tokens generated); is gamma the "
                             "num_assistant_tokens the run used, with schedule 'constant'?")
        last_cut = r == lens.size - 1 and total < m
        ks.append(k)
        acc.append(L - 1)
        rej.append(L - 1 < k and not last_cut)
        i += L
    return Rounds(np.asarray(ks), np.asarray(acc), np.asarray(rej, dtype=bool), lens.copy())


def alpha_from_rounds(rounds) -> float:
    """alpha counted from assisted-generation rounds: accepted / examined draft tokens.

    A drafted token is *examined* when every token before it in its round was accepted; the
    examined ones are the accepted ones plus one per rejecting round. Their acceptance rate is
    the maximum-likelihood estimate of alpha under Leviathan's i.i.d. model (each examined token
    is an independent Bernoulli(alpha) trial), and compares directly with teacher-forced alpha.
    It differs from :func:`draft_acceptance_rate` (accepted / proposed), which counts the
    never-examined tail of a rejected draft as failures.

    Parameters
    ----------
    rounds : Rounds or a list of Rounds (pooled)

    Returns
    -------
    float, in [0, 1]; NaN when no token was examined.
    """
    rs = [rounds] if isinstance(rounds, Rounds) else list(rounds)
    acc = sum(int(r.accepted.sum()) for r in rs)
    rej = sum(int(r.rejected.sum()) for r in rs)
    return acc / (acc + rej) if acc + rej else float("nan")


def draft_acceptance_rate(rounds) -> float:
    """Accepted / proposed draft tokens (vLLM's ``draft acceptance rate`` metric), pooled.

    Under i.i.d. acceptance this is ``(tau - 1) / gamma``, not alpha.

    Returns
    -------
    float, in [0, 1]; NaN when nothing was proposed.
    """
    rs = [rounds] if isinstance(rounds, Rounds) else list(rounds)
    acc = sum(int(r.accepted.sum()) for r in rs)
    prop = sum(int(r.draft_len.sum()) for r in rs)
    return acc / prop if prop else float("nan")


def speedup_from_tau(tau, gamma, c):
    """Walltime speedup from a mean acceptance length: ``tau / (gamma * c + 1)``.

    Theorem 3.8 of Leviathan et al. (v2) is this expression with tau = Eq. 1; taking tau from
    :func:`tau_from_betas` (or a measurement) drops the i.i.d. assumption but keeps the
    theorem's others (verifying gamma + 1 positions costs one target forward; no overhead).

    Parameters
    ----------
    tau : float or array, >= 1
    gamma : int or array of int, >= 0
    c : float or array, >= 0

    Returns
    -------
    float or ndarray, speedup factor (> 0).

    Raises
    ------
    ValueError
        tau < 1, gamma negative or fractional, c negative, any NaN.
    """
    t = _check.real("tau", tau, lo=1.0)
    g = _check.integer("gamma", gamma, lo=0)
    cc = _check.real("c", c, lo=0.0)
    return _check.out(t / (g * cc + 1.0))


def ratio_ci(numerators, denominators, level: float = 0.95, n_boot: int = 2000, seed: int = 0):
    """A pooled ratio ``sum(num) / sum(den)`` with a cluster-bootstrap confidence interval.

    Each (numerator, denominator) pair is one cluster, e.g. one prompt's sum of betas and its
    number of positions: betas within a continuation are correlated, so prompts, not positions,
    are resampled (percentile bootstrap, ``n_boot`` resamples, fixed ``seed``).

    Parameters
    ----------
    numerators, denominators : 1-D sequences of equal length, den > 0
    level : float, in (0, 1)
    n_boot : int, >= 100
    seed : int, >= 0

    Returns
    -------
    (estimate, low, high) : floats. With a single cluster low = high = NaN.

    Raises
    ------
    ValueError
        Empty or mismatched inputs, a non-positive denominator, level outside (0, 1).
    """
    num = _check.real("numerators", numerators)
    den = _check.real("denominators", denominators, lo=0.0, lo_open=True)
    if num.ndim != 1 or den.ndim != 1 or num.size != den.size or num.size == 0:
        raise ValueError(f"numerators and denominators must be non-empty 1-D sequences of equal "
                         f"length, got shapes {num.shape} and {den.shape}")
    lv = float(_check.real("level", level, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    nb = _check.scalar_int("n_boot", n_boot, lo=100)
    sd = _check.scalar_int("seed", seed, lo=0)
    est = float(num.sum() / den.sum())
    if num.size < 2:
        return est, float("nan"), float("nan")
    rng = np.random.default_rng(sd)
    idx = rng.integers(0, num.size, size=(nb, num.size))
    boots = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    lo, hi = np.quantile(boots, [(1 - lv) / 2, (1 + lv) / 2])
    return est, float(lo), float(hi)
