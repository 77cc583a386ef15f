"""The bi-dimensional attention noise model of Neural Diffusion Processes.

Axis legend used in the shape comments: ``b`` functions in the batch, ``n`` points of a
function, ``d`` input dimensions, ``h`` hidden width, ``k`` attention heads.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["BiDimensionalAttentionBlock", "NDPNoiseModel", "timestep_embedding"]


def timestep_embedding(t: torch.Tensor, dim: int, max_positions: int = 10_000) -> torch.Tensor:
    r"""Sinusoidal embedding of integer diffusion steps (Dutordoir et al. 2023, §4.1).

    .. math::
        e(t) = [\sin(t\,\omega_0), \dots, \sin(t\,\omega_{m-1}), \cos(t\,\omega_0), \dots,
        \cos(t\,\omega_{m-1})],\quad \omega_i = \exp(-i \log(P) / (m - 1)),\ m = \lfloor dim/2
        \rfloor,

    zero-padded to ``dim`` when it is odd (as the official code). Shapes: ``t`` [b] -> [b, dim].
    """
    half = dim // 2
    scale = math.log(max_positions) / max(half - 1, 1)
    freqs = torch.exp(torch.arange(half, dtype=torch.float32, device=t.device) * -scale)
    args = t.to(torch.float32)[:, None] * freqs[None, :]  # [b, m]
    emb = torch.cat([torch.sin(args), torch.cos(args)], dim=1)
    if dim % 2 == 1:
        emb = F.pad(emb, (0, 1))
    return emb


#: Whether :class:`_MultiHeadAttention` computes the attention over one key and over two keys
#: (across the input dimensions at D = 1 and D = 2) in closed form rather than with
#: ``scaled_dot_product_attention`` (the same result; ``benchmarks/ndp_speed.py
#: --paired-attention`` times both).
_SHORT_PATHS = True


#: Whether the attention projections add their bias after a bias-free product
#: (:func:`_linear`) rather than through ``F.linear`` (the same values;
#: ``benchmarks/ndp_speed.py --paired-projection`` times both).
_BIAS_AFTER = True


def _linear(x, weight, bias):
    """``F.linear(x, weight, bias)``, the bias added after the product.

    On the CPU ``F.linear`` first copies the bias into every row of the output and then
    accumulates the product onto it; for the many short rows of the attention projections
    (thousands of points of width 64 projected to 384) that copy is slow. A product without
    bias and an in-place addition give the same values here (the outputs of the default
    model are bitwise equal) in less time.
    """
    if not _BIAS_AFTER:
        return F.linear(x, weight, bias)
    return F.linear(x, weight).add_(bias)


class _MultiHeadAttention(nn.Module):
    r"""Multi-head self-attention from width ``in_dim`` to width ``out_dim`` (official layout).

    .. math:: \mathrm{MHA}(S) = \mathrm{concat}_k\big(\mathrm{softmax}(Q_k K_k^\top/\sqrt{d_k})
        V_k\big) W_o,\quad Q, K, V = S W_{q,k,v}

    with :math:`W_{q,k,v}: h \to 2h` (fused into one ``Linear``; same parameters as the official
    three) and :math:`W_o: 2h \to 2h`.
    """

    def __init__(self, in_dim: int, out_dim: int, n_heads: int):
        super().__init__()
        if out_dim % n_heads:
            raise ValueError(
                f"The attention width {out_dim} must be divisible by n_heads={n_heads}."
            )
        self.n_heads = n_heads
        self.qkv = nn.Linear(in_dim, 3 * out_dim)
        self.out = nn.Linear(out_dim, out_dim)

    def forward(self, s: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        # s: [batch, seq, h]; key_mask: [batch, seq] bool, True = key takes part.
        bsz, seq, _ = s.shape
        if seq == 1 and _SHORT_PATHS:
            # softmax over a single key is exactly 1, so the output is the value projected:
            # W_o (W_v s + b_v) + b_o, one affine map. Composing the two weights first skips the
            # attention kernel, the query and key projections and one matrix product per point
            # at D = 1, the most common case.
            width = self.out.in_features
            w_v, b_v = self.qkv.weight[2 * width:], self.qkv.bias[2 * width:]
            weight = self.out.weight @ w_v
            bias = torch.addmv(self.out.bias, self.out.weight, b_v)
            return _linear(s, weight, bias)
        qkv = _linear(s, self.qkv.weight, self.qkv.bias)  # [batch, seq, 3 (2h)]
        if seq == 2 and key_mask is None and _SHORT_PATHS:
            return _linear(self._two_key_attention(qkv), self.out.weight, self.out.bias)
        q, k, v = qkv.chunk(3, dim=-1)  # each [batch, seq, 2h]
        # [batch, seq, (k dk)] -> [batch, k, seq, dk]
        q, k, v = (z.view(bsz, seq, self.n_heads, -1).transpose(1, 2) for z in (q, k, v))
        mask = None if key_mask is None else key_mask[:, None, None, :]  # [batch, 1, 1, seq]
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # [batch, k, seq, dk]
        o = o.transpose(1, 2).reshape(bsz, seq, -1)  # [batch, seq, 2h]
        return _linear(o, self.out.weight, self.out.bias)

    def _two_key_attention(self, qkv: torch.Tensor) -> torch.Tensor:
        """The heads' attention over two keys (the input dimensions of a point at D = 2), from
        the fused projections ``qkv`` [batch, 2, 3 (k dk)] to [batch, 2, (k dk)].

        The softmax over two scores is a logistic function of their difference, so the same
        attention as the kernel of the general path is a few elementwise products in the
        projections' own layout. ``scaled_dot_product_attention`` runs batched products over
        thousands of 2 x 2 score matrices there, which on the CPU cost more than their
        arithmetic (about a third of a D = 2 forward of the default model).
        """
        bsz, seq, width = qkv.shape
        q, k, v = qkv.view(bsz, seq, 3, self.n_heads, -1).unbind(2)  # each [batch, 2, k, dk]
        # softmax over keys 0 and 1 = (1 - w, w), w = sigmoid(q . (k_1 - k_0) / sqrt(dk))
        w = torch.sigmoid((q * (k[:, 1] - k[:, 0])[:, None]).sum(-1) * q.shape[-1] ** -0.5)
        o = v[:, :1] + w[..., None] * (v[:, 1] - v[:, 0])[:, None]  # [batch, 2, k, dk]
        return o.reshape(bsz, seq, width // 3)


class BiDimensionalAttentionBlock(nn.Module):
    r"""One bi-dimensional attention block (Dutordoir et al. 2023, §4.1, Fig. 2).

    .. math::
        U &= S + \mathrm{Linear}(e(t)) \\
        A &= \mathrm{MHSA}_D(U) + \mathrm{MHSA}_N(U) \quad (\text{width } 2h) \\
        R, K &= \mathrm{GELU}(A_{:, :h}),\ \mathrm{GELU}(A_{:, h:}) \\
        S' &= (S + R)/\sqrt{2},\quad \text{skip} = K

    :math:`\mathrm{MHSA}_D` attends across the input dimensions of each point,
    :math:`\mathrm{MHSA}_N` across the points of each input dimension (own weights); padded points
    are masked out as keys so they cannot influence real ones.

    Shapes: ``s`` [b, n, d, h], ``t_emb`` [b, h], ``key_mask`` [b, n] (True = real point) ->
    (``s'``, ``skip``), both [b, n, d, h].
    """

    def __init__(self, hidden_dim: int, n_heads: int):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.linear_time = nn.Linear(hidden_dim, hidden_dim)
        self.attention_d = _MultiHeadAttention(hidden_dim, 2 * hidden_dim, n_heads)
        self.attention_n = _MultiHeadAttention(hidden_dim, 2 * hidden_dim, n_heads)

    def forward(self, s, t_emb, key_mask=None):
        b, n, d, h = s.shape
        u = s + self.linear_time(t_emb)[:, None, None, :]  # [b, n, d, h]
        att_d = self.attention_d(u.reshape(b * n, d, h)).view(b, n, d, 2 * h)
        u_r = u.transpose(1, 2).reshape(b * d, n, h)  # [b d, n, h]
        km = None
        if key_mask is not None:
            km = key_mask[:, None, :].expand(b, d, n).reshape(b * d, n)  # [b d, n]
        att_n = self.attention_n(u_r, km).view(b, d, n, 2 * h).transpose(1, 2)  # [b, n, d, 2h]
        a = att_d + att_n
        residual, skip = F.gelu(a).chunk(2, dim=-1)
        return (s + residual) / math.sqrt(2.0), skip


class NDPNoiseModel(nn.Module):
    r"""Noise model :math:`\epsilon_\theta(x, y_t, t)` of Neural Diffusion Processes.

    Dutordoir, Saul, Ghahramani, Simpson, "Neural Diffusion Processes", ICML 2023, §4.1
    (bi-dimensional attention). Equivariant to the order of the points and invariant to the order
    of the input dimensions:

    .. math::
        S^{(0)}_{n,d} &= \mathrm{GELU}(W_0\,[x_{n,d},\ y_{t,n}] + b_0)
            \in \mathbb{R}^h \\
        S^{(\ell)}, K^{(\ell)} &= \mathrm{Block}_\ell(S^{(\ell-1)}, e(t)),\quad \ell = 1..L \\
        \hat\epsilon_n &= W_2\,\mathrm{GELU}\Big(W_1 \frac{1}{D}\sum_d
            \frac{1}{\sqrt{L}}\sum_\ell K^{(\ell)}_{n,d} + b_1\Big) + b_2

    with :math:`W_2 = 0` at initialisation, so an untrained model predicts zero noise.
    The default sizes (``hidden_dim=64, n_layers=4, n_heads=8``) have 352,833 parameters, the
    size of the released models.

    Parameters
    ----------
    hidden_dim : int, default=64
        Width ``h`` of the point/dimension embeddings (attention runs at width ``2h``).
    n_layers : int, default=4
        Number of bi-dimensional attention blocks ``L``.
    n_heads : int, default=8
        Attention heads; must divide ``2 * hidden_dim``.

    Notes
    -----
    Shapes: ``x`` [b, n, d], ``y_t`` [b, n, 1], ``t`` [b] (long), ``mask`` [b, n] bool with
    True marking padding -> ``eps_hat`` [b, n, 1] (zero at padded points).

    See Also
    --------
    skdiff.diffusion.train_prior : trains it on GP functions.
    skdiff.diffusion.load_prior : loads the shipped pretrained weights.

    References
    ----------
    Dutordoir, Saul, Ghahramani, Simpson, "Neural Diffusion Processes", ICML 2023, §4.1;
    official code ``vdutor/neural-diffusion-processes``, ``model.py``.

    Examples
    --------
    >>> import torch
    >>> from skdiff.nn import NDPNoiseModel
    >>> model = NDPNoiseModel(hidden_dim=16, n_layers=2, n_heads=4)
    >>> x, y_t = torch.rand(2, 10, 3), torch.randn(2, 10, 1)
    >>> model(x, y_t, torch.tensor([3, 400])).shape
    torch.Size([2, 10, 1])
    """

    def __init__(self, hidden_dim: int = 64, n_layers: int = 4, n_heads: int = 8):
        super().__init__()
        for name, value in (("hidden_dim", hidden_dim), ("n_layers", n_layers),
                            ("n_heads", n_heads)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"'{name}' must be a positive integer; got {value!r}.")
        if (2 * hidden_dim) % n_heads:
            raise ValueError(
                f"n_heads={n_heads} must divide 2 * hidden_dim = {2 * hidden_dim}; change "
                "'hidden_dim' or 'n_heads'."
            )
        self.hidden_dim = hidden_dim
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.linear_embedding = nn.Linear(2, hidden_dim)
        self.blocks = nn.ModuleList(
            BiDimensionalAttentionBlock(hidden_dim, n_heads) for _ in range(n_layers)
        )
        self.linear_hidden = nn.Linear(hidden_dim, hidden_dim)
        self.linear_output = nn.Linear(hidden_dim, 1)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-initialise every layer; the output layer starts at zero (official ``init_zero``)."""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                m.reset_parameters()
        nn.init.zeros_(self.linear_output.weight)
        nn.init.zeros_(self.linear_output.bias)

    def forward(self, x, y_t, t, mask=None):
        if x.dim() != 3 or y_t.dim() != 3 or y_t.shape[-1] != 1 or y_t.shape[:2] != x.shape[:2]:
            raise ValueError(
                f"Expected x of shape [b, n, d] and y_t of shape [b, n, 1]; got {tuple(x.shape)} "
                f"and {tuple(y_t.shape)}."
            )
        b, n, d = x.shape
        key_mask = None
        if mask is not None:
            mask = mask.to(torch.bool)
            # Padded entries may hold anything (even NaN): replace them before they mix in.
            x = torch.where(mask[..., None], torch.zeros((), dtype=x.dtype, device=x.device), x)
            y_t = torch.where(mask[..., None], torch.zeros((), dtype=y_t.dtype,
                                                           device=y_t.device), y_t)
            key_mask = ~mask  # SDPA convention: True = this key takes part
        pairs = torch.stack([x, y_t.expand(b, n, d)], dim=-1)  # [b, n, d, 2]
        s = F.gelu(self.linear_embedding(pairs))  # [b, n, d, h]
        t_emb = timestep_embedding(t, self.hidden_dim)  # [b, h]
        skip = 0.0
        for block in self.blocks:
            s, k = block(s, t_emb, key_mask)
            skip = skip + k
        skip = skip.mean(dim=2) / math.sqrt(self.n_layers)  # mean over d: [b, n, h]
        eps = self.linear_output(F.gelu(self.linear_hidden(skip)))  # [b, n, 1]
        if mask is not None:
            eps = eps.masked_fill(mask[..., None], 0.0)
        return eps

    def extra_repr(self):
        return f"hidden_dim={self.hidden_dim}, n_layers={self.n_layers}, n_heads={self.n_heads}"
