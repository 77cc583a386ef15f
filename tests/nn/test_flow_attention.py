"""Flow-Attention equals a slow dense float64 reference built from the paper's equations."""

import importlib
from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from skdiff.nn import FlowAttention, flow_attention

FA = importlib.import_module("skdiff.nn.flow_attention")  # the module, for its private parts
EPS = 1e-6


def dense_reference(q, k, v, causal=False, clamp=1.0, eps=EPS):
    """Loop-free but O(n m) reference: explicit (n, m) capacity matrix and masked sums."""
    pq, pk = torch.sigmoid(q), torch.sigmoid(k)
    n, m = q.shape[2], k.shape[2]
    if causal:
        mask = torch.tril(torch.ones(n, m, dtype=q.dtype))
        t = torch.arange(1, n + 1, dtype=q.dtype)
    else:
        mask = torch.ones(n, m, dtype=q.dtype)
        t = None
    # sum over the visible sources of sink i / visible sinks of source j (prefix when causal)
    ksum = torch.einsum("ij,bhjd->bhid", mask, pk)  # (b, h, n, d)
    qsum = torch.einsum("ij,bhid->bhjd", mask.T, pq) if causal else pq.sum(2, keepdim=True)
    inc = ((pq + eps) * (ksum + eps)).sum(-1)
    out = ((pk + eps) * (qsum + eps)).sum(-1)
    if causal:
        inc_n, out_n = t / inc, t / out
        cs = ((pq + eps) * (torch.einsum("ij,bhjd->bhid", mask, pk * out_n[..., None]) + eps)
              ).sum(-1) / t
        co = ((pk + eps) * (torch.einsum("ij,bhjd->bhid", mask, pq * inc_n[..., None]) + eps)
              ).sum(-1) / t
        if clamp is not None:
            co = co.clamp(-clamp, clamp)
        alloc = torch.sigmoid(cs)
        # running softmax x t: row t of a masked (n, n) softmax, its diagonal entry
        rows = co[..., None, :].expand(*co.shape, n).masked_fill(mask == 0, float("-inf"))
        comp = torch.diagonal(torch.softmax(rows, -1), dim1=-2, dim2=-1) * t
        weights = torch.einsum("bhid,bhjd->bhij", pq * (inc_n / t)[..., None], pk) * mask
    else:
        cs = ((pq + eps) * ((pk / out[..., None]).sum(2, keepdim=True) + eps)).sum(-1)
        co = ((pk + eps) * ((pq / inc[..., None]).sum(2, keepdim=True) + eps)).sum(-1)
        if clamp is not None:
            co = co.clamp(-clamp, clamp)
        alloc = torch.sigmoid(cs * n / m)
        comp = torch.softmax(co, -1) * m
        weights = torch.einsum("bhid,bhjd->bhij", pq / inc[..., None], pk)
    return torch.einsum("bhij,bhje->bhie", weights, v * comp[..., None]) * alloc[..., None]


def _qkv(b, h, n, m, d, e, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, n, d, generator=g, dtype=torch.float64) * scale
    k = torch.randn(b, h, m, d, generator=g, dtype=torch.float64) * scale
    v = torch.randn(b, h, m, e, generator=g, dtype=torch.float64)
    return q, k, v


@pytest.mark.parametrize("shape", [(2, 3, 9, 9, 4, 5), (1, 2, 17, 5, 8, 3), (3, 1, 4, 23, 6, 6)])
@pytest.mark.parametrize("clamp", [1.0, None, 5.0])
def test_normal_equals_dense_reference(shape, clamp):
    q, k, v = _qkv(*shape, seed=sum(shape), scale=2.0)
    got = flow_attention(q, k, v, clamp=clamp)
    torch.testing.assert_close(got, dense_reference(q, k, v, clamp=clamp), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("L,chunk", [(1, 4), (7, 3), (33, 8), (64, 64), (50, 200)])
@pytest.mark.parametrize("clamp", [1.0, None])
def test_causal_equals_dense_reference(L, chunk, clamp):
    q, k, v = _qkv(2, 3, L, L, 5, 4, seed=L, scale=2.0)
    got = flow_attention(q, k, v, causal=True, clamp=clamp, chunk_size=chunk)
    torch.testing.assert_close(got, dense_reference(q, k, v, causal=True, clamp=clamp),
                               rtol=1e-10, atol=1e-12)


def test_chunk_size_does_not_change_the_result():
    q, k, v = _qkv(2, 2, 70, 70, 8, 8, seed=1)
    ref = flow_attention(q, k, v, causal=True, chunk_size=70)
    for chunk in (1, 5, 16, 64, 1000):
        torch.testing.assert_close(flow_attention(q, k, v, causal=True, chunk_size=chunk), ref,
                                   rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float64])
def test_causal_prefix_is_exactly_unaffected_by_the_future(dtype):
    q, k, v = (x.to(dtype) for x in _qkv(2, 2, 40, 40, 6, 6, seed=3))
    t0 = 21  # inside a chunk of 8 (chunk boundaries at 16, 24)
    base = flow_attention(q, k, v, causal=True, clamp=None, chunk_size=8)
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    q2[:, :, t0:] += 5.0
    k2[:, :, t0:] *= -3.0
    v2[:, :, t0:] = 1e6
    pert = flow_attention(q2, k2, v2, causal=True, clamp=None, chunk_size=8)
    assert torch.equal(base[:, :, :t0], pert[:, :, :t0])
    assert not torch.allclose(base[:, :, t0:], pert[:, :, t0:])


def test_unclamped_causal_is_stable_for_huge_conserved_flows():
    # Sinks that see almost no source capacity get a tiny incoming flow I_t, so the
    # conserved source flow reaches ~1e5: exp(O) / cumsum(exp(O)) (official) overflows to
    # inf / inf = NaN, the running log-sum-exp does not.
    L, d = 40, 4
    q = torch.full((1, 1, L, d), -30.0)
    q[..., 0] = 30.0  # phi(q) ~ e_1
    k = torch.full((1, 1, L, d), -30.0)
    k[..., 1] = 30.0  # phi(k) ~ e_2: almost no capacity towards the sinks ...
    k[:, :, L // 2:, 0] = 30.0  # ... until the second half
    v = torch.randn(1, 1, L, 3, generator=torch.Generator().manual_seed(0))
    pq, pk = torch.sigmoid(q), torch.sigmoid(k)
    t = torch.arange(1, L + 1.0)
    inc = ((pq + EPS) * (pk.cumsum(2) + EPS)).sum(-1)
    co = ((pk + EPS) * ((pq * (t / inc)[..., None]).cumsum(2) + EPS)).sum(-1) / t
    assert co.max() > 1e3 and torch.isnan(torch.exp(co) / torch.exp(co).cumsum(-1)).any()
    out = flow_attention(q, k, v, causal=True, clamp=None)
    assert torch.isfinite(out).all()
    ref = dense_reference(q.double(), k.double(), v.double(), causal=True, clamp=None)
    torch.testing.assert_close(out.double(), ref, rtol=1e-4, atol=1e-5)


def test_gradients_match_reference():
    q, k, v = (x.requires_grad_() for x in _qkv(1, 2, 12, 12, 4, 3, seed=7))
    for causal in (False, True):
        g1 = torch.autograd.grad(flow_attention(q, k, v, causal=causal, chunk_size=5).sum(),
                                 (q, k, v))
        g2 = torch.autograd.grad(dense_reference(q, k, v, causal=causal).sum(), (q, k, v))
        for a, b in zip(g1, g2):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("shape,clamp", [((2, 3, 9, 14, 4, 5), 1.0), ((1, 2, 17, 5, 8, 3), None)])
def test_normal_gradients_match_reference_cross_attention(shape, clamp):
    # n != m, a non-uniform upstream gradient, with and without the clamp
    q, k, v = (x.requires_grad_() for x in _qkv(*shape, seed=3, scale=2.0))
    g = torch.randn(shape[0], shape[1], shape[2], shape[5], dtype=torch.float64,
                    generator=torch.Generator().manual_seed(1))
    got = torch.autograd.grad((flow_attention(q, k, v, clamp=clamp) * g).sum(), (q, k, v))
    ref = torch.autograd.grad((dense_reference(q, k, v, clamp=clamp) * g).sum(), (q, k, v))
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("L,chunk,clamp", [(13, 4, None), (16, 16, 1.0), (9, 20, 5.0),
                                           (21, 1, None), (1, 64, 1.0), (30, 7, None)])
def test_causal_custom_backward_equals_autograd_of_the_dense_reference(L, chunk, clamp):
    # the causal kernel runs its own chunked backward (reverse-order carried state);
    # the dense reference is differentiated by autograd
    q, k, v = (x.requires_grad_() for x in _qkv(2, 2, L, L, 5, 3, seed=L + chunk, scale=2.0))
    g = torch.randn(2, 2, L, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got = torch.autograd.grad((flow_attention(q, k, v, causal=True, clamp=clamp,
                                              chunk_size=chunk) * g).sum(), (q, k, v))
    ref = torch.autograd.grad((dense_reference(q, k, v, causal=True, clamp=clamp) * g).sum(),
                              (q, k, v))
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)


def test_causal_autograd_functions_pass_gradcheck():
    _CausalAggregate, _PrefixDot = FA._CausalAggregate, FA._PrefixDot
    gen = torch.Generator().manual_seed(5)

    def rand(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64, requires_grad=True)

    a, b, w = rand(1, 2, 11, 3), rand(1, 2, 11, 3), rand(1, 2, 11)
    assert torch.autograd.gradcheck(_PrefixDot.apply, (a, b, w))
    assert torch.autograd.gradcheck(_PrefixDot.apply, (a, b, None))
    phi, s, kappa, v, c = rand(2, 1, 10, 3), rand(2, 1, 10), rand(2, 1, 10, 3), \
        rand(2, 1, 10, 4), rand(2, 1, 10)
    # (chunk, block): one block (one chunk or a zero-padded last chunk), or blocks carrying
    # the state (block = chunk; a padded last chunk in the last block)
    for chunk, block in ((10, 10), (3, 10), (2, 2), (3, 6)):
        assert torch.autograd.gradcheck(_CausalAggregate.apply,
                                        (phi, s, kappa, v, c, chunk, block, torch.float64))
    # inputs that need no gradient get none
    v.requires_grad_(False)
    for block in (4, 8):
        out = _CausalAggregate.apply(phi, s, kappa, v, c, 4, block, torch.float64)
        grads = torch.autograd.grad(out.sum(), (phi, s, kappa, c))
        ref = torch.autograd.grad(
            _CausalAggregate.apply(phi, s, kappa, v.clone(), c, 4, block, torch.float64).sum(),
            (phi, s, kappa, c))
        for x, y in zip(grads, ref):
            torch.testing.assert_close(x, y, rtol=0, atol=0)


@pytest.mark.parametrize("chunk,block", [(4, 4), (4, 8), (5, 15), (16, 16)])
def test_causal_blocks_equal_the_dense_reference(chunk, block, monkeypatch):
    # the CPU cuts long sequences into blocks that carry the state (values and gradients
    # as with one block, the future still unseen); a tiny element budget forces blocks of
    # `block` positions here
    bh, d, e = 4, 5, 3
    monkeypatch.setattr(FA, "_CPU_BLOCK_ELEMENTS", bh * (chunk * (chunk + d + 2 * e) + d * e)
                        * (block // chunk))
    assert FA._block_size("cpu", bh, 37, chunk, d, e) == block
    q, k, v = (x.requires_grad_() for x in _qkv(2, 2, 37, 37, d, e, seed=block, scale=2.0))
    _check_causal_against_dense(q, k, v, t0=19, chunk_size=chunk)  # t0 in a later block


def _check_causal_against_dense(q, k, v, t0, chunk_size=None):
    """Causal values and gradients as the dense reference; outputs before ``t0`` unchanged
    by any change of the inputs from ``t0`` on."""
    g = torch.randn(*v.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    out = flow_attention(q, k, v, causal=True, clamp=None, chunk_size=chunk_size)
    ref = dense_reference(q, k, v, causal=True, clamp=None)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-12)
    got = torch.autograd.grad((out * g).sum(), (q, k, v))
    want = torch.autograd.grad((ref * g).sum(), (q, k, v))
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)
    q2, k2, v2 = (x.detach().clone() for x in (q, k, v))
    q2[:, :, t0:], k2[:, :, t0:], v2[:, :, t0:] = 3.0, -7.0, 1e6
    pert = flow_attention(q2, k2, v2, causal=True, clamp=None, chunk_size=chunk_size)
    assert torch.equal(pert[:, :, :t0], out.detach()[:, :, :t0])


@pytest.mark.parametrize("L", [129, 256, 300])
def test_two_level_prefix_sums_equal_the_dense_reference(L, monkeypatch):
    # off the CPU the (L, d) prefix sums of the flow statistics run in two levels (segments
    # of 64 positions, then their running totals; a shorter last segment at 129 and 300),
    # forced here on the CPU: the sums, values and gradients as in one level, and the
    # future still unseen
    monkeypatch.setattr(FA, "_split_scan", lambda device: True)
    x = torch.randn(2, 3, L, 5, generator=torch.Generator().manual_seed(L), dtype=torch.float64)
    torch.testing.assert_close(FA._position_cumsum_(x.clone()), x.cumsum(2), rtol=1e-12,
                               atol=1e-12)
    q, k, v = (x.requires_grad_() for x in _qkv(1, 2, L, L, 4, 3, seed=L, scale=2.0))
    _check_causal_against_dense(q, k, v, t0=200 if L > 200 else 100)  # t0 in a later segment


class _OpCounter(TorchDispatchMode):
    """Counts the ATen operators dispatched (one GPU kernel launch or more each)."""

    def __init__(self):
        super().__init__()
        self.ops = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def test_causal_operator_count_does_not_grow_with_length():
    # 8 chunks vs 63 chunks (both with a padded last chunk) in one block, as on a GPU: the
    # chunked scan runs every chunk at once, so forward+backward dispatch the same
    # operators, as often (a loop over chunks would dispatch ~8x more for the longer one)
    assert FA._block_size("cuda", 64, 16384, 64, 32, 32) == 16384  # one block off the CPU
    assert FA._block_size("cpu", 4, 500, 8, 4, 3) >= 500
    counts = _causal_op_counts((60, 500), chunk_size=8)
    assert counts[0] == counts[1]


def _causal_op_counts(lengths, chunk_size, batch=2):
    """Operators dispatched by a causal forward+backward at each length."""
    counts = []
    for L in lengths:
        q, k, v = (x.requires_grad_() for x in _qkv(batch, 2, L, L, 4, 3, seed=L))
        with _OpCounter() as counter:
            flow_attention(q, k, v, causal=True, chunk_size=chunk_size).sum().backward()
        counts.append(counter.ops)
    return counts


def test_two_level_prefix_sums_operator_count_does_not_grow_with_length(monkeypatch):
    # the two-level prefix sums (as off the CPU) sum every segment at once: 300 and 1000
    # positions (5 and 16 segments, each with a shorter last one) dispatch the same operators
    monkeypatch.setattr(FA, "_split_scan", lambda device: True)
    counts = _causal_op_counts((300, 1000), chunk_size=64, batch=1)
    assert counts[0] == counts[1]


# bfloat16 keeps 8 significant bits (relative rounding 2^-9 ~ 0.2 %): values and gradients
# must be within 1.5 % of the largest reference entry (measured: 0.3-0.7 %); the flow
# statistics and the carried states are accumulated in float32
BF16_TOL = 0.015


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("mode", ["autocast", "bfloat16 inputs"])
def test_bfloat16_matches_float64_reference(causal, mode):
    low = torch.float32 if mode == "autocast" else torch.bfloat16
    # the reference sees the inputs the kernel gets (bfloat16 inputs are rounded: near the
    # clamp bound that flips the gradient of an element between zero and nonzero)
    q, k, v = (x.to(low).double() for x in _qkv(2, 2, 300, 300, 16, 8, seed=11))
    g = torch.randn(2, 2, 300, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    q64, k64, v64 = (x.clone().requires_grad_() for x in (q, k, v))
    ref = dense_reference(q64, k64, v64, causal=causal)
    ref_grads = torch.autograd.grad((ref * g).sum(), (q64, k64, v64))
    ql, kl, vl = (x.to(low).requires_grad_() for x in (q, k, v))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "autocast"):
        out = flow_attention(ql, kl, vl, causal=causal, chunk_size=16)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), ref, rtol=0, atol=BF16_TOL * ref.abs().max().item())
    grads = torch.autograd.grad((out * g.to(out.dtype)).sum(), (ql, kl, vl))
    for got, want in zip(grads, ref_grads):
        assert got.dtype == low
        torch.testing.assert_close(got.double(), want, rtol=0,
                                   atol=BF16_TOL * want.abs().max().item())


@pytest.mark.parametrize("causal", [True, False])
def test_float16_autocast_aggregates_in_float32(causal):
    # float16 products would leave float16's range at long lengths (see _precision): the
    # aggregation runs in float32 and only the output is rounded to float16 (2^-11)
    q, k, v = _qkv(1, 2, 70, 70, 8, 4, seed=4)
    with torch.autocast("cpu", dtype=torch.float16):
        out = flow_attention(q.float(), k.float(), v.float(), causal=causal, chunk_size=16)
    assert out.dtype == torch.float16
    ref = dense_reference(q, k, v, causal=causal)
    torch.testing.assert_close(out.double(), ref, rtol=1e-3, atol=1e-4 * ref.abs().max().item())


def test_errors():
    q = torch.randn(1, 2, 5, 4)
    with pytest.raises(ValueError, match="4-D tensors"):
        flow_attention(q[0], q[0], q[0])
    with pytest.raises(ValueError, match="causal flow_attention needs as many queries"):
        flow_attention(q, torch.randn(1, 2, 6, 4), torch.randn(1, 2, 6, 4), causal=True)
    with pytest.raises(ValueError, match="Incompatible shapes"):
        flow_attention(q, torch.randn(1, 2, 6, 3), torch.randn(1, 2, 6, 4))
    with pytest.raises(ValueError, match="divisible by n_heads"):
        FlowAttention(10, 3)
    for bad in (0, -4, 2.5, True, "64"):
        with pytest.raises(ValueError, match=r"'chunk_size' must be a positive integer or None"
                                             rf" \(the device's default\); got {bad!r}"):
            flow_attention(q, q, q, causal=True, chunk_size=bad)


def test_module_matches_functional_and_supports_cross_attention():
    torch.manual_seed(0)
    layer = FlowAttention(12, 3, dropout=0.0).eval()
    x, ctx = torch.randn(2, 7, 12), torch.randn(2, 11, 12)
    out = layer(x, ctx)
    assert out.shape == (2, 7, 12)

    def heads(t):
        return t.view(2, -1, 3, 4).transpose(1, 2)

    r = flow_attention(heads(layer.query(x)), heads(layer.key(ctx)), heads(layer.value(ctx)))
    torch.testing.assert_close(out, layer.out(r.transpose(1, 2).reshape(2, 7, 12)))
    assert "n_heads=3" in repr(layer)
    causal = FlowAttention(12, 3, causal=True, dropout=0.0).eval()
    y = causal(x)
    x2 = x.clone()
    x2[:, 4:] = 0
    assert torch.equal(causal(x2)[:, :4], y[:, :4])
