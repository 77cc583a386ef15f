"""DIFFormer's data handling: inputs as tensors, full-batch and partitioned training sets.

In features mode the samples are the rows of ``X`` (with an optional adjacency among them);
in graph mode they are the nodes of a :class:`~skdiff.Graph` and ``X`` holds node ids. Either
way the network sees every node at once (full batch) or random partitions of them with their
induced sub-graphs (large N), and the targets travel as ``{"y": values, "w": row weights}``
over *all* nodes, with weight 0 on the nodes whose label is not used by this dataset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from skorch.callbacks import Callback
from torch.utils.data import Dataset

from ..nn.graph import edge_index_from_scipy, induced_subgraph, normalized_adjacency

__all__ = ["FullBatch", "GraphInputs", "Partitions", "Reshuffle", "FeatureScaling"]


class FeatureScaling:
    """The feature preprocessing of the DIFFormer estimators, fitted in ``fit``.

    ``"row"`` divides every row by its L1 norm (the row-normalised bag-of-words features of
    the paper's citation-graph experiments); ``"standard"`` centres every column and divides
    it by its standard deviation (columns of a sparse matrix are only divided, which keeps
    them sparse); ``None`` leaves the features as given; ``"auto"`` is ``"row"`` for
    non-negative features that are sparse (a scipy matrix, or 90 % zeros or more: counts or
    bag-of-words) and ``"standard"`` otherwise. Both choices make the model independent of
    the features' units. Statistics are computed in float64.
    """

    def __init__(self, how):
        self.how = how

    @staticmethod
    def _auto(F):
        """``"row"`` for sparse non-negative features, else ``"standard"``."""
        if sp.issparse(F):
            return "row" if (F.data >= 0).all() else "standard"
        sparse = np.count_nonzero(F) <= 0.1 * F.size
        return "row" if sparse and (F >= 0).all() else "standard"

    def fit(self, F):
        how = self._auto(F) if self.how == "auto" else self.how
        self.how_ = how
        self.mean_ = self.scale_ = None
        if how == "standard":
            if sp.issparse(F):
                from sklearn.utils.sparsefuncs import mean_variance_axis

                _, var = mean_variance_axis(sp.csr_matrix(F, dtype=np.float64), axis=0)
                std = np.sqrt(var)
                self.scale_ = np.where(std > 0, std, 1.0)
            else:
                from .._checks import fit_scale

                self.mean_, self.scale_ = fit_scale(F, name="X")
        return self

    def transform(self, F):
        """The scaled features, float32 (CSR stays CSR)."""
        if self.how_ == "row":
            from sklearn.preprocessing import normalize

            F = normalize(F.astype(np.float64), norm="l1")
        elif self.how_ == "standard":
            if sp.issparse(F):
                F = sp.csr_matrix(F, dtype=np.float64) @ sp.diags(1.0 / self.scale_)
            else:
                F = (np.asarray(F, dtype=np.float64) - self.mean_) / self.scale_
        return sp.csr_matrix(F, dtype=np.float32) if sp.issparse(F) else \
            np.asarray(F, dtype=np.float32)


@dataclass
class GraphInputs:
    """The network's view of a set of samples.

    ``x`` (n, f) dense or sparse features on the device; ``edges`` the (edge_index,
    edge_weight) pair and ``adj`` the normalised sparse adjacency, or ``None`` without a
    graph; ``ids`` the positions of the rows of ``X`` among the n samples (``None`` in
    features mode, where they are the samples themselves).
    """

    x: torch.Tensor
    edges: tuple | None = None
    adj: torch.Tensor | None = None
    ids: np.ndarray | None = None

    @property
    def n(self):
        return self.x.shape[0]

    @classmethod
    def build(cls, features, adjacency, device, ids=None):
        """Tensors of validated ``features`` (array or CSR) and ``adjacency`` (CSR or None)."""
        if sp.issparse(features):
            coo = sp.csr_matrix(features, dtype=np.float32).tocoo()
            idx = torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.long)
            x = torch.sparse_coo_tensor(idx, torch.as_tensor(coo.data), coo.shape,
                                        check_invariants=False).coalesce().to(device)
        else:
            x = torch.tensor(np.asarray(features, dtype=np.float32), device=device)
        if adjacency is None:
            return cls(x, ids=ids)
        ei, ew = edge_index_from_scipy(adjacency)
        ei, ew = ei.to(device), ew.to(device)
        adj = normalized_adjacency(ei, ew, adjacency.shape[0], symmetrize=False, layout="csr")
        return cls(x, (ei, ew), adj, ids)

    def rows(self, start, stop):
        """Features of rows ``start:stop`` (dense or sparse)."""
        if not self.x.is_sparse:
            return self.x[start:stop]
        stop = min(stop, self.n)
        return self.x.index_select(0, torch.arange(start, stop, device=self.x.device))


class FullBatch(Dataset):
    """A single item holding every node (full-batch training, the official small-graph mode).

    Its items are whole batches: iterate with ``batch_size=1`` and
    :func:`skdiff._engine.first_item` as the collate function.
    """

    def __init__(self, inputs, target):
        X = {"x": inputs.x} if inputs.adj is None else {"x": inputs.x, "adj": inputs.adj}
        self.item = (X, target)

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return self.item


class Partitions(Dataset):
    """Random partition of the nodes into batches; item i = batch i with its induced sub-graph.

    The partition is redrawn by :class:`Reshuffle` at the start of every epoch (paper Sec. 5,
    the official large-graph training). Items are whole batches, as for :class:`FullBatch`.
    """

    def __init__(self, inputs, target, batch_size):
        self.inputs, self.target, self.batch_size = inputs, target, batch_size
        self.n = inputs.n
        self.reshuffle()

    def reshuffle(self):
        self.perm = torch.randperm(self.n, device=self.inputs.x.device)

    def __len__(self):
        return math.ceil(self.n / self.batch_size)

    def __getitem__(self, i):
        nodes = self.perm[i * self.batch_size:(i + 1) * self.batch_size]
        item = {"x": self.inputs.x.index_select(0, nodes)}
        if self.inputs.edges is not None:
            ei, ew = induced_subgraph(*self.inputs.edges, nodes, self.n)
            item["adj"] = normalized_adjacency(ei, ew, nodes.shape[0], symmetrize=False,
                                               layout="csr")
        return item, {k: v.index_select(0, nodes) for k, v in self.target.items()}


class Reshuffle(Callback):
    """Redraw the partition of a :class:`Partitions` dataset at every epoch (no-op otherwise)."""

    def __init__(self, dataset=None):
        self.dataset = dataset

    def on_epoch_begin(self, net, **kwargs):
        if isinstance(self.dataset, Partitions):
            self.dataset.reshuffle()
