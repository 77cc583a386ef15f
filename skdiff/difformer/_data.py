"""DIFFormer's data handling: inputs, full-batch and partitioned training sets.

In features mode the samples are the rows of ``X`` (with an optional adjacency among them);
in graph mode they are the nodes of a :class:`~skdiff.Graph` and ``X`` holds node ids. Either
way the network sees every node at once (full batch) or random partitions of them with their
induced sub-graphs (large N), and the targets travel as ``{"y": values, "w": row weights}``
over *all* nodes, with weight 0 on the nodes whose label is not used by this dataset.

Large inputs stay as given: :class:`GraphInputs` keeps the validated features (a float32
array or ``numpy.memmap`` is not copied) and the scipy adjacency, and builds tensors only for
what a step needs. A partition's rows are gathered, scaled and turned into a tensor when the
step runs, and its normalised sub-adjacency is cut from the CSR rows of its nodes, so no
whole-graph tensor (edge list, normalised adjacency, scaled features) exists in partitioned
training or in chunked inductive prediction.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch
from skorch.callbacks import Callback
from torch.utils.data import Dataset

from ..nn.diffusion_attention import normalize_qk, simple_attention_from_summary
from ..nn.flow_attention import _autocast_off
from ..nn.sparse import SparseRows

__all__ = [
    "FeatureScaling",
    "FullBatch",
    "GraphInputs",
    "Partitions",
    "Reshuffle",
    "WeightsStamp",
    "degree_scale",
    "graph_rows",
    "normalized_block",
    "rows_fingerprint",
    "split_nodes",
    "streamed_forward",
]

#: Elements per chunk of the features' statistics (float64 temporaries of 32 MiB).
_STAT_CHUNK = 1 << 22


def _row_chunks(F):
    """Row slices of ``F`` covering it in chunks of about ``_STAT_CHUNK`` elements."""
    step = max(1, _STAT_CHUNK // max(1, F.shape[1]))
    return (slice(i, i + step) for i in range(0, F.shape[0], step))


def _column_scale(F):
    """Mean and scale of the columns of dense ``F``, as :func:`skdiff._checks.fit_scale`.

    Computed in float64 over row chunks, so the temporaries stay small whatever the size of
    ``F`` (which may be a memory map): one pass for the columns' largest magnitude ``m``,
    one for the mean and mean magnitude of ``F / m`` and one for the variance around that
    mean. A column constant relative to its own magnitude gets scale 1 (``fit_scale``'s
    rule).
    """
    n = F.shape[0]
    m = np.zeros(F.shape[1])
    for rows in _row_chunks(F):
        m = np.maximum(m, np.abs(F[rows]).max(axis=0))
    m = np.where(np.isfinite(m) & (m > 0), m, 1.0)
    total, magnitude = np.zeros(F.shape[1]), np.zeros(F.shape[1])
    for rows in _row_chunks(F):
        u = F[rows] / m
        total += u.sum(axis=0)
        magnitude += np.abs(u).sum(axis=0)
    mean_u = total / n
    squares = np.zeros(F.shape[1])
    for rows in _row_chunks(F):
        squares += ((F[rows] / m - mean_u) ** 2).sum(axis=0)
    std, mean, typical = np.sqrt(squares / n) * m, mean_u * m, magnitude / n * m
    constant = (std <= 1e-12 * (np.abs(mean) + typical)) | (std == 0)
    return mean, np.where(constant, 1.0, std)


#: ``feature_scaling="auto"`` row-normalises sparse non-negative features only when the
#: largest values of their non-empty columns lie within this factor of each other (word
#: counts, indicators, frequencies); a column in another unit would otherwise weigh in
#: every row's norm by its unit.
ROW_SCALE_RATIO = 1000.0


class FeatureScaling:
    """The feature preprocessing of the DIFFormer estimators, fitted in ``fit``.

    ``"row"`` divides every row by its L1 norm (the row-normalised bag-of-words features of
    the paper's citation-graph experiments); ``"standard"`` centres every column and divides
    it by its standard deviation (columns of a sparse matrix are only divided, which keeps
    them sparse); ``None`` leaves the features as given; ``"auto"`` is ``"row"`` for
    non-negative features that are sparse (a scipy matrix, or 90 % zeros or more) and whose
    columns share one scale (their largest values within a factor of
    :data:`ROW_SCALE_RATIO`: counts, indicators or frequencies of bag-of-words), and
    ``"standard"`` otherwise. ``"standard"`` makes the model independent of every column's
    unit; ``"row"`` of a unit shared by all columns (counts or frequencies, long or short
    documents), which is why columns in different units (one-hot indicators beside an
    income) get ``"standard"``. Statistics are computed in float64, over row chunks; the
    transform applies to any subset of rows, so large features are scaled batch by batch.
    """

    def __init__(self, how):
        self.how = how

    @staticmethod
    def _auto(F):
        """``"row"`` for sparse non-negative features of one scale, else ``"standard"``."""
        if sp.issparse(F):
            if not (F.data >= 0).all():
                return "standard"
            largest = np.asarray(sp.csr_matrix(F).max(axis=0).todense()).ravel()
        else:
            sparse = np.count_nonzero(F) <= 0.1 * F.size
            if not (sparse and F.size and F.min() >= 0):
                return "standard"
            largest = F.max(axis=0)
        largest = largest[largest > 0]
        one_scale = not largest.size or largest.max() <= ROW_SCALE_RATIO * largest.min()
        return "row" if one_scale else "standard"

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
                self.mean_, self.scale_ = _column_scale(F)
        return self

    def transform(self, F):
        """The scaled features, float32 (CSR stays CSR)."""
        if self.how_ == "row":
            from sklearn.preprocessing import normalize

            F = normalize(F.astype(np.float64), norm="l1")
        elif self.how_ == "standard":
            # the transform is the one fitted, whatever the format of F: fitted on a sparse
            # matrix the columns are only divided; fitted on dense features they are centred
            # too (a sparse F is then made dense, as centring would make it anyway)
            if self.mean_ is None:
                F = (sp.csr_matrix(F, dtype=np.float64) @ sp.diags(1.0 / self.scale_)
                     if sp.issparse(F) else np.asarray(F, dtype=np.float64) / self.scale_)
            else:
                F = F.toarray() if sp.issparse(F) else F
                F = (np.asarray(F, dtype=np.float64) - self.mean_) / self.scale_
        return sp.csr_matrix(F, dtype=np.float32) if sp.issparse(F) else \
            np.asarray(F, dtype=np.float32)


def _feature_tensor(F, device):
    """Scaled features (dense array or CSR) -> a dense float32 tensor, or
    :class:`~skdiff.nn.SparseRows` (CSR and its transpose: the network's first layer
    and its weight gradient then run on CSR kernels, many times faster than on COO)."""
    if sp.issparse(F):
        return SparseRows.from_scipy(sp.csr_matrix(F, dtype=np.float32), device)
    return torch.as_tensor(np.ascontiguousarray(F, dtype=np.float32)).to(device)


def _induced_block(adjacency, nodes):
    """(rows, cols, weights) of the sub-graph induced by sorted ``nodes``, relabelled.

    Only the CSR rows of ``nodes`` are read (O(their edges)): the columns are relabelled by
    a binary search among the sorted nodes, and the entries whose column is not a node of
    the block are dropped.
    """
    indptr, indices = adjacency.indptr, adjacency.indices
    starts, counts = indptr[nodes], indptr[nodes + 1] - indptr[nodes]
    total = int(counts.sum())
    # positions of the rows' entries: consecutive ranges starts[i] .. starts[i] + counts[i]
    offsets = np.cumsum(counts) - counts
    pos = np.repeat(starts - offsets, counts) + np.arange(total, dtype=starts.dtype)
    cols = indices[pos]
    local = np.searchsorted(nodes, cols)
    keep = nodes[np.minimum(local, nodes.size - 1)] == cols
    rows = np.repeat(np.arange(nodes.size), counts)
    return rows[keep], local[keep], adjacency.data[pos[keep]]


def _gcn_operator(rows, cols, w, dinv_rows, dinv_cols, k, n_cols, loops, device):
    r"""Sparse CSR (k, n_cols) tensor of :math:`\hat G` rows: entries ``dinv_rows[r] w
    dinv_cols[c]`` of the edges (rows sorted, self loops dropped) and a unit self loop
    ``dinv_rows[r]^2`` of row ``r`` at column ``loops[r]``."""
    off = cols != loops[rows]
    rows, cols, w = rows[off], cols[off], w[off].astype(np.float64)
    # every row's entries are followed by its self loop (rows are sorted already)
    indptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=k) + 1, out=indptr[1:])
    diag = indptr[1:] - 1
    other = np.ones(indptr[-1], dtype=bool)
    other[diag] = False
    out_cols = np.empty(indptr[-1], dtype=np.int64)
    out_vals = np.empty(indptr[-1], dtype=np.float32)
    out_cols[diag], out_vals[diag] = loops, dinv_rows * dinv_rows
    out_cols[other], out_vals[other] = cols, dinv_rows[rows] * w * dinv_cols[cols]
    block = sp.csr_matrix((out_vals, out_cols, indptr), shape=(k, n_cols))
    block.sort_indices()
    with warnings.catch_warnings():  # "sparse CSR support is in beta": used in core ops only
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            torch.as_tensor(block.indptr, dtype=torch.long),
            torch.as_tensor(block.indices, dtype=torch.long),
            torch.as_tensor(block.data), (k, n_cols), check_invariants=False).to(device)


def normalized_block(adjacency, nodes, device="cpu"):
    r"""The GCN operator :math:`\hat D^{-1/2}(A + I)\hat D^{-1/2}` of an induced sub-graph.

    Same matrix as :func:`skdiff.nn.graph.normalized_adjacency` of the sub-graph's edges
    (self loops replaced by unit ones; ``adjacency`` is already symmetric), computed from
    scipy's CSR arrays: only the rows of ``nodes`` are read.

    Parameters
    ----------
    adjacency : scipy CSR matrix of shape (n, n)
        Validated symmetric non-negative adjacency.
    nodes : ndarray of int of shape (k,), sorted
        The block's nodes; node ``nodes[i]`` becomes row ``i``.
    device : str or torch.device, default="cpu"

    Returns
    -------
    Tensor
        Sparse CSR (k, k), float32, int64 indices.
    """
    k = nodes.size
    rows, cols, w = _induced_block(adjacency, nodes)
    off = rows != cols
    dinv = 1.0 / np.sqrt(1.0 + np.bincount(rows[off], weights=w[off], minlength=k))
    return _gcn_operator(rows, cols, w, dinv, dinv, k, k, np.arange(k), device)


def graph_rows(adjacency, dinv, start, stop, device="cpu"):
    r"""Rows ``start:stop`` of the whole graph's :math:`\hat G` as a sparse CSR tensor.

    ``dinv`` holds :math:`\hat D^{-1/2}` of every node (see :func:`degree_scale`); the
    block is (stop - start, n), so ``graph_rows(...) @ V`` is :math:`(\hat G V)` of those
    rows for the values V of all nodes.
    """
    sub = adjacency[start:stop]
    k = sub.shape[0]
    rows = np.repeat(np.arange(k), np.diff(sub.indptr))
    return _gcn_operator(rows, sub.indices, sub.data, dinv[start:stop], dinv, k,
                         adjacency.shape[0], np.arange(start, start + k), device)


def degree_scale(adjacency):
    r""":math:`\hat D^{-1/2}` of every node: ``1 / sqrt(1 + its weights but its self loop)``."""
    sums = np.asarray(adjacency.sum(axis=1), dtype=np.float64).ravel()
    return 1.0 / np.sqrt(1.0 + sums - adjacency.diagonal())


#: Rows of ``X`` that :func:`rows_fingerprint` reads (evenly spaced).
_FINGERPRINT_ROWS = 256


def rows_fingerprint(X):
    """A cheap key of the rows of a feature matrix (array, memory map or CSR): its shape and
    a hash of at most ``_FINGERPRINT_ROWS`` evenly spaced rows. Equal for the same data;
    two different matrices of one shape share it only if those rows agree."""
    n = X.shape[0]
    idx = np.unique(np.linspace(0, n - 1, min(n, _FINGERPRINT_ROWS)).astype(np.intp))
    sub = X[idx]
    sub = sub.toarray() if sp.issparse(sub) else np.asarray(sub)
    digest = hashlib.sha1(np.ascontiguousarray(sub, dtype=np.float64).tobytes()).hexdigest()
    return tuple(X.shape), digest


def adjacency_fingerprint(A):
    """A key of a checked adjacency (float CSR): its shape and a hash of all its entries
    (their positions and weights, in canonical order). Equal exactly when the two matrices
    are; it reads every stored entry, O(nnz)."""
    if not A.has_canonical_format:  # sorted, without duplicates: one layout per matrix
        A = A.copy()
        A.sum_duplicates()
    h = hashlib.sha1(np.asarray(A.shape, dtype=np.int64).tobytes())
    for part, dtype in ((A.indptr, np.int64), (A.indices, np.int64), (A.data, np.float64)):
        h.update(np.ascontiguousarray(part, dtype=dtype).tobytes())
    return h.hexdigest()


class WeightsStamp:
    """Which weights of a network the fitted caches were computed with.

    :meth:`matches` tells whether the network still holds them. Its quick test: the
    parameters and buffers are the same tensor objects, at the same memory, with the same
    version counters (torch bumps a tensor's version on every in-place change, such as an
    optimiser step or the copy of ``load_state_dict``, the way skorch's ``load_params``
    restores a file). Where that fails (a pickled or copied network, a restored one), a
    SHA-1 of the names, dtypes, shapes and bytes of the ``state_dict`` decides, and a match
    renews the quick test. A pickle keeps the checksum only.
    """

    _seen = None

    def __init__(self, module):
        self.digest = self._digest(module)
        self._seen = self._versions(module)

    @classmethod
    def _tensors(cls, module, out=None):
        # the module's own dictionaries, walked directly: several times faster than
        # parameters() and buffers(), and this runs on every prediction
        out = [] if out is None else out
        out.extend(t for t in module._parameters.values() if t is not None)
        out.extend(t for t in module._buffers.values() if t is not None)
        for child in module._modules.values():
            if child is not None:
                cls._tensors(child, out)
        return out

    @classmethod
    def _versions(cls, module):
        tensors = cls._tensors(module)
        return tensors, [(t._version, t.data_ptr()) for t in tensors]

    @staticmethod
    def _digest(module):
        h = hashlib.sha1()
        for name, t in module.state_dict().items():
            if not isinstance(t, torch.Tensor):
                continue
            t = t.detach().cpu().contiguous().reshape(-1)
            h.update(f"{name}:{t.dtype}:{t.numel()};".encode())
            h.update(t.view(torch.uint8).numpy().tobytes())
        return h.hexdigest()

    def matches(self, module):
        """Whether ``module`` holds the stamped weights."""
        if self._seen is not None:
            seen, versions = self._seen
            tensors = self._tensors(module)
            if len(tensors) == len(seen) and all(
                    t is s and t._version == v and t.data_ptr() == ptr
                    for t, s, (v, ptr) in zip(tensors, seen, versions)):
                return True
        if self._digest(module) != self.digest:
            return False
        self._seen = self._versions(module)
        return True

    def __getstate__(self):
        return {"digest": self.digest}


@dataclass
class GraphInputs:
    """The network's view of a set of samples, built on demand.

    ``features`` (n, f) are the validated, unscaled features (array, memory map or CSR),
    ``scaling`` the fitted :class:`FeatureScaling`, ``adjacency`` the validated scipy CSR
    adjacency or ``None``; ``ids`` the positions of the rows of ``X`` among the n samples
    (``None`` in features mode, where they are the samples themselves). ``x`` and ``adj``,
    the tensors of all n samples, are built on first use; :meth:`take` and :meth:`rows`
    build those of a block of rows only.
    """

    features: object
    scaling: FeatureScaling | None = None
    adjacency: sp.csr_matrix | None = None
    device: str = "cpu"
    ids: np.ndarray | None = None
    _tensors: dict = field(default_factory=dict, repr=False)

    @property
    def n(self):
        return self.features.shape[0]

    @property
    def n_features(self):
        return self.features.shape[1]

    @property
    def has_graph(self):
        return self.adjacency is not None

    @property
    def row_ids(self):
        """The positions of the rows of ``X`` among the n samples: ``ids``, or every sample
        in features mode."""
        return np.arange(self.n) if self.ids is None else self.ids

    def _scaled(self, F):
        return F if self.scaling is None else self.scaling.transform(F)

    @property
    def x(self):
        """Scaled features of all samples, a dense tensor or
        :class:`~skdiff.nn.SparseRows` on ``device``."""
        if "x" not in self._tensors:
            self._tensors["x"] = _feature_tensor(self._scaled(self.features), self.device)
        return self._tensors["x"]

    @property
    def adj(self):
        """Normalised adjacency of all samples (sparse CSR on ``device``) or ``None``."""
        if self.adjacency is None:
            return None
        if "adj" not in self._tensors:
            self._tensors["adj"] = graph_rows(self.adjacency, degree_scale(self.adjacency),
                                              0, self.n, self.device)
        return self._tensors["adj"]

    def take(self, nodes):
        """``{"x", "adj"}`` of the block of sorted ``nodes``, with its induced sub-graph."""
        item = {"x": _feature_tensor(self._scaled(self.features[nodes]), self.device)}
        if self.adjacency is not None:
            item["adj"] = normalized_block(self.adjacency, nodes, self.device)
        return item

    def scaled_features(self, nodes=None):
        """Scaled features of all samples (or of the samples ``nodes``), float32 (CSR stays
        CSR), as the network reads them."""
        return self._scaled(self.features if nodes is None else self.features[nodes])

    def rows(self, start, stop):
        """Scaled features of rows ``start:stop`` as a tensor (dense or sparse)."""
        return _feature_tensor(self._scaled(self.features[start:stop]), self.device)


def split_nodes(n, batch_size, rng, multiple=1):
    """A random partition of ``range(n)`` into blocks of at most ``batch_size`` nodes.

    The number of blocks is ``ceil(n / batch_size)`` rounded up to a multiple of
    ``multiple`` (the processes of a distributed fit, so each gets as many); their sizes
    differ by at most one. Each block is sorted (sequential reads of its features and CSR
    rows). ``rng`` is a :class:`numpy.random.Generator`.
    """
    n_blocks = math.ceil(math.ceil(n / batch_size) / multiple) * multiple
    n_blocks = max(1, min(n_blocks, n))
    return [np.sort(b) for b in np.array_split(rng.permutation(n), n_blocks)]


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
    """A partition of the nodes into blocks; item i = block i with its induced sub-graph.

    With ``reshuffle=True`` the partition is redrawn by :class:`Reshuffle` at the start of
    every epoch (paper Sec. 5, the official large-graph training); otherwise it is fixed
    (evaluation). The partition comes from the dataset's own generator seeded by ``seed``,
    so it does not depend on how many random numbers training draws, and processes of a
    distributed fit that share the seed share the partition. Items are whole batches, as for
    :class:`FullBatch`; they are built when requested.
    """

    def __init__(self, inputs, target, batch_size, seed, *, reshuffle=True, multiple=1):
        self.inputs, self.target, self.batch_size = inputs, target, batch_size
        self.multiple, self.shuffles = multiple, reshuffle
        self.rng = np.random.default_rng(seed)
        self.reshuffle(force=True)

    def reshuffle(self, force=False):
        if force or self.shuffles:
            self.blocks = split_nodes(self.inputs.n, self.batch_size, self.rng, self.multiple)

    def __len__(self):
        return len(self.blocks)

    def __getitem__(self, i):
        nodes = self.blocks[i]
        index = torch.as_tensor(nodes, device=self.inputs.device)
        return self.inputs.take(nodes), {k: v.index_select(0, index)
                                         for k, v in self.target.items()}


class Reshuffle(Callback):
    """Redraw the partition of a :class:`Partitions` dataset at every epoch (no-op otherwise)."""

    def __init__(self, dataset=None):
        self.dataset = dataset

    def on_epoch_begin(self, net, **kwargs):
        if isinstance(self.dataset, Partitions):
            self.dataset.reshuffle()


def streams(module):
    """Whether :func:`streamed_forward` computes ``module``'s forward: the simple kernel
    attending to all rows (its summaries are sums, accumulated chunk by chunk)."""
    return all(conv.kernel == "simple" and conv.scope == "all" for conv in module.convs)


class _SummarySums:
    """Sums over row chunks of what a simple-kernel layer's inductive summary holds.

    With ``qk_norm="global"`` the keys are normalised by the Frobenius norm of *all* keys,
    known only at the end: the sums are of raw keys and queries' squares, and
    :meth:`summary` divides by the norms (the same normalisation as
    :meth:`~skdiff.nn.diffusion_attention.DiffusionAttention.summary` over all rows at once).
    Each chunk's sums are taken in the states' dtype and accumulated in float64.
    """

    def __init__(self, conv):
        self.conv, self.sums = conv, {}

    def add(self, z):
        q, k, v = self.conv.qkv(z)
        if self.conv.qk_norm != "global":
            k = normalize_qk(k, self.conv.qk_norm)
        parts = {"kv": torch.einsum("lhm,lhd->hmd", k, v), "k_sum": k.sum(0),
                 "v_sum": v.sum(0), "n": torch.tensor(float(k.shape[0]), dtype=k.dtype),
                 "q2": q.square().sum(), "k2": k.square().sum()}
        for key, value in parts.items():
            value = value.double().cpu()
            self.sums[key] = self.sums[key] + value if key in self.sums else value

    def summary(self, dtype, device):
        s = dict(self.sums)
        q2, k2 = s.pop("q2"), s.pop("k2")
        if self.conv.qk_norm == "global":
            knorm = k2.sqrt().clamp_min(1e-12)
            s["kv"], s["k_sum"] = s["kv"] / knorm, s["k_sum"] / knorm
        s["q_scale"] = q2.sqrt()
        return {key: value.to(dtype=dtype, device=device) for key, value in s.items()}


def _propagated(conv, G, Z, z):
    r"""The graph term (c, h, d) of a chunk of rows whose states are ``z``: rows of
    :math:`\hat G V` with ``G`` the rows' block of :math:`\hat G` and V the values of all
    rows (``Z`` itself, or its value projection, applied after propagating: G (Z W + b) =
    (G Z) W + (G 1) b)."""
    # the sparse products run in G's dtype with autocast off, as the full forward's
    # propagate does (sparse kernels have no bfloat16 version on the CPU)
    with _autocast_off(Z.device.type):
        gz = (G @ Z.to(G.dtype)).to(z.dtype)  # (c, hidden)
        if conv.Wv is not None:
            ones = torch.ones(Z.shape[0], 1, dtype=G.dtype, device=Z.device)
            row_sums = (G @ ones).to(z.dtype)
    c, h = z.shape[0], conv.n_heads
    if conv.Wv is None:
        return gz.unsqueeze(1).expand(c, h, gz.shape[1])
    out = gz @ conv.Wv.weight.t() + row_sums * conv.Wv.bias
    return out.reshape(c, h, -1)


def streamed_forward(module, inputs, chunk, summaries=False):
    r"""``module(inputs.x, inputs.adj)`` computed layer by layer over chunks of rows.

    Exact for the simple kernel over all rows (:func:`streams`): every layer's attention
    needs only sums over all rows, accumulated over the chunks in a first pass (they are
    also the layer's inductive summary), and its graph term only the rows of
    :math:`\hat G` of a chunk times the previous layer's state of all rows. Memory: two
    (n, hidden) states plus one chunk, instead of the forward's many (n, hidden)
    intermediates, a whole-graph edge list and normalised adjacency, and the scaled
    features of all rows. Runs under ``torch.no_grad`` (prediction; dropout follows the
    module's mode, chunk by chunk).

    Returns
    -------
    logits : Tensor of shape (n, out_dim)
    summaries : list of dict
        Per-layer inductive summaries (``[]`` unless ``summaries``), as
        :meth:`skdiff.nn.difformer.DIFFormer.summaries` gives.
    """
    n = inputs.n
    spans = [(i, min(i + chunk, n)) for i in range(0, n, chunk)]  # chunks, not samples
    first = module._input(inputs.rows(*spans[0]))
    Z = torch.empty((n, first.shape[1]), dtype=first.dtype, device=first.device)
    Z[:spans[0][1]] = first
    for a, b in spans[1:]:
        Z[a:b] = module._input(inputs.rows(a, b))
    dinv = degree_scale(inputs.adjacency) if inputs.has_graph else None
    out_summaries = []
    for i, conv in enumerate(module.convs):
        sums = _SummarySums(conv)
        for a, b in spans:
            sums.add(Z[a:b])
        summary = sums.summary(Z.dtype, Z.device)
        out_summaries.append(summary)
        Z_next = torch.empty_like(Z)
        for a, b in spans:
            z = Z[a:b]
            q, _, _ = conv.qkv(z)
            qn = normalize_qk(q, conv.qk_norm, scale=summary["q_scale"])
            attn = simple_attention_from_summary(qn, summary, conv.eps)
            graph = None if dinv is None else _propagated(
                conv, graph_rows(inputs.adjacency, dinv, a, b, Z.device), Z, z)
            Z_next[a:b] = module._step(i, z, conv._combine(attn, graph))
        Z = Z_next
    logits = torch.cat([module.head(Z[a:b]) + module.skip_outputs(inputs.rows(a, b))
                        for a, b in spans])
    return logits, (out_summaries if summaries else [])
