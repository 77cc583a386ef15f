"""The bi-dimensional attention noise model of NDP."""

import math

import pytest
import torch

from skdiff.nn import NDPNoiseModel
from skdiff.nn.ndp import timestep_embedding


def _trained_like(seed=0, **kw):
    """A model with a non-zero output layer (the real init is zero, which hides bugs)."""
    torch.manual_seed(seed)
    m = NDPNoiseModel(**kw)
    torch.nn.init.normal_(m.linear_output.weight, std=0.5)
    torch.nn.init.normal_(m.linear_output.bias, std=0.5)
    return m.eval()


def _inputs(b=3, n=11, d=2, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(b, n, d, generator=g) * 4 - 2
    y = torch.randn(b, n, 1, generator=g)
    t = torch.randint(0, 500, (b,), generator=g)
    return x, y, t


def test_parameter_count_matches_released_model_and_zero_init():
    m = NDPNoiseModel()
    assert sum(p.numel() for p in m.parameters()) == 352_833
    x, y, t = _inputs()
    out = m(x, y, t)
    assert out.shape == (3, 11, 1)
    assert torch.count_nonzero(out) == 0
    assert "hidden_dim=64, n_layers=4, n_heads=8" in repr(m)


@pytest.mark.parametrize("d", [1, 3])
def test_permutation_equivariance_over_points(d):
    m = _trained_like(hidden_dim=16, n_layers=2, n_heads=4)
    x, y, t = _inputs(d=d)
    perm = torch.randperm(x.shape[1], generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        out = m(x, y, t)
        out_p = m(x[:, perm], y[:, perm], t)
    assert out.abs().max() > 1e-3
    torch.testing.assert_close(out_p, out[:, perm], atol=1e-5, rtol=1e-5)


def test_single_key_attention_equals_dense_attention():
    # At D = 1 the attention across input dimensions has one key; the module composes the value
    # and output projections instead of running attention. Reference: softmax attention written
    # out over the projected queries, keys and values.
    torch.manual_seed(0)
    att = NDPNoiseModel(hidden_dim=16, n_layers=1, n_heads=4).blocks[0].attention_d
    s = torch.randn(7, 1, 16)
    q, k, v = att.qkv(s).chunk(3, dim=-1)
    heads = lambda z: z.view(7, 1, 4, -1).transpose(1, 2)  # noqa: E731
    scores = heads(q) @ heads(k).transpose(-1, -2) / math.sqrt(q.shape[-1] // 4)
    dense = (scores.softmax(-1) @ heads(v)).transpose(1, 2).reshape(7, 1, -1)
    with torch.no_grad():
        torch.testing.assert_close(att(s), att.out(dense), atol=1e-6, rtol=1e-5)
    assert att(s).abs().max() > 1e-2


@pytest.mark.parametrize("seq", [2, 3, 5])
def test_attention_equals_the_kernel(seq):
    # Over two keys (the input dimensions of a point at D = 2) the attention is computed in
    # closed form, a logistic function of the score difference; longer sequences run
    # scaled_dot_product_attention. Reference: the kernel on the heads of the same
    # projections. The gradients must agree as well (priors train through it).
    torch.manual_seed(0)
    att = NDPNoiseModel(hidden_dim=16, n_layers=1, n_heads=4).blocks[0].attention_d
    s = torch.randn(7, seq, 16, requires_grad=True)
    q, k, v = att.qkv(s).chunk(3, dim=-1)
    heads = lambda z: z.view(7, seq, 4, -1).transpose(1, 2)  # noqa: E731
    kernel = torch.nn.functional.scaled_dot_product_attention(heads(q), heads(k), heads(v))
    reference = att.out(kernel.transpose(1, 2).reshape(7, seq, -1))
    out = att(s)
    torch.testing.assert_close(out, reference, atol=1e-6, rtol=1e-5)
    weights = torch.randn_like(out)
    grads = torch.autograd.grad((out * weights).sum(), [s, *att.parameters()])
    ref_grads = torch.autograd.grad((reference * weights).sum(), [s, *att.parameters()])
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, atol=1e-5, rtol=1e-4)
    # the keys matter: another second key changes the output of the first point
    s2 = s.detach().clone()
    s2[:, 1] += 1.0
    assert (att(s2)[:, 0] - out[:, 0]).abs().max() > 1e-3


def test_invariance_over_input_dimension_order():
    m = _trained_like(hidden_dim=16, n_layers=2, n_heads=4)
    x, y, t = _inputs(d=3)
    with torch.no_grad():
        out = m(x, y, t)
        out_p = m(x[:, :, [2, 0, 1]], y, t)
        out_other = m(x[:, :, [0, 0, 1]], y, t)  # a different input must change the output
    torch.testing.assert_close(out_p, out, atol=1e-5, rtol=1e-5)
    assert (out_other - out).abs().max() > 1e-3


def test_padding_does_not_influence_real_points():
    m = _trained_like(hidden_dim=16, n_layers=2, n_heads=4)
    x, y, t = _inputs(b=2, n=8, d=2)
    with torch.no_grad():
        ref = m(x, y, t)
        # pad with 5 garbage points (even NaN), masked
        xp = torch.cat([x, torch.full((2, 5, 2), float("nan"))], dim=1)
        yp = torch.cat([y, 1e3 * torch.randn(2, 5, 1)], dim=1)
        mask = torch.zeros(2, 13, dtype=torch.bool)
        mask[:, 8:] = True
        out = m(xp, yp, t, mask=mask)
        # padding in the middle, in a different position per function
        order = torch.tensor([0, 8, 1, 2, 9, 3, 4, 5, 10, 11, 6, 12, 7])
        out_mid = m(xp[:, order], yp[:, order], t, mask=mask[:, order])
    torch.testing.assert_close(out[:, :8], ref, atol=1e-5, rtol=1e-5)
    assert torch.all(out[:, 8:] == 0)
    torch.testing.assert_close(out_mid, out[:, order], atol=1e-5, rtol=1e-5)


def test_depends_on_time_and_values():
    m = _trained_like(hidden_dim=16, n_layers=2, n_heads=4)
    x, y, t = _inputs()
    with torch.no_grad():
        a = m(x, y, t)
        b = m(x, y, t + 7)
        c = m(x, y + 0.5, t)
    assert (a - b).abs().max() > 1e-4
    assert (a - c).abs().max() > 1e-4


def test_timestep_embedding_matches_formula():
    t = torch.tensor([0, 3, 499])
    e = timestep_embedding(t, 8)
    w = torch.exp(-torch.arange(4.0) * math.log(10_000) / 3)
    ref = torch.cat([torch.sin(t[:, None] * w), torch.cos(t[:, None] * w)], dim=1)
    torch.testing.assert_close(e, ref)
    assert timestep_embedding(t, 7).shape == (3, 7)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n_heads=5 must divide 2 \\* hidden_dim = 32"):
        NDPNoiseModel(hidden_dim=16, n_heads=5)
    m = NDPNoiseModel(hidden_dim=16, n_layers=1, n_heads=4)
    with pytest.raises(ValueError, match=r"y_t of shape \[b, n, 1\]"):
        m(torch.zeros(2, 5, 1), torch.zeros(2, 5), torch.zeros(2, dtype=torch.long))


def test_projection_adds_its_bias_after_the_product():
    # the attention projections add the bias in place after a bias-free product (faster on
    # the CPU); values and gradients are those of F.linear
    from skdiff.nn.ndp import _linear

    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 7, 64, generator=g, requires_grad=True)
    w = torch.randn(384, 64, generator=g, requires_grad=True)
    b = torch.randn(384, generator=g, requires_grad=True)
    out, ref = _linear(x, w, b), torch.nn.functional.linear(x, w, b)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-6)
    weights = torch.randn_like(out)
    for got, want in zip(torch.autograd.grad((out * weights).sum(), [x, w, b]),
                         torch.autograd.grad((ref * weights).sum(), [x, w, b])):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-5)
