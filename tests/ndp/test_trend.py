"""NDPRegressor's linear trend: universal kriging under the context's ML-II GP."""

import copy
import pickle

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from skdiff import NDPRegressor

FAST = dict(n_samples=32, n_sampling_steps=10, n_resample=3, device="cpu")


def _line(x):
    return 2.0 * x - 3.0 + 0.5 * np.sin(2.0 * x)


@pytest.fixture(scope="module")
def line():
    """A line of slope 2 with a small wiggle: 10 noisy points on [0, 5], queries on [5, 10]
    (the context's span again, beyond it)."""
    rng = np.random.RandomState(0)
    X = rng.uniform(0, 5, size=(10, 1))
    y = _line(X[:, 0]) + 0.05 * rng.normal(size=10)
    Xq = np.linspace(5, 10, 30)[:, None]
    return X, y, Xq, _line(Xq[:, 0])


@pytest.fixture(scope="module")
def fitted(line):
    X, y, _, _ = line
    return NDPRegressor(random_state=0, trend="linear", **FAST).fit(X, y)


def test_the_trend_is_continued_beyond_the_context(fitted, line):
    X, y, Xq, fq = line
    assert fitted.trend_coef_.shape == (1,)
    assert abs(fitted.trend_coef_[0] - 2.0) < 0.4
    np.testing.assert_allclose(fitted._trend_at(Xq),
                               fitted.trend_intercept_ + Xq @ fitted.trend_coef_, rtol=1e-12)
    # the context is stored less its trend, the amplitude has one degree of freedom fewer
    assert fitted.scale_dof_ == len(X) - 2
    np.testing.assert_allclose(fitted.y_train_ * fitted.y_std_ + fitted.y_mean_,
                               y - fitted._trend_at(X), atol=1e-10)
    constant = NDPRegressor(random_state=0, **FAST).fit(X, y)
    assert constant.trend_coef_ is None and constant.trend_intercept_ is None
    m_trend, s_trend = fitted.predict(Xq, return_std=True)
    m_const = constant.predict(Xq)
    mse_trend, mse_const = np.mean((m_trend - fq) ** 2), np.mean((m_const - fq) ** 2)
    # measured: 0.56 against 84 (a constant mean returns to the context's level)
    assert mse_trend < 0.1 * mse_const
    assert np.mean(np.abs(fq - m_trend) <= 1.96 * s_trend) >= 0.8


def test_gls_equals_the_dense_formula(fitted, line):
    X, y, _, _ = line
    gp = fitted._context_gp(X, y)
    H = np.column_stack([np.ones(len(X)), X[:, 0] - X[:, 0].mean()])
    beta, cov = fitted._gls(gp, H, y)
    K = gp.gpr.kernel_(gp.X) * gp.y_scale ** 2  # the GP's covariance of y
    Ki = np.linalg.inv(K)
    cov_ref = np.linalg.inv(H.T @ Ki @ H)
    np.testing.assert_allclose(beta, cov_ref @ H.T @ Ki @ y, rtol=1e-6)
    np.testing.assert_allclose(cov, cov_ref, rtol=1e-6)


def test_samples_draw_the_slopes_from_their_posterior(fitted):
    t = fitted._trend
    x1 = (t.centre + t.spread)[None, :]  # one unit of the design's slope column
    _, trend_q = fitted._trend_draws(x1, 20000, None, seed=3)
    dev = (trend_q[:, 0] - fitted._trend_at(x1)[0] / fitted.y_std_) * fitted.y_std_
    slope_var = float((t.slope_root @ t.slope_root.T)[0, 0])
    assert slope_var > 0
    assert dev.mean() == pytest.approx(0, abs=4 * np.sqrt(slope_var / 20000))
    assert dev.var() == pytest.approx(slope_var, rel=0.05)
    # scaled by each sample's amplitude factor
    r = np.full(20000, 2.0)
    _, scaled = fitted._trend_draws(x1, 20000, r, seed=3)
    np.testing.assert_allclose(scaled - fitted._trend_at(x1) / fitted.y_std_,
                               2.0 * (trend_q - fitted._trend_at(x1) / fitted.y_std_),
                               rtol=1e-9, atol=1e-12)


def test_trend_follows_the_units_of_x_and_y(line):
    X, y, Xq, _ = line
    base = NDPRegressor(random_state=0, trend="linear", **FAST).fit(X, y)
    moved = NDPRegressor(random_state=0, trend="linear", **FAST).fit(10 * X + 3, 5 * y - 100)
    m0, s0 = base.predict(Xq, return_std=True)
    m1, s1 = moved.predict(10 * Xq + 3, return_std=True)
    np.testing.assert_allclose(m1, 5 * m0 - 100, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(s1, 5 * s0, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(moved.trend_coef_, base.trend_coef_ / 2, rtol=1e-4)


def test_every_sampling_call_carries_the_trend(fitted, line):
    X, y, Xq, _ = line
    # sample_prior: the prior's functions around the fitted trend
    no_trend = copy.deepcopy(fitted)
    no_trend._trend = None
    np.testing.assert_allclose(
        fitted.sample_prior(Xq, n_samples=4, random_state=0)
        - no_trend.sample_prior(Xq, n_samples=4, random_state=0),
        np.repeat(fitted._trend_at(Xq)[:, None], 4, axis=1), atol=1e-9)
    # predict, sample_posterior and log_likelihood agree on the same samples
    samples = fitted.sample_posterior(Xq, n_samples=32, random_state=5)
    assert abs(np.median(samples.mean(1) - fitted.predict(Xq))) < 0.5
    assert np.isfinite(fitted.log_likelihood(Xq, _line(Xq[:, 0])))
    assert fitted.log_likelihood(Xq, _line(Xq[:, 0])) > no_trend.log_likelihood(
        Xq, _line(Xq[:, 0])) + 1.0
    # the trend travels with the estimator
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict(Xq), fitted.predict(Xq))


def test_a_trend_that_cannot_be_fitted_is_refused(line):
    X, y, _, _ = line
    with pytest.raises(ValueError, match=r"trend='linear' cannot be fitted: it needs at least "
                                         r"5 context points for 1 varying feature\(s\); got 4"):
        NDPRegressor(trend="linear", **FAST).fit(X[:4], y[:4])
    with pytest.raises(ValueError, match="trend='linear' cannot be fitted: normalize_y=False"):
        NDPRegressor(trend="linear", normalize_y=False, **FAST).fit(X, y)
    with pytest.raises(ValueError, match="the context's inputs or y are constant"):
        NDPRegressor(trend="linear", **FAST).fit(X, np.ones(len(X)))
    with pytest.raises(InvalidParameterError, match="'trend' parameter"):
        NDPRegressor(trend="quadratic").fit(X, y)


def test_a_pickle_without_trend_attributes_loads_without_a_trend(line):
    X, y, Xq, _ = line
    est = NDPRegressor(random_state=0, **FAST).fit(X, y)
    state = est.__getstate__()
    for name in ("_trend", "trend_coef_", "trend_intercept_"):
        del state[name]
    loaded = NDPRegressor.__new__(NDPRegressor)
    loaded.__setstate__(state)
    assert loaded.trend_coef_ is None and loaded.trend_intercept_ is None
    np.testing.assert_array_equal(loaded.predict(Xq[:5]), est.predict(Xq[:5]))
