"""Label propagation over the graph on top of the network's predictions.

The "smooth" step of Correct and Smooth (Huang et al., "Combining Label Propagation and
Simple Models Out-performs Graph Neural Networks", ICLR 2021): the class probabilities ``P``
of the network are spread along the edges, with the known labels clamped, by iterating

    G <- (1 - alpha) G0 + alpha S G,        S = D^-1/2 A D^-1/2,

where ``G0`` is ``beta P`` with the labelled rows replaced by their one-hot labels (Zhou et al.,
2004, the iteration of :class:`sklearn.semi_supervised.LabelSpreading`, started from the
network's predictions instead of zeros). On a homophilous graph this carries the
labels' information to nodes whose features say little; on a heterophilous one it would
mislead, so ``"auto"`` first checks on the labelled nodes whether labels spread along the
graph predict held-out labels better than the most frequent class does
(:meth:`LabelSmoother.spread_hits`), and not worse than a linear model on the features
alone (:func:`features_hits`), whose predictions the propagation would override.
The network's weight ``beta`` is chosen by a second check on the labelled nodes.

The regressor smooths its standardised predictions the same way (:class:`ValueSmoother`),
labelled values clamped, after checking that values spread along the graph predict
held-out labelled values better than their mean does.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: Iterations of the propagation: ``alpha ** 50`` is below 0.01 for ``alpha <= 0.9``.
N_ITER = 50
#: Folds of the checks on the labelled nodes.
N_FOLDS = 5
#: Below this many labelled nodes the check of the network's weight repeats its folds over
#: ``N_REPEATS`` shuffles: with a few dozen labelled nodes one shuffle is too noisy to choose.
FEW_LABELS = 1000
N_REPEATS = 3
#: Candidate weights of the network's probabilities in the propagation, largest first.
NETWORK_WEIGHTS = (1.0, 0.5, 0.2, 0.0)
#: ``"auto"`` propagates on graphs of at most this many nodes: the two checks cost about
#: ``2 * N_FOLDS * N_ITER`` sparse products with up to ``len(NETWORK_WEIGHTS)`` times the
#: classes as columns, 2.5 minutes on one CPU core at 10^6 nodes with 10 edges each and 5
#: classes (the propagation itself 7 s), growing linearly with the edges.
AUTO_MAX_NODES = 1_000_000


def _fold_assignments(n_seed, random_state):
    """The fold (0 to ``N_FOLDS - 1``) of each of ``n_seed`` labelled nodes, for one random
    shuffle, or ``N_REPEATS`` shuffles below ``FEW_LABELS`` nodes."""
    return [random_state.permutation(n_seed) % N_FOLDS
            for _ in range(N_REPEATS if n_seed < FEW_LABELS else 1)]


def normalized_adjacency(adjacency, self_loops=False):
    """``D^-1/2 A D^-1/2``, float32 CSR (isolated nodes: zero rows); the diagonal is
    dropped unless ``self_loops``."""
    A = sp.csr_matrix(adjacency, dtype=np.float32, copy=True)
    if not self_loops:
        A.setdiag(0)
    A.eliminate_zeros()
    # degrees and the product in float64: a row of heavy weights (each within float32) can
    # sum beyond float32's range; the weights themselves are float32 as the network reads them
    A = A.astype(np.float64)
    deg = np.asarray(A.sum(axis=1)).ravel()
    inv = np.zeros_like(deg)
    np.divide(1.0, np.sqrt(deg), out=inv, where=deg > 0)
    D = sp.diags(inv)
    return (D @ A @ D).tocsr().astype(np.float32)


def spread(S, G0, seeds, alpha, n_iter=N_ITER):
    """Iterate ``G <- (1 - alpha) G0 + alpha S G`` with the rows ``seeds`` clamped to ``G0``.

    ``G0`` is (n, k): any number of columns (classes, or classes times Monte Carlo draws)
    propagate in one sparse product per iteration.
    """
    G0 = np.asarray(G0, dtype=np.float32)
    fixed = G0[seeds]
    G = G0.copy()
    for _ in range(n_iter):  # iterations of the whole graph, not a loop over nodes
        G = (1 - alpha) * G0 + alpha * (S @ G)
        G[seeds] = fixed
    return G


class LabelSmoother:
    """The propagation over one graph with its labelled nodes (``seeds``, class ``codes``)."""

    def __init__(self, adjacency, seeds, codes, n_classes, alpha):
        self.S = normalized_adjacency(adjacency)
        self.seeds = np.asarray(seeds)
        self.onehot = np.eye(n_classes, dtype=np.float32)[np.asarray(codes)]
        self.alpha = alpha
        self.beta = 1.0  # the network's weight: see choose_network_weight

    def spread_hits(self, random_state):
        """Whether labels spread along the graph predict each held-out labelled node: a
        ``N_FOLDS``-fold check over the labelled nodes, each fold's nodes predicted from the
        other folds' labels alone. Returns 1.0 or 0.0 per node, in the order of ``seeds``,
        or None with fewer than ``N_FOLDS`` labelled nodes."""
        n_seed, k = self.seeds.size, self.onehot.shape[1]
        if n_seed < N_FOLDS:
            return None
        fold = random_state.permutation(n_seed) % N_FOLDS
        # one propagation for all folds: fold f's labels in columns f*k:(f+1)*k
        G0 = np.zeros((self.S.shape[0], N_FOLDS * k), dtype=np.float32)
        for f in range(N_FOLDS):
            keep = fold != f
            G0[self.seeds[keep], f * k:(f + 1) * k] = self.onehot[keep]
        G = spread(self.S, G0, self.seeds[:0], self.alpha)  # the restart term holds the labels
        scores = G[self.seeds].reshape(n_seed, N_FOLDS, k)[np.arange(n_seed), fold]
        return (scores.argmax(1) == self.onehot.argmax(1)).astype(np.float64)

    def choose_network_weight(self, proba, random_state):
        """The weight ``beta`` of the network's probabilities in the propagation's start and
        restart term, among :data:`NETWORK_WEIGHTS`, by a ``N_FOLDS``-fold check over the
        labelled nodes (repeated over ``N_REPEATS`` shuffles below ``FEW_LABELS`` labelled
        nodes): each fold's nodes lose their own label, and their own and their
        neighbours' network predictions, and are predicted from the labels and network
        predictions further out (ties go to the larger weight). The network was trained on
        every labelled node, so its predictions next to a held-out node carry that node's
        label (through the graph layers): left in, they make the network look better than it
        is on nodes it has not seen. Where the features carry little, the network's guesses
        on unlabelled nodes mislead and a smaller weight lets the labels speak. Sets and
        returns ``beta``.
        """
        n_seed, k = self.seeds.size, self.onehot.shape[1]
        if n_seed < N_FOLDS:
            self.beta = 1.0
            return self.beta
        P = np.asarray(proba, dtype=np.float32)
        weights = np.asarray(NETWORK_WEIGHTS, dtype=np.float32)
        folds = _fold_assignments(n_seed, random_state)
        hits = np.zeros(weights.size)
        for fold in folds:
            for f in range(N_FOLDS):  # the folds' clamped nodes differ; the weights share a pass
                train, held = self.seeds[fold != f], self.seeds[fold == f]
                hidden = np.zeros(len(P), dtype=np.float32)
                hidden[held] = 1
                hidden = (hidden + self.S @ hidden) > 0  # the held-out nodes and their neighbours
                G0 = (weights[None, :, None] * P[:, None, :]).reshape(len(P), -1)
                G0[hidden] = 0
                G0[train] = np.tile(self.onehot[fold != f], weights.size)
                G = spread(self.S, G0, train, self.alpha)[held].reshape(held.size, weights.size, k)
                hits += np.sum(G.argmax(2) == self.onehot[fold == f].argmax(1)[:, None], axis=0)
        self.beta = NETWORK_WEIGHTS[int(np.argmax(hits))]  # largest first: ties go to it
        return self.beta

    def smooth(self, proba):
        """Propagated class probabilities (n, n_classes) from the network's ``proba``."""
        P = np.asarray(proba, dtype=np.float32)
        G0 = self.beta * P
        G0[self.seeds] = self.onehot
        G = np.maximum(spread(self.S, G0, self.seeds, self.alpha), 0)
        # a node the labels do not reach keeps the network's prediction
        G = (G + 1e-6 * P).astype(np.float64)
        total = G.sum(axis=1, keepdims=True)
        return np.divide(G, total, out=np.full_like(G, 1.0 / G.shape[1]), where=total > 0)


class ValueSmoother:
    """The smooth step for regression: the network's standardised predictions spread along
    the graph with the labelled nodes (``seeds``) clamped to their standardised ``values``.

    Unlike class probabilities, whose argmax survives any rescaling, values are averaged
    as they are: a long propagation (``alpha`` near 1) pulls every node towards the mean
    of a wide neighbourhood, so the regressor uses a shorter one. There is no weight for the
    network's predictions: shrinking them towards the mean would bias every node.
    """

    def __init__(self, adjacency, seeds, values, alpha):
        self.S = normalized_adjacency(adjacency)
        self.seeds = np.asarray(seeds)
        values = np.asarray(values, dtype=np.float32)
        self.values = values.reshape(len(self.seeds), -1)
        self.alpha = alpha

    def graph_predicts_values(self, random_state):
        """Whether values spread along the graph predict held-out labelled nodes better
        than the mean of the other labelled nodes: a ``N_FOLDS``-fold check over the
        labelled nodes (repeated over ``N_REPEATS`` shuffles below ``FEW_LABELS`` of them).

        Each held-out node is predicted by a kernel regression over the graph: the spread
        of the other labelled nodes' values divided by the spread of their indicator (the
        diffusion kernel ``(1 - alpha) (I - alpha S)^-1`` as weights), the mean where no
        labelled node reaches it. On a heterophilous graph the neighbours' values mislead
        and the check fails.

        Returns ``(decision, mean squared error of the spread values, of the mean)`` on the
        standardised scale; the errors are NaN and the decision False with fewer than
        ``2 * N_FOLDS`` labelled nodes.
        """
        n_seed, k = self.values.shape
        if n_seed < 2 * N_FOLDS:
            return False, float("nan"), float("nan")
        err = np.zeros(2)
        folds = _fold_assignments(n_seed, random_state)
        for fold in folds:
            # one propagation for all folds: fold f's centred values and its indicator in
            # columns f*(k+1):(f+1)*(k+1)
            G0 = np.zeros((self.S.shape[0], N_FOLDS * (k + 1)), dtype=np.float32)
            means = np.zeros((N_FOLDS, k), dtype=np.float32)
            for f in range(N_FOLDS):
                keep = fold != f
                means[f] = self.values[keep].mean(0)
                G0[self.seeds[keep], f * (k + 1):f * (k + 1) + k] = self.values[keep] - means[f]
                G0[self.seeds[keep], f * (k + 1) + k] = 1
            G = spread(self.S, G0, self.seeds[:0], self.alpha)[self.seeds]
            G = G.reshape(n_seed, N_FOLDS, k + 1)[np.arange(n_seed), fold]
            mass = G[:, k:]
            fit = np.divide(G[:, :k], mass, out=np.zeros_like(G[:, :k]), where=mass > 1e-6)
            err[0] += np.mean((fit + means[fold] - self.values) ** 2) / len(folds)
            err[1] += np.mean((means[fold] - self.values) ** 2) / len(folds)
        return bool(err[0] < err[1]), float(err[0]), float(err[1])

    def smooth(self, outputs):
        """Propagated standardised predictions (n, n_outputs) from the network's
        ``outputs``, the labelled nodes at their values."""
        Z = np.asarray(outputs, dtype=np.float32).reshape(len(outputs), -1)
        G0 = Z.copy()
        G0[self.seeds] = self.values
        return spread(self.S, G0, self.seeds, self.alpha).astype(np.float64).reshape(
            np.shape(outputs))


#: ``graph_weight="auto"`` checks at most this many labelled nodes (a random subset beyond),
#: and only graphs whose features hold at most ``GRAPH_CHECK_MAX_CELLS`` values.
GRAPH_CHECK_MAX_LABELS = 10_000
GRAPH_CHECK_MAX_CELLS = 50_000_000


def smoothed_features(adjacency, features, hops=2):
    """``S^hops X`` with ``S = D^-1/2 (A + I) D^-1/2``: the features of SGC (Wu et al.,
    "Simplifying Graph Convolutional Networks", ICML 2019), dense or CSR in, same out."""
    S = normalized_adjacency(adjacency + sp.identity(adjacency.shape[0], format="csr"),
                             self_loops=True)
    for _ in range(hops):
        features = S @ features
    return features


def features_hits(features, targets, seeds, random_state, transform=None):
    """Whether :class:`~sklearn.linear_model.LogisticRegression` on the features alone
    predicts each held-out labelled node: ``N_FOLDS``-fold stratified cross-validated
    predictions over the labelled nodes ``seeds`` (repeated over ``N_REPEATS`` shuffles
    below ``FEW_LABELS`` of them, each node's hits averaged), on at most
    ``GRAPH_CHECK_MAX_LABELS`` of them (a random subset beyond). Only those nodes' rows of
    ``features`` are read, and ``transform`` (a row-wise scaling) applies to them alone.

    Returns ``(index into seeds, hits)``, or None where the check cannot run (fewer than
    two labelled nodes in some class, or more than ``GRAPH_CHECK_MAX_CELLS`` feature
    values in those rows).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    targets = np.asarray(targets)
    index = np.arange(len(targets))
    if index.size > GRAPH_CHECK_MAX_LABELS:
        index = np.sort(random_state.choice(index.size, GRAPH_CHECK_MAX_LABELS, replace=False))
    counts = np.unique(targets[index], return_counts=True)[1]
    n_splits = min(N_FOLDS, int(counts.min()))
    if n_splits < 2 or counts.size < 2 or \
            index.size * features.shape[1] > GRAPH_CHECK_MAX_CELLS:
        return None
    X, t = features[np.asarray(seeds)[index]], targets[index]
    X = X if transform is None else transform(X)
    repeats = N_REPEATS if index.size < FEW_LABELS else 1
    hits = np.zeros(index.size)
    for _ in range(repeats):
        cv = StratifiedKFold(n_splits, shuffle=True,
                             random_state=int(random_state.randint(np.iinfo(np.int32).max)))
        hits += (cross_val_predict(LogisticRegression(max_iter=1000), X, t, cv=cv) == t)
    return index, hits / repeats


def graph_helps_features(adjacency, features, targets, seeds, random_state, *, classifier):
    """Whether averaging the features over the graph makes them more predictive of the
    labels: a linear model on the SGC features :func:`smoothed_features` against the same
    model on the features themselves, in a ``N_FOLDS``-fold check over the labelled nodes
    ``seeds`` (repeated over ``N_REPEATS`` shuffles below ``FEW_LABELS`` of them).

    The classifier's model is :class:`~sklearn.linear_model.LogisticRegression` scored by
    accuracy, the regressor's :class:`~sklearn.linear_model.RidgeCV` scored by R². A graph
    whose edges join nodes of different classes (heterophily) blurs the features, and the
    check fails; the graph is kept on ties.

    Returns ``(decision, score on the features, score on the smoothed features)``; the
    scores are NaN and the decision True when the check cannot run (too few labelled
    nodes per fold, or more than ``GRAPH_CHECK_MAX_CELLS`` feature values).
    """
    from sklearn.linear_model import LogisticRegression, RidgeCV
    from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score

    seeds = np.asarray(seeds)
    if seeds.size > GRAPH_CHECK_MAX_LABELS:
        keep = np.sort(random_state.choice(seeds.size, GRAPH_CHECK_MAX_LABELS, replace=False))
        seeds, targets = seeds[keep], targets[keep]
    n_splits = N_FOLDS
    if classifier:
        n_splits = min(N_FOLDS, int(np.unique(targets, return_counts=True)[1].min()))
    if n_splits < 2 or seeds.size < 2 * N_FOLDS or \
            features.shape[0] * features.shape[1] > GRAPH_CHECK_MAX_CELLS:
        return True, float("nan"), float("nan")
    smoothed = smoothed_features(adjacency, features)
    model = LogisticRegression(max_iter=1000) if classifier else RidgeCV()
    scores = np.zeros(2)
    repeats = N_REPEATS if seeds.size < FEW_LABELS else 1
    for _ in range(repeats):
        seed = int(random_state.randint(np.iinfo(np.int32).max))
        cv = (StratifiedKFold if classifier else KFold)(n_splits, shuffle=True,
                                                        random_state=seed)
        for i, X in enumerate((features, smoothed)):
            scores[i] += cross_val_score(model, X[seeds], targets, cv=cv).mean() / repeats
    return bool(scores[1] >= scores[0]), float(scores[0]), float(scores[1])
