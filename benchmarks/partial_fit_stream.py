"""FlowformerRegressor's partial_fit on a stream against fit on all of its rows.

Two streams, each given to ``partial_fit`` one batch a call (one epoch each), the model
scored after the first call and after the last, beside ``fit`` on all the rows and a ridge:

- ``ett``: ETTh1's OT column (``--data-home``), lookback 96 and horizon 24; the windows of
  the first year (stride 2, 4,261 windows) in time order, 200 a call; scored on the
  windows of the next four months (stride 4), MSE in units of the training series' std.
  ``FlowformerRegressor(random_state=0)``.
- ``logistic``: a noisy logistic map (``x <- 3.8 x (1 - x) + 0.01 e``, 4,000 steps),
  lookback 8, horizon 1; the first 3,000 windows in calls of 200, ten passes over them
  (150 calls), with the defaults and with ``early_stopping=False``; MSE on the last 1,000
  windows, beside ``fit`` for 10 epochs (as many as the passes). Where the encoder's
  correction matters, each call's early stopping on its own last 20 windows gates its
  update.
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


def logistic_stream(batch=200, passes=10):
    """The logistic-map stream: the encoder's correction learnt over many calls, with and
    without each call's early stopping (MSE)."""
    rng = np.random.default_rng(0)
    x = np.empty(4000)
    x[0] = 0.3
    for t in range(3999):  # generating the series (not a hot path of the library)
        x[t + 1] = np.clip(3.8 * x[t] * (1 - x[t]) + 0.01 * rng.normal(), 0.001, 0.999)
    X, y = make_windows(x, 8, 1)
    X_train, y_train, X_test, y_test = X[:3000], y[:3000], X[3000:], y[3000:]

    def mse(est):
        return float(np.mean((est.predict(X_test).reshape(y_test.shape) - y_test) ** 2))

    row = {"stream": "logistic", "metric": "MSE", "rows": 3000, "batch": batch,
           "passes": passes}
    for name, kw in (("after_stream", {}), ("after_stream_no_early_stopping",
                                            {"early_stopping": False})):
        reg = FlowformerRegressor(random_state=0, **kw)
        for _ in range(passes):
            for start in range(0, 3000, batch):
                reg.partial_fit(X_train[start:start + batch], y_train[start:start + batch])
                if start == 0 and "first_call" not in row:
                    row["first_call"] = mse(reg)
        row[name] = mse(reg)
    row["fit"] = mse(FlowformerRegressor(random_state=0, max_epochs=passes).fit(X_train,
                                                                                 y_train))
    row["ridge"] = float(np.mean((RidgeCV(alphas=np.logspace(-3, 5, 9)).fit(
        X_train, y_train).predict(X_test) - y_test) ** 2))
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
    p.add_argument("--streams", nargs="+", default=["regression", "ett", "logistic"],
                   choices=["regression", "ett", "logistic"])
    add_run_arguments(p)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    doc = {**header("partial_fit_stream.py", args.threads, note=args.note, argv=argv),
           "rows": []}
    warnings.simplefilter("ignore")  # the estimators' notes on tiny first batches
    for name in args.streams:
        row = {"regression": regression_stream, "logistic": logistic_stream,
               "ett": lambda: ett_stream(args.data_home)}[name]()
        print(" | ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                         for k, v in row.items()), flush=True)
        doc["rows"].append(row)
        if args.json:
            write_json(args.json, doc)
    if args.json:
        write_json(args.json, doc, complete=True)


if __name__ == "__main__":
    main()
