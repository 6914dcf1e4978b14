"""A timing model of ``generate`` calls, without torch: wall time = a fixed cost per call +
target forwards + draft forwards + speculative rounds, fitted by non-negative least squares to
plain and assisted calls (one draft or several sharing the target's terms).

Used by :mod:`specnb.measure` (``measure(...).timing``) and notebook 08. Vocabulary as in
:mod:`specnb.acceptance` (gamma, tau, c = draft forward time / target forward time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check, theory

__all__ = [
    "TimingModel",
    "TimingFit",
    "nnls",
    "fit_timing_model",
    "fit_timing_models",
]


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

    keep = _identifiable(cols, keys, warns)
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


def _identifiable(cols, keys, warns) -> list:
    """The terms the calls identify: drop terms in a null direction of the (column-scaled)
    design, in a fixed order; appends why to ``warns``."""
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
    return keep


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
