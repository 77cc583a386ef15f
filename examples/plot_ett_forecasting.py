"""Forecast the ETTh1 oil temperature 24 hours ahead with FlowformerRegressor.

Trains on (a stride of) the standard 12 training months, early-stops on the 4 validation
months, and plots one test week: forecast, truth and the 90 % predictive band of the
Gaussian head. Prints test MSE/MAE (standardised units) next to the last-value baseline.
Runs in about a minute on a laptop CPU; the PNG needs matplotlib.

    python examples/ett_forecasting.py [--data-home ../shared/data]
"""

import argparse

import numpy as np

from skdiff import FlowformerRegressor
from skdiff.datasets import load_ett, make_windows

p = argparse.ArgumentParser()
p.add_argument("--data-home", default=None)
p.add_argument("--out", default="ett_forecast.png")
args = p.parse_args()

ett = load_ett("ETTh1", data_home=args.data_home)
tr, va, te = ett.train_index, ett.val_index, ett.test_index
ot = (ett.target - ett.target[tr].mean()) / ett.target[tr].std()  # scaler fit on train

lookback, horizon = 96, 24
X, y = make_windows(ot[: va[-1] + 1], lookback, horizon, stride=4)  # train + val months
n_val = len(make_windows(ot[va[0] - lookback: va[-1] + 1], lookback, horizon, stride=4)[0])
Xte, yte = make_windows(ot[te[0] - lookback: te[-1] + 1], lookback, horizon)

# the univariate ETTh1 recipe (docs/flowformer.md) in a small network: a fixed ridge skip on
# the window, tokens of 8 steps every 4, the best of 3 initialisations on the validation rows
reg = FlowformerRegressor(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=4, skip="window",
                          patch_len=8, patch_stride=4, lr=1e-3, n_init=3,
                          validation_fraction=n_val / len(X), random_state=0)
reg.fit(X, y)  # the last rows (= the validation months) drive early stopping

pred, std = reg.predict(Xte, return_std=True)
last = np.repeat(Xte[:, -1:], horizon, axis=1)
samples = reg.sample_posterior(Xte, n_samples=200, random_state=0)
lo, hi = np.quantile(samples, [0.05, 0.95], axis=-1)
for name, f in (("Flowformer", pred), ("last value", last)):
    print(f"{name:10s}  test MSE {np.mean((f - yte) ** 2):.4f}  MAE {np.mean(np.abs(f - yte)):.4f}")
print(f"90% interval coverage on the test windows: {np.mean((yte >= lo) & (yte <= hi)):.3f}")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib not installed: no plot")
else:
    # a test week as consecutive 24 h forecasts: window i predicts test hours i .. i + 23
    idx = np.arange(0, 7 * 24, horizon)  # consecutive, non-overlapping 24 h forecasts
    t = np.concatenate([np.arange(i, i + horizon) for i in idx])
    fig, ax = plt.subplots(figsize=(10, 3.5))
    ax.plot(t, yte[idx].ravel(), color="k", lw=1.2, label="truth (OT)")
    ax.plot(t, pred[idx].ravel(), color="C0", label="Flowformer forecast")
    ax.fill_between(t, lo[idx].ravel(), hi[idx].ravel(), color="C0", alpha=0.25,
                    label="90% predictive band")
    ax.set_xlabel("hours into the test period")
    ax.set_ylabel("OT (standardised)")
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"saved {args.out}")
