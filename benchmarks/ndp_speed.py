"""NDP prediction speed: the default fast sampler against the paper's DDPM-500 with U = 5.

``predict(X, return_std=True)`` for 50 targets, 64 Monte Carlo samples and 10 context points
(1-D SE draws, lengthscale 0.25, the interpolation benchmark's tasks), on this machine's CPU.
For each sampler: wall time of ``fit`` and of ``predict``, the number of network evaluations,
and the joint log-likelihood per target point (Gaussian moment-matched to the 64 samples)
and MSE it reaches, averaged over ``--n-tasks`` tasks.

Run::

    python benchmarks/ndp_speed.py --n-tasks 3            # DDPM-500 takes minutes per task
    python benchmarks/ndp_speed.py --n-tasks 3 --skip-ddpm
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from skdiff import NDPRegressor
from skdiff._ndp import gaussian_log_likelihood
from skdiff.datasets import make_gp_functions
from skdiff.diffusion import strided_levels


def run(est, tasks):
    fit_s, pred_s, lls, mses = [], [], [], []
    for Xc, yc, Xt, yt in tasks:
        t0 = time.perf_counter()
        est.fit(Xc, yc)
        t1 = time.perf_counter()
        mean, std = est.predict(Xt, return_std=True)
        t2 = time.perf_counter()
        fit_s.append(t1 - t0)
        pred_s.append(t2 - t1)
        samples = est.sample_posterior(Xt, n_samples=est.n_samples, random_state=0)
        lls.append(gaussian_log_likelihood(yt, samples, joint=True))
        mses.append(np.mean((mean - yt) ** 2))
    return fit_s, pred_s, lls, mses


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tasks", type=int, default=3)
    p.add_argument("--prior", default="gp")
    p.add_argument("--skip-ddpm", action="store_true")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    p.add_argument("--weights-dir", default=None,
                   help="load priors from this directory (a snapshot), not skdiff/weights")
    args = p.parse_args(argv)
    if args.weights_dir:
        from pathlib import Path

        import skdiff.diffusion.priors as priors

        priors.weights_dir = lambda: Path(args.weights_dir)
    if args.threads:
        torch.set_num_threads(args.threads)
    data = make_gp_functions(args.n_tasks, 60, 1, kernel="se", lengthscale=0.25,
                             random_state=1)
    tasks = [(X[:10], y[:10], X[10:], y[10:]) for X, y in zip(data.X, data.y)]
    print(f"torch threads: {torch.get_num_threads()}, tasks: {len(tasks)}, "
          "50 targets, 10 context points, 64 samples")
    configs = {"fast (default)": dict()}
    if not args.skip_ddpm:
        configs["ddpm-500, U=5"] = dict(sampler="ddpm", n_resample=5)
    for name, kw in configs.items():
        est = NDPRegressor(prior=args.prior, x_bounds=(-2, 2), normalize_y=False, n_samples=64,
                           random_state=0, **kw)
        T = 500
        levels = T if kw.get("sampler") == "ddpm" else len(
            strided_levels(T, est.n_sampling_steps))
        n_eval = (levels - 1) * (est.n_resample + 1) + 1
        fit_s, pred_s, lls, mses = run(est, tasks)
        print(f"{name:16s} network evaluations {n_eval:5d} | fit {np.mean(fit_s):6.2f} s | "
              f"predict(return_std) {np.mean(pred_s):7.2f} s (min {np.min(pred_s):.2f}) | "
              f"loglik/pt {np.mean(lls):6.3f} | MSE {np.mean(mses):.3f}", flush=True)


if __name__ == "__main__":
    main()
