"""Flowformer's data handling: sequence layout, per-channel scaling, the linear skips' starts.

Sequences arrive as ``X`` of shape (n, L) (univariate) or (n, L, C) (multivariate, the
tslearn convention); everything downstream sees float32 (n, L, C). Each channel is
standardised with its mean and standard deviation over all training samples and steps
(computed in float64).
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np

from ..nn.losses import softplus_inverse

__all__ = ["Anchor", "check_ragged", "ridge_skip", "updated_ridge_skip"]


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
    over forward-chaining folds of ``rows`` (each fold fits on the rows before it).

    A fold whose fitting part has no more rows than features does not vote (the last fold
    votes whatever its size): its ridge is underdetermined, so every small penalty fits
    its rows exactly and extrapolates wildly, and the fold would push the choice toward
    the largest penalty for a fit on all rows that is not underdetermined. (On a monthly
    series of 159 windows of 36 steps, the five folds with the first one's 29 rows chose
    a penalty 10 times the one the other four chose alone, and a test MSE 60 % higher.)"""
    return _penalty_and_error(F_all, ys, w_all, rows, eye)[0]


def _penalty_and_error(F_all, ys, w_all, rows, eye):
    """``_penalty``'s choice and its validation MSE summed over the folds (``None`` with
    fewer than two folds)."""
    n_splits = _n_folds(len(rows))
    if n_splits < 2:
        return 1e-3, None
    from sklearn.model_selection import TimeSeriesSplit

    folds = list(TimeSeriesSplit(n_splits=n_splits).split(rows))
    folds = [fold for fold in folds if len(fold[0]) > F_all.shape[1]] or folds[-1:]
    errors = np.zeros(len(RIDGE_PENALTIES))
    for fit_idx, val_idx in folds:
        f_mean, y_mean, _, _, _, gram, rhs = _centred(F_all, ys, w_all, rows[fit_idx])
        val = rows[val_idx]
        Fv, yv, wv = F_all[val] - f_mean, ys[val] - y_mean, w_all[val] / w_all[val].sum()
        errors += [wv @ ((Fv @ np.linalg.solve(gram + a * eye, rhs) - yv) ** 2).mean(1)
                   for a in RIDGE_PENALTIES]
    best = int(np.argmin(errors))
    return RIDGE_PENALTIES[best], float(errors[best])


#: The anchored ridge skip of a series that is not stationary leaves the window's level out
#: of its fit unless the fit with the level has a validation error (summed over the
#: forward-chaining folds) this many times lower (:func:`ridge_skip`).
LEVEL_MARGIN = 1.5


class Anchor(NamedTuple):
    """How :func:`ridge_skip` fits the ridge relative to persistence.

    ``last`` is the column of the skip's features holding the window's last value and
    ``window`` (a slice) the columns of its values. ``level`` lists the columns that carry
    the window's absolute level (its mean and last value), which a translation-equivariant
    fit leaves out, and ``ratio`` (a scalar or one per output) is the change of a
    standardised output per unit change of the standardised window: the x scale over the
    y scale where both are the same series. ``level=()`` is the fit that keeps the level
    columns, with the anchor in standardised units (``ratio`` 1).
    """

    last: int
    window: slice
    level: tuple = ()
    ratio: object = 1.0


def ridge_skip(F_all, ys, rows, n_skip_outputs, weights=None, anchor=None,
               return_state=False, choose_level=True):
    """Closed-form ridge start of the instance-norm linear skip.

    ``F_all`` (n, f) are the skip's features of every row and ``ys`` (n, k) the standardised
    targets, rows weighted by ``weights`` (n,) when given. The ridge is fitted on ``rows``
    (given in time order for windows of a series) with the penalty of
    ``n * RIDGE_PENALTIES`` that has the lowest validation MSE over ``RIDGE_SPLITS``
    forward-chaining folds of them, as ``RidgeCV`` with a ``TimeSeriesSplit`` would choose
    it: each fold fits on the rows before it, so for windows of a series (given in time
    order) no future window leaks into the choice, and the penalty is judged on several
    stretches of the series rather than on its last one alone (a single short hold-out
    picks penalties that are off by orders of magnitude on a short series). Folds that fit
    on no more rows than there are features do not vote (see ``_penalty``). Fewer than six
    rows use ``1e-3 n``.

    ``anchor`` (an :class:`Anchor`) fits the ridge relative to persistence: the column
    ``anchor.last`` of ``F_all`` holds the window's (standardised) last value and the
    columns ``anchor.window`` the window's values, and the ridge predicts every
    ``ys - ratio * F_all[:, last]`` from the features with the window's values taken
    relative to its last value. The penalty then shrinks the forecast toward the last
    value, plus the mean change over the horizon, instead of toward the training targets'
    mean. The result is the same kind of linear map of ``F_all``: the window's weights are
    kept and the last value's weight gets ``ratio`` minus their sum.

    An anchor with ``level`` columns is a candidate (``choose_level=False`` takes it as
    given): the fit without those columns is translation-equivariant (a window moved by
    ``c`` moves the forecast by ``ratio * c``), so a forecast follows a series whose level
    leaves the range of the training windows, where the fit with them reverts toward the
    training levels. It is used unless (:func:`_choose_level`) the augmented Dickey-Fuller
    test finds the series stationary (it returns to its mean, which the level columns
    hold), the fit that keeps them (anchored in standardised units) has a validation error
    over the same folds ``LEVEL_MARGIN`` times lower, or it does not forecast better there
    than the targets' mean. The folds alone cannot make the choice: they see the level
    within the range of the fitting rows and favour it on trending series by a few per
    cent, as on stationary ones. On the 35 forecasting series of the defaults benchmark's
    dev rows this rule lowered the geometric mean of the test MSE over the best
    baseline's from 1.033 to 0.912 (realinv 2.35 -> 1.06, pop 0.65 -> 0.15); on 75
    generated stationary series (AR(2), EXPAR, logistic map, SETAR, nonlinear moving
    average) the test keeps the level in all 75, where the level-free fit forecast 1-11 %
    worse on average per kind (up to 20 %). The chosen anchor is the returned state's.

    With fewer than six rows (no folds to choose the penalty by) the anchor is not used: the
    small fixed penalty hardly shrinks, and the plain ridge fits such rows exactly in
    float32, where the anchored map leaves a rounding error whose gradients Adam would
    turn into full-size steps of the encoder.

    Returns ``(weight, bias)`` of shapes (n_skip_outputs, f) and (n_skip_outputs,): the
    first k rows hold the ridge solution; with a Gaussian head (``n_skip_outputs == 2k``)
    the last k biases start at the inverse softplus of the ridge's residual variance.
    ``return_state``: also a :class:`SkipState` that :func:`updated_ridge_skip` continues
    with further rows.
    """
    w_all = np.ones(len(F_all)) if weights is None else np.asarray(weights, dtype=np.float64)
    rows = np.asarray(rows)
    F, y = F_all, ys
    anchored = anchor is not None and _n_folds(len(rows)) >= 2
    eye = np.eye(F.shape[1])
    alpha = None
    if anchored:
        anchor = Anchor(*anchor)
        if anchor.level and choose_level:  # the choice's folds give the penalty too
            anchor, alpha = _choose_level(F_all, ys, w_all, rows, anchor, eye)
        F, y = _anchored(F_all, ys, anchor)
    if alpha is None:
        alpha = _penalty(F, y, w_all, rows, eye)
    f_mean, y_mean, Fc, yc, w, gram, rhs = _centred(F, y, w_all, rows)
    W = np.linalg.solve(gram + alpha * eye, rhs)
    b = y_mean - f_mean @ W
    resid = w @ (yc - Fc @ W) ** 2
    weight, bias = _skip_parameters(W, b, resid, anchor if anchored else None, n_skip_outputs)
    if not return_state:
        return weight, bias
    if anchor is not None and not anchored:  # too few rows to choose: the level is kept
        anchor = Anchor(*anchor[:2])
    Fs, ys_ = (F, y) if anchored or anchor is None else _anchored(F_all, ys, anchor)
    state = SkipState(RidgeMoments.of(Fs[rows], ys_[rows], w_all[rows]), alpha, anchor,
                      n_skip_outputs)
    return weight, bias, state


def _choose_level(F_all, ys, w_all, rows, anchor, eye):
    """``(anchor, penalty)``: ``anchor`` (its fit without the level columns) or the fit
    that keeps them (:func:`ridge_skip`), with the penalty its folds chose (``None`` where
    no folds were run). A series the augmented Dickey-Fuller test finds stationary
    (:func:`stationary`, on the rows' last values in order) returns to its mean, which the
    level columns hold: they are kept. Otherwise the fit without them is used unless the
    fit with them has a validation error over the forward-chaining folds ``LEVEL_MARGIN``
    times lower, and provided it forecasts better there than the training targets' mean
    (the ridge of no features, on the same folds): a target that is not the series'
    continuation, or a series whose level tells more than its recent changes, keeps the
    level."""
    kept = Anchor(anchor.last, anchor.window)
    window = F_all[rows[0], anchor.window]
    if stationary(np.concatenate([window[:-1], F_all[rows, anchor.last]])):
        return kept, None
    (a_free, free), (a_level, level) = (
        _penalty_and_error(*_anchored(F_all, ys, a), w_all, rows, eye) for a in (anchor, kept))
    mean = _penalty_and_error(np.zeros_like(F_all), ys, w_all, rows, eye)[1]
    if free <= LEVEL_MARGIN * level and free < mean:
        return anchor, a_free
    return kept, a_level


def _anchored(F_all, ys, anchor):
    """The features and targets of the ridge relative to persistence (``ridge_skip``): the
    window relative to its last value, the level columns zero (a zero column gets a zero
    weight), the targets less ``ratio`` times the last value."""
    last, window, level, ratio = Anchor(*anchor)
    F = F_all.copy()
    F[:, window] -= F_all[:, last:last + 1]
    F[:, list(level)] = 0.0
    return F, ys - np.asarray(ratio, dtype=np.float64) * F_all[:, last:last + 1]


def _skip_parameters(W, b, resid, anchor, n_skip_outputs):
    """The skip's ``(weight, bias)`` from a ridge solution ``W`` (f, k), ``b`` (k,) with
    residual variances ``resid`` (k,), fitted relative to persistence when ``anchor``."""
    W = W.copy()
    if anchor is not None:  # the same map on the unshifted features
        last, window, _, ratio = Anchor(*anchor)
        W[last] += np.asarray(ratio, dtype=np.float64) - W[window].sum(0)
    k = W.shape[1]
    weight = np.zeros((n_skip_outputs, W.shape[0]))
    bias = np.zeros(n_skip_outputs)
    weight[:k], bias[:k] = W.T, b
    if n_skip_outputs == 2 * k:  # Gaussian head: inverse softplus of the residual variance
        bias[k:] = softplus_inverse(np.maximum(resid, 1e-4))
    return weight, bias


#: MacKinnon's (2010, table 1, constant and no trend) response surface of the Dickey-Fuller
#: test's 5 % critical value in the number of observations T: the sum of c_i / T**i.
_DF_CRITICAL_5 = (-2.86154, -2.8903, -4.234, -40.040)


def stationary(series):
    """Whether the augmented Dickey-Fuller test rejects a unit root in ``series`` at 5 %.

    The regression of the differences on a constant, the lagged level and ``p`` lagged
    differences, ``p`` chosen by AIC from 0 to ``12 (n / 100) ** 0.25`` on a common
    sample and the regression then refitted on every usable step, as
    ``statsmodels.tsa.stattools.adfuller(series, regression="c", autolag="AIC")`` does;
    the lagged level's t-statistic is compared with MacKinnon's finite-sample 5 % critical
    value. Fewer than 12 values: ``False`` (nothing to reject with); equal steps: a
    constant is stationary, a straight line is not."""
    x = np.asarray(series, dtype=np.float64)
    n = len(x)
    if n < 12:
        return False
    dx = np.diff(x)
    if np.all(dx == dx[0]):  # a constant (stationary) or a straight line (a trend)
        return bool(dx[0] == 0)
    max_lag = min(int(np.ceil(12.0 * (n / 100.0) ** 0.25)), n // 2 - 2)

    def design(p, start):
        # rows t = start..n-2 of dx (the change from x[t] to x[t+1]): constant, x[t], and
        # the p changes before it
        t = np.arange(start, n - 1)
        lagged = [dx[t - j] for j in range(1, p + 1)]
        return np.column_stack([np.ones(len(t)), x[t], *lagged]), dx[t]

    best = None
    for p in range(max_lag + 1):  # the same rows for every order: comparable AIC
        A, b = design(p, max_lag)
        rss = np.sum((b - A @ np.linalg.lstsq(A, b, rcond=None)[0]) ** 2)
        # an exact fit (a deterministic series) has the lowest AIC: no log(0) warning
        aic = len(b) * np.log(max(rss / len(b), np.finfo(np.float64).tiny)) + 2 * A.shape[1]
        if best is None or aic < best[0]:
            best = (aic, p)
    A, b = design(best[1], best[1])
    coef, *_ = np.linalg.lstsq(A, b, rcond=None)
    resid = b - A @ coef
    dof = len(b) - A.shape[1]
    if dof <= 0:
        return False
    cov = (resid @ resid / dof) * np.linalg.pinv(A.T @ A)
    if not cov[1, 1] > 0:  # the level's coefficient is exact: nothing to test
        return False
    t_stat = coef[1] / np.sqrt(cov[1, 1])
    T = len(b)
    critical = sum(c / T ** i for i, c in enumerate(_DF_CRITICAL_5))
    return bool(t_stat < critical)


class RidgeMoments:
    """Weighted sums over some rows of a ridge's features ``f`` (p,) and targets ``y`` (k,):
    ``sum w``, ``sum w f``, ``sum w y``, ``sum w f f^T``, ``sum w f y^T``, ``sum w y y^T``
    and the number of rows. They add and subtract, so the ridge of all rows seen so far,
    its solution without some of them and the error of a solution on a batch of rows all
    come from them without the rows (O(p^2) memory, whatever the rows)."""

    __slots__ = ("w", "f", "y", "ff", "fy", "yy", "n")

    def __init__(self, w, f, y, ff, fy, yy, n):
        self.w, self.f, self.y, self.ff, self.fy, self.yy, self.n = w, f, y, ff, fy, yy, n

    @classmethod
    def of(cls, F, Y, weights):
        """The moments of rows ``F`` (n, p), ``Y`` (n, k) weighted by ``weights`` (n,)."""
        F, Y = np.asarray(F, dtype=np.float64), np.asarray(Y, dtype=np.float64)
        w = np.asarray(weights, dtype=np.float64)
        wF, wY = w[:, None] * F, w[:, None] * Y
        return cls(float(w.sum()), wF.sum(0), wY.sum(0), F.T @ wF, wF.T @ Y, Y.T @ wY, len(F))

    def _parts(self):
        return self.w, self.f, self.y, self.ff, self.fy, self.yy, self.n

    def __add__(self, other):
        return RidgeMoments(*(a + b for a, b in zip(self._parts(), other._parts())))

    def __sub__(self, other):
        return RidgeMoments(*(a - b for a, b in zip(self._parts(), other._parts())))

    def normal_equations(self):
        """The weighted means of ``f`` and ``y`` and the centred normal equations (the
        weighted covariance of ``f`` and that of ``f`` with ``y``), as :func:`_centred`."""
        f_mean, y_mean = self.f / self.w, self.y / self.w
        gram = self.ff / self.w - np.outer(f_mean, f_mean)
        return f_mean, y_mean, gram, self.fy / self.w - np.outer(f_mean, y_mean)

    def solve(self, alpha):
        """The ridge ``(W (p, k), b (k,))`` of these rows with penalty ``alpha`` on the
        weighted covariance, as :func:`ridge_skip` solves it."""
        f_mean, y_mean, gram, rhs = self.normal_equations()
        W = np.linalg.solve(gram + alpha * np.eye(len(f_mean)), rhs)
        return W, y_mean - f_mean @ W

    def residual(self, W, b):
        """The weighted mean squared error of ``F W + b`` on these rows, per output (k,)."""
        WtfY = np.einsum("pk,pk->k", W, self.fy)
        WtffW = np.einsum("pk,pq,qk->k", W, self.ff, W)
        total = (np.diag(self.yy) - 2 * WtfY - 2 * b * self.y + WtffW
                 + 2 * b * (self.f @ W) + self.w * b ** 2)
        return np.maximum(total, 0.0) / self.w


class SkipState:
    """What :func:`updated_ridge_skip` needs of the rows a fixed ridge skip has seen: their
    :class:`RidgeMoments`, the penalty in use, the summed squared errors of each penalty
    on the rows that came after the first batch (each scored before it was added), the
    anchor, the skip's number of outputs and the sorted :func:`~skdiff._rows.row_hashes` of the rows
    seen (8 bytes a row)."""

    def __init__(self, moments, alpha, anchor, n_skip_outputs):
        self.moments, self.alpha = moments, alpha
        self.errors = np.zeros(len(RIDGE_PENALTIES))
        self.anchor, self.n_skip_outputs = anchor, n_skip_outputs
        self.seen = np.zeros(0, dtype=np.uint64)


def updated_ridge_skip(state, F, ys, weights, hashes, held_out=None):
    """The ridge skip refitted after a new batch of rows, for ``partial_fit``.

    The batch's features ``F`` (m, f) and standardised targets ``ys`` (m, k), weighted by
    ``weights`` (m,), join the rows the skip has seen (``state`` is left as it is; the
    updated state is returned), and the ridge is solved on all of them from their moments
    (:class:`RidgeMoments`), as :func:`ridge_skip` would on the rows together (same
    anchor). A row seen before (equal ``hashes``, :func:`~skdiff._rows.row_hashes` of the
    row's sequence and target) is not counted again, so that calling ``partial_fit`` on the
    same rows epoch after epoch fits the skip to them once.

    The penalty is chosen, as in :func:`ridge_skip`, by forward chaining, here over the
    whole stream: the new rows, in the order given, are cut into up to ``RIDGE_SPLITS``
    consecutive parts, and each part is scored by every penalty's ridge of all the rows
    before it (earlier batches and earlier parts) before it joins them. Every row after
    the first batch is scored once, by a ridge that has not seen it (a prequential
    evaluation) once more rows than features came before it, and the penalty with the
    lowest summed (weighted) squared error over all of them is used; until then, the first
    batch's choice stays. ``held_out`` (a boolean mask of the batch's rows) also returns the
    solution without those rows, for the calibration of the intervals on rows the skip has
    not seen (a held-out row seen before with another weight is taken out with its new
    one).

    Returns ``(skip, unseen, state)``: ``skip`` is ``(weight, bias)`` as :func:`ridge_skip`
    returns them (``None`` while the rows seen are fewer than six: the skip is kept),
    ``unseen`` the same without the held-out rows (``None`` when nothing is held out or too
    few rows remain), ``state`` the state with the batch.
    """
    state = copy.copy(state)  # the caller's state is kept (a failed fit restores it)
    if state.anchor is not None:
        F, ys = _anchored(F, ys, state.anchor)
    weights = np.asarray(weights, dtype=np.float64)
    once = np.zeros(len(F), dtype=bool)
    once[np.unique(hashes, return_index=True)[1]] = True  # the first of equal rows
    new = np.flatnonzero(once & ~np.isin(hashes, state.seen))
    if new.size:
        state.seen = np.union1d(state.seen, hashes[new])
        for part in np.array_split(new, min(RIDGE_SPLITS, new.size)):
            moments = RidgeMoments.of(F[part], ys[part], weights[part])
            # scored by a ridge of more rows than features (as _penalty's folds)
            if state.moments.n > F.shape[1] and moments.w > 0:
                state.errors = state.errors + moments.w * _residuals_by_penalty(
                    state.moments, moments)
            state.moments = state.moments + moments
        if state.errors.any():
            state.alpha = RIDGE_PENALTIES[int(np.argmin(state.errors))]
    total = state.moments
    if total.n < 6:
        return None, None, state

    def parameters(moments):
        W, b = moments.solve(state.alpha)
        return _skip_parameters(W, b, moments.residual(W, b), state.anchor,
                                state.n_skip_outputs)

    unseen = None
    if held_out is not None and np.any(held_out & once):
        out = held_out & once
        rest = total - RidgeMoments.of(F[out], ys[out], weights[out])
        unseen = parameters(rest) if rest.n >= 6 else None
    return parameters(total), unseen, state


def _residuals_by_penalty(fitted, scored):
    """The mean squared error on the rows of ``scored`` (:class:`RidgeMoments`) of the
    ridge of ``fitted`` for each of ``RIDGE_PENALTIES`` (one eigendecomposition)."""
    f_mean, y_mean, gram, rhs = fitted.normal_equations()
    lam, V = np.linalg.eigh(gram)
    Vr = V.T @ rhs
    out = []
    for a in RIDGE_PENALTIES:
        W = V @ (Vr / (np.maximum(lam, 0.0) + a)[:, None])
        out.append(scored.residual(W, y_mean - f_mean @ W).mean())
    return np.array(out)
