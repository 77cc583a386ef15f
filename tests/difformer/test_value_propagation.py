"""DIFFormerRegressor's propagation of the known values over the graph
(``label_propagation``)."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from skdiff import DIFFormerRegressor, Graph
from skdiff.datasets import make_planted_partition
from skdiff.difformer._propagation import ValueSmoother, normalized_adjacency

FAST = dict(n_layers=1, hidden_dim=16, max_epochs=30, device="cpu", random_state=0)
#: The value of each block: well apart, so that a block's members share a value.
LEVELS = np.array([-2.0, 0.0, 2.0])


def _task(p_in, p_out, feature_signal, seed=0):
    """Values = the block's level plus noise (std 0.3); 60 random nodes labelled, the rest
    NaN."""
    X, c, A = make_planted_partition(600, 3, p_in=p_in, p_out=p_out,
                                     feature_signal=feature_signal, random_state=seed)
    rng = np.random.RandomState(seed)
    y = LEVELS[c] + 0.3 * rng.standard_normal(600)
    y_fit = np.full(600, np.nan)
    keep = rng.choice(600, 60, replace=False)
    y_fit[keep] = y[keep]
    return X, y, A, y_fit


@pytest.fixture(scope="module")
def homophilous():
    """Only the graph knows the values: the features are pure noise."""
    return _task(0.04, 0.004, 0.0)


@pytest.fixture(scope="module")
def heterophilous():
    """Edges run between blocks; the features carry the values."""
    return _task(0.002, 0.03, 1.5)


def _mse(reg, y, y_fit):
    unlabelled = np.isnan(y_fit)
    return np.mean((reg.transduction_[unlabelled] - y[unlabelled]) ** 2)


def test_spreading_values_on_a_homophilous_graph(homophilous):
    # measured: MSE 2.58 with the propagation, 3.21 without (the values' variance is 2.76)
    X, y, A, y_fit = homophilous
    on = DIFFormerRegressor(**FAST, label_propagation=True).fit(X, y_fit, adjacency=A)
    auto = DIFFormerRegressor(**FAST, label_propagation="auto").fit(X, y_fit, adjacency=A)
    off = DIFFormerRegressor(**FAST).fit(X, y_fit, adjacency=A)  # off by default
    assert on.label_propagation_ and auto.label_propagation_ and not off.label_propagation_
    np.testing.assert_array_equal(auto.transduction_, on.transduction_)
    assert _mse(on, y, y_fit) < 0.9 * _mse(off, y, y_fit)
    labelled = ~np.isnan(y_fit)  # the known values stay as given
    np.testing.assert_allclose(on.transduction_[labelled], y_fit[labelled], rtol=1e-5)
    # predict on the fitted rows and adjacency answers as transduction_, the known values
    # with a standard deviation of 0
    mean, std = on.predict(X, adjacency=A, return_std=True)
    np.testing.assert_allclose(mean, on.transduction_, rtol=1e-6, atol=1e-9)
    assert np.all(std[labelled] == 0) and np.all(std[~labelled] > 0)


def test_auto_leaves_a_heterophilous_graph_alone(heterophilous):
    X, y, A, y_fit = heterophilous
    auto = DIFFormerRegressor(**FAST, label_propagation="auto").fit(X, y_fit, adjacency=A)
    off = DIFFormerRegressor(**FAST).fit(X, y_fit, adjacency=A)
    forced = DIFFormerRegressor(**FAST, label_propagation=True).fit(X, y_fit, adjacency=A)
    assert not auto.label_propagation_ and forced.label_propagation_
    np.testing.assert_array_equal(auto.transduction_, off.transduction_)
    assert _mse(forced, y, y_fit) > _mse(auto, y, y_fit)


def test_the_check_is_a_kernel_regression_over_the_graph(homophilous, heterophilous):
    for (_, y, A, y_fit), helps in ((homophilous, True), (heterophilous, False)):
        seeds = np.flatnonzero(~np.isnan(y_fit))
        z = (y[seeds] - y[seeds].mean()) / y[seeds].std()
        decision, spread_mse, mean_mse = ValueSmoother(A, seeds, z, 0.5).graph_predicts_values(
            np.random.RandomState(0))
        assert decision is helps and (spread_mse < mean_mse) is helps
        assert 0.8 < mean_mse < 1.3  # the mean of four fifths of standardised values
    # the errors equal a dense reference: per fold, the held-out nodes' values predicted
    # by the diffusion kernel K = (1 - a)(I - a S)^-1 over the other labelled nodes
    # (weights normalised), three shuffles of five folds below 1,000 labelled nodes
    S = normalized_adjacency(A).toarray().astype(np.float64)
    K = 0.5 * np.linalg.inv(np.eye(len(S)) - 0.5 * S)
    rs, errors = np.random.RandomState(0), np.zeros(2)
    for _ in range(3):
        fold = rs.permutation(seeds.size) % 5
        for f in range(5):
            keep, held = fold != f, fold == f
            mean = z[keep].mean()
            weights = K[np.ix_(seeds[held], seeds[keep])]
            mass = weights.sum(1)
            fit = np.where(mass > 1e-6, weights @ (z[keep] - mean) / np.maximum(mass, 1e-300),
                           0.0) + mean
            errors += [np.sum((fit - z[held]) ** 2), np.sum((mean - z[held]) ** 2)]
    errors /= 3 * seeds.size
    np.testing.assert_allclose([spread_mse, mean_mse], errors, rtol=1e-4)
    few = ValueSmoother(A, seeds[:9], z[:9], 0.5).graph_predicts_values(
        np.random.RandomState(0))
    assert few[0] is False and np.isnan(few[1])


def test_smoothing_equals_the_dense_fixed_point():
    """The iteration converges to the fixed point with the seeds clamped:
    G_U = (I - a S_UU)^-1 ((1 - a) Z_U + a S_UL Y_L), for every output column."""
    rng = np.random.RandomState(0)
    n, alpha = 40, 0.5
    A = sp.random(n, n, density=0.15, random_state=rng)
    A = A + A.T
    seeds = np.array([0, 5, 9, 17, 30])
    values = rng.standard_normal((5, 2))
    Z = rng.standard_normal((n, 2))
    got = ValueSmoother(A, seeds, values, alpha).smooth(Z)

    S = normalized_adjacency(A).toarray().astype(np.float64)
    U = np.setdiff1d(np.arange(n), seeds)
    want = np.zeros((n, 2))
    want[U] = np.linalg.solve(np.eye(U.size) - alpha * S[np.ix_(U, U)],
                              (1 - alpha) * Z[U] + alpha * S[np.ix_(U, seeds)] @ values)
    want[seeds] = values
    np.testing.assert_allclose(got, want, atol=1e-5)
    # one output as a 1-D array keeps its shape
    one = ValueSmoother(A, seeds, values[:, 0], alpha).smooth(Z[:, 0])
    assert one.shape == (n,)
    np.testing.assert_allclose(one, want[:, 0], atol=1e-5)


@pytest.mark.parametrize("uncertainty", ["gaussian", "mc_dropout"])
def test_graph_mode_predictions_std_and_samples_propagate(homophilous, uncertainty):
    X, y, A, y_fit = homophilous
    g = Graph(X, A)
    train = np.flatnonzero(~np.isnan(y_fit))
    reg = DIFFormerRegressor(**FAST, label_propagation=True, uncertainty=uncertainty).fit(
        train[:, None], y[train], graph=g)
    plain = DIFFormerRegressor(**FAST, uncertainty=uncertainty).fit(train[:, None], y[train],
                                                                    graph=g)
    assert reg.label_propagation_ and not plain.label_propagation_
    rest = np.setdiff1d(np.arange(600), train)
    pred, std = reg.predict(rest[:, None], return_std=True)
    np.testing.assert_allclose(pred, reg.transduction_[rest], rtol=1e-6)
    # the same network (propagation comes after training), its predictions smoothed
    z = (plain.transduction_ - reg.y_mean_) / reg.y_scale_
    smoothed = ValueSmoother(A, train, (y[train] - reg.y_mean_) / reg.y_scale_, 0.5).smooth(z)
    np.testing.assert_allclose(reg.transduction_, smoothed * reg.y_scale_ + reg.y_mean_,
                               rtol=1e-4, atol=1e-4)
    # the labelled nodes' values are known: std 0 and every sample equal to the value (the
    # Gaussian head's variance there is zero; Monte Carlo passes clamp them in every pass)
    _, std_train = reg.predict(train[:5, None], return_std=True)
    np.testing.assert_allclose(std_train, 0.0, atol=1e-5)
    assert np.all(std > 0)
    samples = reg.sample_posterior(train[:5, None], n_samples=4, random_state=0)
    np.testing.assert_allclose(samples, np.repeat(y[train[:5], None], 4, axis=1), rtol=1e-5)
    back = pickle.loads(pickle.dumps(reg))
    np.testing.assert_allclose(back.predict(rest[:, None]), pred)
    np.testing.assert_allclose(back.predict(rest[:, None], graph=g), pred)


def test_validation_rows_are_not_seeds(homophilous):
    X, y, A, y_fit = homophilous
    labelled = np.flatnonzero(~np.isnan(y_fit))
    valid = np.zeros(600, dtype=bool)
    valid[labelled[::3]] = True
    wrong = y_fit.copy()
    wrong[valid] += 10.0  # wrong validation values must not reach the answer
    reg = DIFFormerRegressor(**FAST, label_propagation=True).fit(X, wrong, adjacency=A,
                                                                 validation_mask=valid)
    assert reg.label_propagation_
    # the validation rows keep the network's prediction, the other labelled rows their value
    assert np.min(np.abs(reg.transduction_[valid] - wrong[valid])) > 1
    seeds = np.setdiff1d(labelled, np.flatnonzero(valid))
    np.testing.assert_allclose(reg.transduction_[seeds], wrong[seeds], rtol=1e-5)


def test_no_graph_no_propagation():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((100, 3))
    y = X[:, 0] + np.where(np.arange(100) < 50, 0.0, np.nan)
    reg = DIFFormerRegressor(**FAST, label_propagation=True).fit(X, y)
    assert not reg.label_propagation_


@pytest.mark.parametrize("params,match", [
    (dict(label_propagation="yes"), r"'label_propagation' parameter .* Got 'yes'"),
    (dict(propagation_alpha=1.0), r"'propagation_alpha' parameter .* range \[0.0, 1.0\)"),
])
def test_bad_parameters_are_named(homophilous, params, match):
    X, _, A, y_fit = homophilous
    with pytest.raises(ValueError, match=match):
        DIFFormerRegressor(**FAST, **params).fit(X, y_fit, adjacency=A)
