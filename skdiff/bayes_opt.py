"""Bayesian optimisation by Thompson sampling over joint posterior function samples.

The paper's experiment (Dutordoir et al., 2023, Sec. 5.3): at every iteration, draw one joint
sample of the objective on a random candidate set from the model's posterior given the
evaluations so far, and evaluate the objective where that sample is lowest. With an
:class:`~skdiff.NDPRegressor` the prior network is pretrained, so "refitting" at each iteration
only stores the new context: there is no retraining between iterations.

Any regressor with ``sample_y(X, n_samples, random_state)`` works as the model, e.g.
``sklearn.gaussian_process.GaussianProcessRegressor`` (which refits its kernel by ML-II each
iteration); ``model="random"`` gives random search (one of the uniform candidates).

The paper draws the candidates uniformly over the box. In two or more dimensions this
function draws half of them around the best point so far instead (``local_fraction``), as
trust-region and local-search Thompson samplers do (TuRBO, BoTorch's perturbed
candidates): there a few dozen uniform points rarely fall close enough to a minimum to
refine it. In one dimension uniform candidates are already dense, and all are uniform.

The values can be warped by a monotone transform before every fit (``y_transform``): the
lowest point of a sample is the same on either scale, so nothing is transformed back. The
samples of a pretrained NDP prior carry a noise floor on the standardised values: the
prior's observation noise (5 % of the signal's standard deviation) and the network's own
jitter between nearby points. On a skewed objective (a few large values, a flat valley)
the values near the minimum differ by less than that and the samples cannot tell them
apart. The Yeo-Johnson power transform (:class:`~sklearn.preprocessing.PowerTransformer`
on the standardised values, as HEBO applies it) makes the values roughly Gaussian first and
spreads the valley out. Its exponent is capped at 1: values skewed the other way (a narrow
dip below a plateau) would get an exponent above 1, which squeezes the low values together,
where the minimum is; at the cap the transform is the identity.

The same noise floor blurs the single sample Thompson sampling ranks the candidates by.
``denoise=True`` (or ``"auto"``, on for such a model) builds the draw from several joint
samples instead, their mean plus the first sample's deviation from it kept only along the
directions in which the samples vary more than white noise would (principal components
above the Marchenko-Pastur edge). The function-level spread of the posterior, which drives
exploration, lives in a few smooth directions and stays; the jitter, spread evenly over all
directions, mostly goes. It is off by default: on the functions the defaults were chosen
on it did not lower the regret beyond the noise, at several times the cost per iteration.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import HasMethods, StrOptions, validate_params

from ._checks import Interval, memory_for

__all__ = ["branin", "hartmann3", "thompson_sampling"]

_H3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_H3_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547],
                         [381, 5743, 8828]])
_H3_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
#: Global minimum of :func:`hartmann3` on [0, 1]^3.
HARTMANN3_MIN = -3.86278
#: The usual search box of :func:`branin`: :math:`[-5, 10] \times [0, 15]`.
BRANIN_BOUNDS = ((-5.0, 10.0), (0.0, 15.0))
#: Global minimum of :func:`branin` (reached at three points of :data:`BRANIN_BOUNDS`).
BRANIN_MIN = 0.397887


def _points(X, d, name):
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    if X.shape[-1] != d:
        raise ValueError(f"'X' must hold points of dimension {d}, of shape (n, {d}), for "
                         f"{name}; got shape {X.shape}.")
    return X


@validate_params({"X": ["array-like"]}, prefer_skip_nested_validation=True)
def hartmann3(X):
    """The 3-D Hartmann function on :math:`[0, 1]^3` (minimum -3.86278 at
    (0.1146, 0.5556, 0.8525)): :math:`f(x) = -\\sum_{i=1}^4 \\alpha_i
    \\exp(-\\sum_{j=1}^3 A_{ij}(x_j - P_{ij})^2)`.

    Parameters
    ----------
    X : array-like of shape (n, 3)
        Points of the unit cube (a single point of shape (3,) is one row).

    Returns
    -------
    f : ndarray of shape (n,)
        The function's value at every point.
    """
    X = _points(X, 3, "hartmann3")
    d2 = (_H3_A[None] * (X[:, None, :] - _H3_P[None]) ** 2).sum(-1)  # [n, 4]
    return -(np.exp(-d2) * _H3_ALPHA).sum(-1)


@validate_params({"X": ["array-like"]}, prefer_skip_nested_validation=True)
def branin(X):
    """The 2-D Branin(-Hoo) function on its usual box :math:`[-5, 10] \\times [0, 15]`
    (:data:`BRANIN_BOUNDS`), with three global minima of 0.397887 at
    :math:`(-\\pi, 12.275)`, :math:`(\\pi, 2.275)` and :math:`(9.42478, 2.475)`:
    :math:`f(x) = (x_2 - \\tfrac{5.1}{4\\pi^2} x_1^2 + \\tfrac{5}{\\pi} x_1 - 6)^2
    + 10 (1 - \\tfrac{1}{8\\pi}) \\cos x_1 + 10`.

    Parameters
    ----------
    X : array-like of shape (n, 2)
        Points (a single point of shape (2,) is one row).

    Returns
    -------
    f : ndarray of shape (n,)
        The function's value at every point.
    """
    X = _points(X, 2, "branin")
    x1, x2 = X[:, 0], X[:, 1]
    return ((x2 - 5.1 / (4 * np.pi**2) * x1**2 + 5 / np.pi * x1 - 6) ** 2
            + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x1) + 10)


def _resolve_y_transform(y_transform, model):
    """The transformer ``thompson_sampling`` fits to the values (None: the values as
    they are)."""
    if isinstance(model, str):  # random search fits nothing
        return None
    if y_transform == "auto":
        y_transform = "power" if _standardises_with_fixed_noise(model) else None
    if y_transform == "power":
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        # standardised first: the Yeo-Johnson transform is not scale-equivariant, so this
        # makes the warped values independent of the objective's units
        return make_pipeline(StandardScaler(), _CappedYeoJohnson())
    return None if y_transform is None else clone(y_transform)


class _CappedYeoJohnson(TransformerMixin, BaseEstimator):
    """The Yeo-Johnson transform with its maximum-likelihood exponent capped at
    ``max_lambda``, then standardised.

    An exponent below 1 stretches the low values and compresses the high ones; above 1 it
    does the opposite. Thompson sampling looks for the minimum, so the values near it must
    stay apart: with the cap at 1 the transform spreads out a valley under a few very large
    values and leaves values skewed the other way (a narrow dip below a plateau) as they
    are (an exponent of 1 is the identity)."""

    def __init__(self, max_lambda=1.0):
        self.max_lambda = max_lambda

    def fit(self, y, _=None):
        from sklearn.preprocessing import PowerTransformer, StandardScaler

        self.power_ = PowerTransformer(standardize=False).fit(y)
        self.power_.lambdas_ = np.minimum(self.power_.lambdas_, self.max_lambda)
        self.scaler_ = StandardScaler().fit(self.power_.transform(y))
        return self

    def transform(self, y):
        return self.scaler_.transform(self.power_.transform(y))


#: Joint samples per iteration that ``denoise`` builds one Thompson draw from.
DENOISE_SAMPLES = 8


def _denoised_draw(samples):
    """One Thompson draw from joint samples (n_points, k): their mean plus the first sample's
    deviation from it projected onto the principal directions whose singular value exceeds
    what white noise reaches.

    For white noise of one variance at ``n`` points and ``r = k - 1`` centred samples, the
    singular values lie within ``sqrt(n) +/- sqrt(r)`` times its standard deviation
    (Marchenko-Pastur), so a ratio to the smallest above ``(sqrt(n) + sqrt(r)) / (sqrt(n) -
    sqrt(r))`` marks a direction the samples share beyond their jitter. With no such
    direction the draw is the mean; with ``n <= r`` it is the first sample.
    """
    n, k = samples.shape
    r = k - 1
    if r < 1 or n <= r:
        return samples[:, 0]
    mean = samples.mean(1)
    dev = samples - mean[:, None]
    u, sv, _ = np.linalg.svd(dev, full_matrices=False)
    edge = (np.sqrt(n) + np.sqrt(r)) / (np.sqrt(n) - np.sqrt(r))
    keep = u[:, :r][:, sv[:r] > edge * sv[r - 1]]
    return mean + keep @ (keep.T @ dev[:, 0])


def _standardises_with_fixed_noise(model):
    """Whether ``model`` is an NDPRegressor that standardises the values onto a prior trained
    on GP draws with a fixed noise: a registered prior, or a TrainedPrior not trained on a
    family of functions (such a prior brings its family's units, which a transform would
    leave). A path is not opened here: it counts as a family's prior."""
    from .diffusion import TrainedPrior
    from .diffusion.priors import PRIORS
    from .ndp import NDPRegressor

    if not isinstance(model, NDPRegressor) or not model.normalize_y:
        return False
    prior = model.prior
    if isinstance(prior, TrainedPrior):
        return not prior.config.from_functions
    return isinstance(prior, str) and prior in PRIORS


def _warped(transform, y):
    """``y`` through a fresh fit of ``transform`` (equal values stay as they are: there is no
    spread to standardise)."""
    if transform is None or np.ptp(y) == 0:
        return y
    z = np.asarray(clone(transform).fit_transform(y.reshape(-1, 1)), dtype=np.float64)
    if z.shape not in ((len(y), 1), (len(y),)) or not np.all(np.isfinite(z)):
        raise ValueError(f"'y_transform' must map the {len(y)} values to {len(y)} finite "
                         f"values; got shape {z.shape}. Pass a transformer of one column, "
                         "e.g. sklearn.preprocessing.PowerTransformer().")
    z = z.ravel()
    if np.any(np.diff(z[np.argsort(y, kind="stable")]) < 0):
        raise ValueError("'y_transform' must be monotone increasing (the lowest value must "
                         f"stay lowest); {type(transform).__name__} reorders the values. Pass "
                         "an increasing transform, e.g. sklearn.preprocessing.PowerTransformer().")
    return z


@validate_params(
    {
        "objective": [callable],
        "bounds": ["array-like"],
        "model": [None, StrOptions({"random"}), HasMethods(["fit", "sample_y"])],
        "n_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_candidates": [Interval(numbers.Integral, 1, None, closed="left")],
        "local_fraction": [StrOptions({"auto"}), Interval(numbers.Real, 0, 1, closed="left")],
        "y_transform": [None, StrOptions({"auto", "power"}),
                        HasMethods(["fit_transform"])],
        "denoise": [StrOptions({"auto"}), "boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    },
    # the model's own fit validates its parameters
    prefer_skip_nested_validation=False,
)
def thompson_sampling(objective, bounds, *, model=None, n_iter=20, n_init=3, n_candidates=64,
                      local_fraction="auto", y_transform="auto", denoise=False, random_state=None,
                      verbose=0):
    """Minimise a black-box ``objective`` by Thompson sampling on random candidate sets.

    Parameters
    ----------
    objective : callable
        ``objective(X)`` with ``X`` of shape (n, d) returns (n,) values to minimise.
    bounds : array-like of shape (d, 2)
        Box of the search space.
    model : estimator, "random" or None, default=None
        A regressor with ``fit`` and ``sample_y``; ``None`` uses
        ``NDPRegressor(x_bounds=bounds, alpha=0, sampler="tweedie")``: the bounds fix the
        input map, so every iteration conditions the same prior, and the evaluations are
        taken as exact up to the prior's small noise floor, as suits a deterministic
        objective (for a noisy one pass ``NDPRegressor(x_bounds=bounds,
        sampler="tweedie")``, whose ``alpha="auto"`` estimates the noise). The Tweedie
        correction conditions every step of the sampler on the evaluations through the
        ``gp`` prior's Gaussian components, so the samples pass close to the evaluations,
        which RePaint's noised copies of them (the ``"fast"`` path that
        ``NDPRegressor(sampler="auto")`` takes with this prior) do not. It was chosen on the
        two 2-D functions the other defaults were chosen on (10 seeds, 30 evaluations, half
        local candidates): six-hump camel 0.073 -> 0.025 (paired -0.048 ± 0.024),
        Goldstein-Price 23.2 -> 19.4 (paired -3.8 ± 6.4, within the noise), with 55
        network evaluations per call instead of 141. ``"random"``: random search, a
        uniform candidate.
    n_iter : int, default=20
        Evaluations after the initial design.
    n_init : int, default=3
        Uniform random initial evaluations (at least 2 for an
        :class:`~skdiff.NDPRegressor` model that standardises ``y``, the default).
    n_candidates : int, default=64
        Fresh candidates per iteration, sampled jointly (see ``local_fraction``).
    local_fraction : "auto" or float in [0, 1), default="auto"
        Share of the candidates drawn around the best point so far instead of uniformly
        over the box (rounded; at least one candidate stays uniform): the best point plus
        Gaussian noise whose scale per coordinate is the box's width times a factor drawn
        log-uniformly between 0.01 and 0.2 for each candidate, clipped to the box. Uniform
        candidates explore; local ones refine the best point, which a few dozen uniform
        points in two or more dimensions rarely come close to. ``"auto"``: 0.5 in two or
        more dimensions, 0 in one. ``0``: uniform candidates only, as in the paper. Chosen
        on two 2-D functions (six-hump camel and Goldstein-Price, 10 seeds, 30
        evaluations), where half local candidates lowered the mean regret of a
        :class:`~sklearn.gaussian_process.GaussianProcessRegressor` (camel 0.300 -> 0.061,
        Goldstein-Price 25.6 -> 19.2) and of the default model (camel 0.251 -> 0.025,
        Goldstein-Price 27.1 -> 19.4; with the fast sampler camel 0.159 -> 0.073,
        Goldstein-Price 22.1 -> 23.2, within its noise). On the held-out Hartmann-3 and
        Branin (20 seeds) they help the GPR far more than the default model, whose regret
        they raise (0.099 -> 0.245 and 0.118 -> 0.174); on two 3-D functions added after
        the default was fixed they lower it (Styblinski-Tang 18.5 -> 12.0, Rosenbrock
        6.7 -> 4.6, 20 seeds). A run that settles in a poor basin stays there more often;
        in one dimension, local candidates only make that likelier.
    y_transform : {"auto", "power"}, transformer or None, default="auto"
        A monotone increasing transform the model is fitted to instead of the values
        (refitted to all values at every iteration; the candidate a sample ranks lowest is
        the same on either scale). ``"power"``: the values standardised, then the
        Yeo-Johnson transform with its maximum-likelihood exponent capped at 1, then
        standardised again (as ``make_pipeline(StandardScaler(), PowerTransformer())``
        when the exponent is at most 1; an exponent above 1 would squeeze the lowest
        values together, so the cap leaves such values as they are), so that the
        objective's units do not matter; a
        transformer: any scikit-learn transformer that is monotone increasing (cloned,
        fitted on the values as one column); ``None``: the values as they are.
        ``"auto"``: ``"power"`` for an :class:`~skdiff.NDPRegressor` with a shipped prior
        (the default model included) or another prior trained on GP draws, which assumes
        a fixed observation noise on the standardised values; ``None`` for a prior
        trained on a family of functions (given as a ``TrainedPrior`` or a path: it brings
        the family's units) and for other models, which fit their own noise. Random search
        ignores it.
    denoise : "auto" or bool, default=False
        Rank the candidates by a draw built from ``DENOISE_SAMPLES`` (8) joint samples
        instead of one: their mean plus the first sample's deviation from it along the
        principal directions in which the samples vary more than white noise would (module
        docstring). It removes most of the jitter a sample carries from point to point and
        keeps its function-level spread, at 8 samples' cost per iteration. ``"auto"``: on
        for the models ``y_transform="auto"`` transforms (an :class:`~skdiff.NDPRegressor`
        on a prior trained on GP draws, whose samples carry a noise floor), off for others,
        whose samples are exact draws of their posterior. ``False`` (the default) ranks by
        one joint sample, as the paper does: with an NDP on the shipped ``gp`` prior and
        the fast sampler, the denoised draw did not lower the mean regret after 30
        evaluations on the two 2-D functions the defaults were chosen on (10 seeds each,
        paired: six-hump camel 0.243 -> 0.251, Goldstein-Price 20.7 -> 35.4) and took six
        times as long per iteration; on Hartmann-3 it lowered it (0.188 -> 0.141), on
        Branin not (0.277 -> 0.332). With the default model (Tweedie-corrected sampler)
        and half local candidates it stayed within the noise on those two functions
        (camel 0.025 -> 0.018, Goldstein-Price 19.4 -> 18.7, at four times the CPU time
        per run) and on the held-out Hartmann-3 (0.245 -> 0.217) and Branin (0.174 ->
        0.102, 20 seeds each). Random search ignores it.
    random_state : int, RandomState or None, default=None
        Seeds the initial design, the candidate sets, the default model's
        ``random_state`` and every ``sample_y`` draw, so an int repeats the whole run (a
        given ``model`` keeps its own ``random_state`` for ``fit``).
    verbose : int, default=0
        Print the best value after every iteration.

    Returns
    -------
    result : Bunch
        ``X`` (n_init + n_iter, d) and ``y`` evaluated points and values, ``best_so_far``
        (n_init + n_iter,) running minimum, ``x_best``, ``y_best``.

    Examples
    --------
    >>> from sklearn.gaussian_process import GaussianProcessRegressor
    >>> from skdiff.bayes_opt import hartmann3, thompson_sampling
    >>> res = thompson_sampling(hartmann3, [(0, 1)] * 3, model="random", n_iter=5,
    ...                         random_state=0)
    >>> res.X.shape, res.best_so_far.shape
    ((8, 3), (8,))
    """
    rng = check_random_state(random_state)
    try:
        b = np.asarray(bounds, dtype=np.float64)
    except (TypeError, ValueError):
        b = np.empty(0)
    if b.ndim != 2 or b.shape[1] != 2 or not np.all(np.isfinite(b)) \
            or not np.all(b[:, 1] > b[:, 0]):
        raise ValueError(f"'bounds' must be finite numbers of shape (d, 2) with low < high; "
                         f"got {bounds!r}.")
    d = b.shape[0]
    from .ndp import NDPRegressor

    if model is None:
        model = NDPRegressor(x_bounds=b, alpha=0.0, sampler="tweedie",
                             random_state=rng.randint(2**31 - 1))
    elif not isinstance(model, str):
        model = clone(model)
    if n_init < 2 and n_iter and isinstance(model, NDPRegressor) and model.normalize_y:
        # refused before any evaluation: the first fit would fail after spending one
        raise ValueError(
            f"n_init={n_init}: the NDPRegressor model is first fitted to the n_init initial "
            "evaluations and standardises their values, which takes at least 2; pass "
            "n_init >= 2.")

    def uniform(n, name):
        with memory_for(f"{name}={n} points in {d} dimensions", f"use a smaller {name}"):
            return b[:, 0] + (b[:, 1] - b[:, 0]) * rng.uniform(size=(n, d))

    def evaluate(X):
        values = np.asarray(objective(X), dtype=np.float64)
        if values.shape not in ((len(X),), (len(X), 1)) or not np.all(np.isfinite(values)):
            raise ValueError(
                f"'objective' must return one finite value per point, of shape ({len(X)},); "
                f"got shape {values.shape} with values {values.ravel()[:4]!r} for "
                f"{len(X)} points: check the objective."
            )
        return values.ravel()

    transform = _resolve_y_transform(y_transform, model)
    if denoise == "auto":
        denoise = not isinstance(model, str) and _standardises_with_fixed_noise(model)
    n_draws = DENOISE_SAMPLES if denoise else 1

    X = uniform(n_init, "n_init")
    y = evaluate(X)
    if local_fraction == "auto":
        local_fraction = 0.5 if d >= 2 else 0.0
    # at least one uniform candidate, which random search picks
    n_local = min(int(round(local_fraction * n_candidates)), n_candidates - 1)
    for it in range(n_iter):
        cand = uniform(n_candidates, "n_candidates")
        if n_local:
            scale = np.exp(rng.uniform(np.log(0.01), np.log(0.2), size=(n_local, 1)))
            step = (b[:, 1] - b[:, 0]) * scale * rng.standard_normal((n_local, d))
            cand[:n_local] = np.clip(X[np.argmin(y)] + step, b[:, 0], b[:, 1])
        if isinstance(model, str):
            pick = n_local
        else:
            model.fit(X, _warped(transform, y))
            f = np.asarray(model.sample_y(cand, n_samples=n_draws,
                                          random_state=rng.randint(2**31 - 1)))
            f = f.reshape(n_candidates, -1)[:, :n_draws]
            pick = int(np.argmin(_denoised_draw(f) if n_draws > 1 else f[:, 0]))
        x_new = cand[pick:pick + 1]
        X = np.vstack([X, x_new])
        y = np.concatenate([y, evaluate(x_new)])
        if verbose:
            print(f"iter {it + 1}/{n_iter}: f = {y[-1]:.4f}, best = {y.min():.4f}", flush=True)
    best = int(np.argmin(y))
    return Bunch(X=X, y=y, best_so_far=np.minimum.accumulate(y), x_best=X[best],
                 y_best=float(y[best]))
