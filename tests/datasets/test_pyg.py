from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skdiff import Graph
from skdiff.datasets import edge_index_to_adjacency, from_pyg


def _dense_reference(edge_index, n, weight=None):
    """A[src, dst] += w, one edge at a time."""
    A = np.zeros((n, n))
    w = np.ones(edge_index.shape[1]) if weight is None else weight
    for (s, d), wi in zip(edge_index.T.tolist(), w.tolist()):
        A[s, d] += wi
    return A


def _random_graph(n=30, n_edges=120, seed=0):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, n_edges), generator=g)
    ei = torch.cat([ei, ei[:, :10]], dim=1)  # 10 repeated edges
    w = torch.rand(ei.shape[1], generator=g, dtype=torch.float64)
    return ei, w


@pytest.mark.parametrize("weighted", [False, True])
def test_adjacency_matches_dense_reference(weighted):
    ei, w = _random_graph()
    A = edge_index_to_adjacency(ei, n_nodes=35, edge_weight=w if weighted else None)
    ref = _dense_reference(ei.numpy(), 35, w.numpy() if weighted else None)
    assert sp.isspmatrix_csr(A) and A.shape == (35, 35)
    assert A.dtype == (np.float64 if weighted else np.float32)
    np.testing.assert_allclose(A.toarray(), ref, rtol=1e-12)
    assert A.nnz <= ei.shape[1] - 10  # the 10 repeated edges were merged
    assert A.has_canonical_format


def test_direction_is_kept_and_both_directions_give_symmetry():
    ei = torch.tensor([[0, 1, 2], [1, 2, 0]])  # a directed 3-cycle
    A = edge_index_to_adjacency(ei)
    assert (A != A.T).nnz == 6
    both = edge_index_to_adjacency(torch.cat([ei, ei.flip(0)], dim=1))
    assert (both != both.T).nnz == 0 and both.nnz == 6


def test_inputs_numpy_and_inferred_size():
    ei = np.array([[0, 4], [4, 0]], dtype=np.int32)
    assert edge_index_to_adjacency(ei).shape == (5, 5)
    assert edge_index_to_adjacency(ei, n_nodes=np.int64(7)).shape == (7, 7)
    assert edge_index_to_adjacency(np.zeros((2, 0), dtype=np.int64)).shape == (0, 0)
    A = edge_index_to_adjacency(ei, edge_weight=np.array([[0.0], [2]]))  # (E, 1), zero dropped
    assert A.nnz == 1 and A[4, 0] == 2.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(edge_index=torch.tensor([[0, 1], [1, 2], [2, 0]])),
     r"'edge_index' must have shape \(2, n_edges\).*got shape \(3, 2\).*transpose"),
    (dict(edge_index=torch.tensor([0, 1])), r"got shape \(2,\)"),
    (dict(edge_index=torch.tensor([[0., 1.], [1., 0.]])),
     r"'edge_index' must hold integer node ids; got dtype float32. Convert it with .long\(\)"),
    (dict(edge_index=np.array([[True], [False]])), "must hold integer node ids; got dtype bool"),
    (dict(edge_index=torch.tensor([[0, -1], [1, 0]])),
     r"'edge_index' holds the negative node id -1; node ids must lie in \[0, 2\)"),
    (dict(edge_index=torch.tensor([[0, 5], [1, 0]]), n_nodes=3),
     r"'edge_index' refers to node 5, but the graph has 3 nodes"),
    (dict(edge_index=torch.tensor([[0], [1]]), n_nodes=-1), "'n_nodes' must be a non-negative"),
    (dict(edge_index=torch.tensor([[0], [1]]), n_nodes=True), "'n_nodes' must be a non-negative"),
    (dict(edge_index=torch.tensor([[0], [1]]), n_nodes=2.0), "'n_nodes' must be a non-negative"),
    (dict(edge_index=torch.tensor([[0, 1], [1, 0]]), edge_weight=torch.ones(3)),
     r"'edge_weight' must hold one weight per edge, shape \(2,\); got shape \(3,\)"),
    (dict(edge_index=torch.tensor([[0, 1], [1, 0]]), edge_weight=torch.ones(2, 2)),
     r"got shape \(2, 2\)"),
    (dict(edge_index=torch.tensor([[0, 1], [1, 0]]), edge_weight=torch.tensor([1., np.nan])),
     "'edge_weight' holds NaN or infinite weights"),
    (dict(edge_index=torch.tensor([[0, 1], [1, 0]]), edge_weight=torch.tensor([1., -0.5])),
     "'edge_weight' holds the negative weight -0.5"),
    (dict(edge_index=torch.tensor([[0, 1], [1, 0]]), edge_weight=np.array([1j, 1])),
     "'edge_weight' must be real numbers"),
])
def test_edge_index_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        edge_index_to_adjacency(**kwargs)


def _data(**extra):
    ei, w = _random_graph(n=30)
    g = torch.Generator().manual_seed(1)
    base = dict(x=torch.randn(30, 4, generator=g), edge_index=ei,
                y=torch.randint(0, 3, (30,), generator=g),
                train_mask=torch.arange(30) < 10, val_mask=(torch.arange(30) >= 10)
                & (torch.arange(30) < 20), test_mask=torch.arange(30) >= 20)
    return SimpleNamespace(**{**base, **extra}), w


def test_from_pyg_against_dense_reference():
    data, w = _data()
    data.edge_weight = w
    b = from_pyg(data)
    assert set(b) == {"features", "adjacency", "y", "train_mask", "val_mask", "test_mask"}
    np.testing.assert_array_equal(b.features, data.x.numpy())
    np.testing.assert_allclose(b.adjacency.toarray(),
                               _dense_reference(data.edge_index.numpy(), 30, w.numpy()))
    np.testing.assert_array_equal(b.y, data.y.numpy())
    for key in ("train_mask", "val_mask", "test_mask"):
        assert b[key].dtype == bool
        np.testing.assert_array_equal(b[key], getattr(data, key).numpy())
    g = Graph(b.features, b.adjacency)
    assert g.n_nodes == 30 and g.adjacency.shape == (30, 30)


def test_from_pyg_weights_from_edge_attr_and_precedence():
    data, w = _data()
    data.edge_attr = w[:, None].float()
    ref = _dense_reference(data.edge_index.numpy(), 30, data.edge_attr[:, 0].numpy())
    np.testing.assert_allclose(from_pyg(data).adjacency.toarray(), ref, rtol=1e-6)
    data.edge_weight = torch.ones_like(w)  # edge_weight wins over edge_attr
    np.testing.assert_array_equal(from_pyg(data).adjacency.toarray(),
                                  _dense_reference(data.edge_index.numpy(), 30))


def test_from_pyg_optional_attributes_and_other_inputs():
    data, _ = _data()
    del data.y, data.train_mask, data.val_mask, data.test_mask
    b = from_pyg(data)
    assert b.y is None and b.train_mask is None and b.test_mask is None
    # sparse and bfloat16 features; numpy attributes
    dense = data.x.clone()
    dense[dense.abs() < 1] = 0
    b = from_pyg(SimpleNamespace(x=dense.to_sparse(), edge_index=data.edge_index.numpy()))
    assert sp.isspmatrix_csr(b.features)
    np.testing.assert_array_equal(b.features.toarray(), dense.numpy())
    b = from_pyg(SimpleNamespace(x=data.x.bfloat16(), edge_index=data.edge_index))
    np.testing.assert_array_equal(b.features, data.x.bfloat16().float().numpy())
    # several stored splits: 2-D masks
    masks = torch.rand(30, 5, generator=torch.Generator().manual_seed(2)) < 0.5
    b = from_pyg(SimpleNamespace(x=data.x, edge_index=data.edge_index, train_mask=masks))
    np.testing.assert_array_equal(b.train_mask, masks.numpy())


def test_from_pyg_reads_a_mapping_as_a_data_object():
    # Data.to_dict() gives a dict of the same names: read as the attributes of a Data
    data, w = _data()
    data.edge_weight = w
    entries = vars(data)
    ref, b = from_pyg(data), from_pyg(dict(entries))
    for key in ("features", "y", "train_mask", "val_mask", "test_mask"):
        np.testing.assert_array_equal(b[key], ref[key])
    assert (b.adjacency != ref.adjacency).nnz == 0 and b.adjacency.nnz > 0
    minimal = from_pyg({"x": data.x, "edge_index": data.edge_index})
    assert minimal.y is None and minimal.adjacency.sum() == 130
    with pytest.raises(ValueError, match=r"^'data.edge_index' is missing"):
        from_pyg({"x": data.x})


@pytest.mark.parametrize("edit, match", [
    (dict(x=None), r"'data.x' is missing: .*torch.ones\(n_nodes, 1\)"),
    (dict(edge_index=None), r"'data.edge_index' is missing"),
    (dict(x=torch.randn(30)), r"'data.x' must be 2-D \(n_nodes, n_features\); got shape \(30,\)"),
    (dict(x=torch.full((30, 2), float("nan"))), "'data.x' holds NaN or infinite values"),
    (dict(num_nodes=31), "'data.num_nodes' is 31, but 'data.x' has 30 rows"),
    (dict(num_nodes=torch.tensor(31)), "'data.num_nodes' is 31, but 'data.x' has 30 rows"),
    (dict(edge_attr=torch.ones(130, 3)),
     r"'data.edge_attr' has shape \(130, 3\): only one scalar per edge.*data.edge_weight"),
    (dict(edge_weight=-torch.ones(130)), "'data.edge_weight' holds the negative weight"),
    (dict(edge_index=torch.tensor([[0, 30], [1, 0]])),
     r"'data.edge_index' refers to node 30, but the graph has 30 nodes"),
    (dict(y=torch.zeros(1)), r"'data.y' must have one row per node \(30\); got shape \(1,\)"),
    (dict(train_mask=torch.arange(10)),
     r"'data.train_mask' must be a boolean mask with one row per node \(30\); got dtype int64"),
    (dict(test_mask=torch.ones(29, dtype=torch.bool)), r"'data.test_mask' .*shape \(29,\)"),
])
def test_from_pyg_validation(edit, match):
    data, _ = _data(**edit)
    with pytest.raises(ValueError, match=match):
        from_pyg(data)


def test_huge_node_count_names_n_nodes():
    with pytest.raises(MemoryError, match="1000000000000-node sparse adjacency.*check n_nodes"):
        edge_index_to_adjacency(np.array([[0], [1]]), n_nodes=10**12)
