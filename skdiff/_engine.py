"""The training engine shared by the estimators and by NDP prior training.

Low-level pieces with no scikit-learn estimator in them, imported by the estimator layer
(:mod:`skdiff._base`) and by :mod:`skdiff.diffusion.training` alike:

* :class:`Net`, skorch's :class:`~skorch.NeuralNet` that pickles its network once, inside the
  device-mapped state skorch loads on a machine without CUDA;
* :class:`FiniteLossGuard`, a callback that stops training on a non-finite loss;
* :func:`training_loss`, a network's loss on its training rows without dropout;
* :func:`torch_seed` and :func:`draw_seed`, seeding that leaves the caller's RNG untouched;
* :data:`TORCH_LOCK`, the lock around the blocks that use torch's process-wide state;
* :func:`atomic_write`, the write-then-rename used for every file the package writes;
* :func:`first_item`, the ``collate_fn`` of datasets whose items are whole batches;
* :func:`float64_copy`, the cached float64 copy of a fitted network that CPU inference runs.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import uuid
import weakref
from collections.abc import Mapping
from copy import deepcopy
from pathlib import Path

import numpy as np
import torch
from sklearn.utils import check_random_state
from skorch import NeuralNet
from skorch.callbacks import Callback, EarlyStopping
from skorch.dataset import get_len
from skorch.hf import AccelerateMixin
from skorch.utils import to_tensor

from .nn._dropout import Dropout
from .nn.sparse import SparseRows

__all__ = [
    "TORCH_LOCK",
    "AcceleratedNet",
    "EpochProgress",
    "FiniteLossGuard",
    "Net",
    "ResumeEarlyStopping",
    "TrainingDivergedError",
    "atomic_write",
    "draw_seed",
    "early_stopping_of",
    "error_line",
    "first_item",
    "out_of_memory_as",
    "torch_seed",
    "training_loss",
    "validation_loss",
]

#: Seeds are drawn in [0, SEED_BOUND): a valid seed for numpy, torch and every int32 API.
SEED_BOUND = np.iinfo(np.int32).max


class TrainingDivergedError(RuntimeError):
    """Raised when training diverges: a non-finite loss, or a loss that ends far above its start."""


def _silent(*args, **kwargs):
    """A sink that prints nothing (module-level so fitted nets pickle)."""


def first_item(batch):
    """``collate_fn`` for datasets whose items already are whole batches (``batch_size=1``)."""
    return batch[0]


def draw_seed(random_state) -> int:
    """One integer seed in ``[0, 2**31 - 1)`` from an sklearn ``random_state``."""
    try:
        rng = check_random_state(random_state)
    except ValueError as exc:
        raise ValueError(f"'random_state' must be None, an int in [0, 2**32 - 1] or a "
                         f"numpy RandomState; got {random_state!r}.") from exc
    return int(rng.randint(SEED_BOUND))


def derive_seed(seed: int, offset: int) -> int:
    """A second seed derived from ``seed``, kept inside the valid range."""
    return int((int(seed) + int(offset)) % SEED_BOUND)


def is_out_of_memory(exc):
    """Whether ``exc`` is torch running out of memory: CUDA's error, or the CPU allocator's
    ``RuntimeError`` (which has no class of its own)."""
    text = str(exc)
    return isinstance(exc, torch.cuda.OutOfMemoryError) or (
        isinstance(exc, RuntimeError)
        and ("can't allocate memory" in text or "not enough memory" in text))


def error_line(exc):
    """The first line of an exception's message (its type's name when it has none)."""
    return (str(exc).splitlines() or [type(exc).__name__])[0]


@contextlib.contextmanager
def out_of_memory_as(message):
    """Turn torch running out of memory in the block (CUDA or the CPU) into a
    :class:`MemoryError` whose text is ``message(exc)``: the parameters to lower."""
    try:
        yield
    except RuntimeError as exc:
        if not is_out_of_memory(exc):
            raise
        raise MemoryError(message(exc)) from exc


#: Held by the blocks that use torch's process-wide state: seeded sections
#: (:func:`torch_seed`: training, Monte Carlo sampling) and inference (the estimators'
#: ``_inference``, which switches a shared network between eval and train mode and sets its
#: dropout masks). torch has one random generator per process, which ``fork_rng`` saves and
#: restores, and ``nn.Dropout`` takes no generator of its own; two threads in such blocks at
#: once would draw from one stream and restore it out of order. Such blocks of different
#: threads therefore run one at a time; re-entrant, because sampling nests inference inside
#: a seeded section and fit nests both. Processes (joblib's loky, Dask's worker processes)
#: each have their own generator and run in parallel.
TORCH_LOCK = threading.RLock()


@contextlib.contextmanager
def torch_seed(seed: int, device: str = "cpu"):
    """Run a block with torch's RNG seeded to ``seed``, restoring the caller's RNG afterwards.

    The block holds :data:`TORCH_LOCK`: seeded blocks of different threads run one at a time,
    so each draws the stream of its own seed.
    """
    devices = []
    if str(device).startswith("cuda") and torch.cuda.is_available():
        devices = [torch.device(device).index or 0]
    with TORCH_LOCK, torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        yield


def atomic_write(path, data: bytes):
    """Write ``data`` to ``path`` atomically: a temporary file of this writer, then a rename.

    Readers see the old file or the new one, never a partial one; two processes writing the
    same path each use their own temporary name, so neither removes the other's.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{uuid.uuid4().hex[:8]}.", suffix=".tmp",
                               dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class FiniteLossGuard(Callback):
    """Stop training with a clear error as soon as a batch loss is NaN or infinite."""

    def on_batch_end(self, net, batch=None, training=None, loss=None, **kwargs):
        if loss is None:
            return
        value = float(loss.detach()) if torch.is_tensor(loss) else float(loss)
        if not np.isfinite(value):
            phase = "training" if training else "validation"
            raise TrainingDivergedError(
                f"The {phase} loss became {value} at epoch {len(net.history)}. Lower 'lr' "
                f"(currently {net.lr}), raise 'weight_decay', or check the inputs for extreme "
                "values."
            )


def training_loss(net, X):
    """The mean loss of the training batches of ``X``, without dropout (skorch's
    ``validation_step``: eval mode, no gradients), the module's mode restored after."""
    training = net.module_.training
    try:
        losses = [float(net.validation_step(batch)["loss"])
                  for batch in net.get_iterator(net.get_dataset(X), training=False)]
    finally:
        net.module_.train(training)
    return sum(losses) / max(len(losses), 1)


def early_stopping_of(net):
    """The net's first :class:`~skorch.callbacks.EarlyStopping` (the estimator's own, which
    its callbacks list before the user's), or None."""
    return next((cb for _, cb in getattr(net, "callbacks_", ()) if isinstance(cb, EarlyStopping)),
                None)


def validation_loss(net, dataset_valid):
    """The net's loss on ``dataset_valid`` (no update), weighted by batch size as skorch's
    epoch ``valid_loss``."""
    total = count = 0.0
    for batch in net.get_iterator(dataset_valid, training=False):
        n = get_len(batch[0])
        total += float(net.validation_step(batch)["loss"]) * n
        count += n
    return total / count


class ResumeEarlyStopping(Callback):
    """Offer early stopping the weights a training call starts from, as its epoch
    ``best_epoch``, scored before the first update.

    A warm start or ``partial_fit`` continues from the weights the previous call ended on,
    which early stopping (``load_best``) had set to its best epoch. skorch's
    :class:`~skorch.callbacks.EarlyStopping` starts every call afresh, so a call's last
    epoch is kept even where it is worse than the weights the call started from. Here
    those weights are scored on *this call's* validation rows (``measure(net,
    dataset_valid)``, the monitored score) and become the score to beat: the call ends on
    its best epoch or, where none beats them, on the weights it started from. With the same
    rows (a warm start on the same data and seed) that score is the previous best's, so the
    fit ends on the best weights of all calls; on a stream, each call compares on its own
    rows (a score measured on earlier calls' rows may be one no epoch on these rows can
    reach, which would freeze the weights). The first such callback to offer the start
    (the net's callbacks in order) takes precedence. A score that is not finite (no row
    to score, e.g. none labelled) offers nothing: early stopping starts afresh.
    """

    def __init__(self, monitor, best_epoch, measure):
        self.monitor = monitor
        self.best_epoch = best_epoch
        self.measure = measure

    def on_train_begin(self, net, **kwargs):
        self.pending_ = True  # early stopping resets itself here, in any callback order
        self.stopper_ = None

    def on_epoch_begin(self, net, dataset_valid=None, **kwargs):
        if not getattr(self, "pending_", False):
            return
        self.pending_ = False
        stopper = early_stopping_of(net)
        if (stopper is None or stopper.monitor != self.monitor or not stopper.load_best
                or stopper.best_model_weights_ is not None):
            return
        if dataset_valid is None or len(dataset_valid) == 0:
            return
        score = self.measure(net, dataset_valid)
        if not np.isfinite(score):
            return
        stopper.dynamic_threshold_ = stopper._calc_new_threshold(score)
        stopper.best_model_weights_ = deepcopy(net.module_.state_dict())
        stopper.best_epoch_ = self.best_epoch
        self.stopper_ = stopper


class StartAsEpochZero(ResumeEarlyStopping):
    """Offer the network as it starts to early stopping, as an epoch 0
    (:class:`ResumeEarlyStopping` of the validation loss).

    When no epoch beats the start's validation loss, early stopping restores the starting
    weights, and the net records it (``start_kept_``). For a network that starts at a
    fitted solution (the Flowformer's ridge skip with a zero encoder head), training can
    then only keep or improve the start's validation loss.
    """

    def __init__(self):
        super().__init__("valid_loss", 0, validation_loss)

    def on_train_end(self, net, **kwargs):
        # early stopping's best epoch stays 0 when no epoch beat the start: the start is kept
        stopper = getattr(self, "stopper_", None)
        net.start_kept_ = stopper is not None and stopper.best_epoch_ == 0
        self.stopper_ = None


class EpochProgress(Callback):
    """One tqdm bar per training call, over its epochs, with the latest losses in its postfix.

    Set ``total`` (the epochs of the call) and ``desc`` before each training call; the bar is
    closed at the end of training and not kept (nets pickle without it).
    """

    def __init__(self, total=None, desc=None):
        self.total = total
        self.desc = desc

    def on_train_begin(self, net, **kwargs):
        from tqdm.auto import tqdm

        self.bar_ = tqdm(total=self.total, desc=self.desc, unit="epoch", leave=True)

    def on_epoch_end(self, net, **kwargs):
        row = net.history[-1]
        shown = {k: f"{row[k]:.4g}" for k in ("train_loss", "valid_loss", "valid_acc")
                 if k in row}
        self.bar_.set_postfix(shown, refresh=False)
        self.bar_.update(1)

    def on_train_end(self, net, **kwargs):
        bar = self.__dict__.pop("bar_", None)
        if bar is not None:
            bar.close()


class Net(NeuralNet):
    """skorch's ``NeuralNet`` that pickles its network once and reports interruptions.

    The net is built around a module instance, so the ``module`` parameter is ``module_``
    itself; skorch stores ``module_`` in the state it loads with CUDA tensors mapped to the
    CPU on a machine without CUDA, but would pickle ``module`` plainly (and twice the size),
    which no machine without CUDA can load. The parameter is restored from ``module_``.

    skorch ends training quietly on ``KeyboardInterrupt`` (and still runs ``on_train_end``,
    so early stopping restores the best weights); ``interrupted_`` records the epoch at which
    that happened (``None``: the last call ran to its end), so callers can say so.
    """

    interrupted_ = None

    #: whether the last training call ended on the weights it started from
    #: (:class:`StartAsEpochZero`: no epoch beat them on the validation rows)
    start_kept_ = False

    #: torch dtype for autocast in training and evaluation steps, or None
    autocast_dtype = None

    def infer(self, x, **fit_params):
        if self.autocast_dtype is None:
            return self._infer(x, **fit_params)
        device = torch.device(self.device or "cpu").type
        with torch.autocast(device, dtype=self.autocast_dtype):
            out = self._infer(x, **fit_params)
        return out.float() if torch.is_tensor(out) else out  # the loss runs in float32

    def _infer(self, x, **fit_params):
        """skorch's ``infer``, with :class:`~skdiff.nn.SparseRows` among the values
        of a dict input passed to the module as they are (on the net's device): skorch's
        ``to_tensor`` converts tensors, arrays and scipy matrices only."""
        if not (isinstance(x, Mapping) and
                any(isinstance(v, SparseRows) for v in x.values())):
            return super().infer(x, **fit_params)
        x = {k: (v if self.device is None else v.to(self.device))
             if isinstance(v, SparseRows) else to_tensor(v, device=self.device)
             for k, v in x.items()}
        return self.module_(**self._merge_x_and_fit_params(x, fit_params))

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        self.interrupted_ = None
        try:
            return super().fit_loop(X, y, epochs=epochs, **fit_params)
        except KeyboardInterrupt:
            # skorch's EarlyStopping ends training by raising KeyboardInterrupt too
            stopped = any(isinstance(cb, EarlyStopping) and cb.misses_ >= cb.patience
                          for _, cb in self.callbacks_)
            if not stopped:
                self.interrupted_ = len(self.history)
            raise

    def __getstate__(self):
        state = super().__getstate__()
        if "module_" in self.__dict__ and state.get("module") is self.module_:
            del state["module"]
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        if "module" not in self.__dict__:
            self.module = self.module_


class AcceleratedNet(AccelerateMixin, Net):
    """:class:`Net` trained through Hugging Face Accelerate (skorch's ``AccelerateMixin``):
    data-parallel training over processes and the accelerator's mixed precision.

    Training batches are sharded over the processes (each trains on its own batches and
    the gradients are averaged); validation is not: every process evaluates all validation
    batches with the same weights, so all record the same validation scores and early
    stopping ends training on the same epoch everywhere (with sharded batches each process
    would score its own share and could stop alone, leaving the others waiting). The epoch
    table is printed by the main process only, and only with ``verbose``. A continued fit
    (warm start, ``partial_fit``) wraps the network again for the processes, which skorch
    unwraps at the end of each training call so the net pickles; a pickled net loads on the
    device the weights are on.
    """

    def _initialize_callbacks(self):
        if self.callbacks__print_log__sink == "auto":  # skorch's sink ignores verbose
            self.callbacks__print_log__sink = self.accelerator.print if self.verbose else \
                _silent
        return super()._initialize_callbacks()

    def _initialize_accelerator(self):
        # a criterion without trainable parameters (all of skdiff's losses) is not
        # prepared: DistributedDataParallel refuses a module with nothing to synchronise
        criteria = self._criteria
        self._criteria = [name for name in criteria if any(
            p.requires_grad for p in getattr(getattr(self, name + "_"), "parameters",
                                             list)())]
        try:
            return super()._initialize_accelerator()
        finally:
            self._criteria = criteria

    def get_iterator(self, dataset, training=False):
        if training:
            return super().get_iterator(dataset, training=True)
        return Net.get_iterator(self, dataset, training=False)  # not sharded

    def validation_step(self, batch, **fit_params):
        from accelerate.utils import send_to_device

        return super().validation_step(send_to_device(batch, self.accelerator.device),
                                       **fit_params)

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        super().on_train_begin(net, X=X, y=y, **kwargs)
        if self.accelerator.device_placement:
            self.device = None  # a net loaded from a pickle has its device set
        if not self._wrapped_with_accelerator:
            from accelerate.optimizer import AcceleratedOptimizer

            for name in self._optimizers:  # prepared again below, not wrapped twice
                optimizer = getattr(self, name + "_")
                if isinstance(optimizer, AcceleratedOptimizer):
                    setattr(self, name + "_", optimizer.optimizer)
            self._initialize_accelerator()

    def notify(self, method_name, **cb_kwargs):
        if method_name != "on_train_end":
            return super().notify(method_name, **cb_kwargs)
        # the callbacks first: early stopping restores its best weights, saved from the
        # wrapped network, before the net unwraps it
        for _, cb in self.callbacks_:
            cb.on_train_end(self, **cb_kwargs)
        self.on_train_end(self, **cb_kwargs)

    def __getstate__(self):
        state = super().__getstate__()
        if state.get("device") is None:
            # the device skorch maps the saved tensors to when loading (the CPU when the
            # accelerator's device type is missing there): the loaded net's device
            state["device"] = torch.device(self.accelerator.device).type
        return state


# float64 inference copies of fitted networks, keyed by the network (see float64_copy)
_FLOAT64_COPIES = weakref.WeakKeyDictionary()


def float64_copy(module):
    """A float64 copy of the network ``module`` for inference, with its train/eval flags.

    In float32, matrix products round differently for different batch sizes (~1e-7), so a
    row's prediction would depend on which other rows share its call. The copy is cached per
    network (outside the estimator: predict leaves its ``__dict__`` unchanged, pickles do not
    carry it) until the weights change (any in-place update bumps a parameter's version), so
    Monte Carlo sampling does not copy the network per sample.
    """
    versions = tuple(p._version for p in module.parameters())
    cached = _FLOAT64_COPIES.get(module)
    if cached is None or cached[0] != versions:
        cached = _FLOAT64_COPIES[module] = (versions, deepcopy(module).double())
    for m64, m in zip(cached[1].modules(), module.modules()):
        m64.training = m.training  # eval, or MC dropout's train-mode dropout layers
        if isinstance(m, Dropout):
            m64.masks = m.masks  # the Monte Carlo draw's shared masks, or None
    return cached[1]
