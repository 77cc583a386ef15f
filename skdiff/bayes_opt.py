"""Bayesian optimisation by Thompson sampling over joint posterior function samples.

The paper's experiment (Dutordoir et al., 2023, Sec. 5.3): at every iteration, draw one joint
sample of the objective on a random candidate set from the model's posterior given the
evaluations so far, and evaluate the objective where that sample is lowest. With an
:class:`~skdiff.NDPRegressor` the prior network is pretrained, so "refitting" at each iteration
only stores the new context: there is no retraining between iterations.

Any regressor with ``sample_y(X, n_samples, random_state)`` works as the model, e.g.
``sklearn.gaussian_process.GaussianProcessRegressor`` (which refits its kernel by ML-II each
iteration); ``model="random"`` gives random search on the same candidate sets.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import clone
from sklearn.utils import Bunch, check_random_state

__all__ = ["hartmann3", "thompson_sampling"]

_H3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_H3_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547],
                         [381, 5743, 8828]])
_H3_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
#: Global minimum of :func:`hartmann3` on [0, 1]^3.
HARTMANN3_MIN = -3.86278


def hartmann3(X):
    """The 3-D Hartmann function on :math:`[0, 1]^3` (minimum -3.86278 at
    (0.1146, 0.5556, 0.8525)): :math:`f(x) = -\\sum_{i=1}^4 \\alpha_i
    \\exp(-\\sum_{j=1}^3 A_{ij}(x_j - P_{ij})^2)`.

    Parameters
    ----------
    X : array-like of shape (n, 3)

    Returns
    -------
    f : ndarray of shape (n,)
    """
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    if X.shape[-1] != 3:
        raise ValueError(f"hartmann3 takes points of dimension 3; got shape {X.shape}.")
    d2 = (_H3_A[None] * (X[:, None, :] - _H3_P[None]) ** 2).sum(-1)  # [n, 4]
    return -(np.exp(-d2) * _H3_ALPHA).sum(-1)


def thompson_sampling(objective, bounds, *, model=None, n_iter=20, n_init=3, n_candidates=64,
                      random_state=None, verbose=0):
    """Minimise a black-box ``objective`` by Thompson sampling on random candidate sets.

    Parameters
    ----------
    objective : callable
        ``objective(X)`` with ``X`` of shape (n, d) returns (n,) values to minimise.
    bounds : array-like of shape (d, 2)
        Box of the search space.
    model : estimator, "random" or None, default=None
        A regressor with ``fit`` and ``sample_y``; ``None`` uses
        ``NDPRegressor(x_bounds=bounds)`` (the bounds fix the input map, so every iteration
        conditions the same prior); ``"random"`` picks a uniformly random candidate.
    n_iter : int, default=20
        Evaluations after the initial design.
    n_init : int, default=3
        Uniform random initial evaluations.
    n_candidates : int, default=64
        Fresh uniform candidates per iteration, sampled jointly.
    random_state : int, RandomState or None, default=None
    verbose : int, default=0
        Print the best value after every iteration.

    Returns
    -------
    result : Bunch
        ``X`` (n_init + n_iter, d) and ``y`` evaluated points and values, ``best_so_far``
        (n_init + n_iter,) running minimum, ``x_best``, ``y_best``.

    Examples
    --------
    >>> from sklearn.gaussian_process import GaussianProcessRegressor
    >>> from skdiff.bayes_opt import hartmann3, thompson_sampling
    >>> res = thompson_sampling(hartmann3, [(0, 1)] * 3, model="random", n_iter=5,
    ...                         random_state=0)
    >>> res.X.shape, res.best_so_far.shape
    ((8, 3), (8,))
    """
    rng = check_random_state(random_state)
    b = np.asarray(bounds, dtype=np.float64)
    if b.ndim != 2 or b.shape[1] != 2 or np.any(b[:, 1] <= b[:, 0]):
        raise ValueError(f"'bounds' must have shape (d, 2) with low < high; got {bounds!r}.")
    for name, v, lo in (("n_iter", n_iter, 0), ("n_init", n_init, 1),
                        ("n_candidates", n_candidates, 1)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < lo:
            raise ValueError(f"'{name}' must be an integer >= {lo}; got {v!r}.")
    d = b.shape[0]
    if model is None:
        from .ndp import NDPRegressor

        model = NDPRegressor(x_bounds=b, random_state=rng.randint(2**31 - 1))
    elif not (isinstance(model, str) and model == "random"):
        if not (hasattr(model, "fit") and hasattr(model, "sample_y")):
            raise TypeError(
                "'model' must be a regressor with fit and sample_y (e.g. NDPRegressor or "
                f"GaussianProcessRegressor), 'random' or None; got {model!r}."
            )
        model = clone(model)

    def uniform(n):
        return b[:, 0] + (b[:, 1] - b[:, 0]) * rng.uniform(size=(n, d))

    X = uniform(n_init)
    y = np.asarray(objective(X), dtype=np.float64).ravel()
    for it in range(n_iter):
        cand = uniform(n_candidates)
        if isinstance(model, str):
            pick = 0
        else:
            model.fit(X, y)
            f = model.sample_y(cand, n_samples=1, random_state=rng.randint(2**31 - 1))
            pick = int(np.argmin(np.asarray(f).reshape(n_candidates, -1)[:, 0]))
        x_new = cand[pick:pick + 1]
        X = np.vstack([X, x_new])
        y = np.concatenate([y, np.asarray(objective(x_new), dtype=np.float64).ravel()])
        if verbose:
            print(f"iter {it + 1}/{n_iter}: f = {y[-1]:.4f}, best = {y.min():.4f}", flush=True)
    best = int(np.argmin(y))
    return Bunch(X=X, y=y, best_so_far=np.minimum.accumulate(y), x_best=X[best],
                 y_best=float(y[best]))
