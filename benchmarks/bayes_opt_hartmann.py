"""Bayesian optimisation of a test function: NDP vs GPR Thompson sampling vs random.

``--function hartmann3`` (default; the 3-D Hartmann function on the unit cube) or ``branin``
(the 2-D Branin function on its usual box), the held-out functions of the NDP defaults, or
``camel`` (six-hump camel on [-3, 3] x [-2, 2]) or ``goldstein_price`` (on [-2, 2]^2), the
dev functions on which ``thompson_sampling``'s NDP defaults were chosen, or
``styblinski_tang3`` (on [-5, 5]^3) or ``rosenbrock3`` (on [-2, 2]^3), two 3-D functions
added after those defaults were fixed. Every method starts
from the same 3 uniform random points and then makes ``--n-iter`` evaluations, choosing each
by Thompson sampling over one joint posterior sample on 64 fresh uniform candidates
(``local_fraction=0``, as in the paper; random search: the first candidate; ``--local`` also
runs the NDP priors and GPR with half the candidates drawn around the best point so far,
``local_fraction=0.5``, ``thompson_sampling``'s default in two or more dimensions, as
``ndp_local`` / ``ndp_<prior>_local`` and ``gpr_local``). NDP conditions the pretrained prior of the
function's dimension on the evaluations so far (no retraining between iterations;
``--priors gp matern52`` runs the marginalising ``gp`` prior and the Matérn-5/2 one, whose
lengthscale is fixed) on power-transformed values (``y_transform="auto"``, the default;
``--raw-priors gp`` also runs those priors on the values as they are, as ``ndp_raw`` /
``ndp_<prior>_raw``), with ``NDPRegressor``'s default sampler (``--sampler``,
``--n-resample``); GPR
refits a Matérn-5/2 kernel by ML-II at every iteration (initial lengthscale 0.3 and bounds
0.01 to 10, times each side of the box) on the values as they are (its default) and, as
``gpr_power``, on power-transformed values. NDP ranks the candidates by a draw denoised
from 8 joint samples (``thompson_sampling(denoise="auto")``); ``--no-denoise`` by one
sample, as ``thompson_sampling`` does by default. Printed: the simple regret (best value
so far minus the global minimum) against iterations, mean ± standard error over
``--n-seeds`` runs; with ``--json``, every run's regret after each evaluation (the 3
initial points first) and the wall and CPU seconds per run.

Run::

    python benchmarks/bayes_opt_hartmann.py --n-seeds 5 --n-iter 30 --json bo.json
    python benchmarks/bayes_opt_hartmann.py --priors gp matern52 --raw-priors gp \
        --local --json bo_priors.json
    python benchmarks/bayes_opt_hartmann.py --function branin --n-seeds 5 --json bo2.json
    python benchmarks/bayes_opt_hartmann.py --function camel --n-seeds 10 --json bo3.json
"""

from __future__ import annotations

import argparse

import numpy as np
from _ndp_common import (
    add_runtime_args,
    add_sampler_arg,
    add_x_compression_arg,
    apply_runtime_args,
    bo_gpr,
    print_regrets,
    run_thompson,
    write_json,
)

from skdiff import NDPRegressor
from skdiff.bayes_opt import BRANIN_BOUNDS, BRANIN_MIN, HARTMANN3_MIN, branin, hartmann3


def six_hump_camel(X):
    """Six-hump camel: two global minima of -1.0316285 at (0.0898, -0.7126) and
    (-0.0898, 0.7126), four local ones."""
    x, y = np.atleast_2d(X).T
    return (4 - 2.1 * x**2 + x**4 / 3) * x**2 + x * y + (-4 + 4 * y**2) * y**2


def goldstein_price(X):
    """Goldstein-Price: global minimum 3 at (0, -1), values up to about 10^6 on [-2, 2]^2."""
    x, y = np.atleast_2d(X).T
    a = 1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x**2 - 14 * y + 6 * x * y + 3 * y**2)
    b = 30 + (2 * x - 3 * y) ** 2 * (18 - 32 * x + 12 * x**2 + 48 * y - 36 * x * y
                                     + 27 * y**2)
    return a * b


def styblinski_tang3(X):
    """Styblinski-Tang in three dimensions: global minimum -117.4985 at x_i = -2.903534, a
    local minimum in each of the other seven orthants of [-5, 5]^3."""
    X = np.atleast_2d(X)
    return 0.5 * (X**4 - 16 * X**2 + 5 * X).sum(axis=1)


def rosenbrock3(X):
    """Rosenbrock in three dimensions: global minimum 0 at (1, 1, 1) at the end of a
    curved, flat-bottomed valley; values up to about 7 * 10^3 on [-2, 2]^3."""
    X = np.atleast_2d(X)
    return (100 * (X[:, 1:] - X[:, :-1] ** 2) ** 2 + (1 - X[:, :-1]) ** 2).sum(axis=1)


#: name -> (objective, bounds, global minimum)
FUNCTIONS = {"hartmann3": (hartmann3, [(0.0, 1.0)] * 3, HARTMANN3_MIN),
             "branin": (branin, [list(b) for b in BRANIN_BOUNDS], BRANIN_MIN),
             "camel": (six_hump_camel, [(-3.0, 3.0), (-2.0, 2.0)], -1.0316285),
             "goldstein_price": (goldstein_price, [(-2.0, 2.0)] * 2, 3.0),
             "styblinski_tang3": (styblinski_tang3, [(-5.0, 5.0)] * 3, -117.498497),
             "rosenbrock3": (rosenbrock3, [(-2.0, 2.0)] * 3, 0.0)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--function", choices=sorted(FUNCTIONS), default="hartmann3")
    p.add_argument("--n-seeds", type=int, default=5)
    p.add_argument("--n-iter", type=int, default=30)
    p.add_argument("--n-candidates", type=int, default=64)
    p.add_argument("--priors", nargs="+", default=["gp"],
                   help="shipped NDP priors to run (method 'ndp' for gp, 'ndp_<name>' else)")
    p.add_argument("--raw-priors", nargs="*", default=[],
                   help="shipped NDP priors to run also with y_transform=None (method "
                        "'ndp_raw' for gp, 'ndp_<name>_raw' else)")
    add_sampler_arg(p)
    p.add_argument("--n-resample", type=int, default=None,
                   help="NDPRegressor's n_resample (default: the estimator's own default)")
    p.add_argument("--no-denoise", action="store_true",
                   help="NDP rows rank the candidates by one joint sample "
                        "(thompson_sampling's default, denoise=False) instead of a draw "
                        "denoised from 8 (denoise='auto')")
    p.add_argument("--local", action="store_true",
                   help="also run the NDP priors of --priors and GPR with half the "
                        "candidates around the best point so far (local_fraction=0.5), as "
                        "'<method>_local'")
    add_x_compression_arg(p)
    add_runtime_args(p)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    apply_runtime_args(args)
    objective, bounds, f_min = FUNCTIONS[args.function]
    # only what the command sets differs from NDPRegressor's defaults
    resample = {} if args.n_resample is None else {"n_resample": args.n_resample}

    def ndp(prior):
        return lambda: NDPRegressor(prior=prior, x_bounds=bounds, alpha=0.0, n_samples=2,
                                    sampler=args.sampler, x_compression=args.x_compression,
                                    **resample)

    def gpr():
        return bo_gpr(bounds)

    models = {"random": lambda: "random", "gpr": gpr,
              "gpr_power": (gpr, {"y_transform": "power"})}
    denoise = {"denoise": False if args.no_denoise else "auto"}
    for prior in args.priors:
        models["ndp" if prior == "gp" else f"ndp_{prior}"] = (ndp(prior), {**denoise})
    for prior in args.raw_priors:
        models["ndp_raw" if prior == "gp" else f"ndp_{prior}_raw"] = (
            ndp(prior), {"y_transform": None, **denoise})
    if args.local:
        for prior in args.priors:
            models["ndp_local" if prior == "gp" else f"ndp_{prior}_local"] = (
                ndp(prior), {"local_fraction": 0.5, **denoise})
        models["gpr_local"] = (gpr, {"local_fraction": 0.5})
    regrets, seconds, cpu_seconds = run_thompson(
        models, [(objective, f_min)] * args.n_seeds, bounds, args.n_iter, args.n_candidates)
    print_regrets(regrets, [m for m in (0, 5, 10, 15, 20, 25, 30, 40, 50) if m <= args.n_iter])
    if args.json:
        write_json(args.json, {"args": vars(args), "n_init": 3, "seconds_per_run": seconds,
                               "cpu_seconds_per_run": cpu_seconds,
                               "regret": {k: v.tolist() for k, v in regrets.items()}})


if __name__ == "__main__":
    main()
