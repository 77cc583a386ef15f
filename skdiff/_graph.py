"""Graphs among samples or channels: validation, the :class:`Graph` container, node ids."""

from __future__ import annotations

import uuid

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array

from ._checks import _holds, from_torch, restate_array_error

__all__ = ["Graph", "check_adjacency", "check_node_ids"]


def check_not_bool(adjacency, *, name="adjacency", hint=""):
    """Refuse a bool where an adjacency belongs: a flag passed positionally, e.g. ``True``
    meant for ``return_std`` landing on the ``adjacency`` argument that precedes it.
    ``hint`` follows the message (the keyword the flag was meant for)."""
    if isinstance(adjacency, (bool, np.bool_)):
        raise TypeError(f"'{name}' must be an array-like or sparse matrix, got bool "
                        f"{bool(adjacency)!r}{hint or '.'}")


# A graph among the rows of X does not follow a split of the rows: scikit-learn's
# cross-validation slices the rows of a sample-aligned parameter (A[train], not square) and
# train_test_split leaves it whole. The recipe that keeps one graph (docs/user_guide/graphs.md).
_SPLIT_HINT = (
    " An adjacency among the rows of X is not split with them: a cross-validation "
    "(cross_validate, GridSearchCV, params={'adjacency': A}) slices its rows but not its "
    "columns, and a split of X leaves it whole. For a subset of the rows, slice it as "
    "A[rows][:, rows]; to cross-validate over one graph, build it once over all the rows, "
    "g = skdiff.Graph(X, A), and pass its node ids as X with the graph: "
    "cross_validate(est, g.node_ids(), y, params={'graph': g}).")


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_adjacency(adjacency, n, *, name="adjacency", what="rows of X", symmetrize=True,
                    split_hint=False):
    """Validate an adjacency matrix over ``n`` items and return it as float CSR.

    Accepts scipy sparse matrices/arrays, dense array-likes and torch tensors (dense or
    sparse, :func:`~skdiff._checks.from_torch`). The matrix must be square, ``n`` x ``n``,
    finite, non-negative and within the float32 range. An asymmetric matrix is symmetrised
    as ``max(A, A.T)`` (documented behaviour: edges are treated as undirected) when
    ``symmetrize`` is true, and refused otherwise. ``split_hint`` (an adjacency among the
    rows of ``X``): a shape that a split of the rows produces (``n`` rows but more columns,
    or square but larger than ``n``) is explained as such, with the ``Graph`` recipe for
    cross-validation.
    """
    if adjacency is None:
        raise ValueError(f"'{name}' is None; pass a (n, n) matrix or omit it.")
    check_not_bool(adjacency, name=name)
    adjacency = from_torch(adjacency)
    if _holds(adjacency, "c"):
        raise ValueError(f"'{name}' holds complex numbers; edge weights must be real (pass "
                         f"e.g. the moduli, abs({name})).")
    if sp.issparse(adjacency):
        A = sp.csr_matrix(adjacency, dtype=np.float64)
        # a CSR input (matrix or array) keeps its arrays in A (all three at float64, the
        # index arrays at another dtype), and the checks below edit A in place
        # (eliminate_zeros): each array still shared is copied, so the caller's matrix is
        # left as it was; arrays a conversion made are not copied again
        given = [v for v in (getattr(adjacency, k, None) for k in ("data", "indices",
                                                                   "indptr", "row", "col"))
                 if isinstance(v, np.ndarray)]
        for key in ("data", "indices", "indptr"):
            if any(np.may_share_memory(getattr(A, key), v) for v in given):
                setattr(A, key, getattr(A, key).copy())
    else:
        try:
            A = np.asarray(adjacency, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"'{name}' must be a scipy sparse matrix or a dense 2-D array of numbers; got "
                f"{type(adjacency).__name__}."
            ) from exc
        if A.ndim != 2:
            raise ValueError(f"'{name}' must be 2-D (n, n); got an array of shape {A.shape}.")
        A = sp.csr_matrix(A)
    hint = _SPLIT_HINT if split_hint and A.shape[1] > n else ""
    if A.shape[0] != A.shape[1]:
        if hint and A.shape[0] == n:
            raise ValueError(f"'{name}' must be square; got shape {A.shape}: one row for each "
                             f"of the {n} {what} but {A.shape[1]} columns." + hint)
        raise ValueError(f"'{name}' must be square; got shape {A.shape}.")
    if A.shape[0] != n:
        raise ValueError(
            f"'{name}' has shape {A.shape} but there are {n} {what}: it must be ({n}, {n})."
            + hint)
    if not np.all(np.isfinite(A.data)):
        raise ValueError(f"'{name}' contains NaN or infinite values; edge weights must be finite.")
    if A.data.size and A.data.min() < 0:
        raise ValueError(
            f"'{name}' has negative entries (min {A.data.min():g}); edge weights must be >= 0."
        )
    if A.data.size and A.data.max() > _FLOAT32_MAX:
        # the models compute in float32: such a weight would become inf there, and the
        # degree normalisation NaN
        raise ValueError(
            f"'{name}' has weights up to {A.data.max():g}, beyond the largest float32 "
            f"({_FLOAT32_MAX:.4g}) that the models compute in; rescale it, e.g. "
            f"{name} / {name}.max() (the graph terms normalise the weights by the node "
            "degrees, with a unit self loop per node)."
        )
    A.eliminate_zeros()
    if (A != A.T).nnz:
        if not symmetrize:
            raise ValueError(f"'{name}' must be symmetric.")
        A = A.maximum(A.T).tocsr()
    return A


def check_node_ids(X, n_nodes):
    """Validate ``X``, a column of integer node ids of a graph of ``n_nodes``; -> int64 (k,).

    Repeated ids are kept (prediction answers each row); ``fit`` refuses them, as each node
    is one sample.
    """
    ids = np.asarray(X)
    if ids.ndim == 2 and ids.shape[1] == 1:
        ids = ids[:, 0]
    integral = ids.dtype.kind in "iu" or (
        ids.dtype.kind == "f" and np.all(np.isfinite(ids)) and np.all(ids == np.round(ids)))
    if ids.ndim != 1 or not integral:
        raise ValueError(
            "With 'graph', X must be a column of integer node ids of shape (k, 1) (use "
            f"graph.node_ids()); got an array of shape {np.shape(X)} and dtype {ids.dtype}.")
    # the range is checked on the ids as given: an id beyond the int64 range (a large
    # float or uint64) would wrap around in the cast
    if ids.size and (ids.min() < 0 or ids.max() >= n_nodes):
        raise ValueError(f"Node ids must lie in [0, {n_nodes}) for a graph of {n_nodes} "
                         f"nodes; got ids from {int(ids.min())} to {int(ids.max())}.")
    return ids.astype(np.int64)


class Graph:
    """One whole graph (node features + adjacency) that travels through scikit-learn untouched.

    scikit-learn slices sample-aligned fit parameters by rows, so an (n, n) adjacency cannot be
    cross-validated as a fit parameter. A ``Graph`` has no ``__len__`` nor ``shape``: it passes
    through :class:`~sklearn.model_selection.GridSearchCV` and ``cross_validate`` as is, while
    ``X`` is a column of node ids that the splitters slice. Treat it as immutable.

    Parameters
    ----------
    features : {array-like, sparse matrix} of shape (n_nodes, n_features)
        Node features (finite).
    adjacency : {array-like, sparse matrix, torch tensor} of shape (n_nodes, n_nodes)
        Non-negative edge weights (a torch tensor, dense or sparse, is read as numpy or
        scipy); an asymmetric matrix is symmetrised as ``max(A, A.T)``.

    Attributes
    ----------
    features : ndarray or scipy CSR matrix of shape (n_nodes, n_features), float32
        The validated node features (a sparse input stays sparse, as CSR).
    adjacency : scipy CSR matrix of shape (n_nodes, n_nodes), float64
        The validated edge weights, symmetrised as ``max(A, A.T)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdiff import Graph
    >>> g = Graph(np.eye(3), np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    >>> g.n_nodes, g.node_ids().ravel().tolist()
    (3, [0, 1, 2])
    """

    def __init__(self, features, adjacency):
        try:
            self.features = check_array(features, accept_sparse="csr", dtype=np.float32,
                                        input_name="features")
        except ValueError as exc:
            msg = str(exc)
            if "Expected 2D array" in msg:
                raise ValueError("Graph 'features' must be 2-D (n_nodes, n_features); for one "
                                 "feature per node pass features.reshape(-1, 1).") from exc
            restated = restate_array_error(msg, "Graph 'features'", "features", features)
            if restated:
                raise ValueError(restated) from exc
            raise
        self.adjacency = check_adjacency(adjacency, self.features.shape[0], name="adjacency",
                                         what="nodes (rows of 'features')")
        # identifies this graph in caches (a graph is immutable once built)
        self._token = uuid.uuid4().hex

    @property
    def n_nodes(self):
        """Number of nodes."""
        return self.features.shape[0]

    @property
    def n_features(self):
        """Number of node features."""
        return self.features.shape[1]

    def node_ids(self):
        """The column of all node ids, shape (n_nodes, 1): the ``X`` of ``fit``/``predict``."""
        return np.arange(self.n_nodes).reshape(-1, 1)

    def __repr__(self):
        A = self.adjacency
        loops = int(np.count_nonzero(A.diagonal()))
        return (f"Graph(n_nodes={self.n_nodes}, n_features={self.n_features}, "
                f"n_edges={(A.nnz - loops) // 2 + loops})")
