"""What limits the NDP's regression in Bayesian optimisation: the prior's training
distribution, the network, or the sampler.

The regression measurement of ``bayes_opt_picks.py`` (the same seeds, evaluations and query
points: ``--n-context`` uniform random evaluations of a test function of
``bayes_opt_hartmann.py``, values standardised by their mean and standard deviation, 64
uniform query points), for models that no amount of training reaches and one that it does:

- ``oracle_isotropic``: the Bayes posterior mean of the shipped ``gp`` prior's own training
  distribution (its four kernels times 32 equally weighted quantiles of its lengthscale
  distribution, one lengthscale for every input dimension, variance 1, the prior's noise),
  each component weighted by its marginal likelihood of the evaluations. The inputs are
  mapped as ``NDPRegressor(x_bounds=..., x_scaling="box")`` maps them: the box onto the
  prior's domain. What a network that had learnt that distribution perfectly, sampled
  perfectly, would predict.
- ``oracle_isotropic_ard``: the same, with the inputs mapped by ``NDPRegressor``'s default
  map (``x_scaling="ard"``: the box, then every feature compressed by its ML-II
  lengthscale's ratio to the shortest, up to the cap ``--x-compression``, by default the
  one the prior's evidence chooses), fitted to the same evaluations.
- ``oracle_per_dimension`` and ``oracle_per_dimension_ard``: both maps, for a training
  distribution that draws each input dimension's lengthscale independently from the same
  distribution (8 quantiles per dimension; ``PriorConfig(anisotropic=True)``), on which
  the shipped priors were not trained.
- ``gpr``: the GPR of the Bayesian-optimisation benchmarks (Matérn-5/2, one lengthscale per
  dimension, refitted by ML-II).
- ``ndp_<sampler>`` (``--samplers``, on the first ``--sampler-seeds`` seeds): the shipped
  ``gp`` prior with its default input map, sampled with each sampler (``--sampler-samples``
  joint samples at the evaluated and the query points together): the mean squared error of
  the samples' mean at the query points and its root mean squared difference from the
  evaluated values. ``fast`` against ``ddpm`` (the paper's sampler, 500 steps with
  RePaint U = 5) separates the sampler from the network.

The mean squared error (MSE) is in standardised units, as in ``bayes_opt_picks.py``, whose
``ndp`` rows on the same seeds are the network with its default sampler and 32 samples.

Run::

    python benchmarks/bayes_opt_oracle.py --n-seeds 10 --samplers fast ddpm \
        --sampler-seeds 3 --threads 1 --json oracle.json
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings

import numpy as np
from _ndp_common import (
    add_runtime_args,
    add_x_compression_arg,
    apply_runtime_args,
    bo_gpr,
    write_json,
)
from bayes_opt_hartmann import FUNCTIONS
from bayes_opt_picks import draws  # the same evaluations and queries as its regression
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from skdiff import NDPRegressor
from skdiff.datasets._gp import gp_kernel
from skdiff.diffusion.priors import load_prior
from skdiff.diffusion.training import box_to_domain


def components(config, per_dimension, n_quantiles):
    """The mixture components of a prior's training distribution as (kernel, lengthscales of
    shape (D,)) pairs: its kernels times ``n_quantiles`` equally weighted quantiles of its
    lengthscale distribution (with the sqrt(D) scaling), shared by the dimensions, or, with
    ``per_dimension``, every combination of one quantile per dimension."""
    lengths = config.lengthscale_quantiles(n_quantiles)
    d = config.n_dims
    grid = (itertools.product(lengths, repeat=d) if per_dimension
            else ((length,) * d for length in lengths))
    return [(k, np.asarray(c)) for c in grid for k in config.kernels]


def mixture_mean(parts, variance, noise, Xc, yc, Xt):
    """Posterior mean at ``Xt`` of a mixture of GPs given noisy values ``yc`` at ``Xc``: each
    component's GP posterior mean, weighted by its prior weight (equal) times its marginal
    likelihood of ``yc``."""
    log_ml, means = [], []
    for kernel, lengths in parts:
        a_c, a_t = Xc / lengths, Xt / lengths  # per-dimension lengthscales as a scaling
        kcc = gp_kernel(a_c, a_c, kernel, 1.0, variance) + noise * np.eye(len(a_c))
        chol = np.linalg.cholesky(kcc)
        alpha = np.linalg.solve(chol, yc)
        log_ml.append(-0.5 * alpha @ alpha - np.log(np.diag(chol)).sum())
        means.append(gp_kernel(a_t, a_c, kernel, 1.0, variance)
                     @ np.linalg.solve(chol.T, alpha))
    w = np.exp(np.asarray(log_ml) - max(log_ml))
    return (w / w.sum()) @ np.asarray(means)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--functions", nargs="+", default=["hartmann3", "branin"],
                   choices=sorted(FUNCTIONS))
    p.add_argument("--n-seeds", type=int, default=10)
    p.add_argument("--n-context", type=int, default=30,
                   help="evaluations the models condition on")
    p.add_argument("--samplers", nargs="*", default=[],
                   help="NDPRegressor samplers to run on the first --sampler-seeds seeds")
    p.add_argument("--sampler-seeds", type=int, default=3)
    p.add_argument("--sampler-samples", type=int, default=8)
    add_x_compression_arg(p)
    add_runtime_args(p)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    apply_runtime_args(args)
    results = {}
    for function in args.functions:
        objective, bounds, _ = FUNCTIONS[function]
        b = np.asarray(bounds, dtype=np.float64)
        config = load_prior("gp", n_dims=len(b))[1]
        offset, scale = box_to_domain(b[:, 0], b[:, 1], config.domain)  # the box map
        oracles = {"oracle_isotropic": components(config, False, 32),
                   "oracle_per_dimension": components(config, True, 8)}
        rows = {name: {"mse": []} for name in
                ["oracle_isotropic", "oracle_isotropic_ard", "oracle_per_dimension",
                 "oracle_per_dimension_ard", "gpr"]}
        rows.update({f"ndp_{s}": {"mse": [], "context_rmse": [], "seconds": []}
                     for s in args.samplers})
        for seed in range(args.n_seeds):
            X, Q = draws(bounds, args.n_context, seed)
            y, truth = objective(X), objective(Q)
            mu, sd = y.mean(), y.std()
            yz, z = (y - mu) / sd, (truth - mu) / sd
            # the default input map, as the NDP fitted to these evaluations computes it
            ard_offset, ard_scale = NDPRegressor(
                x_bounds=bounds, x_compression=args.x_compression).fit(X, yz)._input_map(
                np.vstack([X, Q]))
            for name, parts in oracles.items():
                for suffix, (o, c) in (("", (offset, scale)), ("_ard", (ard_offset, ard_scale))):
                    mean = mixture_mean(parts, config.variance, config.noise, (X - o) * c,
                                        yz, (Q - o) * c)
                    rows[name + suffix]["mse"].append(float(np.mean((mean - z) ** 2)))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                gpr = clone(bo_gpr(bounds)).fit(X, yz)
            rows["gpr"]["mse"].append(float(np.mean((gpr.predict(Q) - z) ** 2)))
            if seed < args.sampler_seeds:
                for sampler in args.samplers:
                    t0 = time.perf_counter()
                    ndp = NDPRegressor(x_bounds=bounds, alpha=0.0, sampler=sampler,
                                       x_compression=args.x_compression, random_state=0)
                    s = ndp.fit(X, yz).sample_posterior(
                        np.vstack([X, Q]), n_samples=args.sampler_samples, random_state=0)
                    mean = s.mean(1)
                    row = rows[f"ndp_{sampler}"]
                    row["mse"].append(float(np.mean((mean[len(X):] - z) ** 2)))
                    row["context_rmse"].append(
                        float(np.sqrt(np.mean((mean[:len(X)] - yz) ** 2))))
                    row["seconds"].append(time.perf_counter() - t0)
            print(f"{function} seed {seed}: " + ", ".join(
                f"{n} {r['mse'][-1]:.3f}" for n, r in rows.items() if len(r["mse"]) > seed),
                flush=True)
        results[function] = rows
        for name, r in rows.items():
            extra = (f", RMS residual at the evaluations {np.mean(r['context_rmse']):.3f}"
                     if "context_rmse" in r else "")
            print(f"{function} {name}: MSE mean {np.mean(r['mse']):.3f}, median "
                  f"{np.median(r['mse']):.3f} over {len(r['mse'])} seeds{extra}")
    if args.json:
        write_json(args.json, {"args": vars(args), "n_queries": 64, "results": results})


if __name__ == "__main__":
    main()
