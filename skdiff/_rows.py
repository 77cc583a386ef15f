"""Rows that ``partial_fit`` remembers between calls.

* :func:`row_hashes` and :func:`feature_row_hashes`, a 64-bit hash of each row, so that a row
  given again (an epoch loop over the same rows) is recognised whatever batch it comes in;
* :class:`KeptRows`, a bounded uniform sample of the distinct rows a stream has given
  (reservoir sampling, Vitter's Algorithm R), which DIFFormer's ``partial_fit`` trains and
  predicts with beside each call's rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["KeptRows", "feature_row_hashes", "row_hashes", "stack_rows"]

_SEED = np.uint64(0xCBF29CE484222325)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x):
    """SplitMix64's finaliser, elementwise: every input bit reaches every output bit."""
    x = x ^ (x >> np.uint64(30))
    x = x * _MIX1
    x = x ^ (x >> np.uint64(27))
    x = x * _MIX2
    return x ^ (x >> np.uint64(31))


#: Rows per block of :func:`feature_row_hashes` (converted to dense float64 a block at a time).
_HASH_BLOCK = 4096


def row_hashes(*arrays):
    """A 64-bit hash of each row of ``arrays`` (aligned by rows), from the rows' bytes:
    equal rows hash alike, whatever batch they come in. Each 8-byte word is folded in as
    ``h = mix(h + golden + mix(word))`` (SplitMix64's finaliser; order matters), a vectorised
    pass over the words (columns), not the rows. The words of floats hold their information
    in the high bits (small integers as float64 leave the low bytes zero), so the full
    mixing matters: a multiplicative hash alone lets such rows collide."""
    n = arrays[0].shape[0]
    h = np.full(n, _SEED, dtype=np.uint64)
    for a in arrays:
        raw = np.ascontiguousarray(a).reshape(n, -1).view(np.uint8)
        pad = -raw.shape[1] % 8
        if pad:
            raw = np.concatenate([raw, np.zeros((n, pad), dtype=np.uint8)], axis=1)
        for word in np.ascontiguousarray(raw).view(np.uint64).T:
            h = _mix(h + _GOLDEN + _mix(word))  # wraps modulo 2**64
    return h


def feature_row_hashes(X, *arrays):
    """:func:`row_hashes` of the rows of features ``X`` read as float64 (a float32 row and
    the same row in float64 hash alike) beside ``arrays``. ``X`` may be a scipy sparse
    matrix (hashed as its dense rows) or a memory map: it is read a block of rows at a time,
    so no more than a block is ever converted."""
    n = X.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    blocks = []
    for i in range(0, n, _HASH_BLOCK):
        block = X[i:i + _HASH_BLOCK]
        block = block.toarray() if sp.issparse(block) else block
        blocks.append(row_hashes(np.asarray(block, dtype=np.float64),
                                 *(a[i:i + _HASH_BLOCK] for a in arrays)))
    return np.concatenate(blocks)


def stack_rows(a, b):
    """The rows of ``a`` over those of ``b``: CSR if either is sparse, else an array."""
    if sp.issparse(a) or sp.issparse(b):
        return sp.vstack([sp.csr_matrix(a), sp.csr_matrix(b)], format="csr")
    return np.concatenate([a, b])


class KeptRows:
    """A uniform sample of at most ``max_rows`` of the distinct rows a stream has given.

    Each row is its features ``X`` (dense array or CSR, as validated), its ``targets``, its
    ``labelled`` flag, its ``strata`` (class codes, or ``None`` for every row) and its sample
    ``weights``, with its :func:`row_hashes` in ``hashes``; ``n_seen`` counts the distinct
    rows given so far. Instances are not changed in place: :meth:`updated` returns a new one
    (a failed fit restores the old one by restoring the attribute).
    """

    def __init__(self, X, targets, labelled, strata, weights, hashes, n_seen):
        self.X, self.targets, self.labelled = X, targets, labelled
        self.strata, self.weights, self.hashes, self.n_seen = strata, weights, hashes, n_seen

    def __len__(self):
        return self.hashes.shape[0]

    @classmethod
    def of(cls, X, targets, labelled, strata, weights, hashes, max_rows, seed):
        """The rows of a first call."""
        none = np.zeros(0, dtype=np.intp)
        empty = cls(X[none], targets[none], labelled[none],
                    None if strata is None else strata[none], weights[none],
                    np.zeros(0, dtype=np.uint64), 0)
        return empty.updated(X, targets, labelled, strata, weights, hashes, max_rows, seed)

    def others(self, hashes):
        """Indices of the kept rows that are not among the rows of ``hashes``."""
        return np.flatnonzero(~np.isin(self.hashes, hashes))

    def take(self, idx):
        """``(X, targets, labelled, strata, weights)`` of the kept rows ``idx``."""
        return (self.X[idx], self.targets[idx], self.labelled[idx],
                None if self.strata is None else self.strata[idx], self.weights[idx])

    def updated(self, X, targets, labelled, strata, weights, hashes, max_rows, seed):
        """The sample after a call's rows (``hashes`` theirs): the distinct rows not kept
        before join while there is room; beyond ``max_rows``, the ``t``-th distinct row of
        the stream replaces a uniformly drawn kept row with probability ``max_rows / t``
        (Algorithm R, drawn from ``seed``), so every row seen is kept with the same
        probability."""
        _, first = np.unique(hashes, return_index=True)
        new = np.sort(first[~np.isin(hashes[first], self.hashes)])
        if new.size == 0:
            return self
        k, room = len(self), max(int(max_rows) - len(self), 0)
        # positions in [kept rows, this call's rows] of the rows the new sample holds
        idx = np.concatenate([np.arange(k), k + new[:room]])
        rest = new[room:]
        if rest.size:
            t = self.n_seen + room + np.arange(1, rest.size + 1)  # 1-based stream position
            slot = np.random.RandomState(seed).randint(0, t)
            hit = slot < max_rows
            # a slot drawn twice holds the later row
            slots, rows = slot[hit][::-1], rest[hit][::-1]
            once = np.unique(slots, return_index=True)[1]
            idx[slots[once]] = k + rows[once]
        stacked = (stack_rows(self.X, X), np.concatenate([self.targets, targets]),
                   np.concatenate([self.labelled, labelled]),
                   None if strata is None else np.concatenate([self.strata, strata]),
                   np.concatenate([self.weights, weights]),
                   np.concatenate([self.hashes, hashes]))
        X_, t_, l_, s_, w_, h_ = (None if a is None else a[idx] for a in stacked)
        return KeptRows(X_, t_, l_, s_, w_, h_, self.n_seen + new.size)
