"""Functions drawn from Gaussian-process priors (the training data of NDP priors)."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import StrOptions, validate_params

from .._checks import Interval, memory_for

__all__ = ["KERNELS", "check_anisotropic", "gp_kernel", "make_gp_functions"]

#: Kernel names understood by :func:`make_gp_functions` and :func:`gp_kernel`.
KERNELS = ("se", "matern12", "matern32", "matern52", "periodic")


def _stationary(name, r):
    """Unit-variance correlation as a function of the scaled distance ``r`` (any shape)."""
    if name == "se":
        return np.exp(-0.5 * r**2)
    if name == "matern12":
        return np.exp(-r)
    if name == "matern32":
        s = np.sqrt(3.0) * r
        return (1.0 + s) * np.exp(-s)
    if name == "matern52":
        s = np.sqrt(5.0) * r
        return (1.0 + s + s**2 / 3.0) * np.exp(-s)
    raise ValueError(f"Unknown kernel {name!r}; choose from {KERNELS}.")


def gp_kernel(X1, X2, kernel="se", lengthscale=1.0, variance=1.0, period=1.0):
    r"""Evaluate a stationary kernel, batched over leading axes.

    With :math:`r = \lVert x - x' \rVert / \ell` (isotropic):

    * ``"se"``: :math:`\sigma^2 \exp(-r^2/2)`
    * ``"matern12"``: :math:`\sigma^2 \exp(-r)`
    * ``"matern32"``: :math:`\sigma^2 (1 + \sqrt3 r) \exp(-\sqrt3 r)`
    * ``"matern52"``: :math:`\sigma^2 (1 + \sqrt5 r + 5r^2/3) \exp(-\sqrt5 r)`
    * ``"periodic"``: :math:`\sigma^2 \exp\big(-2 \sum_d \sin^2(\pi |x_d - x'_d| / p) /
      \ell^2\big)` (sklearn's ``ExpSineSquared`` for one dimension).

    Parameters
    ----------
    X1 : ndarray of shape (..., n, d)
    X2 : ndarray of shape (..., m, d)
    kernel : str, default="se"
    lengthscale, variance, period : float or ndarray broadcastable to ``X1.shape[:-2]``

    Returns
    -------
    K : ndarray of shape (..., n, m)
    """
    X1 = np.asarray(X1, dtype=np.float64)
    X2 = np.asarray(X2, dtype=np.float64)
    batch = np.broadcast_shapes(X1.shape[:-2], X2.shape[:-2])
    ls = np.broadcast_to(np.asarray(lengthscale, dtype=np.float64), batch)[..., None, None]
    var = np.broadcast_to(np.asarray(variance, dtype=np.float64), batch)[..., None, None]
    diff = X1[..., :, None, :] - X2[..., None, :, :]  # [..., n, m, d]
    if kernel == "periodic":
        per = np.broadcast_to(np.asarray(period, dtype=np.float64), batch)[..., None, None, None]
        s = np.sum(np.sin(np.pi * np.abs(diff) / per) ** 2, axis=-1)
        return var * np.exp(-2.0 * s / ls**2)
    r = np.sqrt(np.sum(diff**2, axis=-1)) / ls
    return var * _stationary(kernel, r)


def _draw_lengthscales(lengthscale, n, rng):
    """Per-function lengthscales from a number, a distribution tuple or a callable."""
    if isinstance(lengthscale, numbers.Real) and not isinstance(lengthscale, bool):
        ls = np.full(n, float(lengthscale))
    elif callable(lengthscale):
        ls = np.asarray(lengthscale(rng, n), dtype=np.float64).reshape(-1)
        if ls.shape != (n,):
            raise ValueError(
                f"A callable 'lengthscale' must return {n} values (one per function); got "
                f"shape {ls.shape}."
            )
    elif isinstance(lengthscale, tuple) and len(lengthscale) == 3 and lengthscale[0] in (
        "lognormal", "uniform", "loguniform"
    ):
        kind, a, b = lengthscale
        if kind == "lognormal":
            ls = np.exp(rng.normal(float(a), float(b), size=n))
        elif kind == "uniform":
            ls = rng.uniform(float(a), float(b), size=n)
        else:
            ls = np.exp(rng.uniform(np.log(float(a)), np.log(float(b)), size=n))
    else:
        raise ValueError(
            "'lengthscale' must be a positive number, a tuple ('lognormal', mu, sigma), "
            "('uniform', low, high) or ('loguniform', low, high), or a callable rng, n -> "
            f"array; got {lengthscale!r}."
        )
    if not np.all(np.isfinite(ls) & (ls > 0)):
        raise ValueError(f"'lengthscale' values must be finite and > 0; got min {ls.min():g}.")
    return ls


def _as_range(value, name):
    """An int or (low, high) pair of ints -> (low, high) inclusive."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        lo = hi = int(value)
    elif isinstance(value, tuple | list) and len(value) == 2 and all(
        isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value
    ):
        lo, hi = int(value[0]), int(value[1])
    else:
        raise ValueError(f"'{name}' must be an int or a (low, high) pair of ints; got {value!r}.")
    if lo < 1 or hi < lo:
        raise ValueError(f"'{name}' must satisfy 1 <= low <= high; got {value!r}.")
    return lo, hi


def check_anisotropic(anisotropic, kernels):
    """Refuse ``anisotropic=True`` with the ``"periodic"`` kernel, which takes one
    lengthscale for all input dimensions (checked by :func:`make_gp_functions` and by
    ``PriorConfig``, which draws through it)."""
    if anisotropic and "periodic" in kernels:
        raise ValueError("anisotropic=True draws one lengthscale per input dimension, which "
                         "the 'periodic' kernel does not take; drop 'periodic' from 'kernel' "
                         "or set anisotropic=False.")


def _checked_prior(kernel, domain):
    """The kernel names (a list) and the domain bounds ``(low, high)``, all checked."""
    kernels = [kernel] if isinstance(kernel, str) else list(kernel)
    if not kernels or any(not isinstance(k, str) or k not in KERNELS for k in kernels):
        raise ValueError(
            f"'kernel' must be one of {KERNELS} or a list of them; got {kernel!r}."
        )
    if not (len(domain) == 2 and all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                                     and np.isfinite(v) for v in domain)
            and domain[1] > domain[0]):
        raise ValueError(f"'domain' must be (low, high), two finite numbers with low < high; "
                         f"got {domain!r}.")
    return kernels, float(domain[0]), float(domain[1])


def _layout(n_points, n_dims, X, n, rng):
    """Per-function point counts and input dimensions, and the fixed inputs (``None``: draw)."""
    if X is None:
        p_lo, p_hi = _as_range(n_points, "n_points")
        d_lo, d_hi = _as_range(n_dims, "n_dims")
        return rng.randint(p_lo, p_hi + 1, size=n), rng.randint(d_lo, d_hi + 1, size=n), None
    X_fixed = np.asarray(X, dtype=np.float64)
    if X_fixed.ndim == 2:
        X_fixed = np.broadcast_to(X_fixed, (n,) + X_fixed.shape)
    if X_fixed.ndim != 3 or X_fixed.shape[0] != n or not np.all(np.isfinite(X_fixed)):
        raise ValueError(
            "'X' must be a finite array of shape (n_points, n_dims) or (n_functions, "
            f"n_points, n_dims) with n_functions={n}; got shape {X_fixed.shape}."
        )
    return np.full(n, X_fixed.shape[1]), np.full(n, X_fixed.shape[2]), X_fixed


def _padded_kernels(X, mask, kernels, which, ls, *, variance, period, jitter):
    """The (n, P, P) kernel matrices of the padded batch, jittered, padding decoupled."""
    # Padded dimensions are zero so they add no distance; padded points are decoupled
    # (identity rows) so they do not touch the real ones.
    n, P = mask.shape
    K = np.empty((n, P, P))
    for k_idx, name in enumerate(kernels):  # loop over kernel *types*, not samples
        sel = which == k_idx
        if sel.any():
            K[sel] = gp_kernel(X[sel], X[sel], name, ls[sel], variance, period)
    pair_pad = mask[:, :, None] | mask[:, None, :]
    K = np.where(pair_pad, 0.0, K)
    K[:, np.arange(P), np.arange(P)] += np.where(mask, 1.0, jitter)
    return K


_POSITIVE_INT = Interval(numbers.Integral, 1, None, closed="left")


@validate_params(
    {
        "n_functions": [_POSITIVE_INT],
        "n_points": [_POSITIVE_INT, tuple, list, None],
        "n_dims": [_POSITIVE_INT, tuple, list, None],
        "kernel": [StrOptions(set(KERNELS)), list, tuple],
        "lengthscale": [Interval(numbers.Real, 0, None, closed="neither", finite=True), tuple,
                        callable],
        "anisotropic": ["boolean"],
        "variance": [Interval(numbers.Real, 0, None, closed="neither", finite=True)],
        "noise": [Interval(numbers.Real, 0, None, closed="left", finite=True)],
        "domain": [tuple, list],
        "period": [Interval(numbers.Real, 0, None, closed="neither", finite=True)],
        "jitter": [Interval(numbers.Real, 0, None, closed="left", finite=True)],
        "X": ["array-like", None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_gp_functions(n_functions, n_points, n_dims=1, *, kernel="se", lengthscale=0.25,
                      anisotropic=False, variance=1.0, noise=0.0025, domain=(-2.0, 2.0),
                      period=1.0, jitter=1e-6, X=None, random_state=None):
    r"""Draw noisy function values from Gaussian-process priors.

    For each function :math:`i`: inputs :math:`x_{i,1..n_i} \sim \mathcal{U}(\text{domain})^{d_i}`,
    a kernel :math:`k_i` and lengthscale :math:`\ell_i` as requested,
    :math:`f_i \sim \mathcal{N}(0, K_i + \text{jitter}\, I)` and, independently of :math:`f`,
    :math:`y_i = f_i + \sqrt{\text{noise}}\, \varepsilon_i` with :math:`\varepsilon_i \sim
    \mathcal{N}(0, I)` (as the released NDP data: the noise is not part of the kernel). All
    functions are drawn at once with one batched Cholesky factorisation.

    Parameters
    ----------
    n_functions : int
        Number of functions.
    n_points : int or (int, int)
        Points per function; a ``(low, high)`` pair draws each function's count uniformly in the
        inclusive range.
    n_dims : int or (int, int), default=1
        Input dimensions; a ``(low, high)`` pair draws each function's dimension uniformly.
    kernel : str or list of str, default="se"
        One of ``"se"``, ``"matern12"``, ``"matern32"``, ``"matern52"``, ``"periodic"``; a list
        draws each function's kernel uniformly from it (a mixture prior).
    lengthscale : float, tuple or callable, default=0.25
        A fixed number, or a distribution of the per-function (isotropic) lengthscale:
        ``("lognormal", mu, sigma)`` (:math:`\log \ell \sim \mathcal{N}(\mu, \sigma^2)`),
        ``("uniform", low, high)``, ``("loguniform", low, high)``, or a callable
        ``f(rng, n) -> array of n lengthscales`` (``rng`` is a ``numpy.random.RandomState``).
    anisotropic : bool, default=False
        Draw one lengthscale per input dimension, independently from ``lengthscale``
        (automatic relevance determination: :math:`r^2 = \sum_d (x_d - x'_d)^2 /
        \ell_{i,d}^2`), instead of one per function. Not with the ``"periodic"`` kernel.
    variance : float, default=1.0
        Kernel variance :math:`\sigma^2`.
    noise : float, default=0.0025
        Observation-noise *variance*, added independently of ``f``.
    domain : (float, float), default=(-2.0, 2.0)
        Interval of every input dimension.
    period : float, default=1.0
        Period of the ``"periodic"`` kernel.
    jitter : float, default=1e-6
        Added to the kernel diagonal for a stable Cholesky factorisation.
    X : array-like of shape (n_points, n_dims) or (n_functions, n_points, n_dims), default=None
        Fixed inputs (e.g. a grid) instead of uniform draws; ``n_points``, ``n_dims`` and
        ``domain`` are then ignored.
    random_state : int, RandomState instance or None, default=None
        Seed of the draw.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Padded arrays (functions with fewer points or dimensions than the largest are padded
        with zeros; use ``mask`` and ``n_dims``):

        - ``X`` : ndarray of shape (n_functions, max_points, max_dims)
        - ``y`` : ndarray of shape (n_functions, max_points), noisy values
        - ``f`` : ndarray of shape (n_functions, max_points), noise-free values
        - ``mask`` : bool ndarray of shape (n_functions, max_points), True marks padding
        - ``n_points``, ``n_dims`` : int ndarrays of shape (n_functions,)
        - ``kernel`` : str ndarray of shape (n_functions,)
        - ``lengthscale`` : ndarray of shape (n_functions,), or (n_functions, max_dims)
          with ``anisotropic`` (zero on padded dimensions)

    See Also
    --------
    gp_kernel : evaluates the kernels used here.

    References
    ----------
    Dutordoir et al., "Neural Diffusion Processes", ICML 2023, §5.1 (the regression data sets).
    Rasmussen & Williams, "Gaussian Processes for Machine Learning", 2006, Eq. 4.14-4.17.

    Examples
    --------
    >>> from skdiff.datasets import make_gp_functions
    >>> data = make_gp_functions(4, 60, kernel=["se", "matern52"],
    ...                          lengthscale=("lognormal", -1.0, 0.5), random_state=0)
    >>> data.X.shape, data.y.shape, bool(data.mask.any())
    ((4, 60, 1), (4, 60), False)
    >>> data = make_gp_functions(3, (5, 10), n_dims=2, random_state=0)
    >>> data.X.shape[2], (~data.mask).sum(axis=1).tolist() == data.n_points.tolist()
    (2, True)
    """
    rng = check_random_state(random_state)
    kernels, lo, hi = _checked_prior(kernel, domain)
    check_anisotropic(anisotropic, kernels)
    n = int(n_functions)
    with memory_for(f"n_functions={n_functions} functions of n_points={n_points} points in "
                    f"n_dims={n_dims} dimensions",
                    "draw fewer or smaller functions, in several calls if need be"):
        return _draw(n, n_points, n_dims, X, kernels, lengthscale, lo, hi,
                     anisotropic=anisotropic, variance=variance, noise=noise, period=period,
                     jitter=jitter, rng=rng)


def _draw(n, n_points, n_dims, X, kernels, lengthscale, lo, hi, *, anisotropic, variance,
          noise, period, jitter, rng):
    """The body of :func:`make_gp_functions`, on checked arguments."""
    counts, dims, X_fixed = _layout(n_points, n_dims, X, n, rng)
    which = rng.randint(len(kernels), size=n)
    P, Dm = int(counts.max()), int(dims.max())
    mask = np.arange(P)[None, :] >= counts[:, None]  # [b, n], True = padding
    dmask = np.arange(Dm)[None, :] < dims[:, None]  # [b, d], True = real dimension
    if anisotropic:  # one draw of n lengthscales per dimension, zero on padded dimensions
        ls = np.where(dmask, np.stack([_draw_lengthscales(lengthscale, n, rng)
                                       for _ in range(Dm)], axis=1), 0.0)
    else:
        ls = _draw_lengthscales(lengthscale, n, rng)
    names = np.array(kernels, dtype=object)[which].astype(str)

    X = rng.uniform(lo, hi, size=(n, P, Dm)) if X_fixed is None else X_fixed.copy()
    X = np.where(mask[:, :, None] | ~dmask[:, None, :], 0.0, X)  # zero padding

    if anisotropic:  # dividing each dimension by its lengthscale, the kernel's is 1
        X_k = X / np.where(dmask, ls, 1.0)[:, None, :]
        K = _padded_kernels(X_k, mask, kernels, which, np.ones(n), variance=variance,
                            period=period, jitter=jitter)
    else:
        K = _padded_kernels(X, mask, kernels, which, ls, variance=variance, period=period,
                            jitter=jitter)
    try:
        L = np.linalg.cholesky(K)  # batched over functions
    except np.linalg.LinAlgError as exc:
        raise ValueError(
            f"The kernel matrix of a function's values is not positive definite (repeated "
            f"or nearly repeated inputs, with jitter={jitter!r}); raise 'jitter' (the "
            "default is 1e-6).") from exc
    f = np.einsum("bij,bj->bi", L, rng.standard_normal((n, P)))
    y = f + np.sqrt(noise) * rng.standard_normal((n, P))
    f = np.where(mask, 0.0, f)
    y = np.where(mask, 0.0, y)
    return Bunch(X=X, y=y, f=f, mask=mask, n_points=counts, n_dims=dims, kernel=names,
                 lengthscale=ls)
