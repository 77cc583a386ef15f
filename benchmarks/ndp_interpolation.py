"""NDP interpolation benchmark (Dutordoir et al., 2023, Sec. 5.1 protocol).

Tasks: functions drawn from a GP (SE or Matérn-5/2, variance 1, lengthscale 0.25 * sqrt(D),
observation-noise variance 0.0025 independent of f, x ~ U(-2, 2)^D); each task has 1-9 context
points (D = 1; 5-20 at D = 2) and 50 targets. Metrics on the targets: joint log-likelihood per
target point of the Gaussian moment-matched to 128 samples (NDP) or of the exact predictive
(GPs), MSE of the mean, coverage of the central 95 % marginal interval.

Methods: NDPRegressor (the shipped prior, its default sampler, ``x_bounds=(-2, 2)`` so tasks
live in the prior's domain, ``x_scaling="box"``, the paper's fixed map of its isotropic
tasks, unless ``--x-scaling ard``, and ``alpha=0``: the tasks' noise is the prior's), the
exact GP with the true hyper-parameters (the optimum), and ``GaussianProcessRegressor`` with
ML-II fitted variance and lengthscale (true kernel family, noise fixed at its true value, 3
optimiser restarts). ``gp_sampled`` is the exact GP posterior seen through the NDP metric: the
same number of samples drawn from it, moment-matched. It is what a sampler that draws
exactly from the posterior scores at that sample size (moment-matching a 50-dimensional
Gaussian from 128 samples underestimates its small eigenvalues), not a bound on every sampler
(``ndp_metric_ceiling.py``). ``prior_bayes`` (marginalising priors only)
is the exact posterior of the prior's own task distribution, a mixture of GPs over its kernels
and lengthscales, seen through the same metric: the most a perfectly trained network of that
prior can score, since it cannot know the task's kernel and lengthscale.

Run (takes tens of minutes on 2 CPU cores; ``--n-tasks`` trades precision for time)::

    python benchmarks/ndp_interpolation.py --n-tasks 32 --kernels se matern52 --dims 1
    python benchmarks/ndp_interpolation.py --n-tasks 16 --kernels se --dims 2
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _ndp_common import (
    add_runtime_args,
    add_sampler_arg,
    apply_runtime_args,
    summarise,
    write_json,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skdiff import NDPRegressor
from skdiff.datasets import make_gp_functions
from skdiff.datasets._gp import gp_kernel
from skdiff.ndp import gaussian_log_likelihood

NOISE = 0.0025


def make_tasks(kernel, n_dims, n_tasks, seed=0, n_targets=50):
    rng = np.random.RandomState(seed)
    lo, hi = (1, 9) if n_dims == 1 else (5, 20)
    n_ctx = rng.randint(lo, hi + 1, size=n_tasks)
    data = make_gp_functions(n_tasks, n_targets + hi, n_dims, kernel=kernel,
                             lengthscale=0.25 * np.sqrt(n_dims), noise=NOISE, random_state=seed)
    tasks = []
    for i, c in enumerate(n_ctx):
        X, y = data.X[i], data.y[i]
        tasks.append((X[:c], y[:c], X[hi:hi + n_targets], y[hi:hi + n_targets]))
    return tasks


def sk_kernel(kernel, n_dims, fixed):
    ls = 0.25 * np.sqrt(n_dims)
    bounds = "fixed" if fixed else (1e-2, 1e2)
    base = RBF(ls, length_scale_bounds=bounds) if kernel == "se" else \
        Matern(ls, nu=2.5, length_scale_bounds=bounds)
    return (ConstantKernel(1.0, constant_value_bounds="fixed" if fixed else (1e-2, 1e2)) * base
            + WhiteKernel(NOISE, noise_level_bounds="fixed"))


def gp_metrics(gpr, Xc, yc, Xt, yt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gpr.fit(Xc, yc)
    mean, cov = gpr.predict(Xt, return_cov=True)
    return gp_moment_metrics(mean, cov + 1e-9 * np.eye(len(yt)), yt)


def gp_moment_metrics(mean, cov, yt):
    """Joint log density per point, MSE and 95 % coverage of a Gaussian predictive."""
    L = np.linalg.cholesky(cov)
    z = np.linalg.solve(L, yt - mean)
    ll = -0.5 * (z @ z + 2 * np.log(np.diag(L)).sum() + len(yt) * np.log(2 * np.pi)) / len(yt)
    sd = np.sqrt(np.diag(cov))
    return ll, np.mean((mean - yt) ** 2), np.mean(np.abs(yt - mean) < 1.96 * sd)


def gp_sampled_metrics(gpr, Xc, yc, Xt, yt, n_samples=128, seed=0):
    """The exact GP posterior, seen through the NDP metric: moment-matched to n_samples draws
    (what a sampler drawing exactly from the posterior scores with that many samples)."""
    gpr.fit(Xc, yc)
    mean, cov = gpr.predict(Xt, return_cov=True)
    L = np.linalg.cholesky(cov + 1e-9 * np.eye(len(yt)))
    samples = mean[:, None] + L @ np.random.RandomState(seed).standard_normal((len(yt),
                                                                                n_samples))
    sd = samples.std(1, ddof=1)
    return (gaussian_log_likelihood(yt, samples, joint=True),
            np.mean((samples.mean(1) - yt) ** 2), np.mean(np.abs(yt - mean) < 1.96 * sd))


def mixture(config):
    """Whether a prior marginalises its kernel or lengthscale (a mixture of GPs)."""
    return len(config.kernels) > 1 or len(config.lengthscale_quantiles(2)) > 1


def prior_bayes_posterior(config, Xc, yc, Xt, n_lengthscales=32):
    """The Bayes posterior of a prior's own task distribution at the targets.

    A marginalising prior (several kernels, a distribution of lengthscales) is a mixture of
    GPs: its exact posterior is the mixture of each component's GP posterior (noisy targets),
    weighted by the prior weight times the component's marginal likelihood of the context.
    The components are the prior's kernels times ``n_lengthscales`` equally weighted
    quantiles of its lengthscale distribution. Returns the normalised weights (K,), means
    (K, T) and covariances (K, T, T)."""
    if config.anisotropic:
        raise ValueError("prior_bayes_posterior mixes isotropic GPs: it does not describe a "
                         "prior trained with anisotropic=True.")
    lengths = config.lengthscale_quantiles(n_lengthscales)
    noise, var = config.noise, config.variance
    means, covs, log_ml = [], [], []
    Xc_, Xt_ = (np.broadcast_to(x, (len(lengths),) + x.shape) for x in (Xc, Xt))
    for k in config.kernels:
        kcc = gp_kernel(Xc_, Xc_, k, lengths, var) + noise * np.eye(len(Xc))
        ktc = gp_kernel(Xt_, Xc_, k, lengths, var)
        ktt = gp_kernel(Xt_, Xt_, k, lengths, var) + noise * np.eye(len(Xt))
        L = np.linalg.cholesky(kcc)  # [lengths, c, c]
        a = np.linalg.solve(L, yc[None, :, None])[..., 0]
        v = np.linalg.solve(L, np.swapaxes(ktc, -1, -2))  # [lengths, c, t]
        log_ml.append(-0.5 * (a**2).sum(-1) - np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1))
        means.append(np.einsum("lct,lc->lt", v, a))
        covs.append(ktt - np.swapaxes(v, -1, -2) @ v)
    log_ml, means, covs = (np.concatenate(x) for x in (log_ml, means, covs))
    w = np.exp(log_ml - log_ml.max())
    return w / w.sum(), means, covs


def prior_bayes_metrics(config, Xc, yc, Xt, yt, n_samples=128, seed=0):
    """:func:`prior_bayes_posterior` seen through the NDP metric: ``n_samples`` draws of the
    mixture, moment-matched (``None``: the mixture's exact mean and covariance). It scores
    what a network that had learnt its training distribution perfectly scores with a perfect
    sampler: no amount of training lifts a prior above it, up to the metric's sampling
    noise."""
    w, means, covs = prior_bayes_posterior(config, Xc, yc, Xt)
    jitter = 1e-9 * np.eye(len(Xt))
    if n_samples is None:
        mean = w @ means
        dev = means - mean
        cov = np.einsum("k,kst->st", w, covs) + (w[:, None] * dev).T @ dev + jitter
        return gp_moment_metrics(mean, cov, yt)
    rng = np.random.RandomState(seed)
    comp = rng.choice(len(w), size=n_samples, p=w)
    z = rng.standard_normal((n_samples, len(Xt)))
    chols = np.linalg.cholesky(covs[comp] + jitter)
    return sample_metrics((means[comp] + np.einsum("stu,su->st", chols, z)).T, yt)


def sample_metrics(samples, yt):
    """Joint log-likelihood per point of the Gaussian moment-matched to ``samples``
    (targets, S), MSE of their mean and coverage of its central 95 % interval."""
    mean, sd = samples.mean(1), samples.std(1, ddof=1)
    return (gaussian_log_likelihood(yt, samples, joint=True), np.mean((mean - yt) ** 2),
            np.mean(np.abs(yt - mean) < 1.96 * sd))


def ndp_metrics(est, Xc, yc, Xt, yt, n_samples=128, seed=0):
    est.fit(Xc, yc)
    return sample_metrics(est.sample_posterior(Xt, n_samples=n_samples, random_state=seed), yt)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tasks", type=int, default=32)
    p.add_argument("--kernels", nargs="+", default=["se", "matern52"])
    p.add_argument("--dims", nargs="+", type=int, default=[1])
    p.add_argument("--prior", default="gp")
    add_sampler_arg(p)
    p.add_argument("--n-sampling-steps", type=int, default=None,
                   help="NDPRegressor's n_sampling_steps (default: the sampler's own)")
    p.add_argument("--n-resample", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-samples", type=int, default=128,
                   help="samples behind the moment-matched Gaussian (paper: 128)")
    p.add_argument("--x-scaling", default="box", choices=("box", "ard"),
                   help="NDPRegressor's x_scaling (default 'box': the paper's fixed map of "
                        "its isotropic tasks; 'ard' weighs the features by ML-II lengthscales "
                        "of each task's context)")
    p.add_argument("--device", default="cpu",
                   help="NDPRegressor's device (the GPs run on the CPU); the samples' noise "
                        "comes from the device's generator, so figures differ across devices")
    add_runtime_args(p)
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    apply_runtime_args(args)
    results = {}
    for d in args.dims:
        for kernel in args.kernels:
            tasks = make_tasks(kernel, d, args.n_tasks, seed=args.seed)
            ndp = NDPRegressor(prior=args.prior, sampler=args.sampler,
                               n_sampling_steps=args.n_sampling_steps,
                               n_resample=args.n_resample, x_bounds=(-2, 2), normalize_y=False,
                               x_scaling=args.x_scaling, alpha=0.0, device=args.device,
                               random_state=0)
            rows = {"ndp": [], "prior_bayes": [], "gp_sampled": [], "gp_true": [], "gpr_ml2": []}
            t0 = time.time()
            for i, (Xc, yc, Xt, yt) in enumerate(tasks):
                rows["ndp"].append(ndp_metrics(ndp, Xc, yc, Xt, yt, args.n_samples, seed=i))
                if mixture(ndp.prior_config_):
                    rows["prior_bayes"].append(prior_bayes_metrics(
                        ndp.prior_config_, Xc, yc, Xt, yt, args.n_samples, seed=i))
                rows["gp_sampled"].append(gp_sampled_metrics(GaussianProcessRegressor(
                    sk_kernel(kernel, d, True), optimizer=None), Xc, yc, Xt, yt,
                    args.n_samples, seed=i))
                rows["gp_true"].append(gp_metrics(GaussianProcessRegressor(
                    sk_kernel(kernel, d, True), optimizer=None), Xc, yc, Xt, yt))
                rows["gpr_ml2"].append(gp_metrics(GaussianProcessRegressor(
                    sk_kernel(kernel, d, False), n_restarts_optimizer=3, random_state=i),
                    Xc, yc, Xt, yt))
            rows = {m: r for m, r in rows.items() if r}
            key = f"D={d} {kernel}"
            results[key] = {m: summarise(r) for m, r in rows.items()}
            small = [i for i, t in enumerate(tasks) if len(t[0]) <= (4 if d == 1 else 10)]
            if len(small) > 1:
                results[key]["small_context"] = {
                    m: summarise([r[i] for i in small]) for m, r in rows.items()}
            results[key]["ndp_seconds_per_task"] = (time.time() - t0) / len(tasks)
            results[key]["sampler"] = ndp.sampler_  # "auto" resolved for the prior
            print(f"\n{key}: {len(tasks)} tasks, {results[key]['ndp_seconds_per_task']:.1f} s "
                  "per task (all methods)")
            print(f"{'method':10s} {'loglik/pt':>16s} {'MSE':>16s} {'cover95':>16s}")
            for m in rows:
                r = results[key][m]
                print(f"{m:10s} " + " ".join(f"{r[k][0]:9.3f} ± {r[k][1]:.3f}"
                                             for k in ("loglik", "mse", "coverage95")))
            if "small_context" in results[key]:
                print(f"small context ({len(small)} tasks):")
                for m in rows:
                    r = results[key]["small_context"][m]
                    print(f"{m:10s} " + " ".join(f"{r[k][0]:9.3f} ± {r[k][1]:.3f}"
                                                 for k in ("loglik", "mse", "coverage95")))
    if args.json:
        write_json(args.json, {"args": vars(args), "results": results})


if __name__ == "__main__":
    main()
