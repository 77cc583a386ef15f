"""
Semi-supervised digits: DIFFormer against LabelSpreading
========================================================

Ten labels per class, every other row unlabelled (``-1``, scikit-learn's semi-supervised
convention). :class:`~skdiff.DIFFormerClassifier` lets the unlabelled rows take part in the
attention; by default a semi-supervised fit also links every row to its 10 nearest
neighbours (``n_neighbors="auto"``) and spreads the labels along that graph
(``label_propagation="auto"``). ``n_neighbors=None`` shows the attention alone. Both are
compared with :class:`~sklearn.semi_supervised.LabelSpreading` and
:class:`~sklearn.semi_supervised.SelfTrainingClassifier` on the same rows: accuracy on the
unlabelled rows (``transduction_``) and on 300 rows never seen in ``fit``.
"""

# %%
# Fits
# ----
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier

from skdiff import DIFFormerClassifier
from skdiff.datasets import make_label_mask

X, y = load_digits(return_X_y=True)
X_fit, X_new, y_fit, y_new = train_test_split(X, y, test_size=300, random_state=0, stratify=y)
scaler = StandardScaler().fit(X_fit)
X_fit, X_new = scaler.transform(X_fit), scaler.transform(X_new)
y_semi = make_label_mask(y_fit, 10, random_state=0)
unlabelled = y_semi == -1
print(f"{(~unlabelled).sum()} labelled rows, {unlabelled.sum()} unlabelled, "
      f"{len(y_new)} new rows")

models = {
    "DIFFormer (defaults)": (DIFFormerClassifier(random_state=0), {}),
    "DIFFormer, no graph": (DIFFormerClassifier(n_neighbors=None, random_state=0), {}),
    "LabelSpreading (10-NN)": (LabelSpreading(kernel="knn", n_neighbors=10), {}),
    "SelfTraining (logistic)": (SelfTrainingClassifier(LogisticRegression(max_iter=1000)),
                                {}),
}
scores = {}
for name, (est, fit_params) in models.items():
    est.fit(X_fit, y_semi, **fit_params)
    scores[name] = (np.mean(est.transduction_[unlabelled] == y_fit[unlabelled]),
                    est.score(X_new, y_new))
    print(f"{name:26s} unlabelled rows {scores[name][0]:.3f}   new rows {scores[name][1]:.3f}")

# %%
# A new row predicted without the graph is an isolated node, so the graph helps the rows
# seen in ``fit`` most.
fig, ax = plt.subplots(figsize=(8, 3.6))
pos = np.arange(len(scores))
ax.barh(pos - 0.2, [s[0] for s in scores.values()], height=0.4, label="unlabelled rows")
ax.barh(pos + 0.2, [s[1] for s in scores.values()], height=0.4, label="new rows")
ax.set_yticks(pos, list(scores))
ax.set_xlim(0.7, 1.0)
ax.set_xlabel("accuracy")
ax.legend(loc="lower right")
fig.tight_layout()

# %%
# Which predictions to doubt
# --------------------------
# ``sample_posterior`` draws class probabilities from forward passes with dropout active
# (Monte Carlo dropout). For new rows, take the model without a graph (to the graph model
# they are isolated nodes): the spread of the predicted class's probability is larger on
# the rows it gets wrong, a ranking signal for review.
clf = models["DIFFormer, no graph"][0]
samples = clf.sample_posterior(X_new, n_samples=50, random_state=0)   # (300, 10, 50)
mean = samples.mean(-1)
predicted = mean.argmax(1)
spread = samples[np.arange(len(predicted)), predicted].std(-1)
wrong = clf.classes_[predicted] != y_new
print(f"MC spread of the predicted class: {spread[~wrong].mean():.3f} on correct rows, "
      f"{spread[wrong].mean():.3f} on mistakes")

fig, ax = plt.subplots(figsize=(6, 3.4))
bins = np.linspace(0, spread.max(), 20)
ax.hist(spread[~wrong], bins=bins, alpha=0.6, density=True, label="correct")
ax.hist(spread[wrong], bins=bins, alpha=0.6, density=True, label="wrong")
ax.set_xlabel("std of the predicted class's probability over 50 samples")
ax.set_ylabel("density")
ax.legend()
fig.tight_layout()
plt.show()
