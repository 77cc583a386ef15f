"""The Flowformer network: heads, channel graph, instance normalisation, softmax baseline."""

import pytest
import torch
import torch.nn.functional as F

from skdiff.nn import Flowformer, SoftmaxAttention
from skdiff.nn.flowformer import _EncoderLayer


@pytest.mark.parametrize("pooling", ["mean", "last", "flatten"])
@pytest.mark.parametrize("graph", [False, True])
@pytest.mark.parametrize("attention", ["flow", "softmax"])
def test_shapes(pooling, graph, attention):
    torch.manual_seed(0)
    adj = torch.eye(3) if graph else None
    net = Flowformer(3, 5, 12, hidden_dim=8, n_heads=2, pooling=pooling, attention=attention,
                     adjacency=adj, instance_norm=True, causal=attention == "flow")
    assert net(torch.randn(4, 12, 3)).shape == (4, 5)
    if pooling != "flatten":
        assert net(torch.randn(4, 7, 3)).shape == (4, 5)  # any L <= max_len
    else:
        with pytest.raises(ValueError, match="sequence length 7: this network takes exactly 12"):
            net(torch.randn(4, 7, 3))


def test_errors():
    with pytest.raises(ValueError, match="pooling must be one of"):
        Flowformer(1, 1, 4, pooling="max")
    with pytest.raises(ValueError, match=r"adjacency has shape \(2, 2\); it must be \(3, 3\)"):
        Flowformer(3, 1, 4, adjacency=torch.eye(2))
    net = Flowformer(2, 1, 4, hidden_dim=8, n_heads=2)
    with pytest.raises(ValueError, match="expected 2 channels; got 3"):
        net(torch.randn(1, 4, 3))
    with pytest.raises(ValueError, match="takes at most 4"):
        net(torch.randn(1, 5, 2))
    with pytest.raises(ValueError, match="skip must be 'level' or 'window'; got 'lags'"):
        Flowformer(2, 1, 4, instance_norm=True, skip="lags")
    win = Flowformer(2, 1, 4, hidden_dim=8, n_heads=2, instance_norm=True, skip="window")
    with pytest.raises(ValueError, match="sequence length 3: this network takes exactly 4"):
        win(torch.randn(1, 3, 2))


def test_window_skip_features():
    net = Flowformer(2, 3, 5, hidden_dim=8, n_heads=2, instance_norm=True, skip="window")
    x = torch.randn(4, 5, 2)
    f = net.skip_features(x)
    assert f.shape == (4, 3 * 2 + 5 * 2) and net.skip.in_features == 16
    torch.testing.assert_close(f[:, :2], x.mean(1))
    torch.testing.assert_close(f[:, 4:6], x[:, -1])
    torch.testing.assert_close(f[:, 6:], x.reshape(4, 10))


def test_window_skip_without_instance_norm():
    """A linear map of the raw window added to the output; the head starts at zero, so the
    network starts as the skip alone. ``"level"`` without instance_norm adds nothing."""
    torch.manual_seed(0)
    net = Flowformer(2, 3, 5, hidden_dim=8, n_heads=2, skip="window").eval()
    x = torch.randn(4, 5, 2)
    f = net.skip_features(x)
    assert f.shape == (4, 10) and net.skip.in_features == 10
    torch.testing.assert_close(f, x.reshape(4, 10))
    torch.testing.assert_close(net(x), net.skip(f))
    net.set_skip_(torch.zeros(3, 10), torch.tensor([1.0, 2.0, 3.0]), trainable=False)
    with torch.no_grad():
        net.head.weight.normal_()
    h = net(x) - torch.tensor([1.0, 2.0, 3.0])  # the encoder's part: the head's output
    assert h.abs().min() > 0 and not net.skip.weight.requires_grad
    with pytest.raises(ValueError, match="sequence length 4: this network takes exactly 5"):
        net(torch.randn(1, 4, 2))
    assert Flowformer(2, 3, 5, hidden_dim=8, n_heads=2).skip is None


def test_graph_step_follows_the_adjacency():
    # two components {0, 1} and {2, 3}: changing channel 0 never reaches channels 2 and 3
    torch.manual_seed(0)
    A = torch.zeros(4, 4)
    A[0, 1] = A[1, 0] = A[2, 3] = A[3, 2] = 0.5
    A += 0.5 * torch.eye(4)
    layer = _EncoderLayer(8, 2, 8, 0.0, SoftmaxAttention, {}, graph=True).eval()
    h = torch.randn(2, 4, 6, 8)
    h2 = h.clone()
    h2[:, 0] += 1.0
    out, out2 = layer(h, A), layer(h2, A)
    assert torch.equal(out[:, 2:], out2[:, 2:])
    assert not torch.allclose(out[:, 1], out2[:, 1])
    # with the identity graph the channels do not talk at all
    out, out2 = layer(h, torch.eye(4)), layer(h2, torch.eye(4))
    assert torch.equal(out[:, 1:], out2[:, 1:])


def test_instance_norm_level_shift_goes_through_the_skip_only():
    torch.manual_seed(0)
    net = Flowformer(2, 3, 10, hidden_dim=8, n_heads=2, instance_norm=True).eval()
    x = torch.randn(5, 10, 2)
    c = torch.tensor([0.7, -1.3])
    with torch.no_grad():
        delta = net(x + c) - net(x)
        # mean and last value both move by c; the std does not
        expected = c @ (net.skip.weight[:, :2] + net.skip.weight[:, 4:]).T
    torch.testing.assert_close(delta, expected.expand_as(delta), rtol=1e-4, atol=1e-4)


def test_instance_norm_correction_is_scaled_by_the_window_std():
    # RevIN de-normalisation: x -> a x + c leaves the normalised window unchanged and
    # multiplies the encoder's part of the output by a (one channel: std_mix = 1)
    torch.manual_seed(0)
    net = Flowformer(1, 2, 10, hidden_dim=8, n_heads=2, instance_norm=True).eval()
    torch.nn.init.normal_(net.head.weight)  # the head starts at zero otherwise
    x = torch.randn(5, 10, 1, dtype=torch.float64)
    net.double()

    def encoder_part(z):
        return net(z) - net.skip(net.skip_features(z))

    with torch.no_grad():
        base = encoder_part(x)
        assert base.abs().min() > 1e-3
        torch.testing.assert_close(encoder_part(30.0 * x - 2.0), 30.0 * base, rtol=1e-4,
                                   atol=1e-6)


def test_softmax_attention_matches_reference():
    torch.manual_seed(0)
    att = SoftmaxAttention(8, 2, dropout=0.0, causal=True).eval()
    x = torch.randn(3, 5, 8)

    def heads(t):
        return t.view(3, 5, 2, 4).transpose(1, 2)

    q, k, v = heads(att.query(x)), heads(att.key(x)), heads(att.value(x))
    s = q @ k.transpose(-1, -2) / 2.0
    s = s.masked_fill(torch.triu(torch.ones(5, 5, dtype=torch.bool), 1), float("-inf"))
    ref = att.out((F.softmax(s, -1) @ v).transpose(1, 2).reshape(3, 5, 8))
    torch.testing.assert_close(att(x), ref, rtol=1e-5, atol=1e-6)


def test_causal_encoder_tokens_ignore_the_future():
    torch.manual_seed(0)
    net = Flowformer(1, 1, 16, hidden_dim=8, n_heads=2, causal=True, pooling="last",
                     dropout=0.0).eval()
    x = torch.randn(2, 16, 1)
    with torch.no_grad():
        full = net(x[:, :9])  # last token = position 8
        x2 = x.clone()
        x2[:, 9:] = 100.0
        h = net.embed(x2) * 8 ** 0.5 + net.position[:16]
        for layer in net.layers:
            h = layer(h)
        tok = net.head(F.gelu(h[:, 8]))
    torch.testing.assert_close(tok, full, rtol=1e-5, atol=1e-6)


def _patch_reference(x, p, s):
    """Patches of x (b, L, C) by slicing: starts 0, s, 2s, ... until the window's end is
    covered, the missing steps of the last patch filled with the last value."""
    L, out, start = x.shape[1], [], 0
    while True:
        idx = [min(t, L - 1) for t in range(start, start + p)]
        out.append(x[:, idx].transpose(1, 2))  # (b, C, p)
        if start + p >= L:
            return torch.stack(out, 1)  # (b, N, C, p)
        start += s


@pytest.mark.parametrize("L,p,s", [(12, 4, 4), (12, 4, 3), (13, 4, 2), (96, 16, 8), (5, 5, 1),
                                   (7, 3, 3)])
def test_patches_match_a_slicing_reference(L, p, s):
    net = Flowformer(2, 1, L, hidden_dim=8, n_heads=2, patch_len=p, patch_stride=s)
    x = torch.randn(3, L, 2)
    ref = _patch_reference(x, p, s)
    assert net.n_tokens(L) == net.max_tokens == ref.shape[1]
    assert torch.equal(net.patches(x), ref)


@pytest.mark.parametrize("graph", [False, True])
def test_patches_of_one_step_are_step_tokens(graph):
    # patch_len=1 has the same parameters as one token per step and must compute the same
    torch.manual_seed(0)
    adj = torch.eye(3) if graph else None
    kw = dict(hidden_dim=8, n_heads=2, adjacency=adj, instance_norm=True, pooling="flatten")
    steps = Flowformer(3, 4, 10, **kw).eval()
    torch.nn.init.normal_(steps.head.weight)
    ones = Flowformer(3, 4, 10, patch_len=1, **kw).eval()
    ones.load_state_dict(steps.state_dict())
    x = torch.randn(5, 10, 3)
    with torch.no_grad():
        torch.testing.assert_close(ones(x), steps(x), rtol=0, atol=0)


@pytest.mark.parametrize("pooling", ["mean", "last", "flatten"])
@pytest.mark.parametrize("graph", [False, True])
def test_patch_shapes(pooling, graph):
    torch.manual_seed(0)
    adj = torch.eye(3) if graph else None
    net = Flowformer(3, 5, 12, hidden_dim=8, n_heads=2, pooling=pooling, adjacency=adj,
                     patch_len=4, patch_stride=3, instance_norm=True, causal=True)
    assert net.max_tokens == 4 and net.embed.in_features == (4 if graph else 12)
    assert net(torch.randn(4, 12, 3)).shape == (4, 5)
    if pooling != "flatten":
        assert net(torch.randn(4, 7, 3)).shape == (4, 5)  # 2 patches
        with pytest.raises(ValueError, match="sequence length 3 is shorter than patch_len=4"):
            net(torch.randn(4, 3, 3))


def test_patch_errors():
    with pytest.raises(ValueError, match="patch_stride=2 needs patch_len; got patch_len=None"):
        Flowformer(1, 1, 8, patch_stride=2)
    with pytest.raises(ValueError, match="1 <= patch_stride <= patch_len; got patch_len=2, "
                                         "patch_stride=3"):
        Flowformer(1, 1, 8, patch_len=2, patch_stride=3)
    with pytest.raises(ValueError, match="patch_len=9 is longer than max_len=8"):
        Flowformer(1, 1, 8, patch_len=9)


def test_causal_patch_tokens_ignore_later_patches():
    # token j sees patches 0..j only: steps after the end of patch j do not reach it
    torch.manual_seed(0)
    p, s = 4, 2
    net = Flowformer(1, 1, 16, hidden_dim=8, n_heads=2, causal=True, pooling="last",
                     dropout=0.0, patch_len=p, patch_stride=s).eval()
    x = torch.randn(2, 16, 1)
    j = 3  # patch 3 covers steps 6..9
    end = j * s + p
    with torch.no_grad():
        short = net(x[:, :end])  # its last token is token j
        x2 = x.clone()
        x2[:, end:] = 100.0
        h = net.embed(net.patches(x2).flatten(2)) * 8 ** 0.5 + net.position[:net.max_tokens]
        for layer in net.layers:
            h = layer(h)
        tok = net.head(F.gelu(h[:, j]))
    torch.testing.assert_close(tok, short, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("instance_norm, skip", [(True, "window"), (True, "level"),
                                                 (False, "window")])
def test_skip_columns_locate_the_parts_of_the_skip_features(instance_norm, skip):
    net = Flowformer(n_channels=2, n_outputs=1, max_len=5, hidden_dim=8, n_heads=2, n_layers=1,
                     instance_norm=instance_norm, skip=skip)
    x = torch.randn(3, 5, 2)
    F, cols = net.skip_features(x), net.skip_columns()
    assert sum(c.stop - c.start for c in cols.values()) == F.shape[1] == net.skip.in_features
    if instance_norm:
        torch.testing.assert_close(F[:, cols["mean"]], x.mean(1))
        torch.testing.assert_close(F[:, cols["last"]], x[:, -1])
    if skip == "window":
        torch.testing.assert_close(F[:, cols["window"]], x.flatten(1))
    else:
        assert "window" not in cols
