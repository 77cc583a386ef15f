"""Sparse input rows in CSR with their transpose, and the linear map that reads them
(skdiff.nn.sparse)."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skdiff.nn import DIFFormer
from skdiff.nn.sparse import SparseRows, sparse_linear


def _rows(n=40, f=30, density=0.2, seed=0):
    F = sp.random(n, f, density=density, format="coo", random_state=seed, dtype=np.float64)
    # duplicates and an empty row: the CSR built from them sums the duplicates
    F = sp.coo_matrix((np.r_[F.data, 1.5], (np.r_[F.row, F.row[0]], np.r_[F.col, F.col[0]])),
                      shape=F.shape)
    F = F.tolil()
    F[3] = 0
    return sp.csr_matrix(F)


def test_sparse_linear_equals_the_dense_product_and_its_weight_gradient():
    F = _rows()
    x = SparseRows.from_scipy(F, dtype=torch.float64)
    assert x.shape == (40, 30) and x.dtype == torch.float64 and x.is_sparse and len(x) == 40
    assert torch.equal(x.to_dense(), torch.as_tensor(F.toarray()))
    assert torch.equal(x.columns.to_dense(), torch.as_tensor(F.toarray().T))
    gen = torch.Generator().manual_seed(0)
    W = torch.randn(5, 30, generator=gen, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, generator=gen, dtype=torch.float64, requires_grad=True)
    g = torch.randn(40, 5, generator=gen, dtype=torch.float64)
    out = sparse_linear(x, W, b)
    out.backward(g)
    gW, gb = W.grad.clone(), b.grad.clone()
    W.grad = b.grad = None
    ref = torch.nn.functional.linear(torch.as_tensor(F.toarray()), W, b)
    ref.backward(g)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(gW, W.grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(gb, b.grad, rtol=1e-12, atol=1e-12)
    # a fixed weight (a linear skip) gets no gradient and the rows never do
    W.requires_grad_(False)
    assert not sparse_linear(x, W).requires_grad


def test_sparse_rows_move_and_cast_like_a_tensor():
    x = SparseRows.from_scipy(_rows())
    assert x.dtype == torch.float32 and x.device.type == "cpu"
    assert x.to("cpu") is x  # nothing to move: the same object
    d = x.double()
    assert d is not x and d.dtype == torch.float64 and d.columns.dtype == torch.float64
    assert x.dtype == torch.float32  # the original is unchanged
    assert d.float().dtype == torch.float32
    # a float64 weight reads float32 rows in float64
    W = torch.ones(2, 30, dtype=torch.float64)
    assert sparse_linear(x, W).dtype == torch.float64
    assert "nnz=" in repr(x)


def test_difformer_reads_sparse_rows_as_the_same_rows_dense():
    F = _rows(n=60, f=25, seed=1)
    torch.manual_seed(0)
    net = DIFFormer(25, 3, hidden_dim=16, n_layers=2, linear_skip=True).double().eval()
    with torch.no_grad():
        net.set_skip_(torch.randn(3, 25), torch.randn(3))
    dense = torch.as_tensor(F.toarray())
    with torch.no_grad():
        want = net(dense)
        torch.testing.assert_close(net(SparseRows.from_scipy(F, dtype=torch.float64)), want,
                                   rtol=1e-10, atol=1e-10)
        coo = dense.to_sparse()  # torch COO rows keep working
        torch.testing.assert_close(net(coo), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("checkpoint", [False, True])
def test_training_steps_on_sparse_rows_match_dense_ones(checkpoint):
    F = _rows(n=50, f=20, seed=2)
    nets = []
    for x in (torch.as_tensor(F.toarray()), SparseRows.from_scipy(F, dtype=torch.float64)):
        torch.manual_seed(0)
        net = DIFFormer(20, 3, hidden_dim=8, n_layers=1, dropout=0.0,
                        checkpoint_layers=checkpoint).double()
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            net(x).square().mean().backward()
            opt.step()
        nets.append(net)
    for p, q in zip(*(n.parameters() for n in nets)):
        torch.testing.assert_close(p, q, rtol=1e-9, atol=1e-9)
