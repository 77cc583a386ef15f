r"""Flow-Attention (Wu et al., "Flowformer", ICML 2022, arXiv 2202.06258, Sec. 3).

Attention seen as a flow network: the ``n`` queries are *sinks*, the ``m`` keys are
*sources*, and the non-negative feature map :math:`\phi = \mathrm{sigmoid}` turns every
query-key pair into a flow capacity :math:`\phi(q_i)^\top \phi(k_j)`. Per batch and head
(axis legend: b batch, h heads, n queries, m keys, d query/key features, e value features):

.. math::

    I_i &= \phi(q_i)^\top \textstyle\sum_j \phi(k_j), \qquad
    O_j  = \phi(k_j)^\top \textstyle\sum_i \phi(q_i)              && \text{(flows)}\\
    \hat I_i &= \phi(q_i)^\top \textstyle\sum_j \phi(k_j) / O_j, \qquad
    \hat O_j  = \phi(k_j)^\top \textstyle\sum_i \phi(q_i) / I_i   && \text{(conservation)}\\
    c &= m \cdot \mathrm{softmax}_j(\hat O), \qquad
    a_i = \mathrm{sigmoid}(\hat I_i \, n / m)              && \text{(competition, allocation)}\\
    R_i &= a_i \, \frac{\phi(q_i)^\top}{I_i} \textstyle\sum_j \phi(k_j)\,(c_j v_j)^\top
                                                                  && \text{(aggregation)}

computed right-to-left (the :math:`d \times e` matrix first), so time and memory are
:math:`O((n + m)\,d\,e)`; the :math:`n \times m` matrix is never formed. As in the official
code, :math:`\varepsilon` is added to *both* operands of every flow dot product (not to the
final one) and :math:`\hat O` is clamped to ``[-clamp, clamp]`` ("for stability", core file
``Flow_Attention.py``; other official variants use no clamp or +-5, +-10).

Causal version (Sec. 3.3): every sum runs over the prefix :math:`s \le t`, the flows are
rescaled by the number of visible items :math:`t` (normaliser :math:`t / I_t`, :math:`t / O_t`,
and :math:`\hat I_t, \hat O_t` divided by :math:`t`), the allocation is
:math:`\mathrm{sigmoid}(\hat I_t)` and the competition is a running softmax
:math:`c_t = t\, \exp(\hat O_t) / \sum_{s \le t} \exp(\hat O_s)`.
"""

from __future__ import annotations

import contextlib
import numbers

import torch
from torch import nn

from .._docs import fill_doc, parse_docs
from ._dropout import Dropout

__all__ = ["FlowAttention", "default_chunk_size", "flow_attention"]


class _PrefixDot(torch.autograd.Function):
    r""":math:`f_t = a_t^\top \sum_{s \le t} w_s b_s` for (b, h, L, d) ``a``, ``b`` and
    (b, h, L) weights ``w`` (``None``: all ones); output (b, h, L).

    A custom backward so that the (b, h, L, d) prefix sum is a temporary, recomputed in
    backward, instead of a tensor that autograd keeps alive until then (four such (L, d)
    prefix sums, 4 x 34 MB at L=4096, B8 H8 d32 in float32). Gradients:
    :math:`\partial a_t = g_t \sum_{s \le t} w_s b_s`,
    :math:`\partial b_s = w_s \sum_{t \ge s} g_t a_t`,
    :math:`\partial w_s = b_s^\top \sum_{t \ge s} g_t a_t`.
    """

    @staticmethod
    def forward(ctx, a, b, w):
        ctx.save_for_backward(a, b, w)
        prefix = _position_cumsum_(b * w[..., None] if w is not None else b.clone())
        return prefix.mul_(a).sum(-1)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        a, b, w = ctx.saved_tensors
        ga = gb = gw = None
        if ctx.needs_input_grad[0]:
            prefix = _position_cumsum_(b * w[..., None] if w is not None else b.clone())
            ga = prefix.mul_(g[..., None])
            del prefix
        if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
            suffix = _position_cumsum_((a * g[..., None]).flip(2)).flip(2)  # sum_{t>=s} g_t a_t
            if ctx.needs_input_grad[2]:
                gw = (b * suffix).sum(-1)
            if ctx.needs_input_grad[1]:
                gb = suffix.mul_(w[..., None]) if w is not None else suffix
        return ga, gb, gw


# Positions per segment of the two-level prefix sum (see _position_cumsum_).
_SCAN_SEGMENT = 64


def _split_scan(device):
    """Whether :func:`_position_cumsum_` sums in two levels on ``device``: off the CPU."""
    return device.type != "cpu"


def _position_cumsum_(x):
    r"""Inclusive prefix sum of ``x`` (b, h, L, f) along L, in place; returns ``x``.

    On the CPU, one :func:`torch.cumsum`. Elsewhere, in two levels: L is cut into segments
    of ``_SCAN_SEGMENT`` positions, each segment is summed on its own (all at once), and the
    running total of the segments before is added to each. PyTorch's CUDA cumsum along a
    dimension that is not the innermost gives one thread to each (b, h, f) column and steps
    it through the L positions one after another, so its time grows with L at any batch
    size; the two levels take ``_SCAN_SEGMENT + L / _SCAN_SEGMENT`` such steps instead of L.
    On an NVIDIA H200, the causal kernel with one-level sums (12 of them per forward and
    backward) took about 5 µs per position whatever the dtype and ``chunk_size``. Same sums,
    added in another order: equal up to rounding.
    """
    L = x.shape[2]
    if not _split_scan(x.device) or L <= 2 * _SCAN_SEGMENT:
        return x.cumsum_(2)
    b, h, _, f = x.shape
    n = L // _SCAN_SEGMENT
    head = x[:, :, :n * _SCAN_SEGMENT].view(b, h, n, _SCAN_SEGMENT, f).cumsum_(3)
    before = head[:, :, :, -1].cumsum(2)  # (b, h, n, f): running totals of whole segments
    head[:, :, 1:] += before[:, :, :-1, None]
    if n * _SCAN_SEGMENT < L:  # the last, shorter segment
        x[:, :, n * _SCAN_SEGMENT:].cumsum_(2).add_(before[:, :, -1:])
    return x


def _prefix_dot(a, b, w=None):
    return _PrefixDot.apply(a, b, w)


def _blocks(x, chunk, dtype, scale=None):
    """``x`` (b, h, L, f), times ``scale`` (b, h, L) if given, as (b h N, chunk, f) chunks in
    ``dtype``: N = ceil(L / chunk) chunks, the last one zero-padded. A view of ``x`` when
    nothing is to be scaled, padded, cast or made contiguous."""
    b, h, L, f = x.shape
    padded = -(-L // chunk) * chunk
    if padded == L and scale is None:
        return x.to(dtype).reshape(-1, chunk, f)
    out = x.new_empty(b, h, padded, f, dtype=dtype)
    out[:, :, L:].zero_()  # padded positions add exact zeros to every sum
    if scale is None:
        out[:, :, :L] = x
    else:
        torch.mul(x, scale[..., None], out=out[:, :, :L])
    return out.view(-1, chunk, f)


def _chunks(x, i, j, chunk, dtype, scale=None):
    """Positions ``i:j`` of ``x`` (times ``scale``) cut by :func:`_blocks`."""
    return _blocks(x[:, :, i:j], chunk, dtype, None if scale is None else scale[:, :, i:j])


def _unblock(x, b, h, L):
    """Inverse of :func:`_blocks`: (b h N, chunk, f) -> (b, h, L, f), a view."""
    return x.view(b, h, -1, x.shape[-1])[:, :, :L]


def _exclusive_scan(z, acc, carry=None, reverse=False):
    r"""``states_n = carry + sum_{m < n} z_m`` (``m > n`` if ``reverse``) along axis 1 of
    ``z`` (bh, n, f, g), accumulated in dtype ``acc``; ``carry`` (bh, 1, f, g), None for zero.
    """
    if reverse:
        z = z.flip(1)
    head = z.new_zeros(z.shape[0], 1, *z.shape[2:], dtype=acc) if carry is None else carry
    states = torch.cat([head, z[:, :-1].to(acc)], 1).cumsum_(1)
    return states.flip(1) if reverse else states


def _block_carries(x, xs, y, ys, spans, mm, acc, reverse=False):
    r"""State carried into each block of ``spans``: :math:`\sum_u x_u y_u^\top` over the
    positions of the blocks before it (after it if ``reverse``), ``x`` gained by ``xs`` and
    ``y`` by ``ys`` (None: no gain). One block: ``[None]`` (nothing carried)."""
    if len(spans) == 1:
        return [None]
    totals = torch.stack([_chunks(x, i, j, j - i, mm, xs).mT @ _chunks(y, i, j, j - i, mm, ys)
                          for i, j in spans], 1)  # (b h, blocks, f, g)
    carries = _exclusive_scan(totals, acc, reverse=reverse)
    return [carries[:, n:n + 1] for n in range(len(spans))]


def _spans(L, block):
    return [(i, min(i + block, L)) for i in range(0, L, block)]


class _CausalAggregate(torch.autograd.Function):
    r"""Causal linear attention with a gain on the queries and one on the values:

    .. math:: out_t = s_t\, \phi_t^\top \sum_{u \le t} \kappa_u (c_u v_u)^\top

    for ``phi`` (b, h, L, d), ``s`` (b, h, L), ``kappa`` (b, h, L, d), ``v`` (b, h, L, e),
    ``c`` (b, h, L); ``chunk`` positions per chunk, ``block`` positions (a multiple of
    ``chunk``) per block, matrix products in dtype ``mm`` (the inputs' dtype, or bfloat16 with
    the carried states accumulated in float32).

    Chunked scan: with :math:`q = s\phi`, :math:`w = c v` cut into chunks :math:`n`,
    :math:`out_n = \mathrm{tril}(q_n \kappa_n^\top) w_n + q_n S_n` where the carried state
    :math:`S_n = \sum_{m < n} \kappa_m^\top w_m` (d, e) is an exclusive cumulative sum of the
    per-chunk products over the chunk axis. All chunks of a block are computed at once
    (batched matrix products), so a block is a fixed number of operations whatever its
    length; blocks carry the state from one to the next. One block covering the sequence
    (the default off the CPU) makes the number of operations, and GPU kernel launches,
    independent of L. Masked entries of the (chunk, chunk) blocks are exact zeros, so outputs
    before t0 never see inputs at t0 or later. Temporaries
    O(b h block (chunk + d + e + d e / chunk)), against the official (b, h, L, d, e)
    cumulative sum.

    The custom backward keeps only the inputs (which the caller holds anyway), not the
    (chunk, chunk) blocks, the chunked products and the states; it recomputes them. With
    :math:`g` the output gradient and the reverse state
    :math:`P_n = \sum_{m > n} q_m^\top g_m`:
    :math:`\partial q = \mathrm{tril}(g w^\top)\kappa + g S^\top`,
    :math:`\partial \kappa = \mathrm{tril}(g w^\top)^\top q + w P^\top`,
    :math:`\partial w = \mathrm{tril}(q \kappa^\top)^\top g + \kappa P`. The states
    carried into each block (S from the blocks before, P from the blocks after) come first,
    from one (d, e) product per block.
    """

    @staticmethod
    def forward(ctx, phi, s, kappa, v, c, chunk, block, mm):
        ctx.save_for_backward(phi, s, kappa, v, c)
        ctx.chunk, ctx.block, ctx.mm = chunk, block, mm
        b, h, L, d = phi.shape
        e = v.shape[-1]
        acc = _accumulation_dtype(mm)
        out = v.new_empty(b, h, L, e, dtype=mm)
        carry = None  # sum of kappa_u w_u^T over the blocks before (None: zero)
        with _autocast_off(phi.device.type):
            for i, j in _spans(L, block):
                q, k, w = _chunks(phi, i, j, chunk, mm, s), _chunks(kappa, i, j, chunk, mm), \
                    _chunks(v, i, j, chunk, mm, c)
                z = (k.mT @ w).view(b * h, -1, d, e)  # per-chunk kappa^T w
                states = _exclusive_scan(z, acc, carry)  # S
                if j < L:
                    carry = states[:, -1:] + z[:, -1:]
                o = q @ states.view(-1, d, e).to(mm)  # from the chunks before ...
                o.baddbmm_((q @ k.mT).tril_(), w)  # ... + within the chunk
                out[:, :, i:j] = _unblock(o, b, h, j - i)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        phi, s, kappa, v, c = ctx.saved_tensors
        chunk, block, mm = ctx.chunk, ctx.block, ctx.mm
        need_phi, need_s, need_k, need_v, need_c = ctx.needs_input_grad[:5]
        need_q, need_w = need_phi or need_s, need_v or need_c
        b, h, L, d = phi.shape
        e = v.shape[-1]
        acc = _accumulation_dtype(mm)
        gphi = torch.empty_like(phi) if need_phi else None
        gs = torch.empty_like(s) if need_s else None
        gk = torch.empty_like(kappa) if need_k else None
        gv = torch.empty_like(v) if need_v else None
        gc = torch.empty_like(c) if need_c else None
        spans = _spans(L, block)
        with _autocast_off(phi.device.type):
            # S carried in from the blocks before, P from the blocks after
            s_in = _block_carries(kappa, None, v, c, spans, mm, acc) if need_q \
                else [None] * len(spans)
            p_in = _block_carries(phi, s, g, None, spans, mm, acc, reverse=True) \
                if need_k or need_w else [None] * len(spans)
            for (i, j), s0, p0 in zip(spans, s_in, p_in):
                k, w, gb = _chunks(kappa, i, j, chunk, mm), _chunks(v, i, j, chunk, mm, c), \
                    _chunks(g, i, j, chunk, mm)
                if need_k or need_w:
                    q = _chunks(phi, i, j, chunk, mm, s)
                    later = _exclusive_scan((q.mT @ gb).view(b * h, -1, d, e), acc, p0,
                                            reverse=True).view(-1, d, e).to(mm)  # P
                if need_q or need_k:
                    gw = (gb @ w.mT).tril_()  # [t, u] = g_t . w_u for u <= t
                    if need_q:
                        earlier = _exclusive_scan((k.mT @ w).view(b * h, -1, d, e), acc,
                                                  s0).view(-1, d, e).to(mm)  # S
                        dq = _unblock((gb @ earlier.mT).baddbmm_(gw, k), b, h, j - i)
                        del earlier
                        if need_s:
                            gs[:, :, i:j] = (dq * phi[:, :, i:j]).sum(-1)
                        if need_phi:
                            torch.mul(dq, s[:, :, i:j, None], out=gphi[:, :, i:j])
                        del dq
                    if need_k:
                        gk[:, :, i:j] = _unblock((w @ later.mT).baddbmm_(gw.mT, q), b, h, j - i)
                    del gw
                if need_w:
                    scores = (q @ k.mT).tril_()
                    dw = _unblock((k @ later).baddbmm_(scores.mT, gb), b, h, j - i)
                    del scores
                    if need_c:
                        gc[:, :, i:j] = (dw * v[:, :, i:j]).sum(-1)
                    if need_v:
                        torch.mul(dw, c[:, :, i:j, None], out=gv[:, :, i:j])
        return gphi, gs, gk, gv, gc, None, None, None


def flow_attention(q, k, v, *, causal=False, clamp=1.0, eps=1e-6, chunk_size=None):
    r"""Flow-Attention on projected queries, keys and values.

    Parameters
    ----------
    q : Tensor of shape (b, h, n, d)
        Query projections *before* the feature map (sigmoid is applied here).
    k : Tensor of shape (b, h, m, d)
        Key projections before the feature map.
    v : Tensor of shape (b, h, m, e)
        Values.
    causal : bool, default=False
        Position ``t`` only attends to positions ``<= t`` (requires ``n == m``).
    clamp : float or None, default=1.0
        Bound of the conserved outgoing flow :math:`\hat O` (clamped to ``[-clamp, clamp]``
        as the official core file does with 1.0); ``None`` disables the clamp. The causal
        running softmax uses a log-sum-exp, so it stays finite without the clamp.
    eps : float, default=1e-6
        Added to both operands of every flow dot product.
    chunk_size : int or None, default=None
        Positions per chunk of the causal kernel; ``None`` takes
        :func:`default_chunk_size` of the inputs' device. It does not change the result
        (up to rounding), only the split of the work between the (chunk, chunk) blocks and
        the carried (d, e) states.

    Returns
    -------
    Tensor of shape (b, h, n, e)
        In the dtype of the inputs; bfloat16 (float16) under ``torch.autocast`` with that
        dtype, and for bfloat16 (float16) inputs.

    Notes
    -----
    Causal kernel: a chunked scan. Per chunk of ``chunk_size`` positions the (d, e) state
    :math:`\sum_u \phi(k_u)(c_u v_u)^\top` is one batched matrix product for all chunks at
    once, the state carried into each chunk an exclusive cumulative sum over the chunk axis,
    and the part within a chunk a masked (chunk, chunk) batched product; the flows, the
    conservation sums and the running softmax are cumulative sums along L (off the CPU,
    those of (L, d) tensors in two levels: segments of 64 positions, then the segments'
    running totals, 64 + L / 64 sequential steps instead of L). Off the CPU the
    whole sequence is one block, so the number of operations (GPU kernel launches) does not
    grow with L. On the CPU the sequence is cut into blocks of whole chunks that carry the
    state from one to the next, as many chunks per block as keep the block's temporaries
    near 2**22 elements (fresh large allocations cost page faults there, and memory).
    Memory is linear in L, :math:`O(b\,h\,(L (d + e + \text{chunk}) + (L / \text{chunk})
    \,d\,e))` at most; the custom backward pass recomputes the blocks instead of keeping
    them.

    Precision: float64 and float32 run in their dtype. Under ``torch.autocast`` (float32
    inputs) or with bfloat16 / float16 inputs, the flow statistics (sums over the sequence,
    divisions, the running log-sum-exp) are computed in float32; the causal aggregation's
    matrix products run in bfloat16 with the carried states accumulated in float32 (in
    float32 when the reduced dtype is float16: the causal prefix states grow like L and the
    query gain :math:`a_t / I_t` falls like 1 / L, out of float16's range at long lengths);
    the normal path's two (d, e) products run in float32.

    Examples
    --------
    >>> import torch
    >>> from skdiff.nn import flow_attention
    >>> q, k, v = torch.randn(2, 4, 10, 8), torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 16)
    >>> flow_attention(q, k, v).shape
    torch.Size([2, 4, 10, 16])
    >>> x = torch.randn(2, 4, 100, 8)
    >>> flow_attention(x, x, x, causal=True).shape
    torch.Size([2, 4, 100, 8])
    >>> with torch.autocast("cpu", dtype=torch.bfloat16):
    ...     flow_attention(x, x, x, causal=True).dtype
    torch.bfloat16
    """
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(
            "flow_attention expects 4-D tensors (batch, heads, length, dim); got shapes "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}."
        )
    if k.shape[:3] != v.shape[:3] or q.shape[:2] != k.shape[:2] or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"Incompatible shapes q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: "
            "need q (b, h, n, d), k (b, h, m, d), v (b, h, m, e)."
        )
    if chunk_size is not None and (isinstance(chunk_size, bool)
                                   or not isinstance(chunk_size, numbers.Integral)
                                   or chunk_size < 1):
        raise ValueError(f"'chunk_size' must be a positive integer or None (the device's "
                         f"default); got {chunk_size!r}.")
    n, m = q.shape[2], k.shape[2]
    if causal and n != m:
        raise ValueError(f"causal flow_attention needs as many queries as keys; got {n} and {m}.")
    stats, mm, out_dtype = _precision(q, k, v)
    # Departure: no torch.utils.checkpoint around the flow statistics; measured, recomputing
    # them in backward raised the peak (the recomputed graph coexists with the gradients).
    with _autocast_off(q.device.type):  # dtypes are set explicitly below
        phi_q, phi_k, comp, gain = _flow_weights(q.to(stats), k.to(stats), causal, clamp, eps)
        if causal:
            # competition reweights the values, allocation / I_t gates the sinks, inside the
            # chunked aggregation (no (L, d)-sized products kept for backward)
            chunk = min(default_chunk_size(q.device) if chunk_size is None else int(chunk_size), n)
            block = _block_size(q.device, q.shape[0] * q.shape[1], n, chunk, q.shape[-1],
                                v.shape[-1])
            out = _CausalAggregate.apply(phi_q, gain, phi_k, v, comp, chunk, block, mm)
        else:
            # competition reweights the sources; the d x e matrix first, then the sinks, gated
            # by allocation / I (one (n, e) product: no phi(q) / I copy, no reweighted values).
            # In the statistics' dtype: the operands are statistics already, and the gradient
            # of phi(q) is a difference of near-equal terms (the product and the normaliser
            # I) that bfloat16 products would leave a few percent off.
            kv = (phi_k * comp[..., None]).transpose(-1, -2) @ v.to(stats)  # (b, h, d, e)
            out = (phi_q @ kv) * gain[..., None]
    return out.to(out_dtype)


def default_chunk_size(device):
    r"""Default ``chunk_size`` of the causal kernel on ``device`` (a str or torch.device).

    Parameters
    ----------
    device : str or torch.device
        The device the kernel runs on; any string :class:`torch.device` parses.

    Returns
    -------
    int
        64 on every device. On the CPU, chunks of 32, 64 and 128 took the same time within
        measurement noise (forward+backward, B8 H8 d32, L = 4K, one thread). On a GPU the
        number of kernel launches does not depend on the chunk size (every chunk at once),
        so a larger chunk buys nothing there: the (chunk, chunk) blocks grow like chunk, the
        carried states shrink like 1 / chunk, and their memory traffic balances near
        :math:`\sqrt{d e}` (32 at d = e = 32). Measured on an NVIDIA H200 (forward+backward,
        B8 H8 d32, float32 and bfloat16, L = 4K and 16K) with one-level prefix sums, which
        then took most of the time: chunks of 32 to 256 within 5 %
        (``benchmarks/gpu_smoke.py --parts attention`` sweeps them).

    Examples
    --------
    >>> from skdiff.nn.flow_attention import default_chunk_size
    >>> default_chunk_size("cpu")
    64
    """
    torch.device(device)  # validates the argument
    return 64


# Elements of the causal kernel's per-block temporaries on the CPU (see _block_size).
_CPU_BLOCK_ELEMENTS = 2**22


def _block_size(device, bh, L, chunk, d, e):
    """Positions per block of the causal kernel (a multiple of ``chunk``).

    Off the CPU one block covers the sequence: a fixed number of kernel launches whatever L.
    On the CPU blocks are cut so that their temporaries (the (chunk, chunk) score blocks, the
    chunked queries, values and outputs, the (d, e) states: ``bh (chunk + d + 2 e + d e /
    chunk)`` elements per position) stay near ``_CPU_BLOCK_ELEMENTS``: large temporaries cost
    page faults on every fresh allocation there, and memory.
    """
    if torch.device(device).type != "cpu":
        return L
    per_chunk = bh * (chunk * (chunk + d + 2 * e) + d * e)
    return chunk * max(1, _CPU_BLOCK_ELEMENTS // per_chunk)


def _precision(q, k, v):
    """Dtypes of the flow statistics, of the causal kernel's matrix products, of the output.

    float64 and float32 inputs run in their dtype. Reduced precision (bfloat16 or float16
    inputs, or float32 inputs under ``torch.autocast``) keeps the flow statistics (sums over
    the whole sequence, divisions, the running log-sum-exp) in float32; the causal kernel's
    matrix products run in bfloat16 (carried states accumulated in float32) and the output
    has the reduced dtype. float16 products run in float32: the causal prefix states grow
    like L, the query gain ``a / I`` falls like 1 / L, which leaves float16's range at long
    lengths.
    """
    dtype = torch.promote_types(torch.promote_types(q.dtype, k.dtype), v.dtype)
    device = q.device.type
    if dtype != torch.float64 and _autocast_enabled(device):
        dtype = torch.get_autocast_dtype(device)
    if dtype in (torch.bfloat16, torch.float16):
        return torch.float32, torch.bfloat16 if dtype == torch.bfloat16 else torch.float32, dtype
    return dtype, dtype, dtype


def _accumulation_dtype(mm):
    return torch.float32 if mm in (torch.bfloat16, torch.float16) else mm


def _autocast_enabled(device_type):
    try:
        return torch.is_autocast_enabled(device_type)
    except RuntimeError:  # a device type autocast does not know (meta, say): never on
        return False


def _autocast_off(device_type):
    """Disables ``torch.autocast`` on ``device_type`` where it is on (a no-op elsewhere)."""
    if _autocast_enabled(device_type):
        return torch.autocast(device_type, enabled=False)
    return contextlib.nullcontext()


def _flow_weights(q, k, causal, clamp, eps):
    """Sink normaliser, competition and allocation (steps 1-3); see :func:`flow_attention`.

    Returns ``phi(q)`` (b, h, n, d), ``phi(k)`` (b, h, m, d), the competition ``c`` (b, h, m)
    and the query gain ``a / I`` (b, h, n): allocation over incoming flow.
    """
    phi_q, phi_k = torch.sigmoid(q), torch.sigmoid(k)  # non-negative feature map
    n, m = q.shape[2], k.shape[2]
    if not causal:
        # Matrix-vector products (one pass over the (L, d) tensor each, no (L, d) temporary):
        # fwd+bwd at L=16K, B8 H8 d32 went from 2.1 s to 1.3 s on the 2-core CPU.
        def gdot(a, vec):
            # (a + eps) . (vec + eps) for a (b, h, L, d) and vec (b, h, d), expanded so that
            # no eps-shifted copy of the (L, d) tensor is kept for backward
            vec = vec + eps
            return (a @ vec.unsqueeze(-1)).squeeze(-1) + eps * vec.sum(-1, keepdim=True)

        def wsum(a, w):
            # sum_L w_L a_L for a (b, h, L, d) and weights w (b, h, L) -> (b, h, d)
            return (w.unsqueeze(-2) @ a).squeeze(-2)

        # (1) incoming flow of each sink, outgoing flow of each source
        inc = gdot(phi_q, phi_k.sum(2))  # I_i
        out = gdot(phi_k, phi_q.sum(2))  # O_j
        # (2) conservation: fix the other side's flow to 1 and recompute
        cons_sink = gdot(phi_q, wsum(phi_k, 1.0 / out))  # \hat I_i
        cons_src = gdot(phi_k, wsum(phi_q, 1.0 / inc))  # \hat O_j
        if clamp is not None:
            cons_src = cons_src.clamp(-clamp, clamp)
        # (3) competition among sources, allocation to sinks
        alloc = torch.sigmoid(cons_sink * (float(n) / float(m)))
        comp = torch.softmax(cons_src, dim=-1) * float(m)
        return phi_q, phi_k, comp, alloc / inc

    # t = number of visible positions, shaped to broadcast over (b, h, L)
    t = torch.arange(1, n + 1, device=q.device, dtype=q.dtype)
    eps_sq = q.shape[-1] * eps * eps
    sq, sk = phi_q.sum(-1), phi_k.sum(-1)  # (b, h, L)
    # Every flow dot product (a_t + eps) . (sum_{s<=t} w_s b_s + eps) is expanded as
    # a_t . prefix + eps (sum(a_t) + sum_{s<=t} w_s sum(b_s)) + d eps^2: the (L, d) prefix sum
    # lives only inside _prefix_dot (recomputed in its backward), only (b, h, L) vectors here.
    # (1) prefix flows, rescaled by t (official: sink_incoming * normal)
    inc = _prefix_dot(phi_q, phi_k) + eps * (sq + sk.cumsum(-1)) + eps_sq  # I_t
    out = _prefix_dot(phi_k, phi_q) + eps * (sk + sq.cumsum(-1)) + eps_sq  # O_t
    sink_norm = t / inc
    src_norm = t / out
    # (2) conservation over prefixes, divided by t
    cons_sink = (_prefix_dot(phi_q, phi_k, src_norm)
                 + eps * (sq + (sk * src_norm).cumsum(-1)) + eps_sq) / t
    cons_src = (_prefix_dot(phi_k, phi_q, sink_norm)
                + eps * (sk + (sq * sink_norm).cumsum(-1)) + eps_sq) / t
    if clamp is not None:
        cons_src = cons_src.clamp(-clamp, clamp)
    # (3) allocation; running softmax as exp(O_t - logsumexp_{s<=t} O_s) * t. Departure: the
    # official code divides exp(O_t) by cumsum(exp(O)), which overflows without the clamp.
    alloc = torch.sigmoid(cons_sink)
    comp = torch.exp(cons_src - torch.logcumsumexp(cons_src, dim=-1)) * t
    # (4) the aggregation's query gain: phi_q * (t / I_t) / t * a_t == phi_q * (a_t / I_t)
    return phi_q, phi_k, comp, alloc / inc


#: Parameters shared by :class:`FlowAttention` and the softmax baseline of the same interface
#: (:class:`~skdiff.nn.SoftmaxAttention`).
ATTENTION_LAYER_DOCS = parse_docs("""
hidden_dim : int
    Input and output features; split evenly over the heads.
n_heads : int
    Number of heads (must divide ``hidden_dim``).
causal : bool
    Causal (autoregressive) attention: position t attends only to positions <= t;
    requires self-attention.
""")


@fill_doc(ATTENTION_LAYER_DOCS)
class FlowAttention(nn.Module):
    r"""Multi-head Flow-Attention layer on (batch, length, hidden_dim) sequences.

    .. math::

        \mathrm{FlowAttention}(X, Y) = \mathrm{Dropout}\big(
            [R^{(1)}, \dots, R^{(H)}]\, W_o + b_o\big), \quad
        R^{(h)} = \mathrm{Flow}(X W_q^{(h)}, Y W_k^{(h)}, Y W_v^{(h)})

    with :func:`flow_attention` as ``Flow`` (Wu et al., ICML 2022, Sec. 3; official
    ``Flow_Attention`` / ``Flow_Attention_Causal`` in ``thuml/Flowformer``).

    Parameters
    ----------
    %(hidden_dim)s
    %(n_heads)s
    %(causal)s
    clamp : float or None, default=1.0
        Bound of the conserved outgoing flow (see :func:`flow_attention`).
    dropout : float, default=0.05
        Dropout after the output projection (0.05 in the official core file).
    eps : float, default=1e-6
        Added to both operands of every flow dot product (see :func:`flow_attention`), which
        keeps the flows of all-zero features finite.
    chunk_size : int or None, default=None
        Chunk length of the causal kernel (``None``: the device's default, see
        :func:`flow_attention`).

    Notes
    -----
    Shapes: x : (b, n, hidden_dim); context : (b, m, hidden_dim) or None (self-attention);
    output : (b, n, hidden_dim).
    """

    def __init__(self, hidden_dim, n_heads, *, causal=False, clamp=1.0, dropout=0.05,
                 eps=1e-6, chunk_size=None):
        super().__init__()
        if hidden_dim % n_heads:
            raise ValueError(
                f"hidden_dim={hidden_dim} must be divisible by n_heads={n_heads}."
            )
        self.hidden_dim, self.n_heads = hidden_dim, n_heads
        self.causal, self.clamp, self.eps, self.chunk_size = causal, clamp, eps, chunk_size
        self.query = nn.Linear(hidden_dim, hidden_dim)
        self.key = nn.Linear(hidden_dim, hidden_dim)
        self.value = nn.Linear(hidden_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, hidden_dim)
        self.dropout = Dropout(dropout)

    def reset_parameters(self):
        """Draw fresh initial weights of the query, key, value and output projections
        (torch's default initialisation of :class:`~torch.nn.Linear`)."""
        for lin in (self.query, self.key, self.value, self.out):
            lin.reset_parameters()

    def _heads(self, x):
        b, length, _ = x.shape  # (b, L, h*d) -> (b, h, L, d)
        return x.view(b, length, self.n_heads, -1).transpose(1, 2)

    def forward(self, x, context=None):
        context = x if context is None else context
        if self.causal and context is not x and context.shape[1] != x.shape[1]:
            raise ValueError("causal FlowAttention is self-attention: context must match x.")
        q, k, v = self._heads(self.query(x)), self._heads(self.key(context)), self._heads(
            self.value(context))
        r = flow_attention(q, k, v, causal=self.causal, clamp=self.clamp, eps=self.eps,
                           chunk_size=self.chunk_size)  # (b, h, n, e)
        r = r.transpose(1, 2).reshape(x.shape[0], x.shape[1], self.hidden_dim)
        return self.dropout(self.out(r))

    def extra_repr(self):
        return (f"hidden_dim={self.hidden_dim}, n_heads={self.n_heads}, causal={self.causal}, "
                f"clamp={self.clamp}")
