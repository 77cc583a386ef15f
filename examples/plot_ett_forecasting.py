"""
Forecasting ETTh1 with predictive intervals
===========================================

Forecast the oil temperature (OT) of an electricity transformer 24 hours ahead from its last
96 hours with :class:`~skdiff.FlowformerRegressor`. The model trains on the standard 12
training months, early-stops on the 4 validation months and is scored on the 4 test months,
next to a ridge regression on the same window and the last observed value.

The data come from :func:`skdiff.datasets.fetch_ett`: downloaded once into the data home
(``--data-home``, else :func:`~skdiff.datasets.get_data_home`) and verified against its
published checksum. Run it as ``python examples/plot_ett_forecasting.py [--data-home DIR]``.
"""

# %%
# Data
# ----
import argparse

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import Ridge

from skdiff import FlowformerRegressor
from skdiff.datasets import fetch_ett, get_data_home, make_windows

parser = argparse.ArgumentParser(description="Forecast ETTh1 with FlowformerRegressor.")
parser.add_argument("--data-home", default=str(get_data_home()),
                    help="where the ETT files are cached (default: %(default)s)")
args, _ = parser.parse_known_args()

ett = fetch_ett("ETTh1", data_home=args.data_home)
train, val, test = ett.train_index, ett.val_index, ett.test_index
ot = (ett.target - ett.target[train].mean()) / ett.target[train].std()  # train statistics

lookback, horizon = 96, 24
# windows of the training and validation months, every 4th hour (a shorter fit); the last
# rows, the validation months, drive early stopping
X, y = make_windows(ot[: val[-1] + 1], lookback, horizon, stride=4)
n_val = len(make_windows(ot[val[0] - lookback: val[-1] + 1], lookback, horizon, stride=4)[0])
X_test, y_test = make_windows(ot[test[0] - lookback: test[-1] + 1], lookback, horizon)
print(f"{len(X) - n_val} training windows, {n_val} validation windows, {len(X_test)} test")

# %%
# Fit
# ---
# The univariate recipe in a small network: a fixed ridge skip on the window
# (``skip="window"``, the network learns the ridge's residual), tokens of 8 steps every 4
# (``patch_len``, ``patch_stride``) and the best of three initialisations on the
# validation months (``n_init``).
reg = FlowformerRegressor(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=4, skip="window",
                          patch_len=8, patch_stride=4, lr=1e-3, n_init=3,
                          validation_fraction=n_val / len(X), random_state=0)
reg.fit(X, y)

pred = reg.predict(X_test)
samples = reg.sample_posterior(X_test, n_samples=200, random_state=0)   # (n, 24, 200)
lo, hi = np.quantile(samples, [0.05, 0.95], axis=-1)
ridge = Ridge(alpha=10.0).fit(X[:-n_val], y[:-n_val]).predict(X_test)
last = np.repeat(X_test[:, -1:], horizon, axis=1)
for name, f in (("FlowformerRegressor", pred), ("ridge on the window", ridge),
                ("last value", last)):
    print(f"{name:20s} test MSE {np.mean((f - y_test) ** 2):.4f}  "
          f"MAE {np.mean(np.abs(f - y_test)):.4f}")
print(f"90 % interval coverage on the test windows: "
      f"{np.mean((y_test >= lo) & (y_test <= hi)):.3f}")

# %%
# A test week
# -----------
# Seven consecutive, non-overlapping 24-hour forecasts with their central 90 % predictive
# band (the Gaussian head's samples, recalibrated on the validation months).
starts = np.arange(0, 7 * 24, horizon)
hours = np.concatenate([np.arange(s, s + horizon) for s in starts])
fig, ax = plt.subplots(figsize=(10, 3.5))
ax.plot(hours, y_test[starts].ravel(), color="k", lw=1.2, label="truth (OT)")
ax.plot(hours, pred[starts].ravel(), color="C0", label="FlowformerRegressor")
ax.fill_between(hours, lo[starts].ravel(), hi[starts].ravel(), color="C0", alpha=0.25,
                label="90 % predictive band")
for s in starts[1:]:
    ax.axvline(s, color="0.8", lw=0.8, zorder=0)
ax.set_xlabel("hours into the test months (a forecast starts at every grey line)")
ax.set_ylabel("OT (standardised)")
ax.legend(loc="upper right", fontsize=8)
fig.tight_layout()

# %%
# Error by forecast step
# ----------------------
# The error grows with the distance into the future; the interval widens with it.
fig, ax = plt.subplots(figsize=(6, 3.4))
steps = np.arange(1, horizon + 1)
for name, f in (("FlowformerRegressor", pred), ("ridge on the window", ridge),
                ("last value", last)):
    ax.plot(steps, np.mean((f - y_test) ** 2, axis=0), label=name)
ax.set_xlabel("hours ahead")
ax.set_ylabel("test MSE")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
