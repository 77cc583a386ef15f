"""Synthetic graphs and semi-supervised label masks."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import validate_params

from .._checks import Interval, memory_for

__all__ = [
    "make_graph_signal",
    "make_label_mask",
    "make_planted_partition",
    "random_split_per_class",
]


_POSITIVE_INT = Interval(numbers.Integral, 1, None, closed="left")
_COUNT = Interval(numbers.Integral, 0, None, closed="left")
_PROBABILITY = Interval(numbers.Real, 0, 1, closed="both")
_SCALE = Interval(numbers.Real, 0, None, closed="left", finite=True)


def _lower_triangle(pick):
    """The row ``i`` and column ``j < i`` of each linear index into a strict lower triangle."""
    # k = i (i - 1) / 2 + j; the float root is corrected by one either way.
    i = np.floor((1 + np.sqrt(1 + 8 * pick.astype(np.float64))) / 2).astype(np.int64)
    i = np.where(i * (i - 1) // 2 > pick, i - 1, i)
    i = np.where((i + 1) * i // 2 <= pick, i + 1, i)
    return i, pick - i * (i - 1) // 2


def _block_edges(ma, mb, p, rng):
    """The endpoints ``(u, v)`` of random ``ma``-``mb`` edges, or ``None`` when none is drawn."""
    # Each pair is joined with probability p (mb=None: pairs within ma): the count is binomial
    # and the pairs are drawn without replacement.
    na = ma.size
    n_pairs = na * (na - 1) // 2 if mb is None else na * mb.size
    k = rng.binomial(n_pairs, p) if n_pairs else 0
    if k == 0:
        return None
    pick = rng.choice(n_pairs, size=k, replace=False)
    if mb is None:
        i, j = _lower_triangle(pick)
        return ma[i], ma[j]
    return ma[pick // mb.size], mb[pick % mb.size]


def _planted_edges(members, p_in, p_out, rng):
    """The endpoints ``(rows, cols)`` of the edges drawn within and between the blocks."""
    rows, cols = [], []
    for a in range(len(members)):
        for b in range(a, len(members)):
            if a == b:
                edges = _block_edges(members[a], None, p_in, rng)
            else:
                edges = _block_edges(members[a], members[b], p_out, rng)
            if edges is not None:
                rows.append(edges[0])
                cols.append(edges[1])
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(rows), np.concatenate(cols)


@validate_params(
    {
        "n_samples": [_POSITIVE_INT],
        "n_classes": [_POSITIVE_INT],
        "p_in": [_PROBABILITY],
        "p_out": [_PROBABILITY],
        "n_features": [_POSITIVE_INT],
        "feature_signal": [Interval(numbers.Real, None, None, closed="neither", finite=True)],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_planted_partition(n_samples=600, n_classes=3, *, p_in=0.05, p_out=0.005,
                           n_features=16, feature_signal=0.0, random_state=None):
    """A planted-partition (stochastic block) graph with Gaussian node features.

    Nodes are split into ``n_classes`` blocks of (nearly) equal size; an edge joins two nodes of
    the same block with probability ``p_in`` and of different blocks with probability
    ``p_out``. Features are standard normal noise plus ``feature_signal`` times a one-hot-like
    class mean, so with the default ``feature_signal=0`` only the graph carries the labels.

    Edges are drawn per block pair: the count is binomial and the node pairs are drawn without
    replacement, so the cost is linear in the number of edges, not quadratic in ``n_samples``.

    Parameters
    ----------
    n_samples : int, default=600
        Number of nodes.
    n_classes : int, default=3
        Number of blocks (classes).
    p_in, p_out : float, default=0.05, 0.005
        Edge probabilities within and between blocks.
    n_features : int, default=16
        Feature dimension.
    feature_signal : float, default=0.0
        Scale of the class signal in the features (0: pure noise).
    random_state : int, RandomState instance or None, default=None
        Seeds the block labels, the edges and the features: an int gives the same graph on
        every call.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Node features.
    y : ndarray of shape (n_samples,)
        Block (class) of every node, integers ``0 .. n_classes - 1`` in random order.
    adjacency : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric 0/1 matrix without self loops.

    Examples
    --------
    >>> from skdiff.datasets import make_planted_partition
    >>> X, y, A = make_planted_partition(300, 3, random_state=0)
    >>> X.shape, A.shape, bool((A != A.T).nnz == 0)
    ((300, 16), (300, 300), True)
    """
    if n_classes > n_samples:
        raise ValueError(
            f"'n_classes' ({n_classes}) must not exceed 'n_samples' ({n_samples})."
        )
    rng = check_random_state(random_state)
    with memory_for(f"n_samples={n_samples} nodes with n_features={n_features} features",
                    "draw a smaller graph"):
        return _planted_partition(n_samples, n_classes, p_in, p_out, n_features,
                                  feature_signal, rng)


def _planted_partition(n_samples, n_classes, p_in, p_out, n_features, feature_signal, rng):
    """The body of :func:`make_planted_partition`, on checked arguments."""
    y = np.arange(n_samples) % n_classes
    rng.shuffle(y)
    members = [np.flatnonzero(y == c) for c in range(n_classes)]
    r, c = _planted_edges(members, p_in, p_out, rng)
    A = sp.coo_matrix((np.ones(r.size), (r, c)), shape=(n_samples, n_samples)).tocsr()
    A = (A + A.T).tocsr()
    A.data[:] = 1.0

    means = rng.normal(size=(n_classes, n_features))
    X = rng.normal(size=(n_samples, n_features)) + feature_signal * means[y]
    return X, y, A


@validate_params(
    {"y": ["array-like"], "n_per_class": [_POSITIVE_INT], "random_state": ["random_state"]},
    prefer_skip_nested_validation=True,
)
def make_label_mask(y, n_per_class, *, random_state=None):
    """Keep ``n_per_class`` labels per class and mark every other row ``-1`` (unlabelled).

    The convention of :class:`sklearn.semi_supervised.LabelSpreading`.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Labels (integers or strings; for strings the unlabelled marker is still ``-1`` and the
        result has dtype object).
    n_per_class : int
        Labels kept per class (all of a class when it has fewer).
    random_state : int, RandomState instance or None, default=None
        Seeds which rows of each class keep their label: an int keeps the same rows on
        every call.

    Returns
    -------
    y_semi : ndarray of shape (n_samples,)
        ``y`` with every row but the kept ones set to ``-1`` (integer labels keep their
        dtype; other labels give an object array).

    Examples
    --------
    >>> import numpy as np
    >>> from skdiff.datasets import make_label_mask
    >>> y = np.repeat([0, 1, 2], 10)
    >>> y_semi = make_label_mask(y, 2, random_state=0)
    >>> int((y_semi != -1).sum())
    6
    """
    y = _labels(y)
    keep = random_split_per_class(y, n_per_class, n_val=0, n_test=0,
                                  random_state=random_state)[0]
    out = np.full(y.shape, -1, dtype=y.dtype if y.dtype.kind in "iu" else object)
    out[keep] = y[keep]
    return out


def _labels(y):
    """``y`` as a 1-D numpy array of labels, or a ``ValueError`` naming it."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"'y' must be a 1-D array of labels, one per row; got shape {y.shape}.")
    return y


@validate_params(
    {
        "y": ["array-like"],
        "n_per_class": [_POSITIVE_INT],
        "n_val": [_COUNT],
        "n_test": [_COUNT],
        "random_state": ["random_state"],
        "ignore": [Interval(numbers.Integral, None, None, closed="neither"), None],
    },
    prefer_skip_nested_validation=True,
)
def random_split_per_class(y, n_per_class=20, *, n_val=500, n_test=1000, random_state=None,
                           ignore=-1):
    """The 20-labels-per-class protocol: ``n_per_class`` train nodes per class, then random
    validation and test nodes among the rest (as the DIFFormer/GCN scripts draw them).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Labels.
    n_per_class : int, default=20
        Training rows per class (all of a class when it has fewer).
    n_val, n_test : int, default=500, 1000
        Validation and test rows, drawn among the rows left after the training draw; their
        sum must not exceed those rows.
    random_state : int, RandomState instance or None, default=None
        Seed.
    ignore : int or None, default=-1
        Rows of integer ``y`` with this label (the unlabelled marker) are never drawn;
        ``None`` draws every row.

    Returns
    -------
    train_idx, val_idx, test_idx : ndarray of int
        Sorted, disjoint index arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from skdiff.datasets import random_split_per_class
    >>> train, val, test = random_split_per_class(np.repeat([0, 1], 10), 2, n_val=4,
    ...                                           n_test=6, random_state=0)
    >>> len(train), len(val), len(test)
    (4, 4, 6)
    """
    y = _labels(y)
    rng = check_random_state(random_state)
    drawable = ignore is not None and y.dtype.kind in "iu"
    valid = np.flatnonzero(y != ignore) if drawable else np.arange(y.size)
    train = []
    for c in np.unique(y[valid]):
        idx = valid[y[valid] == c]
        train.append(rng.choice(idx, size=min(n_per_class, idx.size), replace=False))
    train = np.sort(np.concatenate(train))
    rest = rng.permutation(np.setdiff1d(valid, train))
    if n_val + n_test > rest.size:
        raise ValueError(
            f"n_val={n_val} + n_test={n_test} exceed the {rest.size} rows left after drawing "
            f"{train.size} training rows (n_per_class={n_per_class}); pass n_val + n_test <= "
            f"{rest.size}, or a smaller n_per_class."
        )
    return train, np.sort(rest[:n_val]), np.sort(rest[n_val:n_val + n_test])


@validate_params(
    {
        "n_samples": [_POSITIVE_INT],
        "n_neighbors": [_POSITIVE_INT],
        "n_features": [_POSITIVE_INT],
        "feature_noise": [_SCALE],
        "noise": [_SCALE],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_graph_signal(n_samples=300, *, n_neighbors=6, n_features=6, feature_noise=1.0,
                      noise=0.05, random_state=None):
    """A smooth signal on a nearest-neighbour graph: graph regression with noisy features.

    Nodes are points drawn uniformly in the unit square, each joined to its ``n_neighbors``
    nearest points (symmetrised). The target is the smooth field
    :math:`f(u, v) = \\sin 3u + \\cos 4v` of a node's position plus Gaussian noise of standard
    deviation ``noise``; the first feature is :math:`f` plus noise of standard deviation
    ``feature_noise`` and the others are pure noise. Alone, the features predict the target
    poorly; averaged over graph neighbourhoods (which share nearly the same :math:`f`), the
    first feature's noise cancels: the graph carries the signal.

    Parameters
    ----------
    n_samples : int, default=300
        Number of nodes.
    n_neighbors : int, default=6
        Neighbours per node before symmetrisation.
    n_features : int, default=6
        Feature columns (>= 1).
    feature_noise : float, default=1.0
        Standard deviation of the noise on the informative feature.
    noise : float, default=0.05
        Standard deviation of the noise on the target.
    random_state : int, RandomState instance or None, default=None
        Seeds the node positions and the noise: an int gives the same graph on every call.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Node features: the noisy field in column 0, pure noise in the others.
    y : ndarray of shape (n_samples,)
        The field at every node plus noise (the regression target).
    adjacency : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric 0/1 matrix without self loops.

    Examples
    --------
    >>> from skdiff.datasets import make_graph_signal
    >>> X, y, A = make_graph_signal(200, random_state=0)
    >>> X.shape, y.shape, bool((A != A.T).nnz == 0)
    ((200, 6), (200,), True)
    """
    if n_neighbors >= n_samples:
        raise ValueError(f"'n_neighbors' ({n_neighbors}) must be below 'n_samples' "
                         f"({n_samples}).")
    rng = check_random_state(random_state)
    with memory_for(f"n_samples={n_samples} nodes with n_features={n_features} features",
                    "draw a smaller graph"):
        return _graph_signal(n_samples, n_neighbors, n_features, feature_noise, noise, rng)


def _graph_signal(n_samples, n_neighbors, n_features, feature_noise, noise, rng):
    """The body of :func:`make_graph_signal`, on checked arguments."""
    from sklearn.neighbors import kneighbors_graph

    pos = rng.uniform(size=(n_samples, 2))
    A = kneighbors_graph(pos, n_neighbors, include_self=False)
    A = A.maximum(A.T).tocsr()
    field = np.sin(3 * pos[:, 0]) + np.cos(4 * pos[:, 1])
    X = rng.normal(size=(n_samples, n_features))
    X[:, 0] = field + feature_noise * X[:, 0]
    return X, field + noise * rng.normal(size=n_samples), A
