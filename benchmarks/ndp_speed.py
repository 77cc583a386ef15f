"""NDP prediction speed: the default fast sampler against the paper's DDPM-500 with U = 5.

``predict(X, return_std=True)`` for 50 targets, 64 Monte Carlo samples and 10 context points
(1-D SE draws, lengthscale 0.25, the interpolation benchmark's tasks), on this machine's CPU.
For each sampler: wall time of ``fit`` and of ``predict``, the number of network evaluations,
and the joint log-likelihood per target point (Gaussian moment-matched to the 64 samples)
and MSE it reaches, averaged over ``--n-tasks`` tasks.

Run::

    python benchmarks/ndp_speed.py --n-tasks 3 --n-tasks-ddpm 1   # DDPM: minutes per task
    python benchmarks/ndp_speed.py --n-tasks 3 --skip-ddpm
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _ndp_common import add_runtime_args, apply_runtime_args

from skdiff import NDPRegressor
from skdiff.datasets import make_gp_functions
from skdiff.diffusion import strided_levels
from skdiff.ndp import gaussian_log_likelihood


def run(est, tasks, time_predict=True):
    """Per task: fit time, predict(return_std) time, and the metrics of the same sampler run.

    ``predict(X, return_std=True)`` is one ``conditional_sample`` call with ``n_samples``
    samples over all targets; ``sample_posterior(X, n_samples)`` is the same call, so its time
    stands in for ``predict`` when ``time_predict`` is false (the DDPM run, which would
    otherwise cost two 3,000-evaluation runs per task) and its samples give the metrics.
    """
    fit_s, pred_s, lls, mses = [], [], [], []
    for Xc, yc, Xt, yt in tasks:
        t0 = time.perf_counter()
        est.fit(Xc, yc)
        fit_s.append(time.perf_counter() - t0)
        if time_predict:
            t0 = time.perf_counter()
            est.predict(Xt, return_std=True)
            pred_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        samples = est.sample_posterior(Xt, n_samples=est.n_samples, random_state=0)
        if not time_predict:
            pred_s.append(time.perf_counter() - t0)
        lls.append(gaussian_log_likelihood(yt, samples, joint=True))
        mses.append(np.mean((samples.mean(1) - yt) ** 2))
    return fit_s, pred_s, lls, mses


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tasks", type=int, default=3)
    p.add_argument("--n-tasks-ddpm", type=int, default=1)
    p.add_argument("--prior", default="gp")
    p.add_argument("--skip-ddpm", action="store_true")
    add_runtime_args(p)
    args = p.parse_args(argv)
    apply_runtime_args(args)
    data = make_gp_functions(args.n_tasks, 60, 1, kernel="se", lengthscale=0.25,
                             random_state=1)
    tasks = [(X[:10], y[:10], X[10:], y[10:]) for X, y in zip(data.X, data.y)]
    print(f"torch threads: {torch.get_num_threads()}, tasks: {len(tasks)}, "
          "50 targets, 10 context points, 64 samples")
    configs = {"fast (default)": dict(), "fast, 50 steps": dict(n_sampling_steps=50)}
    if not args.skip_ddpm:
        configs["ddpm-500, U=5"] = dict(sampler="ddpm", n_resample=5)
    for name, kw in configs.items():
        n_tasks = args.n_tasks if not kw else args.n_tasks_ddpm
        est = NDPRegressor(prior=args.prior, x_bounds=(-2, 2), normalize_y=False, n_samples=64,
                           random_state=0, **kw)
        T = 500
        levels = T if kw.get("sampler") == "ddpm" else len(
            strided_levels(T, est.n_sampling_steps))
        n_eval = (levels - 1) * (est.n_resample + 1) + 1
        fit_s, pred_s, lls, mses = run(est, tasks[:n_tasks],
                                       time_predict=kw.get("sampler") != "ddpm")
        print(f"{name:16s} network evaluations {n_eval:5d} | fit {np.mean(fit_s):6.2f} s | "
              f"predict(return_std) {np.mean(pred_s):7.2f} s (min {np.min(pred_s):.2f}) | "
              f"loglik/pt {np.mean(lls):6.3f} | MSE {np.mean(mses):.3f} | tasks {n_tasks}",
              flush=True)
        print(f"{'':16s} per task: loglik/pt " + " ".join(f"{v:.3f}" for v in lls)
              + " | MSE " + " ".join(f"{v:.3f}" for v in mses), flush=True)


if __name__ == "__main__":
    main()
