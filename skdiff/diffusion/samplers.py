"""Reverse-time samplers of Neural Diffusion Processes: prior samples and RePaint conditioning.

Axis legend: ``S`` samples (the batch the network sees), ``N`` points of a function (``C``
context + ``M`` targets), ``D`` input dimensions. Every sampler draws all its samples in **one**
batch tensor of shape ``[S, N, 1]``; the only Python loop runs over diffusion steps.

The noise model is any callable ``eps_model(x, y_t, t, mask=None) -> eps_hat`` with ``x`` of
shape ``[S, N, D]``, ``y_t`` ``[S, N, 1]``, ``t`` ``[S]`` (long, the noise level) and ``mask``
``[S, N]`` bool (``True`` = padding) or ``None``; it returns ``[S, N, 1]``.

**Generalised reverse step** (Song, Meng & Ermon, 2021, Eq. 12) from level ``t`` to a lower
level ``s`` (``s = -1`` is clean data), with
:math:`\\hat y_0 = (y_t - \\sqrt{1-\\bar\\alpha_t}\\,\\hat\\epsilon)/\\sqrt{\\bar\\alpha_t}`:

.. math::

    y_s = \\sqrt{\\bar\\alpha_s}\\,\\hat y_0 + \\sqrt{1 - \\bar\\alpha_s - \\sigma^2}\\,
    \\hat\\epsilon + \\sigma z, \\qquad
    \\sigma^2 = \\eta^2 \\frac{1-\\bar\\alpha_s}{1-\\bar\\alpha_t}
    \\Big(1 - \\frac{\\bar\\alpha_t}{\\bar\\alpha_s}\\Big).

With ``s = t - 1`` and ``eta = 1`` this is exactly the DDPM step
:math:`y_{t-1} = \\frac{1}{\\sqrt{\\alpha_t}}\\big(y_t - \\frac{\\beta_t}
{\\sqrt{1-\\bar\\alpha_t}}\\hat\\epsilon\\big) + \\tilde\\beta_t^{1/2} z` (Ho et al., 2020,
Alg. 2 with :math:`\\sigma_t^2 = \\tilde\\beta_t`). Departure from the official NDP code, which
uses :math:`\\sigma_t^2 = \\beta_t`: :math:`\\tilde\\beta_t` is the exact reverse variance for a
point mass and, with an oracle noise model for Gaussian data, gives the smaller bias (measured in
``tests/diffusion/test_samplers.py``); with T = 500 the two differ only at the noisiest levels.

**RePaint conditioning** (Lugmayr et al., 2022; Dutordoir et al., 2023, Sec. 4.1): the network
always sees the context and the targets together at the same noise level. The sampler walks a
*path* of levels (:func:`resample_path`) from ``T-1`` down to clean data. Each move down
``t -> s`` noises the context afresh to level ``t`` from the forward marginal, takes one reverse
step on ``[context; targets]`` and keeps the targets; each move up ``s -> t`` pushes the targets
back with the forward kernel :math:`q(y_t \\mid y_s)`, so the next descent re-harmonises them
with fresh context noise. With ``jump_length = 1`` every step ``t -> s`` of the (possibly
strided) level grid is taken ``U + 1`` times with ``U`` returns to ``t`` in between; all ``T``
levels with ``U = 5`` is the paper's sampler, :math:`(T-1)(U+1) + 1 = 2995` network evaluations.

**Fast setting** (measured, see :func:`conditional_sample`): 32 cubic-spaced levels with
``U = 4`` (141 evaluations) comes within 0.02 nats per point of the paper's sampler on the
paper's interpolation task with a trained network, in expectation over the targets. Small
steps at the lowest noise levels are what a trained network needs (they resolve the
observation-noise floor of the posterior); resampling is what the conditioning needs.

**Tiered setting** (``fine_level=40, n_resample_fine=1`` on 40 cubic levels, ``U = 4``: 140
evaluations; :data:`TIERED`, ``NDPRegressor``'s default with the per-kernel priors): full
resampling only on the steps above level 40, where the coarse structure forms and the
targets must be harmonised with the context, and single resamples on the many small steps
below, which resolve the observation-noise floor. With the trained per-kernel networks it
scores above both the fast setting and the paper's sampler in expectation over the targets
(see :func:`conditional_sample`); with an exact noise model its RePaint bias is larger (KL per
point 0.015 against 0.008 for the fast setting on the test task of
``tests/diffusion/test_samplers.py``), so its gain is the network's, not RePaint's.

**Tweedie correction** (``covariance`` given; ``NDPRegressor(sampler="tweedie")``, its default
with the per-kernel priors): every reverse step moves the network's denoised estimate of the
targets by the Gaussian conditional of the clean context under the prior's covariance, which
for GP data with an exact noise model makes each step exactly the posterior's; no resampling
is needed (64 cubic levels: 55 evaluations). See :func:`conditional_sample`.
"""

from __future__ import annotations

import math
import numbers

import torch

from .._docs import fill_doc, parse_docs
from .schedule import NoiseSchedule

__all__ = [
    "conditional_sample",
    "ddim_step",
    "ddpm_step",
    "n_evaluations",
    "prior_sample",
    "resample_path",
    "strided_levels",
]


#: The tiered path's keywords of :func:`conditional_sample` (with ``n_resample`` for the
#: coarse steps): 40 cubic levels, ``n_resample_fine=1`` on jumps back below level 40.
TIERED = {"n_steps": 40, "spacing": "cubic", "fine_level": 40, "n_resample_fine": 1}

#: Exponent ``p`` of each level spacing: level :math:`(T-1)(1 - i/(n-1))^p`.
SPACINGS = {"uniform": 1, "quadratic": 2, "cubic": 3}


def strided_levels(T, n_steps, spacing="quadratic"):
    """Decreasing noise levels from ``T-1`` to ``0``, at most ``n_steps`` of them.

    Level ``i`` of ``n`` is :math:`\\mathrm{round}\\big((T-1)(1 - i/(n-1))^p\\big)`, repeated
    levels dropped: ``spacing="uniform"`` (``p = 1``) spaces them evenly in index,
    ``"quadratic"`` (``p = 2``; Song, Meng & Ermon, 2021, Sec. D.2) and ``"cubic"`` (``p = 3``)
    are denser at low noise. The last level is always ``0`` so the final step lands on clean
    data from the least noisy level. ``n_steps >= T`` gives all ``T`` levels.

    Parameters
    ----------
    T : int
        Number of noise levels of the schedule (levels ``0 .. T-1``).
    n_steps : int
        Most levels to return (fewer when rounding merges some; 1 gives ``[T-1]``).
    spacing : {"quadratic", "cubic", "uniform"}, default="quadratic"
        Exponent ``p`` of the spacing: 2, 3 or 1.

    Returns
    -------
    levels : list of int
        Strictly decreasing levels from ``T-1`` to ``0`` (only ``[T-1]`` for
        ``n_steps=1``).

    Notes
    -----
    Why dense at low noise: with an oracle noise model for GP data (exact moment propagation,
    ``benchmarks/ndp_sampler_oracle.py``), 20 quadratic steps with 4 resamples are 5 to 9 times
    closer to the exact posterior than 20 uniform ones (KL per point 0.06 vs 0.55); with a
    trained network, the finest structure of the samples (the observation-noise floor of the
    posterior) is resolved only by small steps at the lowest levels, where the cubic spacing
    puts 8 of its 32 levels below level 20 (quadratic: 5 of 20), see
    :func:`conditional_sample`.

    Examples
    --------
    >>> from skdiff.diffusion import strided_levels
    >>> strided_levels(500, 6, "uniform")
    [499, 399, 299, 200, 100, 0]
    >>> strided_levels(500, 6, "cubic")
    [499, 255, 108, 32, 4, 0]
    """
    if isinstance(T, bool) or not isinstance(T, numbers.Integral) or T < 1:
        raise ValueError(f"'T' must be an integer >= 1 (the schedule's levels); got {T!r}.")
    if isinstance(n_steps, bool) or not isinstance(n_steps, numbers.Integral) or n_steps < 1:
        raise ValueError(f"'n_steps' must be an integer >= 1; got {n_steps!r}.")
    if spacing not in SPACINGS:
        raise ValueError(f"'spacing' must be one of {sorted(SPACINGS)}; got {spacing!r}.")
    if n_steps >= T:
        return list(range(T - 1, -1, -1))
    if n_steps == 1:
        return [T - 1]
    u = torch.linspace(1, 0, int(n_steps), dtype=torch.float64) ** SPACINGS[spacing]
    levels = (u * (T - 1)).round().long()
    return torch.unique_consecutive(levels).tolist()


#: Parameters of the reverse steps.
STEP_DOCS = parse_docs("""
schedule : NoiseSchedule
    The schedule whose :math:`\\bar\\alpha` the step uses.
eps_hat : Tensor
    Predicted noise, shape like ``y_t``.
y_t : Tensor
    Values at level ``t``.
noise : Tensor or None
    Standard normal noise of the step (drawn from torch's generator when ``None``).
""")
STEP_DOCS["step_inputs"] = ["schedule", "eps_hat", "y_t"]


def _ab(schedule, t):
    """:math:`\\bar\\alpha_t` as a Python float (``t = -1``: 1.0)."""
    return 1.0 if t < 0 else float(schedule.alpha_bars.double()[t])


@fill_doc(STEP_DOCS)
def ddim_step(schedule, eps_hat, y_t, t, s, *, eta=1.0, noise=None):
    """Generalised reverse step from level ``t`` to ``s < t`` (see the module docstring).

    Parameters
    ----------
    %(step_inputs)s
    t, s : int
        Current and target levels (``s = -1``: clean data).
    eta : float, default=1.0
        0 gives the deterministic DDIM step, 1 the DDPM-like stochastic step.
    %(noise)s

    Returns
    -------
    y_s : Tensor like ``y_t``
        Values at level ``s``.
    """
    if not s < t:
        raise ValueError(f"A reverse step needs s < t; got t={t}, s={s}.")
    ab_t = _ab(schedule, t)
    ab_s = _ab(schedule, s)
    # float64 scalars: the coefficients are computed once per step, not per element.
    var = eta ** 2 * (1.0 - ab_s) / (1.0 - ab_t) * (1.0 - ab_t / ab_s)
    c_x0 = math.sqrt(ab_s) / math.sqrt(ab_t)
    c_eps = math.sqrt(max(1.0 - ab_s - var, 0.0)) - c_x0 * math.sqrt(1.0 - ab_t)
    out = c_x0 * y_t + c_eps * eps_hat
    if var > 0:
        if noise is None:
            noise = torch.randn_like(y_t)
        out = out + math.sqrt(var) * noise
    return out


@fill_doc(STEP_DOCS)
def ddpm_step(schedule, eps_hat, y_t, t, *, noise=None):
    """One DDPM reverse step from level ``t`` to ``t - 1`` (:math:`\\sigma_t^2 = \\tilde\\beta_t`).

    Equivalent to :func:`ddim_step` with ``s = t - 1`` and ``eta = 1``.

    Parameters
    ----------
    %(step_inputs)s
    t : int
        Current level (``t = 0`` steps to clean data).
    %(noise)s

    Returns
    -------
    y_prev : Tensor like ``y_t``
        Values at level ``t - 1``.
    """
    return ddim_step(schedule, eps_hat, y_t, t, t - 1, eta=1.0, noise=noise)


def _levels(schedule, n_steps, spacing):
    if n_steps is None:
        return list(range(schedule.T - 1, -1, -1))
    return strided_levels(schedule.T, n_steps, spacing)


def _check_count(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"'{name}' must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def resample_path(levels, n_resample, jump_length=1, *, fine_level=0, n_resample_fine=0):
    """The sequence of noise levels RePaint visits on a decreasing grid of ``levels``.

    The path starts at ``levels[0]`` and ends at ``-1`` (clean data). A move to a lower level
    is a reverse step (one network evaluation), a move to a higher level a forward jump
    :math:`q(y_t \\mid y_s)` (no evaluation). With ``jump_length = j``, every ``j``-th grid
    position ``i = j, 2j, ...`` (counted from the noisy end, clean data excluded) is reached
    ``n_resample + 1`` times: after each of the first ``n_resample`` arrivals the targets
    jump back ``j`` grid positions and descend again (Lugmayr et al., 2022, Sec. 4.2, the
    "jump length" of their schedule). ``j = 1`` is the one-step back-and-forth resampling of
    the NDP paper (Dutordoir et al., 2023, Sec. 4.1).

    Parameters
    ----------
    levels : sequence of int
        Strictly decreasing levels ``>= 0``, usually ending at ``0``
        (:func:`strided_levels`).
    n_resample : int
        ``U``: resampling repeats per jump position (0 = plain context replacement).
    jump_length : int, default=1
        ``j``: grid positions the targets jump back.
    fine_level : int, default=0
        Jumps back to a level below ``fine_level`` are repeated ``n_resample_fine`` times
        instead of ``n_resample`` (a *tiered* path: full resampling where the coarse structure
        forms, cheap steps at the observation-noise floor); 0 resamples every position
        ``n_resample`` times.
    n_resample_fine : int, default=0
        Resampling repeats of the jump positions below ``fine_level``.

    Returns
    -------
    path : list of int
        Network evaluations: the number of decreasing moves,
        ``(len(levels) - 1) * (n_resample + 1) + 1`` for ``j = 1``.

    Examples
    --------
    >>> from skdiff.diffusion import resample_path
    >>> resample_path([3, 1, 0], n_resample=1)
    [3, 1, 3, 1, 0, 1, 0, -1]
    >>> resample_path([5, 4, 2, 1, 0], n_resample=1, jump_length=2)
    [5, 4, 2, 5, 4, 2, 1, 0, 2, 1, 0, -1]
    >>> resample_path([3, 1, 0], n_resample=2, fine_level=2, n_resample_fine=0)
    [3, 1, 3, 1, 3, 1, 0, -1]
    """
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in levels):
        raise ValueError(f"'levels' must be integer levels; got {list(levels)!r}.")
    levels = [int(v) for v in levels]
    if not levels or any(a <= b for a, b in zip(levels, levels[1:])) or levels[-1] < 0:
        raise ValueError(
            f"'levels' must be a non-empty, strictly decreasing sequence of levels >= 0; got "
            f"{levels!r}.")
    U = _check_count("n_resample", n_resample, 0)
    j = _check_count("jump_length", jump_length, 1)
    fine = _check_count("fine_level", fine_level, 0)
    U_fine = _check_count("n_resample_fine", n_resample_fine, 0)
    grid = levels + [-1]
    K = len(grid) - 1  # grid position of clean data
    path, i = [grid[0]], 0
    # jump positions -> jumps left, by the level the targets jump back to
    remaining = {k: U if grid[k - j] >= fine else U_fine for k in range(j, K, j)}
    while i < K:
        i += 1
        path.append(grid[i])
        if remaining.get(i, 0) > 0:
            remaining[i] -= 1
            i -= j
            path.append(grid[i])
    return path


def n_evaluations(path):
    """Network evaluations of a level path (its decreasing moves).

    Parameters
    ----------
    path : sequence of int
        Levels visited, as returned by :func:`resample_path`.

    Returns
    -------
    n : int
        The number of reverse steps along ``path``, one network evaluation each.
    """
    return sum(1 for a, b in zip(path, path[1:]) if b < a)


def _check_sampling(n_samples, eta, **tensors):
    """Refuse a bad ``n_samples`` or ``eta``, inputs that are not floating tensors, and
    inputs ``x*`` of different dtypes, before they reach the network (``y_context`` is
    converted to the inputs' dtype)."""
    n_samples = _check_count("n_samples", n_samples, 1)
    if isinstance(eta, bool) or not isinstance(eta, numbers.Real) or not 0 <= eta <= 1:
        raise ValueError(f"'eta' must be a number in [0, 1] (0: DDIM, 1: DDPM-like); got "
                         f"{eta!r}.")
    dtypes = set()
    for name, value in tensors.items():
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            got = (f"a tensor of {value.dtype}" if isinstance(value, torch.Tensor)
                   else type(value).__name__)
            raise TypeError(f"'{name}' must be a floating-point torch tensor; got {got}. "
                            "Convert it with torch.as_tensor(..., dtype=torch.float32).")
        if name.startswith("x"):
            dtypes.add(value.dtype)
    if len(dtypes) > 1:
        raise TypeError(f"'x_context' and 'x_target' must share one dtype; got "
                        f"{sorted(str(d) for d in dtypes)}.")
    return n_samples


def _as_batch(x, n_samples):
    """``[N, D]`` -> ``[S, N, D]`` (a view, no copy); ``[S, N, D]`` passes through."""
    if x.ndim == 2:
        return x.unsqueeze(0).expand(n_samples, *x.shape)
    if x.ndim == 3 and x.shape[0] == n_samples:
        return x
    raise ValueError(
        f"x must have shape [N, D] or [n_samples, N, D] = [{n_samples}, N, D]; got "
        f"{tuple(x.shape)}."
    )


def prior_sample(eps_model, schedule: NoiseSchedule, x, *, n_samples=1, n_steps=None, eta=1.0,
                 spacing="quadratic", mask=None):
    """Joint samples of the function values at ``x`` from the learned prior.

    Parameters
    ----------
    eps_model : callable
        ``eps_model(x, y_t, t, mask=None) -> eps_hat`` (see the module docstring).
    schedule : NoiseSchedule
        The noise schedule the model was trained with.
    x : Tensor of shape [N, D] or [S, N, D]
        Inputs of the function values, shared by all samples ([N, D]) or one set per sample
        ([S, N, D], ``S = n_samples``).
    n_samples : int, default=1
        ``S``: joint samples, drawn as one batch.
    n_steps : int, default=None
        Number of (strided) reverse steps; ``None`` runs all ``T`` DDPM steps.
    eta : float in [0, 1], default=1.0
        Stochasticity of the strided steps (1: DDPM-like, 0: DDIM).
    spacing : {"quadratic", "cubic", "uniform"}, default="quadratic"
        Placement of the strided levels (:func:`strided_levels`).
    mask : BoolTensor of shape [N] or [S, N], default=None
        ``True`` marks padding points, which the model does not attend to (for sets of
        different sizes in one batch); ``None``: every point is real.

    Returns
    -------
    y : Tensor of shape [S, N, 1]
        Joint prior samples of the function values at ``x`` (on the prior's scale).
    """
    n_samples = _check_sampling(n_samples, eta, x=x)
    xb = _as_batch(x, n_samples)
    S, N = xb.shape[0], xb.shape[1]
    mb = None if mask is None else _as_batch(mask.unsqueeze(-1), S).squeeze(-1)
    y = torch.randn(S, N, 1, device=xb.device, dtype=xb.dtype)
    levels = _levels(schedule, n_steps, spacing)
    for i, t in enumerate(levels):
        s = levels[i + 1] if i + 1 < len(levels) else -1
        tt = torch.full((S,), t, dtype=torch.long, device=xb.device)
        y = ddim_step(schedule, eps_model(xb, y, tt, mb), y, t, s, eta=eta)
    return y


class _TweedieGain:
    """The gains :math:`\\Sigma_{t,tc} \\Sigma_{t,cc}^{-1}` of the Tweedie correction
    (:func:`conditional_sample`) per level ``t``, for each sample, from one
    eigendecomposition :math:`K = V \\operatorname{diag}(d) V^\\top` of each covariance in
    use: :math:`\\Sigma_t = V \\operatorname{diag}(d \\lambda_t / (d + \\lambda_t))
    V^\\top`. Returns ``[M, C]`` (one covariance for all samples) or ``[S, M, C]``."""

    def __init__(self, covariance, index, C, M, S, schedule, like):
        N = C + M
        given = torch.as_tensor(covariance, dtype=torch.float64, device="cpu")
        K = given.unsqueeze(0) if given.ndim == 2 else given
        if K.ndim != 3 or K.shape[1:] != (N, N) or not torch.isfinite(K).all():
            raise ValueError(f"'covariance' must be a finite [C + M, C + M] = [{N}, {N}] "
                             f"matrix (the prior's covariance at [x_context; x_target]), or a "
                             f"stack [k, {N}, {N}] of them; got shape {tuple(given.shape)}.")
        if index is None:
            if len(K) not in (1, S):
                raise ValueError(f"A stack of {len(K)} covariances needs 'covariance_index' "
                                 f"(the matrix of each of the n_samples = {S} samples) unless "
                                 f"it holds one matrix or one per sample.")
            index = torch.zeros(S, dtype=torch.long) if len(K) == 1 else torch.arange(S)
        index = torch.as_tensor(index).cpu()
        if (index.shape != (S,) or index.is_floating_point() or index.is_complex()
                or (S and (int(index.min()) < 0 or int(index.max()) >= len(K)))):
            raise ValueError(f"'covariance_index' must hold n_samples = {S} integers in "
                             f"[0, {len(K)}); got {tuple(index.shape)} values "
                             f"{index.tolist()[:8]}.")
        used, self.index = torch.unique(index.long(), return_inverse=True)
        d, V = torch.linalg.eigh(0.5 * (K[used] + K[used].transpose(1, 2)))
        low = d[:, 0] < -1e-8 * d[:, -1].clamp_min(1e-300)
        if low.any():
            raise ValueError(f"'covariance' must be positive semi-definite; the smallest "
                             f"eigenvalue of matrix {int(used[low][0])} is "
                             f"{float(d[low][0, 0]):.3g}.")
        self.d, self.V, self.C = d.clamp_min(0.0), V, C
        self.schedule, self.like = schedule, like
        self.cache = {}

    def __call__(self, t):
        if t not in self.cache:
            ab = _ab(self.schedule, t)
            lam = (1.0 - ab) / ab
            g = (self.d * lam / (self.d + lam)).unsqueeze(1)  # Cov[y_0 | y_t]'s eigenvalues
            Vc, Vt = self.V[:, :self.C], self.V[:, self.C:]
            cc = (Vc * g) @ Vc.transpose(1, 2)  # [k, C, C]
            ct = (Vc * g) @ Vt.transpose(1, 2)  # [k, C, M]
            jitter = 1e-10 * cc.diagonal(dim1=1, dim2=2).mean(1) + 1e-300
            eye = torch.eye(self.C, dtype=cc.dtype)
            gain = torch.linalg.solve(cc + jitter[:, None, None] * eye, ct).transpose(1, 2)
            gain = gain[0] if len(gain) == 1 else gain[self.index]  # [M, C] or [S, M, C]
            self.cache[t] = gain.to(dtype=self.like.dtype, device=self.like.device)
        return self.cache[t]


def conditional_sample(eps_model, schedule: NoiseSchedule, x_context, y_context, x_target, *,
                       n_samples=1, n_resample=5, n_steps=None, eta=1.0,
                       spacing="quadratic", jump_length=1, fine_level=0, n_resample_fine=0,
                       covariance=None, covariance_index=None, progress=False):
    """Joint samples at ``x_target`` given the context, by RePaint or Tweedie conditioning.

    Parameters
    ----------
    eps_model : callable
        ``eps_model(x, y_t, t, mask=None) -> eps_hat`` (see the module docstring).
    schedule : NoiseSchedule
        The noise schedule the model was trained with.
    x_context : Tensor of shape [C, D]
        Inputs of the observed values (``C = 0``: no context, a prior sample).
    y_context : Tensor of shape [C, 1], [C] or [n_samples, C, 1]
        Clean context values (on the scale the prior was trained on); the last form gives
        every sample its own values at the same inputs (e.g. the context divided by a
        per-sample scale).
    x_target : Tensor of shape [M, D]
        Inputs at which to sample the function jointly.
    n_samples : int, default=1
        ``S``: all samples run through the network as one batch.
    n_resample : int, default=5
        ``U``: resampling repeats per jump position (0 = plain context replacement).
    n_steps : int, default=None
        Number of reverse steps; ``None`` uses all ``T`` levels (the paper's DDPM sampler),
        fewer give the fast strided sampler (:func:`strided_levels`).
    eta : float in [0, 1], default=1.0
        Stochasticity of the reverse steps (1: DDPM-like, 0: DDIM).
    spacing : {"quadratic", "cubic", "uniform"}, default="quadratic"
        Placement of the strided levels (:func:`strided_levels`).
    jump_length : int, default=1
        Grid positions the targets jump back when resampling (:func:`resample_path`); 1 is the
        NDP paper's one-step resampling.
    fine_level, n_resample_fine : int, default=0
        A tiered path (:func:`resample_path`): jumps back to levels below ``fine_level`` are
        repeated ``n_resample_fine`` times instead of ``n_resample``; ``fine_level=0``
        resamples every step ``n_resample`` times.
    covariance : Tensor or ndarray of shape [C + M, C + M], default=None
        The prior's covariance of the values at ``[x_context; x_target]`` (observation
        noise included, on the prior's scale). Given, every reverse step conditions by
        **Tweedie correction** (below) instead of relying on resampling alone: the
        network's denoised estimate of the targets is moved by the Gaussian conditional
        of the clean context given the current level. ``None``: RePaint conditioning only.
        A stack ``[k, C + M, C + M]`` gives the samples their own matrices (a mixture of
        GPs: each sample follows one component), chosen by ``covariance_index``.
    covariance_index : Tensor or ndarray of shape [n_samples], default=None
        The matrix of ``covariance``'s stack each sample takes; ``None``: the one matrix,
        or, for a stack of ``n_samples`` matrices, one per sample.
    progress : bool, default=False
        Show a ``tqdm`` bar over the network evaluations (on standard error).

    Returns
    -------
    y : Tensor of shape [S, M, 1]
        Joint samples of the function values at ``x_target`` (on the prior's scale,
        observation noise included when the prior was trained on noisy values).

    Notes
    -----
    Network evaluations: ``n_evaluations(resample_path(levels, n_resample, jump_length))``;
    with ``jump_length=1``, ``(len(levels) - 1) * (n_resample + 1) + 1``.

    **Tweedie correction** (``covariance`` given). RePaint shows the network the context
    noised to the current level, so its denoised estimate
    :math:`\\hat y_0 = E[y_0 \\mid y_t]` knows the context only through that noisy copy; the
    targets drift from a smooth context and resampling pulls them back slowly (with an
    exact noise model, 32 cubic levels with ``U = 4`` leave the mean of SE draws of
    lengthscale 1.2 on the domain more than a posterior variance from the exact one). The
    correction conditions the estimate on the clean context instead: with
    :math:`\\Sigma_t = \\operatorname{Cov}[y_0 \\mid y_t] = K - K (K + \\lambda_t I)^{-1} K`,
    :math:`\\lambda_t = (1 - \\bar\\alpha_t) / \\bar\\alpha_t`, for a Gaussian prior
    :math:`y_0 \\sim N(0, K)` (Tweedie's second moment),

    .. math::

        \\tilde y_0^{\\,\\mathrm{tgt}} = \\hat y_0^{\\,\\mathrm{tgt}} + \\Sigma_{t,\\mathrm{tc}}
        \\Sigma_{t,\\mathrm{cc}}^{-1} \\big(y_0^{\\mathrm{ctx}} - \\hat y_0^{\\,\\mathrm{ctx}}
        \\big),

    and the step to level ``s`` uses :math:`\\tilde y_0` and the noise it implies. For
    Gaussian data with an exact noise model :math:`\\tilde y_0 = E[y_0^{\\mathrm{tgt}} \\mid
    y_t^{\\mathrm{tgt}}, y_0^{\\mathrm{ctx}}]` exactly, so the sampler is the plain reverse
    process of the posterior: no resampling is needed, and its mean is the exact posterior
    mean at any step count up to the start from pure noise (within 0.03 posterior standard
    deviations on the test task of ``tests/diffusion/test_samplers.py``). With a trained
    network the network still supplies :math:`\\hat y_0` and ``covariance`` is the Gaussian
    approximation of the prior the correction assumes: a GP prior's own kernel, or, for a
    mixture of GPs, one component per sample drawn by its posterior weight given the context
    (:meth:`PriorConfig.context_components
    <skdiff.diffusion.PriorConfig.context_components>`, what ``NDPRegressor`` passes) or
    their weighted average (:meth:`PriorConfig.context_covariance
    <skdiff.diffusion.PriorConfig.context_covariance>`).
    The gains :math:`\\Sigma_{t,\\mathrm{tc}} \\Sigma_{t,\\mathrm{cc}}^{-1}` are computed once
    per level, in float64, from one eigendecomposition of ``covariance``.

    Choice of the fast setting, measured on the paper's interpolation task (Dutordoir et al.,
    2023, Sec. 5.1: SE GP draws, 1-9 context points, 50 targets; ``benchmarks/
    ndp_sampler_network.py``) with the shipped ``"se"`` network, paired with the paper's sampler
    on the same tasks. Score: joint log-likelihood per target point of the Gaussian
    moment-matched to 128 samples, in expectation over the held-out targets (the paper's metric
    without the noise of the single target draw):

    ==========================  =====  ==========================
    sampler                     evals  difference to DDPM-500 U=5
    ==========================  =====  ==========================
    DDPM-500, U = 5              2995  0 (0.222 nats per point)
    32 cubic steps, U = 4         141  −0.020 ± 0.018
    20 quadratic steps, U = 4      96  −0.079 ± 0.016
    ==========================  =====  ==========================

    On 8 other tasks (task seed 1), each candidate run twice, with the shipped ``"se"`` and
    ``"matern52"`` networks on their own kernel's tasks (``benchmarks/results/
    ndp_sampler_network_{se,matern52}.json``), difference to the paper's sampler in
    expectation over the targets:

    ======================================  =====  ===============  ===============
    sampler                                 evals  SE               Matérn-5/2
    ======================================  =====  ===============  ===============
    32 cubic steps, U = 4                     141  −0.008 ± 0.012   −0.019 ± 0.014
    40 cubic steps, U = 4 / 1 below 40        140  +0.042 ± 0.011   +0.028 ± 0.013
    55 cubic steps, U = 2                     142  +0.018 ± 0.011   +0.009 ± 0.013
    ======================================  =====  ===============  ===============

    On the 16 tasks of the paper-task table (task seed 0, ``ndp_sampler_network_{se,
    matern52}_seed0.json``), paired against the fast setting, the tiered path scores
    +0.027 ± 0.008 (SE) and +0.033 ± 0.006 (Matérn-5/2) in expectation over the targets.

    With the network, the sample covariance near the observation-noise floor is right only
    with small steps at the lowest levels (20 quadratic steps under-disperse it by about 14 %),
    and conditioning on the context needs resampling at every step: 50 steps with ``U = 2`` or
    75 with ``U = 1`` score as high or higher but spread the samples 1.4-2.2 times wider and
    further from the posterior mean in the directions the context pins down. With an oracle
    noise model (``benchmarks/ndp_sampler_oracle.py``), 32 cubic steps with ``U = 4`` (141
    evaluations) are within 0.01-0.03 nats per point of the paper's sampler (KL from the
    exact posterior 0.030, 0.049, 0.082 against 0.021, 0.032, 0.060 with 1, 5 and 9 context
    points); a RePaint jump of 2 changes that by under 0.002, ``eta < 1`` makes it worse,
    and 20 quadratic steps with ``U = 6`` (134 evaluations) come as close or closer with 5
    and more context points. The benchmark pages hold the table.

    Examples
    --------
    >>> import torch
    >>> from skdiff.diffusion import NoiseSchedule, conditional_sample
    >>> sched = NoiseSchedule.official(T=50)
    >>> zero_eps = lambda x, y, t, mask=None: torch.zeros_like(y)
    >>> y = conditional_sample(zero_eps, sched, torch.zeros(3, 1), torch.zeros(3, 1),
    ...                        torch.ones(4, 1), n_samples=8, n_steps=10, n_resample=1)
    >>> tuple(y.shape)
    (8, 4, 1)
    """
    n_samples = _check_sampling(n_samples, eta, x_context=x_context, y_context=y_context,
                                x_target=x_target)
    _check_count("n_resample", n_resample, 0)
    _check_count("jump_length", jump_length, 1)
    _check_count("fine_level", fine_level, 0)
    _check_count("n_resample_fine", n_resample_fine, 0)
    if x_context.dim() != 2 or x_target.dim() != 2 or x_context.shape[1] != x_target.shape[1]:
        raise ValueError(f"'x_context' and 'x_target' must have shapes [C, D] and [M, D] with "
                         f"the same D; got {tuple(x_context.shape)} and "
                         f"{tuple(x_target.shape)}.")
    C = x_context.shape[0]
    if y_context.dim() != 3 and y_context.numel() != C:
        raise ValueError(f"'y_context' must hold one value per context point: shape [C] or "
                         f"[C, 1] with C = {C} (or [n_samples, C, 1]); got "
                         f"{tuple(y_context.shape)}.")
    if C == 0:
        return prior_sample(eps_model, schedule, x_target, n_samples=n_samples,
                            n_steps=n_steps, eta=eta, spacing=spacing)
    S, M = n_samples, x_target.shape[0]
    if y_context.dim() == 3:
        if tuple(y_context.shape) != (S, C, 1):
            raise ValueError(f"A per-sample y_context must have shape (n_samples, C, 1) = "
                             f"({S}, {C}, 1); got {tuple(y_context.shape)}.")
        y_ctx = y_context.to(x_target.dtype)
    else:
        y_ctx = y_context.reshape(C, 1).to(x_target.dtype).unsqueeze(0).expand(S, C, 1)
    x_all = torch.cat([x_context, x_target], 0).unsqueeze(0).expand(S, C + M, -1)  # [S, N, D]
    y = torch.randn(S, M, 1, device=x_target.device, dtype=x_target.dtype)  # targets at level t
    path = resample_path(_levels(schedule, n_steps, spacing), n_resample, jump_length,
                         fine_level=fine_level, n_resample_fine=n_resample_fine)
    gain = None if covariance is None else _TweedieGain(covariance, covariance_index, C, M, S,
                                                         schedule, y)

    def reverse(y_tgt, t, s):
        ctx_t = schedule.q_sample(y_ctx, t)  # fresh context noise from q(y_t | y_0)
        y_all = torch.cat([ctx_t, y_tgt], 1)  # [S, N, 1]
        tt = torch.full((S,), t, dtype=torch.long, device=y_tgt.device)
        eps = eps_model(x_all, y_all, tt, None)
        if gain is None:
            return ddim_step(schedule, eps, y_all, t, s, eta=eta)[:, C:]  # keep the targets
        a, sd = math.sqrt(_ab(schedule, t)), math.sqrt(1.0 - _ab(schedule, t))
        y0 = (y_all - sd * eps) / a  # the network's denoised estimate, [S, N, 1]
        y0_tgt = y0[:, C:] + gain(t) @ (y_ctx - y0[:, :C])  # conditioned on the clean context
        return ddim_step(schedule, (y_tgt - a * y0_tgt) / sd, y_tgt, t, s, eta=eta)

    from tqdm.auto import tqdm

    with tqdm(total=n_evaluations(path), desc="sampling", unit="eval", leave=False,
              disable=not progress) as bar:
        for t, s in zip(path, path[1:]):
            if s < t:
                y = reverse(y, t, s)
                bar.update()
            else:
                y = schedule.q_jump(y, t, s)
    return y
