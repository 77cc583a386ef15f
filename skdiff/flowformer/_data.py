"""Flowformer's data handling: sequence layout, per-channel scaling, the ridge skip start.

Sequences arrive as ``X`` of shape (n, L) (univariate) or (n, L, C) (multivariate, the
tslearn convention); everything downstream sees float32 (n, L, C). Each channel is
standardised with its mean and standard deviation over all training samples and steps
(computed in float64).
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_ragged", "ridge_skip"]


def check_ragged(X):
    """Refuse a ragged list of sequences with an error that says what to do."""
    if hasattr(X, "shape") or hasattr(X, "__array__"):
        return
    try:
        np.asarray(X, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        if "inhomogeneous" in str(exc) or "sequence" in str(exc):
            raise ValueError(
                "X is ragged: every sequence must have the same length (and channels). Pad "
                "or crop them, or cut a long series with skdiff.datasets.make_windows."
            ) from exc


#: Ridge penalties (times the number of rows) tried for the skip on the validation rows.
RIDGE_PENALTIES = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)


def _centred(F_all, ys, w_all, rows):
    """Weighted means, centred features and targets, normalised weights, and the ridge's
    normal equations (Gram matrix, right-hand side) over ``rows``."""
    F, y, w = F_all[rows], ys[rows], w_all[rows] / w_all[rows].sum()
    f_mean, y_mean = w @ F, w @ y
    Fc, yc = F - f_mean, y - y_mean
    return f_mean, y_mean, Fc, yc, w, Fc.T @ (w[:, None] * Fc), Fc.T @ (w[:, None] * yc)


def ridge_skip(F_all, ys, train, valid, n_skip_outputs, weights=None):
    """Closed-form ridge start of the instance-norm linear skip.

    ``F_all`` (n, f) are the skip's features of every row and ``ys`` (n, k) the standardised
    targets, rows weighted by ``weights`` (n,) when given. Without validation rows the ridge
    is fitted on the rows ``train`` with the penalty ``1e-3 n``. With them, the penalty is
    the one of ``n * RIDGE_PENALTIES`` whose fit on ``train`` has the lowest (weighted)
    validation MSE (the window features of many channels need a strong penalty), and the
    ridge is refitted with it on the training and validation rows, as ``RidgeCV`` refits:
    in forecasting the validation rows are the latest windows, the ones a linear forecast
    extrapolates from. Returns ``(weight, bias)`` of shapes (n_skip_outputs, f) and
    (n_skip_outputs,): the first k rows hold the ridge solution; with a Gaussian head
    (``n_skip_outputs == 2k``) the last k biases start at the inverse softplus of the
    ridge's residual variance.
    """
    w_all = np.ones(len(F_all)) if weights is None else np.asarray(weights, dtype=np.float64)
    eye = np.eye(F_all.shape[1])
    f_mean, y_mean, Fc, yc, w, gram, rhs = _centred(F_all, ys, w_all, train)
    alpha = 1e-3
    if valid is not None and len(valid):
        Fv, yv, wv = F_all[valid] - f_mean, ys[valid] - y_mean, w_all[valid]
        alpha = min(RIDGE_PENALTIES, key=lambda a: wv @ (
            (Fv @ np.linalg.solve(gram + a * eye, rhs) - yv) ** 2).mean(1))
        f_mean, y_mean, Fc, yc, w, gram, rhs = _centred(F_all, ys, w_all,
                                                        np.concatenate([train, valid]))
    W = np.linalg.solve(gram + alpha * eye, rhs)
    b = y_mean - f_mean @ W
    resid = np.maximum(w @ (yc - Fc @ W) ** 2, 1e-4)
    k = ys.shape[1]
    weight = np.zeros((n_skip_outputs, F_all.shape[1]))
    bias = np.zeros(n_skip_outputs)
    weight[:k], bias[:k] = W.T, b
    if n_skip_outputs == 2 * k:  # Gaussian head: inverse softplus of the residual variance
        bias[k:] = np.log(np.expm1(resid))
    return weight, bias
