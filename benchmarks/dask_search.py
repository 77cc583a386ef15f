"""A search and a prediction spread over a Dask cluster, against one process.

1. ``GridSearchCV`` of a ``DIFFormerClassifier`` on standardised digits (8 candidates, 3
   folds, 24 fits + the refit) with ``n_jobs=1``, then with ``n_jobs=-1`` under
   ``joblib.parallel_config(backend="dask")`` on a ``LocalCluster`` of ``--workers``
   single-threaded worker processes: wall times and whether the scores are identical.
2. Inductive ``predict_proba`` of ``--rows`` new rows (a float32 ``numpy.memmap``) by a
   fitted ``DIFFormerClassifier``: in this process, then chunk by chunk on the workers
   (each loads the fitted estimator once and reads its rows from the memory map); wall
   times and the largest difference.

The times come from whatever else the machine runs; ``--json PATH`` writes the figures.

Run: ``python benchmarks/dask_search.py [--workers 2] [--rows 1000000]``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import joblib
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler

import skdiff
from skdiff import DIFFormerClassifier


def _predict_rows(estimator, path, start, stop):
    return estimator.predict_proba(np.load(path, mmap_mode="r")[start:stop])


def search(client, X, y):
    est = DIFFormerClassifier(n_layers=2, max_epochs=60, device="cpu", n_threads=1,
                              random_state=0)
    grid = {"lr": [3e-3, 1e-2], "alpha": [0.5, 1.0], "dropout": [0.0, 0.2]}
    t = time.perf_counter()
    local = GridSearchCV(est, grid, cv=3, n_jobs=1).fit(X, y)
    t_local = time.perf_counter() - t
    t = time.perf_counter()
    with joblib.parallel_config(backend="dask"):
        spread = GridSearchCV(est, grid, cv=3, n_jobs=-1).fit(X, y)
    t_spread = time.perf_counter() - t
    same = bool(np.array_equal(local.cv_results_["mean_test_score"],
                               spread.cv_results_["mean_test_score"]))
    return {"fits": 25, "one_process_s": t_local, "dask_s": t_spread, "same_scores": same,
            "best_score": float(local.best_score_)}


def spread_prediction(client, X, y, rows, chunk):
    clf = DIFFormerClassifier(n_layers=2, max_epochs=60, device="cpu", n_threads=1,
                              random_state=0).fit(X, y)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rows.npy")
        F = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                      shape=(rows, X.shape[1]))
        F[:] = X[rng.integers(0, len(X), rows)] + 0.1 * rng.standard_normal(
            (rows, X.shape[1]), dtype=np.float32)
        F.flush()
        t = time.perf_counter()
        local = clf.predict_proba(F)
        t_local = time.perf_counter() - t
        t = time.perf_counter()
        remote = client.scatter(clf, broadcast=True)
        starts = list(range(0, rows, chunk))
        futures = client.map(_predict_rows, [remote] * len(starts), [path] * len(starts),
                             starts, [min(s + chunk, rows) for s in starts], pure=False)
        spread = np.concatenate(client.gather(futures))
        t_spread = time.perf_counter() - t
        del F
    return {"rows": rows, "chunk": chunk, "one_process_s": t_local, "dask_s": t_spread,
            "max_abs_diff": float(np.abs(spread - local).max())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--json")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    torch.set_num_threads(1)
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X).astype(np.float32)
    package = str(Path(skdiff.__file__).resolve().parents[1])
    env = {"PYTHONPATH": os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH"))
                                         if p), "OMP_NUM_THREADS": "1"}
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, env=env) as cluster, Client(cluster) as client:
        client.run(lambda: __import__("skdiff"))  # workers import torch once, before timing
        out = {"workers": args.workers, "search": search(client, X, y),
               "prediction": spread_prediction(client, X, y, args.rows, args.rows // 8)}
    s, p = out["search"], out["prediction"]
    print(f"GridSearchCV, {s['fits']} DIFFormer fits: one process {s['one_process_s']:.1f} s, "
          f"Dask ({args.workers} workers) {s['dask_s']:.1f} s, identical scores: "
          f"{s['same_scores']}")
    print(f"inductive predict_proba of {p['rows']:,} rows: one process "
          f"{p['one_process_s']:.1f} s, Dask in chunks of {p['chunk']:,} {p['dask_s']:.1f} s, "
          f"max |difference| {p['max_abs_diff']:.2g}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
