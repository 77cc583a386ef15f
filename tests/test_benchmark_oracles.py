"""The reference posteriors the NDP benchmarks score the network against.

``benchmarks/ndp_interpolation.py`` scores, beside each NDP, the exact Bayes posterior of a
marginalising prior's own task distribution (a mixture of GPs over its kernels and lengthscale
quantiles): the most that prior can score once perfectly trained. Checked here against
scikit-learn's GP posterior and marginal likelihood, component by component.
"""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skdiff.diffusion import PriorConfig


@pytest.fixture
def bench(monkeypatch):
    """``benchmarks/ndp_interpolation.py`` (it imports its sibling helpers by bare name)."""
    import importlib
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    return importlib.import_module("ndp_interpolation")


def _sk(kernel, lengthscale, variance, noise):
    base = RBF(lengthscale) if kernel == "se" else Matern(lengthscale, nu={
        "matern12": 0.5, "matern32": 1.5, "matern52": 2.5}[kernel])
    return GaussianProcessRegressor(ConstantKernel(variance) * base + WhiteKernel(noise),
                                    optimizer=None)


def _context(n_dims=1, seed=0):
    rng = np.random.RandomState(seed)
    Xc, Xt = rng.uniform(-2, 2, (5, n_dims)), rng.uniform(-2, 2, (7, n_dims))
    return Xc, np.sin(2 * Xc.sum(1)) + 0.05 * rng.standard_normal(5), Xt


@pytest.mark.parametrize("kernel, n_dims", [("se", 1), ("matern32", 2)])
def test_single_component_is_the_exact_gp(bench, kernel, n_dims):
    config = PriorConfig(kernel=kernel, lengthscale=0.4, variance=1.3, noise=0.01,
                         n_dims=n_dims)
    Xc, yc, Xt = _context(n_dims)
    w, means, covs = bench.prior_bayes_posterior(config, Xc, yc, Xt)
    gpr = _sk(kernel, 0.4 * np.sqrt(n_dims), 1.3, 0.01).fit(Xc, yc)
    mean, cov = gpr.predict(Xt, return_cov=True)  # noisy targets: the white term included
    np.testing.assert_allclose(w, [1.0])
    np.testing.assert_allclose(means[0], mean, atol=1e-10)
    np.testing.assert_allclose(covs[0], cov, atol=1e-10)
    yt = np.cos(Xt.sum(1))
    exact = bench.prior_bayes_metrics(config, Xc, yc, Xt, yt, n_samples=None)
    np.testing.assert_allclose(exact, bench.gp_moment_metrics(mean, cov + 1e-9 * np.eye(7), yt))


def test_mixture_weights_are_the_marginal_likelihoods(bench):
    """Two kernels times two lengthscale quantiles, equally weighted a priori: the posterior
    weights are the normalised marginal likelihoods of the context, and the mixture's
    moments follow."""
    config = PriorConfig(kernel=("se", "matern12"), lengthscale=("uniform", 0.2, 1.0),
                         noise=0.01, n_dims=1)
    Xc, yc, Xt = _context()
    w, means, covs = bench.prior_bayes_posterior(config, Xc, yc, Xt, n_lengthscales=2)
    comps = [_sk(k, ls, 1.0, 0.01).fit(Xc, yc) for k in ("se", "matern12") for ls in (0.4, 0.8)]
    log_ml = np.array([g.log_marginal_likelihood_value_ for g in comps])
    np.testing.assert_allclose(w, np.exp(log_ml - log_ml.max()) / np.exp(
        log_ml - log_ml.max()).sum(), rtol=1e-8)
    for i, g in enumerate(comps):
        np.testing.assert_allclose(means[i], g.predict(Xt), atol=1e-10)
    # samples of the mixture reproduce its moments
    yt = np.zeros(len(Xt))
    _, mse, _ = bench.prior_bayes_metrics(config, Xc, yc, Xt, yt, n_samples=20000, seed=0)
    np.testing.assert_allclose(mse, np.mean((w @ means) ** 2), rtol=0.05)
    assert bench.mixture(config) and not bench.mixture(PriorConfig(kernel="se", lengthscale=1.0))


@pytest.fixture
def oracle(monkeypatch):
    """``benchmarks/bayes_opt_oracle.py``."""
    import importlib
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    return importlib.import_module("bayes_opt_oracle")


def test_isotropic_oracle_is_the_prior_bayes_posterior(bench, oracle):
    """The regression oracle of the Bayesian-optimisation diagnosis, with one lengthscale
    shared by the dimensions, is the mixture mean of ``ndp_interpolation.py``'s Bayes
    posterior."""
    config = PriorConfig(kernel=("se", "matern32"), lengthscale=("lognormal", -0.8, 0.6),
                         noise=0.01, n_dims=2)
    Xc, yc, Xt = _context(n_dims=2)
    w, means, _ = bench.prior_bayes_posterior(config, Xc, yc, Xt, n_lengthscales=5)
    parts = oracle.components(config, per_dimension=False, n_quantiles=5)
    assert len(parts) == 10 and all(ls[0] == ls[1] for _, ls in parts)
    np.testing.assert_allclose(
        oracle.mixture_mean(parts, config.variance, config.noise, Xc, yc, Xt), w @ means,
        atol=1e-10)


def test_per_dimension_oracle_crosses_the_quantiles_and_scales_each_dimension(oracle):
    """One lengthscale per dimension: every combination of the quantiles, and each component
    is the GP with that anisotropic kernel (scikit-learn's RBF with a lengthscale vector)."""
    config = PriorConfig(kernel=("se", "matern12"), lengthscale=("uniform", 0.2, 1.0),
                         n_dims=2, scale_lengthscale_with_dims=False)
    parts = oracle.components(config, per_dimension=True, n_quantiles=3)
    assert len(parts) == 2 * 3 * 3
    assert {tuple(np.round(ls, 6)) for _, ls in parts} == {
        (a, b) for a in (0.333333, 0.6, 0.866667) for b in (0.333333, 0.6, 0.866667)}
    Xc, yc, Xt = _context(n_dims=2)
    gpr = GaussianProcessRegressor(ConstantKernel(1.3) * RBF([0.3, 0.8]) + WhiteKernel(0.01),
                                   optimizer=None).fit(Xc, yc)
    np.testing.assert_allclose(
        oracle.mixture_mean([("se", np.array([0.3, 0.8]))], 1.3, 0.01, Xc, yc, Xt),
        gpr.predict(Xt), atol=1e-10)


def test_isotropic_bayes_posterior_refuses_an_anisotropic_prior(bench):
    config = PriorConfig(n_dims=2, anisotropic=True)
    Xc, yc, Xt = _context(n_dims=2)
    with pytest.raises(ValueError, match="does not describe a prior trained with anisotropic"):
        bench.prior_bayes_posterior(config, Xc, yc, Xt)
