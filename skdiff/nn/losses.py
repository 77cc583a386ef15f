r"""Per-row weighted losses of the estimators.

Targets travel as a dict ``{"y": values, "w": row weights}``. A row whose weight is 0 (an
unlabelled row, or a zero ``sample_weight``) contributes nothing, and the loss is the weighted
mean over the remaining rows,

.. math:: L = \frac{\sum_i w_i\, \ell_i}{\sum_i w_i},

which is ``0`` (with a gradient of zeros) for a batch without any weight. With unit weights it
is the plain mean of :func:`~torch.nn.functional.cross_entropy` or of the squared error.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["GaussianNLL", "WeightedCrossEntropy", "WeightedMSE"]


def _labelled_weights(y, w):
    """``w`` with 0 on the rows whose target ``y`` (b, k) holds a NaN (unlabelled rows)."""
    labelled = ~torch.isnan(y).any(dim=-1)
    return torch.where(labelled, w, torch.zeros_like(w))


def _weighted_mean(per_row, w):
    total = w.sum()
    if not bool(total > 0):
        return per_row.sum() * 0.0
    return (per_row * w).sum() / total


class WeightedCrossEntropy(nn.Module):
    """Cross-entropy of logits (b, k) against class codes ``y`` (b,), weighted per row.

    Rows with a negative code (unlabelled) get weight 0 whatever ``w`` says.
    """

    def forward(self, logits, target):
        y, w = target["y"], target["w"].to(logits.dtype)
        labelled = y >= 0
        w = torch.where(labelled, w, torch.zeros_like(w))
        per_row = F.cross_entropy(logits, y.clamp_min(0), reduction="none")
        return _weighted_mean(per_row, w)


class WeightedMSE(nn.Module):
    """Mean squared error over the outputs of each row (b, k), weighted per row.

    Rows whose target is NaN (unlabelled) get weight 0 whatever ``w`` says.
    """

    def forward(self, pred, target):
        y = target["y"]
        w = _labelled_weights(y, target["w"].to(pred.dtype))
        err = (pred - torch.nan_to_num(y)) ** 2
        return _weighted_mean(err.mean(dim=-1), w)


class GaussianNLL(nn.Module):
    r"""Loss of a Gaussian head whose outputs are (mean, raw variance) halves, per row.

    The mean is trained by squared error and the variance, :math:`\mathrm{softplus}(r) +
    10^{-6}`, by the Gaussian negative log-likelihood around the *detached* mean:

    .. math:: \ell = m\,\overline{(y - \mu)^2} + \tfrac12\,\overline{\log\sigma^2 +
        \mathrm{sg}[(y - \mu)^2]/\sigma^2}

    (bars: means over the outputs; :math:`m` is ``mean_weight``, 0.5 by default, the Gaussian
    NLL's own weight; with 1 the mean's gradient is exactly that of :class:`WeightedMSE`, so
    an L2 ``weight_decay`` regularises the mean as much as without the variance half).
    Plain NLL lets the variance's gradient reach the mean, and the loss falls by widening
    the variance instead of fitting the mean (Seitzer et al., ICLR 2022); the network feeds
    the variance half detached features as well. Rows whose target is NaN (unlabelled) get
    weight 0 whatever ``w`` says.
    """

    def __init__(self, mean_weight=0.5):
        super().__init__()
        self.mean_weight = mean_weight

    def forward(self, pred, target):
        y = target["y"]
        w = _labelled_weights(y, target["w"].to(pred.dtype))
        k = y.shape[-1]
        mean, var = pred[..., :k], gaussian_variance(pred[..., k:])
        sq = (torch.nan_to_num(y) - mean) ** 2
        per_row = (self.mean_weight * sq.mean(-1)
                   + 0.5 * (torch.log(var) + sq.detach() / var).mean(-1))
        return _weighted_mean(per_row, w)


def gaussian_variance(raw):
    """The variance a Gaussian head's raw output stands for: ``softplus(raw) + 1e-6``."""
    return F.softplus(raw) + 1e-6


def softplus_inverse(x):
    """``log(exp(x) - 1)`` (NumPy): the raw output whose softplus is ``x`` (> 0), without
    overflow; a Gaussian head's raw output for a variance ``v`` is ``softplus_inverse(v -
    1e-6)`` (:func:`gaussian_variance`)."""
    x = np.asarray(x, dtype=np.float64)
    big = x > 20.0
    return np.where(big, x + np.log1p(-np.exp(-np.where(big, x, 20.0))),
                    np.log(np.expm1(np.where(big, 1.0, x))))
