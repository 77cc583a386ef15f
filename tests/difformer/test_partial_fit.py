"""DIFFormer's partial_fit trains every call on the call's rows and the rows kept from
earlier calls, and predicts attending to all of them."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification, make_friedman1, make_regression
from sklearn.metrics import r2_score

import skdiff.difformer._estimators as difformer_estimators
from skdiff import DIFFormerClassifier, DIFFormerRegressor
from skdiff._base import FitData


@pytest.fixture(scope="module")
def classes3():
    X, y = make_classification(975, 20, n_informative=10, n_classes=3, random_state=0)
    return X[:475], y[:475], X[475:], y[475:]


def _stream(est, X, y, batch, passes, **kw):
    for _ in range(passes):
        for start in range(0, X.shape[0], batch):
            est.partial_fit(X[start:start + batch], y[start:start + batch], **kw)
    return est


def test_a_stream_of_small_calls_learns_as_fit_does(classes3):
    # calls of 15 rows: each call trained on its own rows alone and prediction attended to
    # the last call's, which scored 0.34-0.52 from pass to pass (fit: 0.80)
    X, y, X_test, y_test = classes3
    clf = _stream(DIFFormerClassifier(random_state=0), X, y, 15, 4, classes=[0, 1, 2])
    fitted = DIFFormerClassifier(random_state=0).fit(X, y)
    assert fitted.score(X_test, y_test) > 0.78
    assert clf.score(X_test, y_test) > 0.76
    assert len(clf._kept_rows) == len(X)
    assert clf.transduction_.shape == (len(X) % 15,)  # the last call's rows
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X_test), clf.predict_proba(X_test))
    # fit starts afresh: it keeps no rows for a later partial_fit
    assert "_kept_rows" not in vars(clf.fit(X[:60], y[:60]))


def test_an_epoch_loop_over_the_same_rows_trains_on_them_alone(classes3):
    X, y, X_test, _ = classes3
    loop = DIFFormerClassifier(random_state=0, max_epochs=5)
    fresh = DIFFormerClassifier(random_state=0, max_epochs=5)
    for _ in range(3):
        loop.partial_fit(X[:100], y[:100], classes=[0, 1, 2])
        fresh.__dict__.pop("_kept_rows", None)  # as if no row were kept
        fresh.partial_fit(X[:100], y[:100], classes=[0, 1, 2])
    np.testing.assert_array_equal(loop.predict_proba(X_test), fresh.predict_proba(X_test))
    assert len(loop._kept_rows) == 100


def test_kept_rows_are_never_validation_rows():
    clf = DIFFormerClassifier(random_state=0, early_stopping=True, validation_fraction=0.5)
    clf.seed_ = 0
    rows = np.arange(40)
    data = FitData(rows=rows, strata=rows % 2, train_only=np.arange(10, 40))
    train, valid = clf._validation_rows(data)
    assert valid.size == 5 and np.all(valid < 10)  # half of the 10 rows that may be held out
    np.testing.assert_array_equal(np.sort(np.r_[train, valid]), rows)


def test_the_kept_rows_are_a_bounded_sample(monkeypatch):
    monkeypatch.setattr(difformer_estimators, "PARTIAL_FIT_MAX_ROWS", 50)
    X, y = make_regression(300, 5, noise=1.0, random_state=0)
    reg = _stream(DIFFormerRegressor(random_state=0, max_epochs=3), X, y, 30, 1)
    assert len(reg._kept_rows) == 50 and reg._kept_rows.n_seen == 300
    assert reg.transduction_.shape == (30,)
    # sparse rows are kept as such
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1, X, 0.0))
    sparse = _stream(DIFFormerRegressor(random_state=0, max_epochs=3), Xs, y, 30, 1)
    assert sp.issparse(sparse._kept_rows.X) and len(sparse._kept_rows) == 50
    # a call with a graph among its rows keeps none (its rows are that graph's nodes)
    A = sp.eye(30, k=1, format="csr") + sp.eye(30, k=-1, format="csr")
    reg.partial_fit(X[:30], y[:30], adjacency=A)
    assert "_kept_rows" not in vars(reg)


def test_a_regressor_stream_ends_near_fit():
    # 19 calls of 25 rows a pass: the linear_fallback ridge (chosen on each call's 5
    # validation rows) is fitted to every row kept; on the last call's rows alone it scored
    # a test R^2 of 0.51
    X, y = make_friedman1(975, noise=1.0, random_state=0)
    reg = _stream(DIFFormerRegressor(random_state=0), X[:475], y[:475], 25, 2)
    assert r2_score(y[475:], reg.predict(X[475:])) > 0.75
