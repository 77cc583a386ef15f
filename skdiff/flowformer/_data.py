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
RIDGE_PENALTIES = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)


def ridge_skip(F_all, ys, train, valid, n_skip_outputs, weights=None):
    """Closed-form ridge start of the instance-norm linear skip.

    ``F_all`` (n, f) are the skip's features of every row and ``ys`` (n, k) the standardised
    targets; the ridge is fitted on the rows ``train``, weighted by ``weights`` (n,) when
    given. The penalty is ``1e-3 n`` or, with validation rows, the one of
    ``n * RIDGE_PENALTIES`` with the lowest (weighted) validation MSE (the window features
    of many channels need a strong penalty). Returns ``(weight, bias)`` of shapes
    (n_skip_outputs, f) and (n_skip_outputs,): the first k rows hold the ridge solution;
    with a Gaussian head (``n_skip_outputs == 2k``) the last k biases start at the inverse
    softplus of the ridge's residual variance.
    """
    w_all = np.ones(len(F_all)) if weights is None else np.asarray(weights, dtype=np.float64)
    F, ytr, w = F_all[train], ys[train], w_all[train] / w_all[train].sum()
    f_mean, y_mean = w @ F, w @ ytr
    Fc, yc = F - f_mean, ytr - y_mean
    k = ys.shape[1]
    gram, rhs = Fc.T @ (w[:, None] * Fc), Fc.T @ (w[:, None] * yc)
    eye = np.eye(F.shape[1])

    def solve(alpha):
        return np.linalg.solve(gram + alpha * eye, rhs)

    if valid is None or len(valid) == 0:
        W = solve(1e-3)
    else:
        Fv, yv, wv = F_all[valid] - f_mean, ys[valid] - y_mean, w_all[valid]
        W = min((solve(a) for a in RIDGE_PENALTIES),
                key=lambda b: wv @ ((Fv @ b - yv) ** 2).mean(1))
    b = y_mean - f_mean @ W
    resid = np.maximum(w @ (yc - Fc @ W) ** 2, 1e-4)
    weight = np.zeros((n_skip_outputs, F.shape[1]))
    bias = np.zeros(n_skip_outputs)
    weight[:k], bias[:k] = W.T, b
    if n_skip_outputs == 2 * k:  # Gaussian head: inverse softplus of the residual variance
        bias[k:] = np.log(np.expm1(resid))
    return weight, bias
