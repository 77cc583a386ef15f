"""Implicit hyper-parameter marginalisation: NDP samples adapt their wiggliness to the data.

The default ``"gp"`` prior was trained on GP draws whose kernel (SE, Matérn-1/2, 3/2, 5/2) and
lengthscale (log-normal) vary from function to function, so one network represents the
*mixture*: its samples are smooth or rough depending on what the context supports. We measure
the roughness of each joint sample (root mean squared slope on a grid, in the prior's input
units) for

1. the prior (no data): a broad spread of roughness;
2. two distant observations: the context cannot tell the lengthscale, samples stay diverse
   and the band widens between the points;
3. twelve observations of a fast oscillation: the samples commit to short lengthscales.

A single GP with an ML-II lengthscale would instead commit to one value in case 2.

Run: ``python examples/ndp_marginalisation.py`` (writes ``ndp_marginalisation.png``).
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from skdiff import NDPRegressor  # noqa: E402

grid = np.linspace(-2, 2, 60)[:, None]
kw = dict(x_bounds=(-2, 2), normalize_y=False, random_state=0)


def roughness(samples):
    """Root mean squared slope of every sample (column) on the grid."""
    slope = np.diff(samples, axis=0) / np.diff(grid[:, 0])[:, None]
    return np.sqrt(np.mean(slope**2, axis=0))


cases = {}
ndp = NDPRegressor(**kw).fit(np.array([[-1.5], [1.5]]), np.array([0.5, -0.3]))
cases["prior"] = (None, ndp.sample_prior(grid, n_samples=32, random_state=0))
cases["2 distant points"] = ((ndp.X_train_, ndp.y_train_),
                             ndp.sample_posterior(grid, n_samples=32, random_state=0))
Xw = np.linspace(-1.8, 1.8, 12)[:, None]
yw = np.sin(5 * Xw[:, 0])
ndp_w = NDPRegressor(**kw).fit(Xw, yw)
cases["12 points of sin(5x)"] = ((Xw, yw), ndp_w.sample_posterior(grid, n_samples=32,
                                                                    random_state=0))

fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), sharey=True)
for ax, (name, (ctx, s)) in zip(axes, cases.items()):
    r = roughness(s)
    print(f"{name:22s} roughness of samples: 10% {np.percentile(r, 10):5.2f}  "
          f"median {np.median(r):5.2f}  90% {np.percentile(r, 90):5.2f}  "
          f"mean band width {2 * 1.96 * s.std(1).mean():.2f}")
    ax.plot(grid[:, 0], s[:, :8], lw=0.9)
    if ctx is not None:
        ax.scatter(ctx[0][:, 0], ctx[1], c="k", zorder=3)
    ax.set_title(f"{name}\nroughness median {np.median(r):.2f}")
    ax.set_xlabel("x")
fig.tight_layout()
fig.savefig("ndp_marginalisation.png", dpi=120)
print("wrote ndp_marginalisation.png")
