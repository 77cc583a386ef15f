"""How far to trust ``DIFFormerRegressor.predict(X, return_std=True)``: coverage and NLL.

The 95 % interval of a prediction is ``mean +- 1.96 std``; a calibrated model's intervals
cover 95 % of unseen targets. Data sets and protocols (each over ``--seeds`` draws):

* ``friedman1``: :func:`~sklearn.datasets.make_friedman1` (1,000 rows, noise std 1);
* ``diabetes``: :func:`~sklearn.datasets.load_diabetes` (442 rows);
* ``graph signal``: :func:`skdiff.datasets.make_graph_signal` (1,000 nodes, its k-nearest-
  neighbour graph passed as ``adjacency``; graph rows only in the semi-supervised protocol).

``all labelled``: fit on a random 75 %, scored on the other 25 %. ``50 labelled``: every row
in the fit, 50 of them labelled (``NaN`` elsewhere), scored on the unlabelled rows with
``predict`` on them (with the graph: over all nodes). Methods:

* ``gaussian``: ``DIFFormerRegressor(random_state=seed)``, the default Gaussian head;
* ``mc_dropout``: ``DIFFormerRegressor(uncertainty="mc_dropout", random_state=seed)``, the
  spread of 30 Monte Carlo dropout passes;
* ``gpr``: :class:`~sklearn.gaussian_process.GaussianProcessRegressor` with a constant times
  an anisotropic RBF plus white noise, ML-II (3 restarts), on standardised features and
  ``normalize_y=True`` (labelled rows only): the calibrated model a user would otherwise
  pick.

Metrics: MSE, share of targets inside the 95 % interval (``coverage95``) and inside the
68 % one (``coverage68``), and the mean Gaussian negative log-likelihood per target (in
the units of ``y``; lower is better).

Run (a few minutes on 2 CPU cores)::

    python benchmarks/regression_uncertainty.py --json \\
        benchmarks/results/regression_uncertainty.json
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
from _defaults_tasks import ArdGPR
from _results import add_run_arguments, header, write_json
from sklearn.datasets import load_diabetes, make_friedman1
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdiff import DIFFormerRegressor
from skdiff.datasets import make_graph_signal

METHODS = ("gaussian", "mc_dropout", "gpr")
N_LABELLED = 50


def load(name, seed):
    """(X, y, adjacency or None) of a data set."""
    if name == "friedman1":
        X, y = make_friedman1(1000, noise=1.0, random_state=seed)
        return X, y, None
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        return X, y, None
    X, y, A = make_graph_signal(1000, random_state=seed)
    return X, y, A


def metrics(y, mean, std):
    z = np.abs(y - mean) / std
    nll = np.mean(0.5 * np.log(2 * np.pi * std ** 2) + 0.5 * z ** 2)
    return {"mse": float(np.mean((y - mean) ** 2)), "coverage95": float(np.mean(z <= 1.959964)),
            "coverage68": float(np.mean(z <= 1.0)), "nll": float(nll)}


def gpr(seed):
    return make_pipeline(StandardScaler(), ArdGPR(random_state=seed))


def run(name, protocol, method, seed):
    X, y, A = load(name, seed)
    t0 = time.perf_counter()
    if protocol == "all labelled":
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=seed)
        est = gpr(seed) if method == "gpr" else DIFFormerRegressor(
            uncertainty=method, random_state=seed)
        est.fit(Xtr, ytr)
        mean, std = est.predict(Xte, return_std=True)
        return {**metrics(yte, mean, std), "seconds": time.perf_counter() - t0}
    rng = np.random.RandomState(seed)
    lab = np.zeros(len(y), dtype=bool)
    lab[rng.choice(len(y), N_LABELLED, replace=False)] = True
    if method == "gpr":  # the labelled rows only; the graph is not used
        est = gpr(seed).fit(X[lab], y[lab])
        mean, std = est.predict(X[~lab], return_std=True)
    else:
        est = DIFFormerRegressor(uncertainty=method, random_state=seed)
        est.fit(X, np.where(lab, y, np.nan), adjacency=A)
        if A is None:
            mean, std = est.predict(X[~lab], return_std=True)
        else:
            mean, std = (a[~lab] for a in est.predict(X, adjacency=A, return_std=True))
    return {**metrics(y[~lab], mean, std), "seconds": time.perf_counter() - t0}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["friedman1", "diabetes", "graph signal"])
    p.add_argument("--seeds", type=int, default=3)
    add_run_arguments(p)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    doc = header("regression_uncertainty.py", args.threads, note=args.note, argv=argv)
    rows = []
    print(f"{'data':>12s} {'protocol':>12s} {'method':>10s} {'MSE':>9s} {'cov95':>6s} "
          f"{'cov68':>6s} {'NLL':>7s} {'s':>5s}")
    for name in args.datasets:
        protocols = ["50 labelled"] if name == "graph signal" else ["all labelled",
                                                                     "50 labelled"]
        for protocol in protocols:
            for method in METHODS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    runs = [run(name, protocol, method, s) for s in range(args.seeds)]
                row = {"dataset": name, "protocol": protocol, "method": method,
                       "seeds": args.seeds}
                for key in runs[0]:
                    row[key] = float(np.mean([r[key] for r in runs]))
                    row[key + "_per_seed"] = [r[key] for r in runs]
                rows.append(row)
                print(f"{name:>12s} {protocol:>12s} {method:>10s} {row['mse']:9.4g} "
                      f"{row['coverage95']:6.2f} {row['coverage68']:6.2f} {row['nll']:7.3f} "
                      f"{row['seconds']:5.1f}", flush=True)
                if args.json:
                    write_json(args.json, {**doc, "rows": rows})
    if args.json:
        write_json(args.json, {**doc, "rows": rows}, complete=True)


if __name__ == "__main__":
    main()
