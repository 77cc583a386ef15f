"""Diffusion attention kernels against slow dense references (float64), memory, equivariance."""

import math

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from skdiff.nn.difformer import DIFFormer
from skdiff.nn.diffusion_attention import (
    DiffusionAttention,
    advanced_attention,
    edge_attention,
    simple_attention,
    softmax_attention,
)
from skdiff.nn.graph import normalized_adjacency

torch.set_default_dtype(torch.float32)


# -- slow dense references: form the (h, n, l) weight matrix explicitly ------------------------
def dense_norm(x, qk_norm, scale=None):
    if qk_norm == "global":
        return x / (x.norm() if scale is None else scale)
    return x / x.norm(dim=-1, keepdim=True)


def dense_weights(q, k, kernel, qk_norm="global", q_scale=None):
    if kernel == "simple":
        qn, kn = dense_norm(q, qk_norm, q_scale), dense_norm(k, qk_norm)
        return 1.0 + torch.einsum("nhm,lhm->hnl", qn, kn)
    if kernel == "advanced":
        return torch.sigmoid(torch.einsum("nhm,lhm->hnl", q, k))
    return torch.exp(torch.einsum("nhm,lhm->hnl", q, k) / math.sqrt(q.shape[-1]))


def dense_attention(q, k, v, kernel, qk_norm="global", mask=None, q_scale=None):
    w = dense_weights(q, k, kernel, qk_norm, q_scale)
    if mask is not None:
        w = w * mask
    s = w / w.sum(-1, keepdim=True)
    return torch.einsum("hnl,lhd->nhd", s, v)


def qkv(n=37, l=None, h=3, m=5, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    l = n if l is None else l
    return (torch.randn(n, h, m, generator=g, dtype=torch.float64),
            torch.randn(l, h, m, generator=g, dtype=torch.float64),
            torch.randn(l, h, d, generator=g, dtype=torch.float64))


def random_graph(n, p=0.1, seed=0):
    g = torch.Generator().manual_seed(seed)
    A = (torch.rand(n, n, generator=g) < p).double()
    A = torch.maximum(A, A.T)
    A.fill_diagonal_(0)
    return A


@pytest.mark.parametrize("qk_norm", ["global", "row"])
def test_simple_equals_dense(qk_norm):
    q, k, v = qkv()
    assert torch.allclose(simple_attention(q, k, v, qk_norm), dense_attention(q, k, v, "simple",
                                                                              qk_norm))


@pytest.mark.parametrize("qk_norm", ["global", "row"])
def test_simple_gradients_equal_dense(qk_norm):
    # the global norm is folded into the sums (no normalised copies of Q, K): same gradients
    q, k, v = (t.requires_grad_() for t in qkv(n=23, l=31))
    w = torch.randn(23, 3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    fast = torch.autograd.grad((simple_attention(q, k, v, qk_norm) * w).sum(), (q, k, v))
    ref = torch.autograd.grad((dense_attention(q, k, v, "simple", qk_norm) * w).sum(), (q, k, v))
    for a, b in zip(fast, ref):
        assert torch.allclose(a, b)


@pytest.mark.parametrize("block_size", [5, 37, 1000])
def test_advanced_blocked_equals_dense(block_size):
    q, k, v = qkv()
    assert torch.allclose(advanced_attention(q, k, v, block_size),
                          dense_attention(q, k, v, "advanced"))


@pytest.mark.parametrize("block_size", [6, 1000])
def test_softmax_blocked_equals_dense(block_size):
    q, k, v = qkv()
    assert torch.allclose(softmax_attention(q, k, v, block_size),
                          dense_attention(q, k, v, "softmax"))


def test_blocked_gradients_equal_dense():
    q, k, v = (t.requires_grad_() for t in qkv(n=20))
    advanced_attention(q, k, v, block_size=6).square().sum().backward()
    g_blocked = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    dense_attention(q, k, v, "advanced").square().sum().backward()
    for a, t in zip(g_blocked, (q, k, v)):
        assert torch.allclose(a, t.grad)


@pytest.mark.parametrize("kernel", ["simple", "advanced", "softmax"])
@pytest.mark.parametrize("qk_norm", ["global", "row"])
def test_edge_attention_equals_masked_dense(kernel, qk_norm):
    q, k, v = qkv(n=25)
    A = random_graph(25) + torch.eye(25, dtype=torch.float64)
    ei = A.nonzero().T
    out = edge_attention(q, k, v, ei, kernel, qk_norm)
    assert torch.allclose(out, dense_attention(q, k, v, kernel, qk_norm, mask=A))


def test_module_forward_equals_dense_with_graph_term():
    torch.manual_seed(0)
    n, D = 30, 8
    x = torch.randn(n, D, dtype=torch.float64)
    A = random_graph(n)
    adj = normalized_adjacency(A.nonzero().T, None, n).double()
    for gw in (None, 0.3):
        att = DiffusionAttention(D, D, n_heads=2, kernel="advanced", graph_weight=gw).double()
        q, k, v = att.Wq(x).view(n, 2, D), att.Wk(x).view(n, 2, D), x[:, None].expand(n, 2, D)
        Ghat = adj.to_dense()
        a, g = dense_attention(q, k, v, "advanced"), torch.einsum("ij,jhd->ihd", Ghat, v)
        ref = (a + g if gw is None else (1 - gw) * a + gw * g).mean(1)
        assert torch.allclose(att(x, adj), ref)


@pytest.mark.parametrize("kernel", ["simple", "advanced", "softmax"])
@pytest.mark.parametrize("scope", ["all", "graph"])
def test_permutation_equivariance(kernel, scope):
    torch.manual_seed(0)
    n = 40
    x = torch.randn(n, 6, dtype=torch.float64)
    A = random_graph(n)
    perm = torch.randperm(n)
    net = DIFFormer(6, 3, hidden_dim=8, n_layers=2, n_heads=2, kernel=kernel, scope=scope,
                    block_size=16).double().eval()
    adj = normalized_adjacency(A.nonzero().T, None, n).double()
    adj_p = normalized_adjacency(A[perm][:, perm].nonzero().T, None, n).double()
    assert torch.allclose(net(x, adj)[perm], net(x[perm], adj_p))


class _LargestTensor(TorchDispatchMode):
    """Records the largest number of elements of any tensor an op produces."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def test_simple_kernel_never_forms_n_by_n():
    """Every tensor of forward + backward stays O(n h d): nothing of size n x n appears."""
    n, h, m = 3000, 2, 8  # n*h*m = 48K << n*n = 9M
    q, k, v = (t.float().requires_grad_() for t in qkv(n=n, h=h, m=m, d=m))
    with _LargestTensor() as rec:
        simple_attention(q, k, v, "row").sum().backward()
    assert rec.largest <= n * h * m < n * n / 100
    # the detector is not blind: the quadratic kernel does allocate h x block x n
    with _LargestTensor() as rec_adv, torch.no_grad():
        advanced_attention(q, k, v, block_size=100)
    assert h * 100 * n <= rec_adv.largest < n * n


def test_blocked_training_memory_is_block_times_n():
    """With autograd, the blocked advanced kernel recomputes blocks (checkpoint)."""
    n, h, m = 1200, 1, 4
    q, k, v = (t.float().requires_grad_() for t in qkv(n=n, h=h, m=m, d=m))
    with _LargestTensor() as rec:
        advanced_attention(q, k, v, block_size=100).sum().backward()
    assert rec.largest <= h * 100 * n


@pytest.mark.parametrize("kernel", ["simple", "advanced", "softmax"])
@pytest.mark.parametrize("qk_norm", ["global", "row"])
def test_inductive_summary_equals_attention_to_train_keys(kernel, qk_norm):
    """New rows attending via stored summaries == dense attention over train keys only."""
    torch.manual_seed(0)
    D = 8
    att = DiffusionAttention(D, D, n_heads=2, kernel=kernel, qk_norm=qk_norm,
                             value_projection=True).double()
    x_train, x_new = torch.randn(50, D, dtype=torch.float64), torch.randn(7, D,
                                                                          dtype=torch.float64)
    summary = att.summary(x_train)
    if kernel == "simple":  # O(1) in the training-set size: no per-row tensor is stored
        assert all(t.shape[0] != 50 for t in summary.values() if t.dim())
    q = att.Wq(x_new).view(7, 2, D)
    qt, k, v = (W(x_train).view(50, 2, D) for W in (att.Wq, att.Wk, att.Wv))
    ref = dense_attention(q, k, v, kernel, qk_norm, q_scale=qt.norm()).mean(1)
    assert torch.allclose(att.forward_inductive(x_new, summary), ref)
    # a training row predicted inductively gets exactly its transductive output
    assert torch.allclose(att.forward_inductive(x_train[:5], summary), att(x_train)[:5])


@pytest.mark.parametrize("kernel", ["simple", "advanced"])
def test_network_inductive_on_training_rows_equals_joint_forward(kernel):
    torch.manual_seed(0)
    x = torch.randn(60, 5, dtype=torch.float64)
    net = DIFFormer(5, 3, hidden_dim=8, n_layers=3, kernel=kernel).double().eval()
    s = net.summaries(x)
    assert torch.allclose(net.forward_inductive(x, s), net(x))
    # isolated nodes: with a graph of no edges, Ĝ = I, the graph term is each row's value
    empty = normalized_adjacency(torch.zeros((2, 0), dtype=torch.long), None, 60).double()
    s_graph = net.summaries(x, empty)
    assert torch.allclose(net.forward_inductive(x, s_graph, graph=True), net(x, empty))


def test_attention_graph_topk_matches_dense():
    torch.manual_seed(0)
    x = torch.randn(30, 5, dtype=torch.float64)
    net = DIFFormer(5, 3, hidden_dim=8, n_layers=2, n_heads=2, kernel="advanced").double().eval()
    idx, val = net.attention_graph(x, layer=0, k=4, block_size=7)
    z = net._input(x)
    q, k, _ = net.convs[0].qkv(z)
    S = dense_attention(q, k, torch.eye(30, dtype=torch.float64)[:, None].expand(30, 2, 30),
                        "advanced").mean(1)
    ref_val, ref_idx = torch.topk(S, 4, dim=1)
    assert torch.equal(idx, ref_idx)
    assert torch.allclose(val, ref_val)
    assert repr(net.convs[0]).startswith("DiffusionAttention(")


@pytest.mark.parametrize("kernel", ["simple", "advanced", "softmax"])
def test_attention_weights_with_graph_scope_are_the_edge_attention(kernel):
    # the weights attention_graph reports are those the forward uses: along the edges only
    # (self loops included), each row summing to 1 over them; an isolated node, itself
    torch.manual_seed(0)
    n = 30
    x = torch.randn(n, 6, dtype=torch.float64)
    A = random_graph(n)
    A[0], A[:, 0] = 0, 0  # node 0 isolated
    adj = normalized_adjacency(A.nonzero().T, None, n).double()
    att = DiffusionAttention(6, 6, n_heads=2, kernel=kernel, scope="graph").double().eval()
    with torch.no_grad():
        q, k, v = att.qkv(x)
        S = att.attention_weights(q, k, torch.arange(n), adj)
        # one value per row for both heads: the heads' mean output is S times the values
        same = v[:, :1].expand(n, 2, -1)
        assert torch.allclose(S @ v[:, 0], att.attend(q, k, same, adj).mean(1))
    on_edges = (A + torch.eye(n, dtype=A.dtype)) > 0
    assert torch.all(S[~on_edges] == 0) and torch.allclose(S.sum(1), torch.ones(n).double())
    assert S[0, 0] == 1
    # without an adjacency every row is an isolated node
    assert torch.equal(att.attention_weights(q, k, torch.arange(5, 9)),
                       torch.eye(n, dtype=S.dtype)[5:9])
    net = DIFFormer(6, 3, hidden_dim=8, n_layers=1, n_heads=2, kernel=kernel,
                    scope="graph").double().eval()
    idx, val = net.attention_graph(x, adj, k=n, block_size=7)
    assert torch.all(on_edges.gather(1, idx)[val > 0])


def test_layer_checkpointing_gives_identical_gradients():
    x = torch.randn(40, 5, dtype=torch.float64)
    A = random_graph(40)
    adj = normalized_adjacency(A.nonzero().T, None, 40).double()
    grads = []
    for ckpt in (False, True):
        torch.manual_seed(0)
        net = DIFFormer(5, 3, hidden_dim=8, n_layers=3, dropout=0.3,
                        checkpoint_layers=ckpt).double()
        torch.manual_seed(1)  # same dropout masks in both runs
        net(x, adj).square().sum().backward()
        grads.append([p.grad for p in net.parameters()])
    for a, b in zip(*grads):
        assert torch.allclose(a, b)
