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

import numpy as np

from skdiff.diffusion import NoiseSchedule, strided_levels
from skdiff.diffusion.oracle import gp_posterior, kl_per_point, sampler_moments


def main():
    schedule = NoiseSchedule.official()
    rng = np.random.default_rng(0)
    tasks = []
    for C in (3, 5, 9):
        x = rng.uniform(-2, 2, C + 20)
        K = np.exp(-0.5 * (x[:, None] - x[None]) ** 2 / 0.25**2) + 0.0025 * np.eye(C + 20)
        y_ctx = rng.multivariate_normal(np.zeros(C), K[:C, :C])
        tasks.append((C, K, y_ctx, *gp_posterior(K, C, y_ctx)))
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
            m, P = sampler_moments(schedule, K, C, y_ctx, levels, U, eta)
            kl = kl_per_point(m, P, mu, Sig)
            vr = np.mean(np.diag(P) / np.diag(Sig))
            err = np.sqrt(np.mean((m - mu) ** 2 / np.diag(Sig)))
            cells.append(f"{kl:.3f}/{vr:.2f}/{err:.2f}")
        print(f"{name:32s} {(len(levels) - 1) * (U + 1) + 1:6d}   " + "  ".join(cells),
              flush=True)


if __name__ == "__main__":
    main()
