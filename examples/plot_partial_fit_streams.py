"""
Learning from a stream with ``partial_fit``
===========================================

Data that arrives in batches, or does not fit in memory at once, is given to
``partial_fit`` one batch a call, as to scikit-learn's ``SGDClassifier`` or ``MLPRegressor``.
Each call trains one more epoch from the current weights. Two of skdiff's models need more
than the current batch to predict well, and keep what they need from the batches before:

* :class:`~skdiff.DIFFormerClassifier` attends across *rows*: a prediction is made from the
  training rows' states. ``partial_fit`` keeps the distinct rows of a table it has been given
  (up to 10,000, a uniform sample beyond) and trains every call on them beside the call's
  own, so the model and its attention see the whole stream, not the last batch.
* :class:`~skdiff.FlowformerRegressor` adds a fixed ridge forecast on the window to its
  encoder. ``partial_fit`` keeps the ridge's sufficient statistics (moments) and refits it
  on every window seen, so after the stream it is the ridge of all the windows.

Each is compared with ``fit`` on all the rows at once.
"""

# %%
# A classifier on a stream of 15-row batches
# ------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
from scipy.signal import lfilter
from sklearn.datasets import make_classification
from sklearn.linear_model import Ridge

from skdiff import DIFFormerClassifier, FlowformerRegressor
from skdiff.datasets import make_windows

X, y = make_classification(975, 20, n_informative=10, n_classes=3, random_state=0)
X_stream, y_stream, X_test, y_test = X[:475], y[:475], X[475:], y[475:]

clf = DIFFormerClassifier(random_state=0)
scores = []
for _ in range(6):  # passes over the stream
    for start in range(0, len(X_stream), 15):
        clf.partial_fit(X_stream[start:start + 15], y_stream[start:start + 15],
                        classes=[0, 1, 2])
    scores.append(clf.score(X_test, y_test))
fitted = DIFFormerClassifier(random_state=0).fit(X_stream, y_stream).score(X_test, y_test)
print("test accuracy after each pass:", np.round(scores, 3))
print(f"fit on all {len(X_stream)} rows: {fitted:.3f}")

# %%
# A forecaster on a stream of 200-window batches
# ----------------------------------------------
# An hourly series: a daily and a weekly cycle whose amplitudes drift, plus autoregressive
# noise (an AR(2) filter of white noise); windows of 48 steps forecast the next 6. The
# windows arrive in time order, 200 a call; the forecaster is scored on the windows that
# follow the stream.
rng = np.random.default_rng(0)
t = np.arange(4000)
drift = 1.0 + 0.3 * np.sin(2 * np.pi * t / 1500)
noise = lfilter([1.0], [1.0, -1.2, 0.35], 0.2 * rng.normal(size=t.size))
series = (drift * np.sin(2 * np.pi * t / 24) + 0.5 * np.sin(2 * np.pi * t / 168 + 1.0)
          + noise)
X_win, y_win = make_windows(series, window=48, horizon=6)
X_stream, y_stream = X_win[:3000], y_win[:3000]
X_test, y_test = X_win[3006:], y_win[3006:]  # no test target among the stream's


def mse(model):
    return float(np.mean((model.predict(X_test) - y_test) ** 2))


reg = FlowformerRegressor(random_state=0)
seen, errors = [], []
for start in range(0, len(X_stream), 200):
    reg.partial_fit(X_stream[start:start + 200], y_stream[start:start + 200])
    seen.append(start + 200)
    errors.append(mse(reg))
fit_all = mse(FlowformerRegressor(random_state=0).fit(X_stream, y_stream))
ridge = mse(Ridge(alpha=1.0).fit(X_stream, y_stream))
print("test MSE after each call:", np.round(errors, 4))
print(f"fit on all {len(X_stream)} windows: {fit_all:.4f}; a ridge on the window: "
      f"{ridge:.4f}")

# %%
# The two streams
# ---------------
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4))
ax1.plot(range(1, len(scores) + 1), scores, "o-", label="partial_fit, 15 rows a call")
ax1.axhline(fitted, color="C1", ls="--", label="fit on all rows")
ax1.set_xlabel("passes over the stream")
ax1.set_ylabel("test accuracy")
ax1.set_title("DIFFormerClassifier")
ax1.legend(loc="lower right")
ax2.plot(seen, errors, "o-", label="partial_fit, 200 windows a call")
ax2.axhline(fit_all, color="C1", ls="--", label="fit on all windows")
ax2.axhline(ridge, color="0.5", ls=":", label="ridge on the window")
ax2.set_xlabel("windows seen")
ax2.set_ylabel("test MSE")
ax2.set_yscale("log")
ax2.set_title("FlowformerRegressor")
ax2.legend(loc="upper right")
fig.tight_layout()

# %%
# What each call does
# -------------------
# A call trains one epoch: for DIFFormer (full batch) one optimisation step on the call's
# rows and the kept ones, so a stream of small batches needs several passes to train as
# many steps as ``fit`` does (300 epochs by default). A row given again counts once: a loop
# that gives the same rows every call trains on them alone. With early stopping, each call
# holds out validation rows from its own rows (never from the kept ones) and keeps its
# epoch only if it beats, on them, the weights the call started from.
