"""The NDP interpolation metric's ceiling: exact GP posterior samples, moment-matched.

The paper's metric (Dutordoir et al., 2023, Sec. 5.1; official ``experiments/regression/
main.py``) fits a Gaussian (sample mean and covariance) to S posterior samples over the 50
targets and reports its joint log density per target point. The exact GP with the true
hyper-parameters is reported analytically (0.71 SE / 0.32 Matérn-5/2 in the paper). This script
draws S samples from that *exact* posterior and scores them with the same moment-matched
metric: the score of a sampler that draws exactly from the posterior. Estimating a 50 x 50
covariance from S samples costs likelihood (the small eigenvalues are underestimated), so the
score falls as S shrinks. It is not a bound on every sampler: samples spread wider than the
posterior in its low-variance directions lose less to that underestimate, and at 64 samples a
trained NDP scores above the exact posterior's samples (``ndp_speed.py`` prints both).

Tasks are those of ``ndp_interpolation.py`` (1-9 context points, 50 targets, x ~ U(-2, 2),
variance 1, lengthscale 0.25, noise variance 0.0025). No network is involved: seconds to run.

Run: ``python benchmarks/ndp_metric_ceiling.py [--n-tasks 256] [--samples 64 128 256 1024]
[--json out.json]`` (``--json`` rows: ``n_samples`` null is the analytic score).
"""

from __future__ import annotations

import argparse

import numpy as np
from _ndp_common import write_json
from ndp_interpolation import gp_metrics, gp_sampled_metrics, make_tasks, sk_kernel
from sklearn.gaussian_process import GaussianProcessRegressor


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tasks", type=int, default=256)
    p.add_argument("--samples", type=int, nargs="+", default=[64, 128, 256, 1024])
    p.add_argument("--kernels", nargs="+", default=["se", "matern52"])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=None, help="write the rows here")
    args = p.parse_args(argv)

    def gp(kernel):
        return GaussianProcessRegressor(sk_kernel(kernel, 1, True), optimizer=None)

    rows = []

    def row(kernel, n_samples, values):
        """Record the mean and standard error over tasks; return them formatted."""
        v = np.asarray(values)
        rows.append({"kernel": kernel, "n_samples": n_samples, "loglik": float(v.mean()),
                     "se": float(v.std(ddof=1) / np.sqrt(len(v))), "n_tasks": len(v)})
        return f"{rows[-1]['loglik']:7.3f} ± {rows[-1]['se']:.3f}"

    print(f"{args.n_tasks} tasks per kernel (D = 1), joint log-likelihood per target point "
          "(mean ± standard error over tasks)")
    for kernel in args.kernels:
        tasks = make_tasks(kernel, 1, args.n_tasks, seed=args.seed)
        exact = [gp_metrics(gp(kernel), *t)[0] for t in tasks]
        print(f"{kernel:9s} exact GP, analytic          {row(kernel, None, exact)}")
        for s in args.samples:
            ll = [gp_sampled_metrics(gp(kernel), *t, s, seed=i)[0]
                  for i, t in enumerate(tasks)]
            print(f"{kernel:9s} exact GP, moment-matched S={s:<5d}{row(kernel, s, ll)}")
    if args.json:
        write_json(args.json, {"args": vars(args), "n_targets": 50, "rows": rows})


if __name__ == "__main__":
    main()
