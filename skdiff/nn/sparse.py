r"""Sparse input rows and the linear map that reads them.

Bag-of-words features (a citation graph's, a document-term matrix) reach the networks as a
sparse matrix :math:`X` (n, f). Their first layer is a linear map :math:`X W^T` whose weight
gradient is :math:`X^T G`. On the CPU, torch multiplies a sparse COO matrix by a dense one
through a generic kernel, and turns a transposed CSR matrix into a CSC view that is as slow;
a CSR matrix by a dense one runs many times faster. :class:`SparseRows` therefore holds both
:math:`X` and :math:`X^T` in CSR, built once from scipy's CSR arrays, and
:func:`sparse_linear` uses the first in the forward pass and the second for the weight
gradient. The result is the same product (up to the order of the float additions); the
features themselves get no gradient.
"""

from __future__ import annotations

import warnings

import scipy.sparse as sp
import torch

__all__ = ["SparseRows", "sparse_linear"]


def _torch_csr(M, device, dtype):
    """A scipy CSR matrix as a torch sparse CSR tensor (indices int64) on ``device``."""
    with warnings.catch_warnings():  # "sparse CSR support is in beta": used in core ops only
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            torch.as_tensor(M.indptr, dtype=torch.long),
            torch.as_tensor(M.indices, dtype=torch.long),
            torch.as_tensor(M.data, dtype=dtype), M.shape, check_invariants=False).to(device)


class SparseRows:
    """Sparse rows (n, f) in CSR, with their transpose in CSR (see the module docstring).

    Build with :meth:`from_scipy`. It moves like a tensor (``to``, ``double``, ``float``) and
    reports ``shape``, ``dtype``, ``device`` and ``is_sparse`` (``True``); networks read it
    through :func:`sparse_linear`.

    Parameters
    ----------
    rows : Tensor
        Sparse CSR tensor (n, f).
    columns : Tensor
        Sparse CSR tensor (f, n), the transpose of ``rows``.
    """

    is_sparse = True

    def __init__(self, rows, columns):
        self.rows = rows
        self.columns = columns

    @classmethod
    def from_scipy(cls, F, device="cpu", dtype=torch.float32):
        """The rows of a scipy sparse matrix.

        Parameters
        ----------
        F : scipy sparse matrix of shape (n, f)
            Any format; duplicate entries are summed.
        device : str or torch.device, default="cpu"
            Where the tensors are put.
        dtype : torch.dtype, default=torch.float32
            The values' dtype.

        Returns
        -------
        SparseRows
        """
        F = sp.csr_matrix(F)
        F.sum_duplicates()
        F.sort_indices()
        T = F.T.tocsr()
        T.sort_indices()
        return cls(_torch_csr(F, device, dtype), _torch_csr(T, device, dtype))

    @property
    def shape(self):
        """``torch.Size`` (n, f) of the rows."""
        return self.rows.shape

    @property
    def dtype(self):
        """The values' dtype."""
        return self.rows.dtype

    @property
    def device(self):
        """The device the rows are on."""
        return self.rows.device

    def __len__(self):
        return self.rows.shape[0]

    def to(self, *args, **kwargs):
        """Moved or cast as :meth:`torch.Tensor.to` (a new object; this one is unchanged).

        Parameters
        ----------
        *args, **kwargs
            Those of :meth:`torch.Tensor.to` (a device, a dtype, ``non_blocking``, ...),
            applied to both tensors.

        Returns
        -------
        SparseRows
            ``self`` where nothing changes.
        """
        rows, columns = self.rows.to(*args, **kwargs), self.columns.to(*args, **kwargs)
        return self if rows is self.rows and columns is self.columns else \
            SparseRows(rows, columns)

    def double(self):
        """The rows in float64."""
        return self.to(torch.float64)

    def float(self):
        """The rows in float32."""
        return self.to(torch.float32)

    def to_dense(self):
        """The rows as a dense tensor (n, f)."""
        return self.rows.to_dense()

    def __repr__(self):
        return (f"SparseRows(shape={tuple(self.shape)}, nnz={self.rows.values().numel()}, "
                f"dtype={self.dtype}, device={self.device})")


class _SparseMatmul(torch.autograd.Function):
    """``rows @ weight.T`` with the weight's gradient ``(columns @ grad).T``."""

    @staticmethod
    def forward(ctx, rows, columns, weight):
        ctx.columns = columns
        return torch.sparse.mm(rows, weight.t())

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[2]:
            return None, None, None
        return None, None, torch.sparse.mm(ctx.columns, grad.contiguous()).t()


def sparse_linear(x, weight, bias=None):
    r""":math:`X W^T + b` of sparse rows ``x``, as :func:`torch.nn.functional.linear`.

    Parameters
    ----------
    x : SparseRows
        The rows, shape (n, f).
    weight : Tensor of shape (out, f)
        The map's weight (its gradient is computed; the rows get none).
    bias : Tensor of shape (out,) or None, default=None
        Added to every row's output.

    Returns
    -------
    Tensor of shape (n, out)
        Dense, in the dtype of ``weight`` (``x`` is cast to it where they differ; the
        product runs outside autocast, as sparse kernels take one dtype).
    """
    if x.dtype != weight.dtype:
        x = x.to(weight.dtype)
    with torch.autocast(x.device.type, enabled=False):
        out = _SparseMatmul.apply(x.rows, x.columns, weight)
        return out if bias is None else out + bias

