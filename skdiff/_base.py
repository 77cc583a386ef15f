"""What every skdiff estimator shares.

The estimators are *composed* around a skorch :class:`~skorch.NeuralNet`: their ``__init__``
only stores keyword hyper-parameters, and ``fit`` validates them, builds the torch module and
the skorch net, trains it and stores the fitted state (``net_``, ``module_``, ``history_``,
``device_``). This module holds that machinery once:

* parameter validation (:data:`TRAINING_PARAMETER_CONSTRAINTS`, checked explicitly in ``fit``),
* device resolution (``device="auto"`` -> CUDA when available, else CPU),
* seeding under :func:`torch.random.fork_rng` so the caller's global RNG is untouched,
* the skorch net with its callbacks (early stopping that restores the best weights, a progress
  bar when ``verbose > 0``, a guard that stops on a non-finite loss, the user's callbacks),
* CUDA out-of-memory errors re-raised with the parameter to lower,
* Monte Carlo dropout for ``sample_posterior``,
* adjacency validation shared by the graph-aware estimators.

It is also the only module that imports private scikit-learn helpers.
"""

from __future__ import annotations

import contextlib
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import (  # noqa: F401  (re-exported for the estimators)
    HasMethods,
    Interval,
    StrOptions,
)
from sklearn.utils.validation import check_is_fitted, validate_data  # noqa: F401
from skorch.callbacks import Callback, EarlyStopping, ProgressBar
from skorch.helper import predefined_split

from ._engine import (  # noqa: F401  (re-exported for the estimators)
    FiniteLossGuard,
    Net,
    TrainingDivergedError,
    draw_seed,
    first_item,
    torch_seed,
)

__all__ = [
    "TRAINING_PARAMETER_CONSTRAINTS",
    "NeuralEstimatorBase",
    "TrainingDivergedError",
    "check_adjacency",
    "first_item",
]


#: Constraints of the training parameters every estimator exposes (merge into the class's
#: ``_parameter_constraints``).
TRAINING_PARAMETER_CONSTRAINTS: dict = {
    "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
    "lr": [Interval(numbers.Real, 0, None, closed="neither")],
    "weight_decay": [Interval(numbers.Real, 0, None, closed="left")],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
    "early_stopping": ["boolean"],
    "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
    "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
    "warm_start": ["boolean"],
    "device": [str, torch.device],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
    "callbacks": [list, tuple, None],
}


def resolve_device(device) -> str:
    """Turn the ``device`` parameter into a concrete torch device string.

    ``"auto"`` picks ``"cuda"`` when available, else ``"cpu"``. Asking for CUDA on a machine
    without it is an error that names the parameter and the fix.
    """
    if isinstance(device, torch.device):
        device = str(device)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"The 'device' parameter must be 'auto', 'cpu', 'cuda' or 'cuda:<index>'; "
            f"got {device!r}."
        ) from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"The 'device' parameter is {device!r} but CUDA is not available on this "
                "machine. Use device='cpu', or device='auto' to pick CUDA only when present."
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(
                f"The 'device' parameter is {device!r} but only {torch.cuda.device_count()} "
                "CUDA device(s) exist."
            )
    elif dev.type != "cpu":
        raise ValueError(
            f"The 'device' parameter must be 'auto', 'cpu' or a CUDA device; got {device!r}."
        )
    return str(dev)


def _silent(*args, **kwargs):
    """A sink that prints nothing (module-level so fitted nets pickle)."""


class _HistoryTo(Callback):
    """Keep the estimator's ``history_`` pointing at the net's history during training."""

    def __init__(self, owner):
        self.owner = owner

    def on_epoch_end(self, net, **kwargs):
        self.owner.history_ = net.history


def _oom_message(exc, estimator):
    names = [n for n in ("batch_size", "predict_batch_size", "hidden_dim") if n in
             estimator.get_params()]
    return (
        f"CUDA ran out of memory ({exc}). Lower {' or '.join(repr(n) for n in names)} "
        "or use device='cpu'."
    )


class NeuralEstimatorBase(BaseEstimator):
    """Base class of skdiff's estimators (use with ``ClassifierMixin``/``RegressorMixin`` first).

    Subclasses declare ``_parameter_constraints`` (merging :data:`TRAINING_PARAMETER_CONSTRAINTS`),
    call :meth:`_prepare_fit` at the start of ``fit`` and :meth:`_train` to train a module.

    Fitted attributes set here: ``device_`` (str), ``net_`` (``skorch.NeuralNet``),
    ``module_`` (the trained ``torch.nn.Module``), ``history_`` (``skorch.History``).
    """

    _parameter_constraints: dict = dict(TRAINING_PARAMETER_CONSTRAINTS)

    # -- validation, device, seeding -------------------------------------------------------
    def _prepare_fit(self, *, reset=True):
        """Validate every public parameter, resolve the device and draw the torch seed.

        Returns the integer seed used for this call (draw it once per ``fit``).
        """
        self._validate_params()
        if self.callbacks is not None:
            for cb in self.callbacks:
                ok = isinstance(cb, Callback) or (
                    isinstance(cb, tuple) and len(cb) == 2 and isinstance(cb[0], str)
                    and isinstance(cb[1], Callback)
                )
                if not ok:
                    raise TypeError(
                        "The 'callbacks' parameter must be a list of skorch callbacks or "
                        f"(name, callback) pairs; got an element {cb!r}."
                    )
        self.device_ = resolve_device(self.device)
        seed = draw_seed(self.random_state)
        if reset or not hasattr(self, "seed_"):
            self.seed_ = seed
        return seed

    def _rng(self, seed=None):
        """Context manager: torch RNG seeded with ``seed`` (default: the fit seed)."""
        return torch_seed(self.seed_ if seed is None else seed, getattr(self, "device_", "cpu"))

    # -- training --------------------------------------------------------------------------
    def _callbacks(self, *, monitor, lower_is_better, extra=()):
        cbs = [("finite_loss", FiniteLossGuard()), ("history_to", _HistoryTo(self))]
        cbs += list(extra)
        if self.early_stopping:
            cbs.append((
                "early_stopping",
                EarlyStopping(
                    monitor=monitor,
                    patience=self.n_iter_no_change,
                    lower_is_better=lower_is_better,
                    load_best=True,
                    sink=print if self.verbose else _silent,  # picklable, unlike a lambda
                ),
            ))
        if self.verbose:
            cbs.append(("progress_bar", ProgressBar()))
        for i, cb in enumerate(self.callbacks or ()):
            cbs.append(cb if isinstance(cb, tuple) else (f"user_{i}_{type(cb).__name__}", cb))
        return cbs

    def _make_net(self, module, *, criterion, train_split, monitor="valid_loss",
                  lower_is_better=True, extra_callbacks=(), optimizer=torch.optim.Adam,
                  batch_size=None, collate_fn=None, shuffle=True, max_epochs=None):
        """Build (not train) the skorch net around an instantiated ``module``."""
        kwargs = {}
        if collate_fn is not None:
            kwargs["iterator_train__collate_fn"] = collate_fn
            kwargs["iterator_valid__collate_fn"] = collate_fn
        return Net(
            module=module,
            criterion=criterion,
            optimizer=optimizer,
            optimizer__weight_decay=self.weight_decay,
            lr=self.lr,
            max_epochs=self.max_epochs if max_epochs is None else max_epochs,
            batch_size=batch_size if batch_size is not None else (self.batch_size or 128),
            iterator_train__shuffle=shuffle,
            train_split=train_split,
            callbacks=self._callbacks(
                monitor=monitor, lower_is_better=lower_is_better, extra=extra_callbacks
            ),
            device=self.device_,
            verbose=int(self.verbose),
            **kwargs,
        )

    def _train(self, module, dataset, *, valid_dataset=None, criterion, epochs=None,
               reuse=False, **net_kwargs):
        """Train ``module`` on a torch ``dataset`` through skorch; set the fitted attributes.

        Parameters
        ----------
        module : torch.nn.Module
            Instantiated network; ignored when ``reuse`` is true and a net exists.
        dataset : torch.utils.data.Dataset
            Items are ``(X, y)``; ``X`` may be a dict of tensors (passed as keyword arguments).
        valid_dataset : Dataset, default=None
            Held-out data monitored for early stopping; ``None`` trains without validation.
        epochs : int, default=None
            Epochs for this call (``None``: ``max_epochs``). ``partial_fit`` passes 1.
        reuse : bool, default=False
            Continue training the existing ``net_`` (warm start / partial fit).
        """
        train_split = predefined_split(valid_dataset) if valid_dataset is not None else None
        if not (reuse and hasattr(self, "net_")):
            if self.early_stopping and valid_dataset is None:
                net_kwargs.pop("monitor", None)
                monitor = "train_loss"
            else:
                monitor = net_kwargs.pop("monitor", "valid_loss")
            self.net_ = self._make_net(
                module, criterion=criterion, train_split=train_split, monitor=monitor,
                **net_kwargs,
            )
            self.net_.initialize()
        else:
            self.net_.set_params(train_split=train_split)
        # A continued run (warm start, partial_fit) draws its own stream, offset by the epochs
        # already trained, so successive calls do not repeat the same dropout masks/shuffles.
        seed = (self.seed_ + len(self.net_.history)) % np.iinfo(np.int32).max
        try:
            with self._rng(seed):
                # partial_fit runs on_train_begin/end around fit_loop, so EarlyStopping
                # restores the best weights at the end of this call.
                self.net_.partial_fit(dataset, None, epochs=epochs)
        except torch.cuda.OutOfMemoryError as exc:  # pragma: no cover - needs a GPU
            raise MemoryError(_oom_message(exc, self)) from exc
        self.module_ = self.net_.module_
        self.history_ = self.net_.history
        self.module_.eval()
        # The fitted net keeps no tensors outside its module: the validation set and early
        # stopping's copy of the best weights (both on the fit's device, and both rebuilt by
        # the next training call) would travel in every pickle, and a pickled CUDA tensor
        # does not load on a machine without CUDA.
        self.net_.set_params(train_split=None)
        for _, cb in self.net_.callbacks_:
            if isinstance(cb, EarlyStopping):
                cb.best_model_weights_ = None
        return self

    # -- inference helpers -----------------------------------------------------------------
    @contextlib.contextmanager
    def _inference(self, mc_dropout=False):
        """Evaluation mode and no autograd; with ``mc_dropout`` only dropout layers train."""
        module = self.module_
        was_training = module.training
        module.eval()
        if mc_dropout:
            for m in module.modules():
                if isinstance(m, torch.nn.modules.dropout._DropoutNd):
                    m.train()
        try:
            with torch.no_grad():
                yield module
        except torch.cuda.OutOfMemoryError as exc:  # pragma: no cover - needs a GPU
            raise MemoryError(_oom_message(exc, self)) from exc
        finally:
            module.train(was_training)

    def _to_tensor(self, array, dtype=torch.float32):
        """Numpy/scipy input -> tensor on ``device_`` (scipy sparse -> torch sparse COO)."""
        if sp.issparse(array):
            coo = array.tocoo()
            idx = torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.long)
            val = torch.as_tensor(coo.data, dtype=dtype)
            out = torch.sparse_coo_tensor(idx, val, coo.shape, check_invariants=False)
            return out.coalesce().to(self.device_)
        return torch.as_tensor(np.asarray(array), dtype=dtype, device=self.device_)

    # -- persistence -----------------------------------------------------------------------
    def __getstate__(self):
        # a copy: BaseEstimator's state is the live __dict__ (Python >= 3.11), which the
        # subclasses' __getstate__ edit
        state = dict(super().__getstate__())
        if "net_" in state:
            # module_ is net_.module_: pickled once, by skorch, whose loader maps CUDA
            # tensors to the CPU on a machine without CUDA (a plain pickle of the module
            # would not load there).
            state.pop("module_", None)
        return state

    def __setstate__(self, state):
        # skorch maps CUDA tensors to the CPU when loaded on a machine without CUDA; keep
        # device_ in step so inference runs where the weights are.
        super().__setstate__(state)
        net = self.__dict__.get("net_")
        if net is not None and hasattr(net, "module_"):
            self.module_ = net.module_
            if "device_" in self.__dict__:
                self.device_ = str(net.device)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False  # seeded: same random_state, same predictions on CPU
        return tags


def validation_split(n, fraction, *, y=None, random_state=None):
    """Random train/validation index split; stratified by ``y`` when it is given."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(n)
    stratify = None
    if y is not None:
        _, counts = np.unique(y, return_counts=True)
        if counts.min() >= 2:
            stratify = y
    tr, va = train_test_split(idx, test_size=fraction, stratify=stratify,
                              random_state=random_state)
    return np.sort(tr), np.sort(va)


def check_adjacency(adjacency, n, *, name="adjacency", what="rows of X", symmetrize=True):
    """Validate an adjacency matrix over ``n`` items and return it as float CSR.

    Accepts scipy sparse matrices/arrays and dense array-likes. The matrix must be square,
    ``n`` x ``n``, finite and non-negative. An asymmetric matrix is symmetrised as
    ``max(A, A.T)`` (documented behaviour: edges are treated as undirected) when ``symmetrize``
    is true, and refused otherwise.
    """
    if adjacency is None:
        raise ValueError(f"'{name}' is None; pass a (n, n) matrix or omit it.")
    if sp.issparse(adjacency):
        A = sp.csr_matrix(adjacency, dtype=np.float64)
    else:
        try:
            A = np.asarray(adjacency, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"'{name}' must be a scipy sparse matrix or a dense 2-D array of numbers; got "
                f"{type(adjacency).__name__}."
            ) from exc
        if A.ndim != 2:
            raise ValueError(f"'{name}' must be 2-D (n, n); got an array of shape {A.shape}.")
        A = sp.csr_matrix(A)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"'{name}' must be square; got shape {A.shape}.")
    if A.shape[0] != n:
        raise ValueError(
            f"'{name}' has shape {A.shape} but there are {n} {what}: it must be ({n}, {n})."
        )
    if not np.all(np.isfinite(A.data)):
        raise ValueError(f"'{name}' contains NaN or infinite values; edge weights must be finite.")
    if A.data.size and A.data.min() < 0:
        raise ValueError(
            f"'{name}' has negative entries (min {A.data.min():g}); edge weights must be >= 0."
        )
    A.eliminate_zeros()
    if (A != A.T).nnz:
        if not symmetrize:
            raise ValueError(f"'{name}' must be symmetric.")
        A = A.maximum(A.T).tocsr()
    return A


def warn_once(message, category=UserWarning):
    warnings.warn(message, category, stacklevel=3)
