"""Noise schedules and the closed-form forward process of Neural Diffusion Processes.

Conventions (those of the official code, ``neural_diffusion_processes/process.py``): the
``T`` noise levels are indexed ``t = 0, ..., T-1``; level ``t`` has the marginal

.. math::

    q(y_t \\mid y_0) = \\mathcal{N}\\big(\\sqrt{\\bar\\alpha_t}\\, y_0,\\;
    (1 - \\bar\\alpha_t) I\\big), \\qquad
    \\bar\\alpha_t = \\prod_{s=0}^{t} (1 - \\beta_s),

and one forward step from level ``t-1`` to ``t`` is
:math:`q(y_t \\mid y_{t-1}) = \\mathcal{N}(\\sqrt{1-\\beta_t}\\, y_{t-1}, \\beta_t I)`
(level ``-1`` is the clean data ``y_0``). The reverse step at index ``t`` maps level ``t`` to
level ``t-1``, so the step at ``t = 0`` returns clean data. Only ``y`` is diffused; ``x`` stays
clean (Dutordoir et al., 2023, Sec. 3).

All schedule arithmetic runs in float64 and is stored as float32 buffers, so a schedule moves
with ``.to(device)`` like any module.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn

__all__ = ["NoiseSchedule"]


def _cosine_alpha_bar_betas(T, s=0.008):
    """Betas of Nichol & Dhariwal's cosine schedule (float64), clipped to [1e-4, 0.9999]."""
    x = torch.linspace(0, T, T + 1, dtype=torch.float64)
    f = torch.cos(((x / T) + s) / (1 + s) * math.pi * 0.5) ** 2
    alpha_bars = f / f[0]
    betas = 1.0 - alpha_bars[1:] / alpha_bars[:-1]
    return betas.clamp(1e-4, 0.9999)


class NoiseSchedule(nn.Module):
    """A variance-preserving noise schedule :math:`\\beta_0, \\dots, \\beta_{T-1}`.

    Buffers (float32, shape ``(T,)``): ``betas``, ``alphas`` (:math:`1-\\beta_t`),
    ``alpha_bars`` (:math:`\\bar\\alpha_t`), ``alpha_bars_prev`` (:math:`\\bar\\alpha_{t-1}`,
    with :math:`\\bar\\alpha_{-1} = 1`), ``sqrt_alpha_bars``, ``sqrt_one_minus_alpha_bars``,
    ``posterior_variance`` (:math:`\\tilde\\beta_t = \\beta_t (1-\\bar\\alpha_{t-1}) /
    (1-\\bar\\alpha_t)`).

    Parameters
    ----------
    betas : array-like of shape (T,)
        Per-step noise variances, each in (0, 1).

    See Also
    --------
    NoiseSchedule.official : the schedule of the released NDP models.

    References
    ----------
    Ho, Jain & Abbeel, "Denoising Diffusion Probabilistic Models", NeurIPS 2020, Eq. 4.
    Nichol & Dhariwal, "Improved Denoising Diffusion Probabilistic Models", ICML 2021, Eq. 17.
    Dutordoir et al., "Neural Diffusion Processes", ICML 2023, Sec. 3.

    Examples
    --------
    >>> import torch
    >>> from skdiff.diffusion import NoiseSchedule
    >>> sched = NoiseSchedule.official()
    >>> sched.T
    500
    >>> y0 = torch.zeros(2, 5, 1)
    >>> sched.q_sample(y0, torch.tensor([0, 499])).shape
    torch.Size([2, 5, 1])
    """

    def __init__(self, betas):
        super().__init__()
        betas = torch.as_tensor(betas, dtype=torch.float64).detach().cpu().flatten()
        if betas.numel() < 1:
            raise ValueError("'betas' must hold at least one noise level; got an empty array.")
        if not torch.all((betas > 0) & (betas < 1)):
            raise ValueError(
                f"Every beta must lie in (0, 1); got min {betas.min().item():g}, "
                f"max {betas.max().item():g}."
            )
        alphas = 1.0 - betas
        alpha_bars = torch.cumprod(alphas, 0)
        alpha_bars_prev = torch.cat([torch.ones(1, dtype=torch.float64), alpha_bars[:-1]])
        post_var = betas * (1.0 - alpha_bars_prev) / (1.0 - alpha_bars)
        f32 = dict(dtype=torch.float32)
        self.register_buffer("betas", betas.to(**f32))
        self.register_buffer("alphas", alphas.to(**f32))
        self.register_buffer("alpha_bars", alpha_bars.to(**f32))
        self.register_buffer("alpha_bars_prev", alpha_bars_prev.to(**f32))
        self.register_buffer("sqrt_alpha_bars", alpha_bars.sqrt().to(**f32))
        self.register_buffer("sqrt_one_minus_alpha_bars", (1.0 - alpha_bars).sqrt().to(**f32))
        self.register_buffer("posterior_variance", post_var.to(**f32))

    # -- constructors ----------------------------------------------------------------------
    @classmethod
    def official(cls, T=500, beta_start=3e-4, beta_end=0.5):
        """The released NDP schedule: cosine-shaped betas min-max rescaled to [3e-4, 0.5].

        Follows ``cosine_schedule`` in the official ``process.py``: Nichol & Dhariwal's cosine
        betas clipped to [1e-4, 0.9999], then affinely rescaled so the smallest is
        ``beta_start`` and the largest ``beta_end`` (:math:`\\bar\\alpha_{T-1} \\approx 2e-3`
        for ``T=500``).

        Parameters
        ----------
        T : int, default=500
            Number of noise levels (the released models use 500).
        beta_start : float, default=3e-4
            Noise variance of the first step (the smallest beta).
        beta_end : float, default=0.5
            Noise variance of the last step (the largest beta).

        Returns
        -------
        schedule : NoiseSchedule
            The schedule of ``T`` levels.
        """
        T = _check_T(T)
        betas = _cosine_alpha_bar_betas(T)
        betas = (betas - betas.min()) / (betas.max() - betas.min())
        return cls(betas * (beta_end - beta_start) + beta_start)

    @classmethod
    def linear(cls, T=1000, beta_start=1e-4, beta_end=0.02):
        """Linearly spaced betas (Ho et al., 2020).

        Parameters
        ----------
        T : int, default=1000
            Number of noise levels.
        beta_start : float, default=1e-4
            Noise variance of the first step.
        beta_end : float, default=0.02
            Noise variance of the last step.

        Returns
        -------
        schedule : NoiseSchedule
            The schedule of ``T`` levels.
        """
        T = _check_T(T)
        return cls(torch.linspace(beta_start, beta_end, T, dtype=torch.float64))

    @classmethod
    def cosine(cls, T=1000, s=0.008):
        """Nichol & Dhariwal's cosine schedule: :math:`\\bar\\alpha(t) \\propto
        \\cos^2\\big(\\frac{t/T + s}{1 + s}\\frac{\\pi}{2}\\big)`, betas clipped to 0.9999.

        Parameters
        ----------
        T : int, default=1000
            Number of noise levels.
        s : float, default=0.008
            Offset that keeps the first betas away from 0 (Nichol & Dhariwal's value).

        Returns
        -------
        schedule : NoiseSchedule
            The schedule of ``T`` levels.
        """
        T = _check_T(T)
        return cls(_cosine_alpha_bar_betas(T, s=s))

    @property
    def T(self):
        """Number of noise levels."""
        return int(self.betas.shape[0])

    # -- forward process -------------------------------------------------------------------
    @staticmethod
    def _expand(values, like):
        """Per-batch values of shape (B,) -> (B, 1, ..., 1) broadcastable against ``like``."""
        return values.reshape(values.shape + (1,) * (like.ndim - values.ndim)).to(like.dtype)

    def _index(self, buf, t, like):
        t = torch.as_tensor(t, dtype=torch.long, device=buf.device)
        if t.ndim == 0:
            t = t.expand(like.shape[0]) if like.ndim > 0 else t
        return self._expand(buf[t], like)

    def q_sample(self, y0, t, noise=None):
        """Draw :math:`y_t \\sim q(y_t \\mid y_0)` in closed form.

        Parameters
        ----------
        y0 : Tensor of shape (B, ...)
            Clean values.
        t : int or LongTensor of shape (B,)
            Noise level of each batch element, in ``[0, T-1]``.
        noise : Tensor like ``y0``, default=None
            Standard normal noise; drawn when ``None``.

        Returns
        -------
        y_t : Tensor like ``y0``
            :math:`\\sqrt{\\bar\\alpha_t}\\, y_0 + \\sqrt{1-\\bar\\alpha_t}\\, \\epsilon`.
        """
        if noise is None:
            noise = torch.randn_like(y0)
        a = self._index(self.sqrt_alpha_bars, t, y0)
        s = self._index(self.sqrt_one_minus_alpha_bars, t, y0)
        return a * y0 + s * noise

    def q_step(self, y_prev, t, noise=None):
        """One forward step from level ``t-1`` to ``t``:
        :math:`y_t = \\sqrt{1-\\beta_t}\\, y_{t-1} + \\sqrt{\\beta_t}\\, \\epsilon`.

        Parameters
        ----------
        y_prev : Tensor of shape (B, ...)
            Values at level ``t-1`` (clean data for ``t = 0``).
        t : int or LongTensor of shape (B,)
            Level reached by the step, in ``[0, T-1]``, per batch element.
        noise : Tensor like ``y_prev``, default=None
            Standard normal noise :math:`\\epsilon`; drawn from torch's generator when
            ``None``.

        Returns
        -------
        y_t : Tensor like ``y_prev``
            Values at level ``t``.
        """
        if noise is None:
            noise = torch.randn_like(y_prev)
        return (self._index(self.alphas, t, y_prev).sqrt() * y_prev
                + self._index(self.betas, t, y_prev).sqrt() * noise)

    def q_jump(self, y_s, s, t, noise=None):
        """Forward from level ``s`` to a higher level ``t`` (``s = -1`` is clean data):
        :math:`q(y_t \\mid y_s) = \\mathcal{N}(\\sqrt{\\bar\\alpha_t/\\bar\\alpha_s}\\, y_s,
        (1 - \\bar\\alpha_t/\\bar\\alpha_s) I)`.

        Parameters
        ----------
        y_s : Tensor of shape (B, ...)
            Values at level ``s``.
        s : int or LongTensor of shape (B,)
            Level of ``y_s``, in ``[-1, T-1]``.
        t : int or LongTensor of shape (B,)
            Target level, in ``[s, T-1]``.
        noise : Tensor like ``y_s``, default=None
            Standard normal noise; drawn from torch's generator when ``None``.

        Returns
        -------
        y_t : Tensor like ``y_s``
            Values at level ``t``.
        """
        if noise is None:
            noise = torch.randn_like(y_s)
        ratio = self.alpha_bar(t, y_s) / self.alpha_bar(s, y_s)
        return ratio.sqrt() * y_s + (1.0 - ratio).clamp_min(0).sqrt() * noise

    def alpha_bar(self, t, like):
        """:math:`\\bar\\alpha_t` broadcast against ``like``; ``t = -1`` gives 1 (clean).

        Parameters
        ----------
        t : int or LongTensor of shape (B,)
            Noise level, in ``[-1, T-1]``, one for all batch elements or one each.
        like : Tensor of shape (B, ...)
            Tensor whose batch size, number of dimensions and dtype the result takes.

        Returns
        -------
        alpha_bar : Tensor of shape (B, 1, ..., 1)
            :math:`\\bar\\alpha_t` of every batch element, broadcastable against ``like``.
        """
        t = torch.as_tensor(t, dtype=torch.long, device=self.alpha_bars.device)
        padded = torch.cat([self.alpha_bars.new_ones(1), self.alpha_bars])
        if t.ndim == 0 and like.ndim > 0:
            t = t.expand(like.shape[0])
        return self._expand(padded[t + 1], like)

    def extra_repr(self):
        return (f"T={self.T}, beta_0={self.betas[0].item():.3g}, "
                f"beta_T-1={self.betas[-1].item():.3g}, "
                f"alpha_bar_T-1={self.alpha_bars[-1].item():.3g}")


def _check_T(T):
    if isinstance(T, bool) or not isinstance(T, numbers.Integral) or T < 1:
        raise ValueError(f"'T' (the number of noise levels) must be an integer >= 1; got {T!r}.")
    return int(T)
