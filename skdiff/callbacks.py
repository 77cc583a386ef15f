"""skorch callbacks that understand skdiff's targets.

skdiff's nets train on targets ``{"y": values, "w": row weights}``, in which a row of weight
0 (an unlabelled row, or a node outside the validation rows of a full-graph batch) does not
count. skorch's own :class:`skorch.callbacks.EpochScoring` would score every row of the raw
network outputs against that dict; :class:`EpochScoring` here takes the same arguments and
scores the rows that count, with their weights, through a scikit-learn scorer.

Every other skorch callback (``Checkpoint``, ``LRScheduler``, ``EarlyStopping``,
``GradientNormClipping``, ``ProgressBar``, loggers such as ``TensorBoard`` or
``WandbLogger``) works unchanged through the estimators' ``callbacks`` parameter.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import get_scorer
from skorch.callbacks import Callback

__all__ = ["EpochScoring"]


class _Classified(ClassifierMixin, BaseEstimator):
    """A fitted-looking classifier that answers from cached logits (class codes 0..k-1)."""

    def __init__(self, logits):
        self.logits = logits
        self.classes_ = np.arange(logits.shape[1])

    def predict_proba(self, X):
        return torch.softmax(torch.as_tensor(self.logits, dtype=torch.float64), 1).numpy()

    def decision_function(self, X):
        return self.logits if self.logits.shape[1] > 2 else self.logits[:, 1] - self.logits[:, 0]

    def predict(self, X):
        return self.logits.argmax(1)


class _Regressed(RegressorMixin, BaseEstimator):
    """A fitted-looking regressor that answers from cached predictions."""

    def __init__(self, pred):
        self.pred = pred

    def predict(self, X):
        return self.pred


class EpochScoring(Callback):
    """Score the rows that count after every epoch, with a scikit-learn scorer.

    Parameters
    ----------
    scoring : str or callable
        A scorer name of :func:`sklearn.metrics.get_scorer` (``"accuracy"``,
        ``"balanced_accuracy"``, ``"roc_auc"``, ``"r2"``, ``"neg_mean_squared_error"``, ...)
        or a callable ``scorer(estimator, X, y, sample_weight=None)``. Classifiers are scored
        on class codes ``0..n_classes-1`` (the order of ``classes_``); regressors on the
        standardised targets the network trains on (``r2`` is the same in any units).
    lower_is_better : bool, default=False
        Whether a lower score is better (for the ``<name>_best`` flag of the history).
    on_train : bool, default=False
        Score the training batches instead of the validation rows.
    name : str, default=None
        History key; default ``"valid_<scoring>"`` or ``"train_<scoring>"`` (see
        :meth:`history_key`). A key the estimator records itself (``"train_loss"``,
        ``"valid_loss"``, and the classifiers' ``"valid_acc"`` and ``"valid_score"``, which
        early stopping and ``n_init`` read) is refused in ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from skdiff import DIFFormerClassifier
    >>> from skdiff.callbacks import EpochScoring
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = DIFFormerClassifier(n_layers=1, max_epochs=3, early_stopping=True,
    ...                           random_state=0,
    ...                           callbacks=[EpochScoring("balanced_accuracy")]).fit(X, y)
    >>> "valid_balanced_accuracy" in clf.history_[-1]
    True
    """

    def __init__(self, scoring, *, lower_is_better=False, on_train=False, name=None):
        self.scoring = scoring
        self.lower_is_better = lower_is_better
        self.on_train = on_train
        self.name = name

    def history_key(self):
        """The history key this callback records: ``name``, or ``"valid_<scoring>"``
        (``"train_<scoring>"``), the scoring named by its string, its function's name, or
        the name of the metric a :func:`~sklearn.metrics.make_scorer` scorer wraps."""
        if self.name:
            return self.name
        if isinstance(self.scoring, str):
            label = self.scoring
        else:
            func = getattr(self.scoring, "_score_func", self.scoring)
            label = getattr(func, "__name__", None) or getattr(self.scoring, "__name__", None) \
                or "scoring"
        return f"{'train' if self.on_train else 'valid'}_{label}"

    def initialize(self):
        self.scorer_ = get_scorer(self.scoring) if isinstance(self.scoring, str) \
            else self.scoring
        self.name_ = self.history_key()
        self.best_ = None
        self._reset()
        return self

    def _reset(self):
        self.outputs_, self.targets_ = [], []

    def on_train_begin(self, net, **kwargs):
        if not self.on_train and net.train_split is None:
            warnings.warn(
                f"EpochScoring({self.scoring!r}) scores the validation rows, and this fit has "
                "none (early_stopping is off, or 'auto' turned it off for this data). Set "
                "early_stopping=True, or on_train=True to score the training rows.",
                UserWarning, stacklevel=2)

    def on_epoch_begin(self, net, **kwargs):
        self._reset()

    def on_batch_end(self, net, batch=None, training=None, y_pred=None, **kwargs):
        if training != self.on_train or y_pred is None:
            return
        self.outputs_.append(y_pred.detach().float().cpu())
        self.targets_.append({k: v.detach().cpu() for k, v in batch[1].items()})

    def on_epoch_end(self, net, **kwargs):
        if not self.outputs_:
            return
        out = torch.cat(self.outputs_).numpy().astype(np.float64)
        y = torch.cat([t["y"] for t in self.targets_]).numpy()
        w = torch.cat([t["w"] for t in self.targets_]).numpy().astype(np.float64)
        self._reset()
        if y.dtype.kind in "iu":  # class codes, -1 unlabelled
            keep = (y >= 0) & (w > 0)
            model, y, w = _Classified(out[keep]), y[keep], w[keep]
        else:
            y = y.reshape(len(y), -1)
            keep = ~np.isnan(y).any(axis=1) & (w > 0)
            pred = out[keep][:, :y.shape[1]]  # a Gaussian head's variance half is left out
            y, w = y[keep], w[keep]
            if y.shape[1] == 1:
                y, pred = y[:, 0], pred[:, 0]
            model = _Regressed(pred)
        if not keep.any():
            return
        score = float(self.scorer_(model, np.zeros((len(y), 1)), y, sample_weight=w))
        net.history.record(self.name_, score)
        better = self.best_ is None or (score < self.best_ if self.lower_is_better
                                        else score > self.best_)
        if better:
            self.best_ = score
        net.history.record(f"{self.name_}_best", bool(better))
