"""Exact reference moments of the NDP samplers for Gaussian data (the samplers' oracle).

Used by ``tests/diffusion/test_samplers.py`` and the ``benchmarks/ndp_sampler_*.py`` scripts to
measure the bias of :func:`skdiff.diffusion.conditional_sample` independently of any trained
network. A test utility, not part of the package. Plain numpy, float64; sizes are small (tens of
points).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["gp_posterior", "kl_per_point", "sampler_moments"]


def sampler_moments(schedule, K, C, y_ctx, path, eta=1.0, tweedie=False):
    """Exact mean and covariance of the targets that ``conditional_sample`` returns.

    With the oracle noise model of a Gaussian prior y_0 ~ N(0, K),
    E[eps | y_t] = s (a^2 K + s^2 I)^{-1} y_t, every reverse step and forward jump of the sampler
    is linear-Gaussian, so its output distribution is propagated in closed form (no Monte
    Carlo). ``path`` is the level path of the sampler (:func:`skdiff.diffusion.resample_path`):
    a decreasing move is a reverse step on [context noised afresh; targets], an increasing one
    a forward jump of the targets. ``eta`` 1 is DDPM, 0 is DDIM. ``tweedie``: the sampler's
    Tweedie correction with ``covariance=K`` (the denoised targets moved by the Gaussian
    conditional of the clean context, :func:`skdiff.diffusion.conditional_sample`).
    """
    ab = schedule.alpha_bars.double().numpy()
    abf = lambda t: 1.0 if t < 0 else ab[t]  # noqa: E731
    N = K.shape[0]
    M = N - C
    m, P = np.zeros(M), np.eye(M)
    steps = {}  # (t, s) -> the linear map of one reverse step, computed once per pair

    def reverse_map(t, s):
        a, sd = math.sqrt(abf(t)), math.sqrt(1 - abf(t))
        G = sd * np.linalg.inv(a * a * K + sd * sd * np.eye(N))
        var = eta**2 * (1 - abf(s)) / (1 - abf(t)) * (1 - abf(t) / abf(s))
        cx = math.sqrt(abf(s) / abf(t))
        ce = math.sqrt(max(1 - abf(s) - var, 0)) - cx * sd
        if tweedie:
            # y0 = B y_t with y_t = [a y_ctx + sd xi; u]; the targets' y0 corrected by
            # R (y_ctx - y0_ctx) = L_u u + L_c y_ctx + L_xi xi; the step takes y0 and the
            # noise it implies, (u - a y0) / sd.
            B = (np.eye(N) - sd * G) / a
            lam = (1 - abf(t)) / abf(t)
            Sig = K - K @ np.linalg.solve(K + lam * np.eye(N), K)
            R = np.linalg.solve(Sig[:C, :C], Sig[:C, C:]).T
            Lu = B[C:, C:] - R @ B[:C, C:]
            Lc = a * B[C:, :C] + R @ (np.eye(C) - a * B[:C, :C])
            Lxi = sd * (B[C:, :C] - R @ B[:C, :C])
            c0 = math.sqrt(max(1 - abf(s) - var, 0))
            k = math.sqrt(abf(s)) - c0 * a / sd
            return (k * Lc @ y_ctx, k * Lu + (c0 / sd) * np.eye(M),
                    k * k * Lxi @ Lxi.T + var * np.eye(M))
        A = cx * np.eye(N) + ce * G
        Atc = A[C:, :C]
        return Atc @ (a * y_ctx), A[C:, C:], sd * sd * Atc @ Atc.T + var * np.eye(M)

    for t, s in zip(path, path[1:]):
        if s < t:
            if (t, s) not in steps:
                steps[t, s] = reverse_map(t, s)
            b, Att, Q = steps[t, s]
            m, P = b + Att @ m, Att @ P @ Att.T + Q
        else:
            r2 = abf(s) / abf(t)
            m, P = math.sqrt(r2) * m, r2 * P + (1 - r2) * np.eye(M)
    return m, P


def gp_posterior(K, C, y_ctx):
    """Exact GP posterior mean and covariance of the targets (rows C:) given the context."""
    sol = np.linalg.solve(K[:C, :C], K[:C, C:])
    return sol.T @ y_ctx, K[C:, C:] - K[:C, C:].T @ sol


def kl_per_point(m1, P1, m0, P0):
    """KL(N(m1, P1) || N(m0, P0)) / dim.

    ``kl_per_point(exact, sampler)`` is the expected shortfall, per point, of the log-likelihood
    of data drawn from the exact posterior under the sampler's Gaussian (the NDP metric with
    infinitely many samples); ``kl_per_point(sampler, exact)`` is the sampler's own error.
    """
    iP0 = np.linalg.inv(P0)
    d = m0 - m1
    return 0.5 * (np.trace(iP0 @ P1) + d @ iP0 @ d - len(m0) + np.linalg.slogdet(P0)[1]
                  - np.linalg.slogdet(P1)[1]) / len(m0)
