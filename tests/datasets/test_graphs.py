import numpy as np
import pytest

from skdiff.datasets import make_label_mask, make_planted_partition, random_split_per_class


def test_planted_partition_edge_densities():
    X, y, A = make_planted_partition(1200, 3, p_in=0.03, p_out=0.002, n_features=4,
                                     random_state=0)
    assert X.shape == (1200, 4)
    assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0
    assert set(np.unique(A.data)) == {1.0}
    coo = A.tocoo()
    same = y[coo.row] == y[coo.col]
    n_in_pairs = 3 * 400 * 399 / 2
    n_out_pairs = 3 * 400 * 400
    p_in_hat = same.sum() / 2 / n_in_pairs
    p_out_hat = (~same).sum() / 2 / n_out_pairs
    assert p_in_hat == pytest.approx(0.03, rel=0.1)
    assert p_out_hat == pytest.approx(0.002, rel=0.15)


def test_planted_partition_is_seeded_and_features_are_noise():
    a = make_planted_partition(200, 2, random_state=3)
    b = make_planted_partition(200, 2, random_state=3)
    np.testing.assert_array_equal(a[0], b[0])
    assert (a[2] != b[2]).nnz == 0
    X, y, _ = a
    # pure noise features: class means are close
    assert np.abs(X[y == 0].mean(0) - X[y == 1].mean(0)).max() < 0.5
    with pytest.raises(ValueError, match="'p_in' parameter of make_planted_partition must be "
                       "a float in the range \\[0.0, 1.0\\]. Got 2 instead"):
        make_planted_partition(10, 2, p_in=2)
    with pytest.raises(ValueError, match="'n_features' parameter .* Got True instead"):
        make_planted_partition(10, 2, n_features=True)
    with pytest.raises(ValueError, match="'feature_signal' parameter .* must be a finite float"
                       ".* Got inf instead"):
        make_planted_partition(10, 2, feature_signal=np.inf)
    with pytest.raises(MemoryError, match="n_samples=1000000000000 nodes"):
        make_planted_partition(10**12, 2)


def test_label_mask_and_split():
    y = np.repeat(np.array(["a", "b", "c"]), 30)
    y_semi = make_label_mask(y, 5, random_state=0)
    assert y_semi.dtype == object
    assert (y_semi != -1).sum() == 15
    assert all((y_semi == c).sum() == 5 for c in "abc")
    tr, va, te = random_split_per_class(np.repeat([0, 1], 50), 10, n_val=20, n_test=30,
                                        random_state=0)
    assert len(tr) == 20 and len(va) == 20 and len(te) == 30
    assert not (set(tr) & set(va)) and not (set(va) & set(te))
    with pytest.raises(ValueError, match="'n_per_class' parameter of make_label_mask must be an "
                       "int in the range \\[1, inf\\). Got 0 instead"):
        make_label_mask(y, 0)
    with pytest.raises(ValueError, match="'y' parameter of make_label_mask must be an "
                       "array-like. Got 'bogus' instead"):
        make_label_mask("bogus", 2)
    with pytest.raises(ValueError, match="'n_per_class' parameter of random_split_per_class .*"
                       "Got None instead"):
        random_split_per_class(y, None)
    with pytest.raises(ValueError, match="'random_state' parameter .* Got 'seed' instead"):
        random_split_per_class(y, 2, random_state="seed")
    with pytest.raises(ValueError, match="'ignore' parameter .* Got 2.5 instead"):
        random_split_per_class(y, 2, ignore=2.5)
    with pytest.raises(ValueError, match="n_val=500 \\+ n_test=1000 exceed the 84 rows left "
                       "after drawing 6 training rows \\(n_per_class=2\\); pass n_val \\+ n_test "
                       "<= 84, or a smaller n_per_class"):
        random_split_per_class(y, 2)


def test_split_ignore_none_draws_the_marked_rows():
    y = np.repeat([-1, 0, 1], 4)
    tr, _, _ = random_split_per_class(y, 4, n_val=0, n_test=0, ignore=None)
    np.testing.assert_array_equal(tr, np.arange(12))
    tr, _, _ = random_split_per_class(y, 4, n_val=0, n_test=0)
    np.testing.assert_array_equal(tr, np.arange(4, 12))
