"""FlowformerRegressor's partial_fit on a stream against fit on all of its rows.

Two streams, each given to ``partial_fit`` one batch a call (one epoch each), the model
scored after the first call and after the last, beside ``fit`` on all the rows and a ridge:

- ``ett``: ETTh1's OT column (``--data-home``), lookback 96 and horizon 24; the windows of
  the first year (stride 2, 4,261 windows) in time order, 200 a call; scored on the
  windows of the next four months (stride 4), MSE in units of the training series' std.
  ``FlowformerRegressor(random_state=0)``.
- ``regression``: ``make_regression(n_samples=975, n_features=20, n_informative=10,
  noise=1.0, random_state=0)`` read as sequences of 20 steps; 25 rows first, then 30 calls
  of 15 new rows (the stream), or 30 calls on the same 450 rows (an epoch loop); R² on the
  last 500 rows. ``FlowformerRegressor(n_layers=1, hidden_dim=16, random_state=0)``.

Run::

    SKDIFF_DATA=... OMP_NUM_THREADS=1 python benchmarks/partial_fit_stream.py \
        --data-home "$SKDIFF_DATA" --json benchmarks/results/partial_fit_stream.json
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
from _results import add_run_arguments, header, write_json
from sklearn.datasets import make_regression
from sklearn.linear_model import RidgeCV
from sklearn.metrics import r2_score

from skdiff import FlowformerRegressor
from skdiff.datasets import load_ett, make_windows


def ett_stream(data_home, batch=200):
    """The ETTh1 OT stream: first call, whole stream, fit and ridge (standardised MSE)."""
    s = np.asarray(load_ett("ETTh1", data_home=data_home).target, dtype=float)
    n_train = 12 * 30 * 24
    X, y = make_windows(s[:n_train], 96, 24, stride=2)
    X_test, y_test = make_windows(s[n_train:n_train + 4 * 30 * 24], 96, 24, stride=4)
    sd = s[:n_train].std()

    def mse(pred):
        return float(np.mean(((pred - y_test) / sd) ** 2))

    t0 = time.perf_counter()
    reg = FlowformerRegressor(random_state=0).partial_fit(X[:batch], y[:batch])
    first = mse(reg.predict(X_test))
    for start in range(batch, len(X), batch):
        reg.partial_fit(X[start:start + batch], y[start:start + batch])
    stream_s = time.perf_counter() - t0
    row = {"stream": "ett", "metric": "MSE (standardised)", "rows": len(X), "batch": batch,
           "first_call": first, "after_stream": mse(reg.predict(X_test)),
           "calls": int(np.ceil(len(X) / batch)), "stream_s": round(stream_s, 1)}
    t0 = time.perf_counter()
    row["fit"] = mse(FlowformerRegressor(random_state=0).fit(X, y).predict(X_test))
    row["fit_s"] = round(time.perf_counter() - t0, 1)
    row["ridge"] = mse(RidgeCV(alphas=np.logspace(-3, 5, 9)).fit(X, y).predict(X_test))
    return row


def regression_stream():
    """The make_regression stream and epoch loop (R² on held-out rows)."""
    X, y = make_regression(n_samples=975, n_features=20, n_informative=10, noise=1.0,
                           random_state=0)
    X_train, y_train, X_test, y_test = X[:475], y[:475], X[475:], y[475:]
    kw = dict(n_layers=1, hidden_dim=16, random_state=0)

    def r2(est):
        return float(r2_score(y_test, est.predict(X_test)))

    reg = FlowformerRegressor(**kw).partial_fit(X_train[:25], y_train[:25])
    row = {"stream": "regression", "metric": "R2", "rows": 475, "first_call": r2(reg)}
    for i in range(30):
        part = slice(25 + 15 * i, 40 + 15 * i)
        reg.partial_fit(X_train[part], y_train[part])
    row["after_stream"] = r2(reg)
    loop = FlowformerRegressor(**kw).partial_fit(X_train[:25], y_train[:25])
    for _ in range(30):
        loop.partial_fit(X_train[25:], y_train[25:])
    row["after_epoch_loop"] = r2(loop)
    row["fit"] = r2(FlowformerRegressor(**kw, max_epochs=31).fit(X_train, y_train))
    row["ridge"] = float(r2_score(y_test, RidgeCV().fit(X_train, y_train).predict(X_test)))
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-home", default=None, help="the folder holding ETTh1.csv")
    p.add_argument("--streams", nargs="+", default=["regression", "ett"],
                   choices=["regression", "ett"])
    add_run_arguments(p)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    doc = {**header("partial_fit_stream.py", args.threads, note=args.note, argv=argv),
           "rows": []}
    warnings.simplefilter("ignore")  # the estimators' notes on tiny first batches
    for name in args.streams:
        row = regression_stream() if name == "regression" else ett_stream(args.data_home)
        print(" | ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                         for k, v in row.items()), flush=True)
        doc["rows"].append(row)
        if args.json:
            write_json(args.json, doc)
    if args.json:
        write_json(args.json, doc, complete=True)


if __name__ == "__main__":
    main()
