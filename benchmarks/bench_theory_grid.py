"""Evaluate the theory functions on a grid of 1,000,000 (alpha, gamma, c) points.

Target (issue 2): under 100 ms on the 2-core development machine for the three formulas
together. Prints the best of 5 runs per function; timings on shared machines are noisy, so
compare figures from one run.
"""

import time

import numpy as np

from specnb import theory

N_ALPHA, N_GAMMA, N_C = 100, 10, 1000  # 1,000,000 points
alpha = np.linspace(0.0, 1.0, N_ALPHA)[:, None, None]
gamma = np.arange(1, N_GAMMA + 1)[None, :, None]
c = np.linspace(0.0, 0.5, N_C)[None, None, :]


def best_of(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    assert np.size(out) >= N_ALPHA * N_GAMMA * N_C or np.size(out) >= N_ALPHA * N_C
    return min(times)


def main():
    a_flat = np.broadcast_to(alpha, (N_ALPHA, N_GAMMA, N_C))
    g_flat = np.broadcast_to(gamma, (N_ALPHA, N_GAMMA, N_C))
    tau = theory.expected_tokens_per_step(a_flat, g_flat)
    figures = {
        "expected_tokens_per_step": best_of(lambda: theory.expected_tokens_per_step(a_flat, g_flat)),
        "walltime_speedup": best_of(lambda: theory.walltime_speedup(alpha, gamma, c)),
        "operations_factor": best_of(lambda: theory.operations_factor(alpha, gamma, c)),
        "alpha_from_acceptance_length": best_of(lambda: theory.alpha_from_acceptance_length(tau, g_flat), 1),
        "optimal_gamma (1e4 alpha x c, gamma <= 64)": best_of(
            lambda: theory.optimal_gamma(np.linspace(0, 1, 100)[:, None], np.linspace(0, 0.5, 100)[None, :])[0]
            .repeat(100), 3),
    }
    print(f"grid: {N_ALPHA * N_GAMMA * N_C:,} points (alpha x gamma x c)")
    for name, t in figures.items():
        print(f"{name:<45} {t * 1e3:8.1f} ms")
    core = sum(figures[k] for k in ["expected_tokens_per_step", "walltime_speedup", "operations_factor"])
    print(f"{'Eq. 1 + Thm 3.8 + Thm 3.11 together':<45} {core * 1e3:8.1f} ms  (target < 100 ms)")


if __name__ == "__main__":
    main()
