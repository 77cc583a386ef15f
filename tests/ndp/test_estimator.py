"""NDPRegressor with the shipped pretrained prior (1-D "gp")."""

import inspect
import pickle
import warnings

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdiff import NDPRegressor, log_likelihood_scorer
from skdiff.datasets import make_gp_functions
from skdiff.ndp import gaussian_log_likelihood
from skdiff.ndp._prior_cache import _MEMORY as _PRIOR_CACHE

FAST = dict(n_samples=32, n_sampling_steps=10, n_resample=3, device="cpu")


@pytest.fixture(scope="module")
def data():
    """One SE draw (lengthscale 0.5 on [-2, 2]): 9 context points, 20 targets."""
    d = make_gp_functions(1, 29, 1, kernel="se", lengthscale=0.5, random_state=3)
    X, y = d.X[0], d.y[0]
    return X[:9], y[:9], X[9:], y[9:]


@pytest.fixture(scope="module")
def fitted(data):
    X, y, _, _ = data
    return NDPRegressor(random_state=0, x_bounds=(-2, 2), **FAST).fit(X, y)


def test_a_query_far_outside_x_bounds_leaves_the_other_rows_as_they_are(fitted, data):
    # through the network's attention across points, one row far outside the domain used to
    # change the prediction at every other row of the call (a mean moved by its std and
    # more); it is now drawn apart, and the rows inside come out as without it
    _, _, Xt, _ = data
    inside = Xt[:3]
    mean, std = fitted.predict(inside, return_std=True)
    draws = fitted.sample_posterior(inside, n_samples=4, random_state=1)
    mixed = np.insert(inside, 1, [[30.0]], axis=0)
    with pytest.warns(UserWarning, match="far outside 'x_bounds'"):
        mean_m, std_m = fitted.predict(mixed, return_std=True)
    with pytest.warns(UserWarning, match="far outside 'x_bounds'") as caught:
        draws_m = fitted.sample_posterior(mixed, n_samples=4, random_state=1)
    assert caught[0].filename == __file__  # the caller's line, from each method
    with pytest.warns(UserWarning, match="far outside 'x_bounds'") as caught:
        fitted.score(mixed, np.zeros(len(mixed)))
    assert caught[0].filename == __file__
    keep = [0, 2, 3]
    for got, want in ((mean_m[keep], mean), (std_m[keep], std), (draws_m[keep], draws)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.isfinite(mean_m[1]) and std_m[1] > 0


def test_shapes_and_gpr_contract(fitted, data):
    _, _, Xt, _ = data
    mean = fitted.predict(Xt)
    m2, std = fitted.predict(Xt, return_std=True)
    m3, cov = fitted.predict(Xt, return_cov=True)
    assert mean.shape == std.shape == (20,) and cov.shape == (20, 20)
    np.testing.assert_allclose(mean, m2)  # deterministic predict
    assert np.all(std > 0)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), std, rtol=0.5)  # same sampler, one block
    with pytest.raises(RuntimeError, match="At most one of return_std or return_cov"):
        fitted.predict(Xt, return_std=True, return_cov=True)
    s = fitted.sample_posterior(Xt, n_samples=5, random_state=1)
    assert s.shape == (20, 5)
    np.testing.assert_array_equal(s, fitted.sample_y(Xt, n_samples=5, random_state=1))
    # sample_y keeps GaussianProcessRegressor.sample_y's signature, default seed 0 included
    from sklearn.gaussian_process import GaussianProcessRegressor

    assert (inspect.signature(type(fitted).sample_y).parameters
            == inspect.signature(GaussianProcessRegressor.sample_y).parameters)
    np.testing.assert_array_equal(fitted.sample_y(Xt[:6], n_samples=2),
                                  fitted.sample_posterior(Xt[:6], n_samples=2, random_state=0))
    assert fitted.sample_prior(Xt, n_samples=4, random_state=0).shape == (20, 4)


def test_repeatable_and_callers_rng_untouched(fitted, data):
    _, _, Xt, _ = data
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    a = fitted.sample_posterior(Xt, n_samples=3, random_state=7)
    b = fitted.sample_posterior(Xt, n_samples=3, random_state=7)
    assert torch.rand(1) == expected
    np.testing.assert_array_equal(a, b)
    c = fitted.sample_posterior(Xt, n_samples=3, random_state=8)
    assert not np.allclose(a, c)
    # a new fit with the same random_state predicts the same numbers
    refit = clone(fitted).fit(fitted.X_train_, fitted.y_train_ * fitted.y_std_ + fitted.y_mean_)
    np.testing.assert_allclose(refit.predict(Xt), fitted.predict(Xt), rtol=1e-5, atol=1e-6)


def test_affine_equivariance_of_the_maps(data):
    """The input map makes X's units irrelevant; y's standardisation carries over exactly."""
    X, y, Xt, _ = data
    base = NDPRegressor(random_state=0, **FAST).fit(X, y)
    m0, s0 = base.predict(Xt, return_std=True)
    moved = NDPRegressor(random_state=0, **FAST).fit(10 * X + 3, 5 * y - 100)
    m1, s1 = moved.predict(10 * Xt + 3, return_std=True)
    np.testing.assert_allclose(m1, 5 * m0 - 100, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(s1, 5 * s0, rtol=1e-4, atol=1e-4)
    # documented map: the box of the context and the queries -> 0.9 * [-2, 2], at most at
    # the context box's scale shrunk by x_shrink_, about the centre of the call's box
    Zc, Zq, _ = base._check_X(Xt)
    both = np.r_[Zc, Zq]
    ptp_all, ptp_context = np.ptp(np.r_[X, Xt]), np.ptp(X)
    scale = min(3.6 / ptp_all, 3.6 / ptp_context / base.x_shrink_)
    assert np.ptp(both) == pytest.approx(ptp_all * scale)
    assert both.min() + both.max() == pytest.approx(0.0, abs=1e-9)
    one = NDPRegressor(random_state=0, x_shrink=1, **FAST).fit(X, y)
    both = np.r_[one._check_X(Xt)[:2]]
    assert both.min() == pytest.approx(-1.8) and both.max() == pytest.approx(1.8)
    np.testing.assert_array_equal(base.X_train_, X)
    # y: centred, and scaled to the spread the prior's functions show at the mapped context
    Zc_fit = base._input_map(X)[1] * (X - base._input_map(X)[0])
    spread = base.prior_config_.expected_sample_variance(Zc_fit)
    assert 0.2 < spread < 1
    assert base.y_train_.mean() == pytest.approx(0, abs=1e-12)
    assert base.y_train_.var() == pytest.approx(spread, rel=1e-9)
    assert base.y_std_ == pytest.approx(y.std() / np.sqrt(spread), rel=1e-9)
    # queries far beyond the context stay in the domain: no extrapolation warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        base.predict(Xt * 50)


def test_amplitude_estimate_is_marginalised(data):
    """With the amplitude estimated from n context values, every sample draws its own factor
    r with nu over r^2 distributed as chi^2 with nu = max(n - 1, 3) degrees of freedom
    (stratified: one draw per quantile stratum); a single sample is a draw too, not the
    median."""
    X, y, Xt, _ = data
    est = NDPRegressor(random_state=0, **FAST).fit(X[:4], y[:4])
    assert est.scale_dof_ == 3
    # never fewer than 3 degrees of freedom: with 2 points (1 degree) the predictive would
    # have no finite variance
    assert NDPRegressor(**FAST).fit(X[:2], y[:2]).scale_dof_ == 3
    assert NDPRegressor(**FAST).fit(X, y).scale_dof_ == len(X) - 1
    r = est._amplitude_draws(4000, 5)
    np.testing.assert_array_equal(r, est._amplitude_draws(4000, 5))
    u = stats.chi2(3).sf(3 / r**2)  # the quantile each factor came from
    assert stats.kstest(u, "uniform").pvalue > 0.01
    np.testing.assert_array_equal(np.floor(np.sort(u) * 4000), np.arange(4000))  # 1 each
    singles = np.array([est._amplitude_draws(1, seed)[0] for seed in range(400)])
    assert stats.kstest(stats.chi2(3).sf(3 / singles**2), "uniform").pvalue > 0.01
    # no context estimate, no mixture
    assert NDPRegressor(normalize_y=False, **FAST).fit(X, y)._amplitude_draws(8, 0) is None
    # with 4 points the spread of the samples is wider than with the amplitude fixed
    wide = est.sample_posterior(Xt, n_samples=64, random_state=1).std(1)
    est.scale_dof_ = None
    fixed = est.sample_posterior(Xt, n_samples=64, random_state=1).std(1)
    assert np.median(wide / fixed) > 1.1


def test_interpolates_a_gp_draw(fitted, data):
    """Close to the held-out values and calibrated (exact GP with the true kernel on this task:
    RMSE 0.16, R^2 0.97, log-lik/point 0.69; predicting the mean: R^2 0)."""
    _, _, Xt, yt = data
    mean, std = fitted.predict(Xt, return_std=True)
    rmse = np.sqrt(np.mean((mean - yt) ** 2))
    assert rmse < 0.6 * np.std(yt)
    z = np.abs(mean - yt) / std
    assert np.mean(z < 2.5) >= 0.8
    assert fitted.score(Xt, yt) > 0.6
    assert fitted.log_likelihood(Xt, yt) > -1.0


def test_predict_noise_flag(data):
    X, y, Xt, _ = data
    with_noise = NDPRegressor(random_state=0, **FAST).fit(X, y)
    without = clone(with_noise).set_params(predict_noise=False).fit(X, y)
    m0, s0 = with_noise.predict(Xt, return_std=True)
    m1, s1 = without.predict(Xt, return_std=True)
    np.testing.assert_allclose(m0, m1)
    np.testing.assert_allclose(s1 ** 2, np.clip(s0 ** 2 - with_noise.noise_variance_, 0, None),
                               rtol=1e-6, atol=1e-10)
    assert np.all(s1 <= s0)


def test_bad_input(data):
    X, y, Xt, _ = data
    est = NDPRegressor(**FAST)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(Xn, y)
    with pytest.raises(ValueError, match="1 sample"):
        est.fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="single output"):
        est.fit(X, np.c_[y, y])
    with pytest.raises(ValueError, match=r"single output: .*got \(9, 0\)"):
        est.fit(X, np.empty((len(X), 0)))  # not reported as an X without columns
    with pytest.warns(UserWarning, match="y is constant"):
        const = clone(est).fit(X, np.full(len(y), 3.0))
    assert np.allclose(const.predict(Xt), 3.0, atol=1.0)
    fitted = clone(est).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(np.c_[Xt, Xt])
    with pytest.warns(UserWarning, match="far outside 'x_bounds'"):
        clone(fitted).set_params(x_bounds=(-2, 2)).fit(X, y).predict(Xt[:2] + 50)
    with pytest.warns(UserWarning, match=r"9 of the 9 training points lie far outside "
                                         r"'x_bounds' .*Widen 'x_bounds' to cover") as caught:
        make_pipeline(StandardScaler(with_std=False),
                      clone(est).set_params(x_bounds=(10, 20))).fit(X, y)
    assert caught[0].filename == __file__  # the caller's line, through a Pipeline
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inside, or within an eighth of the width: no warning
        clone(est).set_params(x_bounds=(X.min() + 0.1, X.max())).fit(X, y)
    with pytest.raises(ValueError, match="pretrained=True"):
        NDPRegressor(hidden_dim=32).fit(X, y)
    with pytest.raises(ValueError, match="x_bounds"):
        NDPRegressor(x_bounds=(1, -1)).fit(X, y)
    with pytest.raises(ValueError, match="'prior' must be a registered prior"):
        NDPRegressor(prior="nope", **FAST).fit(X, y)
    X7 = np.ones((5, 7)) * np.arange(5)[:, None]
    with pytest.warns(UserWarning, match="No pretrained prior 'gp' for 7 input dimensions") \
            as caught:
        assert NDPRegressor(**FAST).fit(X7, np.arange(5.0)).predict(X7[:2]).shape == (2,)
    assert caught[0].filename == __file__
    with pytest.raises(ValueError, match="joint=True needs n_samples"):
        fitted.log_likelihood(np.r_[Xt, Xt], np.zeros(2 * len(Xt)), joint=True)


def test_max_context_subsamples_with_warning(data):
    X, y, _, _ = data
    with pytest.warns(UserWarning, match="max_context") as caught:
        est = NDPRegressor(max_context=5, random_state=0, **FAST).fit(X, y)
    assert est.X_train_.shape == (5, 1)
    assert caught[0].filename == __file__


def test_pickle_clone_pipeline_gridsearch(fitted, data):
    X, y, Xt, yt = data
    module = fitted.module_
    loaded = pickle.loads(pickle.dumps(fitted))
    assert fitted.module_ is module  # pickling copies the weights to the CPU, not the model
    np.testing.assert_array_equal(loaded.predict(Xt), fitted.predict(Xt))
    pipe = make_pipeline(StandardScaler(), NDPRegressor(random_state=0, **FAST))
    assert pipe.fit(X, y).predict(Xt).shape == (20,)
    Xa, ya = np.r_[X, Xt], np.r_[y, yt]
    gs = GridSearchCV(NDPRegressor(random_state=0, **FAST), {"n_resample": [0, 3]},
                      scoring=log_likelihood_scorer, cv=2).fit(Xa, ya)
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))
    assert np.all(np.isfinite(cross_val_score(NDPRegressor(random_state=0, **FAST), Xa, ya,
                                              cv=2)))


def test_gaussian_log_likelihood_matches_scipy():
    from scipy.stats import multivariate_normal, norm

    rng = np.random.default_rng(0)
    samples = rng.normal(size=(3, 200)) + np.array([[1.0], [0.0], [-1.0]])
    y = np.array([0.5, 0.1, -0.7])
    mean, cov = samples.mean(1), np.cov(samples)
    ref = multivariate_normal(mean, cov).logpdf(y) / 3
    assert gaussian_log_likelihood(y, samples, joint=True) == pytest.approx(ref, rel=1e-6)
    ref_m = norm(mean, np.sqrt(np.diag(cov))).logpdf(y).mean()
    assert gaussian_log_likelihood(y, samples, joint=False) == pytest.approx(ref_m, rel=1e-6)


def test_pretrained_false_trains_once_and_caches(tmp_path, data):
    X, y, Xt, _ = data
    kw = dict(pretrained=False, hidden_dim=8, n_layers=1, n_heads=2, max_epochs=1,
              steps_per_epoch=2, batch_size=4, cache_dir=tmp_path, random_state=0, **FAST)
    a = NDPRegressor(**kw).fit(X, y)
    files = list(tmp_path.glob("prior_*.pt"))
    assert len(files) == 1
    assert a.module_.hidden_dim == 8
    _PRIOR_CACHE.clear()  # force the disk cache
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = NDPRegressor(**kw).fit(X, y)
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=1e-6)
    assert len(list(tmp_path.glob("prior_*.pt"))) == 1


def test_prior_trained_without_a_seed_is_shared_by_all_fits(tmp_path, data):
    # random_state=None gives every fit its own seed; the prior it trains does not take it,
    # so the folds of a cross-validation share one cached prior
    X, y, _, _ = data
    kw = dict(pretrained=False, hidden_dim=8, n_layers=1, n_heads=2, max_epochs=1,
              steps_per_epoch=2, batch_size=4, cache_dir=tmp_path, **FAST)
    a = NDPRegressor(**kw).fit(X, y)
    b = NDPRegressor(**kw).fit(X[:7], y[:7])
    assert a.seed_ != b.seed_
    assert len(list(tmp_path.glob("prior_*.pt"))) == 1
    for p, q in zip(a.module_.parameters(), b.module_.parameters()):
        assert torch.equal(p, q)
    NDPRegressor(**{**kw, "random_state": 5}).fit(X, y)  # an int seeds its own prior
    assert len(list(tmp_path.glob("prior_*.pt"))) == 2


def test_fit_leaves_the_callers_torch_random_state(data, monkeypatch):
    # the prior network is built (then overwritten by its weights) from a forked generator
    X, y, _, _ = data
    monkeypatch.setattr("skdiff.ndp._prior_cache._MEMORY", {})
    from skdiff.diffusion import TrainedPrior, load_prior

    module, config = load_prior("se", 1)
    for prior in ("se", TrainedPrior(config, module.state_dict())):
        torch.manual_seed(0)
        NDPRegressor(prior=prior, random_state=0, **FAST).fit(X, y)
        after_fit = torch.rand(3)
        torch.manual_seed(0)
        assert torch.equal(after_fit, torch.rand(3))


def test_return_cov_without_the_noise_is_a_covariance(data):
    # more query points than samples: the samples' covariance has eigenvalues below the
    # noise, which the noise-free covariance clips at zero instead of going negative
    X, y, Xt, _ = data
    reg = NDPRegressor(random_state=0, predict_noise=False,
                       **{**FAST, "n_samples": 8}).fit(X, y)
    _, cov = reg.predict(Xt, return_cov=True)
    _, noisy = reg.set_params(predict_noise=True).predict(Xt, return_cov=True)
    np.testing.assert_allclose(cov, cov.T, atol=1e-12)
    assert np.linalg.eigvalsh(cov).min() > -1e-10 * np.abs(cov).max()
    # the noise taken off the eigenvalues of the noisy samples' covariance, clipped at 0
    lam, vecs = np.linalg.eigh(noisy)
    ref = (vecs * np.clip(lam - reg.noise_variance_, 0, None)) @ vecs.T
    np.testing.assert_allclose(cov, ref, atol=1e-10)
    assert np.all(np.diag(cov) <= np.diag(noisy))


def test_an_exactly_linear_y_with_a_linear_trend_keeps_the_prior_spread():
    # residuals from the trend at the rounding level are taken as a constant: a unit scale
    # (as a constant y gets), not their own rounding-sized spread
    X = np.linspace(0, 1, 8)[:, None]
    y = 3.0 * X.ravel() + 2.0
    with pytest.warns(UserWarning, match="y is exactly linear in X") as caught:
        reg = NDPRegressor(trend="linear", random_state=0, **FAST).fit(X, y)
    assert caught[0].filename == __file__
    assert reg.y_std_ == 1.0 and reg.scale_dof_ is None
    mean, std = reg.predict(np.array([[0.5], [2.0]]), return_std=True)
    # the line, within the Monte Carlo error of the samples' mean
    assert np.all(np.abs(mean - [3.5, 8.0]) < 4 * std / np.sqrt(reg.n_samples))
    assert np.all(std > 0.03)  # the prior's noise at least, not rounding errors
    assert reg.sample_posterior(np.array([[2.0]]), n_samples=4, random_state=0).std() > 0.03
    # with two features the ARD map's choice of cap warns nothing more: one warning per fit
    X2 = np.random.RandomState(0).uniform(size=(20, 2))
    with pytest.warns(UserWarning, match="y is exactly linear in X") as caught:
        NDPRegressor(trend="linear", random_state=0, **FAST).fit(X2, X2 @ [3.0, -2.0] + 1.0)
    assert len(caught) == 1


def test_subset_predictions_agree_within_monte_carlo_error(fitted, data):
    """Here a subset of query points is a different Monte Carlo draw, not a different answer
    (the joint samples' marginals are consistent only approximately: docs/user_guide/ndp.md
    shows a task where they differ by more than the Monte Carlo error)."""
    _, _, Xt, _ = data
    mean, std = fitted.predict(Xt, return_std=True)
    sub = fitted.predict(Xt[:6])
    S = fitted.n_samples
    assert np.all(np.abs(sub - mean[:6]) < 4.5 * std[:6] * np.sqrt(2 / S) + 1e-6)


def test_samples_are_joint(fitted, data):
    """Neighbouring points move together within a sample; far points much less."""
    _, _, Xt, _ = data
    _, std = fitted.predict(Xt, return_std=True)
    x0 = Xt[np.argmax(std), 0]  # the least constrained target: the function varies most
    far = -2.0 if x0 > 0 else 2.0
    Xq = np.array([[x0], [x0 + 0.01], [far]])
    s = fitted.sample_posterior(Xq, n_samples=64, random_state=0)
    c = np.corrcoef(s)
    assert c[0, 1] > 0.9
    assert c[0, 1] > abs(c[0, 2]) + 0.2


def test_prior_from_a_weights_file_or_folder(tmp_path, data):
    import shutil

    from skdiff.diffusion.priors import weights_dir

    Xc, yc, Xt, _ = data
    for ext in (".pt", ".json"):
        shutil.copyfile(weights_dir() / f"se_d1{ext}", tmp_path / f"se_d1{ext}")
    by_name = NDPRegressor(prior="se", **FAST, random_state=0).fit(Xc, yc).predict(Xt)
    by_file = NDPRegressor(prior=tmp_path / "se_d1.pt", **FAST, random_state=0).fit(Xc, yc)
    by_folder = NDPRegressor(prior=str(tmp_path), **FAST, random_state=0).fit(Xc, yc)
    np.testing.assert_array_equal(by_file.predict(Xt), by_name)
    np.testing.assert_array_equal(by_folder.predict(Xt), by_name)
    # sampler="auto" follows the prior's configuration, not how it was named
    assert by_file.sampler_ == by_folder.sampler_ == "tweedie"
    with pytest.raises(ValueError, match="registered prior .* or the path of a weights file"):
        NDPRegressor(prior="nowhere/se_d1.pt").fit(Xc, yc)
    with pytest.raises(ValueError, match="pretrained=False trains a registered prior"):
        NDPRegressor(prior=str(tmp_path), pretrained=False).fit(Xc, yc)
    (tmp_path / "se_d1.pt").write_bytes(b"corrupt")
    with pytest.raises(ValueError, match="Checksum mismatch"):
        NDPRegressor(prior=tmp_path / "se_d1.pt").fit(Xc, yc)


def test_sampling_progress_only_with_verbose(fitted, data, capfd):
    X, y, Xq, _ = data
    fitted.sample_posterior(Xq[:4], n_samples=3, random_state=0)
    assert capfd.readouterr() == ("", "")
    loud = clone(fitted).set_params(verbose=1).fit(X, y)
    capfd.readouterr()
    loud.sample_posterior(Xq[:4], n_samples=3, random_state=0)
    out, err = capfd.readouterr()
    assert out == "" and "sampling" in err and "eval" in err


def test_log_likelihood_scorer_refuses_an_estimator_without_log_likelihood():
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.linear_model import Ridge

    X = np.arange(6.0).reshape(-1, 1)
    need = (r"log_likelihood method \(an NDPRegressor\), or a Pipeline whose last step has "
            "one; got a ")
    with pytest.raises(TypeError, match=need + "Ridge. Use an NDPRegressor, or a scikit-learn "
                       "scoring string"):
        log_likelihood_scorer(Ridge().fit(X, X[:, 0]), X, X[:, 0])
    with pytest.raises(TypeError, match=need + "Pipeline whose last step is a Ridge. End the "
                       "pipeline with an NDPRegressor"):
        log_likelihood_scorer(make_pipeline(StandardScaler(), Ridge()).fit(X, X[:, 0]), X,
                              X[:, 0])
    wrapped = TransformedTargetRegressor(NDPRegressor(random_state=0, **FAST), func=np.exp,
                                         inverse_func=np.log, check_inverse=False)
    with pytest.raises(TypeError, match=need + "TransformedTargetRegressor, a meta-estimator "
                       "around NDPRegressor. Only a Pipeline is unwrapped"):
        log_likelihood_scorer(wrapped.fit(X, X[:, 0]), X, X[:, 0])


def test_log_likelihood_scorer_scores_a_pipeline_as_its_last_step_on_the_transformed_X(data):
    """A pipeline ending with an NDPRegressor is scored as that step on X run through the
    steps before it, so the scorer serves a cross-validation of the pipeline (it refused
    any pipeline)."""
    from sklearn.model_selection import KFold, cross_validate

    X, y, Xt, yt = data
    X, Xt = 3 * X + 1, 3 * Xt + 1  # the scaler changes X
    pipe = make_pipeline(StandardScaler(), NDPRegressor(random_state=0, **FAST)).fit(X, y)
    assert log_likelihood_scorer(pipe, Xt, yt) == \
        log_likelihood_scorer(pipe[-1], pipe[0].transform(Xt), yt) == \
        pipe[-1].log_likelihood(pipe[0].transform(Xt), yt)
    Xa, ya = np.r_[X, Xt], np.r_[y, yt]
    cv = KFold(3, shuffle=True, random_state=0)
    scores = cross_validate(clone(pipe), Xa, ya, cv=cv, scoring=log_likelihood_scorer,
                            error_score="raise")["test_score"]
    by_hand = []
    for train, test in cv.split(Xa):
        fold = clone(pipe).fit(Xa[train], ya[train])
        by_hand.append(fold[-1].log_likelihood(fold[0].transform(Xa[test]), ya[test]))
    np.testing.assert_array_equal(scores, by_hand)
    assert np.all(np.isfinite(scores))


def test_numpy_integer_sizes_train_a_prior(tmp_path, data):
    X, y, Xq, _ = data
    ndp = NDPRegressor(pretrained=False, hidden_dim=np.int64(8), n_layers=np.int64(1),
                       n_heads=np.int64(2), max_epochs=np.int64(1), steps_per_epoch=np.int64(3),
                       n_samples=4, n_sampling_steps=3, cache_dir=tmp_path,
                       random_state=0).fit(X, y)
    assert ndp.prior_config_.hidden_dim == 8 and np.isfinite(ndp.predict(Xq[:3])).all()


def test_a_weights_file_with_non_finite_values_is_refused(tmp_path, data):
    from skdiff.diffusion.priors import PriorWeightsError, load_prior, save_prior

    Xc, yc, _, _ = data
    module, config = load_prior("se", n_dims=1)
    state = {k: v.clone() for k, v in module.state_dict().items()}
    first = next(k for k, v in state.items() if v.is_floating_point())
    state[first].view(-1)[0] = float("nan")
    save_prior("se", config, state, directory=tmp_path)  # a matching checksum, bad values
    with pytest.raises(PriorWeightsError, match="hold non-finite values"):
        NDPRegressor(prior=tmp_path / "se_d1.pt", **FAST).fit(Xc, yc)


def test_prediction_checks_parameters_set_after_fit_and_finite_y(fitted, data):
    _, _, Xq, yq = data
    bad = clone(fitted).set_params(n_samples=2)
    bad.__dict__.update({k: v for k, v in fitted.__dict__.items() if k.endswith("_")})
    bad.set_params(n_samples=1)
    with pytest.raises(ValueError, match="'n_samples' parameter of NDPRegressor"):
        bad.predict(Xq)
    with pytest.raises(ValueError, match="y holds 1 NaN or infinite values"):
        fitted.log_likelihood(Xq[:3], np.array([0.0, np.nan, 1.0]))


def test_ard_compression_is_the_smallest_cap_of_about_the_best_evidence():
    """x_compression="auto" against its definition, through fits at each fixed cap: the
    cap under which the prior's evidence of the context (in the units of y) is highest.
    On sin(5 x1) + x2 the ML-II lengthscale of x2 is 20 times x1's (the slope reads as a
    long lengthscale of large amplitude); compressing x2 that much leaves a function the
    prior cannot follow, and the chosen cap reproduces the context better than the
    10-fold one."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(20, 2))
    y = np.sin(5 * X[:, 0]) + X[:, 1]
    auto = NDPRegressor(random_state=0, **FAST).fit(X, y)
    l0, l1 = auto.x_lengthscales_
    assert l1 > 10 * l0
    scores = {}
    for cap in NDPRegressor._ARD_CAPS:
        fixed = NDPRegressor(x_compression=cap, random_state=0, **FAST).fit(X, y)
        assert fixed.x_compression_ == cap
        offset, scale = fixed._input_map(X)
        scores[cap] = (fixed.prior_config_.log_evidence((X - offset) * scale, fixed.y_train_)
                       - len(y) * np.log(fixed.y_std_))
    best = max(scores.values())
    assert auto.x_compression_ == max(scores, key=scores.get) < 10
    assert scores[10.0] < best - 2  # the full 10-fold compression is clearly less probable
    rms = {cap: np.sqrt(np.mean((est.predict(X) - y) ** 2)) for cap, est in (
        ("auto", auto), (10.0, NDPRegressor(x_compression=10, random_state=0, **FAST).fit(X, y)))}
    assert rms["auto"] < 0.6 * rms[10.0]
    # the box map is x_compression=1; one feature or "box" have no compression
    box = NDPRegressor(x_scaling="box", random_state=0, **FAST).fit(X, y)
    one = NDPRegressor(x_compression=1, random_state=0, **FAST).fit(X, y)
    np.testing.assert_allclose(one._input_map(X)[1], box._input_map(X)[1])
    assert box.x_compression_ is None
    assert NDPRegressor(**FAST).fit(X[:, :1], y).x_compression_ is None
    with pytest.raises(ValueError, match="'x_compression' parameter of NDPRegressor"):
        NDPRegressor(x_compression=0.5).fit(X, y)


def test_ard_input_map_weighs_features_by_their_lengthscales():
    """x_scaling="ard": a feature the function ignores is compressed (10-fold, the cap
    "auto" chooses for it) about the domain's centre; the map stays per-feature
    affine-equivariant and inside the domain, and it forecasts a function of one of two
    features far better than "box"."""
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(50, 2)) * [1.0, 100.0]
    y = np.sin(7 * X[:, 0])
    Xc, yc, Xq, yq = X[:20], y[:20], X[20:], y[20:]
    ard = NDPRegressor(random_state=0, x_shrink=1, **FAST).fit(Xc, yc)
    box = NDPRegressor(random_state=0, x_scaling="box", x_shrink=1, **FAST).fit(Xc, yc)
    assert box.x_lengthscales_ is None
    l0, l1 = ard.x_lengthscales_
    assert 0.1 < l0 < 1 and l1 > 1000  # feature 1 is irrelevant: ML-II sends it to its bound
    offset, scale = ard._input_map(np.r_[Xc, Xq])
    box_offset, box_scale = box._input_map(np.r_[Xc, Xq])
    assert ard.x_compression_ == 10.0
    np.testing.assert_allclose(scale, box_scale / [1.0, 10.0])  # the 10-fold cap
    np.testing.assert_allclose(offset[0], box_offset[0])
    Zc, Zq, _ = ard._check_X(Xq)
    Z = np.r_[Zc, Zq]
    assert Z[:, 0].min() == pytest.approx(-1.8) and Z[:, 0].max() == pytest.approx(1.8)
    assert Z[:, 1].min() == pytest.approx(-0.18) and Z[:, 1].max() == pytest.approx(0.18)
    mse_ard = np.mean((ard.predict(Xq) - yq) ** 2)
    mse_box = np.mean((box.predict(Xq) - yq) ** 2)
    assert mse_ard < 0.1 < mse_box and mse_ard < mse_box / 3
    # rescaling and shifting a feature changes nothing but the units
    moved = NDPRegressor(random_state=0, x_shrink=1, **FAST).fit(
        Xc * [3.0, 0.01] + [1.0, -5.0], yc)
    np.testing.assert_allclose(moved.x_lengthscales_, ard.x_lengthscales_ * [3.0, 0.01],
                               rtol=1e-3)
    np.testing.assert_allclose(moved.predict(Xq * [3.0, 0.01] + [1.0, -5.0]),
                               ard.predict(Xq), rtol=1e-3, atol=1e-3)
    # too few context points for 2 lengthscales (< 2 D + 1), or one feature: the box map
    assert NDPRegressor(**FAST).fit(Xc[:4], yc[:4]).x_lengthscales_ is None
    assert NDPRegressor(**FAST).fit(Xc[:, :1], yc).x_lengthscales_ is None
    with pytest.raises(ValueError, match="x_scaling"):
        NDPRegressor(x_scaling="ARD").fit(Xc, yc)


def test_alpha_noisy_context_is_smoothed_through():
    """alpha="auto": the noise of a context noisier than the prior's values is estimated
    by its ML-II GP; every sample conditions on its own draw of the context's
    values given the observations (the GP's Gaussian posterior), so the samples smooth
    through the noise, and new observations carry it."""
    from sklearn.gaussian_process import GaussianProcessRegressor

    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, size=(90, 1))
    f = np.sin(X[:, 0])
    y = f + 0.4 * rng.normal(size=90)
    Xc, yc, Xq = X[:20], y[:20], X[20:]
    auto = NDPRegressor(random_state=0, **FAST).fit(Xc, yc)
    plain = NDPRegressor(random_state=0, alpha=0, **FAST).fit(Xc, yc)
    assert plain.alpha_ == 0 and plain.context_posterior_ is None
    assert 0.05 < auto.alpha_ < 0.4  # true extra variance: 0.16 less the prior's
    assert auto.noise_variance_ == pytest.approx(plain.noise_variance_ + auto.alpha_, rel=1e-12)
    # the context posterior: the values at the prior's noise given the observations, each
    # an observation less its extra noise (dense reference in the units of y)
    mean, cov = auto.context_posterior_
    mean, cov = mean * auto.y_std_ + auto.y_mean_, cov * auto.y_std_ ** 2
    gp = auto._context_gp(Xc, yc)
    prior_noise = auto.noise_variance_ - auto.alpha_
    K = gp.gpr.kernel_.k1(gp.X) * gp.y_scale ** 2
    B = K + prior_noise * np.eye(20)
    C_inv = np.linalg.inv(B + auto.alpha_ * np.eye(20))
    np.testing.assert_allclose(mean, gp.y_loc + B @ C_inv @ (yc - gp.y_loc), atol=1e-6)
    np.testing.assert_allclose(cov, B - B @ C_inv @ B, atol=1e-6)
    # a GP at the prior's noise conditioned on those draws is, on average over them, the
    # GP's posterior given the observations at the total noise (sklearn's predictive of
    # the signal: whole fitted noise on the diagonal of its covariance, less it)
    Xq_s = Xq[:10] / (Xc.max(0) - Xc.min(0))
    Kqc = gp.gpr.kernel_.k1(Xq_s, gp.X) * gp.y_scale ** 2
    Kqq = gp.gpr.kernel_.k1(Xq_s) * gp.y_scale ** 2
    G = Kqc @ np.linalg.inv(B)
    composed_mean = gp.y_loc + G @ (mean - gp.y_loc)
    composed_cov = Kqq - G @ Kqc.T + G @ cov @ G.T
    ref = GaussianProcessRegressor(gp.gpr.kernel_, optimizer=None).fit(gp.X, gp.z)
    m_ref, c_ref = ref.predict(Xq_s, return_cov=True)
    total = float(gp.gpr.kernel_.k2.noise_level)
    assert total * gp.y_scale ** 2 == pytest.approx(auto.noise_variance_, rel=1e-9)
    np.testing.assert_allclose(composed_mean, gp.y_loc + gp.y_scale * m_ref, atol=1e-6)
    np.testing.assert_allclose(composed_cov, (c_ref - total * np.eye(10)) * gp.y_scale ** 2,
                               atol=1e-6)
    # as the extra noise vanishes, the draws collapse onto the observations (alpha=0)
    tiny = NDPRegressor(random_state=0, alpha=1e-9, **FAST).fit(Xc, yc)
    np.testing.assert_allclose(tiny.context_posterior_[0], plain.y_train_, atol=1e-5)
    assert np.abs(tiny.context_posterior_[1]).max() < 1e-6
    # means closer to the function; 95 % intervals that cover new observations (passing
    # through the noisy values, alpha=0 covers 0.53 of them)
    (m_auto, s_auto), (m_plain, s_plain) = (e.predict(Xq, return_std=True)
                                            for e in (auto, plain))
    assert np.mean((m_auto - f[20:]) ** 2) < np.mean((m_plain - f[20:]) ** 2)
    cover_auto, cover_plain = (np.mean(np.abs(y[20:] - m) <= 1.96 * sd)
                               for m, sd in ((m_auto, s_auto), (m_plain, s_plain)))
    assert cover_auto > 0.8 and cover_auto > cover_plain + 0.2
    # a declared alpha is used as given; a smooth, nearly noiseless context gets none
    given = NDPRegressor(random_state=0, alpha=0.1, **FAST).fit(Xc, yc)
    assert given.alpha_ == 0.1 and given.context_posterior_ is not None
    smooth = NDPRegressor(random_state=0, **FAST).fit(Xc, f[:20])
    assert smooth.alpha_ == 0 and smooth.context_posterior_ is None
    with pytest.raises(ValueError, match="alpha"):
        NDPRegressor(alpha=-1.0).fit(Xc, yc)
    # too few points for the context's GP: a given alpha is not applied, and says so
    with pytest.warns(UserWarning,
                      match=r"alpha=0.1 is not applied: the context's GP needs") as caught:
        two = NDPRegressor(alpha=0.1, **FAST).fit(Xc[:2], yc[:2])
    assert caught[0].filename == __file__
    assert two.alpha_ == 0.0 and two.context_posterior_ is None


@pytest.mark.parametrize("seed", [0, 1, 6])
def test_alpha_auto_keeps_the_noise_of_a_small_context(seed):
    """alpha="auto" is the ML-II noise less the prior's even where 6 noisy points cannot
    pass a likelihood-ratio test against the prior's noise: kept at the prior's noise, the
    samples pass through the noisy values and score the new observations' joint density
    several nats per point lower (measured: 3.8, 8.6 and 20.6)."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2, 2, size=(36, 1))
    y = np.sin(1.5 * X[:, 0]) + 0.3 * rng.normal(size=36)
    Xc, yc, Xq, yq = X[:6], y[:6], X[6:], y[6:]
    params = dict(FAST, n_samples=64)
    auto = NDPRegressor(random_state=0, **params).fit(Xc, yc)
    plain = NDPRegressor(random_state=0, alpha=0, **params).fit(Xc, yc)
    gp = auto._context_gp(Xc, yc)
    prior_noise = auto.prior_config_.noise * auto.y_std_ ** 2
    ml_noise = gp.gpr.kernel_.k2.noise_level * gp.y_scale ** 2
    assert auto.alpha_ == pytest.approx(ml_noise - prior_noise, rel=1e-12)
    assert auto.alpha_ > 0
    # a test at 95 % would keep the prior's noise: the free noise gains < 1.92 nats
    fixed = auto._gp_fit(gp.X, gp.z, gp.n_lengthscales, noise=prior_noise / gp.y_scale ** 2)
    assert gp.gpr.log_marginal_likelihood_value_ - fixed.log_marginal_likelihood_value_ < 1.92
    gain = auto.log_likelihood(Xq, yq, joint=True) - plain.log_likelihood(Xq, yq, joint=True)
    assert gain > 2.0


# 40 cubic levels of T = 500 merge to 36 distinct ones (35 steps: 23 from levels >= 40), 32
# to 29, 64 to 55 and 12 to 11 (10 steps: 7 from levels >= 40). A step repeated U times costs U + 1
# evaluations, plus one for the last level: the tiered path 23 * 5 + 12 * 2 + 1 = 140,
# the fast sampler 28 * 5 + 1 = 141; with 12 levels 7 * 5 + 3 * 2 + 1 = 42 (tiered) and
# 10 * 2 + 1 = 21 (fast, U = 1). sample_prior evaluates once per distinct level.
@pytest.mark.parametrize("params, sampler, n_evals, n_prior_evals", [
    ({}, "fast", 141, 29),                          # the default "auto" with the gp prior
    ({"prior": "se"}, "tweedie", 55, 55),           # ... and with a per-kernel prior
    ({"prior": "matern52", "sampler": "fast"}, "fast", 141, 29),
    ({"sampler": "tiered"}, "tiered", 140, 36),
    ({"sampler": "tiered", "n_sampling_steps": 12}, "tiered", 42, 11),
    ({"sampler": "tiered", "n_sampling_steps": 12, "n_resample": 0}, "tiered", 11, 11),
    ({"n_sampling_steps": 12, "n_resample": 1}, "fast", 21, 11),
    # Tweedie correction: 64 cubic levels (55 distinct), one evaluation each, no repeats
    ({"sampler": "tweedie"}, "tweedie", 55, 55),
    ({"sampler": "tweedie", "n_sampling_steps": 12, "n_resample": 3}, "tweedie", 11, 11),
])
def test_sampler_network_evaluations(data, params, sampler, n_evals, n_prior_evals):
    """One sampling call evaluates the network once per reverse step of its level path:
    ``sample_posterior`` along the RePaint path, ``sample_prior`` once per level."""
    X, y, Xt, _ = data
    est = NDPRegressor(n_samples=2, x_bounds=(-2, 2), random_state=0, device="cpu",
                       **params).fit(X, y)
    assert est.sampler == params.get("sampler", "auto") and est.sampler_ == sampler
    calls = []
    handle = est.module_.register_forward_hook(lambda *args: calls.append(1))
    try:
        samples = est.sample_posterior(Xt[:5], n_samples=2, random_state=0)
        n_posterior = len(calls)
        prior = est.sample_prior(Xt[:5], n_samples=2, random_state=0)
    finally:
        handle.remove()
    assert n_posterior == n_evals and samples.shape == (5, 2) and np.isfinite(samples).all()
    assert len(calls) - n_posterior == n_prior_evals
    assert prior.shape == (5, 2) and np.isfinite(prior).all()
    # like every sampling parameter, the sampler is read at each call
    assert est.set_params(sampler="ddpm").sampler_ == "ddpm"
    with pytest.raises(ValueError, match=r"'sampler' parameter .*'tiered'.*Got 'tired'"):
        NDPRegressor(sampler="tired").fit(X, y)


def test_boolean_and_integer_targets_fit_as_their_float_values():
    """y of dtype bool or int is fitted as the same values in float64 (the context's GP
    behind alpha="auto" once failed on a boolean y with numpy's boolean subtract)."""
    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, size=(12, 1))
    y = X[:, 0] > 0
    ref = NDPRegressor(random_state=0, **FAST).fit(X, y.astype(np.float64)).predict(X[:4])
    for target in (y, y.astype(np.int64)):
        pred = NDPRegressor(random_state=0, **FAST).fit(X, target).predict(X[:4])
        np.testing.assert_array_equal(pred, ref)


def test_a_constant_feature_is_ignored_by_the_context_gp():
    # as a stationary kernel ignores it: the noise estimate, an explicit alpha, the linear
    # trend and the ARD lengthscales come out as without the feature
    rng = np.random.RandomState(0)
    X = rng.uniform(0, 5, (30, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.4 * rng.normal(size=30)
    Xc = np.c_[X, np.full(30, 2.0)]
    plain, const = NDPRegressor(**FAST).fit(X, y), NDPRegressor(**FAST).fit(Xc, y)
    # the same noise estimate (alpha_ is its part beyond the prior's own noise, which
    # depends on the prior of 2 or 3 features)
    assert const.alpha_ > 0.02
    np.testing.assert_allclose(const.noise_variance_, plain.noise_variance_, rtol=1e-6)
    np.testing.assert_allclose(const.x_lengthscales_[:2], plain.x_lengthscales_, rtol=1e-6)
    assert const.x_lengthscales_[2] == np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # applied, not refused with a warning
        assert NDPRegressor(**FAST, alpha=0.16).fit(Xc, y).alpha_ == 0.16
    lin, lin_c = (NDPRegressor(**FAST, trend="linear").fit(Z, y) for Z in (X, Xc))
    np.testing.assert_allclose(lin_c.trend_coef_, np.r_[lin.trend_coef_, 0.0], rtol=1e-6)
    np.testing.assert_allclose(lin_c.trend_intercept_, lin.trend_intercept_, rtol=1e-6)
    mean, std = lin_c.predict(np.c_[X[:5], np.full(5, 2.0)], return_std=True)
    assert np.isfinite(mean).all() and np.all(std > 0)


def test_points_that_all_share_one_input_read_their_spread_as_noise():
    # repeated measurements at one input differ by noise only: the spread of y is the
    # noise (alpha, as a GP with a white-noise kernel fits it), not a process amplitude
    # read off the prior's noise alone (which made it 20 times y's spread)
    X = np.zeros((6, 1))
    y = np.array([0.0, 1.0, 0.2, 0.5, 0.4, 0.9])
    est = NDPRegressor(random_state=0, n_samples=32).fit(X, y)
    assert 0.5 * y.std() < est.y_std_ < 2 * y.std()
    np.testing.assert_allclose(est.noise_variance_, y.var(), rtol=0.05)
    mean, std = est.predict(np.zeros((1, 1)), return_std=True)
    assert abs(mean[0] - y.mean()) < 0.2 and 0.2 < std[0] < 0.6
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an explicit alpha is applied, not refused
        assert NDPRegressor(random_state=0, alpha=0.1).fit(X, y).alpha_ == 0.1


def test_the_input_map_shrinks_a_smooth_context_by_the_most_probable_factor():
    """x_shrink="auto" against its definition: the factor of ``_SHRINKS`` under which the
    prior's evidence of the context (in the units of y) is highest. A smooth draw
    (lengthscale 0.3 of the interval) is most probable shrunk, a rough one (0.05) at the
    box map; a call keeps the shrunk scale for queries inside the context's reach and widens
    it only for queries that need it; x_shrink=1 is the box map."""
    def task(lengthscale, seed):
        d = make_gp_functions(1, 12, kernel="se", lengthscale=4 * lengthscale,
                              noise=0.02 ** 2, random_state=seed)
        return (d.X[0] + 2.0) * 250.0, 0.37 + 1e-3 * d.y[0]

    X, y = task(0.3, 1)
    auto = NDPRegressor(random_state=0, x_shrink="auto", **FAST).fit(X, y)
    scores = {}
    for factor in NDPRegressor._SHRINKS:
        fixed = NDPRegressor(x_shrink=factor, random_state=0, **FAST).fit(X, y)
        assert fixed.x_shrink_ == factor
        offset, scale = fixed._input_map(X)
        scores[factor] = (fixed.prior_config_.log_evidence((X - offset) * scale,
                                                            fixed.y_train_)
                          - len(y) * np.log(fixed.y_std_))
    assert auto.x_shrink_ == max(scores, key=scores.get) > 1
    # the map: the context's box at x_margin of the domain, shrunk about the call's centre
    one = NDPRegressor(x_shrink=1, random_state=0, **FAST).fit(X, y)
    _, box_scale = one._input_map(X)
    offset, scale = auto._input_map(X)
    np.testing.assert_allclose(scale, box_scale / auto.x_shrink_)
    np.testing.assert_allclose(offset, (X.min() + X.max()) / 2)  # to the domain's centre
    # a query beyond the shrunk reach widens the box as the box map does
    far = np.array([[X.max() + 10 * np.ptp(X)]])
    np.testing.assert_allclose(auto._input_map(np.r_[X, far])[1],
                               one._input_map(np.r_[X, far])[1])
    # rough functions stay at the box map; x_bounds has no shrink
    assert NDPRegressor(random_state=0, x_shrink="auto", **FAST).fit(
        *task(0.05, 2)).x_shrink_ == 1.0
    assert NDPRegressor(x_bounds=(0, 1000), x_shrink="auto", **FAST).fit(X, y).x_shrink_ is None
    assert NDPRegressor(**FAST).fit(X, y).x_shrink_ == auto.x_shrink_  # the default
    with pytest.raises(ValueError, match="'x_shrink' parameter of NDPRegressor"):
        NDPRegressor(x_shrink=0.5).fit(X, y)


def test_score_and_log_likelihood_take_one_target_per_row(fitted, data):
    # a row vector (1, n_X) used to be flattened into one value per row and scored
    # (GaussianProcessRegressor.score refuses it); a column (n_X, 1) scores as its values
    _, _, Xt, yt = data
    X3, y3 = Xt[:3], yt[:3]
    assert fitted.score(X3, y3[:, None]) == fitted.score(X3, y3)
    assert fitted.log_likelihood(X3, y3[:, None]) == fitted.log_likelihood(X3, y3)
    for method in ("score", "log_likelihood"):
        for bad in (y3[None, :], np.c_[y3, y3]):
            with pytest.raises(ValueError, match=(
                    rf"y of NDPRegressor.{method} must hold one value per row of X, of shape "
                    rf"\(n_X,\) or \(n_X, 1\); got shape \({bad.shape[0]}, {bad.shape[1]}\)")):
                getattr(fitted, method)(X3, bad)
    # and a weight array that is not one weight per row
    with pytest.raises(ValueError, match=r"sample_weight of NDPRegressor.score must be 1-D, "
                                         r"one weight per row of X; got shape \(1, 3\)"):
        fitted.score(X3, y3, sample_weight=np.ones((1, 3)))


def test_alpha_per_point_array_is_refused_with_the_reason(data):
    # GaussianProcessRegressor's alpha takes one variance per training point; here the
    # error says that only one is supported and what to pass, not just the accepted types
    from sklearn.utils._param_validation import InvalidParameterError

    X, y, _, _ = data
    for alpha in (np.full(len(X), 0.01), [0.01] * len(X)):
        with pytest.raises(InvalidParameterError, match=(
                r"'alpha' parameter of NDPRegressor must be 'auto' or one float >= 0.*got an "
                r"array of shape \(9,\)\. Per-point noise variances.*float\(np\.max\(alpha\)\)")):
            NDPRegressor(alpha=alpha, **FAST).fit(X, y)
    est = NDPRegressor(alpha=0.01, **FAST).fit(X, y)
    assert est.alpha_ == 0.01
    with pytest.raises(InvalidParameterError, match="Per-point noise variances"):
        est.set_params(alpha=np.full(len(X), 0.01)).predict(X[:2])  # checked at predict too


def test_tweedie_sampler_follows_a_smooth_context_closer_than_repaint():
    """Smooth SE draws (lengthscale 0.35 times the interval), 6 noisy points, 30 queries:
    the Tweedie-corrected sampler's mean lies closer to the function than the fast RePaint
    sampler's on every draw, and several times closer on average, at under half the network
    evaluations (55 against 141). Measured (32 samples, as here): squared errors 0.080,
    0.206, 0.039, 0.037 against 0.172, 0.301, 0.056, 1.10."""
    from skdiff.datasets._gp import gp_kernel

    errors = {"fast": [], "tweedie": []}
    for seed in range(4):
        rng = np.random.RandomState(seed)
        x = np.sort(rng.uniform(0, 10, 36))
        K = gp_kernel(x[:, None], x[:, None], "se", 3.5) + 1e-8 * np.eye(36)
        f = np.linalg.cholesky(K) @ rng.standard_normal(36)
        idx = rng.permutation(36)
        c, q = idx[:6], idx[6:]
        y = f[c] + 0.02 * rng.standard_normal(6)
        for sampler, err in errors.items():
            est = NDPRegressor(sampler=sampler, n_samples=32, random_state=0, device="cpu")
            err.append(np.mean((est.fit(x[c, None], y).predict(x[q, None]) - f[q]) ** 2))
    fast, tweedie = np.array(errors["fast"]), np.array(errors["tweedie"])
    assert np.all(tweedie < 1.1 * fast), errors
    assert tweedie.mean() < 0.5 * fast.mean(), errors


def test_auto_sampler_follows_the_prior_configuration():
    """sampler="auto": the Tweedie correction with a one-kernel prior in one and two
    dimensions, the tiered path in three, the fast path with the marginalising prior and
    with a prior trained on functions."""
    from skdiff.diffusion.priors import get_prior_config
    from skdiff.ndp._estimator import auto_sampler

    for name in ("se", "matern52"):
        assert [auto_sampler(get_prior_config(name, d)) for d in (1, 2, 3)] == [
            "tweedie", "tweedie", "tiered"]
    gp = get_prior_config("gp", 1)
    assert auto_sampler(gp) == "fast"
    t = np.linspace(0, 1, 5)[:, None]
    assert auto_sampler(gp.for_functions([(t, t[:, 0]), (t, t[:, 0] ** 2)])) == "fast"
