"""Dropout whose Monte Carlo draws at prediction time are one thinned network per draw.

In training, :class:`Dropout` is :class:`torch.nn.Dropout`. For Monte Carlo dropout at
prediction time the estimators attach a :class:`SharedMasks` to every such layer: each draw
then drops the same units for every row of the call (one mask per layer and call site,
broadcast over the leading row axis), so a draw is one network with some units removed,
applied to all rows.
This is the weight-sampling reading of MC dropout (Gal and Ghahramani, ICML 2016), and what
makes a row's draws independent of the other rows of the call and of how the rows are split
into chunks: with elementwise masks a row's mask depends on its position in the batch. For
a single row the distribution of its mask is the same as with elementwise masks.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["Dropout", "SharedMasks"]


class SharedMasks:
    """The masks of one Monte Carlo dropout draw, shared by all rows.

    A layer's mask has the shape of one row of its input (the input's shape without the
    leading row axis) and is drawn from ``generator`` on its first use in a draw; later
    chunks of rows reuse it. :meth:`next_draw` starts a new draw. The generator is used
    only here, so the number of random numbers drawn does not depend on the number of rows.
    """

    def __init__(self, generator: torch.Generator):
        self.generator = generator
        self._masks: dict = {}

    def next_draw(self):
        """Forget the current draw's masks; the next use of a layer draws new ones."""
        self._masks.clear()

    def mask(self, layer: nn.Dropout, x: torch.Tensor, site=None) -> torch.Tensor:
        """The scaled keep-mask (0 or ``1 / (1 - p)``) of ``layer`` at call site ``site``
        for rows shaped like ``x[0]``, broadcastable against ``x``."""
        key = (id(layer), site, tuple(x.shape[1:]), x.dtype, x.device)
        mask = self._masks.get(key)
        if mask is None:
            keep = 1.0 - layer.p
            mask = torch.empty((1, *x.shape[1:]), dtype=x.dtype, device=x.device)
            mask.bernoulli_(keep, generator=self.generator)
            if keep > 0:
                mask.div_(keep)
            self._masks[key] = mask
        return mask


class Dropout(nn.Dropout):
    """:class:`torch.nn.Dropout` that, in training mode with ``masks`` set, multiplies by
    the shared mask of the current Monte Carlo draw instead of an elementwise one.

    A layer applied at several places of one forward (every diffusion layer of DIFFormer
    shares one) names each place by ``site``, so that each gets its own mask, as each gets
    its own elementwise draw in training; the same site called again (the next chunk of
    rows, or the same layer streamed over chunks) reuses the draw's mask.
    """

    #: The Monte Carlo draw whose masks this layer uses (set only while an estimator draws).
    masks: SharedMasks | None = None

    def forward(self, x: torch.Tensor, site=None) -> torch.Tensor:
        if self.masks is None or not self.training or self.p == 0:
            return super().forward(x)
        return x * self.masks.mask(self, x, site)
