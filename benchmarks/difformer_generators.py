"""DIFFormerRegressor on fully labelled generated tables: the network alone, the defaults,
a ridge, and the coverage of the defaults' 95 % intervals.

Generators (``--generators``; every one has 1,000 further rows to score on, seeded):

* ``linear10``, ``linear20``: ``make_regression`` with 10 and 20 informative features,
  noise 20 (targets of standard deviation about 180 and 260);
* ``sparse_linear``: ``make_regression``, 5 informative of 20 features, noise 5;
* ``friedman1``, ``friedman2``, ``friedman3``: scikit-learn's, noise 1, 10 and 0.1;
* ``sine3``: ``sin(x0) + sin(x1) + sin(x2)`` of 5 standard normal features, noise 0.1;
* ``interaction``: ``sin(x0 x1) + x2`` of 5 standard normal features, noise 0.1;
* ``product``: ``x0 x1`` of 5 standard normal features, noise 0.1;
* ``squares``: the sum of 10 squared standard normal features, noise 0.1.

Methods: ``default`` (``DIFFormerRegressor(random_state=0)``), ``network``
(``linear_fallback=False``) and ``ridge`` (``RidgeCV``, penalties 1e-3 to 1e3, on the
standardised features). Reported per generator and number of training rows (``--n-rows``,
draws seeded 100, 101, ...): test mean squared error over the variance of the test targets
for each method, whether the defaults kept the network, and the share of test targets inside
the defaults' central 95 % interval (``predict(X, return_std=True)``).

Run (about 15 minutes on one core; the 750-row run about 10)::

    python benchmarks/difformer_generators.py --json \
        benchmarks/results/difformer_generators.json
    python benchmarks/difformer_generators.py --n-rows 750 --methods default \
        --generators friedman1 friedman2 friedman3 sparse_linear interaction \
        --json benchmarks/results/difformer_generators_750.json
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
from _results import add_run_arguments, header, write_json
from sklearn import datasets as skd
from sklearn.linear_model import RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdiff import DIFFormerRegressor

#: First seed of the training-row draws.
SEED = 100

#: Rows each generator draws: the largest training set and 1,000 test rows.
N_TOTAL = 1750


def _normal_features(n_features, target, noise, seed):
    def make():
        rng = np.random.RandomState(seed)
        X = rng.normal(size=(N_TOTAL, n_features))
        return X, target(X) + noise * rng.normal(size=N_TOTAL)
    return make


GENERATORS = {
    "linear10": lambda: skd.make_regression(N_TOTAL, 10, n_informative=10, noise=20.0,
                                            random_state=1),
    "linear20": lambda: skd.make_regression(N_TOTAL, 20, n_informative=20, noise=20.0,
                                            random_state=2),
    "sparse_linear": lambda: skd.make_regression(N_TOTAL, 20, n_informative=5, noise=5.0,
                                                 random_state=3),
    "friedman1": lambda: skd.make_friedman1(N_TOTAL, noise=1.0, random_state=4),
    "friedman2": lambda: skd.make_friedman2(N_TOTAL, noise=10.0, random_state=5),
    "friedman3": lambda: skd.make_friedman3(N_TOTAL, noise=0.1, random_state=6),
    "sine3": _normal_features(5, lambda X: np.sin(X[:, :3]).sum(1), 0.1, 7),
    "interaction": _normal_features(5, lambda X: np.sin(X[:, 0] * X[:, 1]) + X[:, 2], 0.1, 8),
    "product": _normal_features(5, lambda X: X[:, 0] * X[:, 1], 0.1, 9),
    "squares": _normal_features(10, lambda X: (X ** 2).sum(1), 0.1, 10),
}

#: The generators of the user guide's table, by kind of target.
KINDS = {"linear": ("linear10", "linear20"), "smooth": ("friedman1", "friedman2", "sine3"),
         "products and squares": ("product", "squares")}

METHODS = ("default", "network", "ridge")


def run(X, y, n_rows, seed, methods):
    """{method: normalised test MSE}, the defaults' 95 % coverage and whether they kept the
    network (None without ``default``), for one draw of ``n_rows`` training rows."""
    rows = np.random.RandomState(SEED + seed).permutation(len(y))
    tr, te = rows[:n_rows], rows[-1000:]
    var = float(np.var(y[te]))
    out, coverage, kept = {}, None, None
    for name in methods:
        if name == "ridge":
            model = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13)))
            pred = model.fit(X[tr], y[tr]).predict(X[te])
        else:
            kw = {"linear_fallback": False} if name == "network" else {}
            reg = DIFFormerRegressor(random_state=0, **kw).fit(X[tr], y[tr])
            pred, std = reg.predict(X[te], return_std=True)
            if name == "default":
                coverage = float(np.mean(np.abs(y[te] - pred) <= 1.959964 * std))
                kept = bool(reg.network_used_)
        out[name] = float(np.mean((pred - y[te]) ** 2)) / var
    return out, coverage, kept


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-rows", type=int, nargs="+", default=[60, 120, 180, 400])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--generators", nargs="+", choices=GENERATORS,
                   default=[g for kind in KINDS.values() for g in kind])
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    add_run_arguments(p)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=UserWarning)
    doc = header("difformer_generators.py", args.threads, note=args.note, argv=argv)
    rows = []
    for n in args.n_rows:
        for name in args.generators:
            X, y = GENERATORS[name]()
            t0 = time.perf_counter()
            runs = [run(X, y, n, s, args.methods) for s in range(args.seeds)]
            row = {"n_rows": n, "generator": name,
                   "mse": {m: [r[0][m] for r in runs] for m in args.methods},
                   "coverage95": [r[1] for r in runs], "network_kept": [r[2] for r in runs],
                   "seconds": (time.perf_counter() - t0) / args.seeds}
            rows.append(row)
            print(f"n={n:3d} {name:>13s} "
                  + "  ".join(f"{m} " + " ".join(f"{v:.3f}" for v in row["mse"][m])
                              for m in args.methods)
                  + ("  coverage95 " + " ".join(f"{v:.3f}" for v in row["coverage95"])
                     + f"  network kept {sum(row['network_kept'])}/{args.seeds}"
                     if "default" in args.methods else ""), flush=True)
            if args.json:
                write_json(args.json, {**doc, "rows": rows})
    if args.json:
        write_json(args.json, {**doc, "rows": rows}, complete=True)


if __name__ == "__main__":
    main()
