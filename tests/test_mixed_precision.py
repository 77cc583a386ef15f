"""``mixed_precision="bf16"``: every trainable estimator fits and predicts under bfloat16
autocast on the CPU, graph products included, and scores close to its float32 fit."""

import numpy as np
import pytest

from skdiff import (
    DIFFormerClassifier,
    DIFFormerRegressor,
    FlowformerClassifier,
    FlowformerRegressor,
)
from skdiff.datasets import make_label_mask, make_planted_partition


@pytest.fixture(scope="module")
def graph():
    X, y, A = make_planted_partition(300, 3, p_in=0.06, p_out=0.004, feature_signal=1.0,
                                     random_state=0)
    return X, y, A, make_label_mask(y, 10, random_state=0)


def _transduction_accuracy(precision, X, y, y_fit, **fit_params):
    clf = DIFFormerClassifier(mixed_precision=precision, n_layers=2, max_epochs=60,
                              random_state=0).fit(X, y_fit, **fit_params)
    unlabelled = y_fit == -1
    return np.mean(clf.transduction_[unlabelled] == y[unlabelled])


@pytest.mark.parametrize("with_adjacency", [True, False])
def test_difformer_classifier_with_a_graph(graph, with_adjacency):
    """With an adjacency, and with the k-nearest-neighbour graph that n_neighbors="auto"
    builds for a semi-supervised fit: the sparse graph products run in float32."""
    X, y, A, y_fit = graph
    params = {"adjacency": A} if with_adjacency else {}
    bf16 = _transduction_accuracy("bf16", X, y, y_fit, **params)
    fp32 = _transduction_accuracy(None, X, y, y_fit, **params)
    assert bf16 > 0.8
    assert abs(bf16 - fp32) < 0.05


def test_difformer_in_row_batches_with_a_graph(graph):
    """batch_size below the rows: the forward over all rows at the end of fit and in
    predict runs in chunks, whose graph products run in float32 too."""
    X, y, A, y_fit = graph
    kw = dict(n_layers=2, max_epochs=30, batch_size=100, random_state=0)
    bf16 = DIFFormerClassifier(mixed_precision="bf16", **kw).fit(X, y_fit, adjacency=A)
    fp32 = DIFFormerClassifier(**kw).fit(X, y_fit, adjacency=A)
    agree = np.mean(bf16.predict(X, adjacency=A) == fp32.predict(X, adjacency=A))
    assert agree > 0.9


def test_difformer_regressor_with_a_graph(graph):
    X, y, A, _ = graph
    target = y + 0.1 * np.random.RandomState(0).normal(size=y.size)
    reg = DIFFormerRegressor(mixed_precision="bf16", n_layers=2, max_epochs=60,
                             random_state=0).fit(X[:200], target[:200], adjacency=A[:200, :200])
    assert reg.score(X[200:], target[200:], adjacency=A[200:, 200:]) > 0.5


def _windows(n=400, length=24, seed=0):
    rng = np.random.RandomState(seed)
    t = np.arange(n + length + 1)
    s = np.sin(2 * np.pi * t / 12) + 0.1 * rng.normal(size=t.size)
    idx = np.arange(length)[None, :] + np.arange(n)[:, None]
    return s[idx], s[idx[:, -1] + 1]


def test_flowformer_regressor():
    X, y = _windows()
    scores = [FlowformerRegressor(mixed_precision=p, max_epochs=10, random_state=0)
              .fit(X[:300], y[:300]).score(X[300:], y[300:]) for p in ("bf16", None)]
    assert scores[0] > 0.8
    assert abs(scores[0] - scores[1]) < 0.05


def test_flowformer_float64_inference_runs_without_autocast():
    X, y = _windows()
    reg = FlowformerRegressor(mixed_precision="bf16", inference_dtype="float64", max_epochs=2,
                              random_state=0).fit(X[:300], y[:300])
    exact = reg.predict(X[300:])
    # the same weights predicted in float64 with and without bf16: identical, and apart from
    # the float32 forward under bf16 autocast
    np.testing.assert_array_equal(reg.set_params(mixed_precision=None).predict(X[300:]), exact)
    autocast = reg.set_params(mixed_precision="bf16", inference_dtype="float32").predict(X[300:])
    assert np.max(np.abs(autocast - exact)) > 1e-4


def test_flowformer_classifier():
    X, _ = _windows()
    y = (X[:, -1] > X[:, -2]).astype(int)  # rising or falling at the end of the window
    clf = FlowformerClassifier(mixed_precision="bf16", max_epochs=20, random_state=0)
    assert clf.fit(X[:300], y[:300]).score(X[300:], y[300:]) > 0.8


def test_fp16_on_the_cpu_is_refused_with_bf16_as_the_fix():
    X, y = _windows()
    with pytest.raises(ValueError, match=r"mixed_precision='fp16' needs a GPU, and device "
                                         r"resolved to 'cpu' \(device='cpu'\)\. Use "
                                         r"mixed_precision='bf16'"):
        FlowformerRegressor(mixed_precision="fp16", max_epochs=1, device="cpu").fit(X, y)
