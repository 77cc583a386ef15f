"""The Gaussian head's variance map and its inverse."""

import numpy as np
import torch

from skdiff.nn.losses import gaussian_variance, softplus_inverse


def test_softplus_inverse_inverts_the_gaussian_heads_variance():
    """From tiny variances to ones whose exp(x) overflows float64 (x > 709), the raw output
    ``softplus_inverse(v - 1e-6)`` maps back to ``v``."""
    var = np.array([2e-6, 1e-4, 0.5, 1.0, 19.9, 20.1, 300.0, 800.0])
    raw = softplus_inverse(var - 1e-6)
    assert np.isfinite(raw).all()
    back = gaussian_variance(torch.as_tensor(raw)).numpy()
    np.testing.assert_allclose(back, var, rtol=1e-9)
    # continuous where the overflow-safe branch starts
    left, right = softplus_inverse(np.array([20.0 - 1e-9, 20.0 + 1e-9]))
    assert abs(right - left) < 1e-8
