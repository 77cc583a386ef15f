"""
Cross-validating DIFFormer on one graph
=======================================

scikit-learn slices sample-aligned fit parameters by rows, so an ``(n, n)`` adjacency cannot
be cross-validated as a plain fit parameter. :class:`skdiff.Graph` holds the whole graph
(features and adjacency, no ``len``) and travels through
:class:`~sklearn.model_selection.GridSearchCV` untouched, while ``X`` is the column of node
ids that the splitters slice. Every fold trains on the whole graph with the nodes outside
the fold unlabelled, and ``predict(ids)`` answers from a full-graph forward.

The planted-partition graph below has pure-noise features: only the edges carry the labels.
With the nodes of the graph shuffled (same degrees, no relation to the classes) the accuracy
falls to chance.
"""

# %%
# A grid search over one graph
# ----------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

from skdiff import DIFFormerClassifier, Graph
from skdiff.datasets import make_planted_partition

X, y, A = make_planted_partition(600, 3, p_in=0.05, p_out=0.003, n_features=32,
                                 random_state=0)
g = Graph(X, A)
print(g)
cv = StratifiedKFold(3, shuffle=True, random_state=0)

search = GridSearchCV(
    DIFFormerClassifier(n_layers=2, max_epochs=60, random_state=0),
    {"graph_weight": [None, 0.0], "label_propagation": ["auto", False]},
    cv=cv,
)
search.fit(g.node_ids(), y, graph=g)
print("best parameters:", search.best_params_)
for params, score in zip(search.cv_results_["params"], search.cv_results_["mean_test_score"]):
    print(f"  {params}: {score:.3f}")

# %%
# The model reaches the edges in two ways: the graph term inside every layer
# (``graph_weight=None`` adds it to the attention, ``0.0`` drops it) and
# ``label_propagation``, which spreads the training folds' labels along the edges after
# the network. With neither (``graph_weight=0.0, label_propagation=False``) it has nothing
# but noise to attend over, and its score shows it.
#
# The edges, not the model, carry the score
# -----------------------------------------
# a random relabelling of the nodes keeps every degree and breaks the edges' relation to
# the classes
perm = np.random.RandomState(0).permutation(len(y))
shuffled = A[perm][:, perm]

best = search.best_estimator_
scores = {}
for name, graph in [("planted graph", g), ("shuffled edges", Graph(X, shuffled))]:
    scores[name] = cross_val_score(best, graph.node_ids(), y, cv=cv,
                                   params={"graph": graph})
    print(f"{name:15s} accuracy {scores[name].mean():.3f} ± {scores[name].std():.3f} "
          "(chance 0.333)")

fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
labels = [f"graph_weight {p['graph_weight']}\nlabel_propagation {p['label_propagation']}"
          for p in search.cv_results_["params"]]
axes[0].barh(labels, search.cv_results_["mean_test_score"],
             xerr=search.cv_results_["std_test_score"], color="C0")
axes[0].set_title("GridSearchCV, 3 folds")
axes[1].bar(list(scores), [s.mean() for s in scores.values()],
            yerr=[s.std() for s in scores.values()], color=["C0", "C3"])
axes[1].set_title("cross_val_score of the best model")
axes[0].axvline(1 / 3, color="k", ls="--", lw=1)
axes[1].axhline(1 / 3, color="k", ls="--", lw=1, label="chance")
axes[0].set_xlabel("accuracy")
axes[1].set_ylabel("accuracy")
axes[1].legend()
fig.tight_layout()
plt.show()
