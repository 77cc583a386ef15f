"""The NDP interpolation metric's ceiling: exact GP posterior samples, moment-matched.

The paper's metric (Dutordoir et al., 2023, Sec. 5.1; official ``experiments/regression/
main.py``) fits a Gaussian (sample mean and covariance) to S posterior samples over the 50
targets and reports its joint log density per target point. The exact GP with the true
hyper-parameters is reported analytically (0.71 SE / 0.32 Matérn-5/2 in the paper). This script
draws S samples from that *exact* posterior and scores them with the same moment-matched
metric: no sampler, however good, can beat it in expectation, because estimating a 50 x 50
covariance from S samples costs likelihood (the small eigenvalues are underestimated).

Tasks are those of ``ndp_interpolation.py`` (1-9 context points, 50 targets, x ~ U(-2, 2),
variance 1, lengthscale 0.25, noise variance 0.0025). No network is involved: seconds to run.

Run: ``python benchmarks/ndp_metric_ceiling.py [--n-tasks 256] [--samples 64 128 256 1024]``
"""

from __future__ import annotations

import argparse

import numpy as np
from ndp_interpolation import gp_metrics, gp_sampled_metrics, make_tasks, sk_kernel
from sklearn.gaussian_process import GaussianProcessRegressor


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tasks", type=int, default=256)
    p.add_argument("--samples", type=int, nargs="+", default=[64, 128, 256, 1024])
    p.add_argument("--kernels", nargs="+", default=["se", "matern52"])
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)

    def gp(kernel):
        return GaussianProcessRegressor(sk_kernel(kernel, 1, True), optimizer=None)

    def fmt(values):
        v = np.asarray(values)
        return f"{v.mean():7.3f} ± {v.std(ddof=1) / np.sqrt(len(v)):.3f}"

    print(f"{args.n_tasks} tasks per kernel (D = 1), joint log-likelihood per target point "
          "(mean ± standard error over tasks)")
    for kernel in args.kernels:
        tasks = make_tasks(kernel, 1, args.n_tasks, seed=args.seed)
        exact = [gp_metrics(gp(kernel), *t)[0] for t in tasks]
        print(f"{kernel:9s} exact GP, analytic          {fmt(exact)}")
        for s in args.samples:
            ll = [gp_sampled_metrics(gp(kernel), *t, s, seed=i)[0]
                  for i, t in enumerate(tasks)]
            print(f"{kernel:9s} exact GP, moment-matched S={s:<5d}{fmt(ll)}")


if __name__ == "__main__":
    main()
