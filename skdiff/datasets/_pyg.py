"""Adapter from PyTorch Geometric graphs to numpy/scipy, with no torch-geometric dependency.

:func:`from_pyg` reads the attributes of a ``torch_geometric.data.Data`` object (``x``,
``edge_index``, ...) by name, so any object that carries them works: a PyG ``Data``, a
``types.SimpleNamespace`` of tensors, a record of numpy arrays, or a mapping of them (a
``dict``, such as ``Data.to_dict()`` gives).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from .._checks import memory_for

__all__ = ["edge_index_to_adjacency", "from_pyg"]


def _is_tensor(value):
    return type(value).__module__.partition(".")[0] == "torch"


def _torch():
    import torch  # imported only when a tensor comes in

    return torch


def _numpy(value, name):
    """``value`` (torch tensor or array-like) as a numpy array; ``name`` is for errors."""
    if _is_tensor(value):
        torch = _torch()
        value = value.detach()
        if value.layout != torch.strided:
            raise ValueError(f"'{name}' must be a dense tensor; got layout {value.layout}. "
                             f"Convert it with {name}.to_dense().")
        if value.dtype == torch.bfloat16:  # numpy has no bfloat16
            value = value.float()
        return value.cpu().numpy()
    return np.asarray(value)


def _sparse_or_dense(value, name):
    """Node features as a scipy CSR matrix (sparse tensor or matrix) or a numpy array."""
    if sp.issparse(value):
        X = sp.csr_matrix(value)
    elif _is_tensor(value) and value.layout != _torch().strided:
        coo = value.detach().cpu().to_sparse_coo().coalesce()
        if coo.ndim != 2:
            raise ValueError(f"'{name}' must be 2-D (n_nodes, n_features); got {coo.ndim}-D.")
        values = coo.values()
        if values.dtype == _torch().bfloat16:  # numpy has no bfloat16
            values = values.float()
        rows, cols = coo.indices().numpy()
        X = sp.csr_matrix((values.numpy(), (rows, cols)), shape=tuple(coo.shape))
    else:
        X = _numpy(value, name)
    if X.ndim != 2:
        raise ValueError(f"'{name}' must be 2-D (n_nodes, n_features); got shape {X.shape}.")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"'{name}' must be numeric; got dtype {X.dtype}.")
    if not np.isfinite(X.data if sp.issparse(X) else X).all():
        raise ValueError(f"'{name}' holds NaN or infinite values.")
    return X


def _edge_array(edge_index, index_name):
    """``edge_index`` as an int64 array of shape (2, n_edges), checked for shape and dtype."""
    ei = _numpy(edge_index, index_name)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(
            f"'{index_name}' must have shape (2, n_edges): sources in row 0, targets in row 1; "
            f"got shape {ei.shape}. An (n_edges, 2) list of pairs is its transpose."
        )
    if ei.dtype.kind not in "iu":
        raise ValueError(f"'{index_name}' must hold integer node ids; got dtype {ei.dtype}. "
                         "Convert it with .long() (torch) or .astype(int) (numpy).")
    return ei.astype(np.int64, copy=False)


def _node_count(ei, n_nodes, index_name):
    """The number of nodes (``n_nodes``, or one more than the largest id), ids checked to fit."""
    n_edges = ei.shape[1]
    if n_nodes is None:
        n_nodes = int(ei.max()) + 1 if n_edges else 0
    elif not isinstance(n_nodes, numbers.Integral) or isinstance(n_nodes, bool) or n_nodes < 0:
        raise ValueError(f"'n_nodes' must be a non-negative integer or None; got {n_nodes!r}.")
    n_nodes = int(n_nodes)
    if n_edges and ei.min() < 0:
        raise ValueError(f"'{index_name}' holds the negative node id {int(ei.min())}; node ids "
                         f"must lie in [0, {n_nodes}).")
    if n_edges and ei.max() >= n_nodes:
        raise ValueError(f"'{index_name}' refers to node {int(ei.max())}, but the graph has "
                         f"{n_nodes} nodes; node ids must lie in [0, {n_nodes}).")
    return n_nodes


def _edge_weights(edge_weight, n_edges, weight_name):
    """One finite, non-negative weight per edge: float32, or wider for wider input dtypes."""
    if edge_weight is None:
        return np.ones(n_edges, dtype=np.float32)
    w = _numpy(edge_weight, weight_name)
    if w.ndim == 2 and w.shape[1] == 1:
        w = w[:, 0]
    if w.shape != (n_edges,):
        raise ValueError(f"'{weight_name}' must hold one weight per edge, shape "
                         f"({n_edges},); got shape {w.shape}.")
    if w.dtype.kind not in "biuf":
        raise ValueError(f"'{weight_name}' must be real numbers; got dtype {w.dtype}.")
    if not np.isfinite(w).all():
        raise ValueError(f"'{weight_name}' holds NaN or infinite weights.")
    if (w < 0).any():
        raise ValueError(f"'{weight_name}' holds the negative weight {w.min().item()}; edge "
                         "weights must be non-negative.")
    return w.astype(np.result_type(w.dtype, np.float32))


def _adjacency(edge_index, n_nodes, edge_weight, names):
    """The CSR adjacency of :func:`edge_index_to_adjacency`; ``names`` name the inputs in errors."""
    index_name, weight_name = names
    ei = _edge_array(edge_index, index_name)
    n_nodes = _node_count(ei, n_nodes, index_name)
    w = _edge_weights(edge_weight, ei.shape[1], weight_name)
    # COO -> CSR sums the weights of repeated (source, target) pairs; its row pointer has
    # n_nodes + 1 entries
    with memory_for(f"the row pointer of a {n_nodes}-node sparse adjacency",
                    "check n_nodes (None counts the nodes in edge_index)"):
        A = sp.csr_matrix((w, (ei[0], ei[1])), shape=(n_nodes, n_nodes))
    A.sum_duplicates()
    A.eliminate_zeros()
    return A


def edge_index_to_adjacency(edge_index, n_nodes=None, edge_weight=None):
    """A sparse adjacency matrix from a PyG-style ``edge_index``.

    ``A[i, j]`` is the summed weight of the edges ``i -> j`` (``edge_index[0]`` holds sources,
    ``edge_index[1]`` targets, the PyG convention). Repeated edges add up; pairs whose total
    weight is 0 are dropped. The matrix is **not** symmetrised: an undirected PyG graph lists
    both directions of every edge, so its adjacency comes out symmetric, while a directed one
    keeps its direction (:class:`skdiff.Graph` symmetrises as ``max(A, A.T)``).

    Parameters
    ----------
    edge_index : tensor or array-like of shape (2, n_edges)
        Integer node ids, sources in row 0 and targets in row 1.
    n_nodes : int, default=None
        Number of nodes. ``None``: one more than the largest id in ``edge_index``.
    edge_weight : tensor or array-like of shape (n_edges,) or (n_edges, 1), default=None
        Non-negative, finite edge weights. ``None``: every edge weighs 1.

    Returns
    -------
    adjacency : scipy.sparse.csr_matrix of shape (n_nodes, n_nodes)
        float32 (float64 for float64 or wide-integer weights).

    Examples
    --------
    >>> import torch
    >>> from skdiff.datasets import edge_index_to_adjacency
    >>> edge_index = torch.tensor([[0, 1, 1, 1], [1, 0, 2, 2]])  # 1 -> 2 listed twice
    >>> edge_index_to_adjacency(edge_index, n_nodes=4).toarray()
    array([[0., 1., 0., 0.],
           [1., 0., 2., 0.],
           [0., 0., 0., 0.],
           [0., 0., 0., 0.]], dtype=float32)
    """
    return _adjacency(edge_index, n_nodes, edge_weight, ("edge_index", "edge_weight"))


def _pyg_edge_weight(data):
    """The edge weights of ``data`` (``edge_weight``, else a scalar ``edge_attr``) and name."""
    weight, weight_name = getattr(data, "edge_weight", None), "data.edge_weight"
    if weight is None and getattr(data, "edge_attr", None) is not None:
        weight, weight_name = data.edge_attr, "data.edge_attr"
        shape = tuple(weight.shape)
        if not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)):
            raise ValueError(
                f"'data.edge_attr' has shape {shape}: only one scalar per edge can be an edge "
                "weight. Set data.edge_weight to the column to use, or data.edge_attr = None "
                "to ignore the edge features."
            )
    return weight, weight_name


def _pyg_labels(data, n_nodes):
    """``data.y`` as a numpy array with one row per node, or ``None`` when absent."""
    y = getattr(data, "y", None)
    if y is not None:
        y = _numpy(y, "data.y")
        if y.ndim == 0 or y.shape[0] != n_nodes:
            raise ValueError(f"'data.y' must have one row per node ({n_nodes}); got shape "
                             f"{y.shape}. from_pyg reads node-level graphs.")
    return y


def _pyg_mask(data, key, n_nodes):
    """The split mask ``data.<key>`` as a numpy bool array, or ``None`` when absent."""
    mask = getattr(data, key, None)
    if mask is not None:
        mask = _numpy(mask, f"data.{key}")
        if mask.dtype != bool or mask.ndim not in (1, 2) or mask.shape[0] != n_nodes:
            raise ValueError(
                f"'data.{key}' must be a boolean mask with one row per node ({n_nodes}); "
                f"got dtype {mask.dtype}, shape {mask.shape}. An index list converts with "
                "torch.zeros(n_nodes, dtype=torch.bool).index_fill_(0, index, True)."
            )
    return mask


class _Entries:
    """The entries of a mapping read as attributes: ``data["x"]`` as ``data.x``."""

    def __init__(self, mapping):
        self._mapping = mapping

    def __getattr__(self, key):
        try:
            return self._mapping[key]
        except KeyError:
            raise AttributeError(key) from None


def from_pyg(data):
    """Node features, adjacency, labels and split masks of a PyTorch Geometric graph.

    Reads the attributes of a ``torch_geometric.data.Data`` (or of any object that has them,
    or the entries of a mapping such as ``Data.to_dict()``):
    ``x`` and ``edge_index`` (required), ``edge_weight`` or a scalar ``edge_attr`` (optional
    edge weights; ``edge_weight`` wins when both are set), ``y``, ``train_mask``, ``val_mask``
    and ``test_mask`` (optional). Tensors may live on any device; torch-geometric itself is
    not needed.

    Parameters
    ----------
    data : torch_geometric.data.Data, object with the same attributes, or mapping
        One node-level graph; a mapping (a ``dict``) holds the same names as keys.

    Returns
    -------
    graph : :class:`~sklearn.utils.Bunch`
        ``features``: (n_nodes, n_features) numpy array, or scipy CSR matrix when ``x`` is a
        sparse tensor or matrix; ``adjacency``: (n_nodes, n_nodes) scipy CSR matrix built by
        :func:`edge_index_to_adjacency` (repeated edges summed, not symmetrised: symmetric when
        the graph lists both directions of each edge, as PyG's undirected graphs do); ``y``:
        numpy array of length n_nodes, or ``None``; ``train_mask``, ``val_mask``,
        ``test_mask``: numpy bool arrays with n_nodes rows (2-D when the data set stores
        several splits), or ``None`` when absent.

    Raises
    ------
    ValueError
        An attribute is missing, has the wrong shape or dtype, or holds invalid values; the
        message names it.

    Examples
    --------
    A ``types.SimpleNamespace`` of tensors stands in for a PyG ``Data`` here; with
    torch-geometric installed, ``from_pyg(Planetoid(root, "Cora")[0])`` works the same.

    >>> from types import SimpleNamespace
    >>> import torch
    >>> from skdiff import Graph
    >>> from skdiff.datasets import from_pyg
    >>> data = SimpleNamespace(
    ...     x=torch.tensor([[1., 0.], [0., 1.], [1., 1.]]),
    ...     edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]),  # both directions
    ...     y=torch.tensor([0, 1, 0]),
    ...     train_mask=torch.tensor([True, True, False]))
    >>> b = from_pyg(data)
    >>> b.adjacency.toarray()
    array([[0., 1., 0.],
           [1., 0., 1.],
           [0., 1., 0.]], dtype=float32)
    >>> b.y, b.train_mask, b.test_mask is None
    (array([0, 1, 0]), array([ True,  True, False]), True)
    >>> Graph(b.features, b.adjacency)  # ready for DIFFormerClassifier
    Graph(n_nodes=3, n_features=2, n_edges=2)
    """
    if isinstance(data, Mapping):
        data = _Entries(data)
    for required in ("x", "edge_index"):
        if getattr(data, required, None) is None:
            raise ValueError(
                f"'data.{required}' is missing: from_pyg needs node features 'x' and "
                "'edge_index'. For a graph without features, set data.x to a constant column "
                "(torch.ones(n_nodes, 1)) or to one-hot node ids (torch.eye(n_nodes))."
            )
    features = _sparse_or_dense(data.x, "data.x")
    n_nodes = features.shape[0]
    declared = getattr(data, "num_nodes", None)
    if getattr(declared, "ndim", None) == 0 and hasattr(declared, "item"):
        declared = declared.item()  # a 0-d tensor or array, as Data may hold it
    if isinstance(declared, numbers.Integral) and int(declared) != n_nodes:
        raise ValueError(f"'data.num_nodes' is {declared}, but 'data.x' has {n_nodes} rows.")

    weight, weight_name = _pyg_edge_weight(data)
    adjacency = _adjacency(data.edge_index, n_nodes, weight, ("data.edge_index", weight_name))
    out = Bunch(features=features, adjacency=adjacency, y=_pyg_labels(data, n_nodes))
    for key in ("train_mask", "val_mask", "test_mask"):
        out[key] = _pyg_mask(data, key, n_nodes)
    return out
