"""Bayesian optimisation of the 3-D Hartmann function: NDP vs GPR Thompson sampling vs random.

Every method starts from the same 3 uniform random points and then makes ``--n-iter``
evaluations, choosing each by Thompson sampling over one joint posterior sample on 64 fresh
uniform candidates (random search: the first candidate). NDP conditions the pretrained 3-D prior
on the evaluations so far (no retraining between iterations); GPR refits a Matérn-5/2 kernel
by ML-II at every iteration. Printed: the simple regret (best value so far minus the global
minimum -3.86278) against iterations, mean ± standard error over ``--n-seeds`` runs; with
``--json``, every run's regret after each evaluation (the 3 initial points first) and the wall
and CPU seconds per run.

Run::

    python benchmarks/bayes_opt_hartmann.py --n-seeds 5 --n-iter 30 --json bo.json
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _ndp_common import add_runtime_args, apply_runtime_args, write_json
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

from skdiff import NDPRegressor
from skdiff.bayes_opt import HARTMANN3_MIN, hartmann3, thompson_sampling

BOUNDS = [(0.0, 1.0)] * 3


def models(prior):
    gpr = GaussianProcessRegressor(
        ConstantKernel(1.0) * Matern(np.full(3, 0.3), nu=2.5, length_scale_bounds=(1e-2, 10))
        + WhiteKernel(1e-4, noise_level_bounds=(1e-6, 1e-1)),
        normalize_y=True, n_restarts_optimizer=2)
    return {
        "ndp": NDPRegressor(prior=prior, x_bounds=BOUNDS, n_samples=2),
        "gpr": gpr,
        "random": "random",
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-seeds", type=int, default=5)
    p.add_argument("--n-iter", type=int, default=30)
    p.add_argument("--n-candidates", type=int, default=64)
    p.add_argument("--prior", default="gp")
    add_runtime_args(p)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    apply_runtime_args(args)
    regrets, seconds, cpu_seconds = {}, {}, {}
    for name in ("random", "gpr", "ndp"):
        runs = []
        t0, c0 = time.perf_counter(), time.process_time()
        for seed in range(args.n_seeds):
            model = models(args.prior)[name]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                res = thompson_sampling(hartmann3, BOUNDS, model=model, n_iter=args.n_iter,
                                        n_init=3, n_candidates=args.n_candidates,
                                        random_state=seed)
            runs.append(res.best_so_far - HARTMANN3_MIN)
        regrets[name] = np.asarray(runs)
        seconds[name] = (time.perf_counter() - t0) / args.n_seeds
        cpu_seconds[name] = (time.process_time() - c0) / args.n_seeds
        print(f"{name}: {seconds[name]:.1f} s per run (CPU {cpu_seconds[name]:.1f} s)",
              flush=True)
    marks = [m for m in (0, 5, 10, 15, 20, 25, 30, 40, 50) if m <= args.n_iter]
    print("\nsimple regret (mean ± s.e.) after k iterations (3 initial points not counted)")
    print("k      " + "".join(f"{n:>18s}" for n in regrets))
    for k in marks:
        row = []
        for r in regrets.values():
            v = r[:, 3 + k - 1] if k > 0 else r[:, 2]
            row.append(f"{v.mean():9.3f} ± {v.std(ddof=1) / np.sqrt(len(v)):.3f}")
        print(f"{k:<7d}" + "".join(f"{c:>18s}" for c in row))
    if args.json:
        write_json(args.json, {"args": vars(args), "n_init": 3, "seconds_per_run": seconds,
                               "cpu_seconds_per_run": cpu_seconds,
                               "regret": {k: v.tolist() for k, v in regrets.items()}})


if __name__ == "__main__":
    main()
