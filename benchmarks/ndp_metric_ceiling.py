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
variance 1, lengthscale 0.25, noise variance 0.0025). No network is involved: a few minutes.

The marginalising ``gp`` prior is scored the same way through its own Bayes posterior: the
mixture of GPs over its kernels and lengthscales that it was trained to sample, conditioned on
each task's context (``ndp_interpolation.prior_bayes_posterior``). The task's kernel and
lengthscale are one component among many in it, so this is the most a perfectly trained
``gp`` prior can score on these tasks.

Run: ``python benchmarks/ndp_metric_ceiling.py [--n-tasks 256] [--samples 64 128 256 1024]
[--priors gp] [--json out.json]`` (``--json`` rows: ``n_samples`` null is the analytic score,
``posterior`` names the posterior scored).
"""

from __future__ import annotations

import argparse

import numpy as np
from _ndp_common import write_json
from ndp_interpolation import (
    gp_metrics,
    gp_sampled_metrics,
    make_tasks,
    prior_bayes_metrics,
    sk_kernel,
)
from sklearn.gaussian_process import GaussianProcessRegressor

from skdiff.diffusion.priors import get_prior_config


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tasks", type=int, default=256)
    p.add_argument("--samples", type=int, nargs="+", default=[64, 128, 256, 1024])
    p.add_argument("--kernels", nargs="+", default=["se", "matern52"])
    p.add_argument("--priors", nargs="*", default=["gp"],
                   help="marginalising priors whose own Bayes posterior is scored too")
    p.add_argument("--prior-samples", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=None, help="write the rows here")
    args = p.parse_args(argv)

    def gp(kernel):
        return GaussianProcessRegressor(sk_kernel(kernel, 1, True), optimizer=None)

    rows = []

    def row(kernel, n_samples, values, posterior="exact GP"):
        """Record the mean and standard error over tasks; return them formatted."""
        v = np.asarray(values)
        rows.append({"kernel": kernel, "posterior": posterior, "n_samples": n_samples,
                     "loglik": float(v.mean()), "se": float(v.std(ddof=1) / np.sqrt(len(v))),
                     "n_tasks": len(v)})
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
        for name in args.priors:
            config = get_prior_config(name, 1)
            label = f"{name} prior's Bayes posterior"
            for s in (None, args.prior_samples):
                ll = [prior_bayes_metrics(config, *t, s, seed=i)[0] for i, t in enumerate(tasks)]
                print(f"{kernel:9s} {label}, {'analytic' if s is None else f'S={s}'}  "
                      f"{row(kernel, s, ll, label)}")
    if args.json:
        write_json(args.json, {"args": vars(args), "n_targets": 50, "rows": rows})


if __name__ == "__main__":
    main()
