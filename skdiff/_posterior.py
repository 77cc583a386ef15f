"""``sample_posterior`` through a scikit-learn ``Pipeline``."""

from __future__ import annotations

from sklearn.pipeline import Pipeline

__all__ = ["sample_posterior"]


def _final_step(estimator, X):
    """The estimator that a pipeline ends with, and ``X`` as it reaches it.

    A :class:`~sklearn.pipeline.Pipeline` (nested ones too) gives its last step and ``X``
    transformed by every step before it (``None`` and ``"passthrough"`` steps leave it as
    is); any other estimator is returned with ``X`` unchanged.
    """
    while isinstance(estimator, Pipeline):
        for _, step in estimator.steps[:-1]:
            if step is None or step == "passthrough":
                continue
            X = step.transform(X)
        estimator = estimator.steps[-1][1]
    return estimator, X


def sample_posterior(estimator, X, n_samples=100, random_state=None, **predict_params):
    """Posterior samples of a skdiff estimator, or of a pipeline that ends with one.

    A pipeline has no ``sample_posterior`` of its own, and calling the last step's directly
    skips the preceding transforms. This function runs ``X`` through every step but the last
    (their ``transform``), then calls the last step's ``sample_posterior``.

    Parameters
    ----------
    estimator : skdiff estimator or sklearn.pipeline.Pipeline
        Fitted; a pipeline's last step must have ``sample_posterior``.
    X : array-like
        Inputs, as the pipeline's (or estimator's) ``predict`` takes them.
    n_samples : int, default=100
        Samples drawn for every row, passed to the last step's ``sample_posterior``.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws, passed to the last step's ``sample_posterior``: an int repeats
        the samples, ``None`` draws fresh ones on every call.
    **predict_params
        Passed to the last step's ``sample_posterior`` (e.g. ``adjacency``).

    Returns
    -------
    samples : ndarray
        As the last step's ``sample_posterior`` returns them, sample axis last.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdiff import DIFFormerRegressor, sample_posterior
    >>> X = np.random.RandomState(0).normal(size=(60, 3))
    >>> pipe = make_pipeline(StandardScaler(), DIFFormerRegressor(n_layers=1, max_epochs=5,
    ...                                                             random_state=0))
    >>> sample_posterior(pipe.fit(X, X[:, 0]), X[:4], n_samples=7, random_state=0).shape
    (4, 7)
    """
    estimator, X = _final_step(estimator, X)
    if not hasattr(estimator, "sample_posterior"):
        raise TypeError(f"{type(estimator).__name__} has no sample_posterior; pass a skdiff "
                        "estimator or a pipeline that ends with one.")
    return estimator.sample_posterior(X, n_samples=n_samples, random_state=random_state,
                                      **predict_params)
