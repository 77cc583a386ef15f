"""Input checks shared by the estimators: targets, weights, scales, sample counts.

Every check raises ``ValueError``/``TypeError`` naming the argument, the value received and
the fix. Statistics are computed in float64 with thresholds relative to the data's own scale,
so the estimators behave the same on data in any units.
"""

from __future__ import annotations

import contextlib
import numbers
import sys
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval as _Interval
from sklearn.utils.validation import validate_data as _validate_data

__all__ = [
    "Interval",
    "check_n_samples",
    "check_sample_weight",
    "fit_scale",
    "memory_for",
    "split_unlabelled",
    "validate_data",
]


class Interval(_Interval):
    """scikit-learn's ``Interval`` constraint that refuses booleans: ``True`` is not ``1`` for
    an integer or real parameter here (``isinstance(True, numbers.Integral)`` holds).

    ``finite=True`` also refuses ``inf`` (scikit-learn's ``Interval`` already refuses
    ``nan``): a parameter such as a noise scale or a jitter that enters arithmetic would turn
    every output into ``inf`` or ``nan``.
    """

    def __init__(self, type, left, right, *, closed, finite=False):
        super().__init__(type, left, right, closed=closed)
        self.finite = finite

    def is_satisfied_by(self, val):
        if isinstance(val, (bool, np.bool_)) or not super().is_satisfied_by(val):
            return False
        return not self.finite or bool(np.isfinite(val))

    def __str__(self):
        text = super().__str__()
        return text.replace(" ", " finite ", 1) if self.finite else text


#: packages whose frames a warning's ``stacklevel`` passes over to reach the user's line:
#: skdiff, the scikit-learn meta-estimators and helpers that call it (a ``Pipeline``,
#: ``cross_validate``) with joblib, which runs their fits, and skorch, which trains the
#: networks
_PASSED_OVER = frozenset({"skdiff", "sklearn", "joblib", "skorch"})


def caller_stacklevel():
    """``warnings.warn``'s ``stacklevel`` for the first frame outside skdiff, scikit-learn,
    joblib and skorch, seen from the function that calls this one: a warning then points at
    the user's line however deep inside the package (or a ``Pipeline`` or
    ``cross_validate`` around an estimator) it is raised. A stack of those packages alone
    ends on its outermost frame."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None \
            and frame.f_globals.get("__name__", "").split(".")[0] in _PASSED_OVER:
        frame, level = frame.f_back, level + 1
    return level


@contextlib.contextmanager
def memory_for(what, fix):
    """Re-raise a ``MemoryError`` inside the block with the request that caused it.

    ``what`` names the arguments and values that size the allocation (e.g.
    ``"n_samples=10**12"``), ``fix`` says what to do; numpy's own message (the byte count)
    follows them.
    """
    try:
        yield
    except MemoryError as exc:
        raise MemoryError(f"Not enough memory for {what} ({exc}); {fix}.") from exc


def check_n_samples(n_samples, name="n_samples"):
    """A positive integer number of Monte Carlo samples (``True`` is not an integer here)."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) \
            or n_samples < 1:
        raise ValueError(f"'{name}' must be an integer >= 1; got {n_samples!r}.")
    return int(n_samples)


def from_torch(values):
    """``values`` as numpy or scipy when it is a torch tensor, else unchanged.

    A dense tensor becomes a numpy array (detached, on the CPU; ``bfloat16``, which numpy
    lacks, as float32), a sparse one of two dimensions (COO, CSR, CSC, BSR) a scipy CSR
    matrix with the same stored entries; a sparse tensor of other dimensions becomes dense,
    for the caller's shape check to name.
    """
    import torch

    if not isinstance(values, torch.Tensor):
        return values
    t = values.detach()
    if t.layout != torch.strided:
        if t.dim() != 2 or t.dense_dim() != 0:
            return from_torch(t.to_dense())
        t = (t if t.layout == torch.sparse_coo else t.to_sparse_coo()).coalesce().cpu()
        rows, cols = t.indices().numpy()
        return sp.csr_matrix((from_torch(t.values()), (rows, cols)), shape=tuple(t.shape))
    t = t.cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).resolve_conj().numpy()


def _holds(values, kinds):
    """Whether ``values`` (array-like, sparse or a torch tensor) has a numpy dtype of one of
    ``kinds``."""
    values = from_torch(values)
    dtype = getattr(values, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(values).dtype
        except (TypeError, ValueError):
            return False
    return np.dtype(dtype).kind in kinds


def restate_array_error(msg, what, arg, values):
    """scikit-learn's ``check_array`` error ``msg`` about ``values`` restated to name them
    (``what``, e.g. ``"'X' of DIFFormerClassifier"``; ``arg`` their argument's name) and the
    fix, or ``None`` when ``msg`` is not about their type or emptiness."""
    if msg.startswith("Complex data not supported") and _holds(values, "c"):
        return (f"Complex data not supported: {what} holds complex numbers; pass real "
                f"numbers (e.g. np.real({arg}), or the real and imaginary parts as separate "
                "columns).")
    if msg.startswith("could not convert") and _holds(values, "OUS"):
        return (f"{what} must be numbers; {msg}. Encode text or categories as numbers first "
                "(e.g. with sklearn.preprocessing.OneHotEncoder).")
    if arg == "y":  # the emptiness of y is reported as X's, whose rows it matches
        return None
    try:  # the emptiness is reported for the array that is empty (X's rows or columns)
        shape = values.shape if sp.issparse(values) else np.asarray(values).shape
    except (TypeError, ValueError):  # a ragged list, which is not empty
        shape = ()
    if msg.startswith("Found array with 0 sample") and len(shape) and shape[0] == 0:
        return f"{what} has no rows; pass at least one. ({msg})"
    if msg.startswith("Found array with 0 feature") and len(shape) > 1 and shape[1] == 0:
        return f"{what} has no columns; pass at least one feature. ({msg})"
    return None


def validate_data(estimator, /, X="no_validation", y="no_validation", **kwargs):
    """scikit-learn's ``validate_data``, whose errors about the shape and type of ``X`` (or
    ``y``) also name the input and the estimator.

    scikit-learn's "Expected 2D array, got 1D array" and "Complex data not supported" do
    not say which argument they are about.
    """
    try:
        return _validate_data(estimator, X, y, **kwargs)
    except ValueError as exc:
        msg, name = str(exc), type(estimator).__name__
        if msg.startswith("Expected 2D array"):
            raise ValueError(f"'X' of {name} has the wrong number of dimensions. {msg}") \
                from exc
        for arg, values in (("X", X), ("y", y)):
            restated = restate_array_error(msg, f"'{arg}' of {name}", arg, values)
            if restated:
                raise ValueError(restated) from exc
        if msg.startswith("Found input variables with inconsistent numbers of samples"):
            raise ValueError(f"'X' and 'y' of {name} must have the same number of rows. "
                             f"({msg})") from exc
        if msg.startswith("Found array with dim"):
            raise ValueError(f"'X' of {name} must be 2-D (n_samples, n_features). ({msg})") \
                from exc
        if "inhomogeneous" in msg or "setting an array element with a sequence" in msg:
            raise ValueError(f"'X' of {name} must be a rectangular array: its rows have "
                             f"different lengths. ({msg})") from exc
        raise


def fit_scale(values, *, weights=None, name="y", return_constant=False):
    """Mean and scale of the rows of ``values`` (n, k), in float64, for standardisation.

    ``weights`` (n,) makes them weighted statistics (a row of weight 0 does not count). The
    scale is the standard deviation; a column that is constant *relative to its own
    magnitude* (std below ``10 eps (|mean| + the typical magnitude)``, eps the float64
    machine epsilon) gets scale 1 and therefore passes through centred but unscaled. Unlike
    an absolute threshold this treats data in tiny or huge units alike (scikit-learn's
    ``_handle_zeros_in_scale`` idea).
    Non-finite statistics are an error. ``return_constant`` adds the mask of those constant
    columns to the result.
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.ones(v.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    # statistics of v / m, then scaled back: squares cannot overflow for any finite v
    m = np.max(np.abs(v), axis=0) if v.size else np.ones(v.shape[1:])
    m = np.where(np.isfinite(m) & (m > 0), m, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        u = v / m
        mean_u = w @ u
        std = np.sqrt(w @ (u - mean_u) ** 2) * m
        mean = mean_u * m
        typical = (w @ np.abs(u)) * m
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std))):
        raise ValueError(
            f"The mean or standard deviation of {name} is not finite (the values reach "
            f"{np.nanmax(np.abs(v)):.3g}); rescale {name} to a range float64 can square.")
    # float64 resolves deviations down to a few ulps of the values' magnitude
    constant = (std <= 10 * np.finfo(np.float64).eps * (np.abs(mean) + typical)) | (std == 0)
    scale = np.where(constant, 1.0, std)
    return (mean, scale, constant) if return_constant else (mean, scale)


def check_target_length(y, n_rows, what="row"):
    """Refuse a ``y`` whose length is not ``n_rows``."""
    shape = np.asarray(y).shape
    n_y = shape[0] if shape else 0
    if n_y != n_rows:
        raise ValueError(f"X has {n_rows} rows but y has {n_y}; pass one target per {what}.")


def _is_real(value):
    """Whether ``value`` is a real number (Python's, numpy's or a ``Decimal``), not a bool."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Number):
        return False
    return isinstance(value, numbers.Real) or not isinstance(value, numbers.Complex)


def check_sample_weight(sample_weight, n, *, name="sample_weight"):
    """Non-negative finite per-row weights as float64 of shape (n,); ``None`` gives ones.

    Any numeric dtype is read, and an object array whose entries are all real numbers;
    booleans, strings and other objects are refused.
    The weights are rescaled to mean 1: the losses and statistics are weighted *means*, so
    only their ratios matter, and weights such as ``1e-50`` or ``1e300`` would otherwise
    underflow or overflow in the network's float32.
    """
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight)
    if w.dtype.kind == "O":
        # an object array of numbers (a pandas column of object dtype, a list mixing Python
        # and numpy scalars) is read as numbers, as scikit-learn reads X; anything else in
        # it (strings, booleans, None) is refused by value
        bad = next(((i, v) for i, v in enumerate(w.ravel()) if not _is_real(v)), None)
        if bad is not None:
            raise TypeError(
                f"'{name}' must be numbers; got dtype object holding {bad[1]!r} (a "
                f"{type(bad[1]).__name__}) at position {bad[0]}; pass one real number per "
                "row of X.")
        w = w.astype(np.float64)
    if w.dtype.kind not in "biuf" or w.dtype == bool:
        raise TypeError(f"'{name}' must be numbers; got dtype {w.dtype}.")
    w = w.astype(np.float64)
    if w.ndim == 0:
        w = np.full(n, float(w))
    if w.shape != (n,):
        raise ValueError(f"'{name}' must have shape ({n},), one weight per row of X; got shape "
                         f"{w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        bad = w[~np.isfinite(w) | (w < 0)][0]
        raise ValueError(f"'{name}' must be finite and non-negative; got a weight {bad!r}.")
    if n and not w.any():
        raise ValueError(f"The sample weights in '{name}' are all zero; give some rows a "
                         "positive weight.")
    if n:
        w = w / w.max()  # in (0, 1]: the mean below cannot overflow
        w = w / w.mean()
    return w


def split_unlabelled(y, unlabelled):
    """Boolean mask of the rows of ``y`` marked by ``unlabelled`` (``None``: no marker).

    The marker matches by value and type family: the integer ``-1`` marks ``-1`` and ``-1.0``
    in numeric arrays and the *number* -1 in object arrays, never the string ``"-1"``; a
    string marker matches that string.
    """
    if unlabelled is None:
        return np.zeros(y.shape[0], dtype=bool)
    if isinstance(unlabelled, str):
        if y.dtype.kind in "US":
            return y == unlabelled
        if y.dtype.kind == "O":
            return np.array([isinstance(v, str) and v == unlabelled for v in y], dtype=bool)
        try:
            as_number = float(unlabelled)
        except ValueError:
            as_number = None
        if as_number is not None and y.dtype.kind in "iuf" and (y == as_number).any():
            raise ValueError(
                f"unlabelled={unlabelled!r} is a string, but y holds numbers, among them "
                f"{unlabelled}; pass unlabelled={unlabelled} (a number) to mark those rows "
                "unlabelled, or None if they are a class.")
        return np.zeros(y.shape[0], dtype=bool)
    if y.dtype.kind in "iuf":
        return y == unlabelled
    if y.dtype.kind == "O":
        return np.array([isinstance(v, numbers.Number) and not isinstance(v, bool)
                         and v == unlabelled for v in y], dtype=bool)
    return np.zeros(y.shape[0], dtype=bool)


def warn_if_marker_looks_like_a_class(y, unlabelled_mask, unlabelled):
    """Warn when the rows marked unlabelled look like a genuine class.

    Semi-supervised data usually marks *many* rows, and data with a few missing labels
    (``y.fillna(-1)``) marks a few; a label set such as ``{-1, 1}`` or ``{-1, 0, 1}`` in
    which the marked rows are about as frequent as the classes is more likely a genuine
    class ``-1``. The warning is given when there are at most three classes and the number
    of marked rows lies among the class sizes: at most twice the largest class, at least
    as many as the smallest class or half the mean class size (the labelled rows over the
    classes), and at least 2 rows. So labels ``{-1, 1}`` with about half the rows ``-1``
    (:func:`~sklearn.datasets.make_hastie_10_2`) warn, as do 30 rows ``-1`` beside classes
    of 30 and 300, while three unlabelled rows for each labelled one, or 1 marked row among
    40 labelled ones (or 40 among 1,000 in classes of 320), do not: a single marked row is
    a missing label, not a class that can be recognised.
    String classes beside a numeric marker (``["a", -1, "b"]``) draw no warning: the
    marker cannot be one of them.
    """
    n_marked = int(unlabelled_mask.sum())
    if n_marked == 0 or n_marked == unlabelled_mask.size:
        return
    labelled = y[~unlabelled_mask]
    if labelled.dtype.kind == "O" and all(isinstance(v, str) for v in labelled):
        return
    _, counts = np.unique(labelled, return_counts=True)
    mean_class = labelled.size / counts.size
    if counts.size > 3 or n_marked < 2 or n_marked < min(counts.min(), mean_class / 2) \
            or n_marked > 2 * counts.max():
        return
    sizes = (f"{counts.min()}" if counts.min() == counts.max()
             else f"{counts.min()}-{counts.max()}")
    classes = (f"1 class of {sizes} rows" if counts.size == 1 else
               f"{counts.size} classes of {sizes} rows"
               + (" each" if counts.min() == counts.max() else ""))
    warnings.warn(
        f"{n_marked} rows have the label {unlabelled!r}, which marks unlabelled rows "
        f"(excluded from the loss), beside {classes}: if {unlabelled!r} is a genuine class, "
        "pass unlabelled=None.", UserWarning, stacklevel=caller_stacklevel())
