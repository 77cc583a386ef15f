"""Flowformer estimators: sequence regression/forecasting and sequence classification."""

from __future__ import annotations

import copy
import numbers
import weakref

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state, column_or_1d
from sklearn.utils.multiclass import check_classification_targets
from torch import nn
from torch.utils.data import TensorDataset

from ._base import (
    TRAINING_PARAMETER_CONSTRAINTS,
    Interval,
    NeuralEstimatorBase,
    StrOptions,
    check_adjacency,
    check_is_fitted,
    draw_seed,
    validate_data,
    validation_split,
)
from .nn.flowformer import Flowformer
from .nn.graph import edge_index_from_scipy, normalized_adjacency

__all__ = ["FlowformerClassifier", "FlowformerRegressor"]

# float64 inference copies of fitted networks, keyed by the network (see _module64)
_MODULE64 = weakref.WeakKeyDictionary()

_MODEL_CONSTRAINTS = {
    "hidden_dim": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_heads": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_layers": [Interval(numbers.Integral, 0, None, closed="left")],
    "ff_dim": [Interval(numbers.Integral, 1, None, closed="left"), None],
    "dropout": [Interval(numbers.Real, 0, 1, closed="left")],
    "causal": ["boolean"],
    "clamp": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "pooling": [StrOptions({"mean", "last", "flatten"})],
    "attention": [StrOptions({"flow", "softmax"})],
    "instance_norm": ["boolean"],
    "skip": [StrOptions({"level", "window"})],
    "patch_len": [Interval(numbers.Integral, 1, None, closed="left"), None],
    "patch_stride": [Interval(numbers.Integral, 1, None, closed="left"), None],
    "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
}


class _GaussianNLL(nn.Module):
    """Loss of the Gaussian head on its (mean, softplus(raw) variance) halves.

    The mean is trained by squared error and the variance by the Gaussian negative
    log-likelihood around the *detached* mean (the network also feeds the variance half
    detached encoder features). Plain NLL lets the variance's gradient reach the mean and the
    encoder, and the loss falls by widening the variance instead of fitting the mean
    (Seitzer et al., ICLR 2022): on a noise-free sine mixture, 10 epochs, test R^2 0.81 with
    plain NLL, 0.97-0.98 with this split (docs/flowformer.md).
    """

    def forward(self, y_pred, y_true):
        k = y_true.shape[-1]
        mean, var = y_pred[..., :k], _variance(y_pred[..., k:])
        sq = (y_true - mean) ** 2
        return 0.5 * (sq.mean() + (torch.log(var) + sq.detach() / var).mean())


def _variance(raw):
    return nn.functional.softplus(raw) + 1e-6


class _FlowformerBase(NeuralEstimatorBase):
    """Shared data handling of the Flowformer estimators (private)."""

    _parameter_constraints = {**TRAINING_PARAMETER_CONSTRAINTS, **_MODEL_CONSTRAINTS}

    def __init__(self, *, hidden_dim=64, n_heads=4, n_layers=2, ff_dim=None, dropout=0.1,
                 causal=False, clamp=1.0, pooling="mean", attention="flow", instance_norm=True,
                 skip="level", patch_len=None, patch_stride=None, n_init=1, max_epochs=100,
                 lr=1e-3, weight_decay=0.0, batch_size=64, early_stopping=True,
                 validation_fraction=0.1, n_iter_no_change=10, warm_start=False, device="auto",
                 random_state=None, verbose=0, callbacks=None):
        self.hidden_dim = hidden_dim
        self.n_heads = n_heads
        self.n_layers = n_layers
        self.ff_dim = ff_dim
        self.dropout = dropout
        self.causal = causal
        self.clamp = clamp
        self.pooling = pooling
        self.attention = attention
        self.instance_norm = instance_norm
        self.skip = skip
        self.patch_len = patch_len
        self.patch_stride = patch_stride
        self.n_init = n_init
        self.max_epochs = max_epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.callbacks = callbacks

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags

    # -- data --------------------------------------------------------------------------------
    def _check_X(self, X, y=None, *, reset, fit=False):
        """Validate X (n, L) or (n, L, C) (and y); return X as float32 (n, L, C)."""
        if not hasattr(X, "shape") and not hasattr(X, "__array__"):
            try:
                np.asarray(X, dtype=np.float64)
            except (ValueError, TypeError) as exc:
                if "inhomogeneous" in str(exc) or "sequence" in str(exc):
                    raise ValueError(
                        "X is ragged: every sequence must have the same length (and channels). "
                        "Pad or crop them, or cut a long series with "
                        "skdiff.datasets.make_windows."
                    ) from exc
        kw = dict(allow_nd=True, dtype=np.float32, reset=reset)
        if not fit:
            X = validate_data(self, X, **kw)
        else:
            X, y = validate_data(self, X, y, multi_output=True, y_numeric=self._y_numeric, **kw)
        if X.ndim > 3:
            raise ValueError(
                f"X must be 2-D (n_samples, length) or 3-D (n_samples, length, n_channels); "
                f"got an array of shape {X.shape}."
            )
        if X.ndim == 2:
            X = X[:, :, None]
        if reset:
            self.n_channels_in_ = X.shape[2]
            self.sequence_length_ = X.shape[1]
        elif X.shape[2] != self.n_channels_in_:
            raise ValueError(
                f"X has {X.shape[2]} channels but {type(self).__name__} was fitted on "
                f"{self.n_channels_in_}."
            )
        return (X, y) if fit else X

    def _scale_X(self, X, reset):
        if reset:
            self.x_mean_ = X.mean(axis=(0, 1))
            sd = X.std(axis=(0, 1))
            self.x_scale_ = np.where(sd > 1e-12 * (1 + np.abs(self.x_mean_)), sd, 1.0)
        return ((X - self.x_mean_) / self.x_scale_).astype(np.float32)

    def _graph(self, adjacency, reset):
        if not reset:
            return getattr(self, "adjacency_", None)
        if adjacency is None:
            self.adjacency_ = None
        else:
            A = check_adjacency(adjacency, self.n_channels_in_, what="channels of X")
            ei, ew = edge_index_from_scipy(A)
            self.adjacency_ = normalized_adjacency(ei, ew, self.n_channels_in_).to_dense().numpy()
        return self.adjacency_

    def _build(self, n_outputs):
        if self.hidden_dim % self.n_heads:
            raise ValueError(
                f"'hidden_dim' ({self.hidden_dim}) must be divisible by 'n_heads' "
                f"({self.n_heads}); e.g. hidden_dim="
                f"{self.n_heads * max(1, self.hidden_dim // self.n_heads)}."
            )
        if self.patch_len is None and self.patch_stride is not None:
            raise ValueError(
                f"'patch_stride' ({self.patch_stride}) is the step between patches and needs "
                f"'patch_len'; got patch_len=None. Set patch_len, or leave patch_stride=None."
            )
        if self.patch_len is not None and self.patch_len > self.sequence_length_:
            raise ValueError(
                f"'patch_len' ({self.patch_len}) is longer than the sequences of X "
                f"({self.sequence_length_} steps); use patch_len <= {self.sequence_length_}."
            )
        if self.patch_stride is not None and self.patch_stride > self.patch_len:
            raise ValueError(
                f"'patch_stride' ({self.patch_stride}) is larger than 'patch_len' "
                f"({self.patch_len}): the steps between patches would be left out; use "
                f"patch_stride <= patch_len."
            )
        with self._rng():
            return Flowformer(
                self.n_channels_in_, n_outputs, self.sequence_length_,
                hidden_dim=self.hidden_dim, n_heads=self.n_heads, n_layers=self.n_layers,
                ff_dim=self.ff_dim, dropout=self.dropout, causal=self.causal, clamp=self.clamp,
                pooling=self.pooling, attention=self.attention, adjacency=self.adjacency_,
                instance_norm=self.instance_norm, skip=self.skip, patch_len=self.patch_len,
                patch_stride=self.patch_stride,
                n_detached_outputs=self._n_variance_outputs(n_outputs),
            )

    def _n_variance_outputs(self, n_outputs):
        """Head outputs that are variances (fed detached features); 0 without a Gaussian head."""
        return 0

    def _split(self, n, y_cls=None):
        """Train/validation rows for early stopping (None when disabled or too few rows)."""
        if not self.early_stopping:
            return np.arange(n), None
        n_val = int(np.floor(n * self.validation_fraction))
        if n_val < 1 or n - n_val < 1:
            return np.arange(n), None
        if y_cls is not None:  # classification: random rows, stratified when possible
            k = len(np.unique(y_cls))
            strat = y_cls if min(n_val, n - n_val) >= k else None
            return validation_split(n, n_val, y=strat, random_state=self.seed_ % 2**31)
        # sequences: the LAST rows, in time order (no look-ahead from future windows)
        return np.arange(n - n_val), np.arange(n - n_val, n)

    def _fit(self, X, y, adjacency, *, epochs=None, partial=False):
        reuse = hasattr(self, "net_") and (self.warm_start or partial)
        self._prepare_fit(reset=not reuse)
        if self.skip == "window" and not self.instance_norm:
            raise ValueError(
                "skip='window' is the linear skip of the instance normalisation and needs "
                "instance_norm=True; got instance_norm=False. Set instance_norm=True, or leave "
                "skip at its default 'level' (ignored without instance_norm)."
            )
        X, y = self._check_X(X, y, reset=not reuse, fit=True)
        Xs = self._scale_X(X, reset=not reuse)
        self._graph(adjacency, reset=not reuse)
        y_t, n_outputs, criterion, y_cls = self._targets(y, reset=not reuse)
        tr, va = self._split(len(Xs), y_cls)
        Xt = torch.as_tensor(Xs)
        train = TensorDataset(Xt[tr], y_t[tr])
        valid = None if va is None else TensorDataset(Xt[va], y_t[va])
        if reuse:  # continue the kept network
            self._train(None, train, valid_dataset=valid, criterion=criterion, epochs=epochs,
                        reuse=True)
        else:
            self._fit_inits(Xs, y_t, n_outputs, criterion, y_cls, tr, va, train, valid, epochs)
        self._after_fit(Xs, y_t.numpy(), va)
        return self

    def _fit_inits(self, Xs, y_t, n_outputs, criterion, y_cls, tr, va, train, valid, epochs):
        """Train ``n_init`` networks from different seeds; keep the lowest-loss one.

        The first seed is the fit seed (so ``n_init=1`` is a plain fit); the others are drawn
        from it. The score is the best validation loss (what early stopping restored), or
        without validation rows the last epoch's training loss; ``init_scores_`` keeps them.
        """
        base = self.seed_
        extra = np.random.RandomState(base % 2**32).randint(0, np.iinfo(np.int32).max,
                                                            self.n_init - 1)
        scores, best, skip_start = [], None, None
        for seed in [base, *extra.tolist()]:
            self.seed_ = seed
            module = self._build(n_outputs)
            if module.skip is not None and y_cls is None:  # the same ridge for every seed
                skip_start = self._init_skip(module, Xs, y_t.numpy(), tr, va, skip_start)
            self._train(module, train, valid_dataset=valid, criterion=criterion,
                        epochs=epochs)
            losses = self.history_[:, "valid_loss" if valid is not None else "train_loss"]
            scores.append(float(min(losses) if valid is not None else losses[-1]))
            if best is None or scores[-1] < best[0]:
                best = (scores[-1], seed, self.net_, self.module_, self.history_)
        _, self.seed_, self.net_, self.module_, self.history_ = best
        self.init_scores_ = np.array(scores)

    def _after_fit(self, Xs, ys, va):
        """Hook run after training with the scaled data and the validation rows (or None)."""

    def _init_skip(self, module, Xs, ys, tr, va, start=None):
        """Start the instance-norm linear skip at its ridge solution; return it.

        The skip maps each window's per-channel [mean, std, last value] (and with
        ``skip="window"`` every input value) to the outputs; trained from a random start by
        Adam it needs thousands of steps to learn even persistence (weight ~1 on the last
        value). A ridge fit on the training rows ``tr`` (closed form) starts it there; the
        encoder then learns the residual (with ``skip="window"`` the skip is then kept fixed).
        The ridge penalty is ``1e-3 n`` or, with
        validation rows ``va``, the one of ``n * {1e-4, ..., 1}`` with the lowest validation
        MSE (the window features of many channels need a strong penalty). For the Gaussian
        head the variance half starts at the ridge residual variance. ``start``: the
        (weight, bias) this returned for another initialisation of the same network, which
        is copied instead of solved again.
        """
        weight, bias = self._skip_solution(module, Xs, ys, tr, va) if start is None else start
        with torch.no_grad():
            module.skip.weight.copy_(torch.as_tensor(weight))
            module.skip.bias.copy_(torch.as_tensor(bias))
        if self.skip == "window":
            # the window skip stays at the validated ridge solution: trained by Adam it
            # drifted from it and the ETTh1 test MSE got worse (OT, horizon 24: 0.0284 trained
            # vs 0.0273 fixed; docs/benchmarks_flowformer.md); the encoder fits the residual
            module.skip.requires_grad_(False)
        return weight, bias

    @staticmethod
    def _skip_solution(module, Xs, ys, tr, va):
        """The ridge (weight, bias) of ``module.skip`` described in :meth:`_init_skip`."""
        with torch.no_grad():  # same features as forward
            F_all = module.skip_features(torch.as_tensor(Xs)).double().numpy()
        F, ytr = F_all[tr], ys[tr]
        f_mean, y_mean = F.mean(0), ytr.mean(0)
        Fc, yc = F - f_mean, ytr - y_mean
        k = ys.shape[1]
        gram, rhs = Fc.T @ Fc, Fc.T @ yc
        eye = np.eye(F.shape[1])

        def solve(alpha):
            return np.linalg.solve(gram + alpha * len(F) * eye, rhs)

        if va is None or len(va) == 0:
            W = solve(1e-3)
        else:
            Fv, yv = F_all[va] - f_mean, ys[va] - y_mean
            W = min((solve(a) for a in (1e-4, 1e-3, 1e-2, 1e-1, 1.0)),
                    key=lambda w: ((Fv @ w - yv) ** 2).mean())
        b = y_mean - f_mean @ W
        resid = np.maximum(((yc - Fc @ W) ** 2).mean(0), 1e-4)
        weight = np.zeros(tuple(module.skip.weight.shape))
        bias = np.zeros(module.skip.bias.shape[0])
        weight[:k], bias[:k] = W.T, b
        if module.skip.weight.shape[0] == 2 * k:  # Gaussian head: inverse softplus of variance
            bias[k:] = np.log(np.expm1(resid))
        return weight, bias

    def _forward(self, X, *, mc_dropout=False, seed=None):
        """Raw network outputs for validated, scaled X, in batches; numpy (n, n_out)."""
        Xt = torch.as_tensor(X, dtype=torch.float64)
        bs = 4 * (self.batch_size or 128)
        with self._rng(seed), self._inference(mc_dropout=mc_dropout) as module:
            module = self._module64(module)
            outs = [module(Xt[i:i + bs].to(self.device_)).cpu()
                    for i in range(0, len(Xt), bs)]
        return torch.cat(outs).numpy() if outs else np.zeros((0, 0), np.float32)

    @staticmethod
    def _module64(module):
        """A float64 copy of the network for inference, with ``module``'s train/eval flags.

        In float32, matrix products round differently for different batch sizes (~1e-7), so
        a row's prediction would depend on which other rows share its call. The copy is
        cached per network (outside the estimator: predict leaves its ``__dict__`` unchanged,
        pickles do not carry it) until the weights change (any in-place update bumps a
        parameter's version), so Monte Carlo sampling does not copy the network per sample.
        """
        versions = tuple(p._version for p in module.parameters())
        cached = _MODULE64.get(module)
        if cached is None or cached[0] != versions:
            cached = _MODULE64[module] = (versions, copy.deepcopy(module).double())
        for m64, m in zip(cached[1].modules(), module.modules()):
            m64.training = m.training  # eval, or MC dropout's train-mode dropout layers
        return cached[1]

    def _prepared(self, X):
        check_is_fitted(self)
        return self._scale_X(self._check_X(X, reset=False), reset=False)


class FlowformerRegressor(RegressorMixin, _FlowformerBase):
    r"""Flowformer (Flow-Attention Transformer) for sequence regression and forecasting.

    Each sample is a sequence: ``X`` of shape (n, L) (univariate) or (n, L, C)
    (multivariate, the tslearn convention); ``y`` of shape (n,) or (n, n_outputs), e.g. the
    next ``horizon`` values (:func:`skdiff.datasets.make_windows` builds such pairs from a
    long series). Inside the estimator, every channel of ``X`` is standardised with its mean
    and standard deviation over all training samples and time steps, ``y`` with its own
    per-output statistics; predictions are returned in the original units.

    The network is the official Flowformer time-series encoder: input projection
    :math:`\times\sqrt{d}` plus learnable positions, ``n_layers`` post-LayerNorm layers of
    Flow-Attention (:class:`skdiff.nn.FlowAttention`) and a GELU feed-forward block, then a
    pooling head (see :class:`skdiff.nn.Flowformer`).

    Parameters
    ----------
    hidden_dim : int, default=64
        Token width (the official ``d_model``).
    n_heads : int, default=4
        Attention heads; must divide ``hidden_dim``.
    n_layers : int, default=2
        Encoder layers.
    ff_dim : int or None, default=None
        Feed-forward width; ``None`` uses ``hidden_dim`` (official ``d_ff = d_model``).
    dropout : float, default=0.1
        Dropout of the attention output, the feed-forward block, the input and the head.
    causal : bool, default=False
        Causal Flow-Attention (position t sees only positions <= t); with ``pooling="last"``
        this is an autoregressive summary of the window.
    clamp : float or None, default=1.0
        Bound of the conserved outgoing flow (official core file: 1.0; ``None``: no clamp).
    pooling : {"mean", "last", "flatten"}, default="mean"
        Head input: mean of the tokens, the last token, or all tokens flattened (the official
        UEA head).
    attention : {"flow", "softmax"}, default="flow"
        ``"softmax"`` swaps in standard attention (a Transformer of the same size, baseline).
    instance_norm : bool, default=True
        Normalise every window by its own per-channel mean/std before the encoder, multiply
        the encoder's output back by the window's std (RevIN, Kim et al. 2022; with several
        channels a learnt geometric mixture of their stds) and add a linear skip of the
        window's statistics (``skip``), started at its ridge solution on the training rows
        with the penalty chosen on the validation rows. An skdiff addition that helps on
        non-stationary series (measured on ETTh1, docs/benchmarks_flowformer.md).
    skip : {"level", "window"}, default="level"
        Features of the linear skip (with ``instance_norm``): ``"level"``, the per-channel
        [mean, std, last value], trained with the network; ``"window"``, those plus every
        input value: a ridge autoregression on the whole window, kept fixed at its
        validated ridge solution, so the encoder learns the residual of a linear forecast.
        ``"window"`` fixes the sequence length; it was best for univariate ETTh1 and worse
        than ``"level"`` with all 7 channels in (the lag regression overfits them).
    patch_len : int or None, default=None
        ``None``: one token per time step (the official model). An integer p: one token per
        patch of p consecutive steps (all channels of those steps, or one channel's with an
        ``adjacency``), as in PatchTST (Nie et al., ICLR 2023); attention then runs over
        about L / ``patch_stride`` tokens, which is cheaper and gives each token a local
        shape instead of one value. Needs p <= L.
    patch_stride : int or None, default=None
        Step between patch starts, ``1 <= patch_stride <= patch_len`` (``None``: equal to
        ``patch_len``, non-overlapping; PatchTST used patch_len=16, patch_stride=8). The end
        of the window is padded with copies of its last value when the patches do not tile
        it exactly.
    uncertainty : {"gaussian", "mc_dropout"}, default="gaussian"
        What :meth:`sample_posterior` and ``predict(return_std=True)`` represent.
        ``"gaussian"``: the head predicts a mean and a variance per output, the mean
        trained by squared error and the variance by Gaussian negative log-likelihood
        around it, on detached encoder features (heteroscedastic aleatoric uncertainty that
        does not slow the fit of the mean); samples are
        draws from those Gaussians, with the standard deviation of each output rescaled so
        that 90 % intervals cover 90 % of the early-stopping validation rows (when there
        are at least 20; ``std_scale_``). ``"mc_dropout"``: trained by mean squared error; samples
        are forward passes with dropout active (epistemic). Measured on the ETTh1 test months
        (docs/benchmarks_flowformer.md), the Gaussian head's 90 % intervals cover 94-96 %
        (OT alone and with all 7 channels, horizons 24 and 96; 99 % before the validation
        recalibration: the test months are calmer than the training months), MC dropout's
        1 % (OT, horizon 24: the dropout spread is far below the forecast error); on
        synthetic data without such a shift the Gaussian head covers 84-96 % (tested).
    n_init : int, default=1
        Networks trained from different random initialisations (the first from the fit
        seed, the others from seeds drawn from it); the one with the lowest validation loss
        (the early-stopping rows; without them the last epoch's training loss) is kept, as
        ``KMeans`` keeps the best of its ``n_init`` runs. Costs ``n_init`` fits. On ETTh1
        at 96 h single fits vary by up to 10 % in test MSE from seed to seed, and the
        validation loss ranks them (docs/benchmarks_flowformer.md). A warm start or later
        ``partial_fit`` call continues the kept network only.
    max_epochs : int, default=100
    lr : float, default=1e-3
        Adam learning rate.
    weight_decay : float, default=0.0
    batch_size : int, default=64
    early_stopping : bool, default=True
        Hold out the **last** ``validation_fraction`` of the rows (in the given order, which
        for windows of one series is time order, so no future window leaks into training),
        stop after ``n_iter_no_change`` epochs without a better validation loss and restore
        the best weights.
    validation_fraction : float, default=0.1
    n_iter_no_change : int, default=10
    warm_start : bool, default=False
        Continue training the fitted network (keeping its scalers) on the next ``fit``.
    device : str, default="auto"
    random_state : int, RandomState or None, default=None
    verbose : int, default=0
    callbacks : list of skorch callbacks or None, default=None

    Attributes
    ----------
    n_features_in_ : int
        Sequence length L seen in ``fit`` (sklearn counts the second axis as features).
    sequence_length_ : int
        Same as ``n_features_in_``; predict needs sequences of this length.
    n_channels_in_ : int
        Channels C (1 for 2-D ``X``).
    x_mean_, x_scale_ : ndarray of shape (C,)
        Per-channel standardisation of ``X``.
    y_mean_, y_scale_ : ndarray of shape (n_outputs,)
        Standardisation of ``y``.
    n_outputs_ : int
    std_scale_ : ndarray of shape (n_outputs,)
        Calibration factor of the Gaussian head's std, fitted on the validation rows
        (ones when there are none or with ``uncertainty="mc_dropout"``).
    adjacency_ : ndarray of shape (C, C) or None
        The normalised channel graph :math:`\hat D^{-1/2}(A+I)\hat D^{-1/2}` in use.
    init_scores_ : ndarray of shape (n_init,)
        Validation (or final training) loss of every initialisation; the kept network is
        the argmin.
    net_, module_, history_, device_, seed_
        skorch net, trained :class:`skdiff.nn.Flowformer` (the kept initialisation), its
        training history, device, and its seed.

    See Also
    --------
    FlowformerClassifier : the same network for sequence classification.
    skdiff.nn.flow_attention : the Flow-Attention kernel.
    skdiff.datasets.make_windows : (window, horizon) pairs from a series.

    References
    ----------
    .. [1] H. Wu, J. Wu, J. Xu, J. Wang, M. Long. "Flowformer: Linearizing Transformers with
       Conservation Flows." ICML 2022. arXiv:2202.06258.

    Examples
    --------
    >>> import numpy as np
    >>> from skdiff import FlowformerRegressor
    >>> from skdiff.datasets import make_windows
    >>> t = np.arange(600)
    >>> X, y = make_windows(np.sin(2 * np.pi * t / 24), window=24, horizon=4)
    >>> reg = FlowformerRegressor(hidden_dim=16, n_heads=2, max_epochs=10, lr=3e-3,
    ...                           random_state=0)
    >>> reg.fit(X[:400], y[:400]).score(X[400:], y[400:]) > 0.9
    True
    >>> reg.sample_posterior(X[:3], n_samples=5, random_state=0).shape
    (3, 4, 5)
    """

    _parameter_constraints = {
        **_FlowformerBase._parameter_constraints,
        "uncertainty": [StrOptions({"gaussian", "mc_dropout"})],
    }
    _y_numeric = True

    def __init__(self, *, hidden_dim=64, n_heads=4, n_layers=2, ff_dim=None, dropout=0.1,
                 causal=False, clamp=1.0, pooling="mean", attention="flow", instance_norm=True,
                 skip="level", patch_len=None, patch_stride=None, n_init=1,
                 uncertainty="gaussian", max_epochs=100, lr=1e-3, weight_decay=0.0,
                 batch_size=64, early_stopping=True, validation_fraction=0.1,
                 n_iter_no_change=10, warm_start=False, device="auto", random_state=None,
                 verbose=0, callbacks=None):
        super().__init__(
            hidden_dim=hidden_dim, n_heads=n_heads, n_layers=n_layers, ff_dim=ff_dim,
            dropout=dropout, causal=causal, clamp=clamp, pooling=pooling, attention=attention,
            instance_norm=instance_norm, skip=skip, patch_len=patch_len,
            patch_stride=patch_stride, n_init=n_init, max_epochs=max_epochs, lr=lr,
            weight_decay=weight_decay, batch_size=batch_size, early_stopping=early_stopping,
            validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change,
            warm_start=warm_start, device=device, random_state=random_state, verbose=verbose,
            callbacks=callbacks,
        )
        self.uncertainty = uncertainty

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _n_variance_outputs(self, n_outputs):
        return n_outputs // 2 if self.uncertainty == "gaussian" else 0

    def _targets(self, y, reset):
        y = np.asarray(y, dtype=np.float64)
        if reset:
            self._y_1d = y.ndim == 1
        y2 = y.reshape(len(y), -1)
        if reset:
            self.n_outputs_ = y2.shape[1]
            self.y_mean_ = y2.mean(0)
            sd = y2.std(0)
            self.y_scale_ = np.where(sd > 1e-12 * (1 + np.abs(self.y_mean_)), sd, 1.0)
        elif y2.shape[1] != self.n_outputs_:
            raise ValueError(
                f"y has {y2.shape[1]} outputs but the fitted network predicts {self.n_outputs_}."
            )
        yt = torch.as_tensor(((y2 - self.y_mean_) / self.y_scale_).astype(np.float32))
        gaussian = self.uncertainty == "gaussian"
        criterion = _GaussianNLL if gaussian else nn.MSELoss
        return yt, self.n_outputs_ * (2 if gaussian else 1), criterion, None

    def fit(self, X, y, adjacency=None):
        """Fit the network.

        Parameters
        ----------
        X : array-like of shape (n_samples, length) or (n_samples, length, n_channels)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        adjacency : array-like or sparse matrix of shape (n_channels, n_channels), default=None
            Non-negative weights between the channels of ``X`` (e.g. sensors of a road
            network); symmetrised as ``max(A, A.T)``, normalised with self loops, and used
            for a graph propagation across channels in every layer. It is not sample-aligned,
            so cross-validation passes it through untouched; predict reuses it.

        Returns
        -------
        self : FlowformerRegressor
        """
        return self._fit(X, y, adjacency)

    def partial_fit(self, X, y, adjacency=None):
        """Train for one epoch (the first call sets up scalers and network)."""
        return self._fit(X, y, adjacency, epochs=1, partial=True)

    def _unscale(self, z):
        out = z * self.y_scale_ + self.y_mean_
        return out[:, 0] if self._y_1d else out

    def _after_fit(self, Xs, ys, va):
        # Recalibrate the Gaussian head's std on the held-out validation rows: one factor per
        # output so that the central 90 % interval covers 90 % of them (1.0 without them).
        self.std_scale_ = np.ones(self.n_outputs_)
        if self.uncertainty != "gaussian" or va is None or len(va) < 20:
            return
        mean, std = self._moments(Xs[va], calibrated=False)
        z = np.abs(ys[va] - mean) / std
        self.std_scale_ = np.quantile(z, 0.9, axis=0) / 1.6448536269514722

    def _moments(self, Xs, calibrated=True):
        k = self.n_outputs_
        raw = self._forward(Xs).astype(np.float64)
        if self.uncertainty == "gaussian":
            var = _variance(torch.as_tensor(raw[:, k:])).numpy()
            scale = self.std_scale_ if calibrated else 1.0
            return raw[:, :k], np.sqrt(var) * scale
        samples = self._mc(Xs, 30, self.seed_)
        return raw, samples.std(-1)

    def _mc(self, Xs, n_samples, seed):
        return np.stack([self._forward(Xs, mc_dropout=True, seed=seed + i).astype(np.float64)
                         for i in range(n_samples)], axis=-1)

    def predict(self, X, return_std=False):
        """Predict ``y`` (original units); with ``return_std`` also its predictive std.

        ``std`` is the Gaussian head's standard deviation (``uncertainty="gaussian"``) or the
        spread of 30 Monte Carlo dropout passes (``"mc_dropout"``, seeded: repeatable).
        """
        Xs = self._prepared(X)
        if not return_std:
            return self._unscale(self._forward(Xs)[:, :self.n_outputs_].astype(np.float64))
        mean, std = self._moments(Xs)
        std = std * self.y_scale_
        return self._unscale(mean), (std[:, 0] if self._y_1d else std)

    def sample_posterior(self, X, n_samples=10, random_state=None):
        """Monte Carlo predictive samples, sample axis last.

        ``uncertainty="gaussian"``: draws from the predicted Gaussian of each output
        (independent across outputs); ``"mc_dropout"``: one forward pass with dropout
        active per sample. ``random_state`` makes the draws repeatable.

        Returns
        -------
        samples : ndarray of shape (n, n_samples) or (n, n_outputs, n_samples)
        """
        if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) \
                or n_samples < 1:
            raise ValueError(f"'n_samples' must be a positive integer; got {n_samples!r}.")
        Xs = self._prepared(X)
        rng = check_random_state(random_state)
        if self.uncertainty == "gaussian":
            mean, std = self._moments(Xs)
            z = mean[..., None] + std[..., None] * rng.standard_normal(mean.shape + (n_samples,))
        else:
            z = self._mc(Xs, n_samples, draw_seed(rng))
        out = z * self.y_scale_[:, None] + self.y_mean_[:, None]
        return out[:, 0] if self._y_1d else out


class FlowformerClassifier(ClassifierMixin, _FlowformerBase):
    r"""Flowformer for sequence classification (the official UEA setting).

    Same network and input conventions as :class:`FlowformerRegressor` (``X`` of shape
    (n, L) or (n, L, C), per-channel standardisation inside); trained with cross-entropy.
    Early stopping holds out a stratified random ``validation_fraction`` of the rows.
    :meth:`sample_posterior` returns Monte Carlo dropout samples of the class probabilities.

    Parameters
    ----------
    hidden_dim, n_heads, n_layers, ff_dim, dropout, causal, clamp, pooling, attention, \
instance_norm, skip, patch_len, patch_stride, n_init, max_epochs, lr, weight_decay, batch_size, \
early_stopping, validation_fraction, n_iter_no_change, warm_start, device, random_state, \
verbose, callbacks
        As in :class:`FlowformerRegressor` (defaults identical).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_, sequence_length_, n_channels_in_, x_mean_, x_scale_, adjacency_, \
init_scores_, net_, module_, history_, device_, seed_
        As in :class:`FlowformerRegressor`.

    See Also
    --------
    FlowformerRegressor

    References
    ----------
    .. [1] H. Wu et al. "Flowformer: Linearizing Transformers with Conservation Flows."
       ICML 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skdiff import FlowformerClassifier
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 200)  # class 1: a bump late in the sequence, class 0: early
    >>> centre = np.where(y == 1, 18.0, 6.0)[:, None]
    >>> X = np.exp(-0.5 * (np.arange(24) - centre) ** 2) + 0.2 * rng.normal(size=(200, 24))
    >>> clf = FlowformerClassifier(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=30,
    ...                            lr=5e-3, early_stopping=False, random_state=0)
    >>> clf.fit(X[:150], y[:150]).score(X[150:], y[150:]) > 0.9
    True
    """

    _y_numeric = False

    def _targets(self, y, reset):
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.ndim != 1:
            raise ValueError(
                f"FlowformerClassifier takes one label per sequence: y of shape (n,); got "
                f"{y.shape}."
            )
        check_classification_targets(y)
        if reset:
            self._encoder = LabelEncoder().fit(y if self._classes is None else self._classes)
            self.classes_ = self._encoder.classes_
        elif not np.isin(y, self.classes_).all():
            raise ValueError("y contains labels that were not seen in the first fit.")
        codes = self._encoder.transform(y)
        return (torch.as_tensor(codes, dtype=torch.long), len(self.classes_),
                nn.CrossEntropyLoss, codes)

    def fit(self, X, y, adjacency=None):
        """Fit the network (``adjacency`` as in :meth:`FlowformerRegressor.fit`)."""
        self._classes = None
        return self._fit(X, y, adjacency)

    def partial_fit(self, X, y, classes=None, adjacency=None):
        """Train for one epoch; the first call fixes ``classes_`` (``classes`` or ``y``'s)."""
        self._classes = None if classes is None else np.asarray(classes)
        return self._fit(X, y, adjacency, epochs=1, partial=True)

    def predict_proba(self, X):
        """Class probabilities, shape (n, n_classes)."""
        logits = torch.as_tensor(self._forward(self._prepared(X)))
        return torch.softmax(logits.double(), -1).numpy()

    def predict(self, X):
        """Most probable class of each sequence."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def sample_posterior(self, X, n_samples=10, random_state=None):
        """Monte Carlo dropout samples of the class probabilities, (n, n_classes, n_samples)."""
        if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) \
                or n_samples < 1:
            raise ValueError(f"'n_samples' must be a positive integer; got {n_samples!r}.")
        Xs = self._prepared(X)
        seed = draw_seed(check_random_state(random_state))
        logits = np.stack([self._forward(Xs, mc_dropout=True, seed=seed + i)
                           for i in range(n_samples)], axis=-1)
        return torch.softmax(torch.as_tensor(logits).double(), 1).numpy()
