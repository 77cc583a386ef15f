"""Thompson-sampling Bayesian optimisation."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skdiff import NDPRegressor
from skdiff.bayes_opt import (
    BRANIN_BOUNDS,
    BRANIN_MIN,
    HARTMANN3_MIN,
    branin,
    hartmann3,
    thompson_sampling,
)
from skdiff.diffusion import PriorConfig, TrainedPrior


def _objective(X):
    return (X[:, 0] - 0.3) ** 2 + 0.1 * np.sin(5 * X[:, 0])


def test_hartmann3_minimum():
    x_star = np.array([[0.114614, 0.555649, 0.852547]])
    assert hartmann3(x_star)[0] == pytest.approx(HARTMANN3_MIN, abs=1e-4)
    rng = np.random.default_rng(0)
    assert np.all(hartmann3(rng.uniform(size=(500, 3))) >= HARTMANN3_MIN)
    with pytest.raises(ValueError, match="dimension 3"):
        hartmann3(np.zeros((2, 2)))


def test_branin_minima():
    minima = np.array([[-np.pi, 12.275], [np.pi, 2.275], [9.42478, 2.475]])
    np.testing.assert_allclose(branin(minima), BRANIN_MIN, atol=1e-5)
    (lo1, hi1), (lo2, hi2) = BRANIN_BOUNDS
    grid = np.stack(np.meshgrid(np.linspace(lo1, hi1, 301), np.linspace(lo2, hi2, 301)),
                    -1).reshape(-1, 2)
    values = branin(grid)
    assert values.min() >= BRANIN_MIN - 1e-9 and values.max() == pytest.approx(308.13, abs=0.01)
    assert branin([np.pi, 2.275]).shape == (1,)
    with pytest.raises(ValueError, match="dimension 2, of shape \\(n, 2\\), for branin; got "
                       "shape \\(2, 3\\)"):
        branin(np.zeros((2, 3)))


def test_random_search_contract():
    res = thompson_sampling(_objective, [(0, 1)], model="random", n_iter=6, n_init=2,
                            random_state=0)
    assert res.X.shape == (8, 1) and res.y.shape == (8,)
    np.testing.assert_allclose(res.y, _objective(res.X))
    assert np.all(np.diff(res.best_so_far) <= 0) and res.y_best == res.y.min()
    again = thompson_sampling(_objective, [(0, 1)], model="random", n_iter=6, n_init=2,
                              random_state=0)
    np.testing.assert_array_equal(res.X, again.X)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_gpr_thompson_finds_the_minimum():
    gpr = GaussianProcessRegressor(ConstantKernel() * RBF(0.2), normalize_y=True)
    res = thompson_sampling(_objective, [(0, 1)], model=gpr, n_iter=10, random_state=0)
    grid = np.linspace(0, 1, 2001)[:, None]
    assert res.y_best - _objective(grid).min() < 0.01


def test_ndp_thompson_improves_without_retraining():
    model = NDPRegressor(x_bounds=[(0, 1)], n_sampling_steps=10, n_resample=2, n_samples=2,
                         device="cpu", random_state=0)
    res = thompson_sampling(_objective, [(0, 1)], model=model, n_iter=8, n_init=2,
                            n_candidates=32, random_state=1)
    grid = np.linspace(0, 1, 2001)[:, None]
    assert res.y_best - _objective(grid).min() < 0.02
    assert res.best_so_far[-1] < res.best_so_far[1]


def test_bad_arguments():
    with pytest.raises(ValueError, match="'bounds'"):
        thompson_sampling(_objective, [(1, 0)], model="random")
    with pytest.raises(ValueError, match="'n_iter'"):
        thompson_sampling(_objective, [(0, 1)], model="random", n_iter=-1)
    with pytest.raises(TypeError, match="sample_y"):
        thompson_sampling(_objective, [(0, 1)], model=object())
    with pytest.raises(ValueError, match="'bounds' parameter of thompson_sampling must be an "
                       "array-like. Got 'bogus' instead"):
        thompson_sampling(_objective, "bogus", model="random")
    with pytest.raises(ValueError, match="'bounds' must be finite numbers .*got \\[\\(0, nan\\)"):
        thompson_sampling(_objective, [(0, np.nan)], model="random")
    with pytest.raises(ValueError, match="'random_state' parameter .* Got 'seed' instead"):
        thompson_sampling(_objective, [(0, 1)], model="random", random_state="seed")
    with pytest.raises(MemoryError, match="n_init=1000000000000 points in 1 dimensions"):
        thompson_sampling(_objective, [(0, 1)], model="random", n_init=10**12)
    with pytest.raises(ValueError, match="'X' parameter of hartmann3 must be an array-like"):
        hartmann3("bogus")


@pytest.mark.parametrize("objective, shape", [(lambda X: np.full(len(X), np.nan), "\\(3,\\)"),
                                              (lambda X: np.zeros((len(X), 2)), "\\(3, 2\\)")])
def test_objective_must_return_one_finite_value_per_point(objective, shape):
    with pytest.raises(ValueError, match=f"'objective' must return one finite value per point, "
                       f"of shape \\(3,\\); got shape {shape}"):
        thompson_sampling(objective, [(0, 1)], model="random", n_iter=1, random_state=0)


def test_default_model_samples_with_the_tweedie_correction(monkeypatch):
    """``model=None``: an NDP on the ``gp`` prior whose samples are Tweedie-corrected (not
    the fast path ``sampler="auto"`` takes with that prior), and it finds the minimum."""
    used = []
    sample_y = NDPRegressor.sample_y

    def recording(self, *args, **kwargs):
        used.append((self.sampler, self.sampler_, self.alpha))
        return sample_y(self, *args, **kwargs)

    monkeypatch.setattr(NDPRegressor, "sample_y", recording)
    res = thompson_sampling(_objective, [(0, 1)], n_iter=8, n_init=2, n_candidates=32,
                            random_state=1)
    assert len(used) == 8 and set(used) == {("tweedie", "tweedie", 0.0)}
    grid = np.linspace(0, 1, 2001)[:, None]
    assert res.y_best - _objective(grid).min() < 0.02
    assert res.best_so_far[-1] < res.best_so_far[1]


#: The values every fit of ``_Recorder`` saw (``thompson_sampling`` fits a clone).
_SEEN = []


class _Recorder:
    """A model that records the values it is fitted to and samples the candidates' first
    coordinate (so the search walks left)."""

    def get_params(self, deep=False):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y):
        _SEEN.append(np.array(y))
        return self

    def sample_y(self, X, n_samples=1, random_state=None):
        return np.repeat(X[:, :1], n_samples, axis=1)


class _CandidateRecorder(_Recorder):
    """A ``_Recorder`` that also keeps the candidate sets it is asked to sample."""

    candidates = []

    def sample_y(self, X, n_samples=1, random_state=None):
        self.candidates.append(np.array(X))
        return super().sample_y(X, n_samples, random_state)


def test_local_candidates_gather_around_the_best_point():
    bounds = np.array([(0.0, 10.0), (-1.0, 1.0)])
    width = bounds[:, 1] - bounds[:, 0]
    _SEEN.clear()
    _CandidateRecorder.candidates = []
    res = thompson_sampling(lambda X: (X[:, 0] - 7) ** 2 + X[:, 1] ** 2, bounds,
                            model=_CandidateRecorder(), n_iter=6, n_candidates=40,
                            local_fraction=0.25, random_state=0)
    assert len(_CandidateRecorder.candidates) == 6
    for k, cand in enumerate(_CandidateRecorder.candidates):
        assert cand.shape == (40, 2)
        assert np.all(cand >= bounds[:, 0]) and np.all(cand <= bounds[:, 1])
        best = res.X[np.argmin(res.y[:3 + k])]
        # box-relative distance to the best point so far: the first 10 are local
        dist = np.abs(cand - best) / width
        assert dist[:10].mean() < 0.1 and dist[10:].mean() > 0.2
    # local_fraction=0: uniform candidates only, as in the paper
    _CandidateRecorder.candidates = []
    res = thompson_sampling(lambda X: (X[:, 0] - 7) ** 2 + X[:, 1] ** 2, bounds,
                            model=_CandidateRecorder(), n_iter=6, n_candidates=40,
                            local_fraction=0.0, random_state=0)
    for k, cand in enumerate(_CandidateRecorder.candidates):
        best = res.X[np.argmin(res.y[:3 + k])]
        dist = np.abs(cand - best) / width
        assert dist.mean() > 0.2 and (dist < 0.05).all(1).mean() < 0.1
    # by default ("auto") half of them local in two dimensions ...
    _CandidateRecorder.candidates = []
    res = thompson_sampling(lambda X: (X[:, 0] - 7) ** 2 + X[:, 1] ** 2, bounds,
                            model=_CandidateRecorder(), n_iter=6, n_candidates=40,
                            random_state=0)
    for k, cand in enumerate(_CandidateRecorder.candidates):
        best = res.X[np.argmin(res.y[:3 + k])]
        dist = np.abs(cand - best) / width
        assert dist[:20].mean() < 0.1 and dist[20:].mean() > 0.2
    # ... the same run as local_fraction=0.5, and in one dimension as local_fraction=0
    for box, frac in ((bounds, 0.5), (bounds[:1], 0.0)):
        runs = [thompson_sampling(lambda X: (X[:, 0] - 7) ** 2, box, model="random", n_iter=6,
                                  n_candidates=40, random_state=0, **kw).X
                for kw in ({}, {"local_fraction": frac})]
        np.testing.assert_array_equal(runs[0], runs[1])
    with pytest.raises(ValueError, match="'local_fraction' parameter .*'auto'.* range "
                       "\\[0.0, 1.0\\). Got 1.0"):
        thompson_sampling(_objective, [(0, 1)], model="random", local_fraction=1.0)
    with pytest.raises(ValueError, match="'local_fraction' parameter .* Got 'local'"):
        thompson_sampling(_objective, [(0, 1)], model="random", local_fraction="local")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_local_candidates_refine_the_minimum_with_gpr():
    # Branin's box is wide: 64 uniform candidates rarely fall near a minimum, local ones
    # around the best point do
    from sklearn.gaussian_process.kernels import Matern

    gpr = GaussianProcessRegressor(ConstantKernel() * Matern([3.0, 3.0], nu=2.5),
                                   normalize_y=True)
    regret = {}
    for frac in (0.0, 0.5):
        runs = [thompson_sampling(branin, BRANIN_BOUNDS, model=gpr, n_iter=20,
                                  local_fraction=frac, random_state=seed).y_best
                for seed in range(3)]
        regret[frac] = np.mean(runs) - BRANIN_MIN
    # mean regret after 20 evaluations: 0.005 with local candidates, 0.26 without
    assert regret[0.5] < 0.03 and regret[0.0] > 0.1


def _skewed(X):
    return np.exp(8 * X[:, 0])


@pytest.mark.parametrize("y_transform, power", [("auto", False), ("power", True),
                                                (None, False)])
def test_y_transform_warps_the_values_the_model_sees(y_transform, power):
    from sklearn.preprocessing import PowerTransformer, StandardScaler

    _SEEN.clear()
    res = thompson_sampling(_skewed, [(0, 1)], model=_Recorder(), n_iter=4,
                            y_transform=y_transform, random_state=0)
    assert len(_SEEN) == 4
    for k, seen in enumerate(_SEEN):
        y = res.y[:3 + k]
        expected = y
        if power:
            expected = PowerTransformer().fit_transform(
                StandardScaler().fit_transform(y[:, None])).ravel()
        np.testing.assert_allclose(seen, expected, rtol=1e-10)
        # the ranking, and so the candidate a sample ranks lowest, is unchanged
        np.testing.assert_array_equal(np.argsort(seen), np.argsort(y))
    if power:  # standardised
        assert abs(_SEEN[-1].mean()) < 1e-9 and _SEEN[-1].std() == pytest.approx(1)


def test_power_transform_leaves_a_dip_below_a_plateau_as_it_is():
    # values skewed to the left (a narrow dip under a plateau): the maximum-likelihood
    # Yeo-Johnson exponent is above 1, which would squeeze the low values together; capped
    # at 1 the transform is the identity, so the model sees the standardised values
    from sklearn.preprocessing import PowerTransformer, StandardScaler

    from skdiff.bayes_opt import _resolve_y_transform

    _SEEN.clear()
    res = thompson_sampling(lambda X: -_skewed(X), [(0, 1)], model=_Recorder(), n_iter=4,
                            y_transform="power", random_state=0)
    for k, seen in enumerate(_SEEN):
        y = res.y[:3 + k][:, None]
        assert PowerTransformer().fit(StandardScaler().fit_transform(y)).lambdas_[0] > 1
        np.testing.assert_allclose(seen, StandardScaler().fit_transform(y).ravel(), atol=1e-9)
    # on values skewed to the right the exponent is below the cap: HEBO's transform
    y = _skewed(np.linspace(0, 1, 9)[:, None])[:, None]
    z = StandardScaler().fit_transform(y)
    np.testing.assert_allclose(_resolve_y_transform("power", None).fit_transform(y),
                               PowerTransformer().fit_transform(z), atol=1e-9)


def test_power_transform_ignores_the_objectives_units():
    seen = []
    for scale, shift in ((1.0, 0.0), (1e-3, 5.0), (1e4, -7.0)):
        _SEEN.clear()
        thompson_sampling(lambda X, a=scale, b=shift: a * _skewed(X) + b, [(0, 1)],
                          model=_Recorder(),
                          n_iter=4, y_transform="power", random_state=0)
        seen.append(np.concatenate(_SEEN))
    np.testing.assert_allclose(seen[1], seen[0], atol=1e-6)
    np.testing.assert_allclose(seen[2], seen[0], atol=1e-6)


def test_y_transform_auto_warps_for_the_ndp_only():
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import PowerTransformer

    from skdiff.bayes_opt import _CappedYeoJohnson, _resolve_y_transform

    power = _resolve_y_transform("auto", NDPRegressor())
    assert isinstance(power, Pipeline) and isinstance(power[-1], _CappedYeoJohnson)
    assert isinstance(_resolve_y_transform("auto", NDPRegressor(prior="se")), Pipeline)
    # a prior from a path may be a family's, in the family's units; values as given
    assert _resolve_y_transform("auto", NDPRegressor(prior="family.pt")) is None
    assert _resolve_y_transform("auto", NDPRegressor(normalize_y=False)) is None
    gp_config = PriorConfig(hidden_dim=16, n_layers=1, n_heads=2)
    curves = [(np.linspace(0, 1, 8), np.sin(np.linspace(0, 1, 8) + p)) for p in range(4)]
    for config, warps in ((gp_config, True), (gp_config.for_functions(curves), False)):
        prior = TrainedPrior(config, config.network().state_dict())
        got = _resolve_y_transform("auto", NDPRegressor(prior=prior))
        assert isinstance(got, Pipeline) if warps else got is None
    assert _resolve_y_transform("auto", GaussianProcessRegressor()) is None
    assert _resolve_y_transform("power", "random") is None
    custom = PowerTransformer(standardize=False)
    got = _resolve_y_transform(custom, GaussianProcessRegressor())
    assert got is not custom and got.get_params() == custom.get_params()


def test_y_transform_must_be_an_increasing_transformer():
    from sklearn.preprocessing import FunctionTransformer

    with pytest.raises(ValueError, match="'y_transform' parameter .* Got 'log' instead"):
        thompson_sampling(_objective, [(0, 1)], model="random", y_transform="log")
    with pytest.raises(ValueError, match="'y_transform' must be monotone increasing .*"
                       "FunctionTransformer reorders the values"):
        thompson_sampling(_skewed, [(0, 1)], model=_Recorder(), n_iter=1, random_state=0,
                          y_transform=FunctionTransformer(np.negative))
    with pytest.raises(ValueError, match="'y_transform' must map the 3 values to 3 finite "
                       "values; got shape \\(3, 2\\)"):
        thompson_sampling(_skewed, [(0, 1)], model=_Recorder(), n_iter=1, random_state=0,
                          y_transform=FunctionTransformer(lambda v: np.hstack([v, v])))


def test_denoised_draw_keeps_the_shared_directions_and_drops_white_jitter():
    """8 joint samples at 64 points: a mean, two smooth directions of spread, white jitter of
    std 0.1 per sample. The draw keeps the spread along the two directions and the jitter
    left is what the mean and the first sample's weights on them carry: a variance of
    (1 + 2) / 8 of the sample's, so about 0.61 of its standard deviation."""
    from skdiff.bayes_opt import _denoised_draw

    x = np.linspace(0, 1, 64)
    basis = np.c_[np.sin(3 * x), np.cos(5 * x)] * 2.0
    smooth = np.c_[x ** 2, basis]

    def jitter(v):  # mean square off the smooth functions
        coef = np.linalg.lstsq(smooth, v, rcond=None)[0]
        return np.mean((v - smooth @ coef) ** 2)

    raw, drawn, spread = [], [], []
    for seed in range(50):
        rng = np.random.RandomState(seed)
        clean = (x ** 2)[:, None] + basis @ rng.standard_normal((2, 8))
        noisy = clean + 0.1 * rng.standard_normal(clean.shape)
        draw = _denoised_draw(noisy)
        raw.append(jitter(noisy[:, 0]))
        drawn.append(jitter(draw))
        # the draw follows the first sample along the smooth directions, not the mean
        spread.append(np.abs(draw - clean[:, 0]).max() < np.abs(draw - clean.mean(1)).max())
    ratio = np.sqrt(np.mean(drawn) / np.mean(raw))
    assert 0.5 < ratio < 0.7, ratio
    assert np.mean(spread) > 0.9
    # white noise alone shares no direction: the draw is the mean
    pure = np.random.RandomState(0).standard_normal((64, 8))
    np.testing.assert_allclose(_denoised_draw(pure), pure.mean(1))
    # too few points to tell a direction from noise, or one sample: the first sample
    few = pure[:5]
    np.testing.assert_array_equal(_denoised_draw(few), few[:, 0])
    np.testing.assert_array_equal(_denoised_draw(pure[:, :1]), pure[:, 0])


class _CountingRecorder(_Recorder):
    """A ``_Recorder`` that keeps how many samples it is asked for."""

    asked = []

    def sample_y(self, X, n_samples=1, random_state=None):
        self.asked.append(n_samples)
        return super().sample_y(X, n_samples, random_state)


def test_denoise_draws_several_samples_for_a_noise_floor_model_only(monkeypatch):
    import skdiff.bayes_opt as bo

    model = _CountingRecorder()
    thompson_sampling(_objective, [(0, 1)], model=model, n_iter=2, denoise="auto",
                      random_state=0)
    assert _CountingRecorder.asked == [1, 1]  # "auto": exact samples, one per iteration
    _CountingRecorder.asked = []
    res = thompson_sampling(_objective, [(0, 1)], model=model, n_iter=2, denoise=True,
                            random_state=0)
    assert _CountingRecorder.asked == [bo.DENOISE_SAMPLES] * 2
    # the recorder's samples are all the first coordinate: the search still walks left
    assert res.X[-1, 0] < 0.1
    _CountingRecorder.asked = []
    monkeypatch.setattr(bo, "_standardises_with_fixed_noise", lambda m: True)
    thompson_sampling(_objective, [(0, 1)], model=model, n_iter=1, y_transform=None,
                      denoise="auto", random_state=0)
    assert _CountingRecorder.asked == [bo.DENOISE_SAMPLES]
    # off by default, even for a model with a noise floor: one joint sample per iteration
    _CountingRecorder.asked = []
    thompson_sampling(_objective, [(0, 1)], model=model, n_iter=2, y_transform=None,
                      random_state=0)
    assert _CountingRecorder.asked == [1, 1]
    with pytest.raises(ValueError, match="'denoise' parameter .* Got 'yes' instead"):
        thompson_sampling(_objective, [(0, 1)], model=model, denoise="yes")


def test_one_initial_point_for_the_ndp_model_is_refused_before_any_evaluation():
    calls = []

    def objective(X):
        calls.append(len(X))
        return hartmann3(X)

    with pytest.raises(ValueError, match=r"n_init=1: the NDPRegressor model .* n_init >= 2"):
        thompson_sampling(objective, [(0, 1)] * 3, n_init=1, n_iter=2, random_state=0)
    assert not calls
    # random search, or no iteration, needs no model fit
    assert len(thompson_sampling(objective, [(0, 1)] * 3, model="random", n_init=1, n_iter=2,
                                 random_state=0).y) == 3
