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
