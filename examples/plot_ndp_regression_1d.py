"""
NDP posterior bands and joint samples
=====================================

A noisy sine observed at 14 points. :class:`~skdiff.NDPRegressor` conditions its pretrained
prior (random SE and Matérn kernels and lengthscales) on them: there is no kernel to choose
and no hyper-parameter to fit. It is set beside
:class:`~sklearn.gaussian_process.GaussianProcessRegressor` with an RBF kernel fitted by
maximum marginal likelihood (ML-II).
"""

# %%
# Data and fits
# -------------
# ``x_bounds`` fixes the region of interest, which the estimator maps onto the prior's input
# domain; without it the box of the data and the query points is used.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.metrics import r2_score

from skdiff import NDPRegressor

rng = np.random.default_rng(0)
X = np.sort(rng.uniform(0, 10, 14))[:, None]
y = np.sin(X).ravel() + 0.05 * rng.normal(size=14)
X_plot = np.linspace(-0.5, 10.5, 60)[:, None]

ndp = NDPRegressor(x_bounds=(-0.5, 10.5), random_state=0).fit(X, y)
mean, std = ndp.predict(X_plot, return_std=True)
samples = ndp.sample_posterior(X_plot, n_samples=5, random_state=1)

gpr = GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(1e-2), normalize_y=True,
                               n_restarts_optimizer=3, random_state=0).fit(X, y)
g_mean, g_std = gpr.predict(X_plot, return_std=True)

truth = np.sin(X_plot[:, 0])
print(f"NDP  R^2 of the mean against sin(x): {r2_score(truth, mean):.3f}")
print(f"GPR  R^2 of the mean against sin(x): {r2_score(truth, g_mean):.3f}")

# %%
# Bands and samples
# -----------------
# The band is the Monte Carlo mean ± 1.96 standard deviations of 64 joint samples
# (``predict(return_std=True)``); the thin lines are five joint posterior samples from
# ``sample_posterior``: whole functions, consistent across the grid.
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
for ax, (name, m, s) in zip(axes, [("NDPRegressor (pretrained prior)", mean, std),
                                   ("GaussianProcessRegressor (ML-II RBF)", g_mean, g_std)]):
    ax.fill_between(X_plot[:, 0], m - 1.96 * s, m + 1.96 * s, alpha=0.25, label="95 % band")
    ax.plot(X_plot[:, 0], m, lw=2, label="mean")
    ax.plot(X_plot[:, 0], truth, "k--", lw=1, label="sin(x)")
    ax.scatter(X[:, 0], y, c="k", zorder=3, label="data")
    ax.set_title(name)
    ax.set_xlabel("x")
axes[0].plot(X_plot[:, 0], samples, lw=0.8, alpha=0.7)
axes[0].legend(loc="lower left", fontsize=8)
fig.tight_layout()
plt.show()
