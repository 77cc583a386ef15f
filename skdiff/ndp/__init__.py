"""Neural Diffusion Processes as a GaussianProcessRegressor-style estimator."""

from ._estimator import NDPRegressor, gaussian_log_likelihood, log_likelihood_scorer

__all__ = ["NDPRegressor", "gaussian_log_likelihood", "log_likelihood_scorer"]
