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
import hashlib
import io
import json
import math
import numbers
import os
import time
from dataclasses import dataclass

import numpy as np
import torch
from skorch.callbacks import Callback, GradientNormClipping, ProgressBar
from skorch.history import History
from torch.utils.data import Dataset

from .._checks import fit_scale
from .._docs import fill_doc, parse_docs
from .._engine import FiniteLossGuard, Net, atomic_write, first_item, torch_seed
from ..datasets._gp import KERNELS, check_anisotropic, gp_kernel, make_gp_functions
from ..nn.ndp import NDPNoiseModel
from .schedule import NoiseSchedule

__all__ = [
    "EMA",
    "FunctionFamilyBatches",
    "GPFunctionBatches",
    "NoisePredictionLoss",
    "PriorConfig",
    "prior_callbacks",
    "stratified_timesteps",
    "train_prior",
    "warmup_cosine",
]


#: Parameters of :meth:`PriorConfig.context_components` and ``context_covariance``.
CONTEXT_DOCS = parse_docs("""
X : ndarray of shape (n, n_dims)
    Inputs in the prior's domain, the ``len(y)`` context inputs first.
y : ndarray of shape (n_context,)
    The context's values on the prior's scale.
n_quadrature : int
    Quantiles of a lengthscale distribution averaged over.
""")
CONTEXT_DOCS["context_inputs"] = ["X", "y", "n_quadrature"]


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
    anisotropic : bool, default=False
        Draw each input dimension's lengthscale independently from ``lengthscale`` (an
        anisotropic, ARD kernel) instead of one lengthscale per function: a prior for
        functions that vary faster along some inputs than along others. Not with the
        ``"periodic"`` kernel.
    variance : float, default=1.0
        Signal variance of the GP kernels (the functions' marginal variance before noise).
    noise : float, default=0.0025
        Observation-noise variance, added independently of f.
    domain : (float, float), default=(-2.0, 2.0)
        Interval, per input dimension, in which the training inputs are drawn uniformly;
        :class:`~skdiff.NDPRegressor` maps its inputs into it.
    n_dims : int, default=1
        Input dimension the prior is trained for.
    n_points : int or (int, int) or None, default=None
        Points per training function; ``None`` uses the paper's ``50 + 10 D``.
    hidden_dim, n_layers, n_heads : int, default=64, 4, 8
        Noise-model size (:class:`~skdiff.nn.NDPNoiseModel`).
    timesteps, beta_start, beta_end : int, float, float, default=500, 3e-4, 0.5
        The official cosine-shaped schedule (:meth:`NoiseSchedule.official`).
    loss : {"l1", "l2"}, default="l1"
        Error of the noise prediction: absolute (the official choice) or squared.
    batch_size : int, default=32
        Functions per step.
    lr, init_lr, end_lr : float, default=1e-3, 2e-5, 1e-5
        Peak, start-of-warm-up and end-of-decay learning rates (official values).
    warmup_steps : int, default=500
        Optimisation steps of the linear warm-up from ``init_lr`` to ``lr`` (at most the
        whole run); a cosine decay to ``end_lr`` follows.
    ema_decay : float in [0, 1), default=0.995
        Decay of the exponential moving average of the weights kept for sampling (per
        optimisation step).
    grad_clip : float, default=1.0
        Largest L2 norm of the gradient (over all weights); larger gradients are scaled
        down to it.
    x_bounds : tuple of (float, float) pairs or None, default=None
        Set for a prior trained on a family of functions (see :meth:`for_functions`): the
        region of the family's inputs, one ``(low, high)`` pair per input dimension, mapped
        affinely onto ``domain``. ``None``: a GP prior, whose inputs are mapped per call.
    y_loc, y_scale : float or None, default=None
        Set with ``x_bounds``: the family's pooled mean and standard deviation of ``y``, the
        units in which the prior was trained. :class:`~skdiff.NDPRegressor` standardises a
        context with them instead of with the context's own mean and standard deviation.
    """

    kernel: str | tuple = ("se", "matern12", "matern32", "matern52")
    lengthscale: float | tuple = ("lognormal", math.log(0.45), 0.6)
    scale_lengthscale_with_dims: bool = True
    anisotropic: bool = False
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
    x_bounds: tuple | None = None
    y_loc: float | None = None
    y_scale: float | None = None

    def __post_init__(self):
        if not self.kernels or any(k not in KERNELS for k in self.kernels):
            raise ValueError(f"'kernel' must be one of {KERNELS} or a tuple of them; got "
                             f"{self.kernel!r}.")
        if not isinstance(self.anisotropic, bool):
            raise ValueError(f"'anisotropic' must be True or False; got {self.anisotropic!r}.")
        check_anisotropic(self.anisotropic, self.kernels)
        if self.loss not in ("l1", "l2"):
            raise ValueError(f"'loss' must be 'l1' or 'l2'; got {self.loss!r}.")
        if not (isinstance(self.noise, numbers.Real) and math.isfinite(self.noise)
                and self.noise >= 0):
            raise ValueError(f"'noise' is an observation-noise variance, a finite number >= 0; "
                             f"got {self.noise!r}.")
        if not (isinstance(self.n_dims, numbers.Integral) and self.n_dims >= 1):
            raise ValueError(f"'n_dims' must be an int >= 1; got {self.n_dims!r}.")
        if not 0 <= self.ema_decay < 1:
            raise ValueError(f"'ema_decay' must lie in [0, 1); got {self.ema_decay!r}.")
        self._check_units()

    def _check_units(self):
        """The family's units: all three of ``x_bounds``, ``y_loc``, ``y_scale`` or none;
        ``x_bounds`` stored as a tuple of ``(low, high)`` float pairs (hashable, JSON-stable)."""
        units = (self.x_bounds, self.y_loc, self.y_scale)
        if all(u is None for u in units):
            return
        if any(u is None for u in units):
            raise ValueError(
                "'x_bounds', 'y_loc' and 'y_scale' describe the units of a family of functions "
                f"and are set together; got x_bounds={self.x_bounds!r}, y_loc={self.y_loc!r}, "
                f"y_scale={self.y_scale!r}. Use config.for_functions(functions) to set them.")
        b = np.asarray(self.x_bounds, dtype=np.float64)
        if b.shape != (self.n_dims, 2) or not np.isfinite(b).all() or \
                np.any(b[:, 1] <= b[:, 0]):
            raise ValueError(
                f"'x_bounds' must hold one finite (low, high) pair with low < high per input "
                f"dimension, shape ({self.n_dims}, 2); got {self.x_bounds!r}.")
        if not (math.isfinite(self.y_loc) and math.isfinite(self.y_scale) and self.y_scale > 0):
            raise ValueError(f"'y_loc' must be finite and 'y_scale' finite and > 0; got "
                             f"y_loc={self.y_loc!r}, y_scale={self.y_scale!r}.")
        object.__setattr__(self, "x_bounds", tuple(tuple(float(v) for v in p) for p in b))
        object.__setattr__(self, "y_loc", float(self.y_loc))
        object.__setattr__(self, "y_scale", float(self.y_scale))

    @property
    def from_functions(self):
        """Whether the prior was trained on a family of functions (it carries their units:
        ``x_bounds``, ``y_loc`` and ``y_scale``) rather than on GP draws."""
        return self.x_bounds is not None

    # JSON round trip (tuples become lists in JSON)
    def to_dict(self):
        """The configuration as a JSON-ready dict (tuples as lists).

        The units of a family (``x_bounds``, ``y_loc``, ``y_scale``) are left out when unset,
        and ``anisotropic`` when False, so a GP prior's dict (its manifest, its cache key)
        does not depend on them.

        Returns
        -------
        d : dict
            Field name -> value; :meth:`from_dict` reads it back.
        """
        d = {k: _as_lists(v) for k, v in dataclasses.asdict(self).items()}
        if not self.from_functions:
            for k in _UNIT_FIELDS:
                del d[k]
        if not self.anisotropic:  # the dicts (manifests, cache keys) of isotropic priors
            del d["anisotropic"]
        return d

    @classmethod
    def from_dict(cls, d):
        """The configuration written by :meth:`to_dict` (lists become tuples again).

        Parameters
        ----------
        d : dict
            Field name -> value; missing fields take their defaults, unknown ones are
            refused.

        Returns
        -------
        config : PriorConfig
            The configuration, validated.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"Unknown PriorConfig fields {sorted(unknown)}.")
        return cls(**{k: _as_tuples(v) for k, v in d.items()})

    def replace(self, **changes):
        """A copy with some fields changed (the configuration is immutable).

        Parameters
        ----------
        **changes
            New values of fields, by name; the copy is validated like a new configuration.

        Returns
        -------
        config : PriorConfig
            The changed copy.
        """
        return dataclasses.replace(self, **changes)

    def for_functions(self, functions, *, x_bounds=None):
        """This configuration fitted to a family of functions: their units and dimension.

        The copy has ``n_dims`` set to the functions' input dimension, ``noise`` to 0 (the
        functions carry their own observation noise), ``x_bounds`` to the region of the
        family's inputs (mapped onto ``domain``) and ``y_loc``, ``y_scale`` to the pooled
        mean and standard deviation of all their values. A configuration that carries units
        already keeps them, so fitting twice changes nothing and :func:`train_prior` trains
        in exactly the units that are saved with the weights.

        Parameters
        ----------
        functions : sequence of (X, y) pairs
            At least 2 functions; ``X`` of shape (n_i,) or (n_i, D), ``y`` of shape (n_i,),
            ``n_i >= 2`` finite points each, the same ``D`` for all; the ``n_i`` may differ.
        x_bounds : array-like of shape (2,) or (D, 2), default=None
            The ``(low, high)`` region of the inputs (one pair for every dimension, or one
            per dimension). ``None``: the smallest and largest input over all functions.

        Returns
        -------
        config : PriorConfig
            The fitted copy (``from_functions`` is true).

        Examples
        --------
        >>> import numpy as np
        >>> from skdiff.diffusion import PriorConfig
        >>> hours = np.arange(24.0)
        >>> days = [(hours, 10 + np.sin(hours / 4)), (hours[:12], 12 + np.cos(hours[:12]))]
        >>> cfg = PriorConfig().for_functions(days)
        >>> cfg.x_bounds, cfg.noise, round(cfg.y_loc, 2)
        (((0.0, 23.0),), 0.0, 10.66)
        """
        Xs, ys = check_functions(functions)
        n_dims = Xs[0].shape[1]
        if self.from_functions:
            if self.n_dims != n_dims:
                raise ValueError(
                    f"The configuration carries the units of a family of {self.n_dims}-D "
                    f"functions; 'functions' have {n_dims} input dimension(s). Fit a "
                    "configuration without units (x_bounds=None) to these functions.")
            if x_bounds is not None and \
                    not np.array_equal(checked_x_bounds(x_bounds, n_dims), self.x_bounds):
                raise ValueError(
                    f"'x_bounds'={x_bounds!r} conflicts with the configuration's own "
                    f"x_bounds={self.x_bounds!r}; pass x_bounds=None to keep the "
                    "configuration's, or start from one without units.")
            return self
        if x_bounds is None:
            X = np.concatenate(Xs)
            bounds = np.stack([X.min(0), X.max(0)], axis=1)
            flat = np.flatnonzero(bounds[:, 1] <= bounds[:, 0])
            if flat.size:
                raise ValueError(
                    f"Input dimension {int(flat[0])} of 'functions' takes the single value "
                    f"{float(bounds[flat[0], 0])!r} in every function, so its region cannot be "
                    "inferred; pass 'x_bounds' (low, high) pairs or drop that dimension.")
        else:
            bounds = checked_x_bounds(x_bounds, n_dims)
        loc, scale, constant = fit_scale(np.concatenate(ys)[:, None], name="the functions' y",
                                         return_constant=True)
        if constant[0]:
            raise ValueError("Every value of every function in 'functions' is the same; a "
                             "constant family has no shape to learn.")
        return self.replace(n_dims=int(n_dims), noise=0.0, x_bounds=bounds,
                            y_loc=float(loc[0]), y_scale=float(scale[0]))

    def family_map(self):
        """``(offset, scale)`` of the affine maps of a family's inputs and values onto the
        prior's: ``z = (x - offset_x) * scale_x`` and ``(y - y_loc) / y_scale``.

        Returns
        -------
        offset, scale : ndarray of shape (n_dims,)
            The input map (``x_bounds`` onto ``domain``).
        """
        if not self.from_functions:
            raise ValueError("This configuration carries no units (x_bounds is None); fit "
                             "it to a family with config.for_functions(functions).")
        b = np.asarray(self.x_bounds)
        return box_to_domain(b[:, 0], b[:, 1], self.domain)

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

    @property
    def kernels(self):
        """The kernel names this prior draws its functions from (uniformly), as a tuple."""
        return (self.kernel,) if isinstance(self.kernel, str) else tuple(self.kernel)

    def lengthscale_quantiles(self, n):
        """``n`` equally weighted quantiles of the lengthscale distribution (with the sqrt(D)
        scaling): the midpoints ``(i + 0.5) / n`` of its quantile function, or the one fixed
        lengthscale. Averages over the distribution become means over these values.

        Parameters
        ----------
        n : int
            Quantiles wanted.

        Returns
        -------
        lengthscales : ndarray of shape (n,), or (1,) for a fixed lengthscale
            The quantiles in increasing order.
        """
        from scipy.stats import norm

        ls = self.lengthscale_sampler()
        if isinstance(ls, numbers.Real):
            return np.array([float(ls)])
        q = (np.arange(n) + 0.5) / n
        if ls[0] == "lognormal":
            return np.exp(ls[1] + ls[2] * norm.ppf(q))
        if ls[0] == "uniform":
            return ls[1] + (ls[2] - ls[1]) * q
        return np.exp(np.log(ls[1]) + (np.log(ls[2]) - np.log(ls[1])) * q)  # loguniform

    def expected_sample_variance(self, X, n_quadrature=16):
        """Expected variance, about their own mean, of the noisy values of one training
        function of this prior observed at the inputs ``X``.

        For a kernel matrix :math:`K` at ``X`` (n points) the expected population variance
        of the values is :math:`\\operatorname{tr}(K)/n - \\mathbf 1^\\top K \\mathbf 1/n^2`,
        plus :math:`(1 - 1/n)` times the noise variance; this is its average over the
        kernels (uniformly) and the lengthscale distribution (``n_quadrature`` equally
        weighted quantiles; an ``anisotropic`` prior averages over every combination of
        about ``n_quadrature ** (1 / n_dims)`` quantiles per dimension, at least 4). Below
        the marginal variance when the points are few or close together compared with the
        lengthscales, which is why a context's own standard deviation underestimates the
        scale of the process it comes from.

        Parameters
        ----------
        X : ndarray of shape (n, n_dims)
            Inputs in the prior's domain.
        n_quadrature : int, default=16
            Quantiles of a lengthscale distribution averaged over (in all, for an
            anisotropic prior).

        Returns
        -------
        variance : float
            The expected variance of the values about their mean, noise included.
        """
        X = np.asarray(X, dtype=np.float64)
        n = len(X)
        spread = [np.trace(K, axis1=-2, axis2=-1) / n - K.sum((-2, -1)) / n**2
                  for K in self._kernel_matrices(X, n_quadrature)]
        return float(np.mean(spread) + self.noise * (1 - 1 / n))

    def _kernel_matrices(self, X, n_quadrature):
        """The noise-free kernel matrices at ``X`` of the equally weighted components of
        this prior's training distribution, one array ``[components, n, n]`` per kernel:
        ``n_quadrature`` quantiles of the lengthscale distribution, or, for an
        ``anisotropic`` prior, every combination of about ``n_quadrature ** (1 / n_dims)``
        quantiles per dimension (at least 4)."""
        if self.anisotropic and X.shape[1] > 1:
            per_dim = max(4, round(n_quadrature ** (1 / X.shape[1])))
            q = self.lengthscale_quantiles(per_dim)
            grid = np.stack(np.meshgrid(*[q] * X.shape[1], indexing="ij"), -1)
            Xb = X / grid.reshape(-1, 1, X.shape[1])  # [combinations, n, d]
            lengths = 1.0  # each dimension divided by its lengthscale
        else:
            lengths = self.lengthscale_quantiles(n_quadrature)
            Xb = np.broadcast_to(X, (len(lengths),) + X.shape)
        return [gp_kernel(Xb, Xb, k, lengths, self.variance) for k in self.kernels]

    def log_evidence(self, X, y, n_quadrature=16):
        """Log marginal likelihood of the noisy values ``y`` at the inputs ``X`` under this
        prior's training distribution: a mixture of GPs (its kernels, uniformly, times its
        lengthscale distribution), each with this prior's variance and noise.

        It is the log of the mean, over the equally weighted components (the kernels times
        ``n_quadrature`` quantiles of the lengthscale distribution, as in
        :meth:`expected_sample_variance`), of each zero-mean GP's Gaussian density of
        ``y``: how probable the prior finds a function with these values at these inputs.

        Parameters
        ----------
        X : ndarray of shape (n, n_dims)
            Inputs in the prior's domain.
        y : ndarray of shape (n,)
            Values on the prior's scale.
        n_quadrature : int, default=16
            Quantiles of a lengthscale distribution averaged over (in all, for an
            anisotropic prior).

        Returns
        -------
        log_evidence : float
            The log density of ``y``, in nats.
        """
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n = len(X)
        log_p = []
        for K in self._kernel_matrices(X, n_quadrature):
            L = np.linalg.cholesky(K + self.noise * np.eye(n))  # [components, n, n]
            a = np.linalg.solve(L, np.broadcast_to(y[:, None], (len(L), n, 1)))[..., 0]
            log_det = 2 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1)
            log_p.append(-0.5 * ((a ** 2).sum(-1) + log_det + n * np.log(2 * np.pi)))
        log_p = np.concatenate(log_p)
        top = log_p.max()
        return float(top + np.log(np.mean(np.exp(log_p - top))))

    def _component_matrices(self, X, n_quadrature, index):
        """The noise-free kernel matrices at ``X`` of the components ``index`` (positions in
        the order of :meth:`_kernel_matrices`, concatenated): ``[len(index), n, n]``."""
        index = np.asarray(index, dtype=np.int64)
        n, d = X.shape
        if self.anisotropic and d > 1:
            per_dim = max(4, round(n_quadrature ** (1 / d)))
            q = self.lengthscale_quantiles(per_dim)
            grid = np.stack(np.meshgrid(*[q] * d, indexing="ij"), -1).reshape(-1, d)

            def matrices(kernel, rows):
                Xb = X / grid[rows][:, None, :]
                return gp_kernel(Xb, Xb, kernel, 1.0, self.variance)
            per = len(grid)
        else:
            lengths = self.lengthscale_quantiles(n_quadrature)

            def matrices(kernel, rows):
                Xb = np.broadcast_to(X, (len(rows),) + X.shape)
                return gp_kernel(Xb, Xb, kernel, lengths[rows], self.variance)
            per = len(lengths)
        out = np.empty((len(index), n, n))
        for k, kernel in enumerate(self.kernels):
            rows = np.flatnonzero(index // per == k)
            if len(rows):
                out[rows] = matrices(kernel, index[rows] % per)
        return out

    @fill_doc(CONTEXT_DOCS)
    def context_components(self, X, y, n_quadrature=16, components=None):
        """The components of this prior's training distribution at the inputs ``X`` with
        their posterior probabilities given the values ``y`` at its first rows (the
        context): the Gaussian mixture the Tweedie correction of
        :func:`~skdiff.diffusion.conditional_sample` draws each sample's covariance from.

        The components are those of :meth:`log_evidence` (the kernels times
        ``n_quadrature`` equally weighted quantiles of the lengthscale distribution; one
        for a prior of one kernel and one lengthscale), each a covariance with the noise
        variance on its diagonal; the weights are proportional to their densities of the
        context (equal without one).

        Parameters
        ----------
        %(context_inputs)s
        components : array-like of int, default=None
            Return the covariances of these components only (positions in the weights'
            order); ``None``: all of them.

        Returns
        -------
        covariances : ndarray of shape (n_components, n, n)
            Or ``(len(components), n, n)``.
        weights : ndarray of shape (n_components,)
            Posterior probabilities of all components, summing to 1.

        Raises
        ------
        ValueError
            For a prior trained on a family of functions, which has no kernel.
        """
        if self.from_functions:
            raise ValueError("A prior trained on a family of functions has no kernel: its "
                             "Gaussian components (context_components) are undefined. Use "
                             "RePaint conditioning (NDPRegressor(sampler='fast')).")
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).ravel()
        C, n = len(y), len(X)
        Kc = np.concatenate(self._kernel_matrices(X[:C], n_quadrature))  # [components, C, C]
        w = np.ones(len(Kc))
        if C and len(Kc) > 1:
            L = np.linalg.cholesky(Kc + (self.noise + 1e-10) * np.eye(C))
            a = np.linalg.solve(L, np.broadcast_to(y[:, None], (len(L), C, 1)))[..., 0]
            log_p = -0.5 * (a ** 2).sum(-1) - np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1)
            w = np.exp(log_p - log_p.max())
        index = np.arange(len(w)) if components is None else np.asarray(components)
        if index.size and (index.min() < 0 or index.max() >= len(w)):
            raise ValueError(f"'components' must be positions in [0, {len(w)}); got "
                             f"{index.tolist()[:8]}.")
        K = self._component_matrices(X, n_quadrature, index) + self.noise * np.eye(n)
        return K, w / w.sum()

    @fill_doc(CONTEXT_DOCS)
    def context_covariance(self, X, y, n_quadrature=16):
        """The Gaussian approximation of this prior at the inputs ``X`` given the values
        ``y`` at its first rows: the average of :meth:`context_components`' covariances
        under their posterior weights (a one-kernel prior's own covariance), so a smooth
        context asks for long lengthscales.

        Parameters
        ----------
        %(context_inputs)s

        Returns
        -------
        covariance : ndarray of shape (n, n)
            Noise variance included.
        """
        K, w = self.context_components(X, y, n_quadrature)
        return np.einsum("k,kij->ij", w, K)

    def draw_functions(self, n_functions, random_state):
        """``n_functions`` training functions of this prior (a :func:`make_gp_functions` Bunch).

        Parameters
        ----------
        n_functions : int
            Functions to draw.
        random_state : int, RandomState instance or None
            Seeds the kernels, lengthscales, inputs and values of the functions.

        Returns
        -------
        functions : Bunch
            The functions as :func:`~skdiff.datasets.make_gp_functions` returns them.
        """
        return make_gp_functions(
            n_functions, self.points, self.n_dims, kernel=list(self.kernels),
            lengthscale=self.lengthscale_sampler(), anisotropic=self.anisotropic,
            variance=self.variance, noise=self.noise, domain=self.domain,
            random_state=random_state,
        )


def checked_x_bounds(x_bounds, n_dims, dims="n_dims"):
    """``x_bounds`` as a validated (n_dims, 2) float array: one ``(low, high)`` pair for every
    dimension (shape (2,)) or one per dimension; ``dims`` names the dimension count in the
    error message."""
    try:
        b = np.asarray(x_bounds, dtype=np.float64)
    except (TypeError, ValueError):
        b = np.empty(0)
    if b.shape == (2,):
        b = np.tile(b, (n_dims, 1))
    if b.shape != (n_dims, 2) or not np.isfinite(b).all() or np.any(b[:, 1] <= b[:, 0]):
        raise ValueError(
            f"'x_bounds' must be finite (low, high) pairs with low < high, of shape (2,) or "
            f"({dims}, 2) = ({n_dims}, 2); got {x_bounds!r}.")
    return b


def box_to_domain(low, high, domain):
    """``(offset, scale)`` of the affine map ``z = (x - offset) * scale`` that sends the box
    ``[low, high]`` (per dimension) onto the interval ``domain``; a flat dimension
    (``high == low``) goes to the domain's centre."""
    lo, hi = (float(v) for v in domain)
    span = np.asarray(high, dtype=np.float64) - np.asarray(low, dtype=np.float64)
    scale = (hi - lo) / np.where(span > 0, span, 1.0)
    return (np.asarray(low) + np.asarray(high)) / 2 - (lo + hi) / 2 / scale, scale


def check_functions(functions):
    """Validate a family of functions: lists of ``X_i`` (n_i, D) and ``y_i`` (n_i,), float64.

    Parameters
    ----------
    functions : sequence of (X, y) pairs
        ``X`` of shape (n_i,) or (n_i, D), ``y`` of shape (n_i,); at least 2 functions of
        at least 2 finite points each, all with the same ``D``.

    Returns
    -------
    Xs, ys : list of ndarray
        The inputs as (n_i, D) arrays and the values as (n_i,) arrays.
    """
    fix = "Pass a list of (X, y) pairs, X of shape (n_i,) or (n_i, D) and y of shape (n_i,)."
    if isinstance(functions, (str, bytes, np.ndarray)) or not hasattr(functions, "__len__"):
        raise TypeError(f"'functions' must be a sequence of (X, y) pairs; got a "
                        f"{type(functions).__name__}. {fix}")
    if len(functions) < 2:
        raise ValueError(f"'functions' must hold at least 2 functions (a family to learn "
                         f"from); got {len(functions)}. {fix}")
    Xs, ys = [], []
    for i, pair in enumerate(functions):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"'functions'[{i}] must be an (X, y) pair; got a "
                             f"{type(pair).__name__}. {fix}")
        try:
            X = np.asarray(pair[0], dtype=np.float64)
            y = np.asarray(pair[1], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"'functions'[{i}] must hold numbers ({exc}). {fix}") from exc
        X = X[:, None] if X.ndim == 1 else X
        if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
            raise ValueError(f"'functions'[{i}] has X of shape {np.shape(pair[0])} and y of "
                             f"shape {np.shape(pair[1])}; they must be (n_i,) or (n_i, D) and "
                             f"(n_i,) with the same n_i. {fix}")
        if len(y) < 2:
            raise ValueError(f"'functions'[{i}] has {len(y)} point(s); every function needs "
                             "at least 2. Drop it or merge it with its neighbours.")
        if Xs and X.shape[1] != Xs[0].shape[1]:
            raise ValueError(f"'functions'[{i}] has {X.shape[1]} input dimension(s) but "
                             f"'functions'[0] has {Xs[0].shape[1]}; a family shares one D.")
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise ValueError(f"'functions'[{i}] holds NaN or infinite values; drop those "
                             "points.")
        Xs.append(X)
        ys.append(y)
    return Xs, ys


#: The fields that carry the units of a family of functions (unset for a GP prior).
_UNIT_FIELDS = ("x_bounds", "y_loc", "y_scale")


def _as_lists(v):
    return [_as_lists(u) for u in v] if isinstance(v, tuple) else v


def _as_tuples(v):
    return tuple(_as_tuples(u) for u in v) if isinstance(v, list) else v


def stratified_timesteps(batch_size, T, rng):
    """Low-discrepancy diffusion steps: one uniform draw in each of ``batch_size`` equal strata of
    ``[0, T)`` (official ``process.loss``), which lowers the variance of the loss estimate."""
    u = rng.uniform(0.0, T / batch_size, size=batch_size)
    t = (u + (T / batch_size) * np.arange(batch_size)).astype(np.int64)
    return np.minimum(t, T - 1)


class _SeededBatches(Dataset):
    """``n_batches`` items per epoch from a stream seeded by ``random_state`` and a counter
    ``calls`` (the state a checkpoint stores to resume the stream exactly)."""

    def __len__(self):
        return self.n_batches

    def _next_rng(self):
        # The counter (not the item index) seeds the draw: epochs see new data, runs repeat.
        rng = np.random.RandomState(np.random.SeedSequence(
            [self.random_state, self.calls]).generate_state(1)[0])
        self.calls += 1
        return rng


class GPFunctionBatches(_SeededBatches):
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

    def __getitem__(self, index):
        rng = self._next_rng()
        b = self.config.batch_size
        if self.pool is None:
            cfg = self.configs[rng.randint(len(self.configs))] if len(self.configs) > 1 \
                else self.config
            data = cfg.draw_functions(b, rng)
            X, y0, mask = data.X, data.y, data.mask
        else:
            idx = rng.randint(len(self.pool.y), size=b)
            X, y0, mask = self.pool.X[idx], self.pool.y[idx], self.pool.mask[idx]
        return noised_batch(X, y0, mask, self.sqrt_ab, rng)


def noised_batch(X, y0, mask, sqrt_ab, rng):
    """One training item from clean functions: ``X`` [b, n, d], ``y0`` [b, n], ``mask``
    [b, n] (True for padding), noised to stratified levels (see :class:`GPFunctionBatches`)."""
    b = len(y0)
    t = stratified_timesteps(b, len(sqrt_ab), rng)
    eps = rng.standard_normal(y0.shape)
    a = sqrt_ab[t][:, None]
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


class FunctionFamilyBatches(_SeededBatches):
    """Dataset of noised training batches drawn from a family of the user's functions.

    The sibling of :class:`GPFunctionBatches` (same items, same seeded stream with its
    ``calls`` counter, so checkpoints resume bit for bit) for a fixed collection of curves of
    varying lengths. Each item picks ``config.batch_size`` functions at random (with
    replacement) and from each a random subset of ``n`` of its points, ``n`` drawn uniformly
    from ``config.points`` and capped by the shortest function picked, so no padding is
    needed. Inputs and values are mapped with the family's fixed affine maps
    (:meth:`PriorConfig.family_map`): the map is part of the prior, not of the batch.

    Parameters
    ----------
    config : PriorConfig
        A configuration fitted to ``functions`` (:meth:`PriorConfig.for_functions`).
    functions : sequence of (X, y) pairs
        The family (see :meth:`PriorConfig.for_functions`).
    n_batches : int
        Items per epoch (= optimisation steps per epoch).
    random_state : int, default=0
        Seed of the stream of items.
    """

    def __init__(self, config, functions, n_batches, *, random_state=0):
        Xs, ys = check_functions(functions)
        if not config.from_functions or config.n_dims != Xs[0].shape[1]:
            raise ValueError("FunctionFamilyBatches needs a configuration fitted to its "
                             "functions: pass config.for_functions(functions).")
        self.config = config
        self.n_batches = int(n_batches)
        self.random_state = int(random_state)
        self.sqrt_ab = config.schedule().sqrt_alpha_bars.double().numpy()
        self.calls = 0
        # the family padded into [F, n_max] arrays once, already in the prior's units
        self.lengths = np.array([len(y) for y in ys])
        rows = np.repeat(np.arange(len(ys)), self.lengths)
        cols = np.arange(rows.size) - np.repeat(np.cumsum(self.lengths) - self.lengths,
                                                self.lengths)
        offset, scale = config.family_map()
        self.X = np.zeros((len(ys), self.lengths.max(), config.n_dims))
        self.y = np.zeros((len(ys), self.lengths.max()))
        self.X[rows, cols] = (np.concatenate(Xs) - offset) * scale
        self.y[rows, cols] = (np.concatenate(ys) - config.y_loc) / config.y_scale

    def __getitem__(self, index):
        rng = self._next_rng()
        b, (lo, hi) = self.config.batch_size, self.config.points
        idx = rng.randint(len(self.lengths), size=b)
        n = min(rng.randint(lo, hi + 1), int(self.lengths[idx].min()))
        # a uniformly random subset of each function's points: the n smallest of uniform keys,
        # with the padding beyond a function's length keyed out of reach
        keys = rng.random_sample((b, self.y.shape[1]))
        keys[np.arange(self.y.shape[1]) >= self.lengths[idx][:, None]] = 2.0
        pick = np.argpartition(keys, n - 1, axis=1)[:, :n]
        rows = idx[:, None]
        return noised_batch(self.X[rows, pick], self.y[rows, pick], np.zeros((b, n), bool),
                            self.sqrt_ab, rng)


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


class WarmupCosine(Callback):
    """Per-step learning rate: :func:`warmup_cosine` of the optimisation step counter.

    The step counter ``step_`` is the callback's whole state, so a run resumed from a
    checkpoint continues the schedule exactly where it stopped. Each batch records the rate it
    used as ``event_lr`` in the history.
    """

    def __init__(self, total_steps, warmup_steps, peak_lr, init_lr, end_lr):
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps
        self.peak_lr = peak_lr
        self.init_lr = init_lr
        self.end_lr = end_lr

    def initialize(self):
        self.step_ = 0
        self.factor_ = warmup_cosine(self.total_steps, self.warmup_steps, self.peak_lr,
                                     self.init_lr, self.end_lr)
        return self

    def on_batch_begin(self, net, batch=None, training=None, **kwargs):
        if not training:
            return
        lr = self.peak_lr * self.factor_(self.step_)
        for group in net.optimizer_.param_groups:
            group["lr"] = lr
        net.history.record_batch("event_lr", lr)

    def on_batch_end(self, net, batch=None, training=None, **kwargs):
        if training:
            self.step_ += 1


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

    def load_state_dict(self, state, n_updates, device="cpu"):
        """Restore the average (e.g. from a checkpoint) and its update count."""
        self.ema_state_ = {k: v.detach().clone().to(device) for k, v in state.items()}
        self.n_updates_ = int(n_updates)


class TrainingCheckpoint(Callback):
    """Write everything a bit-for-bit resume needs, atomically, every ``every_seconds``.

    At the end of an epoch (and always after the last one) the file ``path`` receives the
    network's weights, the EMA weights and update count, the optimiser state, the position of
    the learning-rate schedule, the data stream's counter and the history; see
    :func:`train_prior`'s ``checkpoint`` and ``resume``.
    """

    def __init__(self, path, dataset, meta, every_seconds=300.0, on_save=None):
        self.path, self.dataset, self.meta = path, dataset, meta
        self.every_seconds, self.on_save = every_seconds, on_save

    def initialize(self):
        self.last_, self.last_saved_ = time.monotonic(), None
        return self

    def on_epoch_end(self, net, **kwargs):
        done = len(net.history) >= self.meta["max_epochs"]
        if not done and time.monotonic() - self.last_ < self.every_seconds:
            return
        self.save(net)

    def save(self, net):
        """Write the checkpoint now (and call ``on_save``)."""
        self.last_, self.last_saved_ = time.monotonic(), len(net.history)
        save_checkpoint(self.path, net, self.dataset, self.meta)
        if self.on_save is not None:
            self.on_save(net)


class TimeLimit(Callback):
    """End training at the first epoch end after ``seconds`` (``train_prior``'s
    ``max_seconds``), writing the run's checkpoint first if it has one."""

    def __init__(self, seconds, max_epochs):
        self.seconds, self.max_epochs = float(seconds), max_epochs

    def initialize(self):
        self.start_, self.stopped_ = time.monotonic(), False
        return self

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) >= self.max_epochs or \
                time.monotonic() - self.start_ < self.seconds:
            return
        saver = dict(net.callbacks_).get("checkpoint")
        if saver is not None and saver.last_saved_ != len(net.history):
            saver.save(net)
        self.stopped_ = True
        raise KeyboardInterrupt  # skorch ends the fit loop; train_prior returns normally


def save_checkpoint(path, net, dataset, meta):
    """Write the resumable state of a prior-training ``net`` to ``path`` (atomic)."""
    cbs = dict(net.callbacks_)
    state = {
        "format": CHECKPOINT_FORMAT,
        "meta": meta,
        "module": {k: v.detach().cpu() for k, v in net.module_.state_dict().items()},
        "optimizer": net.optimizer_.state_dict(),
        "ema": cbs["ema"].state_dict(),
        "ema_updates": cbs["ema"].n_updates_,
        "step": cbs["lr_schedule"].step_,
        "data_calls": dataset.calls,
        "history": json.dumps(net.history.to_list()),
    }
    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write(path, buf.getvalue())


def load_checkpoint(path):
    """Read a checkpoint written by :func:`save_checkpoint` (tensors only: ``weights_only``)."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not an skdiff prior-training checkpoint.")
    return state


#: Version of the checkpoint layout written by :func:`save_checkpoint`.
CHECKPOINT_FORMAT = 1


def prior_callbacks(config, total_steps, *, verbose=0):
    """The named skorch callbacks of NDP training: LR warm-up + cosine decay (per batch),
    gradient-norm clipping and EMA. Returns a list of ``(name, callback)``."""
    cbs = [
        ("lr_schedule", WarmupCosine(total_steps, config.warmup_steps, config.lr,
                                     config.init_lr, config.end_lr)),
        ("grad_clip", GradientNormClipping(gradient_clip_value=config.grad_clip)),
        ("ema", EMA(config.ema_decay)),
    ]
    if verbose > 1:
        cbs.append(("progress_bar", ProgressBar()))
    return cbs


def train_prior(config=None, *, functions=None, x_bounds=None, max_epochs=20,
                steps_per_epoch=250, pool_size=None, module=None, device="cpu", random_state=0,
                verbose=0, callbacks=None, checkpoint=None, checkpoint_every=300.0,
                resume=False, on_checkpoint=None, max_seconds=None):
    """Train an NDP noise model on functions from ``config``'s GP prior, or on your own.

    With ``functions``, the prior learns a family of related curves (daily profiles, growth
    curves, spectra, ...) instead of GP draws: each step takes ``config.batch_size`` of
    them at random and a random subset of each one's points
    (:class:`FunctionFamilyBatches`), in the family's units, fixed by
    :meth:`PriorConfig.for_functions`. Save the weights with that fitted configuration,
    ``save_prior(name, config.for_functions(functions), ema_state)``, and
    :class:`~skdiff.NDPRegressor` conditions the prior on a new member of the family in the
    same units.

    ε-prediction with stratified t, the L1 (or L2) loss, Adam with gradient clipping at
    ``config.grad_clip``, linear warm-up then cosine decay of the learning rate, and an EMA of
    the weights (Dutordoir et al. 2023, §4 and App. C; official ``experiments/regression``).

    Parameters
    ----------
    config : PriorConfig or sequence of PriorConfig, default=None
        ``None`` uses ``PriorConfig()`` (the default "gp" prior in one dimension). A sequence
        trains one network on batches drawn from each in turn at random (e.g. several ``n_dims``);
        the first one sets the network and the optimisation settings.
    functions : sequence of (X, y) pairs, default=None
        Train on these functions instead of GP draws: at least 2, ``X`` of shape (n_i,) or
        (n_i, D), ``y`` of shape (n_i,), ``n_i >= 2``; lengths may differ. ``config`` (a
        single one) sets the network, the optimisation and the points per batch function
        (``n_points``); its GP fields are not used. ``None``: GP draws.
    x_bounds : array-like of shape (2,) or (D, 2), default=None
        With ``functions``: the region of the inputs mapped onto the prior's domain
        (``None``: the smallest and largest input over the functions); see
        :meth:`PriorConfig.for_functions`.
    max_epochs : int, default=20
        Epochs; one epoch is ``steps_per_epoch`` optimisation steps (``config.batch_size``
        functions each), so the run has ``max_epochs * steps_per_epoch`` steps.
    steps_per_epoch : int, default=250
        Optimisation steps per epoch (each on a fresh batch of ``config.batch_size``
        functions unless ``pool_size`` is set).
    pool_size : int or None, default=None
        ``None``: fresh functions every step; an int: a fixed pool of functions (of GP
        draws; ``functions`` are a fixed pool already).
    module : NDPNoiseModel, default=None
        Start from this module (e.g. to continue training); ``None`` builds a fresh one.
    device : str, default="cpu"
        Torch device the network trains on.
    random_state : int, default=0
        Seeds the network initialisation and the data stream.
    verbose : int, default=0
        1 prints the per-epoch table (train loss, duration); 2 adds a progress bar.
    callbacks : list of skorch callbacks, default=None
        Extra callbacks (e.g. a checkpoint).
    checkpoint : path, default=None
        Write the resumable state of the run here (atomically) at the end of an epoch once
        ``checkpoint_every`` seconds have passed since the last write, and after the last
        epoch.
    checkpoint_every : float, default=300
        Least seconds between two checkpoint writes (the last epoch is always written).
    resume : bool, default=False
        Continue the run stored in ``checkpoint`` (if the file exists) instead of starting: the
        weights, EMA, optimiser, learning-rate position and data stream are restored, so the
        resumed run produces the same weights, bit for bit, as an uninterrupted one (on the
        same device and torch build). The checkpoint must come from the same configuration,
        seed and schedule; anything else is refused.
    on_checkpoint : callable, default=None
        Called with the skorch net after each checkpoint write (e.g. to export weights).
    max_seconds : float, default=None
        End this call at the first epoch end after that many seconds, with the checkpoint
        written (when ``checkpoint`` is set): a run given a fixed budget of machine time
        (a borrowed GPU, say) trains as far as it gets, and ``resume=True`` continues it
        later. The returned history then has fewer than ``max_epochs`` epochs.

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

    On a family of curves of varying lengths (hour of the day -> value):

    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> days = [(h, np.sin(2 * np.pi * h / 24) + rng.normal(size=1))
    ...         for h in (np.sort(rng.choice(24, rng.randint(12, 25), replace=False))
    ...                   for _ in range(20))]
    >>> cfg = cfg.replace(n_points=(6, 12)).for_functions(days)
    >>> module, ema_state, history = train_prior(cfg, functions=days, max_epochs=1,
    ...                                          steps_per_epoch=5)
    >>> cfg.x_bounds, len(history)
    (((0.0, 23.0),), 1)
    """
    config = PriorConfig() if config is None else config
    configs = [config] if isinstance(config, PriorConfig) else list(config)
    config = configs[0]
    for name, value in (("max_epochs", max_epochs), ("steps_per_epoch", steps_per_epoch)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"'{name}' must be an integer >= 1; got {value!r}.")
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise ValueError(f"'random_state' must be an integer seed (training is reproducible "
                         f"by design); got {random_state!r}.")
    total = int(max_epochs) * int(steps_per_epoch)
    seed = int(random_state)
    if functions is None:
        if x_bounds is not None:
            raise ValueError("'x_bounds' maps the inputs of 'functions', which is None; pass "
                             "the functions to train on, or leave x_bounds None for GP draws.")
        dataset = GPFunctionBatches(configs, steps_per_epoch, pool_size=pool_size,
                                    random_state=seed)
        data = None
    else:
        if len(configs) > 1 or pool_size is not None:
            raise ValueError(
                "Training on 'functions' takes a single PriorConfig and no 'pool_size' (the "
                f"functions are the pool); got {len(configs)} configuration(s) and "
                f"pool_size={pool_size!r}.")
        config = config.for_functions(functions, x_bounds=x_bounds)
        configs = [config]
        dataset = FunctionFamilyBatches(config, functions, steps_per_epoch, random_state=seed)
        data = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in (
            dataset.lengths, dataset.X, dataset.y))).hexdigest()
    meta = {"configs": [c.to_dict() for c in configs], "max_epochs": int(max_epochs),
            "steps_per_epoch": int(steps_per_epoch), "pool_size": pool_size, "seed": seed}
    if data is not None:  # a checkpoint of another family is refused on resume
        meta["functions_sha256"] = data
    saved = _saved_run(checkpoint, meta) if resume else None
    with torch_seed(seed, device):
        if module is None or saved is not None:
            module = config.network()
    cbs = [("finite_loss", FiniteLossGuard())]
    cbs += prior_callbacks(config, total, verbose=verbose)
    if checkpoint is not None:
        cbs.append(("checkpoint", TrainingCheckpoint(checkpoint, dataset, meta,
                                                     checkpoint_every, on_checkpoint)))
    cbs += [cb if isinstance(cb, tuple) else (f"user_{i}_{type(cb).__name__}", cb)
            for i, cb in enumerate(callbacks or ())]
    limit = TimeLimit(max_seconds, int(max_epochs)) if max_seconds is not None else None
    if limit is not None:
        cbs.append(("time_limit", limit))
    net = Net(module=module, criterion=NoisePredictionLoss, criterion__loss=config.loss,
              optimizer=torch.optim.Adam, lr=config.lr, max_epochs=int(max_epochs),
              batch_size=1, iterator_train__collate_fn=first_item,
              iterator_train__shuffle=False, train_split=None, callbacks=cbs, device=device,
              verbose=int(verbose))
    net.initialize()
    if saved is not None:
        _restore_run(net, dataset, saved, device)
    epochs = int(max_epochs) - len(net.history)
    if epochs > 0:
        with torch_seed(seed, device):
            net.partial_fit(dataset, None, epochs=epochs)
    if net.interrupted_ is not None and not (limit is not None and limit.stopped_):
        # skorch ends training quietly; a half-trained prior must not pass for a trained one
        raise KeyboardInterrupt(f"Prior training was interrupted during epoch "
                                f"{net.interrupted_}" + (f"; resume it from {checkpoint} with "
                                                         "resume=True" if checkpoint else ""))
    ema = dict(net.callbacks_)["ema"]
    return net.module_, ema.state_dict(), net.history


def _saved_run(checkpoint, meta):
    """The checkpoint of this run (``None`` when the file does not exist yet)."""
    if checkpoint is None:
        raise ValueError("resume=True needs 'checkpoint', the file to resume from.")
    if not os.path.exists(checkpoint):
        return None
    saved = load_checkpoint(checkpoint)
    asked = json.loads(json.dumps(meta))
    if saved["meta"] != asked:
        raise ValueError(
            f"The checkpoint {checkpoint} belongs to another run: "
            f"{_meta_difference(saved['meta'], asked)}. Resume it with the same arguments "
            "(the learning-rate schedule and the data stream depend on them, so a run cannot "
            "be resumed with others), or start a new checkpoint file.")
    return saved


def _meta_difference(stored, asked, path=""):
    """Where two run descriptions differ: ``path stored X, asked Y`` per differing entry
    (at most five keys of a mapping)."""
    if isinstance(stored, dict) and isinstance(asked, dict):
        parts = []
        for key in sorted(set(stored) | set(asked), key=str):
            a, b = stored.get(key, "<absent>"), asked.get(key, "<absent>")
            if a != b:
                parts.append(_meta_difference(a, b, f"{path}{key}."))
        return "; ".join(parts[:5])
    if (isinstance(stored, list) and isinstance(asked, list) and len(stored) == len(asked)
            and len(stored) > 0):
        return "; ".join(_meta_difference(a, b, f"{path}{i}.")
                         for i, (a, b) in enumerate(zip(stored, asked)) if a != b)
    return f"{path.rstrip('.') or 'run'} stored {stored!r}, asked {asked!r}"


def _restore_run(net, dataset, saved, device):
    """Put an initialised prior-training net and its data stream back where ``saved`` was."""
    net.module_.load_state_dict(saved["module"])
    net.optimizer_.load_state_dict(saved["optimizer"])
    named = dict(net.callbacks_)
    named["ema"].load_state_dict(saved["ema"], saved["ema_updates"], device)
    named["lr_schedule"].step_ = int(saved["step"])
    dataset.calls = int(saved["data_calls"])
    net.history_ = History(json.loads(saved["history"]))
