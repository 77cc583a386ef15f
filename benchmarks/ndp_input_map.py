"""How far NDPRegressor's ARD input map should compress a feature: fixed caps against the
cap the prior's evidence chooses (``x_compression="auto"``), on 2-D functions.

With several features, ``x_scaling="ard"`` compresses every feature whose ML-II
lengthscale is longer than the shortest by their ratio, up to ``x_compression``. Each task
fits ``NDPRegressor(random_state=0, x_compression=c)`` to 20 uniform random evaluations of a
function (no noise) for every fixed cap ``c`` of 1 (the box map), 2, 3, 5 and 10, and draws
64 joint samples at the evaluations and 50 uniform query points together. ``"auto"`` picks
one of those caps per task (its row repeats that cap's figures). Metrics, in units of the
evaluations' standard deviation: the Gaussian log-likelihood per query point of each
point's sample mean and standard deviation, the MSE of the mean at the queries, the RMS
residual of the mean at the evaluations (how well the samples reproduce what they condition
on), and the prior's log evidence per point of the context under each cap (the score
``"auto"`` maximises). Baseline: ML-II ``GaussianProcessRegressor`` (constant times an RBF
with one lengthscale per feature, plus white noise; ``normalize_y``).

Functions, on their usual boxes: ``sinlin`` (sin(5 x1) + x2 on the unit square: a slope
along x2 that ML-II reads as a long lengthscale of large amplitude), ``camel`` (six-hump
camel), ``gp_ard`` (a draw of an SE process of lengthscales 0.15 and 0.8 on the unit
square, interpolated) are the dev functions; ``branin`` is held out (it is also a held-out
function of the Bayesian-optimisation benchmarks).

Run: ``python benchmarks/ndp_input_map.py [--functions sinlin camel gp_ard branin]
[--seeds 0 1 2 3] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _ndp_common import write_json
from _results import add_run_arguments
from bayes_opt_hartmann import FUNCTIONS
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skdiff import NDPRegressor

CAPS = tuple(float(c) for c in NDPRegressor._ARD_CAPS)
SPLITS = {"sinlin": "dev", "camel": "dev", "gp_ard": "dev", "branin": "heldout"}
N_CONTEXT, N_QUERY, N_SAMPLES = 20, 50, 64


def sinlin(X):
    return np.sin(5 * X[:, 0]) + X[:, 1]


def gp_ard(seed):
    """A draw of an SE process with lengthscales (0.15, 0.8) on the unit square: exact at
    400 random points, interpolated between them."""
    from scipy.interpolate import RBFInterpolator

    rng = np.random.default_rng(100 + seed)
    P = rng.uniform(size=(400, 2))
    d = (P[:, None] - P[None]) / np.array([0.15, 0.8])
    K = np.exp(-0.5 * (d ** 2).sum(-1)) + 1e-6 * np.eye(len(P))
    f = np.linalg.cholesky(K) @ rng.normal(size=len(P))
    return RBFInterpolator(P, f, kernel="gaussian", epsilon=3.0, smoothing=1e-6)


def function(name, seed):
    """(objective, bounds) of a task's function."""
    if name == "sinlin":
        return sinlin, [(0.0, 1.0)] * 2
    if name == "gp_ard":
        return gp_ard(seed), [(0.0, 1.0)] * 2
    objective, bounds, _ = FUNCTIONS[name]
    return objective, bounds


def task(name, seed):
    """Evaluations and queries of one task: uniform on the function's box."""
    f, bounds = function(name, seed)
    lo, hi = np.asarray(bounds, dtype=float).T
    rng = np.random.default_rng(seed)
    X = lo + (hi - lo) * rng.uniform(size=(N_CONTEXT, 2))
    Q = lo + (hi - lo) * rng.uniform(size=(N_QUERY, 2))
    return X, f(X), Q, f(Q)


def scores(mean, sd, y, z, n_context):
    """Log-likelihood per query point, query MSE and context RMS residual (units of y's
    standard deviation)."""
    m, s = mean[n_context:], sd[n_context:]
    ll = np.mean(-0.5 * np.log(2 * np.pi * s ** 2) - 0.5 * (z - m) ** 2 / s ** 2)
    return {"loglik": float(ll), "mse": float(np.mean((m - z) ** 2)),
            "context_rms": float(np.sqrt(np.mean((mean[:n_context] - y) ** 2)))}


def evidence(est):
    """The prior's log evidence per point of the fitted context (units of y), as
    ``x_compression="auto"`` scores a cap."""
    return float(est._context_log_evidence(est.y_train_) / len(est.y_train_))


def run_task(name, seed):
    X, y, Q, q = task(name, seed)
    loc, scale = y.mean(), y.std()
    yz, qz = (y - loc) / scale, (q - loc) / scale
    row = {"function": name, "split": SPLITS[name], "seed": seed, "metrics": {},
           "evidence": {}}
    t0 = time.perf_counter()
    for cap in CAPS:
        est = NDPRegressor(random_state=0, x_compression=cap).fit(X, y)
        s = (est.sample_posterior(np.vstack([X, Q]), n_samples=N_SAMPLES, random_state=seed)
             - loc) / scale
        row["metrics"][f"{cap:g}"] = scores(s.mean(1), s.std(1, ddof=1), yz, qz, N_CONTEXT)
        row["evidence"][f"{cap:g}"] = evidence(est)
    auto = NDPRegressor(random_state=0).fit(X, y)
    row["chosen"] = float(auto.x_compression_)
    row["metrics"]["auto"] = row["metrics"][f"{auto.x_compression_:g}"]
    row["x_lengthscales"] = auto.x_lengthscales_.tolist()
    kernel = ConstantKernel() * RBF(np.ones(2), (1e-2, 1e2)) + WhiteKernel(1e-4, (1e-8, 1.0))
    gpr = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=2,
                                   random_state=0)
    lo, hi = X.min(0), X.max(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gpr.fit((X - lo) / (hi - lo), yz)
    mean, sd = gpr.predict((np.vstack([X, Q]) - lo) / (hi - lo), return_std=True)
    row["metrics"]["gpr"] = scores(mean, sd, yz, qz, N_CONTEXT)
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def summary(rows):
    """Per function and variant: mean log-likelihood, MSE and context residual over the
    seeds, with their standard errors, and how often ``"auto"`` chose each cap."""
    out = {}
    for name in dict.fromkeys(r["function"] for r in rows):
        sub = [r for r in rows if r["function"] == name]
        res = {}
        for variant in sub[0]["metrics"]:
            a = {k: np.array([r["metrics"][variant][k] for r in sub])
                 for k in ("loglik", "mse", "context_rms")}
            res[variant] = {k: float(v.mean()) for k, v in a.items()}
            res[variant]["loglik_se"] = float(a["loglik"].std(ddof=1) / np.sqrt(len(sub))) \
                if len(sub) > 1 else None
        res["chosen"] = {f"{c:g}": sum(r["chosen"] == c for r in sub) for c in CAPS}
        out[name] = {"split": sub[0]["split"], "seeds": len(sub), "variants": res}
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--functions", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    add_run_arguments(p)
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    rows = []
    for name in args.functions:
        for seed in args.seeds:
            row = run_task(name, seed)
            rows.append(row)
            m = row["metrics"]
            print(f"{name:8s} seed {seed}  auto -> {row['chosen']:g}  " + "  ".join(
                f"{v} {m[v]['loglik']:+.2f}/{m[v]['mse']:.3f}" for v in m), flush=True)
            if args.json:
                write_json(args.json, {"args": vars(args), "summary": summary(rows),
                                       "tasks": rows}, complete=False)
    for name, s in summary(rows).items():
        print(f"{name} ({s['split']}): " + "  ".join(
            f"{v} {r['loglik']:+.3f}" for v, r in s["variants"].items() if v != "chosen"))
    if args.json:
        write_json(args.json, {"args": vars(args), "summary": summary(rows), "tasks": rows})


if __name__ == "__main__":
    main()
