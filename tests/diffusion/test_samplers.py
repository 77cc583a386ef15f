"""Samplers checked with an oracle noise model for Gaussian data, independently of training.

For y_0 ~ N(0, K) and y_t = a y_0 + s eps (a = sqrt(alpha_bar_t), s = sqrt(1 - alpha_bar_t)),
the exact noise prediction is E[eps | y_t] = s (a^2 K + s^2 I)^{-1} y_t. With it every sampler
step is linear-Gaussian, so the exact distribution a sampler produces can be propagated in closed
form (``_propagate``, the slow dense reference). The tests check

* the Monte Carlo samplers against that propagation within Monte Carlo error (implementation);
* the propagated moments against the exact GP posterior (the RePaint approximation itself: it is
  not exact for a finite number of resampling steps, so the bound is the measured bias, stated;
  the Tweedie correction is exact in the denoised estimate, so its bias is the discretisation's).
"""

import math

import numpy as np
import pytest
import torch

from skdiff.diffusion import (
    NoiseSchedule,
    conditional_sample,
    ddim_step,
    ddpm_step,
    n_evaluations,
    prior_sample,
    resample_path,
    strided_levels,
)

from .oracle import gp_posterior, kl_per_point, sampler_moments


def _kernel(x, lengthscale=0.25, noise=0.0025):
    d2 = (x[:, None] - x[None, :]) ** 2
    return np.exp(-0.5 * d2 / lengthscale**2) + noise * np.eye(len(x))


class OracleEps:
    """E[eps | y_t] for y_0 ~ N(0, K) with K fixed over the points; counts calls and batch."""

    def __init__(self, schedule, K):
        self.ab = schedule.alpha_bars.double()
        self.K = torch.as_tensor(K, dtype=torch.float64)
        self.calls = 0
        self.batch_sizes = set()

    def __call__(self, x, y_t, t, mask=None):
        assert x.ndim == 3 and y_t.shape == (*x.shape[:2], 1) and t.shape == (x.shape[0],)
        assert torch.all(t == t[0])
        self.calls += 1
        self.batch_sizes.add(x.shape[0])
        ab = self.ab[t[0]]
        a, s = ab.sqrt(), (1 - ab).sqrt()
        A = a * a * self.K + s * s * torch.eye(len(self.K), dtype=torch.float64)
        eps = s * torch.linalg.solve(A, y_t.squeeze(-1).double().T).T
        return eps.unsqueeze(-1).to(y_t.dtype)


def _assert_moments_within_mc(samples, mean, cov, z=4.5):
    """Sample mean/variance per point against exact moments, tolerance from S samples."""
    S = samples.shape[0]
    var = np.diag(cov)
    emp_mean = samples.mean(0)
    emp_var = samples.var(0, ddof=1)
    assert np.all(np.abs(emp_mean - mean) < z * np.sqrt(var / S)), (emp_mean, mean)
    assert np.all(np.abs(emp_var - var) < z * var * math.sqrt(2 / (S - 1))), (emp_var, var)


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(0)
    C, M = 5, 12
    x = np.sort(rng.uniform(-2, 2, C + M))
    x = np.concatenate([x[::3][:C], np.setdiff1d(x, x[::3][:C])])  # context spread out
    K = _kernel(x)
    y_ctx = rng.multivariate_normal(np.zeros(C), K[:C, :C])
    return x, K, C, y_ctx


def test_ddpm_step_is_ho_et_al_algorithm_2():
    sched = NoiseSchedule.official()
    y, eps, z = torch.randn(3, 4, 1), torch.randn(3, 4, 1), torch.randn(3, 4, 1)
    for t in (1, 100, 499):
        beta, ab = sched.betas[t].double(), sched.alpha_bars[t].double()
        ref = ((y.double() - beta / (1 - ab).sqrt() * eps.double()) / (1 - beta).sqrt()
               + sched.posterior_variance[t].double().sqrt() * z.double())
        torch.testing.assert_close(ddpm_step(sched, eps, y, t, noise=z).double(), ref,
                                   rtol=1e-5, atol=1e-5)
    # t = 0 lands on clean data without noise
    ref0 = (y - sched.betas[0] / sched.sqrt_one_minus_alpha_bars[0] * eps) / sched.alphas[0].sqrt()
    torch.testing.assert_close(ddpm_step(sched, eps, y, 0, noise=z), ref0)


def test_ddim_step_with_true_noise_is_consistent():
    """eta = 0 and the true eps: a jump t -> s lands exactly on q_sample(y0, s, eps).

    Exact up to the rounding of the float32 schedule coefficients, amplified by
    1 / sqrt(alpha_bar_t) when jumping back to y0 (a wrong formula errs by O(1)).
    """
    sched = NoiseSchedule.official()
    g = torch.Generator().manual_seed(0)
    y0, eps = (torch.randn(2, 6, 1, generator=g, dtype=torch.float64) for _ in range(2))
    yt = sched.q_sample(y0, 300, eps)
    tol = dict(rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ddim_step(sched, eps, yt, 300, 40, eta=0.0),
                               sched.q_sample(y0, 40, eps), **tol)
    torch.testing.assert_close(ddim_step(sched, eps, yt, 300, -1, eta=0.0), y0, **tol)
    with pytest.raises(ValueError, match="s < t"):
        ddim_step(sched, eps, yt, 3, 3)


def test_strided_levels():
    assert strided_levels(500, 500) == list(range(499, -1, -1))
    for spacing in ("uniform", "quadratic", "cubic"):
        lv = strided_levels(500, 20, spacing)
        assert lv[0] == 499 and lv[-1] == 0 and len(lv) == (19 if spacing == "cubic" else 20)
        assert all(a > b for a, b in zip(lv, lv[1:]))
    q = strided_levels(500, 20, "quadratic")
    assert q[-2] < strided_levels(500, 20, "uniform")[-2]  # denser at low noise
    c = strided_levels(500, 32, "cubic")
    assert len(c) == 29 and sum(t < 20 for t in c) == 8  # rounding merges the lowest levels
    assert sum(t < 20 for t in q) == 4
    with pytest.raises(ValueError, match="'n_steps'"):
        strided_levels(500, 0)
    with pytest.raises(ValueError, match="'spacing'"):
        strided_levels(500, 5, "log")


def test_prior_sample_recovers_gp_prior(task):
    x, K, _, _ = task
    sched = NoiseSchedule.official(T=200)
    oracle = OracleEps(sched, K)
    S = 4000
    torch.manual_seed(0)
    y = prior_sample(oracle, sched, torch.as_tensor(x[:, None]), n_samples=S)
    assert y.shape == (S, len(x), 1)
    assert oracle.batch_sizes == {S} and oracle.calls == 200
    _assert_moments_within_mc(y.squeeze(-1).double().numpy(), np.zeros(len(x)), K)
    # joint: the correlation of two neighbouring points too
    emp = np.corrcoef(y.squeeze(-1).numpy()[:, :2].T)[0, 1]
    exact = K[0, 1] / math.sqrt(K[0, 0] * K[1, 1])
    assert abs(emp - exact) < 4.5 * (1 - exact**2) / math.sqrt(S)


@pytest.mark.parametrize("n_steps, U, spacing, fine, kl_bound", [
    (None, 5, None, {}, 0.02),       # the paper's sampler: DDPM over all 500 levels, U = 5
    (32, 4, "cubic", {}, 0.025),     # 32 cubic strided steps, U = 4 (141 evaluations)
    (20, 4, "quadratic", {}, 0.05),  # 20 quadratic strided steps, U = 4 (96 evaluations)
    # tiered: 40 cubic steps, U = 4 on jumps back to levels >= 40, U = 1 below (140)
    (40, 4, "cubic", {"fine_level": 40, "n_resample_fine": 1}, 0.025),
])
def test_repaint_recovers_gp_posterior(task, n_steps, U, spacing, fine, kl_bound):
    x, K, C, y_ctx = task
    sched = NoiseSchedule.official()
    oracle = OracleEps(sched, K)
    S = 3000
    torch.manual_seed(1)
    xt = torch.as_tensor(x[:, None])
    y = conditional_sample(oracle, sched, xt[:C], torch.as_tensor(y_ctx), xt[C:], n_samples=S,
                           n_resample=U, n_steps=n_steps, spacing=spacing or "quadratic",
                           **fine)
    levels = (list(range(499, -1, -1)) if n_steps is None
              else strided_levels(500, n_steps, spacing))
    path = resample_path(levels, U, **fine)
    assert oracle.calls == n_evaluations(path)
    if not fine:
        assert oracle.calls == (len(levels) - 1) * (U + 1) + 1
    assert oracle.batch_sizes == {S}
    samples = y.squeeze(-1).double().numpy()
    # 1. the implementation: Monte Carlo moments match the exact propagation of the algorithm.
    m, P = sampler_moments(sched, K, C, y_ctx, path)
    _assert_moments_within_mc(samples, m, P)
    # 2. the approximation: close to the exact GP posterior (RePaint is exact only as U -> inf;
    #    measured bias on this task: KL/point 0.006 (paper's sampler), 0.008 (32 cubic steps),
    #    0.017 (20 quadratic steps), 0.015 (tiered)).
    mu, Sig = gp_posterior(K, C, y_ctx)
    kl = kl_per_point(m, P, mu, Sig)
    assert kl < kl_bound
    sd = np.sqrt(np.diag(Sig))
    assert np.all(np.abs(samples.mean(0) - mu) < 4.5 * sd / math.sqrt(S) + 0.6 * sd)
    assert 0.8 < np.mean(samples.var(0) / sd**2) < 1.25
    # and conditioning matters: targets next to a context point are pinned down (prior var 1)
    assert np.min(samples.var(0)) < 0.02


@pytest.mark.parametrize("lengthscale", [0.25, 1.2])
def test_tweedie_correction_recovers_gp_posterior(lengthscale):
    """With ``covariance=K`` every reverse step denoises the targets given the clean context
    exactly (oracle noise model, Gaussian data), so 32 cubic levels without any resampling
    (29 evaluations) land on the exact posterior mean, to the start at pure noise, and close
    to its covariance, however smooth the function; RePaint's fast path (141 evaluations)
    lags a smooth posterior. Measured on these tasks: KL per point 0.012 (lengthscale 0.25)
    and 0.016 (1.2), against 0.008 and 0.085 for RePaint's fast path; the largest distance
    of the mean from the exact one 0.0012 and 0.0002 (RePaint: 0.17 and 1.2)."""
    rng = np.random.default_rng(0)
    C, M = 5, 12
    x = np.sort(rng.uniform(-2, 2, C + M))
    x = np.concatenate([x[::3][:C], np.setdiff1d(x, x[::3][:C])])
    K = _kernel(x, lengthscale)
    y_ctx = rng.multivariate_normal(np.zeros(C), K[:C, :C])
    sched = NoiseSchedule.official()
    oracle = OracleEps(sched, K)
    S = 3000
    xt = torch.as_tensor(x[:, None])
    torch.manual_seed(0)
    y = conditional_sample(oracle, sched, xt[:C], torch.as_tensor(y_ctx), xt[C:], n_samples=S,
                           n_resample=0, n_steps=32, spacing="cubic", covariance=K)
    levels = strided_levels(500, 32, "cubic")
    assert oracle.calls == len(levels) == 29 and oracle.batch_sizes == {S}
    samples = y.squeeze(-1).double().numpy()
    # 1. the implementation: Monte Carlo moments match the exact propagation
    m, P = sampler_moments(sched, K, C, y_ctx, resample_path(levels, 0), tweedie=True)
    _assert_moments_within_mc(samples, m, P)
    # 2. the approximation: the exact posterior mean, and close to its covariance
    mu, Sig = gp_posterior(K, C, y_ctx)
    sd = np.sqrt(np.diag(Sig))
    assert np.max(np.abs(m - mu) / sd) < 0.03
    kl = kl_per_point(m, P, mu, Sig)
    assert kl < 0.025
    m_rp, P_rp = sampler_moments(sched, K, C, y_ctx, resample_path(levels, 4))
    if lengthscale > 1:  # RePaint's fast path, 141 evaluations, lags the smooth posterior
        assert kl_per_point(m_rp, P_rp, mu, Sig) > 3 * kl
        assert np.max(np.abs(m_rp - mu)) > 10 * np.max(np.abs(m - mu))
    # with resampling on top the correction stays exact in the mean
    m5, _ = sampler_moments(sched, K, C, y_ctx, resample_path(levels, 2), tweedie=True)
    assert np.max(np.abs(m5 - mu) / sd) < 1e-6


def test_tweedie_correction_checks_its_covariance(task):
    x, K, C, y_ctx = task
    sched = NoiseSchedule.official(T=20)
    calls = []

    def eps(x, y, t, mask=None):
        calls.append(1)
        return torch.zeros_like(y)

    xt = torch.as_tensor(x[:, None])
    args = (eps, sched, xt[:C], torch.as_tensor(y_ctx), xt[C:])
    with pytest.raises(ValueError, match=r"'covariance' must be a finite \[C \+ M, C \+ M\] = "
                                         r"\[17, 17\] matrix .*got shape \(16, 16\)"):
        conditional_sample(*args, covariance=K[1:, 1:])
    bad = K.copy()
    bad[0, 0] = -1.0
    with pytest.raises(ValueError, match="'covariance' must be positive semi-definite"):
        conditional_sample(*args, covariance=bad)
    assert not calls
    # a per-sample context is corrected sample by sample: with DDIM steps (eta=0) and the
    # oracle, a sample is linear in its start and its own context values
    def run(factors):
        torch.manual_seed(0)
        ctx = torch.as_tensor(np.stack([f * y_ctx for f in factors])[:, :, None])
        return conditional_sample(OracleEps(sched, K), sched, xt[:C], ctx, xt[C:],
                                  n_samples=2, n_steps=20, n_resample=0, eta=0.0,
                                  covariance=K)

    zero, one, two = run([0, 0]), run([1, 1]), run([1, 2])
    torch.testing.assert_close(two[0], one[0])
    torch.testing.assert_close(two[1] - zero[1], 2 * (one[1] - zero[1]))
    # a stack of matrices with an index per sample: the same draws as the one matrix when
    # every entry is that matrix; another matrix changes only the samples that take it
    def stacked(covariance, index=None):
        torch.manual_seed(0)
        return conditional_sample(OracleEps(sched, K), sched, xt[:C], torch.as_tensor(y_ctx),
                                  xt[C:], n_samples=4, n_steps=20, n_resample=0,
                                  covariance=covariance, covariance_index=index)

    one_matrix = stacked(K)
    torch.testing.assert_close(stacked(np.stack([K, K]), [0, 1, 1, 0]), one_matrix)
    other = _kernel(x, 1.0)
    mixed = stacked(np.stack([K, other]), np.array([0, 1, 0, 1]))
    torch.testing.assert_close(mixed[[0, 2]], one_matrix[[0, 2]])
    assert not torch.allclose(mixed[[1, 3]], one_matrix[[1, 3]])
    torch.testing.assert_close(stacked(np.stack([K, K, K, K])), one_matrix)  # one per sample
    with pytest.raises(ValueError, match=r"'covariance_index' must hold n_samples = 4 integers "
                                         r"in \[0, 2\); got \(4,\) values \[0, 2, 0, 1\]"):
        stacked(np.stack([K, other]), [0, 2, 0, 1])
    with pytest.raises(ValueError, match="A stack of 2 covariances needs 'covariance_index'"):
        stacked(np.stack([K, other]))


def test_per_sample_context_values(task):
    """A (S, C, 1) context gives every sample its own values: each half of the batch matches
    the exact propagation of the sampler for its own context."""
    x, K, C, y_ctx = task
    sched = NoiseSchedule.official()
    oracle = OracleEps(sched, K)
    S, levels, U = 3000, strided_levels(500, 20), 2
    per_sample = np.concatenate([np.tile(y_ctx, (S // 2, 1)), np.tile(-2 * y_ctx, (S // 2, 1))])
    xt = torch.as_tensor(x[:, None])
    torch.manual_seed(2)
    y = conditional_sample(oracle, sched, xt[:C], torch.as_tensor(per_sample[:, :, None]),
                           xt[C:], n_samples=S, n_resample=U, n_steps=20)
    samples = y.squeeze(-1).double().numpy()
    for half, factor in ((slice(None, S // 2), 1.0), (slice(S // 2, None), -2.0)):
        m, P = sampler_moments(sched, K, C, factor * y_ctx, resample_path(levels, U))
        _assert_moments_within_mc(samples[half], m, P)
    with pytest.raises(ValueError, match=r"per-sample y_context must have shape \(n_samples, "
                       r"C, 1\) = \(4, 5, 1\); got \(3, 5, 1\)"):
        conditional_sample(oracle, sched, xt[:C], torch.zeros(3, C, 1), xt[C:], n_samples=4)


def test_more_resampling_reduces_bias(task):
    """U = 0 (plain replacement) is far off; U = 5 is much closer (exact propagation)."""
    x, K, C, y_ctx = task
    sched = NoiseSchedule.official()
    mu, Sig = gp_posterior(K, C, y_ctx)
    levels = strided_levels(500, 20)
    kl0 = kl_per_point(*sampler_moments(sched, K, C, y_ctx, resample_path(levels, 0)), mu, Sig)
    kl5 = kl_per_point(*sampler_moments(sched, K, C, y_ctx, resample_path(levels, 5)), mu, Sig)
    assert kl5 < 0.5 * kl0


def test_fast_path_mean_lags_a_smooth_posterior_and_repeats_close_it():
    """RePaint's own bias with exact noise predictions grows with the smoothness of the
    function: on SE draws of lengthscale 1.2 on the domain the fast path's (32 cubic levels,
    U = 4) mean lies more than a posterior variance (squared distance, averaged over the
    targets) from the exact posterior mean, and twelve repeats cut that several-fold
    (benchmarks/ndp_smooth_conditioning.py, oracle table)."""
    sched = NoiseSchedule.official()
    rng = np.random.default_rng(1)
    levels = strided_levels(500, 32, "cubic")
    errors = {0.25: {}, 1.2: {}}
    for lengthscale, err in errors.items():
        for _ in range(4):
            x = rng.uniform(-1.8, 1.8, 3 + 40)
            K = _kernel(x, lengthscale)
            y = np.linalg.cholesky(K) @ rng.standard_normal(len(x))
            mu, Sig = gp_posterior(K, 3, y[:3])
            for U in (4, 12):
                m, _ = sampler_moments(sched, K, 3, y[:3], resample_path(levels, U))
                err.setdefault(U, []).append(np.mean((m - mu) ** 2 / np.diag(Sig)))
    smooth, paper = ({U: np.mean(v) for U, v in e.items()} for e in (errors[1.2], errors[0.25]))
    assert smooth[4] > 0.5 and smooth[4] > 2 * paper[4], (smooth, paper)
    assert smooth[12] < smooth[4] / 3, smooth


def test_no_context_is_prior_sampling():
    sched = NoiseSchedule.official(T=20)
    f = lambda x, y, t, mask=None: torch.zeros_like(y)  # noqa: E731
    torch.manual_seed(0)
    a = conditional_sample(f, sched, torch.zeros(0, 1), torch.zeros(0), torch.ones(4, 1),
                           n_samples=3)
    torch.manual_seed(0)
    b = prior_sample(f, sched, torch.ones(4, 1), n_samples=3)
    torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match="'n_resample'"):
        conditional_sample(f, sched, torch.zeros(1, 1), torch.zeros(1), torch.ones(4, 1),
                           n_resample=-1)


def test_resample_path():
    # one-step back-and-forth (the NDP paper's resampling): U extra visits of every step
    assert resample_path([3, 1, 0], 2) == [3, 1, 3, 1, 3, 1, 0, 1, 0, 1, 0, -1]
    assert resample_path([3, 1, 0], 0) == [3, 1, 0, -1]
    levels = strided_levels(500, 20)
    assert n_evaluations(resample_path(levels, 4)) == 19 * 5 + 1
    # RePaint jumps: jump back j grid positions at positions j, 2j, ... (clean data excluded)
    assert resample_path([5, 4, 2, 1, 0], 1, jump_length=2) == \
        [5, 4, 2, 5, 4, 2, 1, 0, 2, 1, 0, -1]
    path = resample_path(list(range(9, -1, -1)), 2, jump_length=3)
    assert n_evaluations(path) == 10 + 2 * 3 * 3  # jump positions 3, 6, 9
    assert path[0] == 9 and path[-1] == -1
    assert n_evaluations(resample_path([4], 3)) == 1  # a single step to clean data
    with pytest.raises(ValueError, match="'levels' must be .* strictly decreasing"):
        resample_path([3, 3, 0], 1)
    with pytest.raises(ValueError, match="'levels'"):
        resample_path([], 1)
    with pytest.raises(ValueError, match=r"'jump_length' must be an integer >= 1; got 0"):
        resample_path([3, 0], 1, jump_length=0)
    with pytest.raises(ValueError, match=r"'n_resample' must be an integer >= 0; got 1.5"):
        resample_path([3, 0], 1.5)


def test_tiered_resample_path():
    """Jumps back to levels below ``fine_level`` are repeated ``n_resample_fine`` times."""
    # positions 1 (back to 9), 2 (back to 5) and 3 (back to 2); fine below 5: U = 0 at 3
    assert resample_path([9, 5, 2, 0], 2, fine_level=5, n_resample_fine=0) == \
        [9, 5, 9, 5, 9, 5, 2, 5, 2, 5, 2, 0, -1]
    assert resample_path([9, 5, 2, 0], 2, fine_level=6, n_resample_fine=1) == \
        [9, 5, 9, 5, 9, 5, 2, 5, 2, 0, 2, 0, -1]
    levels = strided_levels(500, 40, "cubic")
    coarse = sum(1 for v in levels[:-1] if v >= 40)  # jump positions whose back level >= 40
    assert n_evaluations(resample_path(levels, 4, fine_level=40, n_resample_fine=1)) == \
        len(levels) + 4 * coarse + 1 * (len(levels) - 1 - coarse) == 140
    # fine_level=0 (the default) is the uniform path whatever n_resample_fine says
    assert resample_path(levels, 4, fine_level=0, n_resample_fine=1) == resample_path(levels, 4)
    # with jumps of j positions, the level jumped back to decides
    assert resample_path([5, 4, 2, 1, 0], 1, jump_length=2, fine_level=3,
                         n_resample_fine=0) == [5, 4, 2, 5, 4, 2, 1, 0, -1]
    with pytest.raises(ValueError, match=r"'fine_level' must be an integer >= 0; got -1"):
        resample_path([3, 0], 1, fine_level=-1)
    with pytest.raises(ValueError, match=r"'n_resample_fine' must be an integer >= 0; got 0.5"):
        resample_path([3, 0], 1, fine_level=2, n_resample_fine=0.5)


@pytest.mark.parametrize("n_steps, U, j", [(12, 2, 3), (7, 1, 1)])
def test_zero_noise_model_propagates_forward_variances(n_steps, U, j):
    """With eps = 0 every reverse step scales by sqrt(ab_s / ab_t) and adds the eta-noise and
    every forward jump is the forward kernel: the targets stay centred, independent of the
    context, with a variance given by a scalar recursion along the path."""
    sched = NoiseSchedule.official(T=60)
    ab = sched.alpha_bars.double().numpy()
    abf = lambda t: 1.0 if t < 0 else ab[t]  # noqa: E731
    f = lambda x, y, t, mask=None: torch.zeros_like(y)  # noqa: E731
    path = resample_path(strided_levels(60, n_steps), U, j)
    var = 1.0
    for t, s in zip(path, path[1:]):
        r = abf(s) / abf(t)
        var = r * var + ((1 - abf(s)) / (1 - abf(t)) * (1 - abf(t) / abf(s)) if s < t
                         else 1 - r)
    S = 20000
    torch.manual_seed(0)
    y = conditional_sample(f, sched, torch.zeros(2, 1), torch.full((2,), 3.0),
                           torch.linspace(-1, 1, 3)[:, None], n_samples=S, n_steps=n_steps,
                           n_resample=U, jump_length=j)
    assert y.shape == (S, 3, 1)
    _assert_moments_within_mc(y.squeeze(-1).double().numpy(), np.zeros(3), var * np.eye(3))


def test_conditional_sample_is_reproducible_and_checks_arguments():
    sched = NoiseSchedule.official(T=30)
    f = lambda x, y, t, mask=None: 0.5 * y  # noqa: E731
    args = (f, sched, torch.zeros(2, 1), torch.ones(2), torch.linspace(-1, 1, 5)[:, None])
    kw = dict(n_samples=4, n_steps=8, n_resample=1, jump_length=2)
    torch.manual_seed(3)
    a = conditional_sample(*args, **kw)
    torch.manual_seed(3)
    b = conditional_sample(*args, **kw)
    torch.manual_seed(4)
    c = conditional_sample(*args, **kw)
    assert torch.equal(a, b) and not torch.equal(a, c)
    with pytest.raises(ValueError, match=r"'jump_length' must be an integer >= 1; got 0"):
        conditional_sample(*args, jump_length=0)
    with pytest.raises(ValueError, match=r"'n_steps' must be an integer >= 1; got 0"):
        conditional_sample(*args, n_steps=0)


@pytest.mark.parametrize("extra", [0.05, 0.3, 1.0])
def test_noisy_context_by_per_sample_draws_of_its_values(task, extra):
    """A context observed with noise beyond the prior's (variance ``extra``): samples that
    each condition on their own draw of the context's values given the observations (the
    NDPRegressor's ``alpha``) reproduce the exact posterior given the noisy observations,
    to the sampler's bias; conditioning on the noisy values as they are does not."""
    x, K, C, _ = task
    rng = np.random.default_rng(int(extra * 100))
    K_obs = K.copy()
    K_obs[:C, :C] += extra * np.eye(C)
    y_obs = rng.multivariate_normal(np.zeros(C), K_obs[:C, :C])
    mu, Sig = gp_posterior(K_obs, C, y_obs)
    # the context's values at the prior's noise level given the observations, each an
    # observation less its extra noise: Cov(values, observations) = K (prior noise included)
    A = K[:C, :C] @ np.linalg.inv(K_obs[:C, :C])
    S = 3000
    draws = rng.multivariate_normal(A @ y_obs, K[:C, :C] - A @ K[:C, :C], size=S)
    sched = NoiseSchedule.official()
    xt = torch.as_tensor(x[:, None])
    torch.manual_seed(0)
    y = conditional_sample(OracleEps(sched, K), sched, xt[:C], torch.as_tensor(draws[:, :, None]),
                           xt[C:], n_samples=S, n_resample=4, n_steps=32, spacing="cubic")
    samples = y.squeeze(-1).double().numpy()
    kl = kl_per_point(samples.mean(0), np.cov(samples.T), mu, Sig)
    assert kl < 0.03  # measured 0.008-0.010 (the noiseless case: 0.009)
    mu0, Sig0 = gp_posterior(K, C, y_obs)
    naive = kl_per_point(mu0, Sig0, mu, Sig)  # the exact posterior given y_obs as noiseless
    assert naive > 0.15 and naive > 5 * kl


def test_samplers_refuse_bad_arguments_before_the_network():
    sched = NoiseSchedule.official(T=20)
    calls = []

    def eps(x, y, t, mask=None):
        calls.append(1)
        return torch.zeros_like(y)

    xc, yc, xt = torch.zeros(3, 1), torch.zeros(3, 1), torch.ones(4, 1)
    with pytest.raises(ValueError, match="'n_samples' must be an integer >= 1; got 0"):
        conditional_sample(eps, sched, xc, yc, xt, n_samples=0)
    with pytest.raises(ValueError, match="'n_samples' must be an integer >= 1; got 2.5"):
        prior_sample(eps, sched, xt, n_samples=2.5)
    with pytest.raises(ValueError, match=r"'eta' must be a number in \[0, 1\]"):
        conditional_sample(eps, sched, xc, yc, xt, eta=-1)
    with pytest.raises(TypeError, match="'x_context' must be a floating-point torch tensor; "
                                        "got ndarray"):
        conditional_sample(eps, sched, xc.numpy(), yc, xt)
    with pytest.raises(TypeError, match="'x_context' and 'x_target' must share one dtype"):
        conditional_sample(eps, sched, xc.double(), yc, xt)
    with pytest.raises(ValueError, match=r"shapes \[C, D\] and \[M, D\] with the same D"):
        conditional_sample(eps, sched, xc, yc, torch.ones(4, 2))
    with pytest.raises(ValueError, match=r"'y_context' must hold one value per context "
                                         r"point.*C = 3.*got \(2, 1\)"):
        conditional_sample(eps, sched, xc, yc[:2], xt)
    with pytest.raises(ValueError, match="'T' must be an integer >= 1"):
        strided_levels(0, 5)
    with pytest.raises(ValueError, match="'levels' must be integer levels"):
        resample_path([2.7, 1.2, 0], 1)
    assert not calls
