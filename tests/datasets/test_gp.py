"""Functions drawn from GP priors: covariance, shapes, padding, seeds, errors."""

import numpy as np
import pytest

from skdiff.datasets import make_gp_functions
from skdiff.datasets._gp import gp_kernel

X5 = np.array([[-1.5], [-1.2], [-0.4], [0.3], [1.7]])


def _emp_cov(v):
    return v.T @ v / len(v)


@pytest.mark.parametrize("kernel", ["se", "matern12", "matern32", "matern52", "periodic"])
def test_empirical_covariance_matches_kernel(kernel):
    d = make_gp_functions(20_000, None, kernel=kernel, lengthscale=0.7, variance=1.5,
                          noise=0.04, X=X5, random_state=0)
    K = gp_kernel(X5, X5, kernel, 0.7, 1.5)
    # Monte Carlo error of a covariance entry ~ sqrt(2/20000) * 1.5 ~ 0.015
    np.testing.assert_allclose(_emp_cov(d.f), K, atol=0.06)
    # noise is added independently of f, on the diagonal only
    np.testing.assert_allclose(_emp_cov(d.y), K + 0.04 * np.eye(5), atol=0.06)
    np.testing.assert_allclose(np.var(d.y - d.f, axis=0), 0.04, rtol=0.05)


def test_kernel_formulas():
    r = np.array([[0.0], [0.5]])
    K = gp_kernel(r[:1], r, "matern52", lengthscale=0.25)
    s = np.sqrt(5) * 2.0
    np.testing.assert_allclose(K[0], [1.0, (1 + s + s**2 / 3) * np.exp(-s)])
    np.testing.assert_allclose(gp_kernel(r[:1], r, "se", 0.5)[0], [1.0, np.exp(-0.5)])
    # periodic: one period apart means perfectly correlated
    np.testing.assert_allclose(gp_kernel([[0.0]], [[2.0]], "periodic", 1.0, period=2.0), 1.0)


def test_mixture_and_random_lengthscale_covariance_is_the_average_kernel():
    d = make_gp_functions(20_000, None, kernel=["se", "matern12"],
                          lengthscale=("lognormal", np.log(0.5), 0.5), noise=0.0, X=X5,
                          random_state=1)
    assert set(d.kernel) == {"se", "matern12"}
    assert abs(np.mean(d.kernel == "se") - 0.5) < 0.02
    assert abs(np.mean(np.log(d.lengthscale)) - np.log(0.5)) < 0.02
    assert abs(np.std(np.log(d.lengthscale)) - 0.5) < 0.02
    expected = np.mean([gp_kernel(X5, X5, k, ls) for k, ls in
                        zip(d.kernel[:4000], d.lengthscale[:4000])], axis=0)
    np.testing.assert_allclose(_emp_cov(d.f), expected, atol=0.06)


def test_shapes_padding_and_ranges():
    d = make_gp_functions(50, (5, 12), n_dims=(1, 3), domain=(0.0, 1.0), random_state=0)
    P = d.n_points.max()
    assert d.X.shape == (50, P, 3) and d.y.shape == (50, P) and d.mask.shape == (50, P)
    assert d.n_points.min() >= 5 and d.n_points.max() <= 12 and len(set(d.n_dims)) == 3
    np.testing.assert_array_equal((~d.mask).sum(1), d.n_points)
    assert np.all(d.y[d.mask] == 0) and np.all(d.X[d.mask] == 0)
    for i in range(50):  # padded dimensions are zero, real ones inside the domain
        real = d.X[i, : d.n_points[i], : d.n_dims[i]]
        assert np.all((real >= 0) & (real <= 1))
        assert np.all(d.X[i, :, d.n_dims[i]:] == 0)


def test_padding_does_not_change_the_real_points_distribution():
    # functions with 3 real points padded to 12 keep the 3x3 covariance of the kernel
    X = np.zeros((20_000, 12, 1))
    X[:, :3, 0] = [-1.0, 0.0, 0.5]
    d = make_gp_functions(20_000, None, X=X, noise=0.0, random_state=0)
    K = gp_kernel(X[0, :3], X[0, :3], "se", 0.25)
    np.testing.assert_allclose(_emp_cov(d.f[:, :3]), K, atol=0.05)


def test_seeds():
    a = make_gp_functions(4, 20, random_state=3)
    b = make_gp_functions(4, 20, random_state=3)
    c = make_gp_functions(4, 20, random_state=4)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.allclose(a.y, c.y)


def test_lengthscale_callable_and_errors():
    d = make_gp_functions(6, 5, lengthscale=lambda rng, n: rng.uniform(0.1, 0.2, n),
                          random_state=0)
    assert np.all((d.lengthscale >= 0.1) & (d.lengthscale <= 0.2))
    with pytest.raises(ValueError, match="'kernel' parameter of make_gp_functions must be a str "
                       "among .*Got 'rbf' instead"):
        make_gp_functions(2, 5, kernel="rbf")
    with pytest.raises(ValueError, match="'kernel' must be one of .* got \\['se', 3\\]"):
        make_gp_functions(2, 5, kernel=["se", 3])
    with pytest.raises(ValueError, match="'lengthscale' must be a positive number, a tuple"):
        make_gp_functions(2, 5, lengthscale=("gamma", 1, 2))
    with pytest.raises(ValueError, match="'lengthscale' values must be finite and > 0"):
        make_gp_functions(2, 5, lengthscale=("uniform", -2.0, -1.0))
    with pytest.raises(ValueError, match="'lengthscale' parameter .* must be a finite float in "
                       "the range \\(0.0, inf\\).*Got -1.0 instead"):
        make_gp_functions(2, 5, lengthscale=-1.0)
    with pytest.raises(ValueError, match="must return 2 values"):
        make_gp_functions(2, 5, lengthscale=lambda rng, n: [1.0])
    with pytest.raises(ValueError, match="'n_points' must satisfy 1 <= low <= high"):
        make_gp_functions(2, (5, 3))
    with pytest.raises(ValueError, match="'X' must be a finite array"):
        make_gp_functions(2, 5, X=np.zeros((3, 4, 1)))
    with pytest.raises(ValueError, match="'domain' must be \\(low, high\\), two finite numbers "
                       "with low < high; got \\(1, 1\\)"):
        make_gp_functions(2, 5, domain=(1, 1))
    with pytest.raises(ValueError, match="'domain' must be .* got \\('a', 'b'\\)"):
        make_gp_functions(2, 5, domain=("a", "b"))


@pytest.mark.parametrize("name, value", [("jitter", np.inf), ("jitter", np.nan),
                                         ("noise", np.inf), ("variance", np.inf),
                                         ("period", np.nan)])
def test_non_finite_scales_are_refused(name, value):
    # a non-finite scale would make every drawn value non-finite
    with pytest.raises(ValueError, match=f"'{name}' parameter of make_gp_functions must be a "
                       f"finite float in the range .*Got {value} instead"):
        make_gp_functions(2, 5, **{name: value})


def test_bad_seed_and_huge_request_name_the_argument():
    with pytest.raises(ValueError, match="'random_state' parameter .*Got -1 instead"):
        make_gp_functions(2, 5, random_state=-1)
    with pytest.raises(MemoryError, match="Not enough memory for n_functions=1000000000000 "
                       "functions.*draw fewer or smaller functions"):
        make_gp_functions(10**12, 5)


def test_anisotropic_draws_one_lengthscale_per_dimension():
    """``anisotropic=True``: each dimension's lengthscale is drawn on its own (one call of a
    callable per dimension), the covariance is the ARD kernel, and the isotropic stream is
    unchanged by the option's existence."""
    X = np.array([[-1.0, -1.0], [-0.2, -1.0], [-1.0, -0.2], [0.5, 0.2]])
    calls = []

    def per_dim(rng, n):  # dimension 0 short, dimension 1 long
        calls.append(n)
        return np.full(n, 0.4 if len(calls) == 1 else 2.0)

    d = make_gp_functions(20_000, None, X=X, lengthscale=per_dim, anisotropic=True,
                          noise=0.0, random_state=0)
    assert calls == [20_000, 20_000] and d.lengthscale.shape == (20_000, 2)
    np.testing.assert_array_equal(d.lengthscale[0], [0.4, 2.0])
    K = gp_kernel(X / [0.4, 2.0], X / [0.4, 2.0], "se", 1.0)
    np.testing.assert_allclose(_emp_cov(d.f), K, atol=0.06)
    # the same step along the short dimension decorrelates more than along the long one
    assert K[0, 1] < 0.5 < K[0, 2]
    # distribution draws: per function and dimension, independent
    d = make_gp_functions(5000, 20, n_dims=3, lengthscale=("lognormal", 0.0, 0.5),
                          anisotropic=True, random_state=0)
    logs = np.log(d.lengthscale)
    assert abs(logs.std() - 0.5) < 0.02 and abs(np.corrcoef(logs[:, 0], logs[:, 1])[0, 1]) < 0.05
    # padded dimensions carry no lengthscale
    d = make_gp_functions(50, 10, n_dims=(1, 3), anisotropic=True, random_state=0)
    pad = np.arange(3)[None, :] >= d.n_dims[:, None]
    assert pad.any() and np.all(d.lengthscale[pad] == 0) and np.all(d.lengthscale[~pad] > 0)
    iso = make_gp_functions(8, 12, n_dims=2, lengthscale=("lognormal", 0.0, 0.5),
                            random_state=3)
    same = make_gp_functions(8, 12, n_dims=2, lengthscale=("lognormal", 0.0, 0.5),
                             anisotropic=False, random_state=3)
    np.testing.assert_array_equal(iso.y, same.y)
    with pytest.raises(ValueError, match="'periodic' kernel does not take"):
        make_gp_functions(2, 5, n_dims=2, kernel=["se", "periodic"], anisotropic=True)


def test_ranges_refuse_booleans_and_a_singular_kernel_names_jitter():
    with pytest.raises(ValueError, match=r"'n_points' must be an int or a \(low, high\) pair"):
        make_gp_functions(2, (True, 3), 1, random_state=0)
    with pytest.raises(ValueError, match=r"'n_dims' must be an int or a \(low, high\) pair"):
        make_gp_functions(2, 5, (True, True), random_state=0)
    X = np.zeros((4, 1))  # repeated inputs: a singular kernel matrix without jitter
    with pytest.raises(ValueError, match=r"not positive definite .*jitter=0.0\); raise "
                                         r"'jitter'"):
        make_gp_functions(1, None, X=X, jitter=0.0, random_state=0)
