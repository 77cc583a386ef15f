"""Flowformer's data handling: sequence layout, per-channel scaling, the linear skips' starts.

Sequences arrive as ``X`` of shape (n, L) (univariate) or (n, L, C) (multivariate, the
tslearn convention); everything downstream sees float32 (n, L, C). Each channel is
standardised with its mean and standard deviation over all training samples and steps
(computed in float64).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["check_ragged", "logistic_skip", "ridge_skip"]


def check_ragged(X):
    """Refuse a ragged list of sequences, or a DataFrame of series (sktime's nested
    format), with an error that says what to do."""
    if _holds_series_in_cells(X):
        raise ValueError(
            "X is a DataFrame whose cells hold whole series (the nested format of sktime "
            "and aeon); pass a 3-D array (n_samples, n_channels, length) with layout='NCL' "
            "instead, e.g. np.stack([np.stack(row) for row in X.to_numpy()]) (every series "
            "of the same length).")
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


def _holds_series_in_cells(X):
    """Whether ``X`` is a pandas DataFrame whose cells are sequences, not numbers."""
    if not hasattr(X, "iloc") or getattr(X, "ndim", 0) != 2 or 0 in X.shape:
        return False
    cell = X.iloc[0, 0]
    return hasattr(cell, "__len__") and not isinstance(cell, (str, bytes))


#: Ridge penalties (times the number of rows) tried for the skip on the validation rows.
RIDGE_PENALTIES = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)


def _centred(F_all, ys, w_all, rows):
    """Weighted means, centred features and targets, normalised weights, and the ridge's
    normal equations (Gram matrix, right-hand side) over ``rows``."""
    F, y, w = F_all[rows], ys[rows], w_all[rows] / w_all[rows].sum()
    f_mean, y_mean = w @ F, w @ y
    Fc, yc = F - f_mean, y - y_mean
    return f_mean, y_mean, Fc, yc, w, Fc.T @ (w[:, None] * Fc), Fc.T @ (w[:, None] * yc)


#: Forward-chaining folds of the ridge skip's penalty choice (as ``TimeSeriesSplit``).
RIDGE_SPLITS = 5


def _n_folds(n_rows):
    """Forward-chaining folds of the penalty choice for ``n_rows`` rows (< 2: none)."""
    return min(RIDGE_SPLITS, n_rows // 2 - 1)


def _penalty(F_all, ys, w_all, rows, eye):
    """The penalty of ``RIDGE_PENALTIES`` with the lowest (weighted) validation MSE summed
    over forward-chaining folds of ``rows`` (each fold fits on the rows before it)."""
    n_splits = _n_folds(len(rows))
    if n_splits < 2:
        return 1e-3
    from sklearn.model_selection import TimeSeriesSplit

    errors = np.zeros(len(RIDGE_PENALTIES))
    for fit_idx, val_idx in TimeSeriesSplit(n_splits=n_splits).split(rows):
        f_mean, y_mean, _, _, _, gram, rhs = _centred(F_all, ys, w_all, rows[fit_idx])
        val = rows[val_idx]
        Fv, yv, wv = F_all[val] - f_mean, ys[val] - y_mean, w_all[val] / w_all[val].sum()
        errors += [wv @ ((Fv @ np.linalg.solve(gram + a * eye, rhs) - yv) ** 2).mean(1)
                   for a in RIDGE_PENALTIES]
    return RIDGE_PENALTIES[int(np.argmin(errors))]


def ridge_skip(F_all, ys, rows, n_skip_outputs, weights=None, anchor=None):
    """Closed-form ridge start of the instance-norm linear skip.

    ``F_all`` (n, f) are the skip's features of every row and ``ys`` (n, k) the standardised
    targets, rows weighted by ``weights`` (n,) when given. The ridge is fitted on ``rows``
    (given in time order for windows of a series) with the penalty of
    ``n * RIDGE_PENALTIES`` that has the lowest validation MSE over ``RIDGE_SPLITS``
    forward-chaining folds of them, as ``RidgeCV`` with a ``TimeSeriesSplit`` would choose
    it: each fold fits on the rows before it, so for windows of a series (given in time
    order) no future window leaks into the choice, and the penalty is judged on several
    stretches of the series rather than on its last one alone (a single short hold-out
    picks penalties that are off by orders of magnitude on a short series). Fewer than six
    rows use ``1e-3 n``.

    ``anchor = (last, window)`` fits the ridge relative to persistence: the column ``last``
    of ``F_all`` holds the window's (standardised) last value and the columns ``window`` (a
    slice) the window's values, and the ridge predicts every ``ys - F_all[:, last]`` from
    the features with the window's values taken relative to its last value. The penalty
    then shrinks the forecast toward the last value, plus the mean change over the horizon,
    instead of toward the training targets' mean, so a forecast follows a series whose
    level leaves the range of the training windows. The result is the same kind of linear
    map of ``F_all``: the window's weights are kept and the last value's weight gets one
    minus their sum.
    With fewer than six rows (no folds to choose the penalty by) the anchor is not used: the
    small fixed penalty hardly shrinks, and the plain ridge fits such rows exactly in
    float32, where the anchored map leaves a rounding error whose gradients Adam would
    turn into full-size steps of the encoder.

    Returns ``(weight, bias)`` of shapes (n_skip_outputs, f) and (n_skip_outputs,): the
    first k rows hold the ridge solution; with a Gaussian head (``n_skip_outputs == 2k``)
    the last k biases start at the inverse softplus of the ridge's residual variance.
    """
    w_all = np.ones(len(F_all)) if weights is None else np.asarray(weights, dtype=np.float64)
    rows = np.asarray(rows)
    F, y = F_all, ys
    anchored = anchor is not None and _n_folds(len(rows)) >= 2
    if anchored:
        last, window = anchor
        F = F_all.copy()
        F[:, window] -= F_all[:, last:last + 1]
        y = ys - F_all[:, last:last + 1]
    eye = np.eye(F.shape[1])
    alpha = _penalty(F, y, w_all, rows, eye)
    f_mean, y_mean, Fc, yc, w, gram, rhs = _centred(F, y, w_all, rows)
    W = np.linalg.solve(gram + alpha * eye, rhs)
    b = y_mean - f_mean @ W
    resid = np.maximum(w @ (yc - Fc @ W) ** 2, 1e-4)
    if anchored:  # the same map on the unshifted features
        W[last] += 1.0 - W[window].sum(0)
    k = ys.shape[1]
    weight = np.zeros((n_skip_outputs, F_all.shape[1]))
    bias = np.zeros(n_skip_outputs)
    weight[:k], bias[:k] = W.T, b
    if n_skip_outputs == 2 * k:  # Gaussian head: inverse softplus of the residual variance
        bias[k:] = np.log(np.expm1(resid))
    return weight, bias


#: Inverse L2 penalties tried for the classifier's logistic start, and its most folds.
LOGISTIC_CS = tuple(float(c) for c in np.logspace(-4, 2, 7))
LOGISTIC_FOLDS = 5


def logistic_skip(F, codes, n_classes, weights=None, random_state=None):
    """Logistic-regression start of the classifier's linear skip.

    ``F`` (n, f) are the skip's features of the training rows (the scaled series, flattened)
    and ``codes`` (n,) their class indices in ``range(n_classes)``, rows weighted by
    ``weights`` (n,) when given. A multinomial logistic regression with the inverse L2
    penalty ``C`` of ``LOGISTIC_CS`` that has the best log-loss over stratified folds (as
    many as the smallest class allows, at most ``LOGISTIC_FOLDS``; with one row in a class,
    ``C=1``) is fitted, and its logits become the skip: the classifier starts as the logistic
    regression a user would otherwise fit on the flattened series, and the encoder learns a
    correction to its logits. Returns ``(weight, bias, C)``: shapes (n_classes, f) and
    (n_classes,); a binary problem's single logit ``z`` is split as ``(-z/2, z/2)``. ``None``
    when a class has no training row (``partial_fit`` with ``classes``).
    """
    from sklearn import config_context
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    counts = np.bincount(codes, minlength=n_classes)
    if counts.min() < 1:
        return None
    n_folds = min(LOGISTIC_FOLDS, int(counts.min()))
    model = LogisticRegression(max_iter=2000)
    if n_folds >= 2:  # GridSearchCV rather than LogisticRegressionCV, whose arguments change
        model = GridSearchCV(model, {"C": list(LOGISTIC_CS)}, scoring="neg_log_loss",
                             cv=StratifiedKFold(n_folds, shuffle=True,
                                                random_state=random_state))
    # an internal choice, made alike whatever the caller's metadata-routing setting: with
    # routing on, GridSearchCV would refuse the weights that no estimator here requests
    with warnings.catch_warnings(), config_context(enable_metadata_routing=False):
        # lbfgs may stop short at the weakest penalties on separable folds; the start is
        # then a little less converged, which the encoder's training absorbs
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(F, codes, sample_weight=weights)
    best = getattr(model, "best_estimator_", model)
    W, b = best.coef_, best.intercept_
    if n_classes == 2:
        W, b = np.vstack([-W / 2, W / 2]), np.array([-b[0] / 2, b[0] / 2])
    return W, b, float(best.C)
