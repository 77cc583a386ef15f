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
graph predict held-out labels better than the most frequent class does. The network's
weight ``beta`` is chosen by a second check on the labelled nodes.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: Iterations of the propagation: ``alpha ** 50`` is below 0.01 for ``alpha <= 0.9``.
N_ITER = 50
#: Folds of the checks on the labelled nodes.
N_FOLDS = 5
#: Candidate weights of the network's probabilities in the propagation, largest first.
NETWORK_WEIGHTS = (1.0, 0.5, 0.2, 0.0)
#: ``"auto"`` propagates on graphs of at most this many nodes: the two checks cost about
#: ``2 * N_FOLDS * N_ITER`` sparse products with up to ``len(NETWORK_WEIGHTS)`` times the
#: classes as columns, 2.5 minutes on one CPU core at 10^6 nodes with 10 edges each and 5
#: classes (the propagation itself 7 s), growing linearly with the edges.
AUTO_MAX_NODES = 1_000_000


def normalized_adjacency(adjacency):
    """``D^-1/2 A D^-1/2`` without self loops, float32 CSR (isolated nodes: zero rows)."""
    A = sp.csr_matrix(adjacency, dtype=np.float32, copy=True)
    A.setdiag(0)
    A.eliminate_zeros()
    deg = np.asarray(A.sum(axis=1)).ravel()
    inv = np.zeros_like(deg)
    np.divide(1.0, np.sqrt(deg), out=inv, where=deg > 0)
    D = sp.diags(inv.astype(np.float32))
    return (D @ A @ D).tocsr()


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

    def graph_predicts_labels(self, random_state):
        """Whether labels spread along the graph predict held-out labelled nodes better than
        the most frequent class: a ``N_FOLDS``-fold check over the labelled nodes.

        Returns ``(decision, accuracy of the spread labels, most frequent class rate)``.
        """
        n_seed, k = self.seeds.size, self.onehot.shape[1]
        majority = float(self.onehot.sum(0).max() / n_seed)
        if n_seed < N_FOLDS:
            return False, float("nan"), majority
        fold = random_state.permutation(n_seed) % N_FOLDS
        # one propagation for all folds: fold f's labels in columns f*k:(f+1)*k
        G0 = np.zeros((self.S.shape[0], N_FOLDS * k), dtype=np.float32)
        for f in range(N_FOLDS):
            keep = fold != f
            G0[self.seeds[keep], f * k:(f + 1) * k] = self.onehot[keep]
        G = spread(self.S, G0, self.seeds[:0], self.alpha)  # the restart term holds the labels
        scores = G[self.seeds].reshape(n_seed, N_FOLDS, k)[np.arange(n_seed), fold]
        accuracy = float(np.mean(scores.argmax(1) == self.onehot.argmax(1)))
        return accuracy > majority, accuracy, majority

    def choose_network_weight(self, proba, random_state):
        """The weight ``beta`` of the network's probabilities in the propagation's start and
        restart term, among :data:`NETWORK_WEIGHTS`, by a ``N_FOLDS``-fold check over the
        labelled nodes: each fold's nodes lose their own label and network prediction and
        are predicted from their neighbourhood (ties go to the larger weight). Where the
        features carry little, the network's guesses on unlabelled nodes mislead and a
        smaller weight lets the labels speak. Sets and returns ``beta``.
        """
        n_seed, k = self.seeds.size, self.onehot.shape[1]
        if n_seed < N_FOLDS:
            self.beta = 1.0
            return self.beta
        P = np.asarray(proba, dtype=np.float32)
        weights = np.asarray(NETWORK_WEIGHTS, dtype=np.float32)
        fold = random_state.permutation(n_seed) % N_FOLDS
        hits = np.zeros(weights.size)
        for f in range(N_FOLDS):  # the folds' clamped nodes differ; the weights share a pass
            train, held = self.seeds[fold != f], self.seeds[fold == f]
            G0 = (weights[None, :, None] * P[:, None, :]).reshape(len(P), -1)
            G0[held] = 0
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
