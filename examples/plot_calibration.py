"""
Calibration of the predictive samples
=====================================

``sample_posterior`` gives Monte Carlo samples of each estimator's predictive distribution.
This example checks them on held-out data:

* a classifier: a reliability diagram of :class:`~skdiff.DIFFormerClassifier`'s
  ``predict_proba`` and of the mean of its Monte Carlo dropout samples, drawn through a
  pipeline with :func:`skdiff.sample_posterior`;
* regressors: the fraction of held-out targets inside the central interval of the samples,
  for several nominal levels, for :class:`~skdiff.FlowformerRegressor` (Gaussian head and
  Monte Carlo dropout) and :class:`~skdiff.NDPRegressor`. A calibrated model lies on the
  diagonal.
"""

# %%
# A classifier: reliability diagram
# ---------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import calibration_curve
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skdiff
from skdiff import DIFFormerClassifier, FlowformerRegressor, NDPRegressor
from skdiff.datasets import make_gp_functions, make_windows

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=300, test_size=600,
                                                    random_state=0, stratify=y)
pipe = make_pipeline(StandardScaler(), DIFFormerClassifier(n_layers=2, dropout=0.1,
                                                           random_state=0))
pipe.fit(X_train, y_train)
proba = pipe.predict_proba(X_test)
mc_mean = skdiff.sample_posterior(pipe, X_test, n_samples=40, random_state=0).mean(-1)


def expected_calibration_error(p, y_true, n_bins=10):
    confidence, correct = p.max(1), p.argmax(1) == y_true
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    gaps = [abs(correct[bins == b].mean() - confidence[bins == b].mean()) * np.mean(bins == b)
            for b in range(n_bins) if np.any(bins == b)]
    return float(np.sum(gaps))


fig, ax = plt.subplots(figsize=(5, 4.5))
for name, p in (("predict_proba", proba), ("mean of MC-dropout samples", mc_mean)):
    correct = p.argmax(1) == y_test
    frac, conf = calibration_curve(correct, p.max(1), n_bins=8, strategy="quantile")
    ece = expected_calibration_error(p, y_test)
    ax.plot(conf, frac, "o-", label=f"{name} (ECE {ece:.3f})")
    print(f"{name:28s} accuracy {correct.mean():.3f}  ECE {ece:.3f}")
ax.plot([0, 1], [0, 1], "k--", lw=1)
ax.set_xlabel("confidence of the predicted class")
ax.set_ylabel("fraction correct")
ax.set_title("DIFFormerClassifier on held-out digits")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Monte Carlo dropout averages over perturbed networks, so its mean is typically less
# confident than ``predict_proba``; deeper models and higher ``dropout`` widen the gap.
#
# Regressors: interval coverage
# -----------------------------
# A series whose noise level follows a daily cycle: a model of the noise must widen its
# intervals at the noisy hours. The last windows of the series are held out.
levels = np.array([0.5, 0.6, 0.7, 0.8, 0.9, 0.95])


def coverage(samples, y_true):
    """Fraction of y_true inside the central interval of the samples, per level."""
    out = []
    for q in levels:
        lo, hi = np.quantile(samples, [(1 - q) / 2, (1 + q) / 2], axis=-1)
        out.append(np.mean((y_true >= lo) & (y_true <= hi)))
    return np.array(out)


rng = np.random.default_rng(0)
t = np.arange(1800)
noise_sd = 0.05 + 0.3 * (1 + np.sin(2 * np.pi * t / 24)) / 2
series = np.sin(2 * np.pi * t / 24) + 0.5 * np.sin(2 * np.pi * t / 170) \
    + noise_sd * rng.normal(size=t.size)
Xs, ys = make_windows(series, window=48, horizon=4)
n_train = 1400
curves = {}
for uncertainty in ("gaussian", "mc_dropout"):
    reg = FlowformerRegressor(hidden_dim=16, n_heads=2, n_layers=1, patch_len=4,
                              max_epochs=8, uncertainty=uncertainty,
                              random_state=0).fit(Xs[:n_train], ys[:n_train])
    s = reg.sample_posterior(Xs[n_train:], n_samples=100, random_state=0)  # (n, 4, 100)
    curves[f"FlowformerRegressor, {uncertainty}"] = coverage(s, ys[n_train:])

# %%
# NDP: 6 functions drawn from a Matérn-5/2 GP, 12 context points and 48 targets each.
draws = make_gp_functions(6, 60, kernel="matern52", lengthscale=0.5, random_state=0)
hits = []
for Xf, yf in zip(draws.X, draws.y):
    ndp = NDPRegressor(x_bounds=(-2, 2), random_state=0).fit(Xf[:12], yf[:12])
    s = ndp.sample_posterior(Xf[12:], n_samples=64, random_state=0)
    hits.append(coverage(s, yf[12:]))
curves["NDPRegressor"] = np.mean(hits, axis=0)

fig, ax = plt.subplots(figsize=(5, 4.5))
for name, c in curves.items():
    ax.plot(levels, c, "o-", label=name)
    print(f"{name:34s} coverage at 90 %: {c[levels == 0.9][0]:.3f}")
ax.plot([0.45, 1], [0.45, 1], "k--", lw=1)
ax.set_xlabel("nominal level of the central interval")
ax.set_ylabel("fraction of held-out targets inside")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The Gaussian head models the noise of the target given the window and is rescaled on the
# validation rows; Monte Carlo dropout only sees the uncertainty of the weights, far
# narrower than the noise here. NDP samples are joint draws from the conditioned process.
