"""
Sequence classification with Flowformer
=======================================

Two classes of noisy 2-channel sequences: ``"early"`` has a bump in the first third of the
sequence, ``"late"`` in the last third. :class:`~skdiff.FlowformerClassifier` takes the
``(n, L, C)`` layout, string labels, and gives class probabilities and Monte Carlo dropout
samples of them.
"""

# %%
# Data
# ----
import matplotlib.pyplot as plt
import numpy as np

from skdiff import FlowformerClassifier

rng = np.random.default_rng(0)
n, L = 400, 32
labels = np.array(["early", "late"])[rng.integers(0, 2, n)]
centre = np.where(labels == "late", rng.uniform(22, 28, n), rng.uniform(4, 10, n))
bump = np.exp(-0.5 * ((np.arange(L) - centre[:, None]) / 1.5) ** 2)
X = np.stack([bump + 0.3 * rng.normal(size=(n, L)),
              -bump + 0.3 * rng.normal(size=(n, L))], axis=-1)   # (n, L, C=2)

fig, axes = plt.subplots(1, 2, figsize=(10, 3), sharey=True)
for ax, cls in zip(axes, ("early", "late")):
    for i in np.flatnonzero(labels == cls)[:5]:
        ax.plot(X[i, :, 0], color="C0", alpha=0.6)
        ax.plot(X[i, :, 1], color="C1", alpha=0.6)
    ax.set_title(f'class "{cls}" (channel 0 blue, channel 1 orange)')
    ax.set_xlabel("time step")
fig.tight_layout()

# %%
# Fit and predict
# ---------------
clf = FlowformerClassifier(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=30, lr=5e-3,
                           early_stopping=False, random_state=0)
clf.fit(X[:300], labels[:300])
print("classes:", clf.classes_)
print(f"test accuracy: {clf.score(X[300:], labels[300:]):.3f}")

# %%
# Probabilities and their spread
# ------------------------------
# ``predict_proba`` gives P(late); ``sample_posterior`` gives 50 Monte Carlo dropout samples
# of it per sequence. The harder sequences are those whose bump sits near the middle.
proba = clf.predict_proba(X[300:])[:, 1]
samples = clf.sample_posterior(X[300:], n_samples=50, random_state=0)[:, 1]   # (100, 50)
fig, ax = plt.subplots(figsize=(7, 3.6))
colour = np.where(labels[300:] == "late", "C1", "C0")
ax.errorbar(centre[300:], proba, yerr=samples.std(-1), fmt="none", ecolor="0.6", zorder=1)
ax.scatter(centre[300:], proba, c=colour, s=14, zorder=2)
ax.set_xlabel("position of the bump")
ax.set_ylabel("P(late)  ± MC-dropout std")
fig.tight_layout()
plt.show()
