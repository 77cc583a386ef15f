"""DIFFormerRegressor: a smooth signal on a graph, semi-supervised targets, sklearn integration."""

import pickle

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdiff import DIFFormerRegressor, Graph
from skdiff.datasets import make_graph_signal

FAST = dict(n_layers=2, hidden_dim=32, max_epochs=80, device="cpu")


@pytest.fixture(scope="module")
def field():
    return make_graph_signal(300, random_state=0)


def _r2(y, pred):
    return 1 - np.mean((y - pred) ** 2) / np.var(y)


def test_the_graph_recovers_a_smooth_signal_from_noisy_features(field):
    X, y, A = field
    y_semi = y.copy()
    y_semi[100:] = np.nan  # 100 labelled nodes, 200 unlabelled ones in the attention
    reg = DIFFormerRegressor(**FAST, random_state=0).fit(X, y_semi, adjacency=A)
    assert reg.transduction_.shape == (300,)
    with_graph = _r2(y[100:], reg.transduction_[100:])
    ridge = _r2(y[100:], Ridge().fit(X[:100], y[:100]).predict(X[100:]))
    assert with_graph > 0.6 and with_graph > ridge + 0.2
    # the score counts labelled rows only: NaN rows are left out
    assert reg.score(X, y_semi, adjacency=A) == pytest.approx(
        _r2(y[:100], reg.predict(X, adjacency=A)[:100]))


def test_zero_weight_equals_unlabelled_and_weights_count(field):
    X, y, A = field
    kw = dict(**FAST, early_stopping=False, random_state=0)
    y_nan = y.copy()
    y_nan[::3] = np.nan
    w = np.ones(300)
    w[::3] = 0.0
    a = DIFFormerRegressor(**kw).fit(X, y_nan, adjacency=A)
    b = DIFFormerRegressor(**kw).fit(X, y, adjacency=A, sample_weight=w)
    np.testing.assert_allclose(a.predict(X, adjacency=A), b.predict(X, adjacency=A), rtol=1e-6,
                               atol=1e-6)
    # a weight of 2 is not a weight of 1: the loss is a weighted mean
    c = DIFFormerRegressor(**kw).fit(X, y, adjacency=A, sample_weight=1 + (np.arange(300) < 50))
    assert not np.allclose(c.predict(X, adjacency=A), DIFFormerRegressor(**kw).fit(
        X, y, adjacency=A).predict(X, adjacency=A))


def test_inductive_predict_is_independent_of_batching(field):
    X, y, _ = field
    # the network's predictions (not those of a ridge it may fall back on)
    reg = DIFFormerRegressor(**FAST, batch_size=64, linear_fallback=False,
                             random_state=0).fit(X[:200], y[:200])
    full = reg.predict(X[200:])
    perm = np.random.RandomState(1).permutation(100)
    np.testing.assert_allclose(reg.predict(X[200:][perm]), full[perm], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(reg.predict(X[200:207]), full[:7], rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="fitted without a graph"):  # no joint forward
        reg.predict(X[200:], adjacency=sp.eye(100, k=1, format="csr"))


def test_multi_output_std_and_posterior_samples(field):
    X, y, A = field
    Y = np.c_[y, -2 * y + 1]
    Y[::4] = np.nan
    reg = DIFFormerRegressor(**FAST, random_state=0).fit(X, Y, adjacency=A)
    assert reg.n_outputs_ == 2 and reg.transduction_.shape == (300, 2)
    mean, std = reg.predict(X[:10], adjacency=A[:10, :10], return_std=True)
    assert mean.shape == std.shape == (10, 2) and np.all(std > 0)
    S = reg.sample_posterior(X[:10], n_samples=30, random_state=0, adjacency=A[:10, :10])
    assert S.shape == (10, 2, 30)
    np.testing.assert_array_equal(
        S, reg.sample_posterior(X[:10], n_samples=30, random_state=0, adjacency=A[:10, :10]))
    # dropout's Monte Carlo mean follows the deterministic prediction (it is not equal to it:
    # the network is nonlinear), and the spread is the returned std's
    assert np.corrcoef(S.mean(-1).ravel(), mean.ravel())[0, 1] > 0.9
    assert 0.5 < np.median(S.std(-1) / std) < 2.0
    np.testing.assert_array_equal(reg.predict(X[:10], return_std=True)[1],
                                  reg.predict(X[:10], return_std=True)[1])  # seeded


def test_graph_cross_validation_uses_edges(field):
    X, y, A = field
    g = Graph(X, A)
    reg = DIFFormerRegressor(**FAST, random_state=0)
    cv = KFold(3, shuffle=True, random_state=0)
    score = cross_val_score(reg, g.node_ids(), y, cv=cv, params={"graph": g}).mean()
    perm = np.random.RandomState(0).permutation(300)
    shuffled = Graph(X, A[perm][:, perm])
    bad = cross_val_score(reg, g.node_ids(), y, cv=cv, params={"graph": shuffled}).mean()
    assert score > 0.5 and score > bad + 0.2


def test_pipeline_clone_pickle_joblib_and_seed(field, tmp_path):
    X, y, A = field
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(
            StandardScaler(),
            DIFFormerRegressor(**FAST, random_state=0).set_fit_request(adjacency=True)
            .set_predict_request(adjacency=True).set_score_request(adjacency=True))
        pipe.fit(X[:200], y[:200], adjacency=A[:200, :200])
        assert pipe.predict(X[:200], adjacency=A[:200, :200]).shape == (200,)
        # score routes the adjacency to predict as the estimator's own score takes it
        Z, A_test = pipe[0].transform(X[200:]), A[200:, 200:]
        assert pipe.score(X[200:], y[200:], adjacency=A_test) == \
            pipe[-1].score(Z, y[200:], adjacency=A_test) != pipe[-1].score(Z, y[200:])
    reg = DIFFormerRegressor(**FAST, random_state=3).fit(X[:200], y[:200])
    np.testing.assert_array_equal(clone(reg).fit(X[:200], y[:200]).predict(X[200:]),
                                  reg.predict(X[200:]))
    loaded = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(loaded.predict(X[200:]), reg.predict(X[200:]))
    joblib.dump(reg, tmp_path / "m.joblib")
    np.testing.assert_array_equal(joblib.load(tmp_path / "m.joblib").predict(X[200:]),
                                  reg.predict(X[200:]))


def test_warm_start_and_partial_fit(field):
    X, y, _ = field
    reg = DIFFormerRegressor(**{**FAST, "max_epochs": 5}, early_stopping=False, warm_start=True,
                             random_state=0).fit(X, y)
    first = reg.history_[-1, "train_loss"]
    reg.fit(X, y)
    assert len(reg.history_) == 10 and reg.history_[-1, "train_loss"] < first
    part = DIFFormerRegressor(**FAST, early_stopping=False, random_state=0)
    for _ in range(3):
        part.partial_fit(X, y)
    assert len(part.history_) == 3


def test_bad_targets_are_clear_errors(field):
    X, y, _ = field
    reg = DIFFormerRegressor(**{**FAST, "max_epochs": 1})
    Y = np.c_[y, y]
    Y[0, 1] = np.nan
    with pytest.raises(ValueError, match="Row 0 of y has NaN in some outputs but not all"):
        reg.fit(X, Y)
    with pytest.raises(ValueError, match="no labelled rows"):
        reg.fit(X, np.full(300, np.nan))
    with pytest.raises(ValueError, match="infinite"):
        reg.fit(X, np.where(np.arange(300) == 5, np.inf, y))
    with pytest.raises(ValueError, match="X has 300 rows but y has 299"):
        reg.fit(X, y[:299])
    with pytest.raises(ValueError, match="'sample_weight' must be finite and non-negative"):
        reg.fit(X, y, sample_weight=-np.ones(300))


def test_sample_weight_of_numbers_in_an_object_array_is_read_as_numbers(field):
    X, y, _ = field
    kw = dict(FAST, max_epochs=3, random_state=0)
    w = np.where(np.arange(300) % 2, 1.0, 3.0)
    as_float = DIFFormerRegressor(**kw).fit(X, y, sample_weight=w)
    mixed = np.array([int(v) if i % 3 else np.float32(v) for i, v in enumerate(w)],
                     dtype=object)  # a pandas column of object dtype holds such values
    as_object = DIFFormerRegressor(**kw).fit(X, y, sample_weight=mixed)
    np.testing.assert_array_equal(as_object.predict(X[:50]), as_float.predict(X[:50]))
    labels = w.astype(object)
    labels[7] = "3"
    with pytest.raises(TypeError, match=r"^'sample_weight' must be numbers; got dtype object "
                                        r"holding '3' \(a str\) at position 7; pass one real "
                                        r"number per row of X\.$"):
        DIFFormerRegressor(**kw).fit(X, y, sample_weight=labels)
    labels[7] = True
    with pytest.raises(TypeError, match=r"holding True \(a bool\) at position 7"):
        DIFFormerRegressor(**kw).fit(X, y, sample_weight=labels)


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_a_y_without_outputs_is_refused_by_name(field, method):
    X, _, _ = field
    reg = DIFFormerRegressor(**{**FAST, "max_epochs": 2})
    with pytest.raises(ValueError, match=r"^y has no outputs: got shape \(300, 0\)\. Pass one "
                                         r"target per row, y of shape \(300,\), or "
                                         r"\(300, n_outputs\) with n_outputs >= 1\.$"):
        getattr(reg, method)(X, np.empty((300, 0)))
    assert not hasattr(reg, "net_")


def test_n_layers_auto_is_one_layer_on_a_table_and_four_on_a_graph(field):
    # without a graph, stacked layers pull every row's state toward the others': one layer
    # fits a smooth table far better (300 rows of make_friedman2: MSE 0.019 of a ridge's
    # with one layer, 0.078 with four)
    from sklearn.datasets import make_friedman2
    from sklearn.linear_model import RidgeCV

    X, y = make_friedman2(n_samples=600, noise=0.0, random_state=0)
    ridge = np.mean((RidgeCV().fit(X[:300], y[:300]).predict(X[300:]) - y[300:]) ** 2)
    auto = DIFFormerRegressor(device="cpu", random_state=0).fit(X[:300], y[:300])
    assert auto.n_layers == "auto" and auto.n_layers_ == 1 and auto.module_.n_layers == 1
    four = DIFFormerRegressor(n_layers=4, device="cpu", random_state=0).fit(X[:300], y[:300])
    assert four.n_layers_ == 4 and four.module_.n_layers == 4
    mse_auto, mse_four = (np.mean((est.predict(X[300:]) - y[300:]) ** 2) for est in (auto, four))
    assert mse_auto < 0.04 * ridge and mse_four > 2 * mse_auto
    # over a graph "auto" keeps four layers, the hops of the graph term
    Xg, yg, A = field
    fast = {**FAST, "n_layers": "auto", "max_epochs": 3}
    reg = DIFFormerRegressor(**fast, random_state=0).fit(Xg, yg, adjacency=A)
    assert reg.n_layers_ == 4 and reg.module_.n_layers == 4
    # an explicit depth is kept as given, with or without a graph
    assert DIFFormerRegressor(**{**fast, "n_layers": 2}).fit(Xg, yg).n_layers_ == 2
