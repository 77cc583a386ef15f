"""Command-line plumbing shared by the NDP benchmark scripts.

Every script writes its JSON through :func:`write_json`: the header of every results file
(``command``, ``date``, ``environment``: see ``_results.py``) and then the script's fields.
"""

import sys
from pathlib import Path

import numpy as np
import torch
from _results import header, relative_path
from _results import write_json as write_results


def add_runtime_args(parser):
    """Add ``--threads`` to an argparse parser (``--prior`` takes a name or a weights path)."""
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")


def add_sampler_arg(parser):
    """Add ``--sampler``: NDPRegressor's sampler, by default the estimator's own (``"auto"``,
    :func:`skdiff.ndp._estimator.auto_sampler`)."""
    parser.add_argument("--sampler", default="auto",
                        choices=("auto", "tiered", "fast", "ddpm", "tweedie"),
                        help="NDPRegressor's sampler (default: its default, 'auto')")


def add_x_compression_arg(parser):
    """Add ``--x-compression``: NDPRegressor's ``x_compression``, by default the estimator's
    own (``"auto"``: the cap chosen by the prior's evidence), or a fixed cap >= 1."""
    def cap(value):
        return value if value == "auto" else float(value)

    parser.add_argument("--x-compression", type=cap, default="auto",
                        help="NDPRegressor's x_compression: 'auto' (its default) or a fixed "
                             "cap >= 1 on the ARD input map's compression of a feature")


def apply_runtime_args(args):
    """Set the torch thread count."""
    if args.threads:
        torch.set_num_threads(args.threads)


def write_json(path, payload, complete=True):
    """Write ``payload`` under the common header (:func:`_results.header`), complete unless
    ``complete=False`` (a run that rewrites its file as it goes); path arguments in
    ``payload["args"]`` are recorded as the command records them (relative to the
    repository, or ``PATH``)."""
    script = Path(sys.argv[0]).name
    if isinstance(payload.get("args"), dict):
        payload = {**payload, "args": {k: relative_path(v) if isinstance(v, str) else v
                                       for k, v in payload["args"].items()}}
    write_results(path, {**header(script, torch.get_num_threads()), **payload},
                  complete=complete)
    if complete:
        print(f"written to {path}")


def summarise(rows):
    """Rows of (log-likelihood, MSE, 95 % coverage) per task -> ``{metric: [mean, standard
    error]}`` (standard error 0 for a single row)."""
    a = np.asarray(rows, dtype=np.float64)
    se = a.std(0, ddof=1) / np.sqrt(len(a)) if len(a) > 1 else np.zeros(a.shape[1])
    return {k: [float(a[:, i].mean()), float(se[i])]
            for i, k in enumerate(("loglik", "mse", "coverage95"))}


# -- Bayesian optimisation -------------------------------------------------------------------
def bo_gpr(bounds):
    """The GPR of the Bayesian-optimisation benchmarks: Matérn-5/2 with one lengthscale per
    dimension (starting at 0.3 and bounded by 0.01 and 10, times the box's side) plus a
    white-noise term, refitted by ML-II (2 restarts, seeded so that runs repeat) whenever
    ``thompson_sampling`` fits it."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    width = np.ptp(np.asarray(bounds, dtype=np.float64), axis=1)
    kernel = ConstantKernel(1.0) * Matern(
        0.3 * width, nu=2.5, length_scale_bounds=np.column_stack([1e-2 * width, 10 * width]))
    return GaussianProcessRegressor(
        kernel + WhiteKernel(1e-4, noise_level_bounds=(1e-6, 1e-1)), normalize_y=True,
        n_restarts_optimizer=2, random_state=0)


def run_thompson(models, objectives, bounds, n_iter, n_candidates, n_init=3):
    """Thompson sampling with every model on every objective (seed = its index).

    ``models``: name -> callable returning a fresh model (or ``"random"``), or a pair
    (that callable, a dict of further :func:`~skdiff.bayes_opt.thompson_sampling` arguments,
    e.g. ``y_transform`` or ``local_fraction``; by default the function's defaults, except
    ``local_fraction=0``: uniform candidates, as in the paper, unless a model asks for local
    ones, which the scripts name ``<method>_local``);
    ``objectives``: ``[(objective, minimum)]``. Returns ``regrets`` (name ->
    (objectives, n_init + n_iter) array of simple regret after each evaluation), and wall
    and CPU seconds per run."""
    import time
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from skdiff.bayes_opt import thompson_sampling

    regrets, seconds, cpu_seconds = {}, {}, {}
    for name, make in models.items():
        make, options = make if isinstance(make, tuple) else (make, {})
        options = {"local_fraction": 0.0, **options}
        runs = []
        t0, c0 = time.perf_counter(), time.process_time()
        for seed, (objective, minimum) in enumerate(objectives):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                res = thompson_sampling(objective, bounds, model=make(), n_iter=n_iter,
                                        n_init=n_init, n_candidates=n_candidates,
                                        random_state=seed, **options)
            runs.append(res.best_so_far - minimum)
        regrets[name] = np.asarray(runs)
        seconds[name] = (time.perf_counter() - t0) / len(objectives)
        cpu_seconds[name] = (time.process_time() - c0) / len(objectives)
        print(f"{name}: {seconds[name]:.1f} s per run (CPU {cpu_seconds[name]:.1f} s)",
              flush=True)
    return regrets, seconds, cpu_seconds


def print_regrets(regrets, marks, n_init=3):
    """The mean ± standard error of the simple regret after each of ``marks`` iterations."""
    print(f"\nsimple regret (mean ± s.e.) after k iterations ({n_init} initial points not "
          "counted)")
    print("k      " + "".join(f"{n:>18s}" for n in regrets))
    for k in marks:
        cells = []
        for r in regrets.values():
            v = r[:, n_init + k - 1]
            cells.append(f"{v.mean():9.3f} ± {v.std(ddof=1) / np.sqrt(len(v)):.3f}")
        print(f"{k:<7d}" + "".join(f"{c:>18s}" for c in cells))
