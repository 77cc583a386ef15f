r"""The Flowformer encoder for sequences (Wu et al., ICML 2022, Sec. 4 and the official
``Flowformer_TimeSeries`` code).

Axis legend: b batch, L time steps, C channels, d ``hidden_dim``, o outputs.

Without a channel graph every time step is one token (as in the official code):

.. math::

    H^{(0)} &= \sqrt{d}\, X W_{in} + P       && \text{(input projection, learnable positions)}\\
    U &= \mathrm{LN}(H + \mathrm{FlowAttention}(H))            && \text{(post-LN encoder layer)}\\
    H^{(l+1)} &= \mathrm{LN}(U + \mathrm{FFN}(U)), \quad
        \mathrm{FFN}(U) = \mathrm{Dropout}(\mathrm{GELU}(U W_1) W_2)

followed by a head on the pooled tokens (``"mean"``, ``"last"`` or the official ``"flatten"``,
which fixes L).

With ``patch_len`` = p and ``patch_stride`` = s a token is a patch of p consecutive time
steps instead of one step (PatchTST, Nie et al., ICLR 2023): the window is cut into
:math:`N = \lceil (L - p) / s \rceil + 1` patches starting at 0, s, 2s, ..., the end padded
with copies of the last value when (L - p) is not a multiple of s, and every patch (p C
values, or p values per channel in the channel-graph mode) is embedded by one linear map.
Attention then runs over N ~ L / s tokens.

With a channel graph :math:`\hat A` (C x C, normalised) every (time step, channel) pair is a
token :math:`h_{t,c} \in \mathbb{R}^d` (``x_{t,c}`` embedded, plus a position and a channel
embedding). Each layer runs Flow-Attention along time for every channel (shared weights),
then one graph propagation across channels at every time step, then the FFN:

.. math::

    U &= \mathrm{LN}(H + \mathrm{FlowAttention}_{\text{time}}(H)), \quad
    V = \mathrm{LN}(U + \mathrm{Dropout}(\hat A\, U W_g)), \quad
    H' = \mathrm{LN}(V + \mathrm{FFN}(V)).

The pooled channel tokens are concatenated (C d features) before the head. The graph mode
costs C times the tokens; C is small for sensor networks. This channel mode is an skdiff
addition (the paper has no channel graph).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .._docs import fill_doc
from ._dropout import Dropout
from .flow_attention import ATTENTION_LAYER_DOCS, FlowAttention

__all__ = ["Flowformer", "SoftmaxAttention"]

POOLINGS = ("mean", "last", "flatten")


def _sinusoidal(length, dim):
    """Sinusoidal positional table (Vaswani et al. 2017), shape (length, dim)."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(1e4) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)[:, : dim // 2]
    return table


@fill_doc(ATTENTION_LAYER_DOCS)
class SoftmaxAttention(nn.Module):
    r"""Multi-head softmax attention with the interface of :class:`FlowAttention`.

    :math:`\mathrm{softmax}(QK^\top/\sqrt{d_h})V` through
    :func:`torch.nn.functional.scaled_dot_product_attention`; the baseline "Transformer of
    the same size" (same projections, output projection and dropout).

    Parameters
    ----------
    %(hidden_dim)s
    %(n_heads)s
    %(causal)s
    dropout : float, default=0.05
        Dropout after the output projection.
    **unused
        Keyword arguments of :class:`FlowAttention` that softmax attention has no use for
        (``clamp``, ``eps``, ``chunk_size``); accepted and ignored, so the two layers are
        built alike.
    """

    def __init__(self, hidden_dim, n_heads, *, causal=False, dropout=0.05, **unused):
        super().__init__()
        if hidden_dim % n_heads:
            raise ValueError(f"hidden_dim={hidden_dim} must be divisible by n_heads={n_heads}.")
        self.hidden_dim, self.n_heads, self.causal = hidden_dim, n_heads, causal
        self.query = nn.Linear(hidden_dim, hidden_dim)
        self.key = nn.Linear(hidden_dim, hidden_dim)
        self.value = nn.Linear(hidden_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, hidden_dim)
        self.dropout = Dropout(dropout)

    def _heads(self, x):
        b, length, _ = x.shape  # (b, L, h*d) -> (b, h, L, d)
        return x.view(b, length, self.n_heads, -1).transpose(1, 2)

    def forward(self, x, context=None):
        context = x if context is None else context
        r = F.scaled_dot_product_attention(
            self._heads(self.query(x)), self._heads(self.key(context)),
            self._heads(self.value(context)), is_causal=self.causal,
        )
        r = r.transpose(1, 2).reshape(x.shape[0], x.shape[1], self.hidden_dim)
        return self.dropout(self.out(r))


class _EncoderLayer(nn.Module):
    """Post-LN encoder layer (official ``Flowformer_layers.EncoderLayer``), optional graph step.

    Departure: the official layer applies its own dropout to the attention output and the
    core ``Flow_Attention`` another one; here the attention's dropout is the only one.
    """

    def __init__(self, hidden_dim, n_heads, ff_dim, dropout, attention_cls, attn_kwargs,
                 graph):
        super().__init__()
        self.attention = attention_cls(hidden_dim, n_heads, dropout=dropout, **attn_kwargs)
        self.norm1 = nn.LayerNorm(hidden_dim)
        self.graph = nn.Linear(hidden_dim, hidden_dim) if graph else None
        self.norm_graph = nn.LayerNorm(hidden_dim) if graph else None
        self.ff1 = nn.Linear(hidden_dim, ff_dim)  # official: Conv1d(kernel_size=1) == Linear
        self.ff2 = nn.Linear(ff_dim, hidden_dim)
        self.norm2 = nn.LayerNorm(hidden_dim)
        self.dropout = Dropout(dropout)

    def forward(self, h, adjacency=None):
        # h: (b, L, d), or (b, C, L, d) in channel-graph mode
        if adjacency is not None:
            b, C, L, d = h.shape
            flat = h.reshape(b * C, L, d)
            u = self.norm1(flat + self.attention(flat)).view(b, C, L, d)
            mixed = torch.einsum("ij,bjld->bild", adjacency, self.graph(u))  # \hat A U W_g
            u = self.norm_graph(u + self.dropout(mixed, site="graph"))
        else:
            u = self.norm1(h + self.attention(h))
        y = self.dropout(self.ff2(self.dropout(F.gelu(self.ff1(u)), site="ff1")), site="ff2")
        return self.norm2(u + y)


def _check_args(max_len, n_outputs, pooling, attention, skip, patch_len, patch_stride,
                n_detached_outputs):
    if patch_len is None and patch_stride is not None:
        raise ValueError(f"patch_stride={patch_stride} needs patch_len; got patch_len=None.")
    stride = patch_len if patch_stride is None else patch_stride
    if patch_len is not None and not (patch_len >= 1 and 1 <= stride <= patch_len):
        raise ValueError(f"need patch_len >= 1 and 1 <= patch_stride <= patch_len; got "
                         f"patch_len={patch_len}, patch_stride={patch_stride}.")
    if patch_len is not None and patch_len > max_len:
        raise ValueError(f"patch_len={patch_len} is longer than max_len={max_len}.")
    if not 0 <= n_detached_outputs <= n_outputs:
        raise ValueError(f"n_detached_outputs must be in [0, {n_outputs}]; got "
                         f"{n_detached_outputs}.")
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}; got {pooling!r}.")
    if attention not in ("flow", "softmax"):
        raise ValueError(f"attention must be 'flow' or 'softmax'; got {attention!r}.")
    if skip not in ("level", "window"):
        raise ValueError(f"skip must be 'level' or 'window'; got {skip!r}.")


class Flowformer(nn.Module):
    r"""Flowformer encoder with a regression/classification head on (b, L, C) sequences.

    Parameters
    ----------
    n_channels : int
        Channels C of the input.
    n_outputs : int
        Outputs of the head (forecast horizon x targets, or classes).
    max_len : int
        Longest sequence (size of the learnable positional encoding); the ``"flatten"``
        head needs exactly this length.
    hidden_dim : int, default=64
        Token width (the official ``d_model``).
    n_heads : int, default=4
        Attention heads; must divide ``hidden_dim``.
    n_layers : int, default=2
        Encoder layers (attention then feed-forward, post-LayerNorm).
    ff_dim : int or None, default=None
        Width of the feed-forward block (``None``: ``hidden_dim``, as the official d_ff=d_model).
    dropout : float, default=0.1
        Dropout of the attention output, the feed-forward block, the input tokens and the
        head.
    causal : bool, default=False
        Causal attention: position t sees only positions <= t.
    clamp : float or None, default=1.0
        Bound of Flow-Attention's conserved outgoing flow (``None``: no clamp; see
        :func:`~skdiff.nn.flow_attention.flow_attention`).
    pooling : {"mean", "last", "flatten"}, default="mean"
        Head input: the mean of the tokens, the last token, or all tokens flattened (the
        official UEA head, which fixes the sequence length to ``max_len``).
    attention : {"flow", "softmax"}, default="flow"
        Flow-Attention, or softmax attention (the Transformer baseline of the same size).
    adjacency : Tensor of shape (C, C) or None, default=None
        Normalised channel graph; switches to (time, channel) tokens (module docstring).
    instance_norm : bool, default=False
        Normalise each window by its own per-channel mean and standard deviation before the
        encoder (RevIN-like, Kim et al. 2022) and add a learned linear function of those
        statistics and of the last value of each channel to the output, so the encoder
        models the shape and the skip restores the level; the encoder's output, computed
        in units of the window's std, is multiplied back by it (RevIN's de-normalisation;
        with C channels by :math:`\prod_c \sigma_c^{\beta_{oc}}`, learnt
        :math:`\beta` started at 1/C). An skdiff addition.
    skip : {"level", "window"}, default="level"
        Features of that linear skip (with ``instance_norm``): ``"level"`` the per-channel
        [mean, std, last value] (3C); ``"window"`` those plus every input value (3C + L C),
        which makes the skip a linear autoregression on the whole window (as a ridge
        regression on the lags; cf. the linear baselines of Zeng et al., AAAI 2023) and the
        encoder a nonlinear correction to it. Without ``instance_norm``, ``"window"`` adds a
        linear map of the L C input values to the output (a linear model of the whole
        sequence, e.g. a logistic regression's logits, that the encoder corrects) and
        ``"level"`` adds nothing. With a skip the head starts at zero, so the network starts
        as the skip alone. An skdiff addition.
    chunk_size : int or None, default=None
        Chunk length of the causal Flow-Attention kernel.
    patch_len : int or None, default=None
        Time steps per token (``None``: one token per step). See the module docstring.
    patch_stride : int or None, default=None
        Step between patch starts, 1 <= ``patch_stride`` <= ``patch_len`` (``None``:
        ``patch_len``, non-overlapping patches; PatchTST used 16 and 8).
    n_detached_outputs : int, default=0
        The last ``n_detached_outputs`` outputs of the head (e.g. the variance half of a
        Gaussian head) read the pooled features through ``detach()``: their loss trains
        the head, not the encoder.

    Notes
    -----
    Shapes: x : (b, L, C) with L <= max_len; output : (b, n_outputs).
    """

    def __init__(self, n_channels, n_outputs, max_len, *, hidden_dim=64, n_heads=4, n_layers=2,
                 ff_dim=None, dropout=0.1, causal=False, clamp=1.0, pooling="mean",
                 attention="flow", adjacency=None, instance_norm=False, skip="level",
                 chunk_size=None, patch_len=None, patch_stride=None, n_detached_outputs=0):
        super().__init__()
        _check_args(max_len, n_outputs, pooling, attention, skip, patch_len, patch_stride,
                    n_detached_outputs)
        self.patch_len = patch_len
        self.patch_stride = patch_len if patch_stride is None else patch_stride
        # the last n_detached_outputs head outputs (a variance half) read the pooled features
        # through detach(): their loss trains the head, not the encoder
        self.n_detached_outputs = n_detached_outputs
        self.skip_window = skip == "window"
        self.n_channels, self.max_len, self.pooling = n_channels, max_len, pooling
        self.hidden_dim, self.instance_norm = hidden_dim, instance_norm
        graph = self._init_tokens(adjacency, n_channels, hidden_dim, patch_len)
        self.input_dropout = Dropout(dropout)
        attention_cls = FlowAttention if attention == "flow" else SoftmaxAttention
        attn_kwargs = {"causal": causal}
        if attention == "flow":
            attn_kwargs.update(clamp=clamp, chunk_size=chunk_size)
        self.layers = nn.ModuleList([
            _EncoderLayer(hidden_dim, n_heads, ff_dim or hidden_dim, dropout, attention_cls,
                          attn_kwargs, graph)
            for _ in range(n_layers)
        ])
        self._init_head(n_outputs, dropout, graph)

    def _init_tokens(self, adjacency, n_channels, hidden_dim, patch_len):
        """Token embedding and positions; returns whether tokens are (step, channel) pairs."""
        graph = adjacency is not None
        if graph:
            adjacency = torch.as_tensor(adjacency, dtype=torch.float32)
            if adjacency.shape != (n_channels, n_channels):
                raise ValueError(
                    f"adjacency has shape {tuple(adjacency.shape)}; it must be "
                    f"({n_channels}, {n_channels}) for {n_channels} channels."
                )
            self.register_buffer("adjacency", adjacency)
            # one token per (time step or patch, channel)
            self.embed = nn.Linear(patch_len or 1, hidden_dim)
            self.channel_embedding = nn.Parameter(torch.empty(n_channels, hidden_dim))
            nn.init.uniform_(self.channel_embedding, -0.02, 0.02)
        else:
            self.adjacency = None
            # one token per time step or patch
            self.embed = nn.Linear(n_channels * (patch_len or 1), hidden_dim)
        # Learnable positions. Departure: initialised with the sinusoidal table (the official
        # "fixed" encoding) instead of uniform(-0.02, 0.02); next to inputs scaled by sqrt(d)
        # the tiny uniform start carries almost no order information and tasks that depend
        # on the order (e.g. a frequency) learnt nothing in hundreds of steps.
        self.max_tokens = self.n_tokens(self.max_len)
        self.position = nn.Parameter(_sinusoidal(self.max_tokens, hidden_dim))
        return graph

    def _init_head(self, n_outputs, dropout, graph):
        """Pooling head, and the linear skip and std mixing of the instance normalisation."""
        pooled = self.hidden_dim * (self.max_tokens if self.pooling == "flatten" else 1)
        pooled *= self.n_channels if graph else 1
        self.head_dropout = Dropout(dropout)
        self.head = nn.Linear(pooled, n_outputs)
        # level skip of the instance normalisation: [mean, std, last] per channel -> outputs
        n_skip = (3 * self.n_channels if self.instance_norm else 0) + (
            self.max_len * self.n_channels if self.skip_window else 0)
        self.skip = nn.Linear(n_skip, n_outputs) if n_skip else None
        # exponents of the window stds that rescale the encoder's output (see forward)
        self.std_mix = nn.Parameter(torch.full((n_outputs, self.n_channels),
                                               1.0 / self.n_channels)) \
            if self.instance_norm else None
        if self.skip is not None:
            # zero-init head: the model starts as the skip alone (which estimators initialise
            # by least squares or a logistic regression) and the encoder adds a correction
            nn.init.zeros_(self.head.weight)
            nn.init.zeros_(self.head.bias)

    @torch.no_grad()
    def set_skip_(self, weight, bias, *, trainable=True):
        """Set the linear skip to ``weight`` (n_outputs, n_skip) and ``bias`` (n_outputs,).

        ``trainable=False`` keeps it fixed during training (the encoder then fits the
        residual of this linear map).

        Parameters
        ----------
        weight : array-like of shape (n_outputs, n_skip)
            Weights of the skip, ``n_skip`` the width of :meth:`skip_features`.
        bias : array-like of shape (n_outputs,)
            Its intercepts.
        trainable : bool, default=True
            Whether training updates the skip afterwards.
        """
        if self.skip is None:
            raise ValueError("This network has no linear skip (instance_norm=False and "
                             "skip='level').")
        self.skip.weight.copy_(torch.as_tensor(weight, dtype=self.skip.weight.dtype))
        self.skip.bias.copy_(torch.as_tensor(bias, dtype=self.skip.bias.dtype))
        self.skip.requires_grad_(trainable)

    def n_tokens(self, length):
        """Tokens for a sequence of ``length`` steps: ``length`` or the number of patches.

        Parameters
        ----------
        length : int
            Time steps of the sequence (at least ``patch_len`` with patches).

        Returns
        -------
        n : int
            ``length`` without patches, else the number of patches of ``patch_len`` steps
            every ``patch_stride`` steps that cover it (the last one padded).
        """
        if self.patch_len is None:
            return length
        return -(-(length - self.patch_len) // self.patch_stride) + 1

    def patches(self, x):
        """The patches of x (b, L, C) as (b, N, C, patch_len), end padded with the last value.

        Parameters
        ----------
        x : Tensor of shape (b, L, C)
            Sequences, ``L >= patch_len``.

        Returns
        -------
        patches : Tensor of shape (b, N, C, patch_len)
            Patch n holds steps ``n * patch_stride`` to ``n * patch_stride + patch_len - 1``
            of every channel (a view of ``x`` when no padding is needed).
        """
        p, s = self.patch_len, self.patch_stride
        pad = -(x.shape[1] - p) % s
        if pad:
            x = torch.cat([x, x[:, -1:].expand(-1, pad, -1)], dim=1)
        return x.unfold(1, p, s)

    @staticmethod
    def window_stats(x):
        """Per-window, per-channel mean and std of x (b, L, C), each (b, 1, C).

        Parameters
        ----------
        x : Tensor of shape (b, L, C)
            Sequences.

        Returns
        -------
        mean, std : Tensor of shape (b, 1, C)
            Mean and standard deviation over the time axis of every window and channel
            (population std, with 1e-5 added to the variance so a constant window has a
            positive std).
        """
        return x.mean(1, keepdim=True), (x.var(1, keepdim=True, unbiased=False) + 1e-5).sqrt()

    def skip_columns(self):
        """Where each part of :meth:`skip_features` lies, as column slices.

        Returns
        -------
        columns : dict of str to slice
            ``"mean"``, ``"std"``, ``"last"`` (C columns each, with ``instance_norm``) and
            ``"window"`` (L C columns, time-major as ``x.flatten(1)``, when the skip reads the
            whole window); parts the skip does not have are absent.
        """
        C, out, start = self.n_channels, {}, 0
        if self.instance_norm:
            for name in ("mean", "std", "last"):
                out[name], start = slice(start, start + C), start + C
        if self.skip_window:
            out["window"] = slice(start, start + self.max_len * C)
        return out

    def skip_features(self, x, stats=None):
        """Inputs of the linear skip for x (b, L, C): (b, 3C), (b, 3C + L C) or (b, L C).

        Parameters
        ----------
        x : Tensor of shape (b, L, C)
            Sequences (not normalised).
        stats : (Tensor, Tensor) or None, default=None
            The :meth:`window_stats` of ``x`` when the caller already has them (``None``:
            computed here).

        Returns
        -------
        features : Tensor of shape (b, 3C), (b, 3C + L C) or (b, L C)
            Per-channel mean, std and last value (with ``instance_norm``), followed by the
            whole window with ``skip="window"``.
        """
        if not self.instance_norm:
            return x.flatten(1)
        mu, sd = self.window_stats(x) if stats is None else stats
        feats = [mu[:, 0], sd[:, 0], x[:, -1]] + ([x.flatten(1)] if self.skip_window else [])
        return torch.cat(feats, dim=1)

    def forward(self, x):
        b = x.shape[0]
        self._check_input(x)
        stats = sd = None
        if self.instance_norm:
            mu, sd = self.window_stats(x)  # (b, 1, C) each
            stats = self.skip_features(x, (mu, sd))
            x = (x - mu) / sd
        elif self.skip is not None:
            stats = self.skip_features(x)
        h = self.input_dropout(self._embed(x))
        for layer in self.layers:
            h = layer(h, self.adjacency)
        out = self._head(h, b)
        if sd is not None:
            # RevIN de-normalisation of the encoder's correction: it was computed from the
            # window divided by its std, so it is multiplied back by the std (for several
            # channels by a learnt geometric mixture of their stds, started at their mean)
            out = out * torch.exp(torch.log(sd[:, 0]) @ self.std_mix.T)
        if stats is not None:
            out = out + self.skip(stats)
        return out

    def _check_input(self, x):
        """Refuse inputs this network cannot read, naming what it takes."""
        _, L, C = x.shape
        if C != self.n_channels:
            raise ValueError(f"expected {self.n_channels} channels; got {C}.")
        fixed = self.pooling == "flatten" or self.skip_window
        if L > self.max_len or (fixed and L != self.max_len):
            need = "exactly" if fixed else "at most"
            raise ValueError(f"sequence length {L}: this network takes {need} {self.max_len}.")
        if self.patch_len is not None and L < self.patch_len:
            raise ValueError(f"sequence length {L} is shorter than patch_len={self.patch_len}.")

    def _embed(self, x):
        """Tokens of the (normalised) window: (b, N, d), or (b, C, N, d) with a channel graph."""
        scale = math.sqrt(self.hidden_dim)  # official: project_inp(x) * sqrt(d_model)
        N = self.n_tokens(x.shape[1])
        tok = x[..., None] if self.patch_len is None else self.patches(x)  # (b, N, C, p)
        if self.adjacency is not None:
            h = self.embed(tok.transpose(1, 2)) * scale  # (b, C, N, d)
            return h + self.position[:N] + self.channel_embedding[:, None, :]
        return self.embed(tok.flatten(2)) * scale + self.position[:N]  # (b, N, d)

    def _head(self, h, b):
        """Pool the tokens and apply the head: (b, n_outputs)."""
        if self.pooling == "mean":
            z = h.mean(-2)
        elif self.pooling == "last":
            z = h[..., -1, :]
        else:
            z = h.flatten(-2)  # official UEA head: (b, L * d)
        z = self.head_dropout(F.gelu(z.reshape(b, -1)))  # official: act, dropout, Linear
        if not self.n_detached_outputs:
            return self.head(z)
        k = self.head.out_features - self.n_detached_outputs
        w, bias = self.head.weight, self.head.bias
        return torch.cat([F.linear(z, w[:k], bias[:k]),
                          F.linear(z.detach(), w[k:], bias[k:])], dim=-1)
