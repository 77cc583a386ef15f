import numpy as np
import pytest

from skdiff.datasets import make_windows


def _slow_windows(series, window, horizon, stride):
    X, y = [], []
    for s in range(0, len(series) - window - horizon + 1, stride):
        X.append(series[s:s + window])
        y.append(series[s + window:s + window + horizon])
    return np.array(X), np.array(y)


@pytest.mark.parametrize("window,horizon,stride", [(1, 1, 1), (5, 3, 1), (7, 2, 3), (10, 10, 4)])
def test_univariate_equals_loop(window, horizon, stride):
    s = np.arange(40.0) ** 1.5
    X, y = make_windows(s, window, horizon, stride)
    Xr, yr = _slow_windows(s, window, horizon, stride)
    np.testing.assert_array_equal(X, Xr)
    np.testing.assert_array_equal(y, yr)
    assert len(X) == (40 - window - horizon) // stride + 1


def test_multivariate_shapes_and_target():
    s = np.random.default_rng(0).normal(size=(30, 3))
    X, y = make_windows(s, 6, 2, 2)
    Xr, yr = _slow_windows(s, 6, 2, 2)
    assert X.shape == (12, 6, 3) and y.shape == (12, 2, 3)
    np.testing.assert_array_equal(X, Xr)
    np.testing.assert_array_equal(y, yr)
    X1, y1 = make_windows(s, 6, 2, 2, target=2)
    assert y1.shape == (12, 2)
    np.testing.assert_array_equal(y1, yr[:, :, 2])
    _, y2 = make_windows(s, 6, 2, 2, target=[0, 2])
    np.testing.assert_array_equal(y2, yr[:, :, [0, 2]])
    assert X.flags.c_contiguous and X1.flags.c_contiguous


def test_errors():
    with pytest.raises(ValueError, match="has 5 rows but window=4 \\+ horizon=2 need at least 6"):
        make_windows(np.zeros(5), 4, 2)
    with pytest.raises(ValueError, match="'window' must be a positive integer; got 0"):
        make_windows(np.zeros(5), 0, 2)
    with pytest.raises(ValueError, match="'stride' must be a positive integer"):
        make_windows(np.zeros(5), 1, 1, stride=1.5)
    with pytest.raises(ValueError, match="1-D \\(T,\\) or 2-D \\(T, C\\); got an array of shape"):
        make_windows(np.zeros((5, 2, 2)), 1, 1)
    with pytest.raises(ValueError, match="'target' must be channel indices in \\[0, 2\\)"):
        make_windows(np.zeros((5, 2)), 1, 1, target=2)
    with pytest.raises(ValueError, match="got target=0 for a 1-D series of shape \\(5,\\): pass "
                       "target=None, or a 2-D series"):
        make_windows(np.zeros(5), 1, 1, target=0)
    with pytest.raises(TypeError, match="numeric"):
        make_windows(np.array(list("abcdef")), 1, 1)


def test_an_empty_target_is_refused():
    with pytest.raises(ValueError, match=r"'target' must be channel indices in \[0, 3\)"):
        make_windows(np.zeros((20, 3)), window=4, horizon=1, target=np.array([], dtype=int))



def test_a_nested_target_is_refused():
    with pytest.raises(ValueError, match=r"'target' must be channel indices in \[0, 3\)"):
        make_windows(np.zeros((20, 3)), window=4, horizon=1, target=[[0]])


def test_a_channel_named_twice_in_target_is_refused():
    # [0, 0] (or 0 and -3 of three channels) gave a y with the same output twice
    for target in ([0, 0], [0, -3]):
        with pytest.raises(ValueError) as info:
            make_windows(np.zeros((20, 3)), window=4, horizon=1, target=target)
        assert str(info.value) == (
            "'target' must name each channel once (each output of y is one channel); got "
            f"{target!r}, channels [0, 0] of 3.")
    X, y = make_windows(np.arange(60.0).reshape(20, 3), window=4, horizon=1, target=[2, 0])
    assert y.shape == (16, 1, 2) and y[0, 0].tolist() == [14.0, 12.0]
