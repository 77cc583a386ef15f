"""NDPRegressor: Neural Diffusion Processes behind a GaussianProcessRegressor-style API."""

from __future__ import annotations

import numbers
import os
import warnings
from types import SimpleNamespace

import numpy as np
import torch
from scipy.stats import chi2
from sklearn.base import RegressorMixin

from .._base import EstimatorBase, Interval, StrOptions, check_is_fitted, validate_data
from .._checks import caller_stacklevel, check_n_samples, fit_scale
from .._docs import fill_doc, parse_docs
from .._engine import draw_seed, error_line, out_of_memory_as, torch_seed
from .._posterior import _final_step
from ..diffusion.priors import TrainedPrior
from ..diffusion.samplers import TIERED, conditional_sample, prior_sample
from ..diffusion.training import box_to_domain, checked_x_bounds
from ._prior_cache import default_cache_dir, pretrained_prior, trained_prior

__all__ = ["NDPRegressor", "gaussian_log_likelihood", "log_likelihood_scorer"]


#: Levels (cubically spaced) of ``sampler="tweedie"`` when ``n_sampling_steps`` is None.
TWEEDIE_STEPS = 64


def auto_sampler(config):
    """``NDPRegressor(sampler="auto")``'s sampler for a prior's configuration.

    For a GP prior of one kernel and one lengthscale (the registered ``"se"`` and
    ``"matern52"``, however loaded), whose own covariance the Tweedie correction assumes:
    ``"tweedie"`` in one and two dimensions, where on the paper's tasks it scores above the
    tiered and fast paths at under half their network evaluations, and ``"tiered"`` in three
    or more, where it scored below them (0.06-0.07 nats per point on 16 tasks of either
    kernel). ``"fast"`` for every other prior: the marginalising ``"gp"``, whose Gaussian
    approximation is a mixture and whose samples the correction left less well calibrated
    on the development rows of ``benchmarks/defaults.py``, and priors trained on functions,
    which have no kernel.
    """
    fixed = (not config.from_functions and len(config.kernels) == 1
             and isinstance(config.lengthscale_sampler(), numbers.Real))
    if not fixed:
        return "fast"
    return "tweedie" if config.n_dims <= 2 else "tiered"


def _psd_root(cov):
    """A square root ``B`` (``B @ B.T == cov``) of a symmetric positive semi-definite
    matrix, from its eigendecomposition with rounding-negative eigenvalues set to 0, so that
    ``z @ B.T`` for standard normal rows ``z`` draws from a Gaussian of covariance ``cov``."""
    w, V = np.linalg.eigh(cov)
    return V * np.sqrt(np.clip(w, 0.0, None))


#: Parameters shared by the sampling and prediction methods of NDPRegressor.
NDP_DOCS = parse_docs("""
X : array-like of shape (n_X, n_features)
    Query points, in the units of the training inputs and with as many features; each
    call maps them into the prior's domain (see the class description).
n_samples : int
    Joint function samples to draw (the sample axis of the result); every sample covers
    all rows of ``X`` in one sampler run.
random_state : int, RandomState instance or None
    Seeds the sampler's noise: an int gives the same samples on every call on the CPU;
    ``None`` draws a seed from numpy's global random state, so samples differ between
    calls. The caller's torch random state is left untouched.
""")
NDP_DOCS["sampling_parameters"] = ["X", "n_samples", "random_state"]


#: Residuals from a fitted trend whose spread is below this fraction of the values' largest
#: magnitude are taken as an exact fit (about 5,000 float64 epsilons: the rounding of the
#: generalised least squares that fitted it).
_EXACT_FIT = 1e-12


@fill_doc(NDP_DOCS)
class NDPRegressor(RegressorMixin, EstimatorBase):
    """Regression with a Neural Diffusion Process prior (a drop-in for GaussianProcessRegressor).

    A Neural Diffusion Process (Dutordoir et al., 2023) is a denoising diffusion model over
    *functions*: a bi-dimensional attention network :math:`\\epsilon_\\theta(x, y_t, t)` learns
    to remove noise from the values ``y`` of a function at a set of inputs ``x``. Trained on
    functions drawn from GP priors with random kernels and lengthscales, it becomes a stochastic
    process prior that marginalises those hyper-parameters implicitly. Conditioning on data is
    done at sampling time (RePaint), so ``fit`` involves **no gradient step**:

    1. validate ``X`` and ``y``; standardise ``y`` onto the prior's scale: subtract its mean
       (or its linear trend, see ``trend``) and divide by an estimate of the process's
       amplitude, the standard deviation of ``y`` over the standard deviation that the
       prior's own functions show at the same (mapped) inputs
       (:meth:`PriorConfig.expected_sample_variance
       <skdiff.diffusion.PriorConfig.expected_sample_variance>`). A few points, or points
       closer together than the prior's lengthscales, vary less than the process does, so
       their bare standard deviation would make the posterior overconfident. The samples
       then marginalise the estimate's own uncertainty: each draws its amplitude from the
       scaled inverse-:math:`\\chi^2` posterior with ``n - 1`` degrees of freedom (a flat
       prior on the log amplitude; at least 3, the fewest for which the predictive variance
       is finite), so a posterior from a few points has heavy, Student-t like tails. A
       constant ``y`` uses scale 1 with a warning; ``normalize_y=False`` skips the
       standardisation;
    2. obtain the prior network: the pretrained weights shipped for ``prior`` and
       ``D = n_features`` (loaded in well under a second, checksum verified; for a ``D``
       without shipped weights, the nearest shipped prior with a warning: the network is
       invariant to the number of input dimensions), or, with
       ``pretrained=False``, a prior trained by the package's procedure and cached on disk
       keyed by its configuration (so cross-validation folds reuse it);
    3. store the context (``X_train_``, and ``y_train_`` standardised).

    ``predict``, ``sample_posterior`` and ``sample_prior`` then draw *joint* function samples
    at the query points by RePaint conditioning (:func:`skdiff.diffusion.conditional_sample`),
    all Monte Carlo samples in one batch. For each call, the inputs are mapped affinely, per
    feature, into the prior's domain :math:`[-2, 2]^D`: the smallest box holding the context
    *and the call's query points* is sent to ``x_margin`` times the domain, at most at the
    context box's scale shrunk by ``x_shrink_`` (a smooth context is seen at the
    lengthscales of the prior's functions), or the box ``x_bounds``, when given, to the
    whole domain. Queries anywhere in the region of
    interest therefore land where the prior was trained, in any units; the prior's
    lengthscales are relative to that box. ``predict``, ``sample_posterior`` and
    ``log_likelihood`` use the same map for the same query points.

    **Priors trained on your functions.** A prior trained on a family of related curves
    (:func:`skdiff.diffusion.train_prior` with ``functions``) carries the family's units:
    its inputs are mapped with the family's fixed map (its ``x_bounds`` onto the whole
    domain, unless ``x_bounds`` is passed here) and ``y`` is standardised with the family's
    pooled mean and standard deviation instead of the context's, which 3 points cannot
    estimate. One context point is then enough, and an empty region of the curve is
    predicted from what the family does there.

    **Observation noise.** The prior's training functions carry observation noise (variance
    ``0.0025`` on the standardised scale, independent of ``f``), so the samples are samples of
    noisy observations :math:`y_*`. A noisier context is detected (``alpha="auto"``) or
    declared (``alpha``); the samples then smooth through it and carry its noise.
    ``predict(return_std=True)`` returns their standard deviation when
    ``predict_noise=True`` (default, like a GP with a ``WhiteKernel``: the uncertainty of a
    new measurement); with ``predict_noise=False`` the noise variance (``noise_variance_``)
    is subtracted (the uncertainty of the latent function ``f``). A prior trained on functions
    records a noise of 0: its samples are of observations like the family's, whose noise
    it cannot tell from the signal, so ``predict_noise`` changes nothing there.

    Parameters
    ----------
    prior : str, path-like or TrainedPrior, default="gp"
        A registered prior (:mod:`skdiff.diffusion.priors`): ``"gp"`` (SE and Matérn kernels
        with log-normal lengthscales, marginalised), ``"se"`` or ``"matern52"`` (the paper's
        tasks); a :class:`~skdiff.diffusion.TrainedPrior` held in memory (e.g. a prior just
        trained on your own family of functions, which then brings its family's units: see
        above); or the path of a weights file written by
        :func:`skdiff.diffusion.priors.save_prior` (or :meth:`TrainedPrior.save
        <skdiff.diffusion.TrainedPrior.save>`), or of a folder of such files named
        ``<name>_d<D>.pt``. Files are verified against their manifests' checksums and loaded
        as plain tensors (``weights_only``).
    pretrained : bool, default=True
        Use the shipped weights. ``False`` trains a prior of this configuration (minutes;
        cached in ``cache_dir``).
    sampler : {"auto", "tiered", "fast", "ddpm", "tweedie"}, default="auto"
        ``"tweedie"``: ``n_sampling_steps`` (64) cubic levels, one network evaluation each
        (55 at the default), with no RePaint repeats: every step conditions the network's
        denoised estimate of the query values on the clean context through the prior's
        Gaussian approximation (Tweedie correction, :func:`skdiff.diffusion.
        conditional_sample`), exact for a GP prior with an exact network; each sample
        takes one of the prior's Gaussian components drawn from their posterior weights
        given the context (:meth:`PriorConfig.context_components
        <skdiff.diffusion.PriorConfig.context_components>`). Not available with a prior
        trained on functions (no kernel).
        ``"tiered"``: ``n_sampling_steps`` (40) levels spaced cubically (small steps at the
        lowest noise levels, where the posterior's fine structure is resolved), with
        ``n_resample`` RePaint repeats on the jumps back to levels 40 and above, where the
        coarse structure forms, and one below, where the small steps resolve the noise floor
        (140 network evaluations at the defaults); ``"fast"``: ``n_sampling_steps`` (32)
        cubic levels with ``n_resample`` repeats on every step (141 evaluations);
        ``"ddpm"``: the paper's sampler over all ``T`` levels (2995 evaluations at
        ``n_resample=5``, about 20 times slower). ``"auto"``: with a prior of one kernel
        and one lengthscale (``"se"``, ``"matern52"``, by name or from their files)
        ``"tweedie"`` in one and two dimensions and ``"tiered"`` in three (where the
        Tweedie correction scored 0.06-0.07 nats per point lower on the paper's tasks),
        ``"fast"`` with every other prior (``sampler_`` holds the choice). Paired
        on the 16 tasks of the paper's interpolation benchmark at D = 1 and scored in
        expectation over the targets, with the per-kernel priors on their own kernel's
        tasks the Tweedie correction scores +0.086 (SE) and +0.073 (Matérn-5/2) nats per
        point above the fast path and the tiered one +0.025 and +0.030. With the
        marginalising ``"gp"`` prior the tiered path scores below the fast one on the SE
        tasks (−0.07), and the Tweedie correction, whose covariance is then a mixture,
        scored no higher on the paper's SE tasks (0.206 against 0.208) and lower on the
        Matérn-5/2 ones (−0.148 against −0.020), and on the development rows of the
        defaults benchmark its 95 % intervals covered fewer targets (0.85-0.92 against
        0.89-0.92). The NDP benchmark page has the tables.
    n_sampling_steps : int, default=None
        Levels of the tiered, fast and Tweedie paths (``None``: 40, 32 and 64). Network
        evaluations per call: ``"fast"``: ``(n_sampling_steps - 1) * (n_resample + 1) + 1``
        less the levels the cubic spacing merges at the bottom; ``"tiered"``: the same with
        ``min(n_resample, 1)`` repeats on the jumps back below level 40; ``"tweedie"``: one
        per distinct level. Not used by ``"ddpm"``, which takes every level.
    n_resample : int, default=4
        RePaint resampling repeats ``U`` per step (the paper uses 5 with ``"ddpm"``; not
        used by ``"tweedie"``, which conditions at every step instead). Each
        repeat lets the targets settle with the context once more; a smooth context needs
        more of them than the default: on SE draws of lengthscale 0.35 times the interval
        (4-12 points) the samples' mean had a median squared error of 0.079 with 4 repeats,
        0.046 with 8 and 0.033 with 12, with 1.8 and 2.6 times the network evaluations. On
        the paper's tasks (lengthscale a sixteenth of the domain) with the ``"gp"`` prior,
        8 repeats scored 0.07 nats per point higher on the SE draws of one set of 16 tasks
        and no higher, within the noise, on another, and 0.20 lower on the rougher
        Matérn-5/2 draws of the second (the NDP benchmark page). For a function known to
        be smooth, with the ``"gp"`` prior, ``sampler="tweedie"`` does better at 40 % of
        the cost (median squared error 0.0048 on those draws).
    n_samples : int, default=64
        Monte Carlo samples behind ``predict``.
    x_bounds : array-like of shape (2,) or (n_features, 2), default=None
        The region of interest, mapped onto the prior's whole domain for every call; query
        points beyond it by more than an eighth of its width draw a warning. ``None``: the
        family's region for a prior trained on functions, else the box of the context and
        the query points of each call, mapped to ``x_margin`` times the domain.
    x_margin : float in (0, 1], default=0.9
        With ``x_bounds=None``, the fraction of the domain (per feature) that the box of the
        context and query points fills.
    x_scaling : {"ard", "box"}, default="ard"
        How the features are weighed against each other by the input map (``D >= 2``;
        one feature is always mapped by its box). ``"box"``: each feature's box (see
        ``x_bounds``) fills the domain, so a lengthscale that is a given fraction of the
        box is the same in every feature, as the prior's isotropic kernels assume.
        ``"ard"``: automatic relevance determination: the relative lengthscales of the
        features are estimated from the context (an ML-II fit of
        :class:`~sklearn.gaussian_process.GaussianProcessRegressor` with one RBF
        lengthscale per feature, from at least ``2 D + 1`` context points; fewer use
        ``"box"``), and every feature whose lengthscale, in box units, is longer than the
        shortest one's is compressed about the domain's centre by their ratio, so that
        the mapped function varies equally fast along every feature and stays inside the
        domain. A function that changes fast along one feature and slowly along another
        is then predicted as the prior's isotropic functions. The ratio is capped by
        ``x_compression``.
    x_compression : "auto" or float >= 1, default="auto"
        With ``x_scaling="ard"``, the most a feature is compressed. ``"auto"``: chosen in
        ``fit`` among 1, 2, 3, 5 and 10, as the cap under which the prior finds the
        context most probable (its marginal likelihood, see
        :meth:`~skdiff.diffusion.PriorConfig.log_evidence`): a long ML-II lengthscale that
        comes with a large amplitude (a steep trend along a feature) is not compressed
        further than the prior's functions can follow. A number fixes the cap (1 is the
        box map). ``x_compression_`` holds the cap in use.
    x_shrink : "auto" or float >= 1, default="auto"
        With ``x_bounds=None``, how much the input map shrinks the context's box below
        ``x_margin`` of the domain (every feature alike): the prior's lengthscales are
        relative to the mapped box, so a function smoother than the prior's typical draw
        is seen, shrunk, at the lengthscales its functions have. ``"auto"``: chosen in
        ``fit`` among 1, 1.25, 1.5 and 2 as the factor under which the prior
        finds the context most probable (its marginal likelihood, as for
        ``x_compression``; ties go to the smaller factor); a number fixes it (1: the box
        map). A call keeps that scale for its query points unless they need a wider box to
        fit into ``x_margin`` of the domain, which then maps them as with 1.
        ``x_shrink_`` holds the factor in use.
    alpha : "auto" or float >= 0, default="auto"
        Variance of the observation noise of ``y`` beyond the prior's own, in the units of
        ``y`` (as :class:`~sklearn.gaussian_process.GaussianProcessRegressor`'s ``alpha``
        is the noise variance of its training values), one for all training points (an
        array of per-point variances, which that ``alpha`` also takes, is refused). With
        extra noise every sample
        conditions on its own draw of the context's values at the prior's noise level
        given the noisier observations (from the Gaussian posterior of the context's ML-II
        GP, below), so the samples smooth through the noisy values instead of passing
        through them: :math:`p(y_* \\mid y) = \\int p(y_* \\mid y_c)\\, p(y_c \\mid y)\\,
        dy_c`; the samples of new observations carry the extra noise too. ``"auto"``:
        estimated from the context: the ML-II noise of a
        :class:`~sklearn.gaussian_process.GaussianProcessRegressor` (constant times RBF
        plus white noise) less the prior's, or 0 where the ML-II noise is below the
        prior's. It is kept even where a few points cannot tell the noise from the
        signal: under the predictive likelihood, noise taken too small costs far more than
        noise taken too large. ``alpha_`` holds the value used. A prior trained on
        functions takes its family's noise: ``"auto"`` gives 0 there.
    trend : {"constant", "linear"}, default="constant"
        The mean function under the prior's stationary process. ``"constant"``: the
        context's mean (as ``GaussianProcessRegressor(normalize_y=True)``). ``"linear"``:
        a linear function of ``X``, fitted by generalised least squares under the
        context's ML-II GP (universal kriging); the prior then models the residuals, and
        each sample draws the slopes from their posterior (scaled by its amplitude draw),
        so the samples carry the trend's uncertainty and queries beyond the context
        continue the trend instead of returning to the context's mean. For a function
        known to trend, continued beyond its data; from a few points of a stationary
        function a fitted trend extrapolates what is not there (the NDP user guide has
        the measurements). Needs ``2 D + 3`` context points, ``normalize_y=True`` and a
        GP prior (not one trained on functions, which brings its family's level).
    predict_noise : bool, default=True
        Whether ``predict``'s std/cov include the observation noise (see above).
    normalize_y : bool, default=True
        Standardise ``y`` with its mean and the amplitude estimate of step 1 (needs 2 or
        more points), or, for a prior trained on functions, with the family's mean and
        standard deviation.
        ``False`` takes ``y`` as already on the prior's scale (zero mean, unit variance), as
        in the paper's tasks; one training point is then enough.
    max_context : int, default=128
        Most training points used as context (the prior was trained on 40-80 points per
        function and attention costs :math:`O(N^2)`); a larger training set is subsampled at
        random, with a warning.
    predict_batch_size : int, default=64
        Query points conditioned jointly per sampler run in ``predict`` (marginals do not
        depend on it; ``return_cov`` and ``sample_posterior`` always run jointly).
    hidden_dim, n_layers, n_heads : int, default=None
        Network size when ``pretrained=False`` (``None``: the prior's, 64/4/8). Must be
        ``None`` with ``pretrained=True``.
    max_epochs : int, default=20
        Prior training epochs when ``pretrained=False``.
    steps_per_epoch : int, default=250
        Optimisation steps per epoch when ``pretrained=False``.
    lr : float, default=1e-3
        Peak learning rate of prior training (warm-up then cosine decay).
    batch_size : int, default=32
        Functions per training step when ``pretrained=False``.
    cache_dir : str or path, default=None
        Where trained priors are cached (``None``: ``$SKDIFF_CACHE/ndp`` or
        ``~/.cache/skdiff/ndp``).
    %(device)s
    %(n_threads)s
    random_state : int, RandomState or None, default=None
        Seeds the choice of the context rows beyond ``max_context``, prior training and
        ``predict``'s Monte Carlo noise (through ``seed_``): a fitted estimator's ``predict``
        is deterministic. With ``None`` or a ``RandomState`` a prior trained for
        ``pretrained=False`` is trained from a fixed seed, so that all fits of its
        configuration share one cached prior.
    verbose : int, default=0
        ``1``: a progress bar over the sampler's network evaluations in ``predict`` and
        ``sample_posterior`` (one per block of query points) and over the epochs of prior
        training; ``2``: prior training's epoch table instead. ``0`` prints nothing.
    callbacks : list of skorch callbacks, default=None
        Extra callbacks for prior training.

    Attributes
    ----------
    module_ : torch.nn.Module
        The prior's noise network (eval mode).
    prior_config_ : PriorConfig
        The prior's configuration.
    schedule_ : NoiseSchedule
        The prior's noise schedule (the betas of its ``T`` diffusion levels), on
        ``device_``.
    sampler_ : {"tiered", "fast", "ddpm", "tweedie"}
        The sampler that sampling calls run: ``sampler``, with ``"auto"`` resolved for the
        fitted prior.
    X_train_ : ndarray of shape (n_context, n_features)
        Context inputs (as given).
    y_train_ : ndarray of shape (n_context,)
        Standardised context values.
    x_bounds_ : ndarray of shape (n_features, 2) or None
        The validated ``x_bounds`` (or the family's region of a prior trained on functions).
    x_lengthscales_ : ndarray of shape (n_features,) or None
        The features' ML-II lengthscales (in the units of ``X``) that ``x_scaling="ard"``
        weighs them by (``inf`` for a feature constant over the context, which the GP
        leaves out); ``None`` with ``"box"``, one varying feature, fewer than ``2 D + 1``
        context points (``D`` the varying features), or a prior trained on functions
        (whose map is its family's).
    x_compression_ : float or None
        With ARD lengthscales (``x_lengthscales_``), the most the input map compresses a
        feature (``x_compression``, or the cap it chose); else ``None``.
    x_shrink_ : float or None
        With ``x_bounds=None`` and a GP prior, the factor by which the input map shrinks the
        context's box (``x_shrink``, or the factor it chose); else ``None``.
    y_mean_, y_std_ : float
        The target standardisation: the context's mean and amplitude estimate (step 1),
        or the family's mean and standard deviation for a prior trained on functions.
        With a linear trend, those of the context's residuals from it.
    trend_coef_ : ndarray of shape (n_features,) or None
        With ``trend="linear"``: the fitted trend's slope per unit of each feature, in the
        units of ``y``; else ``None``.
    trend_intercept_ : float or None
        With ``trend="linear"``: the fitted trend's value at ``X = 0``; else ``None``.
    scale_dof_ : int or None
        Degrees of freedom (``n_context - 1``, less the trend's slopes, at least 3) of
        the amplitude estimate that
        the samples marginalise (step 1); ``None`` when ``y`` is not standardised by the
        context (``normalize_y=False``, a constant ``y``, or a prior trained on functions).
    alpha_ : float
        The extra observation-noise variance used (``alpha``, or its estimate), in the
        units of ``y``.
    context_posterior_ : tuple of ndarray or None
        With ``alpha_ > 0``: mean (n_context,) and covariance (n_context, n_context) of
        the context's values at the prior's noise level given the observed ones, on the
        standardised scale, from which every sample draws its context; else ``None``.
    noise_variance_ : float
        The observation-noise variance of the samples in the units of ``y``: the prior's
        (at the estimated amplitude) plus ``alpha_``.
    n_features_in_ : int
        Features of ``X`` (the input dimension ``D`` of the prior).
    feature_names_in_ : ndarray of shape (n_features,)
        Column names of ``X`` when it is a DataFrame with string column names.
    device_ : str
        The device the prior network and the sampler run on (``device`` resolved).
    seed_ : int
        The seed of this fit, drawn from ``random_state``: it picks the context rows
        beyond ``max_context``, seeds prior training with ``pretrained=False``, and seeds
        ``predict``'s and ``log_likelihood``'s Monte Carlo samples (so they are
        deterministic).

    See Also
    --------
    sklearn.gaussian_process.GaussianProcessRegressor : exact GP regression (ML-II kernel fit).
    skdiff.diffusion.conditional_sample : the conditional sampler.

    References
    ----------
    .. [1] V. Dutordoir, A. Saul, Z. Ghahramani, F. Simpson, "Neural Diffusion Processes",
       ICML 2023, arXiv:2206.03992.
    .. [2] A. Lugmayr et al., "RePaint: Inpainting using Denoising Diffusion Probabilistic
       Models", CVPR 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skdiff import NDPRegressor
    >>> X = np.linspace(0, 1, 8).reshape(-1, 1)
    >>> y = np.sin(6 * X).ravel()
    >>> ndp = NDPRegressor(n_samples=16, n_sampling_steps=10, random_state=0).fit(X, y)
    >>> mean, std = ndp.predict(np.array([[0.5], [0.55]]), return_std=True)
    >>> mean.shape, std.shape
    ((2,), (2,))
    >>> ndp.sample_posterior(np.array([[0.5]]), n_samples=3, random_state=0).shape
    (1, 3)
    """

    _parameter_constraints: dict = {
        "prior": [str, os.PathLike, TrainedPrior],
        "pretrained": ["boolean"],
        "sampler": [StrOptions({"auto", "tiered", "fast", "ddpm", "tweedie"})],
        "n_sampling_steps": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "n_resample": [Interval(numbers.Integral, 0, None, closed="left")],
        "n_samples": [Interval(numbers.Integral, 2, None, closed="left")],
        "x_bounds": ["array-like", None],
        "x_margin": [Interval(numbers.Real, 0, 1, closed="right")],
        "x_scaling": [StrOptions({"ard", "box"})],
        "x_compression": [StrOptions({"auto"}), Interval(numbers.Real, 1, None, closed="left")],
        "x_shrink": [StrOptions({"auto"}), Interval(numbers.Real, 1, None, closed="left")],
        "alpha": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="left")],
        "trend": [StrOptions({"constant", "linear"})],
        "predict_noise": ["boolean"],
        "normalize_y": ["boolean"],
        "max_context": [Interval(numbers.Integral, 2, None, closed="left")],
        "predict_batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "hidden_dim": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_layers": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_heads": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
        "steps_per_epoch": [Interval(numbers.Integral, 1, None, closed="left")],
        "lr": [Interval(numbers.Real, 0, None, closed="neither")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "cache_dir": [str, os.PathLike, None],
        "device": [str, torch.device],
        "n_threads": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "callbacks": [list, tuple, None],
    }

    def __init__(self, *, prior="gp", pretrained=True, sampler="auto", n_sampling_steps=None,
                 n_resample=4, n_samples=64, x_bounds=None, x_margin=0.9, x_scaling="ard",
                 x_compression="auto", x_shrink="auto", alpha="auto", trend="constant",
                 predict_noise=True, normalize_y=True, max_context=128, predict_batch_size=64,
                 hidden_dim=None, n_layers=None, n_heads=None, max_epochs=20,
                 steps_per_epoch=250, lr=1e-3,
                 batch_size=32, cache_dir=None, device="auto", n_threads=None, random_state=None,
                 verbose=0, callbacks=None):
        self._init_params(locals())

    def _validate_params(self):
        # GaussianProcessRegressor's alpha also takes one variance per training point;
        # the samples here carry one extra noise level for all, so an array is refused
        # with that reason rather than scikit-learn's generic type message
        alpha = self.alpha
        if not isinstance(alpha, (str, numbers.Real)) and np.ndim(alpha) > 0:
            from sklearn.utils._param_validation import InvalidParameterError

            raise InvalidParameterError(
                "The 'alpha' parameter of NDPRegressor must be 'auto' or one float >= 0, the "
                "extra noise variance of every training point; got an array of shape "
                f"{np.shape(alpha)}. Per-point noise variances, which "
                "GaussianProcessRegressor's alpha accepts, are not supported: pass one "
                "variance (e.g. float(np.max(alpha)): too much noise widens the intervals, "
                "too little makes them over-confident) or alpha='auto' to estimate it.")
        super()._validate_params()

    # -- fit -------------------------------------------------------------------------------
    def fit(self, X, y):
        """Standardise ``y``, map ``X`` into the prior's domain, get the prior, store context.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs, the context of every prediction (at most ``max_context`` rows
            are kept, chosen at random beyond that).
        y : array-like of shape (n_samples,)
            A single output; multi-output ``y`` is refused (fit one estimator per output).

        Returns
        -------
        self : NDPRegressor
            The fitted estimator.
        """
        with self._transaction():
            return self._fit(X, y)

    def _fit(self, X, y):
        seed = self._prepare_fit()
        y_arr = np.asarray(y) if not hasattr(y, "iloc") else y.to_numpy()
        if y_arr.ndim > 2 or (y_arr.ndim == 2 and y_arr.shape[1] != 1):
            raise ValueError(
                f"NDPRegressor models a single output: y is expected of shape (n_samples,); "
                f"got {y_arr.shape}. Fit one estimator per column of a 2-D y (e.g. "
                "sklearn.multioutput.MultiOutputRegressor).")
        if y_arr.dtype.kind == "c":
            raise ValueError(
                "Complex data not supported: NDPRegressor needs real targets; y has dtype "
                f"{y_arr.dtype}. Pass y.real or np.abs(y)."
            )
        if y_arr.dtype.kind not in "biufO":
            raise ValueError(f"NDPRegressor needs numeric targets; y has dtype {y_arr.dtype}.")
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        y = y.astype(np.float64, copy=False)  # bool, integer or float32 targets alike
        self._get_prior(X.shape[1], seed)
        self.x_bounds_ = self._checked_bounds(X.shape[1])
        idx = self._context_rows(len(X), seed)
        self.X_train_ = X[idx]
        y_context = y[idx]
        gp = self._context_gp(self.X_train_, y_context)
        gp = self._fit_trend(gp, self.X_train_, y_context)
        if self._trend is not None:
            y_context = y_context - self._trend_at(self.X_train_)
        self.x_lengthscales_ = None if gp is None or not gp.ard else gp.lengthscales
        # the shrink starts at 1 (the box map) while the ARD cap is chosen; None without a
        # box map (x_bounds, or a prior trained on functions, whose map is its family's)
        self.x_shrink_ = None if self.x_bounds_ is not None \
            or self.prior_config_.from_functions else 1.0
        self.x_compression_ = self._choose_compression(y_context, y[idx])
        self.x_shrink_ = self._choose_shrink(y_context, y[idx])
        self._warn_context_outside_bounds()
        self._set_target_scale(y_context, y[idx])
        self.y_train_ = (y_context - self.y_mean_) / self.y_std_
        with np.errstate(over="ignore"):  # inf for targets beyond float64's squares
            prior_noise = float(np.float64(self.prior_config_.noise)
                                * np.float64(self.y_std_) ** 2)
        self.alpha_ = self._extra_noise(gp, prior_noise)
        self.noise_variance_ = prior_noise + self.alpha_
        self.context_posterior_ = (self._context_posterior(gp, prior_noise)
                                   if self.alpha_ else None)
        return self

    def _warn_context_outside_bounds(self):
        """Warn when given ``x_bounds`` leave training points far outside the prior's
        domain (as ``_check_X`` warns of such query points): the prior never saw inputs
        there, so even the predictions at those very points are extrapolations."""
        if self.x_bounds is None or self.x_bounds_ is None:
            return
        offset, scale = self._input_map(self.X_train_)
        far = self._far_outside((self.X_train_ - offset) * scale)
        if far.any():
            lo, hi = self.X_train_.min(0), self.X_train_.max(0)
            warnings.warn(
                f"{int(far.sum())} of the {len(far)} training points lie far outside "
                f"'x_bounds' (training X spans {np.round(lo, 4).tolist()} to "
                f"{np.round(hi, 4).tolist()} per feature; x_bounds="
                f"{self.x_bounds_.tolist()}); the prior was never trained there, and even "
                "the predictions at those points are extrapolations. Widen 'x_bounds' to "
                "cover the training points, or leave it None to map the training and query "
                "points of each call into the domain.", UserWarning, stacklevel=caller_stacklevel())

    def _set_target_scale(self, y, values):
        """``y_mean_`` and ``y_std_``: the standardisation of ``y`` (identity without
        ``normalize_y``): the family's units for a prior trained on functions (a few points
        cannot estimate the level and scale; the family can), else the context's mean and
        the amplitude its spread implies under the prior (``y`` holds the context rows, or
        their residuals from the trend, fitted to ``values``)."""
        self.scale_dof_ = None
        if not self.normalize_y:
            self.y_mean_, self.y_std_ = 0.0, 1.0
            return
        if self.prior_config_.from_functions:
            self.y_mean_, self.y_std_ = self.prior_config_.y_loc, self.prior_config_.y_scale
            return
        if len(y) < 2:
            raise ValueError(
                f"NDPRegressor needs at least 2 training samples to standardise y; got "
                f"{len(y)} sample. Pass normalize_y=False if y is already on the prior's scale.")
        mean, scale, constant = fit_scale(y[:, None], name="y", return_constant=True)
        exact_trend = (self._trend is not None and not constant[0]
                       and scale[0] <= _EXACT_FIT * np.max(np.abs(values)))
        if exact_trend:
            # residuals at the rounding level of the values the trend was fitted to: their
            # own spread is noise of the arithmetic, not of the process
            scale, constant = np.ones(1), np.ones(1, dtype=bool)
        if constant[0]:
            what = ("y is exactly linear in X (its residuals from the fitted trend are "
                    "rounding errors)" if self._trend is not None else "y is constant")
            warnings.warn(f"{what}; NDPRegressor uses a unit scale for it, so the posterior "
                          f"is the prior's around that {'line' if self._trend else 'constant'}.",
                          UserWarning, stacklevel=caller_stacklevel())
        else:
            # the context's spread is that of a few (often correlated) values of the
            # process: divide by what the prior's own functions show at these inputs. Where
            # every point shares one input that is the prior's noise alone, and the spread
            # is the observations' noise (alpha), not an amplitude: y's own scale is kept
            if np.ptp(self.X_train_, axis=0).max() > 0:
                offset, x_scale = self._input_map(self.X_train_)
                spread = self.prior_config_.expected_sample_variance(
                    (self.X_train_ - offset) * x_scale)
                scale = scale / np.sqrt(spread)
            # at least 3: below that the posterior predictive has no finite variance, and
            # predict's mean and std would be Monte Carlo noise
            self.scale_dof_ = max(len(y) - 1 - self._n_trend_slopes(), 3)
        self.y_mean_, self.y_std_ = float(mean[0]), float(scale[0])

    def _context_rows(self, n, seed):
        """The training rows used as context: all, or ``max_context`` of them at random."""
        if n <= self.max_context:
            return np.arange(n)
        warnings.warn(
            f"{n} training points exceed max_context={self.max_context}; a random subset of "
            f"{self.max_context} is used as the context. Raise 'max_context' to use more (cost "
            "grows quadratically).", UserWarning, stacklevel=caller_stacklevel())
        return np.sort(np.random.RandomState(seed).choice(n, self.max_context, replace=False))

    def _get_prior(self, n_dims, seed):
        from ..diffusion.priors import PRIORS, get_prior_config

        size = {k: int(getattr(self, k)) for k in ("hidden_dim", "n_layers", "n_heads")
                if getattr(self, k) is not None}
        if self.pretrained:
            if size:
                raise ValueError(
                    f"{sorted(size)} set to {size} with pretrained=True: the network size is "
                    "fixed by the pretrained weights. Leave them None, or set "
                    "pretrained=False to train a prior of that size."
                )
            module, config = pretrained_prior(self.prior, n_dims, self.device_)
        else:
            if not isinstance(self.prior, str) or self.prior not in PRIORS:
                raise ValueError(
                    f"pretrained=False trains a registered prior ({sorted(PRIORS)}); got "
                    f"prior={self.prior!r}. Use pretrained=True to use the weights of a path "
                    "or of a TrainedPrior.")
            config = get_prior_config(self.prior, n_dims).replace(
                lr=float(self.lr), batch_size=int(self.batch_size), **size)
            with out_of_memory_as(lambda exc: (
                    f"The prior network of hidden_dim={config.hidden_dim}, n_layers="
                    f"{config.n_layers} does not fit in memory ({error_line(exc)}); lower "
                    "'hidden_dim' or 'n_layers'.")):
                module = self._trained_prior(config, seed)
        self.module_ = module
        self.prior_config_ = config
        self.schedule_ = config.schedule().to(self.device_)
        self.sampler_  # noqa: B018 (refuses a sampler this prior cannot run, before any call)

    def _trained_prior(self, config, seed):
        """A prior of ``config`` trained (or read from the disk cache) for this estimator.

        An int ``random_state`` seeds its training through the fit's seed; without one
        (``None`` or a ``RandomState``, which give every fit its own seed) the prior is
        trained from seed 0, so that every fit of the configuration, e.g. the folds of a
        cross-validation, reuses one cached prior instead of training its own.
        """
        if not isinstance(self.random_state, numbers.Integral):
            seed = 0
        return trained_prior(
            config, max_epochs=int(self.max_epochs), steps_per_epoch=int(self.steps_per_epoch),
            seed=seed, device=self.device_,
            cache_dir=self.cache_dir if self.cache_dir is not None else default_cache_dir(),
            verbose=self.verbose, callbacks=self.callbacks)

    def _checked_bounds(self, d):
        """``x_bounds`` as a validated (d, 2) array, or None: a prior trained on functions
        brings its family's region unless ``x_bounds`` is given."""
        config = self.prior_config_
        if config.from_functions and config.n_dims != d:
            raise ValueError(
                f"The prior {self.prior!r} was trained on a family of {config.n_dims}-D "
                f"functions; X has {d} feature(s). Fit it on {config.n_dims} feature(s), or "
                "train a prior on functions of this dimension.")
        if self.x_bounds is None:
            return np.asarray(config.x_bounds) if config.from_functions else None
        return checked_x_bounds(self.x_bounds, d, dims="n_features")

    def _gp_fit(self, X, y, n_lengthscales, noise=None):
        """ML-II ``GaussianProcessRegressor`` (constant times RBF, ``n_lengthscales``
        lengthscales, plus white noise, free or fixed at ``noise``) on the context, ``y``
        standardised by the caller, with a fixed seed for the optimiser's restarts: what it
        returns depends on the context only."""
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

        white = (WhiteKernel(1e-2, (1e-6, 1.0)) if noise is None
                 else WhiteKernel(max(noise, 1e-12), "fixed"))
        kernel = (ConstantKernel(1.0, (1e-3, 1e3))
                  * RBF(np.ones(n_lengthscales) if n_lengthscales > 1 else 1.0, (1e-2, 1e2))
                  + white)
        gpr = GaussianProcessRegressor(kernel, n_restarts_optimizer=2, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return gpr.fit(X, y)

    def _context_gp(self, X, y):
        """The context's ML-II GP behind ``x_scaling="ard"`` and ``alpha``, or None.

        Each feature is divided by its spread and ``y`` standardised by its mean and
        standard deviation first, so that the bounds (lengthscales 1e-2 to 1e2 spreads)
        and starts suit any units. One lengthscale per feature (ARD) with
        ``x_scaling="ard"``, ``D >= 2`` and at least ``2 D + 1`` points, else one for all.
        Returns a namespace: ``gpr`` (fitted on the scaled data), ``ard``, ``lengthscales``
        (units of ``X``), the scaled ``X`` and ``z`` and the ``y_loc``, ``y_scale`` of the
        standardisation; ``None`` when neither option needs it (``"box"`` and
        ``alpha=0``), for a prior trained on functions (whose units are its family's), or
        when every feature or ``y`` is constant. A feature constant over the context carries
        no information and is left out of the GP (its lengthscale is infinite), as a
        stationary kernel ignores it.
        """
        n, d = X.shape
        vary = X.max(0) > X.min(0)
        d_vary = int(vary.sum())
        ard = self.x_scaling == "ard" and d_vary >= 2 and n >= 2 * d_vary + 1
        if self.prior_config_.from_functions or not (ard or self.alpha != 0
                                                      or self.trend != "constant"):
            return None
        if n < 3 or np.ptp(y) <= 0:
            return None
        spread = (X.max(0) - X.min(0))[vary]
        loc, scale = fit_scale(y[:, None], name="y")  # squares cannot overflow
        y_loc, y_scale = float(loc[0]), float(scale[0])
        z = (y - y_loc) / y_scale
        # every feature constant: all points share one input, the kernel is 1 between any
        # two of them, and the GP splits y's spread into a shared value and noise
        Xs = X[:, vary] / spread if d_vary else np.zeros((n, 1))
        gpr = self._gp_fit(Xs, z, d_vary if ard else 1)
        lengthscales = np.full(d, np.inf)
        if d_vary:
            lengthscales[vary] = np.asarray(gpr.kernel_.k1.k2.length_scale,
                                            dtype=np.float64) * spread
        return SimpleNamespace(gpr=gpr, ard=ard, lengthscales=lengthscales, X=Xs,
                               z=z, y_loc=y_loc, y_scale=y_scale,
                               n_lengthscales=d_vary if ard else 1)

    def _n_trend_slopes(self):
        """The slopes the fitted trend took from the context (0 without a trend)."""
        return 0 if self._trend is None else len(self._trend.centre)

    def _fit_trend(self, gp, X, y):
        """Fit the linear trend (``trend="linear"``); return the context GP of the values
        the prior then models: ``gp`` itself without a trend, else the GP of the
        residuals.

        The trend :math:`m(x) = \\beta_0 + \\beta^\\top x` is the generalised least-squares
        fit under the context's GP (universal kriging): with the GP's covariance ``K`` of
        the context, :math:`\\hat\\beta = (H^\\top K^{-1} H)^{-1} H^\\top K^{-1} y`, whose
        covariance :math:`(H^\\top K^{-1} H)^{-1}` the samples draw their slopes from. The
        GP is fitted on the least-squares residuals, ``beta`` refitted under it, and the
        GP refitted on the final residuals.
        """
        self._trend = None
        self.trend_coef_, self.trend_intercept_ = None, None
        if self.trend == "constant":
            return gp
        n, d = X.shape
        vary = X.max(0) > X.min(0)  # a feature constant over the context takes no slope
        d_vary = int(vary.sum())
        if self.prior_config_.from_functions:
            problem = "a prior trained on functions brings its family's level"
        elif not self.normalize_y:
            problem = "normalize_y=False takes y as already on the prior's scale"
        elif n < self._min_trend_points(d_vary):
            problem = (f"it needs at least {self._min_trend_points(d_vary)} context points "
                       f"for {d_vary} varying feature(s); got {n}")
        elif gp is None:
            problem = "the context's inputs or y are constant"
        else:
            problem = None
        if problem is not None:
            raise ValueError(f"trend='linear' cannot be fitted: {problem}. Use "
                             "trend='constant' (the context's mean).")
        centre, spread = X.mean(0), np.where(vary, X.max(0) - X.min(0), 1.0)
        H = np.column_stack([np.ones(n), ((X - centre) / spread)[:, vary]])
        beta, _ = self._gls(gp, H, y)
        gp_res = self._context_gp(X, y - H @ beta)
        if gp_res is not None:
            beta, _ = self._gls(gp_res, H, y)
            gp_res = self._context_gp(X, y - H @ beta)
        # no residual GP: the line passes through every point, its slopes are certain
        cov = (np.zeros((d_vary + 1, d_vary + 1)) if gp_res is None
               else self._gls(gp_res, H, y)[1])
        # the constant features' slopes are 0, with no spread
        slope_cov = np.zeros((d, d))
        slope_cov[np.ix_(vary, vary)] = 0.5 * (cov[1:, 1:] + cov[1:, 1:].T)
        full = np.zeros(d + 1)
        full[0], full[1:][vary] = beta[0], beta[1:]
        beta = full
        self._trend = SimpleNamespace(centre=centre, spread=spread, beta=beta,
                                      slope_root=_psd_root(slope_cov))
        self.trend_coef_ = beta[1:] / spread
        self.trend_intercept_ = float(beta[0] - centre @ self.trend_coef_)
        return gp_res

    @staticmethod
    def _min_trend_points(d):
        """Fewest context points a trend is fitted from: its ``D + 1`` coefficients and
        at least ``D + 2`` residual degrees of freedom for the GP of the residuals."""
        return 2 * d + 3

    @staticmethod
    def _gls(gp, H, y):
        """Generalised least squares of ``y`` (units of ``y``) on the design ``H`` under
        the covariance of the context's GP ``gp``: coefficients and their covariance."""
        K = gp.gpr.kernel_(gp.X)
        L = np.linalg.cholesky(K + 1e-10 * np.eye(len(K)))
        A = np.linalg.solve(L, H)
        b = np.linalg.solve(L, y)
        Q, R = np.linalg.qr(A)
        beta = np.linalg.solve(R, Q.T @ b)
        R_inv = np.linalg.inv(R)
        return beta, (R_inv @ R_inv.T) * gp.y_scale ** 2

    def _trend_at(self, X):
        """The fitted trend at the rows of ``X``, in the units of ``y`` (0 without one)."""
        t = self._trend
        if t is None:
            return np.zeros(len(X))
        return t.beta[0] + ((X - t.centre) / t.spread) @ t.beta[1:]

    def _extra_noise(self, gp, prior_noise):
        """``alpha_``: the observation-noise variance of ``y`` beyond the prior's.

        A number for ``alpha`` is taken as given. ``"auto"``: the ML-II noise of the
        context's GP less ``prior_noise``, or 0 where it is below. It is not tested
        against the prior's noise first: a context of 3-12 points rarely lets a test tell
        noise from signal, and samples that pass through noisy values are sharply
        over-confident, while a little too much noise only widens them.
        """
        if self.alpha != "auto":
            if gp is not None or not self.alpha:
                return float(self.alpha)
            if self.prior_config_.from_functions:
                raise ValueError(
                    f"alpha={self.alpha!r} with a prior trained on functions: such a prior "
                    "models its family's observations, noise included. Leave alpha='auto' "
                    "(0 for such a prior), or use a GP prior ('gp', 'se', 'matern52').")
            warnings.warn(
                f"alpha={self.alpha!r} is not applied: the context's GP needs at least 3 "
                "points and non-constant inputs and y. The samples treat the context as "
                "observed with the prior's noise.", UserWarning, stacklevel=caller_stacklevel())
            return 0.0
        if gp is None or not np.isfinite(prior_noise):
            return 0.0
        noise = float(gp.gpr.kernel_.k2.noise_level) * gp.y_scale ** 2
        return max(noise - prior_noise, 0.0)

    def _context_posterior(self, gp, prior_noise):
        """Mean and covariance (standardised scale) of the context's values at the prior's
        noise level given the observations, whose noise is ``prior_noise + alpha_``.

        Under the context's GP (signal kernel :math:`K` fitted by ML-II; with a given
        ``alpha`` refitted with its white noise fixed at the total), an observation is a
        value at the prior's noise plus the extra noise, :math:`y = y' + \\epsilon`,
        :math:`\\epsilon \\sim \\mathcal{N}(0, \\alpha I)`. So :math:`y'` and :math:`y`
        are jointly Gaussian with covariances :math:`B = K + \\sigma_p^2 I`, :math:`B` and
        :math:`C = K + (\\sigma_p^2 + \\alpha) I`, and :math:`y' \\mid y` has mean
        :math:`B C^{-1} y` and covariance :math:`B - B C^{-1} B = \\alpha B C^{-1}` (the
        second form has no cancellation as :math:`\\alpha \\to 0`). Conditioning a GP at
        the prior's noise on these draws and averaging over them gives exactly the GP's
        posterior given :math:`y` at the total noise; as :math:`\\alpha \\to 0` the draws
        collapse onto the observations, as with ``alpha_ = 0``."""
        var = gp.y_scale ** 2
        total = (prior_noise + self.alpha_) / var
        gpr = gp.gpr
        if self.alpha != "auto":
            gpr = self._gp_fit(gp.X, gp.z, gp.n_lengthscales, noise=total)
        K = gpr.kernel_.k1(gp.X)
        eye = np.eye(len(K))
        B = K + prior_noise / var * eye  # Cov(y', y') = Cov(y', y)
        A = np.linalg.solve(K + total * eye, B).T  # B C^-1
        mean = A @ gp.z
        cov = self.alpha_ / var * A
        # from the GP's standardisation to the estimator's
        mean = (mean * gp.y_scale + gp.y_loc - self.y_mean_) / self.y_std_
        cov = 0.5 * (cov + cov.T) * (gp.y_scale / self.y_std_) ** 2
        return mean, cov

    #: The largest compressions of a feature that ``x_scaling="ard"`` chooses among.
    _ARD_CAPS = (1.0, 2.0, 3.0, 5.0, 10.0)

    def _choose_compression(self, y, values):
        """``x_compression_``: the cap on the ARD map's compression of a feature under
        which the prior finds the context most probable, or None without ARD lengthscales.

        Each cap of ``_ARD_CAPS`` gives a map of the context and, through it, the scale
        ``y_std_`` that the context's spread implies under the prior; the score is the
        prior's :meth:`~skdiff.diffusion.PriorConfig.log_evidence` of the standardised
        context at the mapped inputs, less ``n log y_std_`` (the density of ``y`` itself,
        so that the scales compare). The ML-II lengthscales alone would always ask for
        the full ratio; the prior's lengthscale distribution and unit amplitude decide how
        far compressing a feature still describes the context. Ties go to the smaller cap.
        """
        if self.x_lengthscales_ is None:
            return None
        if self.x_compression != "auto":
            return float(self.x_compression)
        return self._most_probable("x_compression_", self._ARD_CAPS, y, values)

    def _most_probable(self, attribute, candidates, y, values):
        """The value of the map's ``attribute`` among ``candidates`` (increasing) under
        which the prior finds the context most probable: each sets the map, and through it
        ``y_std_``; the score is :meth:`_context_log_evidence` of the context standardised
        with it. Ties go to the first, smallest, candidate."""
        scores = []
        with warnings.catch_warnings():
            # the scale's warnings (an exactly linear y) come once, from fit's own call
            warnings.simplefilter("ignore", UserWarning)
            for value in candidates:
                setattr(self, attribute, value)
                self._set_target_scale(y, values)
                scores.append(self._context_log_evidence((y - self.y_mean_) / self.y_std_))
        return candidates[int(np.argmax(scores))]

    #: The factors ``x_shrink="auto"`` chooses among.
    _SHRINKS = (1.0, 1.25, 1.5, 2.0)

    def _choose_shrink(self, y, values):
        """``x_shrink_``: the factor by which the map shrinks the context's box, chosen as
        the cap of :meth:`_choose_compression` is: for each factor of ``_SHRINKS``, the
        scale ``y_std_`` the context's spread implies at the shrunk inputs and the prior's
        log evidence of the standardised context there, counted in the units of ``y``. A
        wider box (factor 1) spreads the points farther apart in the prior's units, where
        the prior's functions vary more between them; a smooth context is more probable
        shrunk, a rough one is not. None without a box map (``x_bounds``, a prior trained on
        functions)."""
        if self.x_shrink_ is None:
            return None
        if self.x_shrink != "auto":
            return float(self.x_shrink)
        if len(y) < 2 or np.ptp(y) == 0 or np.ptp(self.X_train_, axis=0).max() == 0:
            return 1.0
        return self._most_probable("x_shrink_", self._SHRINKS, y, values)

    def _context_log_evidence(self, z):
        """The prior's log evidence of the context standardised to ``z``, at its inputs
        under the current map, counted in the units of ``y`` (less ``n log y_std_``)."""
        offset, scale = self._input_map(self.X_train_)
        return (self.prior_config_.log_evidence((self.X_train_ - offset) * scale, z)
                - len(z) * np.log(self.y_std_))

    def _input_map(self, points):
        """(offset, scale) of the affine map ``z = (x - offset) * scale`` into the domain:
        ``x_bounds_`` to the whole domain, else the box of ``points`` to ``x_margin`` of it,
        at most at the context's scale shrunk by ``x_shrink_``; with ARD lengthscales,
        every feature then compressed about the domain's centre so that all have the
        shortest one's lengthscale in the domain (``x_scaling``)."""
        domain = self.prior_config_.domain
        if self.x_bounds_ is not None:
            offset, scale = box_to_domain(self.x_bounds_[:, 0], self.x_bounds_[:, 1], domain)
        else:
            centre, half = sum(domain) / 2, (domain[1] - domain[0]) / 2 * self.x_margin
            box = (centre - half, centre + half)
            offset, scale = box_to_domain(points.min(0), points.max(0), box)
            shrink = getattr(self, "x_shrink_", None)
            if shrink is not None and shrink > 1:
                # the context's box map shrunk, unless the call's points need a wider box;
                # about the centre of the call's box (a feature constant over the context
                # has no box of its own and keeps the call's)
                lo, hi = self.X_train_.min(0), self.X_train_.max(0)
                context = np.where(hi > lo, box_to_domain(lo, hi, box)[1], np.inf)
                x_centre = offset + centre / scale
                scale = np.minimum(scale, context / shrink)
                offset = x_centre - centre / scale
        lengthscales = self.x_lengthscales_
        if lengthscales is None:
            return offset, scale
        mapped = lengthscales * scale  # each feature's lengthscale in the domain
        ratio = np.clip(mapped / mapped.min(), 1.0, self.x_compression_)
        z_centre = sum(float(v) for v in domain) / 2
        x_centre = offset + z_centre / scale  # the point mapped to the domain's centre
        scale = scale / ratio
        return x_centre - z_centre / scale, scale

    def _check_X(self, X, *, context=True):
        """Validated query points -> (mapped context, mapped queries, queries) for one
        call."""
        check_is_fitted(self)
        self._validate_params()  # parameters that prediction reads may be set after fit
        X = validate_data(self, X, dtype=np.float64, reset=False)
        C = self.X_train_ if context else X[:0]
        offset, scale = self._input_map(np.concatenate([C, X]))
        Zc, Z = (C - offset) * scale, (X - offset) * scale
        lo, hi = (float(v) for v in self.prior_config_.domain)
        if self._far_outside(Z).any():
            warnings.warn(
                "Some query points lie far outside 'x_bounds' (mapped to "
                f"[{Z.min():.2f}, {Z.max():.2f}], the prior was trained on [{lo:g}, {hi:g}]); "
                "predictions there are extrapolations the prior has not seen. " + (
                    "The prior's family never reached there: train it on functions that do."
                    if self.prior_config_.from_functions and self.x_bounds is None else
                    "Widen 'x_bounds', or leave it None to map each call's query points into "
                    "the domain."), UserWarning, stacklevel=caller_stacklevel())
        return Zc, Z, X

    def _far_outside(self, Z):
        """Which mapped rows of ``Z`` lie farther outside the prior's domain than a quarter
        of its half-width (the extrapolations ``_check_X`` warns of)."""
        lo, hi = (float(v) for v in self.prior_config_.domain)
        pad = 0.25 * (hi - lo) / 2
        return ((Z < lo - pad) | (Z > hi + pad)).any(axis=1)

    def _eps_model(self):
        module = self.module_

        def eps(x, y_t, t, mask=None):
            return module(x, y_t, t, mask)

        return eps

    @property
    def sampler_(self):
        """The sampler the next sampling call runs: ``sampler``, with ``"auto"`` resolved
        for the fitted prior (like ``sampler``, read at every call)."""
        check_is_fitted(self, "prior_config_")
        if self.sampler == "tweedie" and self.prior_config_.from_functions:
            raise ValueError("sampler='tweedie' needs a prior of known kernels (its Tweedie "
                             "correction assumes their covariance); this prior was trained "
                             "on a family of functions. Use sampler='fast' or 'auto'.")
        return self.sampler if self.sampler != "auto" else auto_sampler(self.prior_config_)

    def _levels_kwargs(self, conditional=True):
        """The sampler's levels: all ``T`` (``"ddpm"``), or ``n_sampling_steps`` cubic ones,
        with the tiered path's single repeats below level 40 (``"tiered"``; resampling only
        applies when ``conditional``)."""
        sampler = self.sampler_
        if sampler == "ddpm":
            return {"n_steps": None}
        if sampler == "tweedie":
            return {"n_steps": self.n_sampling_steps or TWEEDIE_STEPS, "spacing": "cubic"}
        if sampler != "tiered":
            return {"n_steps": self.n_sampling_steps or 32, "spacing": "cubic"}
        kwargs = dict(TIERED, n_steps=self.n_sampling_steps or TIERED["n_steps"])
        if not conditional:
            return {"n_steps": kwargs["n_steps"], "spacing": kwargs["spacing"]}
        kwargs["n_resample_fine"] = min(kwargs["n_resample_fine"], self.n_resample)
        return kwargs

    def _amplitude_draws(self, n_samples, seed):
        """Per-sample factors ``r`` on the estimated amplitude, or None when it is not
        estimated from the context.

        The amplitude estimated from ``n`` context values is uncertain: with a flat prior on
        its logarithm, :math:`\\sigma^2 / \\hat\\sigma^2` is distributed as
        :math:`\\nu / \\chi^2_\\nu` with :math:`\\nu = n - 1` (here at least 3). Every
        sample gets its own draw (stratified over the samples, with a random offset, in a
        random order), so the samples marginalise the amplitude; with many points ``r`` is
        close to 1.
        """
        nu = self.scale_dof_
        if nu is None:
            return None
        rng = np.random.RandomState(seed % 2**32)
        q = (np.arange(n_samples) + rng.uniform(size=n_samples)) / n_samples
        return rng.permutation(np.sqrt(nu / chi2.ppf(q, nu)))

    def _sample_std(self, Zc, Z, X, n_samples, seed):
        """Standardised posterior samples at mapped inputs ``Z`` (the rows ``X``) given the
        mapped context ``Zc``: (n_X, n_samples), joint over the rows (:meth:`_joint_std`)
        but for those far outside the domain.

        Rows far outside the prior's domain (``_far_outside``) are drawn jointly among
        themselves, apart from the others, with the same seed (so the same amplitude,
        trend and context draws per sample): the network has never seen inputs there, and
        through its attention across points they would change the draws at every other
        row of the call. The rows inside are then drawn as in a call without them."""
        far = self._far_outside(Z)
        if not far.any() or far.all():
            return self._joint_std(Zc, Z, X, n_samples, seed)
        ys = np.empty((Z.shape[0], int(n_samples)))
        for rows in (~far, far):
            ys[rows] = self._joint_std(Zc, Z[rows], X[rows], n_samples, seed)
        return ys

    def _joint_std(self, Zc, Z, X, n_samples, seed):
        """Joint standardised posterior samples at mapped inputs ``Z`` (the rows ``X``)
        given the mapped context ``Zc``: (n_X, n_samples). With a context-estimated
        amplitude, sample ``s`` conditions on the context divided by its factor ``r_s``
        and is multiplied by it. With a trend, sample ``s`` draws its slopes from their
        posterior (scaled by ``r_s``), conditions on the context less its trend and adds
        that trend at ``X``."""
        dev = self.device_
        tweedie = self.sampler_ == "tweedie"
        kwargs = dict(n_samples=int(n_samples), n_resample=0 if tweedie else self.n_resample,
                      eta=1.0, progress=bool(self.verbose), **self._levels_kwargs())
        r = self._amplitude_draws(int(n_samples), seed)
        y_context = self.y_train_ if r is None else self.y_train_[None, :, None] / r[:, None, None]
        extra = self._extra_noise_std_units()
        posterior = self.context_posterior_
        rng = np.random.RandomState((seed + 1) % 2**32)
        if posterior is not None:  # every sample conditions on its own context draw
            mean, cov = posterior
            draws = mean + rng.standard_normal((int(n_samples), len(mean))) @ _psd_root(cov).T
            y_context = draws[:, :, None] / (1.0 if r is None else r[:, None, None])
        trend_q = None
        if self._trend is not None:  # per-sample trends, standardised units
            trend_c, trend_q = self._trend_draws(X, int(n_samples), r, seed)
            if y_context.ndim == 1:
                y_context = np.broadcast_to(y_context[None, :, None],
                                            (int(n_samples), len(y_context), 1))
            y_context = y_context - (trend_c / (1.0 if r is None else r[:, None]))[:, :, None]
        if tweedie:
            kwargs.update(self._tweedie_covariances(Zc, Z, y_context, int(n_samples), seed))
        with torch_seed(seed, dev), torch.no_grad(), self._threads():
            xc = torch.as_tensor(Zc, dtype=torch.float32, device=dev)
            yc = torch.as_tensor(y_context, dtype=torch.float32, device=dev)
            xt = torch.as_tensor(Z, dtype=torch.float32, device=dev)
            with out_of_memory_as(lambda exc: (
                    f"Sampling {int(n_samples)} joint samples of {Z.shape[0]} points ran out of "
                    f"memory ({error_line(exc)}). Lower 'n_samples' (currently "
                    f"{self.n_samples}) or 'predict_batch_size'.")):
                ys = conditional_sample(self._eps_model(), self.schedule_, xc, yc, xt,
                                        **kwargs)
        ys = ys.squeeze(-1).T.double().cpu().numpy()  # [n_X, S]
        ys = ys if r is None else ys * r
        if trend_q is not None:
            ys = ys + trend_q.T
        if extra:  # new observations carry the extra noise
            ys = ys + np.sqrt(extra) * rng.standard_normal(ys.shape)
        return ys

    def _tweedie_covariances(self, Zc, Z, y_context, n_samples, seed):
        """``covariance`` (and ``covariance_index``) of the Tweedie correction: the prior's
        Gaussian components at the mapped inputs, given the (mean) context, one drawn for
        each sample from their posterior weights (stratified over the samples, with a random
        offset, in a random order), so the samples marginalise the kernel and lengthscale
        as the prior's mixture does."""
        values = y_context.mean(0)[:, 0] if y_context.ndim == 3 else y_context
        config, X = self.prior_config_, np.concatenate([Zc, Z])
        _, w = config.context_components(Zc, values, components=[])  # the weights alone
        if len(w) == 1:
            return {"covariance": config.context_components(X, values)[0][0]}
        rng = np.random.RandomState((seed + 3) % 2**32)
        u = (np.arange(n_samples) + rng.uniform()) / n_samples
        index = rng.permutation(np.minimum(np.searchsorted(np.cumsum(w), u), len(w) - 1))
        used, index = np.unique(index, return_inverse=True)  # the matrices of those drawn
        return {"covariance": config.context_components(X, values, components=used)[0],
                "covariance_index": index}

    def _trend_draws(self, X, n_samples, r, seed):
        """Per-sample trends on the standardised scale, at the context rows and at
        ``X``: (n_samples, n_context) and (n_samples, n_X). Sample ``s`` adds
        ``r_s`` times a draw from the slopes' posterior to the fitted slopes; the
        context's part is relative to the fitted trend (the context is stored less it)."""
        t = self._trend
        rng = np.random.RandomState((seed + 2) % 2**32)
        dev = rng.standard_normal((n_samples, len(t.centre))) @ t.slope_root.T
        if r is not None:
            dev = dev * r[:, None]
        Hc = (self.X_train_ - t.centre) / t.spread
        Hq = (X - t.centre) / t.spread
        trend_c = dev @ Hc.T
        trend_q = self._trend_at(X)[None, :] + dev @ Hq.T
        return trend_c / self.y_std_, trend_q / self.y_std_

    def _prepare_predict(self, X):
        return self._check_X(X)

    def _draw_samples(self, prepared, n_samples, seed):
        return self._sample_std(*prepared, n_samples, seed) * self.y_std_ + self.y_mean_

    def sample_posterior(self, X, n_samples=1, random_state=None):
        """Joint samples of the function at ``X`` given the training data.

        Samples of noisy observations :math:`y_*` (the prior's observation noise included),
        joint over all rows of ``X`` (one sampler run), in the units of ``y``. Rows far
        outside the prior's domain (with ``x_bounds``; they warn) are drawn jointly among
        themselves, apart from the others, so that they leave the draws at the other rows
        as they are without them.

        Parameters
        ----------
        %(sampling_parameters)s

        Returns
        -------
        samples : ndarray of shape (n_X, n_samples)
            Sample axis last, like ``GaussianProcessRegressor.sample_y``.
        """
        return super().sample_posterior(X, n_samples=n_samples, random_state=random_state)

    def score(self, X, y, sample_weight=None):
        """R² of ``predict(X)`` on ``y`` (scikit-learn's regressor score), with its inputs
        checked first."""
        from sklearn.metrics import r2_score

        y = _one_value_per_row(y, "score")
        pred = self.predict(X)
        if len(y) != len(pred):
            raise ValueError(f"y has {len(y)} values but X has {len(pred)} rows; score needs "
                             "one target per row of X.")
        if not np.isfinite(y).all():
            raise ValueError(f"y holds {int((~np.isfinite(y)).sum())} NaN or infinite values; "
                             "score needs finite targets. Drop those rows.")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.ndim != 1:
                raise ValueError(f"sample_weight of NDPRegressor.score must be 1-D, one weight "
                                 f"per row of X; got shape {sample_weight.shape}. Pass "
                                 "np.ravel(sample_weight) if it holds one weight per row.")
            if len(sample_weight) != len(y):
                raise ValueError(f"sample_weight has {len(sample_weight)} entries but X has "
                                 f"{len(y)} rows; pass one weight per row.")
        return float(r2_score(y, pred, sample_weight=sample_weight))

    def sample_y(self, X, n_samples=1, random_state=0):
        """Joint samples of the function at ``X`` given the training data.

        The same as :meth:`sample_posterior`, under the name and signature of
        ``GaussianProcessRegressor.sample_y``, whose ``random_state`` defaults to 0: repeated
        calls give the same samples unless a seed (or ``None``) is passed.

        Parameters
        ----------
        %(X)s
        %(n_samples)s
        random_state : int, RandomState instance or None, default=0
            Seeds the sampler's noise: an int gives the same samples on every call on the
            CPU; ``None`` draws a seed from numpy's global random state, so samples differ
            between calls. The caller's torch random state is left untouched.

        Returns
        -------
        samples : ndarray of shape (n_X, n_samples)
            Samples of noisy observations in the units of ``y``, sample axis last.
        """
        return self.sample_posterior(X, n_samples=n_samples, random_state=random_state)

    def sample_prior(self, X, n_samples=1, random_state=None):
        """Joint samples of the *prior* (no conditioning) at ``X``, in the units of ``y``.

        Uses the fitted target scale; the input map is the one of the call without the
        context (the box of ``X`` alone, or ``x_bounds``).

        Parameters
        ----------
        %(sampling_parameters)s

        Returns
        -------
        samples : ndarray of shape (n_X, n_samples)
            Prior function samples (observation noise included) at the rows of ``X``,
            shifted and scaled by the fitted ``y_mean_`` and ``y_std_``, plus the fitted
            trend (``trend="linear"``), sample axis last.
        """
        _, Z, X = self._check_X(X, context=False)
        n_samples = check_n_samples(n_samples)
        dev = self.device_
        with torch_seed(draw_seed(random_state), dev), torch.no_grad(), self._threads():
            ys = prior_sample(
                self._eps_model(), self.schedule_,
                torch.as_tensor(Z, dtype=torch.float32, device=dev), n_samples=n_samples,
                **self._levels_kwargs(conditional=False))
        return (ys.squeeze(-1).T.double().cpu().numpy() * self.y_std_ + self.y_mean_
                + self._trend_at(X)[:, None])

    # -- predict ---------------------------------------------------------------------------
    def predict(self, X, return_std=False, return_cov=False):
        """Posterior mean (and std or covariance) from ``n_samples`` joint samples.

        Deterministic for a fitted estimator (the Monte Carlo noise is seeded by ``seed_``).
        Query points are conditioned in blocks of ``predict_batch_size`` (jointly when
        ``return_cov``).

        Parameters
        ----------
        %(X)s
        return_std : bool, default=False
            Also return the predictive standard deviation (observation noise included when
            ``predict_noise=True``).
        return_cov : bool, default=False
            Also return the joint predictive covariance.

        Returns
        -------
        y_mean : ndarray of shape (n_X,)
            Mean of the posterior samples, in the units of ``y``.
        y_std : ndarray of shape (n_X,)
            Standard deviation of the samples (observation noise included with
            ``predict_noise=True``); only with ``return_std``.
        y_cov : ndarray of shape (n_X, n_X)
            Covariance of the samples, drawn jointly over all query points (observation
            noise included with ``predict_noise=True``); only with ``return_cov``. With
            ``predict_noise=False`` the noise variance is subtracted from its eigenvalues,
            clipped at zero, so that it stays positive semi-definite (its diagonal is then at
            least the samples' variances less the noise, which ``return_std`` clips one by
            one).
        """
        if return_std and return_cov:
            raise RuntimeError(
                "At most one of return_std or return_cov can be requested (as "
                "GaussianProcessRegressor.predict)."
            )
        Zc, Z, X = self._check_X(X)
        if return_cov:
            noise_var = 0.0 if self.predict_noise else self._noise_std_units()
            ys = self._sample_std(Zc, Z, X, self.n_samples, self.seed_)
            cov = np.atleast_2d(np.cov(ys))
            if noise_var:
                # the noise is taken off the eigenvalues, clipped at zero: the samples'
                # covariance has eigenvalues below the noise (all but n_samples - 1 of them
                # when the query points outnumber the samples), and subtracting the noise
                # from its diagonal alone would leave an indefinite matrix
                lam, vecs = np.linalg.eigh(cov)
                cov = (vecs * np.clip(lam - noise_var, 0.0, None)) @ vecs.T
            mean = ys.mean(1) * self.y_std_ + self.y_mean_
            return mean, cov * self.y_std_ ** 2
        mean, var = self._marginals(Zc, Z, X, noise=self.predict_noise)
        mean = mean * self.y_std_ + self.y_mean_
        if not return_std:
            return mean
        return mean, np.sqrt(var) * self.y_std_

    def _marginals(self, Zc, Z, X, *, noise):
        """Standardised posterior mean and variance at ``Z`` from ``n_samples`` samples per
        block of ``predict_batch_size`` points (seeded by the fit); ``noise=False`` subtracts
        the prior's observation-noise variance."""
        means, variances = [], []
        for k, start in enumerate(range(0, Z.shape[0], self.predict_batch_size)):
            stop = start + self.predict_batch_size
            ys = self._sample_std(Zc, Z[start:stop], X[start:stop], self.n_samples,
                                  self.seed_ + k)
            means.append(ys.mean(1))
            variances.append(ys.var(1, ddof=1))
        var = np.concatenate(variances)
        if not noise:
            var = np.clip(var - self._noise_std_units(), 0.0, None)
        return np.concatenate(means), var

    def _extra_noise_std_units(self):
        """``alpha_`` on the standardised scale."""
        return self.alpha_ / self.y_std_ ** 2 if self.alpha_ else 0.0

    def _noise_std_units(self):
        """The samples' observation-noise variance on the standardised scale: the prior's
        plus ``alpha_``."""
        return float(self.prior_config_.noise) + self._extra_noise_std_units()

    def log_likelihood(self, X, y, *, joint=False):
        """Mean log predictive density per point of ``y`` at ``X`` (higher is better).

        The predictive is the Gaussian moment-matched to ``n_samples`` posterior samples
        (the paper's metric, Dutordoir et al., 2023, Sec. 5.1): ``joint=True`` uses the joint
        multivariate Gaussian over all rows (needs ``n_samples`` > n_X), ``joint=False`` the
        per-point marginals. Observation noise is always included.

        It scores new observations given the training data, so it is meant for held-out
        points; it is not ``GaussianProcessRegressor.log_marginal_likelihood`` (the
        evidence of the training data, which NDPRegressor does not provide). At the
        training inputs it is the density of their values under the posterior conditioned
        on those same values, higher than on held-out points.

        Parameters
        ----------
        %(X)s
        y : array-like of shape (n_X,) or (n_X, 1)
            Observed values at the rows of ``X``, in the units of ``y`` of ``fit``; finite.
        joint : bool, default=False
            Score the joint density of all points (``True``) rather than the mean of the
            per-point marginal densities.

        Returns
        -------
        ll : float
            Log density divided by the number of points, in the units of ``y``.
        """
        y = _one_value_per_row(y, "log_likelihood")
        Zc, Z, X = self._check_X(X)
        if len(y) != Z.shape[0]:
            raise ValueError(f"X has {Z.shape[0]} rows but y has {len(y)} values.")
        if not np.isfinite(y).all():
            raise ValueError(f"y holds {int((~np.isfinite(y)).sum())} NaN or infinite values; "
                             "the log-likelihood needs finite observations. Drop those rows.")
        if joint:
            if self.n_samples <= Z.shape[0]:
                raise ValueError(
                    f"joint=True needs n_samples > n_X for a non-singular covariance; got "
                    f"n_samples={self.n_samples} and {Z.shape[0]} points. Raise 'n_samples' "
                    "or use joint=False.")
            ys = (self._sample_std(Zc, Z, X, self.n_samples, self.seed_) * self.y_std_
                  + self.y_mean_)
            return gaussian_log_likelihood(y, ys, joint=True)
        mean, var = self._marginals(Zc, Z, X, noise=True)
        mean = mean * self.y_std_ + self.y_mean_
        var = np.maximum(var * self.y_std_ ** 2, 1e-12)
        return float(np.mean(-0.5 * (np.log(2 * np.pi * var) + (y - mean) ** 2 / var)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = False
        return tags

    # -- persistence -------------------------------------------------------------------------
    def __getstate__(self):
        state = super().__getstate__()
        if "module_" in state:  # weights travel on the CPU; loadable without CUDA
            import copy

            state["module_"] = copy.deepcopy(state["module_"]).cpu()
            state["schedule_"] = state["schedule_"].cpu()
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        if "module_" in self.__dict__:
            for name in ("_trend", "trend_coef_", "trend_intercept_"):  # a file without
                self.__dict__.setdefault(name, None)                     # them: no trend
            if str(self.device_).startswith("cuda") and not torch.cuda.is_available():
                self.device_ = "cpu"
            self.module_ = self.module_.to(self.device_)
            self.schedule_ = self.schedule_.to(self.device_)


def _one_value_per_row(y, method):
    """The targets ``y`` that ``NDPRegressor.<method>`` scores, as a float64 vector: 1-D, or
    a single column (as ``GaussianProcessRegressor.score`` takes it); a row vector or
    several columns are refused rather than flattened into one value per entry."""
    try:
        values = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y of NDPRegressor.{method} must be numbers ({exc}).") from exc
    if values.ndim == 2 and values.shape[1] == 1:
        return values[:, 0]
    if values.ndim != 1:
        raise ValueError(
            f"y of NDPRegressor.{method} must hold one value per row of X, of shape (n_X,) "
            f"or (n_X, 1); got shape {values.shape}. NDPRegressor models a single output: "
            "pass a 1-D y (np.ravel(y) for a row vector), or score each column with the "
            "estimator fitted to it.")
    return values


def gaussian_log_likelihood(y, samples, *, joint=True, jitter=1e-9):
    """Log density per point of ``y`` (n,) under the Gaussian moment-matched to ``samples``
    (n, S): joint over the n points (``joint=True``, the paper's metric) or marginal."""
    y = np.asarray(y, dtype=np.float64)
    mean = samples.mean(1)
    if not joint:
        var = samples.var(1, ddof=1) + jitter
        return float(np.mean(-0.5 * (np.log(2 * np.pi * var) + (y - mean) ** 2 / var)))
    cov = np.atleast_2d(np.cov(samples)) + jitter * np.eye(len(y))
    L = np.linalg.cholesky(cov)
    z = np.linalg.solve(L, y - mean)
    logdet = 2 * np.sum(np.log(np.diag(L)))
    return float(-0.5 * (z @ z + logdet + len(y) * np.log(2 * np.pi)) / len(y))


def log_likelihood_scorer(estimator, X, y):
    """Scorer for ``GridSearchCV(scoring=log_likelihood_scorer)``: mean log predictive density
    per held-out point (marginal, moment-matched), i.e. the negative NLL (greater is better).

    A plain callable ``(estimator, X, y)`` is what scikit-learn's ``scoring`` accepts; a
    ``make_scorer`` wrapper would need ``predict`` outputs, but the likelihood needs the
    predictive variance, which only the estimator can provide. A
    :class:`~sklearn.pipeline.Pipeline` that ends with an :class:`NDPRegressor` is scored
    as its last step on ``X`` transformed by the steps before it, so the scorer works in a
    search or cross-validation of such a pipeline. Other meta-estimators are refused: they
    may change ``X`` or ``y`` before their inner estimator sees them (a
    :class:`~sklearn.compose.TransformedTargetRegressor` changes the units of ``y``), so the
    inner log-likelihood is not theirs.

    Parameters
    ----------
    estimator : NDPRegressor or sklearn.pipeline.Pipeline
        A fitted estimator with a ``log_likelihood`` method, or a fitted pipeline whose last
        step has one.
    X : array-like of shape (n_X, n_features)
        Held-out inputs, as ``estimator.predict`` takes them.
    y : array-like of shape (n_X,)
        Held-out targets at ``X``.

    Returns
    -------
    score : float
        ``log_likelihood(X, y)`` of the estimator (of a pipeline's last step, on the
        transformed ``X``): the mean marginal log predictive density per point (higher is
        better).
    """
    final, Xt = _final_step(estimator, X)
    if callable(getattr(final, "log_likelihood", None)):
        return final.log_likelihood(Xt, y)
    need = ("log_likelihood_scorer scores an estimator with a log_likelihood method (an "
            "NDPRegressor), or a Pipeline whose last step has one")
    got = type(estimator).__name__
    if final is not estimator:
        raise TypeError(f"{need}; got a {got} whose last step is a {type(final).__name__}. "
                        "End the pipeline with an NDPRegressor, or use a scikit-learn scoring "
                        "string such as 'neg_mean_squared_error' for this pipeline.")
    inner = _wrapped_estimator(estimator)
    if inner is not None:
        raise TypeError(
            f"{need}; got a {got}, a meta-estimator around {type(inner).__name__}. Only a "
            "Pipeline is unwrapped (the scorer runs X through its steps before the last): "
            "another meta-estimator may change X or y before its inner estimator sees them, "
            "so the inner log-likelihood is not its own. Score the NDPRegressor itself (a "
            "search's best_estimator_; in a Pipeline if X needs a transform), or use a "
            "scikit-learn scoring string such as 'neg_mean_squared_error'.")
    raise TypeError(f"{need}; got a {got}. Use an NDPRegressor, or a scikit-learn scoring "
                    "string such as 'neg_mean_squared_error' for this estimator.")


def _wrapped_estimator(estimator):
    """The estimator a scikit-learn meta-estimator wraps (fitted one first), or ``None``."""
    for name in ("best_estimator_", "regressor_", "estimator_", "regressor", "estimator"):
        inner = getattr(estimator, name, None)
        if inner is not None and hasattr(inner, "fit"):
            return inner
    return None
