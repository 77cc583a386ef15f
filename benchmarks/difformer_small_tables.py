"""DIFFormerRegressor on small fully labelled tables, beside the network alone and RidgeCV.

Each table (bundled with scikit-learn or statsmodels, or a seeded generator) gives
``--n-rows`` training rows drawn at random (seeds 100, 101, ...) and up to 1,000 other rows
to score on. Methods:

* ``difformer``: ``DIFFormerRegressor(random_state=0).fit(X, y)`` (defaults: from 20 rows
  on, ``linear_fallback`` compares the network with a ridge on at least 5 validation rows);
* ``difformer_network``: the same with ``linear_fallback=False``, the network alone;
* ``ridge``: ``RidgeCV`` (penalties 1e-3 to 1e3) on the standardised features.

``--pool N``: semi-supervised instead. Each draw takes ``N`` rows (all of a smaller
table), of which the first
``--n-rows`` are labelled and the others marked ``NaN``; the DIFFormer fits see all ``N``
(``transduction_`` is scored on the unlabelled ones), the ridge the labelled rows.

Reported per table and size: test MSE over the ridge's for both DIFFormer settings, per seed,
and their geometric means over all tables.

Run (about 5 and 10 minutes on one core)::

    python benchmarks/difformer_small_tables.py --json \
        benchmarks/results/difformer_small_tables.json
    python benchmarks/difformer_small_tables.py --pool 1000 --n-rows 40 100 --json \
        benchmarks/results/difformer_small_tables_semi.json
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
from _defaults_data import _statsmodels_tabular
from _results import add_run_arguments, header, write_json
from sklearn import datasets as skd
from sklearn.linear_model import RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdiff import DIFFormerRegressor

#: First seed of the row draws.
SEED = 100


def table(name):
    """(X, y) of one table."""
    if name == "diabetes":
        return skd.load_diabetes(return_X_y=True)
    if name == "friedman1":
        return skd.make_friedman1(1000, noise=1.0, random_state=1)
    if name == "friedman2":
        return skd.make_friedman2(1000, noise=10.0, random_state=2)
    if name == "linear":  # 5 informative of 20 features
        return skd.make_regression(1000, 20, n_informative=5, noise=5.0, random_state=3)
    if name in ("fair", "star98", "randhie", "modechoice"):  # bundled with statsmodels
        return _statsmodels_tabular(name)
    raise ValueError(f"unknown table {name!r}")


TABLES = ("diabetes", "friedman1", "friedman2", "linear", "fair", "star98", "randhie",
          "modechoice")


def run(X, y, n_rows, seed, pool=None):
    """{method: test MSE} and whether the defaults kept the network, for one draw
    (``pool``: the semi-supervised protocol)."""
    rows = np.random.RandomState(SEED + seed).permutation(len(y))
    pool = min(pool, len(y)) if pool else None  # a smaller table: all its rows
    tr = rows[:n_rows]
    te = rows[n_rows:pool] if pool else rows[n_rows:n_rows + 1000]
    out, t0 = {}, time.perf_counter()
    for name, kw in (("difformer", {}), ("difformer_network", {"linear_fallback": False})):
        reg = DIFFormerRegressor(random_state=0, **kw)
        if pool:
            reg.fit(X[rows[:pool]], np.r_[y[tr], np.full(pool - n_rows, np.nan)])
            pred = reg.transduction_[n_rows:]
        else:
            pred = reg.fit(X[tr], y[tr]).predict(X[te])
        out[name] = float(np.mean((pred - y[te]) ** 2))
        if name == "difformer":
            kept = bool(reg.network_used_)
    ridge = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13)))
    out["ridge"] = float(np.mean((ridge.fit(X[tr], y[tr]).predict(X[te]) - y[te]) ** 2))
    return out, kept, time.perf_counter() - t0


def _geomean(values):
    return float(np.exp(np.mean(np.log(values))))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-rows", type=int, nargs="+", default=[25, 40])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--tables", nargs="+", choices=TABLES, default=list(TABLES))
    p.add_argument("--pool", type=int, default=None,
                   help="semi-supervised: rows per fit, --n-rows of them labelled")
    add_run_arguments(p)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=UserWarning)
    doc = header("difformer_small_tables.py", args.threads, note=args.note, argv=argv)
    rows, summary = [], []
    for n in args.n_rows:
        ratios = {"difformer": [], "difformer_network": []}
        for name in args.tables:
            X, y = table(name)
            runs = [run(X, y, n, s, args.pool) for s in range(args.seeds)]
            row = {"n_rows": n, "pool": args.pool, "table": name,
                   "mse": {m: [r[0][m] for r in runs] for m in runs[0][0]},
                   "network_kept": [r[1] for r in runs],
                   "seconds": float(np.mean([r[2] for r in runs]))}
            row["ratio_to_ridge"] = {m: [a / b for a, b in zip(row["mse"][m], row["mse"]["ridge"])]
                                     for m in ratios}
            for m in ratios:
                ratios[m] += row["ratio_to_ridge"][m]
            rows.append(row)
            print(f"n={n:3d} {name:>11s} defaults/ridge "
                  + " ".join(f"{v:.3f}" for v in row["ratio_to_ridge"]["difformer"])
                  + "  network/ridge "
                  + " ".join(f"{v:.3f}" for v in row["ratio_to_ridge"]["difformer_network"])
                  + f"  network kept {sum(row['network_kept'])}/{args.seeds}", flush=True)
        summary.append({"n_rows": n, "pool": args.pool,
                        **{f"geomean_{m}": _geomean(v) for m, v in ratios.items()},
                        **{f"worst_{m}": float(max(v)) for m, v in ratios.items()},
                        "fits": len(ratios["difformer"])})
        print(f"n={n}: geometric mean of MSE / ridge's MSE: defaults "
              f"{summary[-1]['geomean_difformer']:.3f}, network alone "
              f"{summary[-1]['geomean_difformer_network']:.3f}", flush=True)
    if args.json:
        write_json(args.json, {**doc, "rows": rows, "summary": summary}, complete=True)


if __name__ == "__main__":
    main()
