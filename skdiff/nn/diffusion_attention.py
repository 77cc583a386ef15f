r"""DIFFormer's all-pair diffusion attention (Wu et al., ICLR 2023, Sec. 4; ``DIFFormerConv``).

One diffusion step moves every sample towards a weighted mean of all samples,

.. math::

    P_i = \sum_j S_{ij} v_j, \qquad
    S_{ij} = \frac{f(\tilde q_i, \tilde k_j)}{\sum_l f(\tilde q_i, \tilde k_l)},

with three pairwise kernels :math:`f` (paper Sec. 4.1-4.2 and a softmax baseline):

* ``"simple"`` (DIFFormer-s, Eq. 12): :math:`f = 1 + \tilde q_i^\top \tilde k_j`, so by
  associativity :math:`P_i = (\sum_j v_j + \tilde q_i^\top \sum_j \tilde k_j v_j^\top) /
  (N + \tilde q_i^\top \sum_j \tilde k_j)`: O(N d^2) time and memory, never N x N.
  ``qk_norm="global"`` divides Q and K by the Frobenius norm of the whole (N, H, d) tensor
  (the official code), ``"row"`` L2-normalises every row (the paper's equations).
* ``"advanced"`` (DIFFormer-a, Eq. 13): :math:`f = \mathrm{sigmoid}(q_i^\top k_j)` on the raw
  projections, computed in blocks of query rows: O(block N) memory.
* ``"softmax"``: :math:`f = \exp(q_i^\top k_j / \sqrt d)` (a Transformer across samples), row
  blocks through :func:`torch.nn.functional.scaled_dot_product_attention`.

Restricted to the edges of a graph (``scope="graph"``; the unit self loops included), the same
kernels give graph attention: with ``"softmax"`` this is GAT-like attention. It is computed
sparsely per edge (O(E) memory), never by masking an N x N matrix.

Axis legend: n query rows, l key rows, h heads, m query/key features, d value features,
E edges, b rows of a block.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .._docs import fill_doc, parse_docs
from .graph import edge_index_of, propagate

__all__ = [
    "DiffusionAttention",
    "advanced_attention",
    "edge_attention",
    "normalize_qk",
    "simple_attention",
    "simple_attention_from_summary",
    "simple_summary",
    "softmax_attention",
]

KERNELS = ("simple", "advanced", "softmax")
QK_NORMS = ("global", "row")


def normalize_qk(x, qk_norm, *, scale=None, eps=1e-12):
    """Normalise queries or keys (n, h, m): ``"global"`` Frobenius norm, ``"row"`` per row.

    ``scale`` (global only) replaces the tensor's own norm: inductive queries are divided by
    the norm stored from the training rows, so a training row gets the same weights whether it
    is predicted inductively or in the joint forward.
    """
    if qk_norm == "global":
        norm = torch.linalg.vector_norm(x) if scale is None else scale
        return x / torch.clamp(norm, min=eps)
    if qk_norm == "row":
        return F.normalize(x, p=2.0, dim=-1, eps=eps)
    raise ValueError(f"qk_norm must be one of {QK_NORMS}; got {qk_norm!r}.")


def simple_summary(k, v):
    """Sufficient statistics of normalised keys k (l, h, m) and values v (l, h, d).

    Returns a dict with ``kv`` (h, m, d) = sum_j k_j v_j^T, ``k_sum`` (h, m), ``v_sum`` (h, d)
    and ``n`` (number of key rows, a 0-d tensor).
    """
    return {
        "kv": torch.einsum("lhm,lhd->hmd", k, v),
        "k_sum": k.sum(0),
        "v_sum": v.sum(0),
        "n": torch.tensor(float(k.shape[0]), dtype=k.dtype, device=k.device),
    }


def simple_attention_from_summary(q, summary, eps=1e-6):
    """Linear attention of normalised queries q (n, h, m) against a :func:`simple_summary`.

    out_i = (v_sum + q_i kv) / (n + q_i . k_sum), per head (paper Eq. 12). The denominator is
    >= 0 by Cauchy-Schwarz with unit-norm rows and is clamped at ``eps``.
    """
    num = summary["v_sum"].unsqueeze(0) + torch.einsum("nhm,hmd->nhd", q, summary["kv"])
    den = summary["n"] + torch.einsum("nhm,hm->nh", q, summary["k_sum"])
    return num / den.clamp_min(eps).unsqueeze(-1)


def simple_attention(q, k, v, qk_norm="global", eps=1e-6):
    """DIFFormer-s all-pair attention (n, h, d) of raw q (n, h, m), k (l, h, m), v (l, h, d).

    With ``qk_norm="global"`` the two Frobenius norms are scalars, so they are folded into the
    (h, m, d) and (h, m) sums instead of materialising normalised copies of Q and K: two fewer
    (n, h, m) tensors per layer in forward and backward, which lowers the peak memory of large
    full-batch steps. Same result up to rounding.
    """
    if qk_norm != "global":
        q = normalize_qk(q, qk_norm)
        k = normalize_qk(k, qk_norm)
        return simple_attention_from_summary(q, simple_summary(k, v), eps)
    scale = 1.0 / (torch.linalg.vector_norm(q).clamp_min(1e-12)
                   * torch.linalg.vector_norm(k).clamp_min(1e-12))
    kv = torch.einsum("lhm,lhd->hmd", k, v) * scale  # sum_j k~_j v_j^T, (h, m, d)
    k_sum = k.sum(0) * scale  # (h, m)
    # v_sum + q~_i kv for every head as one batched product, heads first: (h, n, d)
    num = torch.baddbmm(v.sum(0).unsqueeze(1), q.transpose(0, 1), kv).transpose(0, 1)
    den = torch.einsum("nhm,hm->nh", q, k_sum).add_(float(k.shape[0]))
    return num.div_(den.clamp_min(eps).unsqueeze(-1))  # in place: baddbmm keeps no output


def _blocked(fn, q, block_size, *args):
    """Apply ``fn(q_block, *args)`` on row blocks of q and concatenate (O(block l) memory).

    With autograd on and more than one block, each block is checkpointed so the (h, b, l)
    weights are recomputed in backward instead of stored: training memory stays O(block l).
    """
    n = q.shape[0]
    if n <= block_size:
        return fn(q, *args)
    grad = torch.is_grad_enabled() and (q.requires_grad or any(
        torch.is_tensor(a) and a.requires_grad for a in args))
    outs = []
    for start in range(0, n, block_size):  # loop over blocks, not samples
        qb = q[start:start + block_size]
        if grad:
            outs.append(checkpoint(fn, qb, *args, use_reentrant=False))
        else:
            outs.append(fn(qb, *args))
    return torch.cat(outs, 0)


def _advanced_block(q, k, v):
    # heads first, batched products; the row sums divide the (b, d) output rather than the
    # (b, l) weights (one fewer (h, b, l) tensor forward and backward: ~1.6x faster on CPU)
    s = torch.sigmoid(torch.bmm(q.transpose(0, 1), k.permute(1, 2, 0)))  # (h, b, l)
    num = torch.bmm(s, v.transpose(0, 1))  # (h, b, d)
    return (num / s.sum(-1, keepdim=True)).transpose(0, 1)


def advanced_attention(q, k, v, block_size=1024):
    """DIFFormer-a: row-normalised sigmoid(q_i . k_j) on raw projections, in row blocks."""
    return _blocked(_advanced_block, q, block_size, k, v)


def _softmax_block(q, k, v):
    # SDPA wants (..., n, m): heads first. Default scale 1/sqrt(m).
    out = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1))
    return out.transpose(0, 1)  # (b, h, d)


def softmax_attention(q, k, v, block_size=1024):
    """Scaled dot-product attention across samples, in row blocks of queries."""
    return _blocked(_softmax_block, q, block_size, k, v)


def edge_attention(q, k, v, edge_index, kernel="simple", qk_norm="global", eps=1e-6):
    """Attention restricted to the edges (i <- j) of ``edge_index`` (2, E), computed per edge.

    Row i normalises over its neighbours j (include self loops in ``edge_index`` so every row
    has one). ``"softmax"`` subtracts the per-row maximum before exponentiating (stable).
    Queries and keys share the node set (n == l).
    """
    row, col = edge_index
    n, h = q.shape[0], q.shape[1]
    if kernel == "simple":
        qn, kn = normalize_qk(q, qk_norm), normalize_qk(k, qk_norm)
        w = 1.0 + (qn[row] * kn[col]).sum(-1)  # (E, h), >= 0 for unit rows
    elif kernel == "advanced":
        w = torch.sigmoid((q[row] * k[col]).sum(-1))
    elif kernel == "softmax":
        s = (q[row] * k[col]).sum(-1) / math.sqrt(q.shape[-1])
        smax = torch.full((n, h), -torch.inf, dtype=s.dtype, device=s.device)
        smax = smax.scatter_reduce(0, row.unsqueeze(1).expand(-1, h), s, "amax",
                                   include_self=True)
        w = torch.exp(s - smax[row].detach())
    else:
        raise ValueError(f"kernel must be one of {KERNELS}; got {kernel!r}.")
    den = torch.zeros(n, h, dtype=w.dtype, device=w.device).index_add_(0, row, w)
    out = torch.zeros(n, h, v.shape[-1], dtype=v.dtype, device=v.device)
    out = out.index_add_(0, row, w.unsqueeze(-1) * v[col])
    return out / den.clamp_min(eps).unsqueeze(-1)


#: Parameters of the diffusion attention, shared by :class:`DiffusionAttention` and the
#: :class:`~skdiff.nn.DIFFormer` network that stacks it.
ATTENTION_DOCS = parse_docs("""
n_heads : int
    Attention heads; their outputs are averaged.
kernel : {"simple", "advanced", "softmax"}
    Pairwise diffusivity: ``"simple"`` = 1 + q.k of normalised queries and keys
    (DIFFormer-s, linear in the number of rows), ``"advanced"`` = sigmoid(q.k)
    (DIFFormer-a, quadratic, row-blocked), ``"softmax"`` = scaled dot-product attention.
qk_norm : {"global", "row"}
    Normalisation of queries and keys of the simple kernel: ``"global"`` divides by the
    Frobenius norm of the whole tensor (the official code), ``"row"`` normalises every row
    (the paper's equations).
value_projection : bool
    Learn a value projection per head; ``False`` uses the input itself as the value of
    every head (the official ``use_weight=False``, which needs ``in_dim == hidden_dim``).
graph_weight : float in [0, 1] or None
    How attention and the graph term combine: ``None`` adds them (official), ``g`` mixes
    ``(1 - g) attention + g graph``.
scope : {"all", "graph"}
    Attend to all rows, or only along the edges of ``adj`` (which is then required).
block_size : int
    Query rows per block of the quadratic kernels (memory O(block_size * n)).
eps : float
    Lower bound of the simple kernel's normaliser and of the attention weights' row sums,
    which keeps a row with (near) zero total weight finite.
""")
ATTENTION_DOCS["attention_parameters"] = [
    "kernel", "qk_norm", "value_projection", "graph_weight", "scope", "block_size"]


@fill_doc(ATTENTION_DOCS)
class DiffusionAttention(nn.Module):
    r"""One DIFFormer propagation: all-pair (or edge) attention plus an optional graph term.

    .. math::

        P = \operatorname{mean}_h\big[\mathrm{Attn}_h(Z) + \hat G V_h\big] \quad\text{or}\quad
        \operatorname{mean}_h\big[(1-g)\,\mathrm{Attn}_h(Z) + g\,\hat G V_h\big],

    (paper Sec. 4, Eq. 9; official ``DIFFormerConv``). Q = Z W_q, K = Z W_k (with bias);
    V = Z W_v with ``value_projection`` else V = Z shared by all heads (the official
    ``use_weight=False``, which needs ``in_dim == hidden_dim``).

    Parameters
    ----------
    in_dim, hidden_dim : int
        Input width and per-head width.
    %(n_heads)s
    %(attention_parameters)s
    %(eps)s

    Notes
    -----
    Shapes: x (n, in_dim), adj sparse (n, n) normalised (see
    :func:`skdiff.nn.graph.normalized_adjacency`) -> (n, hidden_dim).
    """

    def __init__(self, in_dim, hidden_dim, *, n_heads=1, kernel="simple", qk_norm="global",
                 value_projection=False, graph_weight=None, scope="all", block_size=1024,
                 eps=1e-6):
        super().__init__()
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}; got {kernel!r}.")
        if qk_norm not in QK_NORMS:
            raise ValueError(f"qk_norm must be one of {QK_NORMS}; got {qk_norm!r}.")
        if scope not in ("all", "graph"):
            raise ValueError(f"scope must be 'all' or 'graph'; got {scope!r}.")
        if not value_projection and in_dim != hidden_dim:
            raise ValueError("value_projection=False needs in_dim == hidden_dim "
                             f"(got {in_dim} and {hidden_dim}).")
        self.hidden_dim, self.n_heads = hidden_dim, n_heads
        self.kernel, self.qk_norm, self.scope = kernel, qk_norm, scope
        self.graph_weight, self.block_size, self.eps = graph_weight, block_size, eps
        self.value_projection = value_projection
        self.Wq = nn.Linear(in_dim, hidden_dim * n_heads)
        self.Wk = nn.Linear(in_dim, hidden_dim * n_heads)
        self.Wv = nn.Linear(in_dim, hidden_dim * n_heads) if value_projection else None

    def reset_parameters(self):
        """Draw fresh initial weights of the query, key and value projections (torch's
        default initialisation of :class:`~torch.nn.Linear`)."""
        for lin in (self.Wq, self.Wk, self.Wv):
            if lin is not None:
                lin.reset_parameters()

    def qkv(self, x):
        """Per-head queries, keys and values of the rows ``x``.

        Parameters
        ----------
        x : Tensor of shape (n, in_dim)
            Rows (the hidden state of the layer).

        Returns
        -------
        q, k : Tensor of shape (n, h, m)
            Queries and keys (raw, not normalised).
        v : Tensor of shape (n, h, d)
            Values (without ``value_projection``, a view of ``x`` repeated over the heads).
        """
        n, h = x.shape[0], self.n_heads
        q = self.Wq(x).reshape(n, h, -1)
        k = self.Wk(x).reshape(n, h, -1)
        v = self.Wv(x).reshape(n, h, -1) if self.Wv is not None else x.unsqueeze(1).expand(
            n, h, x.shape[1])
        return q, k, v

    def _combine(self, attn, graph):
        """Heads averaged after adding the graph term (n, h, d) -> (n, d)."""
        if graph is None:
            out = attn
        elif self.graph_weight is None:
            out = attn + graph
        else:
            out = torch.lerp(attn, graph, self.graph_weight)  # (1 - g) attn + g graph
        return out[:, 0] if out.shape[1] == 1 else out.mean(1)  # one head: a view, no copy

    def attend(self, q, k, v, adj=None):
        """Per-head attention output for the transductive forward (every row a query and a key).

        Parameters
        ----------
        q, k : Tensor of shape (n, h, m)
            Queries and keys, as :meth:`qkv` returns them.
        v : Tensor of shape (n, h, d)
            Values.
        adj : sparse Tensor of shape (n, n) or None, default=None
            Normalised adjacency; its edges are the attended pairs with ``scope="graph"``
            (required then), unused otherwise.

        Returns
        -------
        out : Tensor of shape (n, h, d)
            Attention-weighted mean of the values, per head.
        """
        if self.scope == "graph":
            if adj is None:
                raise ValueError("scope='graph' needs an adjacency.")
            return edge_attention(q, k, v, edge_index_of(adj), self.kernel, self.qk_norm,
                                  self.eps)
        if self.kernel == "simple":
            return simple_attention(q, k, v, self.qk_norm, self.eps)
        if self.kernel == "advanced":
            return advanced_attention(q, k, v, self.block_size)
        return softmax_attention(q, k, v, self.block_size)

    def forward(self, x, adj=None):
        q, k, v = self.qkv(x)
        attn = self.attend(q, k, v, adj)
        graph = propagate(adj, v) if adj is not None else None
        return self._combine(attn, graph)

    # -- inductive path: new rows attend to stored training rows ------------------------------
    def summary(self, x):
        """What new query rows need to attend to the rows ``x`` (the stored training rows).

        simple: per-head sums (O(1) in n) and, for ``"global"`` norm, the training queries'
        Frobenius norm ``q_scale`` used to normalise new queries; advanced/softmax: the raw
        keys and values (n, h, .); ``scope="graph"``: nothing (new rows are isolated nodes).

        Parameters
        ----------
        x : Tensor of shape (n, in_dim)
            Hidden state of the stored training rows at this layer.

        Returns
        -------
        summary : dict of str to Tensor
            What :meth:`forward_inductive` takes as ``summary``.
        """
        if self.scope == "graph":
            return {}
        q, k, v = self.qkv(x)
        if self.kernel == "simple":
            out = simple_summary(normalize_qk(k, self.qk_norm), v)
            out["q_scale"] = torch.linalg.vector_norm(q)
            return out
        return {"k": k, "v": v}

    def forward_inductive(self, x, summary, *, graph=False):
        """Propagation for new rows ``x`` attending only to the summarised training rows.

        New rows have no edges, so with ``graph=True`` (the model was trained with a graph)
        their graph term is their own value, as :math:`\\hat G_{ii}=1` for an isolated node.

        Parameters
        ----------
        x : Tensor of shape (b, in_dim)
            Hidden state of the new rows.
        summary : dict of str to Tensor
            The training rows' :meth:`summary` at this layer.
        graph : bool, default=False
            Whether the model was trained with a graph term (then added, as the new rows'
            own values).

        Returns
        -------
        out : Tensor of shape (b, hidden_dim)
            The propagated state of the new rows, heads averaged.
        """
        q, _, v_self = self.qkv(x)
        if self.scope == "graph":
            attn = v_self  # an isolated node attends only to itself
        elif self.kernel == "simple":
            qn = normalize_qk(q, self.qk_norm, scale=summary.get("q_scale"))
            attn = simple_attention_from_summary(qn, summary, self.eps)
        elif self.kernel == "advanced":
            attn = advanced_attention(q, summary["k"], summary["v"], self.block_size)
        else:
            attn = softmax_attention(q, summary["k"], summary["v"], self.block_size)
        return self._combine(attn, v_self if graph else None)

    # -- the learned dependency structure -----------------------------------------------------
    def attention_weights(self, q, k, rows, adj=None):
        """Head-averaged attention weights of some query rows against all keys.

        Parameters
        ----------
        q : Tensor of shape (n, h, m)
            Queries of all rows (raw; normalised here as the kernel does).
        k : Tensor of shape (l, h, m)
            Keys of all rows.
        rows : LongTensor of shape (b,)
            The query rows to weigh, e.g. one block of rows.
        adj : sparse Tensor of shape (n, n) or None, default=None
            Normalised adjacency (with its self loops). With ``scope="graph"`` a row
            attends only along its edges, as in :meth:`attend`; without an adjacency every
            row is an isolated node and attends only to itself.

        Returns
        -------
        S : Tensor of shape (b, l)
            Weight of every key for every selected query, rows summing to 1 per head
            before the heads are averaged (0 off the edges with ``scope="graph"``).
        """
        if self.kernel == "simple":
            qn, kn = normalize_qk(q, self.qk_norm), normalize_qk(k, self.qk_norm)
            w = 1.0 + torch.einsum("bhm,lhm->hbl", qn[rows], kn)
        elif self.kernel == "advanced":
            w = torch.sigmoid(torch.einsum("bhm,lhm->hbl", q[rows], k))
        else:
            w = torch.softmax(torch.einsum("bhm,lhm->hbl", q[rows], k)
                              / math.sqrt(q.shape[-1]), -1)
        if self.scope == "graph":
            # the kernels' weights renormalised over a row's edges are edge_attention's
            w = w * self._edge_mask(rows, k.shape[0], adj, w.device)
        return (w / w.sum(-1, keepdim=True).clamp_min(self.eps)).mean(0)

    @staticmethod
    def _edge_mask(rows, n_keys, adj, device):
        """(b, l) float mask of the edges of ``rows`` in ``adj`` (self loops alone without
        an adjacency)."""
        b = rows.shape[0]
        mask = torch.zeros(b, n_keys, device=device)
        if adj is None:
            mask[torch.arange(b, device=device), rows] = 1.0
            return mask
        row, col = edge_index_of(adj)
        place = torch.full((n_keys,), -1, dtype=torch.long, device=device)
        place[rows] = torch.arange(b, device=device)
        keep = place[row] >= 0
        mask[place[row[keep]], col[keep]] = 1.0
        return mask

    def extra_repr(self):
        return (f"hidden_dim={self.hidden_dim}, n_heads={self.n_heads}, kernel={self.kernel!r}, "
                f"qk_norm={self.qk_norm!r}, value_projection={self.value_projection}, "
                f"graph_weight={self.graph_weight}, scope={self.scope!r}")
