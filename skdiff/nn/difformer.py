r"""The DIFFormer encoder (Wu et al., ICLR 2023, Sec. 4-5; official ``DIFFormer`` class).

Every layer is one explicit-Euler step of an energy-constrained diffusion (paper Eq. 6/9):

.. math::

    Z^{(0)} &= \mathrm{Dropout}(\mathrm{ReLU}(\mathrm{LN}(X W_{in}))),\\
    P^{(k)} &= \operatorname{mean}_h\big[\mathrm{Attn}_h(Z^{(k)}) + \hat G V_h^{(k)}\big],\\
    Z^{(k+1)} &= \mathrm{Dropout}\big(\mathrm{LN}(\alpha P^{(k)} + (1-\alpha) Z^{(k)})\big),
    \qquad \text{logits} = Z^{(K)} W_{out},

with step size :math:`\alpha = \tau` (0.5 in the official runs) and the graph term only when an
adjacency is given. With ``linear_skip`` a fixed linear map of the inputs is added to the
outputs, :math:`\text{logits} = Z^{(K)} W_{out} + X W_{skip}`: the network then learns a
correction to a linear model set by :meth:`DIFFormer.set_skip_`. See
:mod:`skdiff.nn.diffusion_attention` for the attention kernels.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .._docs import fill_doc
from ._dropout import Dropout
from .diffusion_attention import ATTENTION_DOCS, DiffusionAttention
from .sparse import SparseRows, sparse_linear

__all__ = ["DIFFormer"]


def _linear(layer, x):
    """``layer`` (an :class:`~torch.nn.Linear`) applied to dense rows, sparse COO rows or
    :class:`~skdiff.nn.SparseRows` (CSR with its transpose: the fast sparse path)."""
    if isinstance(x, SparseRows):
        return sparse_linear(x, layer.weight, layer.bias)
    if x.is_sparse:
        return torch.sparse.mm(x, layer.weight.t()) + layer.bias
    return layer(x)


@fill_doc(ATTENTION_DOCS)
class DIFFormer(nn.Module):
    """DIFFormer network: input block, ``n_layers`` diffusion layers, output Linear.

    Parameters
    ----------
    in_dim, out_dim : int
        Input features and outputs (logits).
    hidden_dim : int, default=64
        Width of the hidden state (and of each head's values).
    n_layers : int, default=2
        Diffusion layers (:class:`~skdiff.nn.DiffusionAttention` each).
    %(n_heads)s
    alpha : float, default=0.5
        Diffusion step size (residual weight of the propagated state).
    dropout : float, default=0.2
        Dropout probability after the input block and after every layer.
    %(attention_parameters)s
    checkpoint_layers : bool, default=False
        Under autograd, recompute each layer in the backward pass instead of storing its
        intermediates (gradient checkpointing; the dropout RNG state is replayed, so results
        are identical). Several times less training memory for ~30 % more time.
    n_detached_outputs : int, default=0
        The last ``n_detached_outputs`` outputs (e.g. the variance half of a Gaussian head)
        read the final hidden state through ``detach()``: their loss trains the output
        layer, not the layers below it.
    linear_skip : bool, default=False
        Add a linear map of the inputs (``skip``, in_dim -> out_dim) to the outputs. It
        starts at zero and fixed; :meth:`set_skip_` sets it and whether training updates
        it.

    Notes
    -----
    Shapes: x (n, in_dim) dense, sparse COO or :class:`~skdiff.nn.SparseRows` (the
    fast sparse path); adj sparse normalised (n, n) or None -> (n, out_dim).
    """

    def __init__(self, in_dim, out_dim, *, hidden_dim=64, n_layers=2, n_heads=1, alpha=0.5,
                 dropout=0.2, kernel="simple", qk_norm="global", value_projection=False,
                 graph_weight=None, scope="all", block_size=1024, checkpoint_layers=False,
                 n_detached_outputs=0, linear_skip=False):
        super().__init__()
        if not 0 <= n_detached_outputs <= out_dim:
            raise ValueError(f"n_detached_outputs must be in [0, {out_dim}]; got "
                             f"{n_detached_outputs}.")
        self.in_dim, self.out_dim = in_dim, out_dim
        self.n_detached_outputs = n_detached_outputs
        self.alpha = alpha
        self.checkpoint_layers = checkpoint_layers
        self.fc_in = nn.Linear(in_dim, hidden_dim)
        self.norm_in = nn.LayerNorm(hidden_dim)
        self.dropout = Dropout(dropout)
        self.convs = nn.ModuleList([
            DiffusionAttention(hidden_dim, hidden_dim, n_heads=n_heads, kernel=kernel,
                               qk_norm=qk_norm, value_projection=value_projection,
                               graph_weight=graph_weight, scope=scope, block_size=block_size)
            for _ in range(n_layers)
        ])
        self.norms = nn.ModuleList([nn.LayerNorm(hidden_dim) for _ in range(n_layers)])
        self.fc_out = nn.Linear(hidden_dim, out_dim)
        self.skip = nn.Linear(in_dim, out_dim).requires_grad_(False) if linear_skip else None
        self._zero_skip()

    def _zero_skip(self):
        if self.skip is not None:
            with torch.no_grad():
                self.skip.weight.zero_()
                self.skip.bias.zero_()

    @property
    def n_layers(self):
        """Number of diffusion layers."""
        return len(self.convs)

    def reset_parameters(self):
        """Draw fresh initial weights for every layer of the network (each submodule's own
        ``reset_parameters``)."""
        for m in self.modules():
            if m is not self and hasattr(m, "reset_parameters"):
                m.reset_parameters()
        self._zero_skip()  # the skip starts at zero, set by set_skip_

    @torch.no_grad()
    def set_skip_(self, weight, bias, *, trainable=False):
        """Set the linear skip to ``weight`` (out_dim, in_dim) and ``bias`` (out_dim,).

        Parameters
        ----------
        weight : array-like of shape (out_dim, in_dim)
            Weights of the skip.
        bias : array-like of shape (out_dim,)
            Its intercepts.
        trainable : bool, default=False
            Whether training updates the skip afterwards (``False``: the rest of the
            network learns a correction to this fixed linear map).
        """
        if self.skip is None:
            raise ValueError("This network has no linear skip (built with "
                             "linear_skip=False).")
        self.skip.weight.copy_(torch.as_tensor(weight, dtype=self.skip.weight.dtype))
        self.skip.bias.copy_(torch.as_tensor(bias, dtype=self.skip.bias.dtype))
        self.skip.requires_grad_(trainable)

    def skip_outputs(self, x):
        """The linear skip's outputs for the rows ``x``; zero without a skip.

        Parameters
        ----------
        x : Tensor of shape (n, in_dim), dense or sparse COO, or SparseRows
            Input rows.

        Returns
        -------
        out : Tensor of shape (n, out_dim) or 0
            ``x W_skip^T + b_skip``, or the number 0 where the network has no skip.
        """
        if self.skip is None:
            return 0
        return _linear(self.skip, x)

    def _input(self, x):
        h = _linear(self.fc_in, x)
        return self.dropout(torch.relu(self.norm_in(h)), site="input")

    def _step(self, i, z, p):
        # alpha p + (1 - alpha) z as one lerp: one (n, d) tensor instead of three
        return self.dropout(self.norms[i](torch.lerp(z, p, self.alpha)), site=i)

    def _layer(self, i, z, adj):
        return self._step(i, z, self.convs[i](z, adj))

    def head(self, z):
        """The output layer ``fc_out``, its last ``n_detached_outputs`` rows applied to
        ``z.detach()``.

        Parameters
        ----------
        z : Tensor of shape (n, hidden_dim)
            Final hidden states.

        Returns
        -------
        out : Tensor of shape (n, out_dim)
            Outputs (logits, or a Gaussian head's means and raw variances).
        """
        if not self.n_detached_outputs:
            return self.fc_out(z)
        k = self.out_dim - self.n_detached_outputs
        w, b = self.fc_out.weight, self.fc_out.bias
        return torch.cat([F.linear(z, w[:k], b[:k]), F.linear(z.detach(), w[k:], b[k:])],
                         dim=-1)

    def forward(self, x, adj=None):
        """Joint (transductive) forward over the rows of ``x``; ``adj`` normalised or None."""
        ckpt = self.checkpoint_layers and torch.is_grad_enabled()
        # the input block is checkpointed too: its four (n, hidden) activations are recomputed
        z = checkpoint(self._input, x, use_reentrant=False) if ckpt else self._input(x)
        for i in range(len(self.convs)):
            z = checkpoint(self._layer, i, z, adj, use_reentrant=False) if ckpt else \
                self._layer(i, z, adj)
        return self.head(z) + self.skip_outputs(x)

    @torch.no_grad()
    def summaries(self, x, adj=None):
        """Per-layer summaries of the rows ``x`` (call in eval mode) for :meth:`forward_inductive`.

        With the simple kernel they are O(1) in the number of rows (per-head d x d sums).

        Parameters
        ----------
        x : Tensor of shape (n, in_dim), dense or sparse COO, or SparseRows
            The (training) rows new rows will attend to.
        adj : sparse Tensor of shape (n, n) or None, default=None
            Normalised adjacency among the rows of ``x`` used in the forward that produces
            each layer's input.

        Returns
        -------
        summaries : list of dict
            One :meth:`DiffusionAttention.summary` per layer.
        """
        out = []
        z = self._input(x)
        for i, conv in enumerate(self.convs):
            out.append(conv.summary(z))
            z = self._step(i, z, conv(z, adj))
        return out

    def forward_inductive(self, x, summaries, *, graph=False):
        """Logits of new rows that attend only to the rows summarised in ``summaries``.

        ``graph=True`` when the summaries came from a forward with an adjacency: new rows are
        then isolated nodes whose graph term is their own value.

        Parameters
        ----------
        x : Tensor of shape (b, in_dim), dense or sparse COO, or SparseRows
            The new rows; each is predicted on its own, independent of the others.
        summaries : list of dict
            The training rows' :meth:`summaries`, one per layer.
        graph : bool, default=False
            Whether the network was trained with a graph term.

        Returns
        -------
        out : Tensor of shape (b, out_dim)
            Outputs (logits) of the new rows.
        """
        z = self._input(x)
        for i, conv in enumerate(self.convs):
            z = self._step(i, z, conv.forward_inductive(z, summaries[i], graph=graph))
        return self.head(z) + self.skip_outputs(x)

    @torch.no_grad()
    def attention_graph(self, x, adj=None, *, layer=-1, k=10, block_size=1024):
        """Top-``k`` attention weights of every row of ``x`` at ``layer`` (heads averaged).

        Computed in row blocks (O(block_size n) memory). Call in eval mode.

        Parameters
        ----------
        x : Tensor of shape (n, in_dim), dense or sparse COO, or SparseRows
            The rows, attending to each other in one joint forward.
        adj : sparse Tensor of shape (n, n) or None, default=None
            Normalised adjacency among the rows (the graph term of the layers below
            ``layer``).
        layer : int, default=-1
            Which layer's attention (negative counts from the last).
        k : int, default=10
            Weights kept per row (at most ``n``).
        block_size : int, default=1024
            Query rows per block.

        Returns
        -------
        indices : LongTensor of shape (n, min(k, n))
            The attended rows of every row, by decreasing weight.
        values : Tensor of shape (n, min(k, n))
            Their weights :math:`S_{ij}` (each row of the full matrix sums to 1).
        """
        n_layers = len(self.convs)
        layer = layer % n_layers
        z = self._input(x)
        for i, conv in enumerate(self.convs[:layer]):
            z = self._step(i, z, conv(z, adj))
        conv = self.convs[layer]
        q, key, _ = conv.qkv(z)
        n = z.shape[0]
        k = min(k, n)
        idx, val = [], []
        for start in range(0, n, block_size):  # row blocks, not samples
            rows = torch.arange(start, min(start + block_size, n), device=z.device)
            w = conv.attention_weights(q, key, rows, adj)
            v, i = torch.topk(w, k, dim=1)
            idx.append(i)
            val.append(v)
        return torch.cat(idx), torch.cat(val)
