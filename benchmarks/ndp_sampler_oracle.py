"""Bias of the conditional samplers with an oracle noise model (no training involved).

For GP data y_0 ~ N(0, K), the exact noise prediction is E[eps | y_t] = s (a^2 K + s^2 I)^-1 y_t.
With it every step of ``conditional_sample`` is linear-Gaussian, so the exact distribution of
its output is propagated in closed form (no Monte Carlo) and compared with the exact GP
posterior: KL divergence per target point, mean ratio of variances, RMS mean error in posterior
standard deviations. SE kernel, lengthscale 0.25, noise 0.0025, 3/5/9 context points and 20
targets on U(-2, 2), the official 500-level schedule.

Run (about a minute)::

    python benchmarks/ndp_sampler_oracle.py
"""

from __future__ import annotations

import math

import numpy as np

from skdiff.diffusion import NoiseSchedule, strided_levels


def propagate(ab, K, C, y_ctx, levels, U, eta=1.0):
    """Exact mean/covariance of the targets returned by ``conditional_sample``."""
    abf = lambda t: 1.0 if t < 0 else ab[t]  # noqa: E731
    N = K.shape[0]
    M = N - C
    m, P = np.zeros(M), np.eye(M)

    def reverse(m, P, t, s):
        a, sd = math.sqrt(abf(t)), math.sqrt(1 - abf(t))
        G = sd * np.linalg.inv(a * a * K + sd * sd * np.eye(N))
        var = eta**2 * (1 - abf(s)) / (1 - abf(t)) * (1 - abf(t) / abf(s))
        cx = math.sqrt(abf(s) / abf(t))
        A = cx * np.eye(N) + (math.sqrt(max(1 - abf(s) - var, 0)) - cx * sd) * G
        Atc, Att = A[C:, :C], A[C:, C:]
        return (Atc @ (a * y_ctx) + Att @ m,
                sd * sd * Atc @ Atc.T + Att @ P @ Att.T + var * np.eye(M))

    for i, t in enumerate(levels):
        s = levels[i + 1] if i + 1 < len(levels) else -1
        if s >= 0:
            for _ in range(U):
                m, P = reverse(m, P, t, s)
                r2 = abf(t) / abf(s)
                m, P = math.sqrt(r2) * m, r2 * P + (1 - r2) * np.eye(M)
        m, P = reverse(m, P, t, s)
    return m, P


def kl_per_point(m1, P1, m0, P0):
    iP0 = np.linalg.inv(P0)
    d = m0 - m1
    return 0.5 * (np.trace(iP0 @ P1) + d @ iP0 @ d - len(m0) + np.linalg.slogdet(P0)[1]
                  - np.linalg.slogdet(P1)[1]) / len(m0)


def main():
    ab = NoiseSchedule.official().alpha_bars.double().numpy()
    rng = np.random.default_rng(0)
    tasks = []
    for C in (3, 5, 9):
        x = rng.uniform(-2, 2, C + 20)
        K = np.exp(-0.5 * (x[:, None] - x[None]) ** 2 / 0.25**2) + 0.0025 * np.eye(C + 20)
        y_ctx = rng.multivariate_normal(np.zeros(C), K[:C, :C])
        sol = np.linalg.solve(K[:C, :C], K[:C, C:])
        tasks.append((C, K, y_ctx, sol.T @ y_ctx, K[C:, C:] - K[:C, C:].T @ sol))
    full = list(range(499, -1, -1))
    configs = [
        ("DDPM-500, U=0", full, 0, 1.0), ("DDPM-500, U=5", full, 5, 1.0),
        ("DDPM-500, U=10", full, 10, 1.0),
        ("50 uniform, U=1", strided_levels(500, 50, "uniform"), 1, 1.0),
        ("25 uniform, U=3", strided_levels(500, 25, "uniform"), 3, 1.0),
        ("100 uniform, DDIM eta=0, U=0", strided_levels(500, 100, "uniform"), 0, 0.0),
        ("20 quadratic, U=4 (default)", strided_levels(500, 20), 4, 1.0),
        ("25 quadratic, U=3", strided_levels(500, 25), 3, 1.0),
        ("12 quadratic, U=7", strided_levels(500, 12), 7, 1.0),
    ]
    print(f"{'sampler':32s} {'evals':>6s}   KL/point | var ratio | mean err/sd  (C = 3, 5, 9)")
    for name, levels, U, eta in configs:
        cells = []
        for C, K, y_ctx, mu, Sig in tasks:
            m, P = propagate(ab, K, C, y_ctx, levels, U, eta)
            kl = kl_per_point(m, P, mu, Sig)
            vr = np.mean(np.diag(P) / np.diag(Sig))
            err = np.sqrt(np.mean((m - mu) ** 2 / np.diag(Sig)))
            cells.append(f"{kl:.3f}/{vr:.2f}/{err:.2f}")
        print(f"{name:32s} {(len(levels) - 1) * (U + 1) + 1:6d}   " + "  ".join(cells),
              flush=True)


if __name__ == "__main__":
    main()
