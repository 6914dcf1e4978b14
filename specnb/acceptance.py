"""Acceptance bookkeeping for speculative decoding, without torch: per-position acceptance
(beta) sequences, the rounds they imply, tau predicted without the i.i.d. assumption, alpha
counted from assisted-generation rounds, confidence intervals and a timing model.

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

from . import _check, theory

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
    "TimingModel",
    "TimingFit",
    "nnls",
    "fit_timing_model",
    "fit_timing_models",
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


@dataclass(frozen=True)
class TimingModel:
    """Wall time of one ``generate`` call (seconds), for one draft:

    ``wall = t_call + t_target * target_forwards + t_draft * draft_forwards
    + t_round * assisted_rounds``

    * ``t_call``: fixed cost per call (setup, prefill beyond one forward);
    * ``t_target``: one target forward (plain decoding: one per token);
    * ``t_draft``: one draft forward, i.e. per drafted token;
    * ``t_round``: extra per speculative round beyond one target forward (verifying k + 1
      positions instead of 1, the draft's ``generate`` call, cache cropping, bookkeeping).

    Every time is >= 0. ``warnings`` lists what the fit could not determine (a term fixed at 0
    because the calls cannot separate it from another, or constrained to 0 because the
    unconstrained fit made it negative); an empty tuple means every term was identified.
    """

    t_call: float
    t_target: float
    t_draft: float
    t_round: float
    r2: float
    n_runs: int
    warnings: tuple = ()

    @property
    def c(self) -> float:
        """Draft / target time per forward, as fitted (NaN when t_target is 0)."""
        return self.t_draft / self.t_target if self.t_target > 0 else float("nan")

    def predict(self, target_forwards, draft_forwards, assisted_rounds):
        """Predicted wall seconds of calls with these counts (arrays broadcast)."""
        return (self.t_call + self.t_target * np.asarray(target_forwards, dtype=float)
                + self.t_draft * np.asarray(draft_forwards, dtype=float)
                + self.t_round * np.asarray(assisted_rounds, dtype=float))

    def speedup(self, tau, gamma):
        """Steady-state speedup for mean acceptance length ``tau`` at draft length ``gamma``:
        ``tau * t_target / (t_target + t_round + gamma * t_draft)`` (per-call cost ignored).
        With ``t_round = 0`` and ``c = t_draft / t_target`` this is :func:`speedup_from_tau`.

        Raises
        ------
        ValueError
            tau < 1, gamma < 0, or a model whose t_target is 0 (not identified by the fit).
        """
        t = _check.real("tau", tau, lo=1.0)
        g = _check.integer("gamma", gamma, lo=0)
        if not self.t_target > 0:
            raise ValueError(f"t_target must be > 0 to predict a speedup, got {self.t_target!r} "
                             "(the fit could not identify it; see the model's warnings)")
        return _check.out(t * self.t_target / (self.t_target + self.t_round + g * self.t_draft))

    def optimal_gamma(self, alpha, gamma_max: int = 16):
        """The draft length with the highest :meth:`speedup` when tau follows Eq. 1 at
        acceptance rate ``alpha`` (:func:`specnb.theory.expected_tokens_per_step`), like
        :func:`specnb.theory.optimal_gamma` but with this model's per-round overhead.

        Returns
        -------
        (gamma, speedup) : (int, float); gamma 0 with speedup 1.0 when no gamma in
        [1, gamma_max] beats plain decoding. Ties go to the smaller gamma.

        Raises
        ------
        ValueError
            alpha outside [0, 1]; gamma_max < 1; t_target not > 0.
        """
        a = float(_check.real("alpha", alpha, lo=0.0, hi=1.0))
        gmax = _check.scalar_int("gamma_max", gamma_max, lo=1)
        g = np.arange(1, gmax + 1)
        sp = np.asarray(self.speedup(theory.expected_tokens_per_step(a, g), g))
        best = int(np.argmax(sp))
        if sp[best] <= 1.0:
            return 0, 1.0
        return int(g[best]), float(sp[best])


@dataclass(frozen=True)
class TimingFit:
    """One timing model fitted jointly to plain calls and the assisted calls of every draft:
    the target-side times (``t_call``, ``t_target``, ``t_round``) are shared, ``t_draft`` is
    per draft (a dict). :meth:`model` gives the :class:`TimingModel` of one draft."""

    t_call: float
    t_target: float
    t_round: float
    t_draft: dict
    r2: float
    n_runs: int
    warnings: tuple = ()

    def model(self, draft) -> TimingModel:
        """The :class:`TimingModel` of ``draft`` (a label passed to :func:`fit_timing_models`).

        Raises
        ------
        ValueError
            An unknown draft label.
        """
        if draft not in self.t_draft:
            raise ValueError(f"draft must be one of {sorted(self.t_draft)}, got {draft!r}")
        return TimingModel(self.t_call, self.t_target, self.t_draft[draft], self.t_round,
                           self.r2, self.n_runs, self.warnings)


def nnls(a, b, *, max_iter: int | None = None) -> np.ndarray:
    """Non-negative least squares, ``argmin ||a x - b||`` subject to ``x >= 0`` (the
    Lawson-Hanson active-set method, numpy only).

    Parameters
    ----------
    a : 2-D array (m, n); b : 1-D array (m,)
    max_iter : int, optional (default 3 n)

    Returns
    -------
    ndarray (n,), every entry >= 0.

    Raises
    ------
    ValueError
        Mismatched shapes, NaN or infinite values.
    """
    A = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if A.ndim != 2 or y.ndim != 1 or A.shape[0] != y.size:
        raise ValueError(f"a must be 2-D (m, n) and b 1-D (m,), got shapes {A.shape} and {y.shape}")
    if not (np.isfinite(A).all() and np.isfinite(y).all()):
        raise ValueError("a and b must be finite (no NaN or infinity)")
    n = A.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * np.linalg.norm(A, 1) * max(A.shape)
    w = A.T @ (y - A @ x)
    for _ in range(max_iter or 3 * n):
        if passive.all() or not (w[~passive] > tol).any():
            break
        j = int(np.argmax(np.where(~passive, w, -np.inf)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(A[:, passive], y, rcond=None)[0]
            if (z[passive] > tol).all():
                x = z
                break
            neg = passive & (z <= tol)
            step = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + step * (z - x)
            passive &= x > tol
            x[~passive] = 0.0
        w = A.T @ (y - A @ x)
    return np.maximum(x, 0.0)


_TERM_HELP = {
    "t_round": ("the per-round overhead t_round cannot be told apart from the draft forwards "
                "(each draft was run at a single gamma, so draft forwards per round never vary, "
                "or there are no plain calls); it is fixed at 0 and t_draft absorbs it "
                "(t_draft then = true t_draft + t_round / gamma): run two or more gammas and "
                "plain calls to separate them"),
    "t_call": ("the per-call cost t_call cannot be told apart from the per-forward times "
               "(every call made the same number of forwards); it is fixed at 0"),
    "t_target": ("the target forward time t_target cannot be identified from these calls "
                 "(no plain calls and no varying round counts); it is fixed at 0 and no "
                 "speedup can be predicted"),
}


def fit_timing_models(wall_s, target_forwards, draft_forwards, assisted_rounds,
                      drafts=None) -> TimingFit:
    """Fit one timing model to plain and assisted ``generate`` calls of one or more drafts:
    shared ``t_call``, ``t_target`` and ``t_round``, one ``t_draft`` per draft, every time
    >= 0 (:func:`nnls`).

    Plain-decoding calls have ``draft_forwards = assisted_rounds = 0`` and ``target_forwards``
    = tokens generated; assisted calls have one target forward per round. A term the calls
    cannot identify (e.g. ``t_round`` when each draft ran at a single gamma) is fixed at 0 and a
    warning says so; a term the unconstrained least squares would make negative is held at 0
    and a warning gives the unconstrained value. Nothing is silently NaN or negative.

    Parameters
    ----------
    wall_s, target_forwards, draft_forwards, assisted_rounds : 1-D sequences of equal length
        One entry per call; seconds and counts (>= 0).
    drafts : 1-D sequence of labels, optional
        The draft of each assisted call (ignored for plain calls, i.e. calls with no draft
        forwards and no rounds). None: every assisted call used the same draft, ``"draft"``.

    Returns
    -------
    TimingFit

    Raises
    ------
    ValueError
        Mismatched or empty inputs, negative or NaN values.
    """
    w = _check.real("wall_s", wall_s, lo=0.0)
    tf = _check.real("target_forwards", target_forwards, lo=0.0)
    df = _check.real("draft_forwards", draft_forwards, lo=0.0)
    ar = _check.real("assisted_rounds", assisted_rounds, lo=0.0)
    shapes = {a.shape for a in (w, tf, df, ar)}
    if len(shapes) != 1 or w.ndim != 1 or w.size == 0:
        raise ValueError(f"wall_s, target_forwards, draft_forwards and assisted_rounds must be "
                         f"non-empty 1-D sequences of equal length, got shapes "
                         f"{[a.shape for a in (w, tf, df, ar)]}")
    assisted = (df > 0) | (ar > 0)
    if drafts is None:
        labels = np.array(["draft" if a else "" for a in assisted], dtype=object)
    else:
        labels = np.asarray(list(drafts), dtype=object)
        if labels.shape != w.shape:
            raise ValueError(f"drafts must hold one label per call ({w.size}), got "
                             f"{labels.size}")
    names = list(dict.fromkeys(str(d) for d, a in zip(labels, assisted) if a))
    cols = {"t_call": np.ones_like(w), "t_target": tf, "t_round": ar}
    for d in names:
        cols[f"t_draft[{d}]"] = np.where(assisted & (labels.astype(str) == d), df, 0.0)
    keys = list(cols)
    x_all = np.column_stack([cols[k] for k in keys])
    warns = []
    if not (~assisted).any():
        warns.append("no plain-decoding calls: t_target rests on the assisted calls alone")

    # identifiability: drop terms in a null direction of the (column-scaled) design
    keep = [k for k in keys if np.any(cols[k] != 0)]
    for k in keys:
        if k not in keep and not k.startswith("t_draft"):
            warns.append(f"{k} is fixed at 0: no call exercises it")
    drop_order = ["t_round", "t_call", *[k for k in keys if k.startswith("t_draft")], "t_target"]
    while keep:
        xs = np.column_stack([cols[k] / np.linalg.norm(cols[k]) for k in keep])
        _, s, vt = np.linalg.svd(xs, full_matrices=True)
        rank = int((s > 1e-9 * s[0]).sum())
        if rank == len(keep):
            break
        null = vt[rank:]
        unident = [k for i, k in enumerate(keep) if np.abs(null[:, i]).max() > 1e-6]
        victim = next(k for k in drop_order if k in unident)
        keep.remove(victim)
        warns.append(_TERM_HELP.get(victim, f"{victim} cannot be identified from these calls; "
                                             "it is fixed at 0"))
    if w.size <= len(keep):
        warns.append(f"only {w.size} calls for {len(keep)} times: the fit has no residual "
                     "degrees of freedom, treat the times as rough")

    coef = dict.fromkeys(keys, 0.0)
    if keep:
        x = np.column_stack([cols[k] for k in keep])
        free = np.linalg.lstsq(x, w, rcond=None)[0]
        con = nnls(x, w)
        for k, vf, vc in zip(keep, free, con):
            coef[k] = float(vc)
            if vf < -1e-6 * np.abs(free).max():
                warns.append(f"{k} came out negative ({1e3 * vf:.3g} ms) in the unconstrained "
                             f"least squares and is constrained to >= 0 (now "
                             f"{1e3 * vc:.3g} ms): the calls do not pin it down")
    pred = x_all @ np.array([coef[k] for k in keys])
    ss_res = float(((w - pred) ** 2).sum())
    ss_tot = float(((w - w.mean()) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")
    return TimingFit(t_call=coef["t_call"], t_target=coef["t_target"], t_round=coef["t_round"],
                     t_draft={d: coef[f"t_draft[{d}]"] for d in names}, r2=r2,
                     n_runs=int(w.size), warnings=tuple(warns))


def fit_timing_model(wall_s, target_forwards, draft_forwards, assisted_rounds) -> TimingModel:
    """:func:`fit_timing_models` for calls with a single draft: the :class:`TimingModel` of
    that draft (all times >= 0; ``warnings`` say which terms the calls could not identify).

    All four times are identified only with plain calls and assisted calls at two or more draft
    lengths (so that draft forwards and rounds vary independently); otherwise the unidentified
    term is fixed at 0 with a warning.

    Raises
    ------
    ValueError
        Mismatched or empty inputs, negative or NaN values, or no assisted call.
    """
    fit = fit_timing_models(wall_s, target_forwards, draft_forwards, assisted_rounds)
    if "draft" not in fit.t_draft:
        raise ValueError("draft_forwards must be > 0 in at least one call (an assisted call), "
                         "got none")
    return fit.model("draft")
