"""Semi-supervised digits: 10 labels per class, every other row unlabelled (-1).

DIFFormer lets unlabelled rows take part in the attention; with a k-nearest-neighbour graph
passed as ``adjacency`` it also propagates along the graph. Compared with LabelSpreading and
SelfTrainingClassifier on the same rows; accuracy on the unlabelled rows (``transduction_``)
and inductive accuracy on rows never seen in fit.

Run: ``python examples/semi_supervised_digits.py``
"""

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.neighbors import kneighbors_graph
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier

from skdiff import DIFFormerClassifier
from skdiff.datasets import make_label_mask

X, y = load_digits(return_X_y=True)
X_fit, X_new, y_fit, y_new = train_test_split(X, y, test_size=300, random_state=0, stratify=y)
scaler = StandardScaler().fit(X_fit)
X_fit, X_new = scaler.transform(X_fit), scaler.transform(X_new)
y_semi = make_label_mask(y_fit, 10, random_state=0)
unl = y_semi == -1
print(f"{(~unl).sum()} labelled rows, {unl.sum()} unlabelled, {len(y_new)} new rows")

A = kneighbors_graph(X_fit, 10, include_self=False)
models = {
    "DIFFormer (all-pair attention)": (DIFFormerClassifier(random_state=0), {}),
    "DIFFormer + 10-NN graph": (DIFFormerClassifier(random_state=0), {"adjacency": A}),
    "LabelSpreading (knn)": (LabelSpreading(kernel="knn", n_neighbors=10), {}),
    "SelfTraining(LogisticRegression)": (
        SelfTrainingClassifier(LogisticRegression(max_iter=1000)), {}),
}
for name, (est, fit_params) in models.items():
    est.fit(X_fit, y_semi, **fit_params)
    trans = np.mean(est.transduction_[unl] == y_fit[unl])
    print(f"{name:<34} unlabelled rows: {trans:.3f}   new rows: {est.score(X_new, y_new):.3f}")

# Monte Carlo dropout: the spread of the class probabilities flags doubtful predictions
clf = models["DIFFormer (all-pair attention)"][0]
S = clf.sample_posterior(X_new, n_samples=50, random_state=0)
mean = S.mean(-1)
pred = clf.classes_[mean.argmax(1)]
spread = S[np.arange(len(pred)), mean.argmax(1)].std(-1)
print(f"MC spread of the predicted class: {spread[pred == y_new].mean():.3f} on correct rows, "
      f"{spread[pred != y_new].mean():.3f} on mistakes")
