"""Turn a long series into (lag window, forecast horizon) supervised pairs."""

from __future__ import annotations

import numbers

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["make_windows"]


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"'{name}' must be a positive integer; got {value!r}.")
    return int(value)


def make_windows(series, window, horizon, stride=1, *, target=None):
    """Sliding (input window, forecast horizon) pairs from a series, without copying in Python.

    Sample ``i`` uses the rows ``s = i * stride`` to ``s + window - 1`` as input and the next
    ``horizon`` rows (``s + window`` to ``s + window + horizon - 1``) as target.

    Parameters
    ----------
    series : array-like of shape (T,) or (T, C)
        A univariate or multivariate series, rows in time order.
    window : int
        Length of each input window (lookback).
    horizon : int
        Number of future steps to predict.
    stride : int, default=1
        Step between the starts of consecutive windows.
    target : int, sequence of int or None, default=None
        Channels of a (T, C) series that form ``y``, each named once (negative indices count
        from the end); ``None`` uses all channels. An int gives a 2-D ``y`` of shape
        (n, horizon).

    Returns
    -------
    X : ndarray of shape (n, window) or (n, window, C)
        ``n = (T - window - horizon) // stride + 1``.
    y : ndarray of shape (n, horizon) or (n, horizon, k)
        ``(n, horizon)`` for a 1-D series or an int ``target``; use
        ``y.reshape(len(y), -1)`` for a multi-channel target.

    Examples
    --------
    >>> import numpy as np
    >>> from skdiff.datasets import make_windows
    >>> X, y = make_windows(np.arange(10.0), window=4, horizon=2, stride=2)
    >>> X.shape, y.shape
    ((3, 4), (3, 2))
    >>> X[1], y[1]
    (array([2., 3., 4., 5.]), array([6., 7.]))
    """
    window = _positive_int(window, "window")
    horizon = _positive_int(horizon, "horizon")
    stride = _positive_int(stride, "stride")
    series = np.asarray(series)
    if series.ndim not in (1, 2):
        raise ValueError(
            f"'series' must be 1-D (T,) or 2-D (T, C); got an array of shape {series.shape}."
        )
    if not np.issubdtype(series.dtype, np.number):
        raise TypeError(f"'series' must be numeric; got dtype {series.dtype}.")
    T = series.shape[0]
    if T < window + horizon:
        raise ValueError(
            f"The series has {T} rows but window={window} + horizon={horizon} need at least "
            f"{window + horizon}; use a shorter window or horizon."
        )
    if series.ndim == 1 and target is not None:
        raise ValueError(
            f"'target' selects channels of a 2-D series (T, C); got target={target!r} for a "
            f"1-D series of shape {series.shape}: pass target=None, or a 2-D series."
        )
    # (T - L + 1, L[, C]) view: the window axis comes last from sliding_window_view
    span = window + horizon
    view = sliding_window_view(series, span, axis=0)[::stride]
    if series.ndim == 2:
        view = np.moveaxis(view, -1, 1)  # (n, span, C)
    X = np.ascontiguousarray(view[:, :window])
    y = view[:, window:]
    if series.ndim == 2 and target is not None:
        C = series.shape[1]
        idx = np.atleast_1d(np.asarray(target))
        if (not np.issubdtype(idx.dtype, np.integer) or idx.ndim != 1 or idx.size == 0
                or idx.min() < -C or idx.max() >= C):
            raise ValueError(
                f"'target' must be channel indices in [0, {C}) (or counted from the end, "
                f"down to -{C}); got {target!r}."
            )
        repeated = idx % C
        if np.unique(repeated).size != repeated.size:
            raise ValueError(
                f"'target' must name each channel once (each output of y is one channel); "
                f"got {target!r}, channels {repeated.tolist()} of {C}.")
        y = y[:, :, int(target)] if np.ndim(target) == 0 else y[:, :, idx]
    return X, np.ascontiguousarray(y)
