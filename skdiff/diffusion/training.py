"""Training a Neural Diffusion Process prior on functions drawn from Gaussian processes.

The training runs on skorch: a :class:`GPFunctionBatches` dataset whose items are whole batches
of freshly drawn (or pooled) functions, already noised to stratified levels ``t`` (so the module
is the plain noise model and the target is the noise), a masked L1/L2 criterion
(:class:`NoisePredictionLoss`), and callbacks for the learning-rate schedule
(:class:`~skorch.callbacks.LRScheduler`, linear warm-up then cosine decay), gradient clipping
(:class:`~skorch.callbacks.GradientNormClipping`) and an exponential moving average of the
weights (:class:`EMA`), whose weights are the ones used for sampling.

:func:`train_prior` runs the whole procedure; an estimator that trains through
``NeuralEstimatorBase._train`` can reuse the pieces instead: ``_train(module,
GPFunctionBatches(...), criterion=NoisePredictionLoss, batch_size=1, collate_fn=first_item,
shuffle=False, extra_callbacks=prior_callbacks(config, total_steps))``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass

import numpy as np
import torch
from skorch import NeuralNet
from skorch.callbacks import Callback, GradientNormClipping, LRScheduler, ProgressBar
from torch.utils.data import Dataset

from .._base import _FiniteLossGuard, first_item, torch_seed
from ..datasets._gp import KERNELS, make_gp_functions
from ..nn.ndp import NDPNoiseModel
from .schedule import NoiseSchedule

__all__ = [
    "EMA",
    "GPFunctionBatches",
    "NoisePredictionLoss",
    "PriorConfig",
    "prior_callbacks",
    "stratified_timesteps",
    "train_prior",
    "warmup_cosine",
]


@dataclass(frozen=True)
class PriorConfig:
    """Everything that defines a pretrained NDP prior: the data, the network, the diffusion.

    Parameters
    ----------
    kernel : str or tuple of str, default=("se", "matern12", "matern32", "matern52")
        GP kernel(s) of the training functions (a tuple mixes them uniformly).
    lengthscale : float or tuple, default=("lognormal", log(0.45), 0.6)
        Lengthscale or its distribution (see :func:`~skdiff.datasets.make_gp_functions`).
    scale_lengthscale_with_dims : bool, default=True
        Multiply the lengthscale by :math:`\\sqrt{D}` (the paper's :math:`0.25\\sqrt{D}`), so
        functions keep their wiggliness along the diagonal as D grows.
    variance : float, default=1.0
    noise : float, default=0.0025
        Observation-noise variance, added independently of f.
    domain : (float, float), default=(-2.0, 2.0)
    n_dims : int, default=1
        Input dimension the prior is trained for.
    n_points : int or (int, int) or None, default=None
        Points per training function; ``None`` uses the paper's ``50 + 10 D``.
    hidden_dim, n_layers, n_heads : int, default=64, 4, 8
        Noise-model size (:class:`~skdiff.nn.NDPNoiseModel`).
    timesteps, beta_start, beta_end : default=500, 3e-4, 0.5
        The official cosine-shaped schedule (:meth:`NoiseSchedule.official`).
    loss : {"l1", "l2"}, default="l1"
    batch_size : int, default=32
        Functions per step.
    lr, init_lr, end_lr : float, default=1e-3, 2e-5, 1e-5
        Peak, start-of-warm-up and end-of-decay learning rates (official values).
    warmup_steps : int, default=500
    ema_decay : float, default=0.995
    grad_clip : float, default=1.0
    """

    kernel: str | tuple = ("se", "matern12", "matern32", "matern52")
    lengthscale: float | tuple = ("lognormal", math.log(0.45), 0.6)
    scale_lengthscale_with_dims: bool = True
    variance: float = 1.0
    noise: float = 0.0025
    domain: tuple = (-2.0, 2.0)
    n_dims: int = 1
    n_points: int | tuple | None = None
    hidden_dim: int = 64
    n_layers: int = 4
    n_heads: int = 8
    timesteps: int = 500
    beta_start: float = 3e-4
    beta_end: float = 0.5
    loss: str = "l1"
    batch_size: int = 32
    lr: float = 1e-3
    init_lr: float = 2e-5
    end_lr: float = 1e-5
    warmup_steps: int = 500
    ema_decay: float = 0.995
    grad_clip: float = 1.0

    def __post_init__(self):
        kernels = (self.kernel,) if isinstance(self.kernel, str) else tuple(self.kernel)
        if not kernels or any(k not in KERNELS for k in kernels):
            raise ValueError(f"'kernel' must be one of {KERNELS} or a tuple of them; got "
                             f"{self.kernel!r}.")
        if self.loss not in ("l1", "l2"):
            raise ValueError(f"'loss' must be 'l1' or 'l2'; got {self.loss!r}.")
        if not (isinstance(self.n_dims, numbers.Integral) and self.n_dims >= 1):
            raise ValueError(f"'n_dims' must be an int >= 1; got {self.n_dims!r}.")
        if not 0 <= self.ema_decay < 1:
            raise ValueError(f"'ema_decay' must lie in [0, 1); got {self.ema_decay!r}.")

    # JSON round trip (tuples become lists in JSON)
    def to_dict(self):
        return {k: (list(v) if isinstance(v, tuple) else v)
                for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, d):
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"Unknown PriorConfig fields {sorted(unknown)}.")
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()})

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    @property
    def points(self):
        """Points per training function as a (low, high) pair."""
        if self.n_points is None:
            return (50 + 10 * self.n_dims,) * 2
        if isinstance(self.n_points, numbers.Integral):
            return (int(self.n_points),) * 2
        return tuple(int(v) for v in self.n_points)

    def schedule(self):
        """The :class:`NoiseSchedule` of this prior."""
        return NoiseSchedule.official(self.timesteps, self.beta_start, self.beta_end)

    def network(self):
        """A freshly initialised noise model of this prior's size."""
        return NDPNoiseModel(self.hidden_dim, self.n_layers, self.n_heads)

    def lengthscale_sampler(self):
        """Lengthscale argument for :func:`make_gp_functions` (with the sqrt(D) scaling)."""
        ls = self.lengthscale
        if not self.scale_lengthscale_with_dims or self.n_dims == 1:
            return ls
        scale = math.sqrt(self.n_dims)
        if isinstance(ls, numbers.Real):
            return float(ls) * scale
        kind, a, b = ls
        if kind == "lognormal":
            return (kind, a + math.log(scale), b)
        return (kind, a * scale, b * scale)

    def draw_functions(self, n_functions, random_state):
        """``n_functions`` training functions of this prior (a :func:`make_gp_functions` Bunch)."""
        return make_gp_functions(
            n_functions, self.points, self.n_dims, kernel=list(
                (self.kernel,) if isinstance(self.kernel, str) else self.kernel),
            lengthscale=self.lengthscale_sampler(), variance=self.variance, noise=self.noise,
            domain=self.domain, random_state=random_state,
        )


def stratified_timesteps(batch_size, T, rng):
    """Low-discrepancy diffusion steps: one uniform draw in each of ``batch_size`` equal strata of
    ``[0, T)`` (official ``process.loss``), which lowers the variance of the loss estimate."""
    u = rng.uniform(0.0, T / batch_size, size=batch_size)
    t = (u + (T / batch_size) * np.arange(batch_size)).astype(np.int64)
    return np.minimum(t, T - 1)


class GPFunctionBatches(Dataset):
    """Dataset whose items are whole noised training batches (use ``batch_size=1``).

    Item ``i`` is ``(X, target)`` with ``X = {"x": [b, n, d], "y_t": [b, n, 1], "t": [b],
    "mask": [b, n]}`` and ``target`` of shape [b, n, 2] holding the noise ``eps`` and a weight
    (1 for real points, 0 for padding): :math:`y_t = \\sqrt{\\bar\\alpha_t} y_0 +
    \\sqrt{1-\\bar\\alpha_t}\\,\\epsilon` with stratified ``t`` (see :func:`stratified_timesteps`).

    Parameters
    ----------
    config : PriorConfig or sequence of PriorConfig
        A sequence (e.g. the same prior for ``n_dims`` 2 and 3) draws each batch from one of
        them, chosen uniformly: one dimension-agnostic network trained on several D.
    n_batches : int
        Items per epoch (= optimisation steps per epoch).
    pool_size : int or None, default=None
        ``None`` draws fresh functions for every item; an int draws a fixed pool of that many
        functions once and samples batches from it (t and eps stay fresh).
    random_state : int, default=0
        Seed. Items are drawn from a counter, so consecutive epochs see new functions and two
        datasets with the same seed produce the same sequence of batches.
    """

    def __init__(self, config, n_batches, *, pool_size=None, random_state=0):
        self.configs = [config] if isinstance(config, PriorConfig) else list(config)
        self.config = self.configs[0]
        self.n_batches = int(n_batches)
        self.pool_size = pool_size
        self.random_state = int(random_state)
        self.sqrt_ab = self.config.schedule().sqrt_alpha_bars.double().numpy()
        self.calls = 0
        self.pool = None
        if pool_size is not None:
            if len(self.configs) > 1:
                raise ValueError("A fixed pool ('pool_size') needs a single configuration.")
            self.pool = self.config.draw_functions(int(pool_size), self.random_state)

    def __len__(self):
        return self.n_batches

    def __getitem__(self, index):
        # The counter (not ``index``) seeds the draw: epochs see new data, runs are repeatable.
        rng = np.random.RandomState(np.random.SeedSequence(
            [self.random_state, self.calls]).generate_state(1)[0])
        self.calls += 1
        b = self.config.batch_size
        if self.pool is None:
            cfg = self.configs[rng.randint(len(self.configs))] if len(self.configs) > 1 \
                else self.config
            data = cfg.draw_functions(b, rng)
            X, y0, mask = data.X, data.y, data.mask
        else:
            idx = rng.randint(len(self.pool.y), size=b)
            X, y0, mask = self.pool.X[idx], self.pool.y[idx], self.pool.mask[idx]
        t = stratified_timesteps(b, len(self.sqrt_ab), rng)
        eps = rng.standard_normal(y0.shape)
        a = self.sqrt_ab[t][:, None]
        y_t = a * y0 + np.sqrt(1.0 - a**2) * eps
        weight = (~mask).astype(np.float64)
        f32 = torch.float32
        feats = {
            "x": torch.as_tensor(X, dtype=f32),
            "y_t": torch.as_tensor(y_t[..., None], dtype=f32),
            "t": torch.as_tensor(t, dtype=torch.long),
            "mask": torch.as_tensor(mask),
        }
        target = torch.as_tensor(np.stack([eps * weight, weight], axis=-1), dtype=f32)
        return feats, target


class NoisePredictionLoss(torch.nn.Module):
    """Masked noise-prediction loss: mean over functions of the mean over real points of
    :math:`|\\hat\\epsilon - \\epsilon|` (``"l1"``, the paper's) or its square (``"l2"``).

    ``forward(eps_hat [b, n, 1], target [b, n, 2])`` with ``target[..., 0]`` the noise and
    ``target[..., 1]`` the weight (0 for padding).
    """

    def __init__(self, loss="l1"):
        super().__init__()
        if loss not in ("l1", "l2"):
            raise ValueError(f"'loss' must be 'l1' or 'l2'; got {loss!r}.")
        self.loss = loss

    def forward(self, eps_hat, target):
        eps, w = target[..., 0], target[..., 1]
        err = eps_hat[..., 0] - eps
        err = err.abs() if self.loss == "l1" else err**2
        per_fn = (err * w).sum(dim=1) / w.sum(dim=1).clamp_min(1.0)
        return per_fn.mean()


def warmup_cosine(total_steps, warmup_steps, peak_lr, init_lr, end_lr):
    """Learning-rate multiplier of ``optax.warmup_cosine_decay_schedule`` (relative to
    ``peak_lr``): linear from ``init_lr`` to ``peak_lr`` over ``warmup_steps``, then cosine decay
    to ``end_lr`` at ``total_steps``."""
    warmup_steps = max(0, min(int(warmup_steps), int(total_steps)))
    decay = max(1, int(total_steps) - warmup_steps)

    def factor(step):
        if step < warmup_steps:
            lr = init_lr + (peak_lr - init_lr) * step / warmup_steps
        else:
            frac = min(1.0, (step - warmup_steps) / decay)
            lr = end_lr + 0.5 * (peak_lr - end_lr) * (1.0 + math.cos(math.pi * frac))
        return lr / peak_lr

    return factor


class EMA(Callback):
    """Exponential moving average of the module's floating-point weights.

    After every training batch, :math:`\\bar\\theta \\leftarrow \\rho\\,\\bar\\theta +
    (1-\\rho)\\,\\theta` with :math:`\\rho` = ``decay`` (official ``ema_update``; the average
    starts at the initial weights). ``ema_state_`` is a state dict (CPU copies via
    :meth:`state_dict`) for sampling; the trained weights themselves are left untouched.
    """

    def __init__(self, decay=0.995):
        self.decay = decay

    def initialize(self):
        self.ema_state_ = None
        self.n_updates_ = 0
        return self

    def on_train_begin(self, net, **kwargs):
        if getattr(self, "ema_state_", None) is None:
            self.ema_state_ = {k: v.detach().clone() for k, v in
                               net.module_.state_dict().items() if v.is_floating_point()}
            self.n_updates_ = 0

    def on_batch_end(self, net, batch=None, training=None, **kwargs):
        if not training:
            return
        with torch.no_grad():
            current = net.module_.state_dict()
            for k, avg in self.ema_state_.items():
                avg.mul_(self.decay).add_(current[k].detach(), alpha=1.0 - self.decay)
        self.n_updates_ += 1

    def state_dict(self):
        """The averaged weights as CPU tensors (non-float entries from the live module)."""
        return {k: v.detach().cpu().clone() for k, v in self.ema_state_.items()}


def prior_callbacks(config, total_steps, *, verbose=0):
    """The named skorch callbacks of NDP training: LR warm-up + cosine decay (per batch),
    gradient-norm clipping and EMA. Returns a list of ``(name, callback)``."""
    factor = warmup_cosine(total_steps, config.warmup_steps, config.lr, config.init_lr,
                           config.end_lr)
    cbs = [
        ("lr_schedule", LRScheduler(policy=torch.optim.lr_scheduler.LambdaLR,
                                    lr_lambda=factor, step_every="batch")),
        ("grad_clip", GradientNormClipping(gradient_clip_value=config.grad_clip)),
        ("ema", EMA(config.ema_decay)),
    ]
    if verbose > 1:
        cbs.append(("progress_bar", ProgressBar()))
    return cbs


def train_prior(config=None, *, max_epochs=20, steps_per_epoch=250, pool_size=None,
                module=None, device="cpu", random_state=0, verbose=0, callbacks=None):
    """Train an NDP noise model on functions from ``config``'s GP prior.

    ε-prediction with stratified t, the L1 (or L2) loss, Adam with gradient clipping at
    ``config.grad_clip``, linear warm-up then cosine decay of the learning rate, and an EMA of
    the weights (Dutordoir et al. 2023, §4 and App. C; official ``experiments/regression``).

    Parameters
    ----------
    config : PriorConfig or sequence of PriorConfig, default=None
        ``None`` uses ``PriorConfig()`` (the default "gp" prior in one dimension). A sequence
        trains one network on batches drawn from each in turn at random (e.g. several ``n_dims``);
        the first one sets the network and the optimisation settings.
    max_epochs : int, default=20
        Epochs; one epoch is ``steps_per_epoch`` optimisation steps (``config.batch_size``
        functions each), so the run has ``max_epochs * steps_per_epoch`` steps.
    steps_per_epoch : int, default=250
    pool_size : int or None, default=None
        ``None``: fresh functions every step; an int: a fixed pool of functions.
    module : NDPNoiseModel, default=None
        Start from this module (e.g. to continue training); ``None`` builds a fresh one.
    device : str, default="cpu"
    random_state : int, default=0
        Seeds the network initialisation and the data stream.
    verbose : int, default=0
        1 prints the per-epoch table (train loss, duration); 2 adds a progress bar.
    callbacks : list of skorch callbacks, default=None
        Extra callbacks (e.g. a checkpoint).

    Returns
    -------
    module : NDPNoiseModel
        The trained network (raw weights, train mode).
    ema_state : dict
        EMA weights (CPU state dict) to load for sampling.
    history : skorch.History
        Per-epoch ``train_loss`` (the mean over the epoch's steps) and per-batch losses.

    See Also
    --------
    skdiff.diffusion.load_prior : the shipped pretrained priors.

    Examples
    --------
    >>> from skdiff.diffusion import PriorConfig, train_prior
    >>> cfg = PriorConfig(kernel="se", lengthscale=0.5, n_points=16, hidden_dim=16,
    ...                   n_layers=1, n_heads=4, batch_size=8)
    >>> module, ema_state, history = train_prior(cfg, max_epochs=2, steps_per_epoch=5)
    >>> len(history), module.linear_output.weight.shape == ema_state["linear_output.weight"].shape
    (2, True)
    """
    config = PriorConfig() if config is None else config
    configs = [config] if isinstance(config, PriorConfig) else list(config)
    config = configs[0]
    total = int(max_epochs) * int(steps_per_epoch)
    seed = int(random_state)
    dataset = GPFunctionBatches(configs, steps_per_epoch, pool_size=pool_size, random_state=seed)
    with torch_seed(seed, device):
        if module is None:
            module = config.network()
    cbs = [("finite_loss", _FiniteLossGuard())]
    cbs += prior_callbacks(config, total, verbose=verbose)
    cbs += [cb if isinstance(cb, tuple) else (f"user_{i}_{type(cb).__name__}", cb)
            for i, cb in enumerate(callbacks or ())]
    net = NeuralNet(
        module=module,
        criterion=NoisePredictionLoss,
        criterion__loss=config.loss,
        optimizer=torch.optim.Adam,
        lr=config.lr,
        max_epochs=int(max_epochs),
        batch_size=1,
        iterator_train__collate_fn=first_item,
        iterator_train__shuffle=False,
        train_split=None,
        callbacks=cbs,
        device=device,
        verbose=int(verbose),
    )
    with torch_seed(seed, device):
        net.fit(dataset, None)
    ema = dict(net.callbacks_)["ema"]
    return net.module_, ema.state_dict(), net.history
