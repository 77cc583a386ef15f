"""Rows that partial_fit remembers: row hashes and the bounded uniform sample of a stream."""

import numpy as np
import scipy.sparse as sp

from skdiff._rows import KeptRows, feature_row_hashes, row_hashes


def _rows(n, start=0):
    X = np.arange(start, start + n, dtype=np.float64)[:, None] * np.ones((1, 3))
    return X, X[:, 0].astype(np.float32), np.ones(n, bool), None, np.ones(n)


def test_feature_rows_hash_alike_sparse_dense_float32_and_float64():
    rng = np.random.RandomState(0)
    dense = rng.binomial(1, 0.1, size=(9000, 7)).astype(np.float64)  # three hash blocks
    y = rng.normal(size=9000)
    expected = row_hashes(dense, y)
    np.testing.assert_array_equal(feature_row_hashes(dense, y), expected)
    np.testing.assert_array_equal(feature_row_hashes(sp.csr_matrix(dense), y), expected)
    np.testing.assert_array_equal(feature_row_hashes(dense.astype(np.float32), y), expected)
    # equal rows hash alike, different rows (almost surely) not
    h = row_hashes(np.r_[dense[:5], dense[:5]], np.r_[y[:5], y[:5]])
    np.testing.assert_array_equal(h[:5], h[5:])
    assert np.unique(row_hashes(dense, y)).size == 9000


def test_distinct_rows_of_small_integers_hash_apart():
    # float64 words of small integers hold their bits high, the low bytes zero: a
    # multiplicative hash alone let 3,498 distinct rows of {0, 1, 2} share 800 hashes
    rng = np.random.RandomState(0)
    Z = rng.randint(0, 3, size=(5000, 8)).astype(np.float64)
    assert np.unique(feature_row_hashes(Z)).size == np.unique(Z, axis=0).shape[0] == 3498
    from sklearn.datasets import load_digits

    digits = load_digits().data  # 1,797 distinct rows of integers 0-16
    assert np.unique(feature_row_hashes(digits)).size == 1797
    # the order of the columns counts
    assert row_hashes(np.array([[1.0, 2.0]]))[0] != row_hashes(np.array([[2.0, 1.0]]))[0]


def test_kept_rows_hold_every_distinct_row_up_to_the_limit():
    X, t, lab, s, w = _rows(30)
    kept = KeptRows.of(X, t, lab, s, w, row_hashes(X, t, w), max_rows=100, seed=0)
    assert len(kept) == 30 and kept.n_seen == 30
    # rows given again count once; new rows join in the order given
    X2, t2, lab2, s2, w2 = _rows(40, start=20)
    more = kept.updated(X2, t2, lab2, s2, w2, row_hashes(X2, t2, w2), max_rows=100, seed=1)
    assert len(more) == 60 and more.n_seen == 60 and len(kept) == 30  # kept is unchanged
    np.testing.assert_array_equal(more.X[:, 0], np.arange(60))
    # the kept rows a call does not give again
    np.testing.assert_array_equal(more.others(row_hashes(X2, t2, w2)), np.arange(20))
    assert more.updated(X2, t2, lab2, s2, w2, row_hashes(X2, t2, w2), 100, 2) is more


def test_beyond_the_limit_every_row_of_the_stream_is_kept_alike():
    # reservoir sampling: after a stream of 200 distinct rows in calls of 20, a sample of 50
    # holds each row with probability 1/4, whatever its place in the stream
    counts = np.zeros(200)
    for seed in range(400):
        kept = None
        for start in range(0, 200, 20):
            X, t, lab, s, w = _rows(20, start)
            h = row_hashes(X, t, w)
            kept = (KeptRows.of(X, t, lab, s, w, h, 50, seed) if kept is None
                    else kept.updated(X, t, lab, s, w, h, 50, seed * 1000 + start))
        assert len(kept) == 50 and kept.n_seen == 200
        assert np.unique(kept.hashes).size == 50
        counts[kept.X[:, 0].astype(int)] += 1
    freq = counts / 400
    assert abs(freq.mean() - 0.25) < 1e-12
    # each row's frequency within 5 binomial standard errors of 1/4, and no trend over the
    # stream (the first and the last 100 rows alike)
    assert np.all(np.abs(freq - 0.25) < 5 * np.sqrt(0.25 * 0.75 / 400))
    assert abs(freq[:100].mean() - freq[100:].mean()) < 0.03
