"""DIFFormer on large inputs: sub-graph operators, the streamed forward, partitions, memory
maps and chunked feature statistics, each against a slow whole-array reference."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skdiff import DIFFormerClassifier, Graph
from skdiff._checks import fit_scale
from skdiff.datasets import make_planted_partition
from skdiff.difformer import _data
from skdiff.difformer._data import (
    FeatureScaling,
    GraphInputs,
    Partitions,
    normalized_block,
    split_nodes,
    streamed_forward,
)
from skdiff.nn.difformer import DIFFormer
from skdiff.nn.graph import edge_index_from_scipy, induced_subgraph, normalized_adjacency


@pytest.fixture(scope="module")
def weighted_graph():
    """A symmetric weighted graph with some self loops and isolated nodes."""
    n = 400
    A = sp.random(n, n, density=0.02, random_state=0, format="csr")
    A = A.maximum(A.T).tolil()
    A[np.arange(0, n, 7), np.arange(0, n, 7)] = 0.5  # self loops: replaced by unit ones
    A[:, 390:] = 0
    A[390:, :] = 0  # isolated nodes
    X = np.random.default_rng(0).normal(size=(n, 6)).astype(np.float32)
    return X, A.tocsr()


def _reference(A, nodes=None):
    ei, ew = edge_index_from_scipy(A)
    n = A.shape[0]
    if nodes is not None:
        ei, ew = induced_subgraph(ei, ew, torch.as_tensor(nodes), n)
        n = nodes.size
    return normalized_adjacency(ei, ew, n, symmetrize=False).to_dense()


def test_sub_graph_operators_equal_the_edge_list_reference(weighted_graph):
    X, A = weighted_graph
    nodes = np.sort(np.random.default_rng(1).choice(A.shape[0], 150, replace=False))
    torch.testing.assert_close(normalized_block(A, nodes).to_dense(), _reference(A, nodes),
                               atol=1e-7, rtol=1e-6)
    whole = GraphInputs(X, None, A).adj
    assert whole.layout == torch.sparse_csr
    torch.testing.assert_close(whole.to_dense(), _reference(A), atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("graph,value_projection,n_heads,qk_norm,graph_weight,skip", [
    (False, False, 1, "global", None, False), (True, False, 1, "global", None, True),
    (True, False, 3, "row", None, False), (False, True, 2, "row", None, True),
    (True, True, 3, "row", None, False), (True, True, 2, "global", 0.3, False)])
def test_streamed_forward_equals_the_forward(weighted_graph, graph, value_projection,
                                             n_heads, qk_norm, graph_weight, skip):
    X, A = weighted_graph
    torch.manual_seed(0)
    m = DIFFormer(6, 3, hidden_dim=8, n_layers=2, n_heads=n_heads, qk_norm=qk_norm,
                  value_projection=value_projection, graph_weight=graph_weight,
                  linear_skip=skip).eval()
    if skip:  # the fixed linear map of the inputs is added chunk by chunk too
        m.set_skip_(torch.randn(3, 6), torch.randn(3))
    inputs = GraphInputs(X, FeatureScaling("standard").fit(X), A if graph else None)
    with torch.no_grad():
        reference = m(inputs.x, inputs.adj)
        ref_summaries = m.summaries(inputs.x, inputs.adj)
        out, summaries = streamed_forward(m, inputs, 64, summaries=True)
    torch.testing.assert_close(out, reference, atol=2e-6, rtol=1e-5)
    for got, want in zip(summaries, ref_summaries):
        assert got.keys() == want.keys()
        for key in want:  # sums over 400 rows: float32 rounding relative to their scale
            torch.testing.assert_close(got[key], want[key], rtol=1e-5,
                                       atol=1e-5 * float(want[key].abs().max()))


def test_split_nodes_covers_every_node_once():
    parts = split_nodes(1003, 100, np.random.default_rng(0), multiple=4)
    assert len(parts) == 12  # ceil(1003 / 100) = 11 blocks, rounded up to a multiple of 4
    sizes = [p.size for p in parts]
    assert max(sizes) <= 100 and max(sizes) - min(sizes) <= 1
    assert all(np.all(np.diff(p) > 0) for p in parts)  # sorted
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(1003))


def test_partitions_come_from_their_own_seed(weighted_graph):
    X, A = weighted_graph
    inputs = GraphInputs(X, FeatureScaling(None).fit(X), A)
    target = {"y": torch.arange(X.shape[0]), "w": torch.ones(X.shape[0])}
    first = Partitions(inputs, target, 128, seed=5)
    torch.rand(1000)  # the global RNG does not move the partition
    second = Partitions(inputs, target, 128, seed=5)
    for a, b in zip(first.blocks, second.blocks):
        np.testing.assert_array_equal(a, b)
    first.reshuffle()
    assert any(not np.array_equal(a, b) for a, b in zip(first.blocks, second.blocks))
    fixed = Partitions(inputs, target, 128, seed=5, reshuffle=False)
    fixed.reshuffle()
    np.testing.assert_array_equal(fixed.blocks[0], second.blocks[0])
    item, targets = second[0]
    nodes = second.blocks[0]
    np.testing.assert_array_equal(targets["y"].numpy(), nodes)
    np.testing.assert_array_equal(item["x"].numpy(), X[nodes])
    torch.testing.assert_close(item["adj"].to_dense(), _reference(A, nodes), atol=1e-7,
                               rtol=1e-6)


def test_column_statistics_in_chunks_equal_fit_scale(monkeypatch):
    rng = np.random.default_rng(0)
    F = (rng.normal(size=(1000, 5)) * [1, 1e-6, 1e6, 3, 1] + [0, 5, -2e6, 0, 7]).astype(
        np.float32)
    F[:, 4] = 7.0  # a constant column: scale 1
    monkeypatch.setattr(_data, "_STAT_CHUNK", 64)  # 13 rows per chunk
    scaling = FeatureScaling("standard").fit(F)
    mean, scale = fit_scale(F, name="X")
    np.testing.assert_allclose(scaling.mean_, mean, rtol=1e-9)
    np.testing.assert_allclose(scaling.scale_, scale, rtol=1e-9)
    assert scaling.scale_[4] == 1.0


@pytest.fixture(scope="module")
def planted_graph():
    X, y, A = make_planted_partition(600, 3, p_in=0.04, p_out=0.002, n_features=8,
                                     feature_signal=0.5, random_state=0)
    y_semi = np.where(np.random.default_rng(0).random(600) < 0.5, -1, y)
    return X.astype(np.float32), y, y_semi, A


def test_partitioned_fit_predicts_with_the_whole_graph(planted_graph):
    X, y, y_semi, A = planted_graph
    # the network's own answer, without label_propagation on top
    clf = DIFFormerClassifier(n_layers=2, hidden_dim=16, max_epochs=25, batch_size=150,
                              label_propagation=False, device="cpu",
                              random_state=0).fit(X, y_semi, adjacency=A)
    assert clf.history_[-1, "train_batch_count"] == 4
    # the transduction (streamed, chunk by chunk) is the forward over the whole graph
    inputs = clf._inputs(X, A, None, reset=False)
    with torch.no_grad():
        logits = clf.module_(inputs.x, inputs.adj)
    np.testing.assert_array_equal(clf.transduction_, logits.argmax(1).numpy())
    np.testing.assert_allclose(clf.predict_proba(X, adjacency=A),
                               torch.softmax(logits.double(), 1).numpy(), atol=1e-5)
    unl = y_semi == -1
    assert np.mean(clf.transduction_[unl] == y[unl]) > 0.8  # chance is 1/3
    # graph mode: the cached answer is the same forward
    g = Graph(X, A)
    clf_g = DIFFormerClassifier(n_layers=2, hidden_dim=16, max_epochs=5, batch_size=150,
                                label_propagation=False, device="cpu",
                                random_state=0).fit(g.node_ids(), y_semi, graph=g)
    inputs = clf_g._inputs(g.node_ids(), None, g, reset=False)
    with torch.no_grad():
        logits = clf_g.module_(inputs.x, inputs.adj)
    np.testing.assert_allclose(clf_g.predict_proba(g.node_ids()),
                               torch.softmax(logits.double(), 1).numpy(), atol=1e-5)


def test_memory_mapped_features_are_not_copied(planted_graph, tmp_path):
    X, y, y_semi, A = planted_graph
    path = tmp_path / "features.npy"
    np.save(path, X)
    F = np.load(path, mmap_mode="r")
    params = dict(n_layers=1, hidden_dim=8, max_epochs=5, batch_size=200, device="cpu",
                  random_state=0)
    clf = DIFFormerClassifier(**params).fit(F, y_semi, adjacency=A)
    assert np.shares_memory(clf._inputs(F, A, None, reset=False).features, F)
    ref = DIFFormerClassifier(**params).fit(X, y_semi, adjacency=A)
    np.testing.assert_array_equal(clf.predict_proba(F, adjacency=A),
                                  ref.predict_proba(X, adjacency=A))
