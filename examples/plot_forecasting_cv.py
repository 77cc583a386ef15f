"""
Cross-validating a forecaster with ``TimeSeriesSplit(gap=horizon)``
===================================================================

Windows cut from one series overlap: the targets of the last training windows are the same
rows of the series as the targets of the first test windows. Scoring on them would reward
memorising. :class:`~sklearn.model_selection.TimeSeriesSplit` with ``gap=horizon`` drops the
``horizon`` windows before every test fold, so no row is a training target and a test
target at once; every fold trains on the past only.

The series is a nonlinear autoregression with a daily cycle. :class:`~skdiff.FlowformerRegressor`
is cross-validated beside a ridge regression on the same window and the last observed value.
"""

# %%
# Windows and folds
# -----------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import Ridge
from sklearn.model_selection import TimeSeriesSplit, cross_validate

from skdiff import FlowformerRegressor
from skdiff.datasets import make_windows

rng = np.random.default_rng(0)
T = 2400
noise = rng.normal(size=T)
series = np.zeros(T)
for t in range(8, T):  # generating the data is sequential by nature
    series[t] = (0.9 * np.tanh(2.0 * series[t - 1] - 1.5 * series[t - 3] * series[t - 7])
                 + 0.3 * np.sin(2 * np.pi * t / 24) + 0.1 * noise[t])

window, horizon = 48, 6
X, y = make_windows(series, window=window, horizon=horizon)
cv = TimeSeriesSplit(n_splits=4, gap=horizon, test_size=300)

fig, ax = plt.subplots(figsize=(9, 2.4))
for k, (train, test) in enumerate(cv.split(X)):
    ax.barh(k, len(train), left=train[0], color="C0")
    ax.barh(k, horizon, left=train[-1] + 1, color="0.7")
    ax.barh(k, len(test), left=test[0], color="C1")
ax.set_yticks(range(4), [f"fold {k + 1}" for k in range(4)])
ax.invert_yaxis()
ax.set_xlabel("window index (time order)")
ax.set_title("training windows (blue), gap of `horizon` windows (grey), test windows (orange)")
fig.tight_layout()


# %%
# Scores
# ------
# The last-value forecast is a regressor that repeats the window's last value: a
# ``DummyRegressor`` cannot express it, so it is a one-line estimator here.
class LastValue(DummyRegressor):
    def predict(self, X):
        return np.repeat(X[:, -1:], horizon, axis=1)


models = {
    "FlowformerRegressor": FlowformerRegressor(hidden_dim=32, n_layers=1, skip="window",
                                               patch_len=4, patch_stride=2, max_epochs=5,
                                               random_state=0),
    "ridge on the window": Ridge(alpha=1.0),
    "last value": LastValue(),
}
results = {}
for name, model in models.items():
    res = cross_validate(model, X, y, cv=cv, scoring="neg_mean_squared_error")
    results[name] = -res["test_score"]
    print(f"{name:20s} MSE per fold {np.round(results[name], 4)}  "
          f"mean {results[name].mean():.4f}  ({res['fit_time'].sum():.0f} s of fitting)")

fig, ax = plt.subplots(figsize=(7, 3.6))
width = 0.25
for i, (name, mse) in enumerate(results.items()):
    ax.bar(np.arange(4) + (i - 1) * width, mse, width, label=name)
ax.set_xticks(range(4), [f"fold {k + 1}" for k in range(4)])
ax.set_ylabel("test MSE")
ax.set_yscale("log")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Each estimator sees the same folds. ``FlowformerRegressor``'s own early stopping holds out
# the last rows of each training fold, again in time order. The noise of this series sets a
# floor on the one-step error (its variance is 0.01), which the learned forecasts approach.
