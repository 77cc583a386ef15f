"""skorch callbacks that understand skdiff's targets.

skdiff's nets train on targets ``{"y": values, "w": row weights}``, in which a row of weight
0 (an unlabelled row, or a node outside the validation rows of a full-graph batch) does not
count. skorch's own :class:`skorch.callbacks.EpochScoring` would score every row of the raw
network outputs against that dict; :class:`EpochScoring` here takes the same arguments and
scores the rows that count, with their weights, through a scikit-learn scorer.
:class:`WeightAveraging` predicts with a moving average of the weights over the epochs.
:class:`RestoreLowestLoss`, which every estimator adds to a fit without early stopping,
undoes a spike of the training loss at the end of a run.

Every other skorch callback (``Checkpoint``, ``LRScheduler``, ``EarlyStopping``,
``GradientNormClipping``, ``ProgressBar``, loggers such as ``TensorBoard`` or
``WandbLogger``) works unchanged through the estimators' ``callbacks`` parameter.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import get_scorer
from skorch.callbacks import Callback

from ._checks import Interval, caller_stacklevel
from ._engine import training_loss

__all__ = ["EpochScoring", "RestoreLowestLoss", "WeightAveraging"]


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
                UserWarning, stacklevel=caller_stacklevel())

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


class WeightAveraging(Callback):
    r"""Predict with an exponential moving average of the weights over the last epochs.

    After every training epoch the average :math:`\bar\theta` moves towards the current
    weights, :math:`\bar\theta \leftarrow \beta\,\bar\theta + (1 - \beta)\,\theta`
    (Polyak averaging; the first epoch's weights start it). The last epochs of a long run
    wander around a minimum with the noise of dropout and of the optimiser's steps; their
    average lies nearer its centre, so the predictions depend less on where the run
    happened to stop (and so on the seed). When training ends, the training loss of the
    average and that of the last weights are computed on the training rows without dropout
    (one forward pass each), and the network takes the average unless its loss is higher:
    a run that still learnt in its last epochs would average in weights that had not learnt
    the task yet. Floating-point buffers (normalisation statistics) are averaged too;
    integer ones are the last epoch's.

    Parameters
    ----------
    decay : "auto" or float in [0, 1), default="auto"
        :math:`\beta`, per epoch. ``"auto"``: ``1 - 15 / max_epochs`` (0.95 for 300
        epochs), an average over about the last twentieth of the run, in which the weights
        from before its last third keep a share below 1 %; 0 (no averaging) for runs of at
        most 15 epochs.
    compare : bool, default=True
        Keep the average only if its training loss is at most the last weights' (above).
        ``False``: always keep the average.

    Attributes
    ----------
    decay_ : float
        The decay of the current or last training run (:meth:`decay_for` its epochs).
    averaged_ : bool
        Whether the last training run ended on the average.
    losses_ : tuple of float or None
        (last weights, average): the training losses compared at the end of the last run;
        ``None`` where nothing was compared.
    average_ : dict or None
        The running average of the network's ``state_dict`` during training; ``None``
        outside it.

    Notes
    -----
    The average replaces the weights that training ends with, so it does not combine with
    ``EarlyStopping(load_best=True)``, which restores the best epoch's weights then:
    :class:`~skdiff.DIFFormerClassifier` (``weight_averaging=True``) adds it only where
    training runs all its epochs. Each training call averages its own epochs: a
    ``partial_fit`` of one epoch keeps that epoch's weights. The average is dropped once
    training ends, so a fitted estimator pickles no second copy of its weights.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from skdiff import DIFFormerRegressor
    >>> from skdiff.callbacks import WeightAveraging
    >>> X, y = load_iris(return_X_y=True)
    >>> averaging = WeightAveraging()
    >>> reg = DIFFormerRegressor(n_layers=1, max_epochs=30, random_state=0,
    ...                          callbacks=[averaging]).fit(X[:, :3], X[:, 3])
    >>> bool(reg.score(X[:, :3], X[:, 3]) > 0.8), averaging.decay_
    (True, 0.5)
    """

    def __init__(self, decay="auto", compare=True):
        self.decay = decay
        self.compare = compare

    def initialize(self):
        decay = self.decay
        if not (isinstance(decay, str) and decay == "auto"
                or Interval(numbers.Real, 0, 1, closed="left").is_satisfied_by(decay)):
            raise ValueError(f"WeightAveraging: 'decay' must be 'auto' or a number in [0, 1); "
                             f"got {decay!r}.")
        if not isinstance(self.compare, (bool, np.bool_)):
            raise ValueError(f"WeightAveraging: 'compare' must be True or False; got "
                             f"{self.compare!r}.")
        self._reset()
        return self

    def _reset(self):
        self.average_ = None
        self.averaged_ = False
        self.losses_ = None

    def decay_for(self, max_epochs):
        """The per-epoch decay used for a run of ``max_epochs`` epochs.

        Parameters
        ----------
        max_epochs : int
            The epochs of the training run.

        Returns
        -------
        decay : float
            ``decay`` if it is a number, else ``max(0, 1 - 15 / max_epochs)``.
        """
        if self.decay != "auto":
            return float(self.decay)
        return max(0.0, 1.0 - 15.0 / max(int(max_epochs), 1))

    def on_train_begin(self, net, **kwargs):
        self._reset()
        self.decay_ = self.decay_for(net.max_epochs)

    def on_epoch_end(self, net, **kwargs):
        state = net.module_.state_dict()
        with torch.no_grad():
            if self.average_ is None:
                self.average_ = {k: v.detach().clone() for k, v in state.items()}
                return
            for k, v in state.items():
                if v.dtype.is_floating_point:
                    self.average_[k].lerp_(v.detach(), 1.0 - self.decay_)
                else:
                    self.average_[k].copy_(v)

    def on_train_end(self, net, X=None, **kwargs):
        average, self.average_ = self.average_, None
        if average is None or self.decay_ == 0:
            return  # nothing trained, or nothing averaged: the last weights
        if self.compare and X is not None:
            last = {k: v.detach().clone() for k, v in net.module_.state_dict().items()}
            loss_last = training_loss(net, X)
            net.module_.load_state_dict(average)
            self.losses_ = (loss_last, training_loss(net, X))
            if self.losses_[1] > loss_last:
                net.module_.load_state_dict(last)
                return
        else:
            net.module_.load_state_dict(average)
        self.averaged_ = True


class RestoreLowestLoss(Callback):
    """End a run without early stopping on the weights of its lowest training loss when the
    last weights' is clearly higher.

    Full-batch Adam at a constant learning rate can end a run in a spike: the last few
    updates throw the weights out of the minimum they had reached (the training loss of the
    last weights many times that of a few epochs before), and without early stopping those
    are the weights that predict. An epoch's recorded training loss is measured while it
    trains, on the weights as the epoch starts, so the weights at the start of every epoch
    are copied and those of the epoch with the lowest recorded loss are kept aside. When
    the run ends, the training loss of the last weights and that of the kept ones are
    computed on the training rows without dropout (one forward pass each), and the kept
    weights replace the last ones if the last weights' loss is above theirs by more than
    ``tolerance``. Differences within that are the epoch-to-epoch noise of a run that has
    settled, where the last weights serve as well as any: with a few labelled rows the
    training loss falls to a few thousandths of a nat, and its ups and downs there say
    nothing about the weights' predictions on the other rows. A run of one epoch
    (``partial_fit``) keeps its weights.

    Every estimator adds one to a fit that trains without early stopping and without
    :class:`WeightAveraging` (each of which chooses the weights that predict in its own
    way), and records the outcome in ``restored_epoch_``. One among ``callbacks`` takes its
    place: ``callbacks=[RestoreLowestLoss(tolerance=np.inf)]`` keeps the last weights.

    Parameters
    ----------
    tolerance : float, default=0.01
        How far the last weights' training loss may exceed the lowest epoch's before that
        epoch's weights are restored, in the loss's units: nats per row for the
        classifiers' cross-entropy and for the regressors' Gaussian negative
        log-likelihood of standardised targets.

    Attributes
    ----------
    restored_epoch_ : int or None
        The epoch (as numbered in the history) whose starting weights the last run ended
        on; ``None`` where it kept its last weights.
    losses_ : tuple of float or None
        (last weights, lowest epoch's weights): the training losses compared at the end of
        the last run; ``None`` where nothing was compared.

    See Also
    --------
    WeightAveraging : predict with an average of the last epochs' weights instead.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from skdiff import DIFFormerClassifier
    >>> from skdiff.callbacks import RestoreLowestLoss
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = DIFFormerClassifier(n_layers=1, max_epochs=30, random_state=0).fit(X, y)
    >>> clf.restored_epoch_ is None  # no spike at the end: the last weights predict
    True
    >>> keep_last = RestoreLowestLoss(tolerance=np.inf)
    >>> clf = DIFFormerClassifier(n_layers=1, max_epochs=30, random_state=0,
    ...                           callbacks=[keep_last]).fit(X, y)
    >>> keep_last.restored_epoch_ is None and clf.restored_epoch_ is None
    True
    """

    def __init__(self, tolerance=0.01):
        self.tolerance = tolerance

    def initialize(self):
        if not Interval(numbers.Real, 0, np.inf, closed="both").is_satisfied_by(
                self.tolerance):
            raise ValueError(f"RestoreLowestLoss: 'tolerance' must be a number >= 0 (np.inf: "
                             f"always keep the last weights); got {self.tolerance!r}.")
        self._reset()
        return self

    def _reset(self):
        self.restored_epoch_ = None
        self.losses_ = None
        self._candidate = self._best = None
        self._best_loss, self._best_epoch, self._epochs = np.inf, None, 0

    def on_train_begin(self, net, **kwargs):
        self._reset()

    def on_epoch_begin(self, net, **kwargs):
        with torch.no_grad():
            self._candidate = {k: v.detach().clone() for k, v in net.module_.state_dict().items()}

    def on_epoch_end(self, net, **kwargs):
        self._epochs += 1
        loss = net.history[-1].get("train_loss")
        if loss is not None and loss < self._best_loss:
            self._best_loss, self._best_epoch = float(loss), net.history[-1]["epoch"]
            self._best = self._candidate

    def on_train_end(self, net, X=None, **kwargs):
        best, epoch, epochs = self._best, self._best_epoch, self._epochs
        self._candidate = self._best = None  # no second copy of the weights in a pickle
        if best is None or epochs < 2 or X is None:
            return
        last = {k: v.detach().clone() for k, v in net.module_.state_dict().items()}
        loss_last = training_loss(net, X)
        net.module_.load_state_dict(best)
        loss_best = training_loss(net, X)
        self.losses_ = (loss_last, loss_best)
        if loss_last - loss_best > self.tolerance:
            self.restored_epoch_ = int(epoch)
        else:
            net.module_.load_state_dict(last)
