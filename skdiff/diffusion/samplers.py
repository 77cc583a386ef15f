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

**RePaint conditioning** (Lugmayr et al., 2022; Dutordoir et al., 2023, Sec. 4.1):
the network always sees the context and the targets together at the same noise level. For each
step ``t -> s`` of the (possibly strided) level sequence: repeat ``U`` times {noise the context
afresh to level ``t`` from the forward marginal; one reverse step on ``[context; targets]``; keep
the targets; push the targets back from ``s`` to ``t`` with the forward kernel
:math:`q(y_t \\mid y_s)`}, then one final reverse step whose targets are kept. The last step to
clean data is a single reverse step. ``levels = all T levels`` and ``U = 5`` is the paper's
sampler, :math:`(T-1)(U+1) + 1` network evaluations.
"""

from __future__ import annotations

import math
import numbers

import torch

from .schedule import NoiseSchedule

__all__ = [
    "conditional_sample",
    "ddim_step",
    "ddpm_step",
    "prior_sample",
    "strided_levels",
]


def strided_levels(T, n_steps, spacing="quadratic"):
    """Decreasing noise levels from ``T-1`` to ``0``, at most ``n_steps`` of them.

    ``spacing="uniform"`` spaces them evenly in index; ``"quadratic"`` places level
    :math:`\\lfloor (T-1)(1 - i/(n-1))^2 \\rceil`, i.e. denser at low noise (Song, Meng &
    Ermon, 2021, Sec. D.2). The last level is always ``0`` so the final step lands on clean data
    from the least noisy level. ``n_steps >= T`` gives all ``T`` levels.

    Measured with an oracle noise model for GP data (exact moment propagation of the sampler,
    20 steps with 4 resamples, 3-9 context points): quadratic spacing halves to thirds the
    KL divergence to the exact posterior compared with uniform spacing.
    """
    if isinstance(n_steps, bool) or not isinstance(n_steps, numbers.Integral) or n_steps < 1:
        raise ValueError(f"'n_steps' must be an integer >= 1; got {n_steps!r}.")
    if spacing not in ("uniform", "quadratic"):
        raise ValueError(f"'spacing' must be 'uniform' or 'quadratic'; got {spacing!r}.")
    if n_steps >= T:
        return list(range(T - 1, -1, -1))
    if n_steps == 1:
        return [T - 1]
    u = torch.linspace(1, 0, int(n_steps), dtype=torch.float64)
    if spacing == "quadratic":
        u = u ** 2
    levels = (u * (T - 1)).round().long()
    return torch.unique_consecutive(levels).tolist()


def _ab(schedule, t):
    """:math:`\\bar\\alpha_t` as a Python float (``t = -1``: 1.0)."""
    return 1.0 if t < 0 else float(schedule.alpha_bars.double()[t])


def ddim_step(schedule, eps_hat, y_t, t, s, *, eta=1.0, noise=None):
    """Generalised reverse step from level ``t`` to ``s < t`` (see the module docstring).

    Parameters
    ----------
    schedule : NoiseSchedule
    eps_hat : Tensor
        Predicted noise, shape like ``y_t``.
    y_t : Tensor
        Values at level ``t``.
    t, s : int
        Current and target levels (``s = -1``: clean data).
    eta : float, default=1.0
        0 gives the deterministic DDIM step, 1 the DDPM-like stochastic step.
    noise : Tensor, default=None
        Standard normal noise (drawn when ``None``).
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


def ddpm_step(schedule, eps_hat, y_t, t, *, noise=None):
    """One DDPM reverse step from level ``t`` to ``t - 1`` (:math:`\\sigma_t^2 = \\tilde\\beta_t`).

    Equivalent to :func:`ddim_step` with ``s = t - 1`` and ``eta = 1``.
    """
    return ddim_step(schedule, eps_hat, y_t, t, t - 1, eta=1.0, noise=noise)


def _levels(schedule, n_steps, spacing):
    if n_steps is None:
        return list(range(schedule.T - 1, -1, -1))
    return strided_levels(schedule.T, n_steps, spacing)


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
    x : Tensor of shape [N, D] or [S, N, D]
    n_samples : int, default=1
    n_steps : int, default=None
        Number of (strided) reverse steps; ``None`` runs all ``T`` DDPM steps.
    eta : float, default=1.0
        Stochasticity of the strided steps (1: DDPM-like, 0: DDIM).
    spacing : {"quadratic", "uniform"}, default="quadratic"
        Placement of the strided levels (:func:`strided_levels`).
    mask : BoolTensor of shape [N] or [S, N], default=None

    Returns
    -------
    y : Tensor of shape [S, N, 1]
    """
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


def conditional_sample(eps_model, schedule: NoiseSchedule, x_context, y_context, x_target, *,
                       n_samples=1, n_resample=5, n_steps=None, eta=1.0,
                       spacing="quadratic"):
    """Joint samples at ``x_target`` given the context, by RePaint conditioning.

    Parameters
    ----------
    eps_model : callable
        ``eps_model(x, y_t, t, mask=None) -> eps_hat`` (see the module docstring).
    schedule : NoiseSchedule
    x_context : Tensor of shape [C, D]
    y_context : Tensor of shape [C, 1] or [C]
        Clean context values (on the scale the prior was trained on).
    x_target : Tensor of shape [M, D]
    n_samples : int, default=1
        ``S``: all samples run through the network as one batch.
    n_resample : int, default=5
        ``U``: resampling repeats per step (0 = plain context replacement).
    n_steps : int, default=None
        Number of reverse steps; ``None`` uses all ``T`` levels (the paper's DDPM sampler),
        fewer give the fast strided sampler (:func:`strided_levels`).
    eta : float, default=1.0
        Stochasticity of the reverse steps (1: DDPM-like, 0: DDIM).
    spacing : {"quadratic", "uniform"}, default="quadratic"
        Placement of the strided levels (:func:`strided_levels`).

    Returns
    -------
    y : Tensor of shape [S, M, 1]
        Joint samples of the clean function values at ``x_target``.

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
    if isinstance(n_resample, bool) or not isinstance(n_resample, numbers.Integral) \
            or n_resample < 0:
        raise ValueError(f"'n_resample' must be an integer >= 0; got {n_resample!r}.")
    C = x_context.shape[0]
    if C == 0:
        return prior_sample(eps_model, schedule, x_target, n_samples=n_samples,
                            n_steps=n_steps, eta=eta, spacing=spacing)
    y_context = y_context.reshape(C, 1).to(x_target.dtype)
    S, M = n_samples, x_target.shape[0]
    x_all = torch.cat([x_context, x_target], 0).unsqueeze(0).expand(S, C + M, -1)  # [S, N, D]
    y_ctx = y_context.unsqueeze(0).expand(S, C, 1)  # [S, C, 1]
    y = torch.randn(S, M, 1, device=x_target.device, dtype=x_target.dtype)  # targets at level t
    levels = _levels(schedule, n_steps, spacing)

    def reverse(y_tgt, t, s):
        ctx_t = schedule.q_sample(y_ctx, t)  # fresh context noise from q(y_t | y_0)
        y_all = torch.cat([ctx_t, y_tgt], 1)  # [S, N, 1]
        tt = torch.full((S,), t, dtype=torch.long, device=y_tgt.device)
        eps = eps_model(x_all, y_all, tt, None)
        return ddim_step(schedule, eps, y_all, t, s, eta=eta)[:, C:]  # keep the targets

    for i, t in enumerate(levels):
        s = levels[i + 1] if i + 1 < len(levels) else -1
        if s >= 0:
            for _ in range(n_resample):
                y = schedule.q_jump(reverse(y, t, s), s, t)  # back up to level t
        y = reverse(y, t, s)
    return y
