"""DIFFormerClassifier's label propagation over the graph (``label_propagation``)."""

import pickle
import re

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict, cross_val_score

from skdiff import DIFFormerClassifier, Graph
from skdiff.datasets import make_label_mask, make_planted_partition
from skdiff.difformer._propagation import LabelSmoother, normalized_adjacency

FAST = dict(n_layers=1, hidden_dim=16, max_epochs=30, device="cpu", random_state=0)


@pytest.fixture(scope="module")
def homophilous():
    """Only the graph knows the classes: the features are pure noise (30 labels per class)."""
    X, y, A = make_planted_partition(600, 3, p_in=0.04, p_out=0.004, random_state=0)
    return X, y, A, make_label_mask(y, 30, random_state=0)


@pytest.fixture(scope="module")
def heterophilous():
    """Edges run between classes; the features carry the classes."""
    X, y, A = make_planted_partition(600, 3, p_in=0.002, p_out=0.03, feature_signal=1.5,
                                     random_state=0)
    return X, y, A, make_label_mask(y, 10, random_state=0)


def _accuracy(clf, y, y_fit):
    unlabelled = y_fit == -1
    return np.mean(clf.transduction_[unlabelled] == y[unlabelled])


def test_auto_spreads_labels_on_a_homophilous_graph(homophilous):
    X, y, A, y_fit = homophilous
    on = DIFFormerClassifier(**FAST).fit(X, y_fit, adjacency=A)
    off = DIFFormerClassifier(**FAST, label_propagation=False).fit(X, y_fit, adjacency=A)
    assert on.label_propagation_ and not off.label_propagation_
    assert _accuracy(on, y, y_fit) > 0.95
    assert _accuracy(off, y, y_fit) < _accuracy(on, y, y_fit) - 0.1
    # the known labels stay as given
    labelled = y_fit != -1
    np.testing.assert_array_equal(on.transduction_[labelled], y_fit[labelled])


def test_auto_leaves_a_heterophilous_graph_alone(heterophilous):
    X, y, A, y_fit = heterophilous
    auto = DIFFormerClassifier(**FAST).fit(X, y_fit, adjacency=A)
    off = DIFFormerClassifier(**FAST, label_propagation=False).fit(X, y_fit, adjacency=A)
    forced = DIFFormerClassifier(**FAST, label_propagation=True).fit(X, y_fit, adjacency=A)
    assert not auto.label_propagation_ and forced.label_propagation_
    np.testing.assert_array_equal(auto.transduction_, off.transduction_)
    assert _accuracy(forced, y, y_fit) < _accuracy(auto, y, y_fit)


def test_auto_leaves_propagation_off_where_the_features_predict_better(capsys):
    """A graph of moderate homophily (0.59, mean degree 3.9) beside features that tell the
    classes: labels spread along the graph beat the most frequent class but not a linear
    model on the features, and spreading them would override the network's better
    predictions (0.81 against 0.96 of the unlabelled nodes)."""
    X, y, A = make_planted_partition(600, 3, p_in=0.012, p_out=0.004, feature_signal=1.0,
                                     random_state=0)
    y_fit = make_label_mask(y, 20, random_state=0)
    auto = DIFFormerClassifier(**FAST, verbose=1).fit(X, y_fit, adjacency=A)
    line = next(x for x in capsys.readouterr().out.splitlines()
                if x.startswith("label_propagation='auto'"))
    spread, majority, features = (float(v) for v in re.findall(r"(\d\.\d{3})", line))
    assert majority < spread < features and line.endswith(": off")
    forced = DIFFormerClassifier(**FAST, label_propagation=True).fit(X, y_fit, adjacency=A)
    assert not auto.label_propagation_ and forced.label_propagation_
    assert _accuracy(auto, y, y_fit) > 0.9
    assert _accuracy(forced, y, y_fit) < _accuracy(auto, y, y_fit) - 0.1


def test_features_hits_are_the_stratified_cross_validated_predictions():
    from skdiff.difformer._propagation import features_hits

    X, y, _ = make_planted_partition(300, 3, feature_signal=1.0, random_state=0)
    seeds = np.flatnonzero(make_label_mask(y, 20, random_state=0) != -1)
    index, hits = features_hits(X, y[seeds], seeds, np.random.RandomState(0))
    rs = np.random.RandomState(0)
    want = np.mean([cross_val_predict(
        LogisticRegression(max_iter=1000), X[seeds], y[seeds],
        cv=StratifiedKFold(5, shuffle=True, random_state=int(rs.randint(2**31 - 1))))
        == y[seeds] for _ in range(3)], axis=0)
    np.testing.assert_array_equal(index, np.arange(seeds.size))
    np.testing.assert_allclose(hits, want, rtol=0, atol=1e-12)
    # a row-wise scaling applied to the labelled rows alone gives the hits of the scaled
    # matrix
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(3.0 * X + 1.0)
    scaled = features_hits(scaler.transform(3.0 * X + 1.0), y[seeds], seeds,
                           np.random.RandomState(1))
    rows = features_hits(3.0 * X + 1.0, y[seeds], seeds, np.random.RandomState(1),
                         transform=scaler.transform)
    np.testing.assert_array_equal(rows[1], scaled[1])
    # a class with a single labelled node: no stratified folds, no check
    assert features_hits(X, np.r_[y[seeds[:-1]], 3], seeds, np.random.RandomState(0)) is None


def test_no_graph_no_propagation():
    X, y, _ = make_planted_partition(200, 2, feature_signal=2.0, random_state=0)
    clf = DIFFormerClassifier(**FAST, label_propagation=True).fit(X, y)
    assert not clf.label_propagation_


def test_smoothing_equals_the_dense_fixed_point():
    """The iteration converges to the fixed point with the seeds clamped:
    G_U = (I - a S_UU)^-1 ((1 - a) P_U + a S_UL Y_L)."""
    rng = np.random.RandomState(0)
    n, k, alpha = 40, 3, 0.6
    A = sp.random(n, n, density=0.15, random_state=rng)
    A = A + A.T
    seeds = np.array([0, 5, 9, 17, 30])
    codes = np.array([0, 1, 2, 1, 0])
    P = rng.dirichlet(np.ones(k), size=n)
    smoother = LabelSmoother(A, seeds, codes, k, alpha)
    got = smoother.smooth(P)

    S = normalized_adjacency(A).toarray().astype(np.float64)
    U = np.setdiff1d(np.arange(n), seeds)
    Y = np.eye(k)[codes]
    G_U = np.linalg.solve(np.eye(U.size) - alpha * S[np.ix_(U, U)],
                          (1 - alpha) * P[U] + alpha * S[np.ix_(U, seeds)] @ Y)
    want = np.zeros((n, k))
    want[U], want[seeds] = G_U, Y
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_graph_mode_predictions_and_samples_propagate(homophilous):
    X, y, A, _ = homophilous
    g = Graph(X, A)
    train = np.arange(0, 600, 4)
    clf = DIFFormerClassifier(**FAST).fit(train[:, None], y[train], graph=g)
    assert clf.label_propagation_
    rest = np.setdiff1d(np.arange(600), train)
    pred = clf.predict(rest[:, None])
    np.testing.assert_array_equal(pred, clf.transduction_[rest])
    assert np.mean(pred == y[rest]) > 0.95
    samples = clf.sample_posterior(rest[:, None], n_samples=4, random_state=0)
    np.testing.assert_allclose(samples.sum(axis=1), 1.0, rtol=1e-6)
    assert np.mean(clf.classes_[samples.mean(-1).argmax(1)] == y[rest]) > 0.95
    # the propagation travels with the pickled estimator
    back = pickle.loads(pickle.dumps(clf))
    proba = clf.predict_proba(rest[:, None])
    np.testing.assert_allclose(back.predict_proba(rest[:, None]), proba)
    # passing the fitted graph is the same as passing none, after a round trip too
    np.testing.assert_allclose(back.predict_proba(rest[:, None], graph=g), proba)


def test_features_mode_predictions_on_the_fitted_rows_propagate(homophilous):
    X, y, A, y_fit = homophilous
    clf = DIFFormerClassifier(**FAST).fit(X, y_fit, adjacency=A)
    assert clf.label_propagation_
    unlabelled = y_fit == -1
    # predict on fit's rows and adjacency: the one forward over the graph, labels spread
    np.testing.assert_array_equal(clf.predict(X, adjacency=A), clf.transduction_)
    assert np.mean(clf.predict(X, adjacency=A)[unlabelled] == y[unlabelled]) > 0.95
    assert clf.score(X, np.where(unlabelled, y, -1), adjacency=A) > 0.95
    samples = clf.sample_posterior(X, n_samples=4, random_state=0, adjacency=A)
    np.testing.assert_allclose(samples.sum(axis=1), 1.0, rtol=1e-6)
    assert np.mean(clf.classes_[samples.mean(-1).argmax(1)][unlabelled]
                   == y[unlabelled]) > 0.95
    # after a pickle round trip, and for the same matrix in another sparse format
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(back.predict_proba(X, adjacency=A.tocoo()),
                               clf.predict_proba(X, adjacency=A))
    # those answers come from fit's forward while the weights are fit's; the forward run
    # again (no stamp to vouch for the weights) gives the same, and other weights others
    del back._weights_stamp
    np.testing.assert_array_equal(back.predict(X, adjacency=A), clf.transduction_)
    older = pickle.loads(pickle.dumps(clf))  # a pickle without the kept outputs
    del older._fitted_outputs
    np.testing.assert_array_equal(older.predict(X, adjacency=A), clf.transduction_)
    with torch.no_grad():
        back.module_.fc_out.bias[0] += 50.0  # class 0 everywhere the network decides
    changed = back.predict(X, adjacency=A)
    np.testing.assert_array_equal(changed[~unlabelled], y_fit[~unlabelled])  # clamped
    assert np.mean(changed[unlabelled] != clf.transduction_[unlabelled]) > 0.2
    # another graph over the same rows is another set of nodes: the network's answer alone
    # (the features say nothing here, so it falls to about chance)
    other = A.copy().tolil()
    other[0, 1] = other[1, 0] = 1.0
    assert np.mean(clf.predict(X, adjacency=other.tocsr())[unlabelled]
                   == y[unlabelled]) < 0.8
    # rows other than the fitted ones too
    assert np.mean(clf.predict(X[:300], adjacency=A[:300, :300])[unlabelled[:300]]
                   == y[:300][unlabelled[:300]]) < 0.8


def test_cross_validation_on_one_graph(homophilous):
    X, y, A, _ = homophilous
    g = Graph(X, A)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(DIFFormerClassifier(**FAST), g.node_ids(), y, cv=cv,
                             params={"graph": g})
    assert scores.min() > 0.95


@pytest.mark.parametrize("params,match", [
    (dict(label_propagation="yes"), r"'label_propagation' parameter .* Got 'yes'"),
    (dict(propagation_alpha=1.0), r"'propagation_alpha' parameter .* range \[0.0, 1.0\)"),
    (dict(graph_weight="yes"), r"'graph_weight' parameter .* Got 'yes'"),
    (dict(propagation_network_weight=1.5),
     r"'propagation_network_weight' parameter .* range \[0.0, 1.0\] or a str among "
     r"\{'auto'\}\. Got 1.5"),
    (dict(propagation_network_weight="half"),
     r"'propagation_network_weight' parameter .* Got 'half'"),
])
def test_bad_parameters_are_named(homophilous, params, match):
    X, _, A, y_fit = homophilous
    with pytest.raises(ValueError, match=match):
        DIFFormerClassifier(**FAST, **params).fit(X, y_fit, adjacency=A)


def test_network_weight_follows_the_networks_quality():
    """Confident wrong guesses on the unlabelled nodes get a small weight, accurate ones the
    full weight (chosen by the 5-fold check over the labelled nodes)."""
    _, y, A = make_planted_partition(600, 3, p_in=0.04, p_out=0.004, random_state=0)
    y_fit = make_label_mask(y, 10, random_state=0)
    seeds = np.flatnonzero(y_fit != -1)
    rng = np.random.RandomState(0)
    garbage = np.eye(3)[rng.randint(0, 3, 600)] * 0.9 + 0.1 / 3
    accurate = np.eye(3)[np.where(rng.rand(600) < 0.8, y, rng.randint(0, 3, 600))] * 0.6 + 0.4 / 3
    unlabelled = y_fit == -1
    for proba, weights in ((garbage, (0.0, 0.2)), (accurate, (1.0, 0.5))):
        smoother = LabelSmoother(A, seeds, y[seeds], 3, 0.9)
        assert smoother.choose_network_weight(proba, np.random.RandomState(0)) in weights
        chosen = np.mean(smoother.smooth(proba).argmax(1)[unlabelled] == y[unlabelled])
        smoother.beta = 1.0
        full = np.mean(smoother.smooth(proba).argmax(1)[unlabelled] == y[unlabelled])
        assert chosen >= full


def test_validation_rows_are_not_seeds(homophilous):
    """Rows of a validation_mask serve early stopping only: the propagation does not clamp
    them to their labels, so a score on them measures the model."""
    X, y, A, _ = homophilous
    y_fit = make_label_mask(y, 30, random_state=0)
    labelled = np.flatnonzero(y_fit != -1)
    valid = np.zeros(len(y), dtype=bool)
    valid[labelled[::2]] = True
    wrong = y_fit.copy()
    wrong[valid] = (y[valid] + 1) % 3  # wrong validation labels must not reach the answer
    clf = DIFFormerClassifier(**FAST).fit(X, wrong, adjacency=A, validation_mask=valid)
    assert clf.label_propagation_
    assert np.mean(clf.transduction_[valid] == y[valid]) > 0.9


def test_auto_is_off_above_the_node_limit(homophilous, monkeypatch):
    import skdiff.difformer._estimators as estimators

    X, _, A, y_fit = homophilous
    monkeypatch.setattr(estimators, "AUTO_MAX_NODES", 599)
    assert not DIFFormerClassifier(**FAST).fit(X, y_fit, adjacency=A).label_propagation_
    forced = DIFFormerClassifier(**FAST, label_propagation=True).fit(X, y_fit, adjacency=A)
    assert forced.label_propagation_


@pytest.fixture(scope="module")
def digits_semi():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    return X, y, make_label_mask(y, 5, random_state=0)


def test_semi_supervised_fit_builds_a_neighbors_graph(digits_semi):
    X, y, y_fit = digits_semi
    # label_propagation="auto" leaves these labels unspread: along the 10-NN graph they
    # predict 0.92 of held-out labelled rows, a logistic regression on the pixels 0.94
    assert not DIFFormerClassifier(**FAST).fit(X, y_fit).label_propagation_
    auto = DIFFormerClassifier(**FAST, label_propagation=True).fit(X, y_fit)
    none = DIFFormerClassifier(**FAST, n_neighbors=None).fit(X, y_fit)
    assert auto.n_neighbors_ == 10 and auto.label_propagation_
    assert none.n_neighbors_ == 0 and not none.label_propagation_
    unlabelled = y_fit == -1
    acc = np.mean(auto.transduction_[unlabelled] == y[unlabelled])
    assert acc > 0.85
    assert acc > np.mean(none.transduction_[unlabelled] == y[unlabelled]) + 0.05
    # the fitted rows are predicted as in fit: over their graph, the labels propagated,
    # whichever of them X holds and in any order (LabelSpreading.predict's behaviour)
    np.testing.assert_array_equal(auto.predict(X), auto.transduction_)
    order = np.random.RandomState(0).permutation(len(X))[:50]
    np.testing.assert_array_equal(auto.predict(X[order]), auto.transduction_[order])
    np.testing.assert_array_equal(auto.predict(X[unlabelled].astype(np.float32)),
                                  auto.transduction_[unlabelled])  # same values
    rerun = pickle.loads(pickle.dumps(auto))  # the forward and graph run again
    del rerun._weights_stamp
    np.testing.assert_array_equal(rerun.predict(X[order]), auto.transduction_[order])
    samples = auto.sample_posterior(X[order], n_samples=3, random_state=0)
    np.testing.assert_allclose(samples, auto.sample_posterior(X, n_samples=3,
                                                              random_state=0)[order])
    # other rows are new, isolated nodes: their prediction does not depend on the other
    # rows, fitted ones among them or not
    new = X[:7] + 0.5
    mixed = auto.predict_proba(np.r_[X[order[:5]], new])
    np.testing.assert_allclose(mixed[5:], auto.predict_proba(new), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(auto.predict_proba(new[:3]), auto.predict_proba(new)[:3],
                               rtol=1e-5, atol=1e-6)


def test_neighbors_graph_only_where_it_belongs(digits_semi):
    X, y, y_fit = digits_semi
    assert DIFFormerClassifier(**FAST).fit(X, y).n_neighbors_ == 0  # fully labelled
    A = sp.eye(len(X), k=1, format="csr")
    assert DIFFormerClassifier(**FAST).fit(X, y_fit, adjacency=A).n_neighbors_ == 0
    assert DIFFormerClassifier(**FAST, n_neighbors=3).fit(X, y).n_neighbors_ == 3
    with pytest.raises(ValueError, match=r"n_neighbors=600 needs more than 600 rows; X has 600"):
        DIFFormerClassifier(**FAST, n_neighbors=600).fit(X, y_fit)
    with pytest.raises(ValueError, match=r"'n_neighbors' parameter .* Got 0"):
        DIFFormerClassifier(**FAST, n_neighbors=0).fit(X, y_fit)


# -- graph_weight="auto": the graph term only where the graph agrees with the labels ---------
def test_auto_graph_weight_drops_the_graph_term_on_a_heterophilous_graph(heterophilous):
    X, y, A, y_fit = heterophilous
    auto = DIFFormerClassifier(**FAST).fit(X, y_fit, adjacency=A)
    official = DIFFormerClassifier(**FAST, graph_weight=None).fit(X, y_fit, adjacency=A)
    assert auto.graph_weight_ == 0.0 and official.graph_weight_ is None
    assert _accuracy(auto, y, y_fit) > 0.9
    assert _accuracy(auto, y, y_fit) > _accuracy(official, y, y_fit) + 0.05


def test_auto_graph_weight_keeps_a_homophilous_graph(homophilous):
    X, _, A, y_fit = homophilous
    assert DIFFormerClassifier(**FAST).fit(X, y_fit, adjacency=A).graph_weight_ is None


def test_graph_check_on_features_and_their_graph_average(homophilous, heterophilous):
    from skdiff.difformer._propagation import graph_helps_features

    for (X, y, A, y_fit), expected in ((homophilous, True), (heterophilous, False)):
        seeds = np.flatnonzero(y_fit != -1)
        helps, plain, smoothed = graph_helps_features(
            A, X, y[seeds], seeds, np.random.RandomState(0), classifier=True)
        assert helps is expected and (smoothed > plain + 0.2) is expected
    # too few labelled nodes per fold: the check does not run and the graph stays
    helps, plain, _ = graph_helps_features(A, X, y[:6], np.arange(6),
                                           np.random.RandomState(0), classifier=True)
    assert helps and np.isnan(plain)


def test_auto_graph_weight_leaves_the_neighbors_graph_and_regression_alone(heterophilous):
    from skdiff import DIFFormerRegressor

    X, y, A, y_fit = heterophilous
    knn = DIFFormerClassifier(**FAST).fit(X, y_fit)  # semi-supervised: a k-NN graph
    assert knn.n_neighbors_ > 0 and knn.graph_weight_ is None
    reg = DIFFormerRegressor(**FAST, graph_weight="auto").fit(X, y.astype(float), adjacency=A)
    assert reg.graph_weight_ == 0.0
    assert DIFFormerRegressor(**FAST).fit(X, y.astype(float), adjacency=A).graph_weight_ is None


def test_a_fixed_network_weight_is_used_and_recorded(homophilous):
    """``propagation_network_weight``: "auto" records its choice; 0 is label spreading alone
    (the same labels whatever network was trained, equal to the dense fixed point with no
    network term); a number is used as given; without propagation the attribute is None."""
    X, y, A, y_fit = homophilous
    auto = DIFFormerClassifier(**FAST).fit(X, y_fit, adjacency=A)
    assert auto.propagation_network_weight_ in (1.0, 0.5, 0.2, 0.0)
    zero = [DIFFormerClassifier(**{**FAST, "random_state": seed},
                                propagation_network_weight=0).fit(X, y_fit, adjacency=A)
            for seed in (0, 1)]
    assert [clf.propagation_network_weight_ for clf in zero] == [0.0, 0.0]
    np.testing.assert_array_equal(zero[0].transduction_, zero[1].transduction_)
    S = normalized_adjacency(A).toarray().astype(np.float64)
    seeds = np.flatnonzero(y_fit != -1)
    U = np.flatnonzero(y_fit == -1)
    Y = np.eye(3)[y_fit[seeds]]
    alpha = zero[0].propagation_alpha
    G_U = np.linalg.solve(np.eye(U.size) - alpha * S[np.ix_(U, U)],
                          alpha * S[np.ix_(U, seeds)] @ Y)
    np.testing.assert_array_equal(zero[0].transduction_[U], G_U.argmax(1))
    assert _accuracy(zero[0], y, y_fit) > 0.95
    half = DIFFormerClassifier(**FAST, propagation_network_weight=0.5).fit(X, y_fit,
                                                                         adjacency=A)
    assert half.propagation_network_weight_ == 0.5
    off = DIFFormerClassifier(**FAST, label_propagation=False,
                              propagation_network_weight=0.5).fit(X, y_fit, adjacency=A)
    assert off.propagation_network_weight_ is None


def test_a_fixed_network_weight_reaches_graph_mode_predictions(homophilous):
    X, y, A, _ = homophilous
    g = Graph(X, A)
    train = np.arange(0, 600, 4)
    rest = np.setdiff1d(np.arange(600), train)
    preds = [DIFFormerClassifier(**{**FAST, "random_state": seed},
                                 propagation_network_weight=0).fit(
        train[:, None], y[train], graph=g).predict(rest[:, None]) for seed in (0, 1)]
    np.testing.assert_array_equal(preds[0], preds[1])
    assert np.mean(preds[0] == y[rest]) > 0.95


def test_the_propagation_operator_of_heavy_weights_is_the_operator_of_light_ones():
    # weights within float32 whose degrees (row sums) are not: the degrees are summed in
    # float64 (in float32 they were inf, the operator NaN, and the regressor's smoothing
    # check chose otherwise than for the same graph scaled by 1e30)
    A = sp.random(60, 60, density=0.8, random_state=0, format="csr")
    A = A.maximum(A.T)
    S, heavy = normalized_adjacency(A), normalized_adjacency(A * 1e37)
    assert np.isfinite(heavy.data).all() and heavy.dtype == np.float32
    np.testing.assert_allclose(heavy.toarray(), S.toarray(), rtol=1e-5, atol=1e-7)

