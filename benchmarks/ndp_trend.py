"""NDPRegressor's linear trend (``trend="linear"``) against its constant mean, paired per task.

Functions on [0, 1], each task 5-12 noisy context points (noise 0.05 of the function's
spread over the task's points) and 50 query points, in two regimes:

- ``interpolation``: context and queries uniform on [0, 1] (the defaults benchmark's
  protocol for functions);
- ``extrapolation``: context uniform on [0, 0.6], queries uniform on [0.6, 1] (continuing a
  curve beyond the data).

Families: ``stationary`` (an SE process of lengthscale 0.15, as random cosines),
``drift`` (a line of random slope plus that process), ``growth`` (an exponential of random
rate and sign) and ``forrester`` (the Forrester function), the generators of
``benchmarks/_defaults_data.py``. Every task fits ``NDPRegressor(random_state=0,
trend=...)`` for both trends and draws 128 posterior samples at the queries (seeded by the
task). Metrics, on y standardised by the context's mean and standard deviation: the joint
log-likelihood per point of the Gaussian moment-matched to the samples (the paper's metric),
the MSE of their mean and the coverage of their 95 % intervals. Baselines: ML-II
``GaussianProcessRegressor`` (constant times RBF plus white noise, ``normalize_y``), and the
same with a linear kernel added (``DotProduct``, the GP's counterpart of a linear trend),
scored by their exact joint predictive.

Run: ``python benchmarks/ndp_trend.py [--regimes interpolation extrapolation]
[--families stationary drift growth forrester] [--n-tasks 8] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _defaults_data import _family_member, _forrester
from _defaults_tasks import _exact_loglik, _sample_metrics
from _ndp_common import write_json
from _results import add_run_arguments
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct, WhiteKernel

from skdiff import NDPRegressor

REGIMES = {"interpolation": ((0.0, 1.0), (0.0, 1.0)),
           "extrapolation": ((0.0, 0.6), (0.6, 1.0))}
FAMILIES = ("wiggle", "drift", "growth", "forrester")
N_SAMPLES = 128


def tasks(family, regime, n_tasks, seed):
    """(x_context, y_context, x_query, y_query) per task; noise 0.05 of the spread."""
    (c_lo, c_hi), (q_lo, q_hi) = REGIMES[regime]
    rng = np.random.RandomState(seed)
    out = []
    for n in rng.randint(5, 13, size=n_tasks):
        f = (lambda x: _forrester(x[:, None])) if family == "forrester" else \
            _family_member(family, rng)
        xc = rng.uniform(c_lo, c_hi, size=(n, 1))
        xq = rng.uniform(q_lo, q_hi, size=(50, 1))
        fc, fq = f(xc[:, 0]), f(xq[:, 0])
        sd = max(float(np.r_[fc, fq].std()), 1e-3)
        out.append((xc, fc + 0.05 * sd * rng.normal(size=n), xq,
                    fq + 0.05 * sd * rng.normal(size=50)))
    return out


def gpr_metrics(xc, yc, xq, yq, linear):
    """Exact joint log-likelihood per point, MSE and 95 % coverage of an ML-II GPR."""
    loc, scale = xc.mean(0), xc.std(0) + 1e-12
    kernel = ConstantKernel() * RBF() + WhiteKernel(1e-2, (1e-6, 1.0))
    if linear:
        kernel = kernel + ConstantKernel(1.0, (1e-3, 1e3)) * DotProduct(1.0, "fixed")
    gpr = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=5,
                                   random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gpr.fit((xc - loc) / scale, yc)
    mean, cov = gpr.predict((xq - loc) / scale, return_cov=True)
    sd = np.sqrt(np.diag(cov))
    return (_exact_loglik(mean, cov, yq), float(np.mean((yq - mean) ** 2)),
            float(np.mean(np.abs(yq - mean) <= 1.96 * sd)))


def run_task(xc, yc, xq, yq, seed):
    """Metrics of every method on one task, y standardised by the context."""
    loc, scale = float(yc.mean()), float(yc.std())
    z = (yq - loc) / scale
    out = {}
    for trend in ("constant", "linear"):
        est = NDPRegressor(random_state=0, trend=trend).fit(xc, yc)
        samples = est.sample_posterior(xq, n_samples=N_SAMPLES, random_state=seed)
        out[f"ndp_{trend}"] = _sample_metrics((samples - loc) / scale, z)
    for name, linear in (("gpr", False), ("gpr_linear", True)):
        ll, mse, cover = gpr_metrics(xc, (yc - loc) / scale, xq, z, linear)
        out[name] = (ll, mse, cover)
    return out


def summary(rows):
    """Median and mean log-likelihood, median MSE and mean coverage per method, and the
    paired difference of the two trends (linear less constant) per task."""
    methods = rows[0]["metrics"].keys()
    res = {}
    for m in methods:
        a = np.array([r["metrics"][m] for r in rows])
        res[m] = {"median_loglik": float(np.median(a[:, 0])), "mean_loglik": float(a[:, 0].mean()),
                  "median_mse": float(np.median(a[:, 1])), "coverage95": float(a[:, 2].mean())}
    diff = np.array([r["metrics"]["ndp_linear"][0] - r["metrics"]["ndp_constant"][0]
                     for r in rows])
    res["linear_minus_constant"] = {"median": float(np.median(diff)),
                                    "wins": int((diff > 0).sum()), "tasks": len(diff)}
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--regimes", nargs="+", default=list(REGIMES), choices=list(REGIMES))
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    p.add_argument("--n-tasks", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    add_run_arguments(p)
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    results = []
    for regime in args.regimes:
        for family in args.families:
            t0 = time.perf_counter()
            rows = [{"task": i, "n_context": len(xc), "metrics": run_task(xc, yc, xq, yq, i)}
                    for i, (xc, yc, xq, yq) in enumerate(tasks(family, regime, args.n_tasks,
                                                               args.seed))]
            res = {"regime": regime, "family": family, **summary(rows),
                   "seconds": round(time.perf_counter() - t0, 1), "tasks": rows}
            results.append(res)
            print(f"{regime:13s} {family:9s} " + "  ".join(
                f"{m} {res[m]['median_loglik']:+.2f}/{res[m]['median_mse']:.3g}/"
                f"{res[m]['coverage95']:.2f}" for m in ("ndp_constant", "ndp_linear", "gpr",
                                                        "gpr_linear"))
                  + f"  linear wins {res['linear_minus_constant']['wins']}/{len(rows)}",
                  flush=True)
    if args.json:
        write_json(args.json, {"args": vars(args), "results": results})


if __name__ == "__main__":
    main()
