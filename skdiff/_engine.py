"""The training engine shared by the estimators and by NDP prior training.

Low-level pieces with no scikit-learn estimator in them, imported by the estimator layer
(:mod:`skdiff._base`) and by :mod:`skdiff.diffusion.training` alike:

* :class:`Net`, skorch's :class:`~skorch.NeuralNet` that pickles its network once, inside the
  device-mapped state skorch loads on a machine without CUDA;
* :class:`FiniteLossGuard`, a callback that stops training on a non-finite loss;
* :func:`torch_seed` and :func:`draw_seed`, seeding that leaves the caller's RNG untouched;
* :func:`atomic_write`, the write-then-rename used for every file the package writes;
* :func:`first_item`, the ``collate_fn`` of datasets whose items are whole batches.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from pathlib import Path

import numpy as np
import torch
from sklearn.utils import check_random_state
from skorch import NeuralNet
from skorch.callbacks import Callback, EarlyStopping
from skorch.hf import AccelerateMixin

__all__ = [
    "AcceleratedNet",
    "EpochProgress",
    "FiniteLossGuard",
    "Net",
    "TrainingDivergedError",
    "atomic_write",
    "draw_seed",
    "first_item",
    "torch_seed",
]

#: Seeds are drawn in [0, SEED_BOUND): a valid seed for numpy, torch and every int32 API.
SEED_BOUND = np.iinfo(np.int32).max


class TrainingDivergedError(RuntimeError):
    """Raised when training diverges: a non-finite loss, or a loss that ends far above its start."""


def first_item(batch):
    """``collate_fn`` for datasets whose items already are whole batches (``batch_size=1``)."""
    return batch[0]


def draw_seed(random_state) -> int:
    """One integer seed in ``[0, 2**31 - 1)`` from an sklearn ``random_state``."""
    return int(check_random_state(random_state).randint(SEED_BOUND))


def derive_seed(seed: int, offset: int) -> int:
    """A second seed derived from ``seed``, kept inside the valid range."""
    return int((int(seed) + int(offset)) % SEED_BOUND)


@contextlib.contextmanager
def torch_seed(seed: int, device: str = "cpu"):
    """Run a block with torch's RNG seeded to ``seed``, restoring the caller's RNG afterwards."""
    devices = []
    if str(device).startswith("cuda") and torch.cuda.is_available():
        devices = [torch.device(device).index or 0]
    with torch.random.fork_rng(devices=devices):
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

    #: torch dtype for autocast in training and evaluation steps, or None
    autocast_dtype = None

    def infer(self, x, **fit_params):
        if self.autocast_dtype is None:
            return super().infer(x, **fit_params)
        device = torch.device(self.device or "cpu").type
        with torch.autocast(device, dtype=self.autocast_dtype):
            out = super().infer(x, **fit_params)
        return out.float() if torch.is_tensor(out) else out  # the loss runs in float32

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
    data-parallel training over processes and the accelerator's mixed precision."""
