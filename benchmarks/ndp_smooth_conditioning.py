"""How closely NDPRegressor's samples follow a smooth context, by RePaint resampling repeats.

Tasks: 1-D draws of an SE GP of lengthscale 0.35 times the interval (x in [0, 10]), noise
standard deviation 0.02, 4-12 context points and 50 query points on the same interval: functions
smoother than the ``gp`` prior's typical draw, from which a few points pin the function down.
Every task is fitted with the defaults, with more RePaint repeats (``n_resample``) and with
the Tweedie-corrected sampler (``sampler="tweedie"``; ``--configs`` picks some), and scored
by ``sample_posterior(n_samples=128)``: the mean squared error of the samples' mean at the
queries and the joint log-likelihood per point of the Gaussian moment-matched to them (the
NDP paper's metric). Beside them, on the same inputs and under the same input map and target
scaling, the mean of the ``gp`` prior's own Bayes posterior (the mixture of GPs it was trained
on, conditioned on the context: what a perfectly trained network with an exact conditional
sampler would predict), and ML-II ``GaussianProcessRegressor``.

Run (about 10 minutes on two cores; the oracle part takes a minute)::

    python benchmarks/ndp_smooth_conditioning.py --json \\
        benchmarks/results/ndp_smooth_conditioning.json

The oracle part also runs the Tweedie correction with the exact covariance (64 cubic levels,
``n_resample`` "tweedie" in its rows).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _ndp_common import add_runtime_args, apply_runtime_args, write_json
from ndp_interpolation import gp_moment_metrics, prior_bayes_posterior
from ndp_sampler_network import sampler_path
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skdiff import NDPRegressor
from skdiff.datasets._gp import gp_kernel
from skdiff.diffusion import n_evaluations, resample_path, strided_levels
from skdiff.ndp import gaussian_log_likelihood

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test oracle lives in tests/

from tests.diffusion.oracle import gp_posterior, kl_per_point, sampler_moments  # noqa: E402

#: NDPRegressor settings compared (the defaults first).
CONFIGS = {"defaults": {}, "n_resample=8": {"n_resample": 8},
           "n_resample=12": {"n_resample": 12}, "sampler=tweedie": {"sampler": "tweedie"}}


def make_tasks(n_tasks, seed):
    """(x_context, y_context, x_query, y_query) per task."""
    rng = np.random.RandomState(seed)
    tasks = []
    for _ in range(n_tasks):
        n = rng.randint(4, 13)
        x = np.sort(rng.uniform(0, 10, n + 50))
        K = gp_kernel(x[:, None], x[:, None], "se", 3.5, 1.0) + 1e-8 * np.eye(len(x))
        y = np.linalg.cholesky(K) @ rng.standard_normal(len(x)) + 0.02 * rng.standard_normal(
            len(x))
        idx = rng.permutation(len(x))
        c, q = idx[:n], idx[n:]
        tasks.append((x[c, None], y[c], x[q, None], y[q]))
    return tasks


def oracle_rows(n_tasks, seed, repeats=(4, 12)):
    """RePaint's own error with exact noise predictions on SE draws of several lengthscales
    (the module docstring): one row per lengthscale, context size and repeats, and one for
    the Tweedie correction with the exact covariance (64 cubic levels, no repeats:
    ``n_resample`` "tweedie")."""
    from skdiff.diffusion import NoiseSchedule

    schedule = NoiseSchedule.official()
    noise = 0.0025
    rng = np.random.RandomState(seed)
    levels = strided_levels(schedule.T, 32, "cubic")
    paths = {u: resample_path(levels, u) for u in repeats}
    paths["tweedie"] = resample_path(strided_levels(schedule.T, 64, "cubic"), 0)
    rows = []
    for ls in (0.25, 0.6, 1.2):
        for c in (3, 8):
            scores = {u: [] for u in paths}
            for _ in range(n_tasks):
                x = rng.uniform(-1.8, 1.8, c + 40)
                K = gp_kernel(x[:, None], x[:, None], "se", ls, 1.0) + noise * np.eye(len(x))
                y = np.linalg.cholesky(K) @ rng.standard_normal(len(x))
                mu, cov = gp_posterior(K, c, y[:c])
                for u, path in paths.items():
                    m, P = sampler_moments(schedule, K, c, y[:c], path,
                                           tweedie=u == "tweedie")
                    scores[u].append((np.mean((m - mu) ** 2 / np.diag(cov)),
                                      kl_per_point(mu, cov, m, P)))
            for u, v in scores.items():
                v = np.asarray(v)
                rows.append({"lengthscale": ls, "context": c, "n_resample": u,
                             "evaluations": n_evaluations(paths[u]),
                             "mean_error": float(v[:, 0].mean()), "kl": float(v[:, 1].mean())})
                print(f"oracle: lengthscale {ls}, {c} context, n_resample={u}: squared error "
                      f"of the mean / posterior variance {rows[-1]['mean_error']:.3f}, "
                      f"KL per point {rows[-1]['kl']:.3f}", flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tasks", type=int, default=8)
    p.add_argument("--seed", type=int, default=123, help="task seed")
    p.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS),
                   help="the NDPRegressor settings to run (default: all)")
    p.add_argument("--json", default=None, help="write the results here")
    add_runtime_args(p)
    args = p.parse_args(argv)
    apply_runtime_args(args)
    warnings.simplefilter("ignore")
    oracle = oracle_rows(args.n_tasks, args.seed)
    configs = {name: CONFIGS[name] for name in args.configs}
    if "defaults" not in configs:  # the gp prior's Bayes posterior uses the defaults' fit
        configs = {"defaults": {}, **configs}
    per = {name: {"mse": [], "loglik": [], "seconds": []} for name in configs}
    bayes, gpr = {"mse": []}, {"mse": [], "loglik": []}
    evaluations = {}
    for i, (xc, yc, xq, yq) in enumerate(make_tasks(args.n_tasks, args.seed)):
        line = []
        for name, kw in configs.items():
            t0 = time.perf_counter()
            est = NDPRegressor(random_state=0, **kw).fit(xc, yc)
            samples = est.sample_posterior(xq, n_samples=128, random_state=i)
            per[name]["seconds"].append(time.perf_counter() - t0)
            per[name]["mse"].append(float(np.mean((samples.mean(1) - yq) ** 2)))
            per[name]["loglik"].append(float(gaussian_log_likelihood(yq, samples)))
            # the level path of the estimator's own sampler (sampler_ resolved in fit)
            tweedie = est.sampler_ == "tweedie"  # no repeats: one evaluation per level
            path = sampler_path(est.schedule_, {**est._levels_kwargs(),
                                                "n_resample": 0 if tweedie else est.n_resample})
            evaluations[name] = n_evaluations(path)
            line.append(f"{name} {per[name]['mse'][-1]:.4f}")
            if name == "defaults":
                Zc, Z, _ = est._check_X(xq)
                w, means, _ = prior_bayes_posterior(est.prior_config_, Zc, est.y_train_, Z)
                m = (w @ means) * est.y_std_ + est.y_mean_
                bayes["mse"].append(float(np.mean((m - yq) ** 2)))
        g = GaussianProcessRegressor(C(1.0) * RBF(1.0) + WhiteKernel(1e-2), normalize_y=True,
                                     n_restarts_optimizer=2, random_state=0).fit(xc, yc)
        mean, cov = g.predict(xq, return_cov=True)
        loglik, mse, _ = gp_moment_metrics(mean, cov + 1e-9 * np.eye(len(yq)), yq)
        gpr["mse"].append(float(mse))
        gpr["loglik"].append(float(loglik))
        print(f"task {i} ({len(yc)} context), MSE of the mean: " + ", ".join(line)
              + f", gp prior's Bayes posterior {bayes['mse'][-1]:.4f}, "
              f"GPR {gpr['mse'][-1]:.4f}", flush=True)
    rows = [{"method": f"NDPRegressor, {name}", "evaluations": evaluations[name],
             "median_mse": float(np.median(r["mse"])), "median_loglik": float(
                 np.median(r["loglik"])), "seconds": float(np.mean(r["seconds"])),
             "mse": r["mse"], "loglik": r["loglik"]} for name, r in per.items()]
    rows.append({"method": "gp prior's Bayes posterior (mean)",
                 "median_mse": float(np.median(bayes["mse"])), "mse": bayes["mse"]})
    rows.append({"method": "GaussianProcessRegressor, ML-II",
                 "median_mse": float(np.median(gpr["mse"])),
                 "median_loglik": float(np.median(gpr["loglik"])), "mse": gpr["mse"],
                 "loglik": gpr["loglik"]})
    for r in rows:
        print(f"{r['method']:40s} median MSE {r['median_mse']:.4f}"
              + (f"  median log-lik {r['median_loglik']:.3f}" if "median_loglik" in r else "")
              + (f"  {r['seconds']:.1f} s a task" if "seconds" in r else ""))
    if args.json:
        write_json(args.json, {"args": vars(args), "rows": rows, "oracle": oracle})


if __name__ == "__main__":
    main()
