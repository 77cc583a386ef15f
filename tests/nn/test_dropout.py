"""Monte Carlo dropout with masks shared by the rows of a call (skdiff.nn._dropout)."""

import torch

from skdiff.nn._dropout import Dropout, SharedMasks


def test_a_draw_drops_the_same_units_for_every_row_and_chunk_per_site():
    layer = Dropout(0.5).train()
    x = torch.ones(6, 200)
    # without a draw attached: torch's elementwise dropout, a mask per row
    plain = layer(x, site=0)
    assert not torch.equal(plain[0], plain[1])
    masks = SharedMasks(torch.Generator().manual_seed(0))
    layer.masks = masks
    a, b = layer(x, site=0), layer(x, site=1)
    assert torch.equal(a, a[:1].expand_as(a))  # one mask for all rows
    assert set(a.unique().tolist()) == {0.0, 2.0}  # kept units scaled by 1 / (1 - p)
    assert 0.35 < (a[0] > 0).float().mean() < 0.65
    assert not torch.equal(a[0], b[0])  # each site its own mask, as in training
    assert torch.equal(layer(x[4:], site=0), a[4:])  # a later chunk reuses the draw's mask
    masks.next_draw()
    assert not torch.equal(layer(x, site=0), a)  # a new draw, new masks
    # the random numbers drawn do not depend on the number of rows

    def first_row(n):
        layer.masks = SharedMasks(torch.Generator().manual_seed(3))
        return layer(torch.ones(n, 200), site=0)[0]

    assert torch.equal(first_row(1), first_row(50))
    # eval mode, or p = 0: the input unchanged
    assert torch.equal(layer.eval()(x, site=0), x)
    assert torch.equal(Dropout(0.0).train()(x), x)
