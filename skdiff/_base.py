"""The estimator skeleton every skdiff estimator follows.

The estimators are *composed* around a skorch :class:`~skorch.NeuralNet`: their ``__init__``
only stores keyword hyper-parameters; ``fit`` validates them, builds the torch module and the
skorch net, trains it and stores the fitted state. :class:`NeuralEstimatorBase` owns that flow
once, as scikit-learn's ``BaseLabelPropagation`` owns ``fit`` and lets its subclasses fill
``_build_graph``. A family fills a few hooks:

============================  ==============================================================
hook                          what it returns
============================  ==============================================================
``_make_data``                a :class:`FitData`: validated inputs as tensors, encoded
                              targets and per-row loss weights; sets the preprocessing state
                              (scalers, ``classes_``)
``_make_datasets``            the training and validation datasets for the chosen rows
                              (default: :class:`RowDataset` s of row-wise data)
``_build_module``             a freshly initialised ``torch.nn.Module``
``_criterion``                the loss (a class and its keyword arguments)
``_outputs``                  raw network outputs for prepared prediction inputs
``_prepare_predict``          validated prediction inputs
============================  ==============================================================

and may override ``_init_module`` (start from a closed-form solution),
``_continue_module`` (adapt the fitted module to the rows of ``partial_fit`` or a warm
start), ``_finish_fit`` (caches for prediction), ``_monitor`` (the early-stopping score),
``_net_kwargs``, and ``_needs_validation_rows`` / ``_holds_out_rows`` (validation rows the
estimator uses itself, with or without early stopping) and ``_n_validation`` (how many rows
a split holds out). The base owns parameter validation, device, seeding, the training
engine, ``n_init``, warm start and ``partial_fit``, one validation-split policy per task
(``_split_policy``), fit as a transaction, interruption, ``sample_posterior`` and
persistence. The task layers
(:mod:`skdiff._tasks`) add what classifiers and regressors share.

It is also the only module that imports private scikit-learn helpers.
"""

from __future__ import annotations

import contextlib
import copy
import math
import numbers
import os
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import HasMethods, StrOptions  # noqa: F401  (re-exported)
from sklearn.utils.validation import _num_samples, check_is_fitted  # noqa: F401
from skorch.callbacks import Callback, EarlyStopping
from skorch.callbacks import scoring as skorch_scoring
from skorch.helper import predefined_split
from torch.utils.data import Dataset

from ._checks import (  # noqa: F401
    Interval,
    caller_stacklevel,
    check_n_samples,
    memory_for,
    validate_data,
)
from ._docs import fill_doc
from ._engine import (  # noqa: F401  (re-exported for the estimators)
    SEED_BOUND,
    TORCH_LOCK,
    AcceleratedNet,
    EpochProgress,
    FiniteLossGuard,
    Net,
    ResumeEarlyStopping,
    TrainingDivergedError,
    _silent,
    atomic_write,
    derive_seed,
    draw_seed,
    early_stopping_of,
    error_line,
    first_item,
    out_of_memory_as,
    torch_seed,
    training_loss,
    validation_loss,
)
from .callbacks import EpochScoring, RestoreLowestLoss, WeightAveraging
from .nn._dropout import Dropout, SharedMasks

__all__ = [
    "TRAINING_PARAMETER_CONSTRAINTS",
    "FitData",
    "NeuralEstimatorBase",
    "RowDataset",
    "TrainingDivergedError",
]


_FLOAT32_MAX = float(np.finfo(np.float32).max)

#: Constraints of the training parameters every trainable estimator exposes (merge into the
#: class's ``_parameter_constraints``).
TRAINING_PARAMETER_CONSTRAINTS: dict = {
    "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
    # the optimiser multiplies float32 weights by lr and weight_decay: both must fit float32
    "lr": [Interval(numbers.Real, 0, _FLOAT32_MAX, closed="neither")],
    "weight_decay": [Interval(numbers.Real, 0, _FLOAT32_MAX, closed="left")],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
    "early_stopping": ["boolean", StrOptions({"auto"})],
    "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
    "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
    "warm_start": ["boolean"],
    "device": [str, torch.device],
    "n_threads": [Interval(numbers.Integral, 1, None, closed="left"), None],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
    "callbacks": [list, tuple, None],
    "mixed_precision": [StrOptions({"bf16", "fp16"}), None],
    "accelerator": [HasMethods(["prepare", "backward"]), None],
}


#: The least rise of the training loss (of standardised targets) taken as divergence.
_DIVERGENCE_FLOOR = 1e-3


#: Names of the callbacks the estimators add to their skorch net themselves, and of
#: skorch's default callbacks: a user's ``(name, callback)`` pair may not take one.
_RESERVED_CALLBACK_NAMES = frozenset({
    "early_stopping", "finite_loss", "progress", "reshuffle", "restore_lowest_loss",
    "resume_early_stopping", "start_as_epoch_zero", "valid_acc", "weight_averaging",
    "epoch_timer", "print_log", "train_loss", "valid_loss"})


def _same_value(a, b):
    """Whether two parameter values are equal (arrays elementwise; incomparable: no)."""
    if a is b:
        return True
    try:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.array_equal(a, b))
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def available_devices():
    """The torch devices this process can use, e.g. ``["cpu", "cuda:0", "cuda:1", "mps"]``."""
    out = ["cpu"]
    if torch.cuda.is_available():
        out += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        out.append("mps")
    return out


def _freest_cuda_device():
    """The CUDA device with the most free memory (``cuda:0`` when there is one): concurrent
    fits on a machine of several GPUs, e.g. a search's workers, spread over them."""
    n = torch.cuda.device_count()
    if n == 1:
        return "cuda:0"
    free = [torch.cuda.mem_get_info(i)[0] for i in range(n)]
    return f"cuda:{int(np.argmax(free))}"


def resolve_device(device) -> str:
    """Turn the ``device`` parameter into a concrete torch device string.

    ``"auto"`` picks CUDA when available (the device with the most free memory when there are
    several, so that parallel fits spread over them; ``CUDA_VISIBLE_DEVICES`` decides which
    exist), else Apple's MPS, else the CPU. Any other string is parsed by
    :class:`torch.device`; a device this machine lacks is an error that names the parameter,
    the value and the devices available.
    """
    if isinstance(device, torch.device):
        device = str(device)
    if device == "auto":
        have = available_devices()
        if torch.cuda.is_available():
            return _freest_cuda_device()
        return "mps" if "mps" in have else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"The 'device' parameter must be 'auto' or a torch device such as 'cpu', 'cuda', "
            f"'cuda:1' or 'mps'; got {device!r}."
        ) from exc
    have = available_devices()
    if dev.type == "cpu":
        return "cpu"
    if dev.type == "cuda":
        ok = torch.cuda.is_available() and (dev.index is None
                                            or dev.index < torch.cuda.device_count())
    else:
        backend = getattr(torch.backends, dev.type, None) or getattr(torch, dev.type, None)
        ok = backend is not None and hasattr(backend, "is_available") and \
            backend.is_available()
    if not ok:
        what = "CUDA is not available" if dev.type == "cuda" and \
            not torch.cuda.is_available() else "it is not available"
        raise ValueError(
            f"The 'device' parameter is {device!r} but {what} on this machine (available: "
            f"{', '.join(have)}). Use one of those, or device='auto' to pick the best one "
            "present."
        )
    return str(dev)


#: torch dtype of each ``mixed_precision`` setting
#: ``early_stopping="auto"`` holds out validation rows only from this many candidate
#: (labelled) rows on, as ``HistGradientBoostingClassifier`` does: below it a validation
#: split stops on noise more often than it saves epochs, and ``max_epochs`` with weight
#: decay generalises better.
AUTO_EARLY_STOPPING_ROWS = 10_000


def n_validation_rows(fraction, n):
    """How many of ``n`` rows ``validation_fraction=fraction`` holds out:
    ``ceil(fraction * n)``, where a product within a relative 1e-9 of an integer counts as
    that integer. A fraction written as ``k / n`` then holds out exactly ``k`` rows: the
    float product can land just above ``k`` (``7 / 25 * 25`` is ``7.000000000000001``),
    and a plain ceil would move one more row into the validation set."""
    x = fraction * n
    nearest = round(x)
    if abs(x - nearest) <= 1e-9 * max(nearest, 1):
        return int(nearest)
    return math.ceil(x)

_AUTOCAST = {None: None, "bf16": torch.bfloat16, "fp16": torch.float16}


def _max_abs_weight(module):
    """The largest absolute value among a module's trainable floating-point parameters
    (frozen ones, such as a fixed closed-form start, cannot grow)."""
    with torch.no_grad():
        return max((float(p.abs().max()) for p in module.parameters()
                    if p.requires_grad and p.is_floating_point() and p.numel()), default=0.0)


def _oom_message(exc, estimator):
    names = [n for n in ("batch_size", "predict_batch_size", "hidden_dim", "ff_dim",
                         "n_layers") if n in estimator.get_params()]
    cuda = isinstance(exc, torch.cuda.OutOfMemoryError)
    return (
        f"{'CUDA' if cuda else 'The CPU'} ran out of memory ({error_line(exc)}). "
        f"Lower {' or '.join(repr(n) for n in names)}"
        + (" or use device='cpu'." if cuda else ".")
    )


@dataclass
class FitData:
    """What ``_make_data`` hands to the rest of ``fit``.

    Parameters
    ----------
    rows : ndarray of int
        Rows that may be split into training and validation rows (e.g. the labelled ones).
    strata : ndarray or None
        Labels of ``rows`` for a stratified split (classifiers).
    valid_rows : ndarray of int or None
        Validation rows given by the user (e.g. ``validation_mask``); ``None``: split
        ``rows`` by the estimator's policy.
    extra : dict
        The family's payload (tensors, targets, graphs), read by its own hooks.
    continued : bool
        Whether this fit continues a fitted estimator (``partial_fit`` or a warm start);
        set by ``_fit``. Such a call's checks on too few validation rows keep what the last
        call chose (calibration, the choice of a simpler model).
    train_only : ndarray of int or None
        Rows that are trained on but never held out (rows an earlier ``partial_fit`` call
        gave and was trained on, which could not score this call's epochs fairly).
    epochs : int or None
        The most epochs this call trains (1 for ``partial_fit``); set by ``_fit``. Early
        stopping picks among them on the validation rows, which flatters the kept epoch
        there the more, the more epochs it chose from.
    """

    rows: np.ndarray
    strata: np.ndarray | None = None
    valid_rows: np.ndarray | None = None
    extra: dict = field(default_factory=dict)
    continued: bool = False
    train_only: np.ndarray | None = None
    epochs: int | None = None

    def __getattr__(self, name):
        try:
            return self.__dict__["extra"][name]
        except KeyError:
            raise AttributeError(name) from None


class RowDataset(Dataset):
    """Rows of inputs with their targets as ``{"y": target, "w": row weight}``."""

    def __init__(self, X, y, w):
        self.X, self.y, self.w = X, y, w

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return self.X[i], {"y": self.y[i], "w": self.w[i]}


_MACHINE_MEMORY = "this machine's {:.3g} GiB of memory"


def _cgroup_memory_limit(root="/sys/fs/cgroup", proc="/proc/self/cgroup"):
    """Bytes of the memory limit of this process's control group, the limit a container
    (Docker, Kubernetes, a batch scheduler) sets: cgroup v2's ``memory.max`` or v1's
    ``memory.limit_in_bytes``, read for the process's own group (``proc``) and at the
    mount point ``root`` (which is the process's group inside a container with its own
    cgroup namespace). ``None`` where no limit is set or none can be read."""
    files = [os.path.join(root, "memory.max"),
             os.path.join(root, "memory", "memory.limit_in_bytes")]
    try:
        with open(proc) as lines:
            for line in lines:  # "hierarchy-id:controllers:path"
                hierarchy, controllers, path = line.rstrip("\n").split(":", 2)
                path = path.lstrip("/")
                if hierarchy == "0" and not controllers:  # cgroup v2's unified hierarchy
                    files.append(os.path.join(root, path, "memory.max"))
                elif "memory" in controllers.split(","):  # cgroup v1's memory controller
                    files.append(os.path.join(root, "memory", path, "memory.limit_in_bytes"))
    except (OSError, ValueError):
        pass
    limits = []
    for name in files:
        try:
            with open(name) as f:
                text = f.read().strip()
        except OSError:
            continue
        # "max" (v2) or a page-rounded 2**63 (v1) means no limit
        if text.isdigit() and 0 < int(text) < 2**60:
            limits.append(int(text))
    return min(limits) if limits else None


def _memory_available():
    """(bytes, description) of the memory a process may use: the machine's physical
    memory, or where lower the process's address-space limit (``ulimit -v``,
    ``resource.RLIMIT_AS``) or its control group's memory limit (a container's,
    :func:`_cgroup_memory_limit`); ``(None, None)`` where the physical memory cannot be
    read. The description formats the size in GiB."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None, None
    found = [(memory, _MACHINE_MEMORY)]
    try:
        import resource  # POSIX only
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY and limit > 0:
            found.append((limit, "this process's address-space limit of {:.3g} GiB"))
    except (ImportError, AttributeError, ValueError, OSError):
        pass
    limit = _cgroup_memory_limit()
    if limit is not None:
        found.append((limit, "this container's memory limit (cgroup) of {:.3g} GiB"))
    return min(found, key=lambda pair: pair[0])


@fill_doc()
class EstimatorBase(BaseEstimator):
    """What every skdiff estimator shares, trained or not: parameter validation, device,
    seeding, fit as a transaction, inference, ``sample_posterior`` and persistence.

    Fitted attributes set here: ``device_`` (str) and ``seed_`` (int).
    """

    # the HTML representation of an estimator links to its API page
    _doc_link_module = "skdiff"
    _doc_link_template = (
        "https://skdiff.readthedocs.io/en/latest/api/generated/skdiff.{estimator_name}.html")

    _parameter_constraints: dict = {
        "device": [str, torch.device],
        "n_threads": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "callbacks": [list, tuple, None],
    }

    def _init_params(self, arguments):
        """Store ``__init__``'s keyword arguments (pass ``locals()``) as attributes.

        scikit-learn's convention: ``__init__`` lists every parameter with its default in its
        signature and stores them unchanged; validation happens in ``fit``.
        """
        for name in self._get_param_names():
            setattr(self, name, arguments[name])

    def _prepare_predict(self, X, **predict_params):  # pragma: no cover
        """Validated prediction inputs, handed to :meth:`_outputs`."""
        raise NotImplementedError

    def _outputs(self, inputs, mc=False):  # pragma: no cover
        """Raw network outputs (numpy, float64, rows first) under :meth:`_inference`;
        ``mc``: dropout is active (a Monte Carlo draw, no cached answer)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _transaction(self, warm=False):
        """Run a fit so that a failure leaves the estimator exactly as it was.

        The estimator's attributes are restored on any exception (so a first fit that fails
        leaves an unfitted estimator), and a warm start's network, optimiser and callbacks,
        which training changes in place, are restored from a copy taken before.
        """
        saved = dict(self.__dict__)
        net_state = weights = None
        if warm:
            # the network object stays (callers may hold it): its weights are copied, and
            # the copy of the rest of the net (optimiser, callbacks, history) refers to it
            module, history = self.net_.module_, self.net_.history_
            weights, rows = copy.deepcopy(module.state_dict()), copy.deepcopy(list(history))
            keep = {id(module): module, id(history): history,
                    **{id(t): t for t in module.parameters()},
                    **{id(t): t for t in module.buffers()}}
            net_state = copy.deepcopy(self.net_.__dict__, keep)
        try:
            with self._threads():
                yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            if net_state is not None:
                self.net_.__dict__.clear()
                self.net_.__dict__.update(net_state)
                with torch.no_grad():
                    self.net_.module_.load_state_dict(weights)
                self.net_.history_[:] = rows
                self.module_, self.history_ = self.net_.module_, self.net_.history_
            raise

    def _prepare_fit(self, *, reset=True):
        """Validate every public parameter, resolve the device and draw the fit seed."""
        self._validate_params()
        self._check_callbacks()
        accelerator = getattr(self, "accelerator", None)
        if accelerator is not None and (isinstance(accelerator, type)
                                        or not hasattr(accelerator, "device")):
            raise ValueError(
                "The 'accelerator' parameter must be an accelerate.Accelerator instance, e.g. "
                f"accelerator=Accelerator(); got {accelerator!r}"
                + (", the class itself." if isinstance(accelerator, type) else
                   ", which has no 'device'."))
        accel_precision = str(getattr(accelerator, "mixed_precision", "no") or "no")
        if accel_precision != "no" and getattr(self, "mixed_precision", None) is not None:
            raise ValueError(
                f"mixed_precision={self.mixed_precision!r} with an accelerator that runs its "
                f"own mixed precision ({accel_precision!r}): both autocasts would apply. Set "
                "one of them: mixed_precision=None to keep the accelerator's, or "
                "Accelerator(mixed_precision='no').")
        self.device_ = resolve_device(str(accelerator.device) if accelerator is not None
                                      else self.device)
        if getattr(self, "mixed_precision", None) == "fp16" and self.device_ == "cpu":
            raise ValueError(
                "mixed_precision='fp16' needs a GPU, and device resolved to 'cpu' (device="
                f"{self.device!r}). Use mixed_precision='bf16' on the CPU, or None.")
        seed = draw_seed(self.random_state)
        if accelerator is not None and accelerator.num_processes > 1:
            # the processes must share the seed: same validation rows, same partitions
            from accelerate.utils import broadcast_object_list

            seed = broadcast_object_list([seed])[0]
        # A continued fit (warm start, partial_fit) keeps its seed, and so its validation
        # rows, unless an integer random_state says otherwise: the same integer draws the
        # same seed, another one a new seed (random_state may change between warm fits).
        if reset or not hasattr(self, "seed_") or (
                isinstance(self.random_state, numbers.Integral)
                and not isinstance(self.random_state, bool)):
            self.seed_ = seed
        return seed

    #: History keys the estimators record themselves, refused as a callback's key.
    _RESERVED_HISTORY_KEYS = frozenset({"train_loss", "valid_loss", "valid_acc", "valid_score"})

    def _check_callbacks(self):
        for cb in getattr(self, "callbacks", None) or ():
            ok = isinstance(cb, Callback) or (
                isinstance(cb, tuple) and len(cb) == 2 and isinstance(cb[0], str)
                and isinstance(cb[1], Callback)
            )
            if not ok:
                raise TypeError(
                    "The 'callbacks' parameter must be a list of skorch callbacks or "
                    f"(name, callback) pairs; got an element {cb!r}."
                )
            if isinstance(cb, tuple) and cb[0] in _RESERVED_CALLBACK_NAMES:
                raise ValueError(
                    f"The callback name {cb[0]!r} is one that {type(self).__name__}'s own "
                    "callbacks (or skorch's defaults) use; give the callback another name. "
                    f"Reserved names: {', '.join(sorted(_RESERVED_CALLBACK_NAMES))}.")
            callback = cb[1] if isinstance(cb, tuple) else cb
            if isinstance(callback, EpochScoring):
                key = callback.history_key()
                if key in self._RESERVED_HISTORY_KEYS:
                    raise ValueError(
                        f"EpochScoring({callback.scoring!r}) would record its score as "
                        f"{key!r}, a history key {type(self).__name__} records itself "
                        "(early stopping and n_init read it); pass another name, e.g. "
                        f"EpochScoring(..., name='{key}_user').")
            if isinstance(callback, (skorch_scoring.EpochScoring, skorch_scoring.BatchScoring)):
                raise TypeError(
                    f"skorch's {type(callback).__name__} scores the raw network outputs "
                    "against skdiff's targets, which carry per-row weights and unlabelled rows; "
                    "use skdiff.callbacks.EpochScoring, which takes the same scoring argument "
                    "and scores the rows that count.")

    def set_params(self, **params):
        """Set the estimator's parameters (scikit-learn's ``set_params``).

        ``callbacks`` is one parameter, a list: set it whole (``set_params(callbacks=[...])``;
        in a search, ``param_grid={"callbacks": [[cb_a], [cb_b]]}``). skorch's routed names
        for a callback's own parameters (``callbacks__<name>__<param>``) are refused with that
        advice.
        """
        nested = sorted(key for key in params if key.startswith("callbacks__"))
        if nested:
            raise ValueError(
                f"Invalid parameter {nested[0]!r} for {type(self).__name__}: 'callbacks' is one "
                "parameter, a list of callbacks, whose elements are not addressed by name. "
                "Set the whole list instead: set_params(callbacks=[...]), or in a search "
                "param_grid={'callbacks': [[callback_a], [callback_b]]}.")
        return super().set_params(**params)

    def _rng(self, seed=None):
        """Context manager: torch RNG seeded with ``seed`` (default: the fit seed)."""
        return torch_seed(self.seed_ if seed is None else seed, getattr(self, "device_", "cpu"))

    @contextlib.contextmanager
    def _threads(self):
        """Run a block with ``n_threads`` torch threads, restoring the caller's count after
        (``None``: leave torch's setting, which joblib's workers already limit)."""
        n = getattr(self, "n_threads", None)
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            yield  # None, or an invalid value that parameter validation reports
            return
        before = torch.get_num_threads()
        torch.set_num_threads(int(n))
        try:
            yield
        finally:
            torch.set_num_threads(before)

    # -- inference -------------------------------------------------------------------------
    def _float64_inference(self):
        """Whether row-wise inference runs through a float64 copy of the network
        (:func:`~skdiff._engine.float64_copy`): on the CPU without ``mixed_precision``. In
        float32, products round differently for different numbers of rows (~1e-7), so a
        row's prediction would depend on the other rows of its call; accelerators keep
        float32 (Apple's MPS has no float64, GPUs run it slowly)."""
        return str(self.device_) == "cpu" and getattr(self, "mixed_precision", None) is None

    @contextlib.contextmanager
    def _inference(self, mc_dropout=None):
        """Evaluation mode and no autograd; with ``mc_dropout`` (the
        :class:`~skdiff.nn._dropout.SharedMasks` of a Monte Carlo draw) only dropout layers
        train, skdiff's own with the draw's masks shared by all rows.

        The block holds :data:`~skdiff._engine.TORCH_LOCK`: the modes and masks are set on
        the network (and its cached float64 copy) that every thread predicting with this
        estimator shares, so inference blocks of different threads run one at a time.
        """
        # parameters that prediction reads (mixed_precision, inference_dtype, ...) may have
        # been set after fit: check them here too, so a bad one is named, not a KeyError
        self._validate_params()
        with TORCH_LOCK:
            module = self.module_
            was_training = module.training
            module.eval()
            if mc_dropout is not None:
                for m in module.modules():
                    if isinstance(m, torch.nn.modules.dropout._DropoutNd):
                        m.train()
                    if isinstance(m, Dropout):
                        m.masks = mc_dropout
            dtype = _AUTOCAST[getattr(self, "mixed_precision", None)]
            autocast = torch.autocast(torch.device(self.device_).type, dtype=dtype,
                                      enabled=dtype is not None)
            try:
                with torch.no_grad(), self._threads(), autocast, \
                        out_of_memory_as(lambda exc: _oom_message(exc, self)):
                    yield module
            finally:
                module.train(was_training)
                if mc_dropout is not None:
                    for m in module.modules():
                        if isinstance(m, Dropout):
                            m.masks = None

    def _predict_outputs(self, X, **predict_params):
        """Deterministic raw outputs for ``X`` (dropout off)."""
        check_is_fitted(self)
        inputs = self._prepare_predict(X, **predict_params)
        with self._inference():
            return self._outputs(inputs)

    def sample_posterior(self, X, n_samples=100, random_state=None, **predict_params):
        """Monte Carlo samples of the predictive distribution, sample axis last.

        What a sample is depends on the estimator (see its docstring): a forward pass with
        dropout active (Monte Carlo dropout, Gal & Ghahramani 2016), a draw from a predicted
        Gaussian, or a joint function sample (NDP). Draws differ between calls unless
        ``random_state`` is set.

        Parameters
        ----------
        %(predict_X)s
        n_samples : int, default=100
            Monte Carlo samples drawn for every row (one stochastic forward pass or one
            Gaussian draw each).
        random_state : int, RandomState instance or None, default=None
            Seeds the draws (dropout masks or Gaussian noise): an int gives the same
            samples on every call on the CPU; ``None`` draws a seed from numpy's global
            random state, so samples differ between calls. The caller's torch random
            state is left untouched.
        %(predict_params)s

        Returns
        -------
        samples : ndarray
            Classifiers: (n_rows, n_classes, n_samples) class probabilities; regressors:
            (n_rows, n_samples), or (n_rows, n_outputs, n_samples) for multi-output ``y``.
        """
        check_is_fitted(self)
        n_samples = check_n_samples(n_samples)
        inputs = self._prepare_predict(X, **predict_params)
        n_rows = _num_samples(X) if hasattr(X, "__len__") or hasattr(X, "shape") else 1
        with memory_for(f"n_samples={n_samples} draws of {n_rows} rows",
                        "draw fewer samples, in several calls with other random_state values"):
            # the result holds at least n_rows * n_samples floats: reserving them (no page is
            # touched) refuses a request the machine cannot hold before any network runs
            np.empty((n_rows, n_samples))
            return self._draw_samples(inputs, n_samples, draw_seed(random_state))

    def _draw_samples(self, inputs, n_samples, seed):
        """Monte Carlo dropout: ``n_samples`` stochastic forwards, mapped to predictions."""
        return self._from_outputs(self._mc_outputs(inputs, n_samples, seed), samples=True)

    #: Why the network may have no dropout, named in the warning of :meth:`_mc_outputs`
    #: when ``dropout="auto"`` chose 0 (a family whose ``dropout`` has an ``"auto"``).
    _auto_dropout_note = ""

    def _has_dropout(self):
        """Whether the network has a dropout layer of positive rate, i.e. whether Monte
        Carlo dropout passes differ from each other."""
        return any(isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0
                   for m in self.module_.modules())

    def _warn_no_dropout(self):
        """Warn that Monte Carlo dropout draws carry no spread: the network has no dropout."""
        name = "dropout_" if "dropout_" in self.__dict__ else "dropout"
        note = f"; {self._auto_dropout_note}" if (
            self._auto_dropout_note and getattr(self, "dropout", None) == "auto") else ""
        warnings.warn(
            f"{type(self).__name__} was trained without dropout ({name}="
            f"{getattr(self, name, None)!r}{note}), so its Monte Carlo dropout draws are all "
            "equal to the prediction and their spread is 0. Set dropout above 0 (e.g. "
            "dropout=0.2) and refit for a spread.", UserWarning, stacklevel=caller_stacklevel())

    def _mc_outputs(self, inputs, n_samples, seed):
        """Raw outputs of ``n_samples`` forwards with dropout active: (rows, ..., n_samples).

        Each draw drops the same units for every row (:class:`~skdiff.nn._dropout.Dropout`
        with one :class:`~skdiff.nn._dropout.SharedMasks` per call, from its own generator
        seeded with ``seed``): a draw is one thinned network, and a row's draws do not
        depend on the other rows of the call or on how they are chunked. A network without
        dropout has one answer, repeated, with a warning (:meth:`_warn_no_dropout`).
        """
        if not self._has_dropout():
            self._warn_no_dropout()
            with self._inference():
                out = self._outputs(inputs)
            return np.repeat(out[..., None], n_samples, axis=-1)
        from tqdm.auto import trange

        draws = trange(n_samples, desc=f"{type(self).__name__} sampling", unit="sample",
                       disable=not getattr(self, "verbose", 0) or n_samples < 20)
        masks = SharedMasks(torch.Generator(device=self.device_).manual_seed(int(seed)))
        out = []
        with torch_seed(seed, self.device_), self._inference(mc_dropout=masks):
            # one loop iteration per Monte Carlo draw, each a batched forward over all rows
            for _ in draws:
                masks.next_draw()
                out.append(self._outputs(inputs, mc=True))
        return np.stack(out, axis=-1)

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
    def save(self, path):
        """Write the estimator (fitted or not) to ``path`` with joblib, atomically.

        Everything travels: the network, scalers, classes, caches and parameters, with the
        version of skdiff that wrote them. A file written on a GPU machine loads on a
        CPU-only one. :meth:`load` reads it back.

        Parameters
        ----------
        path : str or path-like
            The file to write. Missing parent folders are created; an existing file is
            replaced only once the new one is complete (a temporary file in the same
            folder, then a rename), so a reader never sees a partial file. A folder is
            refused.
        """
        import io

        import joblib

        from . import __version__

        if os.path.isdir(path):
            raise IsADirectoryError(
                f"save(path) writes one file, and {os.fspath(path)!r} is a folder. Pass a file "
                f"path, e.g. {os.path.join(os.fspath(path), 'model.joblib')!r}.")
        buf = io.BytesIO()
        joblib.dump({"skdiff_version": __version__, "estimator": self}, buf)
        atomic_write(path, buf.getvalue())

    @classmethod
    def load(cls, path):
        """Read an estimator written by :meth:`save` (a pickle: load only files you trust).

        Refuses a file that holds another kind of estimator, and warns when it was written
        by another version of skdiff (or is a plain pickle, whose version is unknown).

        Parameters
        ----------
        path : str or path-like
            A file written by ``save`` of this class.

        Returns
        -------
        estimator : estimator
            The saved estimator, fitted or not as it was saved; a network saved on a GPU
            is on the CPU when this machine has no CUDA.
        """
        import joblib

        from . import __version__

        if os.path.isdir(path):
            raise IsADirectoryError(
                f"{cls.__name__}.load(path) reads one file written by save, and "
                f"{os.fspath(path)!r} is a folder. Pass the file's path.")
        try:
            saved = joblib.load(path)
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise ValueError(
                f"{os.fspath(path)!r} could not be read ({type(exc).__name__}: {exc}): "
                f"{cls.__name__}.load expects a file written by {cls.__name__}.save, and this "
                "one is truncated, empty or another kind of file. Save the estimator again.") \
                from exc
        if isinstance(saved, cls):  # a plain pickle or joblib dump of the estimator
            warnings.warn(f"{os.fspath(path)!r} holds a plain pickle of a {cls.__name__}, not "
                          "a file written by save: the skdiff version that wrote it is unknown. "
                          "Check its predictions before relying on them.", UserWarning,
                          stacklevel=caller_stacklevel())
            return saved
        est = saved.get("estimator") if isinstance(saved, dict) else saved
        if not isinstance(est, BaseEstimator):
            raise ValueError(f"{os.fspath(path)!r} holds a {type(saved).__name__}, not an "
                             f"estimator written by {cls.__name__}.save.")
        if not isinstance(est, cls):  # saved by save or pickled: another estimator either way
            load = (f"load it with {type(est).__name__}.load" if isinstance(est, EstimatorBase)
                    else "read it with joblib.load")
            raise TypeError(f"{os.fspath(path)!r} holds a {type(est).__name__}, not a "
                            f"{cls.__name__}; {load}.")
        if saved.get("skdiff_version") != __version__:
            warnings.warn(f"{path} was written by skdiff {saved.get('skdiff_version')}; this is "
                          f"skdiff {__version__}. Check its predictions before relying on them.",
                          UserWarning, stacklevel=caller_stacklevel())
        return est

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


class NeuralEstimatorBase(EstimatorBase):
    """The skeleton of the trainable estimators (use with a task layer of :mod:`skdiff._tasks`).

    See the module docstring for the hooks a family implements. Fitted attributes set here:
    ``net_`` (``skorch.NeuralNet``), ``module_`` (the trained ``torch.nn.Module``),
    ``history_`` (``skorch.History``) and ``init_scores_``.
    """

    _parameter_constraints: dict = dict(TRAINING_PARAMETER_CONSTRAINTS)

    #: Parameters a warm start or ``partial_fit`` may change: they steer the training loop
    #: (or, for ``n_init`` and ``accelerator``, only a fresh fit), not the network, its
    #: inputs or what it predicts. Every other parameter must keep the value the network was
    #: built with, or the continued fit would silently train a model its parameters do not
    #: describe.
    _WARM_START_FREE = frozenset({
        "max_epochs", "lr", "weight_decay", "batch_size", "early_stopping",
        "validation_fraction", "n_iter_no_change", "n_init", "warm_start", "n_threads",
        "random_state", "verbose", "callbacks", "mixed_precision", "accelerator",
    })

    #: How ``fit`` holds out validation rows for early stopping: ``"stratified"`` (a random
    #: stratified fraction: classifiers), ``"random"`` or ``"last"`` (the last rows in the
    #: given order, i.e. time order for windows of a series: no future window leaks).
    _split_policy = "random"

    # -- hooks a family implements ---------------------------------------------------------
    def _make_data(self, X, y, *, reset, **fit_params) -> FitData:  # pragma: no cover
        raise NotImplementedError

    def _n_variance_outputs(self):
        """Head outputs that are raw variances, which the network feeds detached features
        (``n_detached_outputs`` of the skdiff networks): 0 here; a Gaussian head's task layer
        (:class:`~skdiff._tasks.RegressorTask`) answers with the number of targets."""
        return 0

    def _make_datasets(self, data, train, valid):
        """(training dataset, validation dataset or None) for the rows ``train``/``valid``.

        The default serves row-wise data: ``data.X`` (inputs, rows first), ``data.targets``
        and ``data.weights`` as :class:`RowDataset` s.
        """
        X, y = torch.as_tensor(data.X), torch.as_tensor(data.targets)
        w = torch.as_tensor(data.weights, dtype=torch.float32)
        train_ds = RowDataset(X[train], y[train], w[train])
        valid_ds = RowDataset(X[valid], y[valid], w[valid]) if len(valid) else None
        return train_ds, valid_ds

    def _build_module(self, data):  # pragma: no cover
        raise NotImplementedError

    def _criterion(self):  # pragma: no cover
        """(loss class, its keyword arguments)."""
        raise NotImplementedError

    def _init_module(self, module, data, train, valid):
        """Set a freshly built module's starting point (default: leave it as built)."""

    def _continue_module(self, data, train, valid, partial):
        """Adapt the fitted module to a continued fit's rows before it trains on them
        (``partial``: ``partial_fit``, else a warm start; default: nothing)."""

    def _finish_fit(self, data, train, valid):
        """Compute what prediction needs once training is done (default: nothing)."""

    def _monitor(self):
        """(history key, lower is better) of the early-stopping score on validation rows."""
        return "valid_loss", True

    def _start_measure(self, monitor):
        """The function ``measure(net, dataset_valid)`` that scores a network on validation
        rows as the early-stopping ``monitor`` does, or None where there is none (a continued
        call then starts early stopping afresh, as skorch's)."""
        return validation_loss if monitor == "valid_loss" else None

    def _net_kwargs(self):
        """Extra keyword arguments of the skorch net (batching, collation)."""
        return {"batch_size": int(self.batch_size or 128)}  # torch refuses numpy ints

    def _extra_callbacks(self, train_ds, valid_ds):
        """Family callbacks added to the net, as ``(name, callback)`` pairs."""
        return ()

    # -- fit orchestration -----------------------------------------------------------------
    def _fit(self, X, y, *, partial=False, **fit_params):
        """The whole of ``fit`` (``partial=True``: ``partial_fit``, one epoch)."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None.")
        warm = (partial or self.warm_start) and hasattr(self, "net_")
        if warm:
            self._check_warm_parameters(partial)
        with self._transaction(warm):
            self._prepare_fit(reset=not warm)
            data = self._make_data(X, y, reset=not warm, **fit_params)
            train, valid = self._validation_rows(data)
            train_ds, valid_ds = self._make_datasets(data, train, valid)
            epochs = 1 if partial else None
            data.epochs = epochs or self.max_epochs
            if warm:
                data.continued = True
                self._continue_module(data, train, valid, partial)
                self._train(None, train_ds, valid_ds, epochs=epochs)
            else:
                self._train_inits(data, train, valid, train_ds, valid_ds, epochs)
                self._network_params_ = self._network_parameters()
            self.restored_epoch_ = next(
                (cb.restored_epoch_ for _, cb in self.net_.callbacks_
                 if isinstance(cb, RestoreLowestLoss)), None)
            self._finish_fit(data, train, valid)
        return self

    def _network_parameters(self):
        """The parameters that built the network: all but :attr:`_WARM_START_FREE`."""
        return {name: value for name, value in self.get_params(deep=False).items()
                if name not in self._WARM_START_FREE}

    def _check_warm_parameters(self, partial):
        """Refuse a warm start or ``partial_fit`` whose parameters no longer describe the
        fitted network (a changed ``hidden_dim``, say, would otherwise be ignored)."""
        built = getattr(self, "_network_params_", None)
        if built is None:  # an estimator saved before the parameters were recorded
            return
        now = self._network_parameters()
        changed = [name for name in sorted(built) if not _same_value(built[name], now.get(name))]
        if changed:
            how = "partial_fit continues" if partial else "warm_start=True continues"
            listed = ", ".join(f"{name}={built[name]!r} (now {now.get(name)!r})"
                               for name in changed)
            raise ValueError(
                f"{type(self).__name__}: {how} the fitted network, which was built with "
                f"{listed}. Restore {'that value' if len(changed) == 1 else 'those values'}, "
                "or call fit with warm_start=False to fit a new network with the new "
                "parameters. "
                f"Only training parameters may change between warm fits: "
                f"{', '.join(sorted(self._WARM_START_FREE))}.")

    def _needs_validation_rows(self, data):
        """Whether ``early_stopping="auto"`` holds out validation rows below
        ``AUTO_EARLY_STOPPING_ROWS`` too (an estimator that calibrates on them)."""
        return False

    def _holds_out_rows(self, data):
        """Whether ``early_stopping="auto"``, where it does not stop early, still holds out
        validation rows (scored every epoch, not used to stop): for an estimator that uses
        them after training, e.g. to compare the network with a simpler model."""
        return False

    def _validation_rows(self, data):
        """(training rows, validation rows) by the task's ``_split_policy``.

        ``ceil(validation_fraction * n)`` of the candidate rows are held out (as
        :func:`~sklearn.model_selection.train_test_split` rounds), none when early stopping
        is off (unless ``"auto"`` and :meth:`_holds_out_rows`) or when fewer than two
        training rows would remain; then early stopping monitors the training loss. A
        stratified split falls back to a random one when a class has too few rows; the rows
        of a class that such a split would hold out whole (classifiers) stay on the training
        side. Rows of ``data.train_only`` are never held out: the split draws from the others
        (``validation_fraction`` of those), and they train.
        """
        rows = np.asarray(data.rows)
        self.early_stopping_ = self.early_stopping
        if self.early_stopping == "auto":  # given validation rows are meant to be used
            self.early_stopping_ = (data.valid_rows is not None
                                    or rows.size >= AUTO_EARLY_STOPPING_ROWS
                                    or self._needs_validation_rows(data))
        if data.valid_rows is not None:
            valid = np.intersect1d(data.valid_rows, rows)
            return np.setdiff1d(rows, valid), valid
        if data.train_only is None:
            return self._split(data, rows, data.strata)
        held = ~np.isin(rows, data.train_only)
        train, valid = self._split(data, rows[held],
                                   None if data.strata is None else data.strata[held])
        return np.union1d(train, rows[~held]), valid

    def _split(self, data, rows, strata):
        """:meth:`_validation_rows`'s split of the candidate ``rows`` (``strata``, their
        labels for a stratified split)."""
        empty = np.empty(0, dtype=np.int64)
        n = rows.size
        n_val = self._n_validation(data, n)
        hold_out = self.early_stopping_ or (self.early_stopping == "auto"
                                            and self._holds_out_rows(data))
        if not hold_out or n_val < 1 or n - n_val < 2:
            return rows, empty
        if self._split_policy == "last":
            return rows[:n - n_val], rows[n - n_val:]
        from sklearn.model_selection import train_test_split

        stratify = None
        if self._split_policy == "stratified" and strata is not None:
            _, counts = np.unique(strata, return_counts=True)
            if counts.min() >= 2 and min(n_val, n - n_val) >= counts.size:
                stratify = strata
        tr, va = train_test_split(np.arange(n), test_size=n_val, stratify=stratify,
                                  random_state=self.seed_)
        if strata is not None:
            # a class held out whole (a class of one labelled row in a random split) would
            # never be trained on: its rows go back to the training side
            back = ~np.isin(strata[va], strata[tr])
            if back.any():
                tr, va = np.concatenate([tr, va[back]]), va[~back]
                if va.size == 0:
                    return rows, empty
        return rows[np.sort(tr)], rows[np.sort(va)]

    def _n_validation(self, data, n):
        """How many of the ``n`` candidate rows a split holds out:
        ``ceil(validation_fraction * n)`` (:func:`n_validation_rows`)."""
        return n_validation_rows(self.validation_fraction, n)

    # -- training --------------------------------------------------------------------------
    def _train_inits(self, data, train, valid, train_ds, valid_ds, epochs):
        """Train ``n_init`` networks from different seeds; keep the best (``init_scores_``).

        The first seed is the fit seed (so ``n_init=1`` is a plain fit); the others are drawn
        from it. The score is the best early-stopping score on the validation rows, or
        without them the training loss without dropout of the weights the run ends on (those
        :class:`~skdiff.callbacks.RestoreLowestLoss` or weight averaging kept, else the
        last): an epoch's recorded loss is measured with dropout on the weights before its
        updates. Lower is better in ``init_scores_``.
        """
        n_init = getattr(self, "n_init", 1)
        seeds = [self.seed_] + np.random.RandomState(self.seed_).randint(
            0, SEED_BOUND, n_init - 1).tolist()
        key, lower = self._monitor()
        best, scores = None, []
        for seed in seeds:
            self.seed_ = int(seed)
            with self._rng():
                module = self._build_checked(data)
            self._init_module(module, data, train, valid)
            label = f" (init {len(scores) + 1}/{n_init})" if n_init > 1 else ""
            interrupted = self._train(module, train_ds, valid_ds, epochs=epochs,
                                      progress_label=label)
            # complete epochs only (an interrupt may leave the last one without scores)
            done = [row for row in self.history_ if "train_loss" in row]
            values = [row[key] for row in done if key in row] if valid_ds is not None else []
            if values:  # the kept epoch's: the best with early stopping, else the last
                kept = (min(values) if lower else max(values)) if self.early_stopping_ \
                    else values[-1]
                score = float(kept if lower else -kept)
            elif done:  # the weights the run ends on (restored, averaged or the last ones)
                with self._rng():  # a DataLoader's iterator draws from the global stream
                    score = training_loss(self.net_, train_ds)
            else:
                score = np.inf
            scores.append(score)
            if best is None or score < best[0]:
                best = (score, self.seed_, self.net_, self.module_, self.history_)
            if interrupted:
                break
        _, self.seed_, self.net_, self.module_, self.history_ = best
        self.init_scores_ = np.array(scores)

    def _network_sizes(self):
        # a size resolved in fit ("auto") by its resolved value (n_layers_)
        return {k: self.__dict__.get(f"{k}_", v) for k, v in self.get_params().items()
                if k in ("hidden_dim", "n_layers", "n_heads", "ff_dim")}

    def _check_network_fits(self, data):
        """Refuse a network whose weights alone exceed the memory this process may use (the
        machine's, or the process's address-space or container limit where lower), before
        building it (a network of millions of layers would otherwise take an hour to build
        and fail).

        The parameter count is extrapolated from networks of one and two layers built on
        PyTorch's ``meta`` device (shapes only, no memory). That build costs about a second
        the first time in a process (PyTorch loads its meta kernels), so it runs only when a
        first-order count of the size parameters comes within 1/16 of the memory.
        """
        memory, where = _memory_available()
        if memory is None:  # no sysconf (Windows): not checked
            return
        sizes = {k: v or 0 for k, v in self._network_sizes().items()}
        width = sizes.get("hidden_dim", 0)
        rough = max(sizes.get("n_layers", 1), 1) * width * (
            width * max(sizes.get("n_heads", 1), 1) + sizes.get("ff_dim", 0))
        if 4 * rough < memory / 16:
            return
        counts = []
        for n_layers in (1, 2):
            probe = copy.copy(self)
            if hasattr(probe, "n_layers"):
                probe.n_layers = n_layers
                if "n_layers_" in probe.__dict__:  # the network is built from the resolved
                    probe.n_layers_ = n_layers
            try:
                with torch.device("meta"):
                    counts.append(sum(p.numel() for p in probe._build_module(data).parameters()))
            except Exception:  # a network the meta device cannot build: leave it to the build
                return
        n_layers = self._network_sizes().get("n_layers", 1)
        n_params = counts[0] + (n_layers - 1) * (counts[1] - counts[0])
        if 4 * n_params > memory:
            raise MemoryError(
                f"The network would hold {n_params:.3g} parameters ({4 * n_params / 2**30:.3g} "
                f"GiB as float32, before gradients and optimiser state), more than "
                f"{where.format(memory / 2**30)}; its size comes from "
                f"{self._network_sizes()}: lower them.")

    def _build_checked(self, data):
        """:meth:`_build_module`, with running out of memory reported as the parameters to
        lower."""
        self._check_network_fits(data)
        try:
            return self._build_module(data)
        except (MemoryError, RuntimeError, SystemError) as exc:
            # an allocation that fails inside torch's C++ code surfaces as a RuntimeError
            # naming it, or under an address-space limit as a SystemError from a
            # constructor that "returned NULL"
            text = str(exc).lower()
            if not isinstance(exc, MemoryError) and "alloc" not in text and \
                    "returned null" not in text:
                raise
            raise MemoryError(f"Building the network ran out of memory ({exc}); its size comes "
                              f"from {self._network_sizes()}: lower them.") from exc

    def _callbacks(self, *, monitor, lower_is_better, extra=()):
        cbs = [("finite_loss", FiniteLossGuard())]
        cbs += list(extra)
        if self.early_stopping_:
            cbs.append((
                "early_stopping",
                EarlyStopping(
                    monitor=monitor,
                    patience=self.n_iter_no_change,
                    lower_is_better=lower_is_better,
                    load_best=True,
                    sink=print if self.verbose > 1 else _silent,  # picklable, unlike a lambda
                ),
            ))
        user = [cb if isinstance(cb, tuple) else (f"user_{i}_{type(cb).__name__}", cb)
                for i, cb in enumerate(self.callbacks or ())]
        if not self.early_stopping_ and not any(
                isinstance(cb, (WeightAveraging, RestoreLowestLoss)) for _, cb in [*cbs, *user]):
            # without early stopping's best epoch (or an average of the last ones) the run
            # ends on its last weights: undo a spike of the training loss at its end (a
            # RestoreLowestLoss among the user's callbacks replaces this one)
            cbs.append(("restore_lowest_loss", RestoreLowestLoss()))
        if self.verbose:
            cbs.append(("progress", EpochProgress()))
        return cbs + user

    def _make_net(self, module, train_ds, valid_ds):
        """Build (not train) the skorch net around an instantiated ``module``."""
        criterion, criterion_kwargs = self._criterion()
        if valid_ds is None:
            monitor, lower = "train_loss", True
        else:
            monitor, lower = self._monitor()
        kwargs = {f"criterion__{k}": v for k, v in criterion_kwargs.items()}
        kwargs.update(self._net_kwargs())
        collate = kwargs.pop("collate_fn", None)
        if collate is not None:
            kwargs["iterator_train__collate_fn"] = collate
            kwargs["iterator_valid__collate_fn"] = collate
        net_cls = Net
        if getattr(self, "accelerator", None) is not None:
            net_cls = AcceleratedNet
            kwargs["accelerator"] = self.accelerator
        net = net_cls(
            module=module,
            criterion=criterion,
            optimizer=torch.optim.Adam,
            optimizer__weight_decay=self.weight_decay,
            lr=self.lr,
            max_epochs=self.max_epochs,
            iterator_train__shuffle=kwargs.pop("shuffle", True),
            train_split=None,
            callbacks=self._callbacks(monitor=monitor, lower_is_better=lower,
                                      extra=self._extra_callbacks(train_ds, valid_ds)),
            device=None if net_cls is AcceleratedNet else self.device_,
            verbose=int(self.verbose > 1),  # 2: skorch's epoch table; 1: a progress bar
            **kwargs,
        )
        net.autocast_dtype = _AUTOCAST[getattr(self, "mixed_precision", None)]
        return net

    def _train(self, module, train_ds, valid_ds=None, *, epochs=None, progress_label=""):
        """Train ``module`` (or, with ``module=None``, continue ``net_``) on ``train_ds``.

        Sets ``net_``, ``module_`` and ``history_``; returns whether training was interrupted
        (``KeyboardInterrupt``: training ends there, keeping the best weights so far, with a
        warning).
        """
        if valid_ds is None:
            self._check_monitors_without_validation()
        if module is not None:
            self.net_ = self._make_net(module, train_ds, valid_ds)
            self.net_.initialize()
        else:
            # a continued net trains with the estimator's current training parameters (those
            # of _WARM_START_FREE that act on the net; the others are refused or unused).
            # The optimiser's learning rate and weight decay are written only when they
            # changed: skorch writes them into the optimiser's parameter groups, which would
            # undo where a learning-rate scheduler among the callbacks has taken them (it
            # continues from the epochs in the history, as in skorch's own warm start).
            changed = {key: value for key, value in (
                ("lr", self.lr), ("optimizer__weight_decay", self.weight_decay))
                if not _same_value(self.net_.get_params()[key], value)}
            self.net_.set_params(max_epochs=self.max_epochs,
                                 batch_size=self._net_kwargs()["batch_size"],
                                 verbose=int(self.verbose > 1), **changed)
            self.net_.autocast_dtype = _AUTOCAST[getattr(self, "mixed_precision", None)]
            self._rebind_callbacks(train_ds, valid_ds)
        self.net_.set_params(
            train_split=predefined_split(valid_ds) if valid_ds is not None else None)
        # A continued run (warm start, partial_fit) draws its own stream, offset by the epochs
        # already trained, so successive calls do not repeat the same dropout masks/shuffles.
        start = len(self.net_.history)
        init_scale = _max_abs_weight(self.net_.module_)
        for name, cb in self.net_.callbacks_:
            if name == "progress":
                cb.total = epochs or self.max_epochs
                cb.desc = f"{type(self).__name__}{progress_label}"
        seed = derive_seed(self.seed_, start)
        with self._rng(seed), out_of_memory_as(lambda exc: _oom_message(exc, self)):
            # partial_fit runs on_train_begin/end around fit_loop, so EarlyStopping
            # restores the best weights at the end of this call.
            self.net_.partial_fit(train_ds, None, epochs=epochs)
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
        self._check_divergence(start, init_scale)
        interrupted = self.net_.interrupted_
        if interrupted is not None:
            warnings.warn(
                f"Training was interrupted (KeyboardInterrupt) during epoch {interrupted}; "
                f"{type(self).__name__} keeps the best weights so far.", UserWarning,
                stacklevel=caller_stacklevel())
        return interrupted is not None

    def _check_divergence(self, start, init_scale):
        """Raise :class:`TrainingDivergedError` when this call's training diverged.

        Two signs, checked on the weights that training kept (early stopping's best epoch, or
        the last): a training loss (the median of the three epochs from the kept one on) that
        rose above where this call started by more than the first epoch's magnitude (for a
        positive loss: more than doubled) and by more than ``1e-3`` and three times the
        median change between consecutive epochs (counted up to 1), or weights that grew a
        thousandfold. A non-finite loss stops training
        as it happens (:class:`~skdiff._engine.FiniteLossGuard`).
        """
        # complete epochs only: an interrupt in the middle of one leaves it without a loss
        history = [row for row in self.history_[start:] if "train_loss" in row]
        if not history or getattr(self.net_, "start_kept_", False):
            return  # nothing trained, or the weights it started from were kept
        losses = np.array([row["train_loss"] for row in history])
        kept = len(losses) - 1
        key, lower = self._monitor()
        if not all(key in row for row in history):
            # no validation rows: early stopping watched the training loss (_make_net)
            key, lower = "train_loss", True
        if self.early_stopping_:
            scores = np.array([row[key] for row in history])
            kept = int(np.argmin(scores) if lower else np.argmax(scores))
        # an epoch's training loss is measured while it trains, i.e. mostly on the weights
        # before its updates; the kept weights' loss shows in the following epoch. On a few
        # rows with dropout one epoch's loss jumps far above its neighbours', so the kept
        # weights are judged by the median of the three epochs from the kept one on (the
        # last three when it is among them): one noisy epoch is not a divergence
        lo = max(0, min(kept, len(losses) - 3))
        first, last = losses[0], float(np.median(losses[lo:lo + 3]))
        scale = _max_abs_weight(self.module_)
        # losses may be negative (a Gaussian NLL); they are of standardised targets, so a
        # rise below 1e-3 is noise, however close to 0 the first epoch's loss was. Nor is a
        # rise within the epochs' own noise (three times the median change from one epoch
        # to the next, counted up to 1): on one or two rows with dropout a Gaussian NLL that
        # starts near 0 moves by about a nat from epoch to epoch without trending upwards,
        # while a learning rate too high sends the loss tens of times above its start
        noise = 3 * float(np.median(np.abs(np.diff(losses)))) if len(losses) > 1 else 0.0
        if last - first > abs(first) + max(_DIVERGENCE_FLOOR, min(noise, 1.0)):
            why = (f"the training loss ended at {last:.4g}, far above where it started "
                   f"({first:.4g})")
        elif scale > 1e3 * max(1.0, init_scale):
            why = f"the weights grew from at most {init_scale:.3g} to {scale:.3g} in magnitude"
        else:
            return
        raise TrainingDivergedError(
            f"Training diverged: {why}. Lower 'lr' (currently {self.lr}) or raise "
            f"'weight_decay' (currently {self.weight_decay}); the estimator was left as it "
            "was before this fit.")

    def _check_monitors_without_validation(self):
        """Refuse, before training, a user's callback that monitors a validation score
        (skorch's ``EarlyStopping`` and ``Checkpoint`` do by default) in a fit that holds
        out no validation rows, where the score never appears in the history."""
        for i, item in enumerate(self.callbacks or ()):
            name, cb = item if isinstance(item, tuple) else (f"callbacks[{i}]", item)
            monitor = getattr(cb, "monitor", None)
            if isinstance(monitor, str) and monitor.startswith("valid_"):
                raise ValueError(
                    f"The callback {name!r} ({type(cb).__name__}) monitors {monitor!r}, but "
                    f"this fit holds out no validation rows (early_stopping="
                    f"{self.early_stopping!r}). Set early_stopping=True to hold out "
                    "validation_fraction of the rows, or give the callback a training score "
                    "to monitor (monitor='train_loss' for EarlyStopping, "
                    "'train_loss_best' for Checkpoint).")

    def _rebind_callbacks(self, train_ds, valid_ds):
        """Give a continued net this call's callbacks: the family's, bound to this call's
        datasets, and those of the current ``callbacks``, ``verbose``, ``early_stopping`` and
        ``n_iter_no_change``. All of them start afresh, as in a new fit, but early stopping,
        whose score to beat is that of the weights the call starts from, measured on this
        call's validation rows (:class:`ResumeEarlyStopping`)."""
        monitor, lower = ("train_loss", True) if valid_ds is None else self._monitor()
        extra = tuple(self._extra_callbacks(train_ds, valid_ds))
        previous = early_stopping_of(self.net_)
        measure = self._start_measure(monitor)
        if (self.early_stopping_ and measure is not None and previous is not None
                and previous.monitor == monitor
                and np.isfinite(getattr(previous, "dynamic_threshold_", np.inf))):
            # the weights this call starts from are the best so far: keep them unless an
            # epoch of this call beats their score on this call's validation rows
            extra += (("resume_early_stopping", ResumeEarlyStopping(
                monitor, previous.best_epoch_, measure)),)
        self.net_.callbacks = self._callbacks(monitor=monitor, lower_is_better=lower,
                                              extra=extra)
        self.net_.initialize_callbacks()
