"""Evaluate the theory functions on a grid of 1,000,000 (alpha, gamma, c) points.

Targets (issue 10), on the 2-core development machine:

* Eq. 1 + Theorem 3.8 + Theorem 3.11 on the 1,000,000-point grid: under 50 ms together;
* ``alpha_from_acceptance_length`` (the inverse of Eq. 1): under 100 ms per 1,000,000 points.

Two ways to pass the grid are timed: as broadcasting axes (alpha (100, 1, 1), gamma (1, 10, 1),
c (1, 1, 1000), as a notebook does) and as three full 1,000,000-element arrays (every input
point distinct in memory, the worst case). Each figure is the best of 5 runs after one
warm-up call; timings on shared machines are noisy, so compare figures from one run.
"""

import time

import numpy as np
from _goals import goal_line

from specnb import theory

N_ALPHA, N_GAMMA, N_C = 100, 10, 1000  # 1,000,000 points
N = N_ALPHA * N_GAMMA * N_C
alpha = np.linspace(0.0, 1.0, N_ALPHA)[:, None, None]
gamma = np.arange(1, N_GAMMA + 1)[None, :, None]
c = np.linspace(0.0, 0.5, N_C)[None, None, :]
SHAPE = (N_ALPHA, N_GAMMA, N_C)


def best_of(fn, repeat=5):
    out = fn()  # warm-up: first-touch page faults are not the function's cost
    assert np.size(out) >= N
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    a_full = np.ascontiguousarray(np.broadcast_to(alpha, SHAPE))
    g_full = np.ascontiguousarray(np.broadcast_to(gamma, SHAPE))
    c_full = np.ascontiguousarray(np.broadcast_to(c, SHAPE))
    tau = theory.expected_tokens_per_step(a_full, g_full)
    core = {
        "broadcast axes": {
            "expected_tokens_per_step (Eq. 1)": lambda: theory.expected_tokens_per_step(alpha, gamma) + 0 * c,
            "walltime_speedup (Thm 3.8)": lambda: theory.walltime_speedup(alpha, gamma, c),
            "operations_factor (Thm 3.11)": lambda: theory.operations_factor(alpha, gamma, c),
        },
        "full 1M-element arrays": {
            "expected_tokens_per_step (Eq. 1)": lambda: theory.expected_tokens_per_step(a_full, g_full),
            "walltime_speedup (Thm 3.8)": lambda: theory.walltime_speedup(a_full, g_full, c_full),
            "operations_factor (Thm 3.11)": lambda: theory.operations_factor(a_full, g_full, c_full),
        },
    }
    print(f"grid: {N:,} points (alpha x gamma x c)")
    for how, fns in core.items():
        figures = {name: best_of(fn) for name, fn in fns.items()}
        for name, t in figures.items():
            print(f"  {how:<24} {name:<36} {t * 1e3:8.1f} ms")
        total = sum(figures.values())
        print(goal_line(f"Eq. 1 + Thm 3.8 + Thm 3.11, {how:<24}", total * 1e3, 50, "ms"))
    t_inv = best_of(lambda: theory.alpha_from_acceptance_length(tau, g_full))
    print(goal_line(f"alpha_from_acceptance_length, {N:,} taus (gamma 1-10)", t_inv * 1e3, 100,
                    "ms"))
    t_opt = best_of(lambda: theory.optimal_gamma(np.linspace(0, 1, 100)[:, None],
                                                 np.linspace(0, 0.5, 100)[None, :])[0].repeat(100), 3)
    print(f"optimal_gamma, 1e4 (alpha, c), gamma <= 64        {t_opt * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
