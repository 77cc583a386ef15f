"""What classifiers and regressors share, on top of the estimator skeleton.

:class:`ClassifierTask` encodes labels (strings allowed, an optional marker for unlabelled
rows), trains with a per-row weighted cross-entropy, predicts through ``predict_proba`` and
scores on labelled rows. :class:`RegressorTask` standardises ``y`` (NaN rows are unlabelled
where the family allows it), trains with a per-row weighted squared error, predicts in the
original units with an optional standard deviation, and scores R² on labelled rows. Both map
raw network outputs to predictions and to Monte Carlo samples (sample axis last).

A regressor with an ``uncertainty`` parameter set to ``"gaussian"`` gets a Gaussian head from
:class:`RegressorTask`: the network's outputs are a mean and a raw variance per output
(:class:`~skdiff.nn.losses.GaussianNLL`), ``predict(return_std=True)`` and
``sample_posterior`` use that Gaussian, and its standard deviation is calibrated on the
early-stopping validation rows (:meth:`RegressorTask._calibrate_std`).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import column_or_1d
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets

from ._base import EstimatorBase, check_is_fitted
from ._checks import (
    caller_stacklevel,
    fit_scale,
    split_unlabelled,
    warn_if_marker_looks_like_a_class,
)
from ._docs import fill_doc
from .nn.losses import GaussianNLL, WeightedCrossEntropy, WeightedMSE, gaussian_variance

__all__ = ["ClassifierTask", "RegressorTask", "beats_by_se", "conformal_quantile",
           "mean_difference_se"]


def _without_marker(classes, marker):
    """``classes`` less the ``unlabelled`` marker, with a warning when it was there.

    ``partial_fit(X, y, classes=np.unique(y))``, scikit-learn's idiom, lists the marker of
    semi-supervised ``y`` among the classes; the marked rows are unlabelled all the same,
    so the marker is not a class (an output unit no row would train).
    """
    marked = split_unlabelled(classes, marker)
    if marked.any():
        warnings.warn(
            f"'classes' lists {marker!r}, the `unlabelled` marker, which marks unlabelled "
            f"rows and is not a class: it was dropped from 'classes'. Pass unlabelled=None "
            f"if {marker!r} is a class.", UserWarning,
            stacklevel=caller_stacklevel())
    return classes[~marked]


def _missing_labels(y):
    """Boolean mask of the missing labels of ``y``: ``NaN`` in a float array; ``None``,
    ``NaN`` or pandas' ``NA``/``NaT`` in an object array (a pandas column with gaps)."""
    if y.dtype.kind == "f":
        return np.isnan(y)
    if y.dtype.kind != "O":
        return np.zeros(y.shape[0], dtype=bool)
    return np.array([v is None or type(v).__name__ in ("NAType", "NaTType")
                     or (isinstance(v, (float, np.floating)) and np.isnan(v)) for v in y],
                    dtype=bool)


def _as_label_array(y):
    """``y`` as a 1-D array; a list mixing strings and numbers stays an object array (so the
    number ``-1`` is not turned into the string ``'-1'``)."""
    if isinstance(y, (list, tuple)):
        kinds = {isinstance(v, str) for v in y}
        y = np.asarray(y, dtype=object) if len(kinds) > 1 else np.asarray(y)
    else:
        y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, one label per row; got an array of shape {y.shape}.")
    return y


#: Inverse L2 penalties tried for the classifiers' logistic start, its most folds and the
#: most training rows it is fitted on (a seeded random subset beyond).
LOGISTIC_CS = tuple(float(c) for c in np.logspace(-4, 2, 7))
LOGISTIC_FOLDS = 5
LOGISTIC_START_ROWS = 10_000


def logistic_skip(F, codes, n_classes, weights=None, random_state=None):
    """Logistic-regression start of a classifier's linear skip.

    ``F`` (n, f) are the skip's features of the training rows (dense or CSR: the scaled
    series, flattened, or the scaled features) and ``codes`` (n,) their class indices in
    ``range(n_classes)``, rows weighted by ``weights`` (n,) when given. A multinomial
    logistic regression with the inverse L2 penalty ``C`` of ``LOGISTIC_CS`` that has the
    best log-loss over stratified folds (as many as the smallest class allows, at most
    ``LOGISTIC_FOLDS``; with one row in a class, ``C=1``) is fitted, and its logits become
    the skip: the classifier starts as the logistic regression a user would otherwise fit
    on those features, and the network learns a correction to its logits. Returns
    ``(weight, bias, C)``: shapes (n_classes, f) and (n_classes,); a binary problem's
    single logit ``z`` is split as ``(-z/2, z/2)``. ``None`` when a class has no training
    row (``partial_fit`` with ``classes``).
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
        # then a little less converged, which the network's training absorbs
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(F, codes, sample_weight=weights)
    best = getattr(model, "best_estimator_", model)
    W, b = best.coef_, best.intercept_
    if n_classes == 2:
        W, b = np.vstack([-W / 2, W / 2]), np.array([-b[0] / 2, b[0] / 2])
    return W, b, float(best.C)


@fill_doc()
class ClassifierTask(ClassifierMixin, EstimatorBase):
    """Label handling, loss and predictions of the classifiers (see the module docstring)."""

    _split_policy = "stratified"

    def _unlabelled_marker(self):
        """The label that marks unlabelled rows (``None``: every row is labelled)."""
        return None

    def _logistic_start(self, data, rows, features):
        """:func:`logistic_skip` fitted to the data rows ``rows`` (at most
        ``LOGISTIC_START_ROWS``, a random subset from the fit's seed beyond that), whose
        features ``features(rows)`` gives: ``(weight, bias, C)``, or None when a class has
        no row among them."""
        rows = np.asarray(rows)
        if rows.size > LOGISTIC_START_ROWS:
            rows = np.sort(np.random.RandomState(self.seed_).choice(
                rows, LOGISTIC_START_ROWS, replace=False))
        return logistic_skip(features(rows), data.targets[rows], self.classes_.size,
                             weights=data.weights[rows], random_state=self.seed_)

    def _targets(self, y, *, reset, classes=None, weights=None):
        """(codes, labelled mask, strata, loss weights): integer codes of ``y``, -1 on
        unlabelled rows; ``weights`` times the ``class_weight`` factors.

        Sets ``classes_`` when ``reset``. ``classes`` lists every class up front
        (``partial_fit``); a later call must use the fitted classes.
        """
        y = _as_label_array(y)
        marker = self._unlabelled_marker()
        self._refuse_missing_labels(y, marker)
        unl = split_unlabelled(y, marker)
        labelled = y[~unl]
        if labelled.size == 0:
            raise ValueError(f"y has no labelled rows (all are {marker!r}); label at least one "
                             "row of each of two classes.")
        if reset:
            warn_if_marker_looks_like_a_class(y, unl, marker)
        if labelled.dtype.kind == "O" and len({isinstance(v, str) for v in labelled}) > 1:
            raise ValueError(
                "y mixes numbers and strings among its labels; use one kind for every label "
                "(e.g. all strings), with the unlabelled marker of that kind.")
        check_classification_targets(labelled)
        if classes is None and not reset:
            classes = self.classes_
        if classes is None:
            classes = np.unique(labelled)
        else:
            if isinstance(classes, (bool, np.bool_)) or np.ndim(classes) != 1:
                got = (f"{type(classes).__name__} {classes!r}" if np.ndim(classes) == 0
                       else f"an array of shape {np.shape(classes)}")
                raise TypeError(f"'classes' must be a 1-D array-like of every label, e.g. "
                                f"classes=np.unique(y); got {got}. Pass it by keyword: "
                                "partial_fit(X, y, classes=...).")
            classes = _without_marker(np.unique(np.asarray(classes)), marker)
            unknown = np.setdiff1d(labelled, classes)
            if unknown.size:
                raise ValueError(f"y contains labels {unknown.tolist()} that are not in the "
                                 f"classes {classes.tolist()}; pass every class.")
        if classes.size < 2:
            only = classes[0].item() if isinstance(classes[0], np.generic) else classes[0]
            n_marked = int(unl.sum())
            are, were = ("s are", "were") if n_marked > 1 else (" is", "was")
            cause = (f" ({n_marked} row{are} {marker!r}, the `unlabelled` marker, and {were} "
                     f"taken as unlabelled; pass unlabelled=None if {marker!r} is a class)"
                     if n_marked else "")
            raise ValueError(f"y contains only one class ({only!r}) among the labelled rows"
                             f"{cause}; {type(self).__name__} needs at least 2 classes.")
        if not reset and not np.array_equal(classes, self.classes_):
            raise ValueError("warm_start=True or partial_fit needs the same classes as the "
                             f"previous fit ({self.classes_.tolist()}); got {classes.tolist()}.")
        codes = np.full(y.shape[0], -1, dtype=np.int64)
        codes[~unl] = np.searchsorted(classes, labelled)
        self.classes_ = classes
        if weights is not None:
            weights = weights * self._class_weights(codes, ~unl)
        return codes, ~unl, codes, weights

    def _refuse_missing_labels(self, y, marker):
        """Refuse missing labels (``NaN``, ``None``) with the ways to keep or drop those rows
        (they would otherwise read as a number among string labels, or fail as ``NaN``)."""
        missing = _missing_labels(y)
        if not missing.any():
            return
        at = np.flatnonzero(missing)
        rows = ", ".join(str(i) for i in at[:5]) + (", ..." if at.size > 5 else "")
        what = (f"y has {at.size} missing label{'s' if at.size > 1 else ''} (NaN/None) at "
                + (f"rows [{rows}]; " if at.size > 1 else f"row {rows}; "))
        if not hasattr(self, "unlabelled"):  # no unlabelled rows in this family
            raise ValueError(what + f"{type(self).__name__} needs a label on every row: drop "
                             "those rows.")
        present = y[~missing]
        strings = present.size > 0 and all(isinstance(v, str) for v in present)
        if marker is not None and isinstance(marker, str) == strings:
            keep = (f"fill them with {marker!r}, the `unlabelled` marker (e.g. "
                    f"y.fillna({marker!r}) on a pandas Series), to keep them as unlabelled rows")
        else:
            fill = "" if strings else -1
            keep = (f"fill them with a marker of the labels' kind and pass it as `unlabelled` "
                    f"(e.g. y.fillna({fill!r}) on a pandas Series, with unlabelled={fill!r}) "
                    "to keep them as unlabelled rows")
        raise ValueError(what + f"drop those rows, or {keep}.")

    def _class_weights(self, codes, labelled):
        """Per-row factors from ``class_weight`` (``"balanced"``: n / (k * count of the class)
        over the labelled rows, as scikit-learn's ``compute_sample_weight``)."""
        class_weight = getattr(self, "class_weight", None)
        factors = np.ones(codes.shape[0])
        if class_weight is None:
            return factors
        if isinstance(class_weight, dict):
            unknown = set(class_weight) - set(self.classes_.tolist())
            if unknown:
                raise ValueError(f"'class_weight' names classes {sorted(unknown, key=str)} that "
                                 f"are not in y's classes {self.classes_.tolist()}.")
            bad = {c: v for c, v in class_weight.items()
                   if isinstance(v, bool) or not isinstance(v, numbers.Real)
                   or not (np.isfinite(v) and v >= 0)}
            if bad:
                raise ValueError(f"'class_weight' must map classes to finite non-negative "
                                 f"numbers; got {bad!r}.")
            class_weight = {int(np.searchsorted(self.classes_, c)): float(v)
                            for c, v in class_weight.items()}
        factors[labelled] = compute_sample_weight(class_weight, codes[labelled])
        if labelled.any() and not factors[labelled].any():
            raise ValueError(f"'class_weight' gives every labelled row a weight of 0 (got "
                             f"{self.class_weight!r}); give some class a positive weight.")
        return factors

    def _criterion(self):
        return WeightedCrossEntropy, {}

    def _from_outputs(self, raw, *, samples=False):
        """Logits (rows, classes[, samples]) -> probabilities over the class axis."""
        return torch.softmax(torch.as_tensor(raw, dtype=torch.float64), dim=1).numpy()

    def _predict_from_outputs(self, raw):
        """Logits (rows, classes) -> the most probable class of each row."""
        return self.classes_[np.asarray(raw).argmax(axis=1)]

    def predict_proba(self, X, **predict_params):
        """Class probabilities of the rows of ``X``, shape (n_rows, n_classes).

        Parameters
        ----------
        %(predict_parameters)s

        Returns
        -------
        proba : ndarray of shape (n_rows, n_classes)
            Probability of every class (columns in the order of ``classes_``); rows sum
            to 1.
        """
        return self._from_outputs(self._predict_outputs(X, **predict_params))

    def predict(self, X, **predict_params):
        """The most probable class of each row of ``X``, shape (n_rows,).

        Parameters
        ----------
        %(predict_parameters)s

        Returns
        -------
        y_pred : ndarray of shape (n_rows,)
            The label of ``classes_`` with the highest probability.
        """
        proba = self.predict_proba(X, **predict_params)
        return self.classes_[proba.argmax(axis=1)]

    def score(self, X, y, sample_weight=None, **predict_params):
        """Accuracy on the labelled rows of ``y`` (rows marked unlabelled are left out).

        A cross-validation over semi-supervised targets (``-1`` outside the labelled set)
        therefore scores only the rows whose label is known.
        """
        y = _as_label_array(y)
        keep = ~split_unlabelled(y, self._unlabelled_marker())
        if not keep.any():
            raise ValueError("y has no labelled rows to score.")
        pred = self.predict(X, **predict_params)
        w = _score_weights(pred, y, sample_weight)
        return float(accuracy_score(y[keep], pred[keep], sample_weight=None if w is None
                                    else w[keep]))


def _score_weights(pred, y, sample_weight):
    """Check that ``y`` and ``sample_weight`` have one entry per predicted row of ``X``."""
    if len(y) != len(pred):
        raise ValueError(f"y has {len(y)} rows but X has {len(pred)}; score needs one target "
                         "per row of X.")
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64).ravel()
    if len(w) != len(pred):
        raise ValueError(f"sample_weight has {len(w)} entries but X has {len(pred)} rows; "
                         "pass one weight per row.")
    return w


#: Standard normal quantile of 0.95: half-width of a central 90 % interval in stds.
_Z90 = 1.6448536269514722

#: Fewest validation rows the Gaussian head's standard deviation is calibrated on.
MIN_CALIBRATION_ROWS = 20


def conformal_quantile(scores, level):
    r"""Split-conformal quantile of ``scores`` (rows first) along the rows: the
    :math:`\lceil level (n + 1) \rceil`-th smallest of the ``n`` scores, the bound a new
    exchangeable score stays under with probability at least ``level``. Needs
    :math:`n \ge level / (1 - level)` rows (9 for 0.9); the bound is infinite below."""
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0]
    # a product within rounding of an integer is that integer (0.68 * 75 is 51.00000000000001)
    rank = int(np.ceil(level * (n + 1) - 1e-9))
    if rank > n:
        return np.full(scores.shape[1:], np.inf)
    return np.sort(scores, axis=0)[rank - 1]


def mean_difference_se(dev, w, n_lags=0):
    """Standard error of the weighted mean of a per-row difference (of squared errors, say),
    given ``dev``, its deviations from that mean (rows in order), and weights ``w`` summing
    to 1.

    Independent rows give the standard error of a weighted mean, ``sqrt(sum w^2 dev^2)``.
    With ``n_lags`` > 0 the rows are in time order and neighbours are correlated (windows of
    one series that forecast overlapping stretches of it): the variance of the mean then
    takes the autocovariances up to that lag into account with Bartlett weights
    (Newey-West), as the Diebold-Mariano test of two forecasts does.
    """
    wd = w * dev
    var = float(wd @ wd)
    n_lags = min(int(n_lags), len(dev) - 1)
    for k in range(1, n_lags + 1):  # one vector product per lag
        var += 2.0 * (1.0 - k / (n_lags + 1)) * float(wd[k:] @ wd[:-k])
    return float(np.sqrt(max(var, 0.0)))


def beats_by_se(err, err_simple, w, n_se=1.0, se=mean_difference_se, **se_kwargs):
    """Whether per-row errors ``err`` beat those of a simpler model, ``err_simple``, by more
    than ``n_se`` standard errors: their weighted mean (weights ``w`` summing to 1) is lower
    by more than ``n_se`` times the standard error of the mean per-row difference
    (``se(deviations, w, **se_kwargs)``). ``n_se=1`` is the one-standard-error rule of
    penalised regression. Returns ``(decision, mean difference, its standard error)``."""
    diff = np.asarray(err, dtype=np.float64) - np.asarray(err_simple, dtype=np.float64)
    mean = float(w @ diff)
    stderr = se(diff - mean, w, **se_kwargs)
    return -mean > n_se * stderr, mean, stderr


class RegressorTask(RegressorMixin, EstimatorBase):
    """Target scaling, loss and predictions of the regressors (see the module docstring)."""

    _split_policy = "random"

    #: Whether NaN rows of ``y`` mean "unlabelled" (else NaN is an error).
    _nan_is_unlabelled = False

    #: Monte Carlo dropout draws behind ``predict(return_std=True)``.
    _n_std_samples = 30

    def _targets(self, y, *, reset, classes=None, weights=None):
        """(standardised float32 targets (n, n_outputs), labelled mask, None, weights).

        Sets the scaler (``y_mean_``, ``y_scale_``, ``n_outputs_``) when ``reset``: the
        statistics of the labelled rows, weighted by ``weights`` (so a row of weight 0 counts
        as unlabelled there too).
        """
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y of {type(self).__name__} must be numbers ({exc}); a regressor "
                             "needs numeric targets (for labels, use a classifier).") from exc
        if y.ndim not in (1, 2):
            raise ValueError(
                f"y must be 1-D or 2-D (n_samples, n_outputs); got shape {y.shape}. Flatten "
                "the outputs of each row first, e.g. y.reshape(len(y), -1) for the "
                "(n, horizon, channels) targets of skdiff.datasets.make_windows.")
        if y.ndim == 2 and y.shape[1] == 0:
            raise ValueError(
                f"y has no outputs: got shape {y.shape}. Pass one target per row, y of shape "
                f"({len(y)},), or ({len(y)}, n_outputs) with n_outputs >= 1.")
        y2 = y.reshape(len(y), -1)
        nan = np.isnan(y2)
        labelled = ~nan.any(axis=1)
        if nan.any():
            if not self._nan_is_unlabelled:
                raise ValueError(f"y contains NaN; {type(self).__name__} needs a value for "
                                 "every row.")
            partial = nan.any(axis=1) & ~nan.all(axis=1)
            if partial.any():
                raise ValueError(
                    f"Row {int(np.flatnonzero(partial)[0])} of y has NaN in some outputs but "
                    "not all; NaN marks a whole row as unlabelled: set every output of that "
                    "row to NaN, or fill the missing values.")
            if not labelled.any():
                raise ValueError("y has no labelled rows (all are NaN).")
        if np.isinf(y2).any():
            raise ValueError("y contains infinite values; every target must be finite.")
        if reset:
            self._y_1d = y.ndim == 1
            self.n_outputs_ = y2.shape[1]
            w = None if weights is None else weights[labelled]
            if w is not None and not w.any():
                raise ValueError("The sample weights are zero on every labelled row; nothing "
                                 "to train on.")
            self.y_mean_, self.y_scale_ = fit_scale(y2[labelled], weights=w, name="y")
        elif y2.shape[1] != self.n_outputs_:
            raise ValueError(
                f"y has {y2.shape[1]} outputs but the fitted network predicts {self.n_outputs_}; "
                f"pass a y of {self.n_outputs_} output(s) to continue training, or call fit "
                "(warm_start=False) to start a new network for the new outputs."
            )
        z = (y2 - self.y_mean_) / self.y_scale_
        return z.astype(np.float32), labelled, None, weights

    # -- the Gaussian head (``uncertainty="gaussian"``) -----------------------------------
    def _prepare_fit(self, *, reset=True):
        # the head is part of the network: a fit from scratch records the one it builds, and
        # prediction reads that record, not the parameter, which set_params may change after
        # the fit (a warm start or partial_fit refuses a changed uncertainty, as any
        # parameter the network was built with: _check_warm_parameters)
        seed = super()._prepare_fit(reset=reset)
        if reset and hasattr(self, "uncertainty"):
            self.uncertainty_ = self.uncertainty
        return seed

    @property
    def _gaussian(self):
        """Whether the head predicts a Gaussian (mean, variance) per output: the fitted head
        (``uncertainty_``), or before a fit the ``uncertainty`` parameter."""
        head = self.__dict__.get("uncertainty_", getattr(self, "uncertainty", None))
        return head == "gaussian"

    def _n_network_outputs(self):
        return self.n_outputs_ * (2 if self._gaussian else 1)

    def _n_variance_outputs(self):
        """Head outputs that are raw variances (fed detached features); 0 without a
        Gaussian head."""
        return self.n_outputs_ if self._gaussian else 0

    #: ``mean_weight`` of the Gaussian head's :class:`~skdiff.nn.losses.GaussianNLL`.
    _gaussian_mean_weight = 0.5

    def _criterion(self):
        if self._gaussian:
            return GaussianNLL, {"mean_weight": self._gaussian_mean_weight}
        return WeightedMSE, {}

    #: Whether the Gaussian head's predictive distribution also carries the uncertainty of
    #: the weights: the head's Gaussians under Monte Carlo dropout (see
    #: :meth:`_predictive_std`).
    _gaussian_mc = False

    def _gaussian_moments(self, raw, calibrated=True):
        """Standardised (mean, std) of raw Gaussian-head outputs (rows, 2 n_outputs[,
        passes]); the std times ``std_scale_`` when ``calibrated``. A raw variance of ``-inf``
        marks a known value (std 0)."""
        k = self.n_outputs_
        raw_var = raw[:, k:]
        var = np.where(np.isneginf(raw_var), 0.0,
                       gaussian_variance(torch.as_tensor(raw_var)).numpy())
        scale = self.std_scale_ if calibrated else np.ones(k)
        return raw[:, :k], np.sqrt(var) * scale.reshape((k,) + (1,) * (raw.ndim - 2))

    def _calibrate_std(self, outputs, targets, continued=False):
        r"""Fit ``std_scale_`` on the held-out validation rows: ``outputs()`` returns their raw
        outputs, ``targets`` holds their standardised targets (ones without a Gaussian head
        or with fewer than ``MIN_CALIBRATION_ROWS`` rows, when ``outputs`` is not called).

        The variance is fitted to the training rows, whose errors are smaller than those of
        rows the network has not seen; the factor corrects that. It is split conformal
        (Vovk et al. 2005; Lei et al. 2018) with the score :math:`|y - \mu| / \sigma`: per
        output, the :math:`\lceil 0.9 (n + 1) \rceil`-th smallest of the ``n`` rows' scores
        (:func:`conformal_quantile`), divided by the normal quantile, so that the central
        90 % interval covers a new row exchangeable with the validation rows with
        probability at least 0.9 (and at most :math:`0.9 + 1 / (n + 1)`). The empirical 0.9
        quantile instead covers less than 0.9 on average with few rows.

        ``continued``: a continued fit (``partial_fit``, a warm start) whose call holds out
        fewer than ``MIN_CALIBRATION_ROWS`` rows keeps the factor of the last calibration."""
        if continued and len(targets) < MIN_CALIBRATION_ROWS and \
                getattr(self, "std_scale_", None) is not None:
            return
        self.std_scale_ = np.ones(self.n_outputs_)
        if not self._gaussian or len(targets) < MIN_CALIBRATION_ROWS:
            return
        with self._inference():
            raw = np.asarray(outputs(), dtype=np.float64)
        mean, std = self._gaussian_moments(raw, calibrated=False)
        z = np.abs(np.asarray(targets, dtype=np.float64).reshape(len(mean), -1) - mean) / std
        self.std_scale_ = conformal_quantile(z, 0.9) / _Z90

    def _draw_samples(self, inputs, n_samples, seed):
        """Samples in the units of ``y``, centred on ``predict``'s mean.

        The Gaussian head without Monte Carlo dropout draws from the predicted Gaussian of
        each row and output, whose mean is ``predict``'s. Monte Carlo dropout passes
        (``uncertainty="mc_dropout"``, or the Gaussian head with ``_gaussian_mc``) are
        centred on the deterministic forward that ``predict`` returns: draw ``s`` is that
        mean plus pass ``s``'s deviation from the mean of the call's passes (and, with the
        Gaussian head, the noise of pass ``s``'s Gaussian). A pass with dropout active is a
        thinned network, and the thinned networks' average is not the full network's
        output (the nonlinearities do not commute with the average over masks); uncentred,
        the draws' average would be another point forecast than ``predict``'s. Centred,
        it is ``predict``'s mean (up to the Gaussian noise's sampling error), and the
        draws' spread is the passes' own, as ``predict(return_std=True)`` reports it. A
        single draw (``n_samples=1``) is its pass as drawn.
        """
        with self._inference():
            det = self._outputs(inputs)
        k = self.n_outputs_
        if self._gaussian and not self._gaussian_mc:
            mean, std = (a[..., None] for a in self._gaussian_moments(det))
        else:
            passes = self._mc_outputs(inputs, n_samples, seed)
            means = passes[:, :k]
            # one pass has no mean of its own to centre on: it is returned as drawn, so a
            # loop of single draws (Thompson sampling) keeps the passes' spread
            centre = means.mean(axis=-1, keepdims=True) if n_samples > 1 else det[:, :k, None]
            mean = det[:, :k, None] + (means - centre)
            if not self._gaussian:
                return self._unscale(mean)
            std = self._gaussian_moments(passes)[1]
        # drawn sample by sample (all rows and outputs of draw 0, then of draw 1, ...), so
        # that the first k draws' noise does not depend on n_samples
        noise = np.moveaxis(np.random.RandomState(seed).standard_normal(
            (n_samples,) + mean.shape[:-1]), 0, -1)
        return self._unscale(mean + std * noise)

    def _unscale(self, z, axis=1):
        """Standardised outputs -> the units of ``y``; the output axis is ``axis``."""
        shape = [1] * z.ndim
        shape[axis] = -1
        out = z * self.y_scale_.reshape(shape) + self.y_mean_.reshape(shape)
        return out.take(0, axis=axis) if self._y_1d else out

    def _from_outputs(self, raw, *, samples=False):
        """Standardised means (rows, outputs[, samples]) -> predictions in ``y``'s units."""
        return self._unscale(raw[:, :self.n_outputs_])

    def _predict_from_outputs(self, raw):
        """Raw outputs (rows, outputs) -> predictions in the units of ``y``."""
        return self._from_outputs(raw)

    def _predictive_std(self, inputs):
        """Standardised predictive std (rows, outputs): the Gaussian head's calibrated std,
        or the spread of Monte Carlo dropout draws, seeded by the fit seed so ``predict`` is
        deterministic."""
        if self._gaussian and self._gaussian_mc:
            # law of total variance over the passes: the mean of the head's variances plus
            # the variance of its means (Kendall and Gal, NeurIPS 2017)
            mean, std = self._gaussian_moments(
                self._mc_outputs(inputs, self._n_std_samples, self.seed_))
            return np.sqrt((std ** 2).mean(-1) + mean.var(-1))
        if self._gaussian:
            with self._inference():
                return self._gaussian_moments(self._outputs(inputs))[1]
        raw = self._mc_outputs(inputs, self._n_std_samples, self.seed_)
        return raw[:, :self.n_outputs_].std(axis=-1)

    def predict(self, X, return_std=False, **predict_params):
        """Predictions in the units of ``y``; with ``return_std`` also the predictive std.

        Returns
        -------
        y_pred : ndarray of shape (n_rows,) or (n_rows, n_outputs)
        y_std : ndarray of the same shape, only with ``return_std``
        """
        check_is_fitted(self)
        inputs = self._prepare_predict(X, **predict_params)
        with self._inference():
            raw = self._outputs(inputs)
        mean = self._from_outputs(raw)
        if not return_std:
            return mean
        std = self._predictive_std(inputs) * self.y_scale_
        return mean, (std[:, 0] if self._y_1d else std)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def score(self, X, y, sample_weight=None, **predict_params):
        """R² on the rows of ``y``; where NaN marks unlabelled rows (``_nan_is_unlabelled``)
        those are left out, elsewhere NaN in ``y`` is refused, as ``fit`` refuses it."""
        y = np.asarray(y, dtype=np.float64)
        nan = np.isnan(y.reshape(len(y), -1))
        if nan.any() and not self._nan_is_unlabelled:
            raise ValueError(
                f"y contains NaN ({int(nan.any(axis=1).sum())} of {len(y)} rows); "
                f"{type(self).__name__} scores every row and needs a value for each: drop "
                "or fill the rows without a target.")
        keep = ~nan.any(axis=1)
        if not keep.any():
            raise ValueError("y has no labelled rows to score.")
        pred = self.predict(X, **predict_params)
        w = _score_weights(pred, y, sample_weight)
        return float(r2_score(y[keep], pred[keep], sample_weight=None if w is None
                              else w[keep]))

