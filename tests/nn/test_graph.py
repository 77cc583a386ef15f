"""Graph normalisation, propagation and induced sub-graphs against dense references."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skdiff.nn.graph import (
    edge_index_from_scipy,
    induced_subgraph,
    normalized_adjacency,
    propagate,
)


def dense_gcn_norm(A):
    """Slow reference: D^-1/2 (max(A, A^T) with self loops replaced by I) D^-1/2."""
    A = np.maximum(A, A.T).astype(np.float64)
    np.fill_diagonal(A, 0.0)
    A = A + np.eye(A.shape[0])
    d = A.sum(1)
    return A / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]


@pytest.fixture
def weighted_graph():
    rng = np.random.default_rng(0)
    A = (rng.random((30, 30)) < 0.1) * rng.uniform(0.5, 2.0, (30, 30))  # asymmetric, weighted
    A[3, 3] = 5.0  # a self loop that must be replaced by a unit one
    A[7, :] = 0.0
    A[:, 7] = 0.0  # an isolated node
    return A


def test_normalized_adjacency_equals_dense(weighted_graph):
    A = weighted_graph
    ei, ew = edge_index_from_scipy(sp.csr_matrix(A))
    G = normalized_adjacency(ei, ew.double(), A.shape[0]).to_dense().numpy()
    np.testing.assert_allclose(G, dense_gcn_norm(A), rtol=1e-6, atol=1e-7)  # weights pass float32
    assert G[7, 7] == 1.0 and G[7].sum() == 1.0  # isolated node keeps its own value


def test_unweighted_and_already_symmetric():
    A = np.array([[0, 1, 1], [1, 0, 0], [1, 0, 0]], dtype=float)
    ei, _ = edge_index_from_scipy(sp.csr_matrix(A))
    G = normalized_adjacency(ei, None, 3, symmetrize=False).to_dense().double().numpy()
    np.testing.assert_allclose(G, dense_gcn_norm(A), rtol=1e-6)


def test_heavy_weights_whose_degrees_pass_the_float32_range_normalise_as_light_ones():
    # every weight is a float32 (3e38), but a node's degree (their sum) is not: the degrees
    # are summed in float64, so the graph normalises as the same graph with unit weights
    # (it came out as all zeros, the edges lost without a word)
    A = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], dtype=float)
    ei, _ = edge_index_from_scipy(sp.csr_matrix(A))
    G = normalized_adjacency(ei, torch.full((ei.shape[1],), 3e38), 3).to_dense()
    assert G.dtype == torch.float32
    np.testing.assert_allclose(G.double().numpy(), dense_gcn_norm(A * 3e38), rtol=1e-6)
    np.testing.assert_allclose(G.sum(1).numpy(), 1.0, rtol=1e-6)


def test_empty_graph_is_identity():
    ei = torch.zeros((2, 0), dtype=torch.long)
    G = normalized_adjacency(ei, None, 4).to_dense()
    assert torch.equal(G, torch.eye(4))


def test_propagate_matches_dense(weighted_graph):
    A = weighted_graph
    ei, ew = edge_index_from_scipy(sp.csr_matrix(A))
    G = normalized_adjacency(ei, ew.double(), A.shape[0])
    x = torch.randn(30, 2, 5, dtype=torch.float64)
    out = propagate(G, x)
    ref = torch.einsum("ij,jhd->ihd", torch.as_tensor(dense_gcn_norm(A)), x)
    assert out.shape == x.shape
    assert torch.allclose(out, ref)


def test_induced_subgraph_matches_dense_slice(weighted_graph):
    A = np.maximum(weighted_graph, weighted_graph.T)
    ei, ew = edge_index_from_scipy(sp.csr_matrix(A))
    nodes = torch.tensor([12, 3, 7, 25, 0, 18])
    sub, w = induced_subgraph(ei, ew, nodes, 30)
    dense = torch.zeros(6, 6).index_put_((sub[0], sub[1]), w, accumulate=True)
    ref = A[np.ix_(nodes.numpy(), nodes.numpy())]
    np.testing.assert_allclose(dense.numpy(), ref, rtol=1e-6)
