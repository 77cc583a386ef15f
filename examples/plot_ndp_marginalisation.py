"""
Hyper-parameter marginalisation with an NDP prior
=================================================

The default ``"gp"`` prior of :class:`~skdiff.NDPRegressor` was trained on GP draws whose
kernel (SE, Matérn-1/2, 3/2, 5/2) and lengthscale (log-normal) vary from function to
function, so one network represents the *mixture*: its samples are smooth or rough
depending on what the data support. A single GP with an ML-II lengthscale would commit to
one value instead.

We measure the roughness of each joint sample (the root mean squared slope on a grid, in
the prior's input units) in three cases:

1. the prior, with no data: a broad spread of roughness;
2. two distant observations: the data cannot tell the lengthscale, so the samples stay
   diverse;
3. twelve observations of a fast oscillation: the samples commit to short lengthscales.
"""

# %%
# Samples in the three cases
# --------------------------
# ``x_bounds=(-2, 2)`` and ``normalize_y=False`` put the data directly on the prior's scale,
# so the roughness values of the three cases are comparable.
import matplotlib.pyplot as plt
import numpy as np

from skdiff import NDPRegressor

grid = np.linspace(-2, 2, 60)[:, None]
params = dict(x_bounds=(-2, 2), normalize_y=False, random_state=0)


def roughness(samples):
    """Root mean squared slope of every sample (column) on the grid."""
    slope = np.diff(samples, axis=0) / np.diff(grid[:, 0])[:, None]
    return np.sqrt(np.mean(slope**2, axis=0))


two = NDPRegressor(**params).fit(np.array([[-1.5], [1.5]]), np.array([0.5, -0.3]))
X_wave = np.linspace(-1.8, 1.8, 12)[:, None]
y_wave = np.sin(5 * X_wave[:, 0])
wave = NDPRegressor(**params).fit(X_wave, y_wave)
cases = {
    "prior": (None, two.sample_prior(grid, n_samples=32, random_state=0)),
    "2 distant points": ((two.X_train_, two.y_train_),
                         two.sample_posterior(grid, n_samples=32, random_state=0)),
    "12 points of sin(5x)": ((X_wave, y_wave),
                             wave.sample_posterior(grid, n_samples=32, random_state=0)),
}
for name, (_, s) in cases.items():
    r = roughness(s)
    print(f"{name:22s} roughness: 10% {np.percentile(r, 10):5.2f}  median "
          f"{np.median(r):5.2f}  90% {np.percentile(r, 90):5.2f}")

# %%
# Eight samples of each case
# --------------------------
# With two points the samples range from nearly straight lines to wiggly functions; with
# twelve points of a fast wave they all oscillate.
fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), sharey=True)
for ax, (name, (ctx, s)) in zip(axes, cases.items()):
    ax.plot(grid[:, 0], s[:, :8], lw=0.9)
    if ctx is not None:
        ax.scatter(ctx[0][:, 0], ctx[1], c="k", zorder=3)
    ax.set_title(f"{name}\nmedian roughness {np.median(roughness(s)):.2f}")
    ax.set_xlabel("x")
fig.tight_layout()

# %%
# The distribution of roughness
# -----------------------------
fig, ax = plt.subplots(figsize=(6, 3.4))
bins = np.linspace(0, max(roughness(s).max() for _, s in cases.values()), 25)
for name, (_, s) in cases.items():
    ax.hist(roughness(s), bins=bins, alpha=0.5, label=name)
ax.set_xlabel("roughness of a sample (RMS slope)")
ax.set_ylabel("samples")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
