r"""Graph utilities: symmetric normalisation, sparse propagation, induced sub-graphs.

The graph term of DIFFormer (Wu et al., ICLR 2023, Sec. 4, Eq. 9 and the official
``gcn_conv``) propagates the values with the GCN operator

.. math::

    \hat G = \hat D^{-1/2} (A + I) \hat D^{-1/2}, \qquad \hat D_{ii} = 1 + \sum_{j \ne i} A_{ij},

built after symmetrising :math:`A` (``max(A, A^T)``) and *replacing* its self loops by unit
ones (the official pipeline runs ``to_undirected``, ``remove_self_loops``, ``add_self_loops``).
A node without edges keeps :math:`\hat G_{ii} = 1`: it propagates its own value.

Graphs travel as an ``edge_index`` (2, E) long tensor of (row, col) pairs plus ``edge_weight``
(E,) so that a batch's induced sub-graph is a cheap masking step; :func:`normalized_adjacency`
turns them into a torch sparse COO matrix. Axis legend: n nodes, E edges, f features.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from .flow_attention import _autocast_off

__all__ = [
    "edge_index_from_scipy",
    "edge_index_of",
    "induced_subgraph",
    "normalized_adjacency",
    "propagate",
]


def edge_index_from_scipy(adjacency):
    """Scipy sparse (n, n) matrix -> ``(edge_index (2, E) long, edge_weight (E,) float32)``.

    No checks are made here (the estimators validate with ``skdiff._base.check_adjacency``).
    """
    coo = adjacency.tocoo()
    edge_index = torch.as_tensor(np.vstack([coo.row, coo.col]).astype(np.int64))
    edge_weight = torch.as_tensor(coo.data, dtype=torch.float32)
    return edge_index, edge_weight


def normalized_adjacency(edge_index, edge_weight, n, *, symmetrize=True, layout="coo"):
    r"""Sparse :math:`\hat D^{-1/2}(A + I)\hat D^{-1/2}` as a coalesced torch COO tensor (n, n).

    Parameters
    ----------
    edge_index : LongTensor of shape (2, E)
        Row and column of every edge; self loops are dropped and replaced by unit ones.
    edge_weight : Tensor of shape (E,) or None
        Non-negative edge weights (``None``: all ones).
    n : int
        Number of nodes.
    symmetrize : bool, default=True
        Take ``max(A, A^T)`` first (edges are undirected).
    layout : {"coo", "csr"}, default="coo"
        CSR makes :func:`propagate` faster on large graphs, in the forward pass most.

    Returns
    -------
    Tensor
        Sparse (n, n) in ``layout``, dtype of ``edge_weight`` (float32 when ``None``).
    """
    device = edge_index.device
    if edge_weight is None:
        edge_weight = torch.ones(edge_index.shape[1], device=device)
    row, col = edge_index
    keep = row != col  # remove existing self loops; unit ones are added below
    row, col, w = row[keep], col[keep], edge_weight[keep]
    if symmetrize:
        row, col = torch.cat([row, col]), torch.cat([col, row])
        w = torch.cat([w, w])
    loop = torch.arange(n, device=device)
    row = torch.cat([row, loop])
    col = torch.cat([col, loop])
    w = torch.cat([w, torch.ones(n, dtype=w.dtype, device=device)])
    A = torch.sparse_coo_tensor(torch.stack([row, col]), w, (n, n), check_invariants=False)
    if symmetrize:
        # duplicate (i, j) pairs from the union above: keep the max as max(A, A^T) does.
        # coalesce() sums duplicates, so reduce with amax on a linear key instead.
        key = row * n + col
        uniq, inv = torch.unique(key, return_inverse=True)
        wmax = torch.zeros(uniq.shape[0], dtype=w.dtype, device=device)
        wmax = wmax.scatter_reduce(0, inv, w, reduce="amax", include_self=False)
        row, col, w = uniq // n, uniq % n, wmax
        A = torch.sparse_coo_tensor(torch.stack([row, col]), w, (n, n), check_invariants=False)
    A = A.coalesce()
    row, col = A.indices()
    w = A.values()
    # degrees in float64: heavy weights, each within float32, can sum beyond its range
    deg = torch.zeros(n, dtype=torch.float64, device=device).index_add_(0, row, w.double())
    # deg >= 1 because of the unit self loop; the clamp guards zero-weight corner cases.
    dinv = deg.clamp_min(torch.finfo(torch.float64).tiny).rsqrt()
    values = (dinv[row] * w.double() * dinv[col]).to(w.dtype)
    out = torch.sparse_coo_tensor(A.indices(), values, (n, n),
                                  check_invariants=False).coalesce()
    if layout == "csr":
        with warnings.catch_warnings():  # "sparse CSR support is in beta": used in core ops only
            warnings.simplefilter("ignore", UserWarning)
            return out.to_sparse_csr()
    return out


def edge_index_of(adj):
    """(2, E) row/column indices of a sparse COO or CSR matrix."""
    if adj.layout == torch.sparse_csr:
        crow = adj.crow_indices()
        row = torch.repeat_interleave(torch.arange(crow.shape[0] - 1, device=crow.device),
                                      crow.diff())
        return torch.stack([row, adj.col_indices()])
    return adj.indices()


def propagate(adj, x):
    r"""Sparse product :math:`\hat G X` for ``x`` of shape (n, ...) (trailing axes flattened).

    The product runs in the adjacency's dtype with ``torch.autocast`` off: sparse kernels
    have no bfloat16 version on the CPU, and a sum over a node's edges keeps float32's
    precision; the result comes back in ``x``'s dtype.
    """
    n = x.shape[0]
    with _autocast_off(x.device.type):
        out = adj @ x.reshape(n, -1).to(adj.dtype)
    return out.reshape(x.shape).to(x.dtype)


def induced_subgraph(edge_index, edge_weight, nodes, n):
    """Edges of the sub-graph induced by ``nodes``, relabelled to ``0..len(nodes)-1``.

    Parameters
    ----------
    edge_index : LongTensor (2, E)
    edge_weight : Tensor (E,) or None
    nodes : LongTensor (k,)
        Distinct node ids in ``[0, n)``; the new label of ``nodes[i]`` is ``i``.
    n : int
        Number of nodes of the whole graph.

    Returns
    -------
    edge_index : LongTensor (2, E')
    edge_weight : Tensor (E',) or None
    """
    relabel = torch.full((n,), -1, dtype=torch.long, device=edge_index.device)
    relabel[nodes] = torch.arange(nodes.shape[0], device=edge_index.device)
    row, col = relabel[edge_index[0]], relabel[edge_index[1]]
    keep = (row >= 0) & (col >= 0)
    sub = torch.stack([row[keep], col[keep]])
    return sub, (None if edge_weight is None else edge_weight[keep])
