"""How many standard errors the Flowformer encoder's correction must win by: generated series.

``FlowformerRegressor`` with its ridge window skip keeps the encoder's correction only
where it lowers the validation MSE of the ridge forecast by more than
``CORRECTION_MARGIN_SE`` standard errors (``encoder_used_``). The validation rows also
chose the network's epoch, so the comparison flatters the network, and a margin of one
standard error passes more often than its nominal rate where the correction cannot help.
This script measures what each margin gives on series whose answer is known:

- linear or nearly linear dynamics, where the ridge forecast is the right one and any
  correction kept is fitted noise: an AR(2) and an exponential autoregression (EXPAR);
- nonlinear dynamics the encoder can learn: a noisy logistic map, a self-exciting
  threshold autoregression (SETAR), a nonlinear moving average.

Each series is fitted once per seed with the defaults (lookback 24, horizon 4; 300, 600
and 1,500 training windows, the next 372 windows for the test); the fit records the
test's statistic (the validation MSE difference over its Diebold-Mariano standard error)
and the test MSE with and without the correction, so that the outcome of every margin is
read off the same fits. Reported per margin: how often the correction is kept, the
geometric mean of the test MSE relative to the ridge forecast alone (per family and over
all fits), and how many fits end more than 2 % worse or better than the ridge forecast.

Run (one thread; about 25 minutes on a 2-core CPU)::

    OMP_NUM_THREADS=1 python benchmarks/flowformer_correction_margin.py \\
        --json benchmarks/results/flowformer_correction_margin.json
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _results import add_run_arguments, header, write_json

import skdiff.flowformer._estimators as flow
from skdiff import FlowformerRegressor
from skdiff.datasets import make_windows

FAMILIES = {"ar2": "linear", "expar": "linear", "logistic": "nonlinear",
            "setar": "nonlinear", "nlma": "nonlinear"}
MARGINS = (1.0, 1.5, 2.0, 3.0)
WINDOW, HORIZON, N_TEST = 24, 4, 372


def series(kind, n, rng):
    """``n`` steps of a generated series (the recursions run step by step: generating the
    data, not the estimator's hot path)."""
    x, e = np.zeros(n), rng.normal(size=n)
    if kind == "nlma":  # x_t = e_t + 0.8 e_{t-1} e_{t-2}
        x[2:] = e[2:] + 0.8 * e[1:-1] * e[:-2]
        return x
    x[0] = 0.3 if kind == "logistic" else 0.0
    for t in range(1, n):
        if kind == "logistic":
            x[t] = np.clip(3.8 * x[t - 1] * (1 - x[t - 1]) + 0.02 * e[t], 0.01, 0.99)
        elif kind == "setar":
            x[t] = (0.7 if x[t - 1] > 0 else -0.6) * x[t - 1] + e[t]
        elif kind == "ar2":
            x[t] = 1.2 * x[t - 1] - (0.5 * x[t - 2] if t > 1 else 0.0) + e[t]
        elif kind == "expar":
            x[t] = 0.5 * (0.6 + 1.5 * np.exp(-x[t - 1] ** 2)) * x[t - 1] + 0.5 * e[t]
    return x


def one_fit(kind, n_train, seed):
    """Fit the defaults once; the test's statistic and the test MSE with and without the
    encoder's correction."""
    stats = []
    decide = flow.beats_by_se

    def spy(*args, **kwargs):
        out = decide(*args, **kwargs)
        stats.append(-out[1] / out[2] if out[2] > 0 else 0.0)
        return out

    rng = np.random.default_rng(1000 * seed + n_train)
    n = n_train + N_TEST + WINDOW + HORIZON - 1
    X, y = make_windows(series(kind, n, rng), window=WINDOW, horizon=HORIZON)
    X_fit, y_fit, X_test, y_test = X[:-N_TEST], y[:-N_TEST], X[-N_TEST:], y[-N_TEST:]
    flow.beats_by_se = spy
    try:
        est = FlowformerRegressor(random_state=seed).fit(X_fit, y_fit)
    finally:
        flow.beats_by_se = decide

    def mse():
        return float(np.mean((est.predict(X_test) - y_test) ** 2))

    trained = est._unused_head_  # the set-aside correction, or None if it is in use
    if trained is None:
        with_correction = mse()
        trained = est._set_correction(0.0, 0.0)
        ridge_alone = mse()
    else:
        ridge_alone = mse()
        est._set_correction(*trained)
        with_correction = mse()
    # a correction that is exactly zero (the start kept by early stopping) has no test
    z = stats[-1] if stats else None
    return {"series": kind, "family": FAMILIES[kind], "n_train": len(X_fit), "seed": seed,
            "z": z, "mse_with_correction": with_correction, "mse_ridge_alone": ridge_alone,
            "kept": bool(est.encoder_used_)}


def summary(fits, margin):
    """Per margin: fits keeping the correction, the geometric mean of the test MSE relative
    to the ridge forecast alone (per family and over all), fits > 2 % worse / better."""
    def kept(f):
        return f["z"] is not None and f["z"] > margin

    def ratio(f):
        chosen = f["mse_with_correction"] if kept(f) else f["mse_ridge_alone"]
        return chosen / f["mse_ridge_alone"]

    def gmean(rs):
        return float(np.exp(np.mean(np.log(rs)))) if len(rs) else None

    r = np.array([ratio(f) for f in fits])
    row = {"margin_se": margin, "fits": len(fits),
           "kept": sum(map(kept, fits)),
           "gmean_all": gmean(r), "worse_2pct": int((r > 1.02).sum()),
           "better_2pct": int((r < 0.98).sum())}
    for family in ("linear", "nonlinear"):
        row[f"gmean_{family}"] = gmean([ratio(f) for f in fits if f["family"] == family])
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--sizes", nargs="+", type=int, default=[300, 600, 1500])
    parser.add_argument("--seeds", type=int, default=5)
    add_run_arguments(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    fits = []
    doc = {**header("flowformer_correction_margin.py", args.threads, note=args.note),
           "margin_default": flow.CORRECTION_MARGIN_SE}
    for kind in args.series:
        for n_train in args.sizes:
            for seed in range(args.seeds):
                fits.append(one_fit(kind, n_train, seed))
                f = fits[-1]
                z = "  –  " if f["z"] is None else f"{f['z']:5.2f}"
                print(f"{kind:9s} {n_train:5d} seed {seed}  z {z}  test MSE with correction "
                      f"{f['mse_with_correction']:.4f}, ridge alone {f['mse_ridge_alone']:.4f}",
                      flush=True)
                if args.json:
                    write_json(args.json, {**doc, "fits": fits,
                                           "rows": [summary(fits, m) for m in MARGINS]})
    rows = [summary(fits, m) for m in MARGINS]
    for r in rows:
        families = ", ".join(f"{k} {r[f'gmean_{k}']:.4f}" for k in ("linear", "nonlinear")
                             if r[f"gmean_{k}"] is not None)
        print(f"margin {r['margin_se']:.1f} SE: kept {r['kept']}/{r['fits']}, test MSE / ridge "
              f"alone {r['gmean_all']:.4f} ({families}), > 2 % worse {r['worse_2pct']}, "
              f"better {r['better_2pct']}")
    if args.json:
        write_json(args.json, {**doc, "fits": fits, "rows": rows}, complete=True)


if __name__ == "__main__":
    main()
