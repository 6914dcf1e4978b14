"""Leviathan, Kalman & Matias, *Fast Inference from Transformers via Speculative Decoding*
(arXiv 2211.17192 v2, ICML 2023): the closed-form results of section 3.

Notation, as in the paper and in vLLM:

* ``alpha`` -- acceptance rate, E(beta) (Definition 3.1); in [0, 1].
* ``gamma`` -- draft length, vLLM's ``num_speculative_tokens``; an integer >= 0 (>= 1 where stated).
* ``c`` -- cost coefficient, draft time / target time for one forward (Definition 3.7); >= 0.
* ``c_hat`` -- the same ratio in arithmetic operations per token (Definition 3.10); >= 0.
* ``tau`` -- mean acceptance length: tokens produced per target verification, bonus token
  included (accepted draft tokens + 1, as vLLM and EAGLE count it); in [1, gamma + 1].

All functions take scalars or numpy arrays that broadcast against each other. A scalar input
gives a Python ``float``; an array input gives an ``ndarray``. Every function assumes i.i.d.
betas, as the paper does, and Theorem 3.8 further assumes the target verifies gamma + 1
positions in the time of one (section 3.3). Measurements land on both sides of it: in
Leviathan Table 4, T5-small drafts measure 1.06-1.29x the theorem and T5-large 0.68-1.10x.
"""

from __future__ import annotations

import numpy as np

from . import _check

#: The largest ``num_speculative_tokens`` specnb evaluates (``plan``, ``simulate``, ``replay``):
#: far above any setting vLLM's docs or the papers use (<= 10); larger ones only make a replay
#: run for hours (gamma 100000 did) and a plan print 0.00x.
MAX_GAMMA = 64

__all__ = [
    "MAX_GAMMA",
    "expected_tokens_per_step",
    "tau_from_rates",
    "tokens_per_step",
    "walltime_speedup",
    "operations_factor",
    "optimal_gamma",
    "optimum_beyond_limit",
    "alpha_from_acceptance_length",
    "tau_by_gamma",
    "summary",
    "gamma_tradeoff",
    "latency_reduction",
]


#: gamma x input elements :func:`optimal_gamma` evaluates at once (8 MiB per float array).
_CHUNK = 1 << 20

#: Newton on Eq. 1 (:func:`alpha_from_acceptance_length`): iteration cap and step tolerance.
#: Convergence is quadratic, so a last step under 1e-10 leaves an error near 1e-20 (far below
#: double precision); every case tested needs at most 6 iterations.
_NEWTON_MAX_ITER = 60
_NEWTON_TOL = 1e-10
#: The largest double below 1: the upper end of the Newton bracket (keeps 1 - alpha > 0).
_BELOW_ONE = float(np.nextafter(1.0, 0.0))


def _alpha(alpha):
    return _check.real("alpha", alpha, lo=0.0, hi=1.0)


def _tokens(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Eq. 1 on checked arrays; exact limit gamma + 1 at alpha = 1, stable near 1."""
    g1 = np.asarray(np.add(g, 1.0))  # float gamma + 1
    with np.errstate(divide="ignore", invalid="ignore"):
        # 1 - a^(g+1) = -expm1((g+1) log a) keeps its digits when a is close to 1.
        res = np.asarray(np.multiply(np.log(a), g1))  # the broadcast shape; then in place
        np.expm1(res, out=res)
        res /= np.subtract(a, 1.0)
    one = a == 1.0
    if one.any():
        np.copyto(res, g1, where=one)
    return res


def _speedup(a, g, cc):
    """Theorem 3.8 on checked arrays: Eq. 1 over the cost of a round, gamma c + 1."""
    return _tokens(a, g) / (g * cc + 1.0)


def expected_tokens_per_step(alpha, gamma):
    """Expected tokens produced by one run of Algorithm 1 (one target verification).

    Equation 1 of Leviathan et al. (v2): ``(1 - alpha**(gamma + 1)) / (1 - alpha)``, with the
    limit ``gamma + 1`` at ``alpha = 1``. Under i.i.d. acceptance this is the mean acceptance
    length tau (accepted draft tokens + the bonus token).

    Parameters
    ----------
    alpha : float or array, in [0, 1]
        Acceptance rate.
    gamma : int or array of int, >= 0
        Draft tokens proposed per step (``num_speculative_tokens``).

    Returns
    -------
    float or ndarray, tokens per step, in [1, gamma + 1].

    Raises
    ------
    ValueError
        alpha outside [0, 1] or NaN; gamma negative, fractional, NaN or above 2**53; shapes
        that do not broadcast.
    TypeError
        a non-number (None, a bool, a string), also inside a list or array.
    """
    a = _alpha(alpha)
    g = _check.integer("gamma", gamma, lo=0)
    a, g = _check.broadcast(alpha=a, gamma=g)
    return _check.out(_tokens(a, g))


def tau_from_rates(acceptance_rates, gamma, *, non_increasing: bool = False):
    """Mean acceptance length from per-position acceptance rates: ``1 + r_1 + ... + r_gamma``.

    The survival form of Eq. 1 without the i.i.d. assumption: r_i is the fraction of
    verifications whose draft is accepted up to position i (vLLM's per-position acceptance;
    not SpecDecode-Bench's P(L >= 1 + i), a share over all token positions whose sum runs
    above the tau of its own path, :func:`specnb.advise.workload_acceptance`); with
    r_i = alpha**i it is Eq. 1. Acceptance is
    prefix-based, so shortening the draft keeps the earlier rates.

    Parameters
    ----------
    acceptance_rates : 1-D sequence of fractions in [0, 1], position 1 first; at least one.
    gamma : int or array of int, in [0, len(acceptance_rates)]
        Draft length(s) (``num_speculative_tokens``).
    non_increasing : bool
        Also refuse rates that increase with the position (vLLM's counts cannot;
        :func:`tokens_per_step` asks for it).

    Returns
    -------
    float or ndarray (gamma's shape), tokens per verification, in [1, gamma + 1].

    Raises
    ------
    TypeError
        acceptance_rates not a 1-D sequence of numbers.
    ValueError
        a rate outside [0, 1] or NaN; no rates; with ``non_increasing``, a rate above the one
        before it; gamma negative or fractional; gamma above the number of rates.
    """
    if np.ndim(acceptance_rates) != 1 or isinstance(acceptance_rates, (str, bytes)):
        raise TypeError("acceptance_rates must be a 1-D sequence of numbers (one per draft "
                        "position)")
    r = _check.real("acceptance_rates", list(acceptance_rates), lo=0.0, hi=1.0)
    if r.size == 0:
        raise _check.ParamValueError("acceptance_rates must hold at least one rate",
                                     "acceptance_rates")
    up = np.flatnonzero(np.diff(r) > 0) if non_increasing else ()
    if len(up):
        i = int(up[0])
        raise _check.ParamValueError(
            f"acceptance_rates must not increase with the position (vLLM's per-position rates "
            f"count drafts accepted at position i, which cannot exceed those at i - 1), got "
            f"{r[i]:g} then {r[i + 1]:g} at positions {i + 1} and {i + 2}", "acceptance_rates")
    g = _check.integer("gamma", gamma, lo=0)
    if g.max(initial=0) > r.size:
        raise ValueError(f"gamma {int(g.max())} needs {int(g.max())} acceptance rates, got "
                         f"{r.size}")
    cum = np.concatenate([[1.0], 1.0 + np.cumsum(r)])
    return _check.out(cum[g])


def tokens_per_step(gamma, *, alpha=None, tau=None, acceptance_rates=None):
    """tau, the tokens one verification yields, by draft length; exactly one source.

    * ``alpha``: Leviathan et al. Eq. 1 (i.i.d. acceptance), via
      :func:`expected_tokens_per_step`.
    * ``tau``: given (broadcast against gamma); must be in [1, gamma + 1]. A tau measured at
      one gamma does not carry over to another.
    * ``acceptance_rates``: vLLM's per-position acceptance rates r_1, r_2, ... (accepted at
      position i / drafts; non-increasing, in [0, 1]); tau(gamma) = 1 + r_1 + ... + r_gamma,
      the survival form of vLLM's dynamic-SD manager (reference 5.3), :func:`tau_from_rates`. Needs at least max(gamma) rates.

    Raises
    ------
    ValueError
        none or several sources; alpha or a rate outside [0, 1]; tau outside [1, gamma + 1];
        rates that increase; fewer rates than gamma; gamma < 1.

    Here, not in :mod:`specnb.serving` (which re-exports it), so that a command line checks
    its acceptance flags without importing the serving model.
    """
    given = [k for k, v in (("alpha", alpha), ("tau", tau),
                            ("acceptance_rates", acceptance_rates)) if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of alpha, tau or acceptance_rates, got "
                         + (", ".join(given) if given else "none"))
    g = _check.integer("gamma", gamma, lo=1)
    if alpha is not None:
        return expected_tokens_per_step(alpha, g)
    if tau is not None:
        t = _check.real("tau", tau, lo=1.0)
        t, gg = _check.broadcast(tau=t, gamma=g)
        over = t > gg + 1
        if over.any():
            i = np.flatnonzero(over.ravel())[0]
            raise _check.ParamValueError(
                f"tau must be in [1, gamma + 1] = [1, {int(gg.ravel()[i]) + 1}] for gamma = "
                f"{int(gg.ravel()[i])}, got {float(t.ravel()[i])!r}", "tau")
        return _check.out(t.astype(float))
    return tau_from_rates(acceptance_rates, g, non_increasing=True)


def walltime_speedup(alpha, gamma, c):
    """Expected walltime improvement factor of speculative decoding.

    Theorem 3.8 of Leviathan et al. (v2):
    ``(1 - alpha**(gamma + 1)) / ((1 - alpha) * (gamma * c + 1))``. At ``gamma = 1`` this is
    ``(1 + alpha) / (1 + c)`` (Corollary 3.9). Assumes the target scores gamma + 1 positions in
    the time of one and long generations.

    Parameters
    ----------
    alpha : float or array, in [0, 1]
    gamma : int or array of int, >= 0
    c : float or array, >= 0
        Draft forward time / target forward time.

    Returns
    -------
    float or ndarray, speedup factor over plain decoding (1.0 = no change; > 0).

    Raises
    ------
    ValueError
        alpha outside [0, 1], gamma negative or fractional, c negative or infinite, any NaN;
        shapes that do not broadcast.
    TypeError
        a non-number (None, a bool, a string), also inside a list or array.
    """
    a = _alpha(alpha)
    g = _check.integer("gamma", gamma, lo=0)
    cc = _check.real("c", c, lo=0.0)
    _check.broadcast(alpha=a, gamma=g, c=cc)  # shape check only
    # Computed on the inputs' own shapes: Eq. 1 on alpha x gamma, then one broadcast divide.
    return _check.out(_speedup(a, g, cc))


def operations_factor(alpha, gamma, c_hat):
    """Expected factor of increase in total arithmetic operations.

    Theorem 3.11 of Leviathan et al. (v2):
    ``(1 - alpha) * (gamma * c_hat + gamma + 1) / (1 - alpha**(gamma + 1))``.

    Parameters
    ----------
    alpha : float or array, in [0, 1]
    gamma : int or array of int, >= 0
    c_hat : float or array, >= 0
        Draft operations per token / target operations per token.

    Returns
    -------
    float or ndarray, operations with speculation / operations without (>= 1 when c_hat >= 0
    and gamma >= 0).

    Raises
    ------
    ValueError
        alpha outside [0, 1], gamma negative or fractional, c_hat negative or infinite, any
        NaN; shapes that do not broadcast.
    TypeError
        a non-number (None, a bool, a string), also inside a list or array.
    """
    a = _alpha(alpha)
    g = _check.integer("gamma", gamma, lo=0)
    ch = _check.real("c_hat", c_hat, lo=0.0)
    _check.broadcast(alpha=a, gamma=g, c_hat=ch)  # shape check only
    return _check.out((g * ch + g + 1.0) / _tokens(a, g))


def optimal_gamma(alpha, c, gamma_max: int = 64):
    """The draft length that maximizes Theorem 3.8, found numerically (section 3.5).

    The paper gives no closed form: "since gamma is an integer, it can be easily found
    numerically". Every integer gamma in ``[0, gamma_max]`` is considered; ``gamma = 0`` means
    "do not speculate" (speedup 1) and is returned when no gamma >= 1 beats plain decoding,
    which happens exactly when ``alpha <= c`` (Corollary 3.9). Ties go to the smaller gamma.

    Gammas are evaluated in chunks (memory stays bounded for any ``gamma_max``), and the
    search stops once no larger gamma can win: Eq. 1 never exceeds ``1 / (1 - alpha)``, so
    the speedup at gamma is at most ``1 / ((1 - alpha) (gamma c + 1))``; at ``alpha = 1`` it is
    at most 1 when ``c >= 1``. The result is the same as evaluating every gamma. Time still
    grows with ``gamma_max`` where nothing can be ruled out (``alpha = 1`` with ``c < 1``,
    where the answer is ``gamma_max``; or alpha within about 1e-9 of 1 with c near 0).

    Parameters
    ----------
    alpha : float or array, in [0, 1]
    c : float or array, >= 0
    gamma_max : int, in [1, 2**53]
        Largest draft length considered (vLLM accepts any positive integer; 64 by default).

    Returns
    -------
    (gamma, speedup) : (int, float) for scalar inputs, (ndarray of int, ndarray) otherwise.

    Raises
    ------
    ValueError
        alpha outside [0, 1], c negative or infinite, gamma_max < 1 or fractional, any NaN;
        alpha and c shapes that do not broadcast.
    TypeError
        a non-number; gamma_max not a single integer.
    """
    a = _alpha(alpha)
    cc = _check.real("c", c, lo=0.0)
    gmax = _check.scalar_int("gamma_max", gamma_max, lo=1)
    a, cc = _check.broadcast(alpha=a, c=cc)
    af, cf = a.ravel(), cc.ravel()
    best = np.zeros(af.shape, dtype=np.int64)
    best_speed = np.full(af.shape, -np.inf)
    todo = np.arange(af.size)
    start = 0
    while todo.size and start <= gmax:
        # chunks grow from 65 gammas (the default gamma_max in one go) to _CHUNK elements
        step = max(1, min(gmax + 1 - start, _CHUNK // todo.size, max(65, start)))
        g = np.arange(start, start + step, dtype=np.int64)[:, None]
        at, ct = af[todo], cf[todo]
        speed = _speedup(at[None, :], g, ct[None, :])
        i = np.argmax(speed, axis=0)  # first maximum: ties go to the smaller gamma
        s = speed[i, np.arange(todo.size)]
        better = s > best_speed[todo]
        best[todo[better]] = start + i[better]
        best_speed[todo[better]] = s[better]
        start += step
        # An upper bound, in the same floating-point operations, for every gamma >= start.
        with np.errstate(divide="ignore"):
            bound = np.where(at < 1.0, (1.0 / (1.0 - at)) / (start * ct + 1.0),
                             np.where(ct >= 1.0, 1.0, np.inf))
        todo = todo[bound > best_speed[todo]]
    best, best_speed = best.reshape(a.shape), best_speed.reshape(a.shape)
    if best.ndim == 0:
        return int(best), float(best_speed)
    return best, best_speed


def optimum_beyond_limit(alpha, c, gamma_max: int = 64):
    """True where a draft length above ``gamma_max`` beats every gamma up to it (Theorem 3.8).

    Then :func:`optimal_gamma` returns ``gamma_max`` because it stopped searching there, not
    because gamma_max is optimal. As a function of real gamma, Theorem 3.8's speedup is a
    concave function (1 - alpha^(gamma+1)) over a positive affine one ((1 - alpha)(gamma c + 1)),
    hence quasi-concave: it rises to one peak and falls. So the optimum lies beyond the limit
    exactly when the speedup still rises from ``gamma_max`` to ``gamma_max + 1``. With c = 0
    and alpha > 0, or alpha = 1 and c < 1, it rises for ever (no finite optimum).

    Parameters
    ----------
    alpha : float or array, in [0, 1]
    c : float or array, >= 0
    gamma_max : int, in [1, 2**53 - 1]

    Returns
    -------
    bool for scalar inputs, boolean ndarray otherwise.

    Raises
    ------
    ValueError
        as :func:`optimal_gamma`.
    TypeError
        a non-number; gamma_max not a single integer.
    """
    a = _alpha(alpha)
    cc = _check.real("c", c, lo=0.0)
    gmax = _check.scalar_int("gamma_max", gamma_max, lo=1, hi=_check.MAX_EXACT_INT - 1)
    a, cc = _check.broadcast(alpha=a, c=cc)
    g = np.int64(gmax)
    rising = _speedup(a, g + 1, cc) > _speedup(a, g, cc)
    return bool(rising) if rising.ndim == 0 else rising


def alpha_from_acceptance_length(tau, gamma):
    """The acceptance rate alpha for which Eq. 1 equals a measured mean acceptance length.

    Inverts ``tau = (1 - alpha**(gamma + 1)) / (1 - alpha)`` (Leviathan et al., Eq. 1) for
    alpha in [0, 1]. This is how alpha is read off vLLM's spec-decode metrics, where
    ``tau = 1 + accepted_tokens / drafts`` at a fixed ``num_speculative_tokens = gamma``.
    Eq. 1 is strictly increasing in alpha for gamma >= 1, so the root is unique; it is found
    by a guarded, vectorized Newton iteration (at most 6 steps on every case tested, gamma 1 to
    1000), to within a few units of double precision (|alpha - exact| < 1e-12; Eq. 1 at the
    result reproduces tau to about 1e-15 relative).

    Parameters
    ----------
    tau : float or array, in [1, gamma + 1]
        Mean acceptance length, bonus token included.
    gamma : int or array of int, >= 1

    Returns
    -------
    float or ndarray, alpha in [0, 1].

    Raises
    ------
    ValueError
        gamma < 1 or fractional; tau NaN or outside [1, gamma + 1] (a tau above gamma + 1
        usually means the accepted-token count already includes the bonus token, or gamma is
        not the configured ``num_speculative_tokens``); shapes that do not broadcast.
    TypeError
        a non-number (None, a bool, a string), also inside a list or array.
    """
    g = _check.integer("gamma", gamma, lo=1)
    t = _check.real("tau", tau, lo=1.0)
    t, g = _check.broadcast(tau=t, gamma=g)
    over = t > g + 1
    if over.any():
        i = np.flatnonzero(over.ravel())[0]
        raise ValueError(
            f"tau must be in [1, gamma + 1] = [1, {int(g.ravel()[i]) + 1}] for gamma = "
            f"{int(g.ravel()[i])}, got {float(t.ravel()[i])!r}; tau counts accepted draft "
            "tokens per verification + 1, so it cannot exceed gamma + 1"
        )
    return _check.out(_alpha_from_tau(t, g))


#: The stable code of :func:`tau_by_gamma`'s note.
TAU_AT_FIRST_GAMMA = "tau-read-at-first-gamma"


def tau_by_gamma(tau, gammas):
    """tau at each of ``gammas`` from what was measured: the one rule ``specnb plan --tau`` and
    ``specnb simulate --tau`` follow.

    * one tau per gamma (a sequence as long as ``gammas``): as given, each in [1, gamma + 1];
    * one tau (a number, or a sequence of one) with one or more gammas: **measured at the
      first gamma** ``gammas[0]``; alpha is Eq. 1 inverted there
      (:func:`alpha_from_acceptance_length`; 1 at tau = gamma + 1) and tau at every gamma is
      Eq. 1 at that alpha (:func:`expected_tokens_per_step`). The same tau at every gamma
      would describe no draft (a draft's mean acceptance length grows with its length) and
      make every longer gamma pay its draft cost for nothing.

    Returns
    -------
    (taus, alpha, note): taus a float ndarray, one per gamma; alpha the Eq. 1 alpha (None
    when one tau per gamma was given); note a :class:`specnb.notes.Note` (code
    :data:`TAU_AT_FIRST_GAMMA`) when one tau was read at several gammas, else None.

    Raises
    ------
    ValueError
        gammas empty or < 1; a tau outside [1, gamma + 1] at the gamma it is read at; more
        than one tau but not one per gamma.
    """
    from .notes import Note

    g = np.atleast_1d(_check.integer("gammas", gammas, lo=1))
    if g.ndim != 1 or g.size == 0:
        raise _check.ParamValueError(f"gammas must be a non-empty list, got {gammas!r}",
                                     "gammas")
    t = np.atleast_1d(_check.real("tau", tau, lo=1.0)).astype(float)
    if t.size == g.size and t.size > 1:
        return np.asarray(tokens_per_step(g, tau=t), dtype=float), None, None
    if t.size != 1:
        raise _check.ParamValueError(
            f"tau takes one value (measured at the first gamma) or one per gamma "
            f"({g.size}), got {t.size}", "tau")
    g0 = int(g[0])
    t0 = float(tokens_per_step(g0, tau=float(t[0])))
    a = 1.0 if t0 >= g0 + 1 else float(alpha_from_acceptance_length(t0, g0))
    taus = np.asarray(expected_tokens_per_step(a, g), dtype=float).reshape(g.shape)
    taus[0] = t0  # exactly as measured, not Eq. 1's round trip
    note = None
    if g.size > 1:
        note = Note(TAU_AT_FIRST_GAMMA, (
            f"tau {t0:g} is read as measured at the first gamma listed ({g0}): Eq. 1's alpha "
            f"{a:.3f} gives tau " + ", ".join(f"{x:.2f} at gamma {int(k)}"
                                               for k, x in zip(g, taus)) +
            " (i.i.d. acceptance; give one tau per gamma to use measured values)"))
    return taus, a, note


def _alpha_from_tau(t: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Solve Eq. 1 for alpha on checked, broadcast arrays (1 <= t <= g + 1, g >= 1).

    Guarded Newton on S(a) = sum_{k=0..g} a^k = t. S is increasing and convex on [0, 1]
    (every coefficient is positive), so from any point right of the root Newton's iterates
    fall monotonically onto it, and from the left the first step lands right of it. Start:
    the root lies in [1 - 1/t, 1 - 2 (g + 1 - t) / (g (g + 1))] (S < 1 / (1 - a) gives the
    lower end, the tangent at a = 1, which S lies above, the upper end); start at the upper
    end where it is within 1/g of 1 (root near 1, tangent nearly exact), else at the lower end
    (root far from 1, a^(g+1) small, so 1 - 1/t is nearly exact). The first step is clamped to
    the upper end (a step from the lower end may overshoot); after it the iterates fall
    monotonically onto the root. At most 6 iterations on every case tested (gamma 1 to 1e5).
    """
    t, g = np.broadcast_arrays(t, g)
    res = np.empty(t.shape)
    flat_t, flat_g = t.ravel(), g.ravel()
    out = res.ravel()  # a view: res is freshly allocated and contiguous
    edge_lo, edge_hi = flat_t <= 1.0, flat_t >= flat_g + 1
    out[edge_lo] = 0.0
    out[edge_hi] = 1.0
    idx = np.flatnonzero(~(edge_lo | edge_hi))
    tt = flat_t[idx]
    gf = flat_g[idx].astype(float)
    g1 = gf + 1.0
    lo = 1.0 - 1.0 / tt
    hi = np.minimum(1.0 - 2.0 * (g1 - tt) / (gf * g1), _BELOW_ONE)
    a = np.where(gf * (1.0 - hi) < 1.0, hi, lo)
    # Iterates never exceed hi, so only these can come within 1e-4 / g of 1 (Taylor form).
    maybe_near = bool((gf * (1.0 - hi) < 1e-4).any())
    pending = np.ones(idx.size, dtype=bool)
    for it in range(_NEWTON_MAX_ITER):
        e = 1.0 - a
        em = np.log(a)
        em *= g1
        np.expm1(em, out=em)                     # a^(g+1) - 1, exact near a = 1
        s = em / e
        s *= -1.0                                # Eq. 1
        # S'(a) = (S - (g+1) a^g) / (1 - a); the difference cancels near a = 1, where the
        # Taylor form S'(1) - S''(1) (1 - a) replaces it (relative error ~ (g (1 - a))^2).
        ds = em + 1.0
        ds *= g1
        ds /= a
        np.subtract(s, ds, out=ds)
        ds /= e
        if maybe_near:
            near = gf * e < 1e-4
            gn, en = gf[near], e[near]
            ds[near] = gn * (gn + 1.0) * (0.5 - (gn - 1.0) * en / 3.0)
        s -= tt
        s /= ds                                  # the Newton step
        new = a - s
        if it == 0:
            # Only a first step from lo can pass the root; Newton on a convex increasing
            # function then falls monotonically onto it, so hi needs no later check.
            np.minimum(new, hi, out=new)
        np.abs(s, out=s)
        # A point's answer is its iterate at the first step under the tolerance, whatever else
        # is in the batch (so a vectorized call equals the scalar ones bit for bit).
        fin = np.flatnonzero((s <= _NEWTON_TOL) & pending)
        if fin.size:
            out[idx[fin]] = new[fin]
            pending[fin] = False
        n_left = np.count_nonzero(pending)
        if n_left == 0:
            break
        if (pending.size - n_left) * 8 >= pending.size:  # drop finished points in batches
            keep = np.flatnonzero(pending)  # positions once, then take: cheaper than masks
            idx, tt, gf, new = (x.take(keep) for x in (idx, tt, gf, new))
            g1 = gf + 1.0
            pending = np.ones(keep.size, dtype=bool)
        a = new
    else:  # pragma: no cover - not reached on any input tested
        raise RuntimeError("alpha_from_acceptance_length: Newton did not converge for "
                           f"tau = {float(tt[pending][0])!r}, gamma = {int(gf[pending][0])}; "
                           "please report it")
    return res


def summary(alpha: float, gamma: int, c: float, c_hat: float | None = None,
            gamma_max: int = 64) -> dict:
    """One setting at a glance: Eq. 1, Theorem 3.8, Theorem 3.11 and the optimal gamma.

    ``c_hat`` defaults to ``c`` (as the article sets it). Scalars only.

    Returns
    -------
    dict with keys ``tokens_per_step``, ``speedup``, ``operations``, ``optimal_gamma`` and
    ``optimal_speedup`` (floats, the gamma an int; the optimum searched over gamma in
    [0, ``gamma_max``]) and ``optimum_beyond_limit`` (bool, :func:`optimum_beyond_limit`: the
    true optimum lies above ``gamma_max``, so ``optimal_gamma`` is only the search limit).

    Raises
    ------
    ValueError
        as the underlying functions.
    TypeError
        an array or list where a single number is expected, or a non-number.
    """
    alpha = _check.scalar_real("alpha", alpha)
    gamma = _check.scalar_int("gamma", gamma)
    c = _check.scalar_real("c", c)
    c_hat = c if c_hat is None else _check.scalar_real("c_hat", c_hat)
    g_opt, s_opt = optimal_gamma(alpha, c, gamma_max=gamma_max)
    return {
        "tokens_per_step": float(expected_tokens_per_step(alpha, gamma)),
        "speedup": float(walltime_speedup(alpha, gamma, c)),
        "operations": float(operations_factor(alpha, gamma, c_hat)),
        "optimal_gamma": int(g_opt),
        "optimal_speedup": float(s_opt),
        "optimum_beyond_limit": optimum_beyond_limit(alpha, c, gamma_max),
    }


def gamma_tradeoff(alpha, c, gamma_from: int, gamma_to: int, c_hat=None) -> dict:
    """What changing the draft length buys: relative change in speedup and in operations.

    ``speed_gain = S(gamma_to) / S(gamma_from) - 1`` (Theorem 3.8) and
    ``operations_gain = O(gamma_to) / O(gamma_from) - 1`` (Theorem 3.11), as fractions
    (0.05 = +5%). The article's example: alpha 0.8, c = c_hat = 0.05, gamma 5 -> 8 gives
    +4.8% speed for +28.2% operations. ``c_hat`` defaults to ``c``.

    Raises
    ------
    ValueError
        as :func:`walltime_speedup` and :func:`operations_factor`.
    """
    c_hat = c if c_hat is None else c_hat
    s0, s1 = walltime_speedup(alpha, gamma_from, c), walltime_speedup(alpha, gamma_to, c)
    o0, o1 = operations_factor(alpha, gamma_from, c_hat), operations_factor(alpha, gamma_to, c_hat)
    return {"speed_gain": _check.out(np.asarray(s1) / s0 - 1.0),
            "operations_gain": _check.out(np.asarray(o1) / o0 - 1.0)}


def latency_reduction(speedup):
    """Fraction of latency removed by a speedup: ``1 - 1 / speedup`` (1.25x -> 0.20).

    Raises
    ------
    ValueError
        speedup <= 0, infinite or NaN.
    """
    s = _check.real("speedup", speedup, lo=0.0, lo_open=True)
    return _check.out(1.0 - 1.0 / s)
