"""FlowformerRegressor / FlowformerClassifier: learning, real data, the sklearn contract, errors."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, TimeSeriesSplit, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdiff import FlowformerClassifier, FlowformerRegressor
from skdiff.datasets import load_ett, make_windows
from tests._shared import assert_the_fitted_head_is_kept

FAST = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=2, batch_size=32, device="cpu",
            random_state=0)


def _waves(n, L=24, seed=0):
    """Noisy sines with random frequency and phase; y = x_5 - x_17 (needs the positions)."""
    rng = np.random.default_rng(seed)
    t = np.arange(L) / L
    f, ph = rng.uniform(1, 3, n), rng.uniform(0, 2 * np.pi, n)
    X = np.sin(2 * np.pi * f[:, None] * t + ph[:, None]) + 0.05 * rng.normal(size=(n, L))
    return X, X[:, 5] - X[:, 17]


@pytest.fixture(scope="module")
def waves():
    return _waves(300)


@pytest.fixture(scope="module")
def fitted(waves):
    X, y = waves
    y2 = np.column_stack([y, -2 * y])
    return FlowformerRegressor(**{**FAST, "max_epochs": 3}).fit(X[:200], y2[:200]), X, y2


def test_learns_a_position_dependent_target(waves):
    X, y = waves
    reg = FlowformerRegressor(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=30, lr=5e-3,
                              batch_size=32, instance_norm=False, random_state=0, device="cpu")
    assert reg.fit(X[:220], y[:220]).score(X[220:], y[220:]) > 0.8


def test_patch_tokens_learn_and_compose(waves):
    # PatchTST-style tokens of 6 steps every 3 (7 tokens instead of 24) still find the two
    # positions the target reads; the network is sized for the patches; pickling and
    # channel-graph mode work with them
    X, y = waves
    reg = FlowformerRegressor(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=30, lr=5e-3,
                              batch_size=32, instance_norm=False, random_state=0, device="cpu",
                              patch_len=6, patch_stride=3, pooling="flatten")
    assert reg.fit(X[:220], y[:220]).score(X[220:], y[220:]) > 0.9
    assert reg.module_.max_tokens == 7 and reg.module_.embed.in_features == 6
    again = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(reg.predict(X[220:]), again.predict(X[220:]))
    X3 = np.stack([X, -X], axis=-1)[:100]
    graph = FlowformerRegressor(**FAST, patch_len=5, skip="window").fit(X3, y[:100],
                                                                        adjacency=np.ones((2, 2)))
    assert graph.module_.max_tokens == 5 and graph.predict(X3[:4]).shape == (4,)


def test_n_init_keeps_the_initialisation_with_the_lowest_validation_loss():
    X, y = _waves(200)
    # the level skip: with the window skip both fits may forecast with the ridge alone
    kw = dict(**{**FAST, "max_epochs": 4}, validation_fraction=0.2, skip="level")
    one = FlowformerRegressor(**kw).fit(X, y)
    best = FlowformerRegressor(**kw, n_init=3).fit(X, y)
    # the first initialisation is the plain fit; the others differ
    assert best.init_scores_.shape == (3,) and len(np.unique(best.init_scores_)) == 3
    assert best.init_scores_[0] == pytest.approx(min(one.history_[:, "valid_loss"]), rel=1e-6)
    # the kept network is the argmin, with its own history and seed
    assert min(best.history_[:, "valid_loss"]) == pytest.approx(best.init_scores_.min(),
                                                                rel=1e-6)
    k = int(np.argmin(best.init_scores_))
    assert (best.seed_ == one.seed_) == (k == 0)
    assert np.array_equal(best.predict(X[:5]), one.predict(X[:5])) == (k == 0)
    # without validation rows: the training loss without dropout of the weights kept (the
    # last or the restored ones, as the restorer measured them); the classifier too
    no_val = FlowformerRegressor(**FAST, early_stopping=False, n_init=2).fit(X, y)
    last, best = dict(no_val.net_.callbacks_)["restore_lowest_loss"].losses_
    kept = last if no_val.restored_epoch_ is None else best
    assert no_val.init_scores_.min() == pytest.approx(kept, rel=1e-6)
    Xb, labels = _bumps(80)
    clf = FlowformerClassifier(**FAST, n_init=2).fit(Xb, labels)
    assert clf.init_scores_.shape == (2,) and clf.predict(Xb[:3]).shape == (3,)
    # a warm start continues the kept network only
    warm = FlowformerRegressor(**FAST, n_init=2, warm_start=True).fit(X, y)
    kept = warm.module_
    warm.fit(X, y)
    assert warm.module_ is kept and len(warm.history_) == 2 * FAST["max_epochs"]
    with pytest.raises(ValueError, match="'n_init' parameter of FlowformerRegressor must be"):
        FlowformerRegressor(**FAST, n_init=0).fit(X, y)


def test_window_skip_starts_at_the_ridge_solution():
    # y is a linear function of the window: the window skip's ridge start fits it (the
    # encoder head starts at zero and lr is tiny), the level skip cannot
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 12))
    y = X @ rng.normal(size=12) + 0.01 * rng.normal(size=300)
    kw = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=1, lr=1e-9, random_state=0,
              device="cpu", validation_fraction=0.2)
    window = FlowformerRegressor(**kw, skip="window").fit(X[:250], y[:250])
    level = FlowformerRegressor(**kw, skip="level").fit(X[:250], y[:250])
    auto = FlowformerRegressor(**kw).fit(X[:250], y[:250])
    assert window.score(X[250:], y[250:]) > 0.999
    assert level.score(X[250:], y[250:]) < 0.5
    # "auto" is the window skip for the regressor (with instance_norm), else no skip
    assert auto.skip_ == "window"
    np.testing.assert_array_equal(auto.predict(X[250:]), window.predict(X[250:]))
    no_norm = FlowformerRegressor(**kw, instance_norm=False).fit(X[:250], y[:250])
    assert no_norm.skip_ == "level"


def test_intervals_are_calibrated_with_a_skip_that_has_not_seen_the_validation_rows():
    # the forecast's ridge skip is fitted on all rows (that of a fit without validation
    # rows); the calibration scores the validation rows with the skip fitted on the training
    # rows alone. On white noise a skip that has seen them forecasts them better than the
    # oracle (0): calibrated with it, the intervals would come out too narrow.
    s = np.random.RandomState(0).normal(size=400)
    X, y = make_windows(s, 48, 4)
    n, n_val = 220, 22
    kw = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=1, lr=1e-9, random_state=0,
              device="cpu")
    reg = FlowformerRegressor(**kw).fit(X[:n], y[:n])
    all_rows = FlowformerRegressor(**kw, early_stopping=False).fit(X[:n], y[:n])
    for p, r in zip(all_rows.module_.skip.parameters(), reg.module_.skip.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), r.detach().numpy(), rtol=0, atol=1e-6)
    assert not reg.encoder_used_
    mse_valid = np.mean((reg.predict(X[n - n_val:n]) - y[n - n_val:n]) ** 2)
    assert mse_valid < np.mean(y[n - n_val:n] ** 2)  # 0.57 against the oracle's 0.76

    class InSample(FlowformerRegressor):
        def _unseen_outputs(self, data, valid):
            return self._outputs(data.X[valid])

    in_sample = InSample(**kw).fit(X[:n], y[:n])
    ratio = reg.std_scale_ / in_sample.std_scale_  # 1.09-1.20
    assert np.all(ratio > 1.05) and ratio.mean() > 1.1
    np.testing.assert_allclose(reg.predict(X[n:]), in_sample.predict(X[n:]))


def test_window_skip_without_instance_norm_is_a_linear_model_of_the_window():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 12))
    y = X @ rng.normal(size=12) + 0.01 * rng.normal(size=300)
    kw = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=1, lr=1e-9, random_state=0,
              device="cpu", validation_fraction=0.2, instance_norm=False)
    reg = FlowformerRegressor(**kw, skip="window").fit(X[:250], y[:250])
    assert reg.skip_ == "window" and reg.score(X[250:], y[250:]) > 0.999
    with pytest.raises(ValueError, match="X has 11 features, but FlowformerRegressor is "
                                         "expecting 12"):
        reg.predict(X[:5, :11])


def test_classifier_starts_at_the_cross_validated_logistic_regression():
    """skip="auto" is the window skip for the classifier: its logits start at a logistic
    regression on the flattened scaled series (penalty chosen by stratified folds) and stay
    fixed; with a tiny learning rate the encoder (head started at zero) adds nothing."""
    from sklearn.linear_model import LogisticRegression

    from skdiff._tasks import LOGISTIC_CS

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 16, 2))
    y = np.array(["a", "b", "c"])[(X[:, 3:8, 0].sum(1) > 0).astype(int)
                                  + (X[:, 10:, 1].sum(1) > 1)]
    kw = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=2, lr=1e-9, random_state=0,
              device="cpu")
    clf = FlowformerClassifier(**kw).fit(X[:60], y[:60])
    assert clf.skip_ == "window" and clf.logistic_C_ in LOGISTIC_CS
    Xs = ((X - clf.x_mean_) / clf.x_scale_).reshape(len(X), -1)
    lr = LogisticRegression(C=clf.logistic_C_, max_iter=2000).fit(Xs[:60], y[:60])
    np.testing.assert_allclose(clf.predict_proba(X[60:]), lr.predict_proba(Xs[60:]),
                               atol=1e-4)
    assert not clf.module_.skip.weight.requires_grad
    # the level skip (no start) does not start there; a binary problem splits the logit
    level = FlowformerClassifier(**kw, skip="level").fit(X[:60], y[:60])
    assert level.logistic_C_ is None and level.module_.skip is None
    binary = FlowformerClassifier(**kw).fit(X[:60], y[:60] == "a")
    lr2 = LogisticRegression(C=binary.logistic_C_, max_iter=2000).fit(Xs[:60], y[:60] == "a")
    np.testing.assert_allclose(binary.predict_proba(X[60:]), lr2.predict_proba(Xs[60:]),
                               atol=1e-4)
    # a class without training rows (partial_fit with classes): no start, still trains
    part = FlowformerClassifier(**kw).partial_fit(X[:60], np.where(y[:60] == "c", "a", y[:60]),
                                                  classes=["a", "b", "c"])
    assert part.logistic_C_ is None and part.predict_proba(X[60:]).shape == (30, 3)


def test_auto_patches_for_long_sequences_only():
    rng = np.random.default_rng(0)
    kw = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=1, random_state=0, device="cpu")
    short = FlowformerRegressor(**kw).fit(rng.normal(size=(40, 63)), rng.normal(size=40))
    long = FlowformerRegressor(**kw).fit(rng.normal(size=(40, 64)), rng.normal(size=40))
    assert (short.patch_len_, short.patch_stride_) == (None, None)
    assert (long.patch_len_, long.patch_stride_) == (8, 4)
    clf = FlowformerClassifier(**kw).fit(rng.normal(size=(40, 64)), np.arange(40) % 2)
    assert (clf.patch_len_, clf.patch_stride_, clf.skip_) == (8, 4, "window")
    with pytest.raises(ValueError, match="needs an integer 'patch_len'; got patch_len='auto'"):
        FlowformerRegressor(**kw, patch_stride=2).fit(rng.normal(size=(40, 64)),
                                                      rng.normal(size=40))


def test_gaussian_intervals_are_calibrated_from_20_validation_rows():
    # as documented: 191 rows at validation_fraction=0.1 (20 validation rows), 20 / n_rows
    # below that; std_scale_ is exactly 1 without them or without early stopping
    X, y = make_windows(np.cumsum(np.random.RandomState(0).normal(size=400)), 24, 4)
    kw = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=1, random_state=0,
              device="cpu")

    def scale(n, **params):
        return FlowformerRegressor(**kw, **params).fit(X[:n], y[:n]).std_scale_

    assert np.all(scale(190) == 1.0)
    assert np.all(scale(300, early_stopping=False) == 1.0)
    assert np.all(scale(191) != 1.0)
    assert np.all(scale(150, validation_fraction=20 / 150) != 1.0)


def test_gaussian_intervals_are_calibrated_on_held_out_data():
    # y = level of the window + heteroscedastic noise whose scale the window reveals
    rng = np.random.default_rng(1)
    n, L = 1200, 16
    level, scale = rng.normal(size=n), rng.uniform(0.1, 1.0, n)
    X = level[:, None] + scale[:, None] * rng.normal(size=(n, L))
    y = level + scale * rng.normal(size=n)
    reg = FlowformerRegressor(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=15, lr=3e-3,
                              random_state=0, device="cpu").fit(X[:900], y[:900])
    samples = reg.sample_posterior(X[900:], n_samples=200, random_state=0)
    lo, hi = np.quantile(samples, [0.05, 0.95], axis=-1)
    coverage = np.mean((y[900:] >= lo) & (y[900:] <= hi))
    assert 0.84 <= coverage <= 0.96
    mean, std = reg.predict(X[900:], return_std=True)
    np.testing.assert_allclose(samples.mean(-1), mean, atol=4 * std.max() / np.sqrt(200))
    # wider intervals where the noise is larger
    assert np.corrcoef(std, scale[900:])[0, 1] > 0.5


@pytest.fixture(scope="module")
def ett_windows(ett_home):
    ett = load_ett("ETTh1", data_home=ett_home)
    tr = ett.train_index
    S = (ett.target - ett.target[tr].mean()) / ett.target[tr].std()
    X, y = make_windows(S[:11520], 96, 24, stride=8)  # train + validation months
    Xte, yte = make_windows(S[11520 - 96:14400], 96, 24, stride=4)
    return X, y, Xte, yte


def test_etth1_beats_the_last_value_baseline(ett_windows):
    X, y, Xte, yte = ett_windows
    reg = FlowformerRegressor(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=3,
                              validation_fraction=0.25, random_state=0, device="cpu")
    mse = np.mean((reg.fit(X, y).predict(Xte) - yte) ** 2)
    last = np.mean((Xte[:, -1:] - yte) ** 2)
    assert mse < 0.95 * last


def test_shapes_and_posterior_contract(fitted, waves):
    reg, X, y2 = fitted
    Xq = X[200:207]
    assert reg.predict(Xq).shape == (7, 2)
    m, s = reg.predict(Xq, return_std=True)
    assert m.shape == s.shape == (7, 2) and np.all(s > 0)
    samples = reg.sample_posterior(Xq, n_samples=5, random_state=0)
    assert samples.shape == (7, 2, 5)
    np.testing.assert_array_equal(samples, reg.sample_posterior(Xq, 5, random_state=0))
    assert not np.allclose(samples, reg.sample_posterior(Xq, 5, random_state=1))
    one = FlowformerRegressor(**FAST).fit(X[:100], y2[:100, 0])
    assert one.predict(Xq).shape == (7,)
    assert one.sample_posterior(Xq, n_samples=3).shape == (7, 3)
    assert one.predict(Xq, return_std=True)[1].shape == (7,)
    assert reg.n_features_in_ == reg.sequence_length_ == 24 and reg.n_channels_in_ == 1


def test_mc_dropout_posterior():
    X, y = _waves(120)
    reg = FlowformerRegressor(**FAST, uncertainty="mc_dropout", dropout=0.3).fit(X, y)
    s = reg.sample_posterior(X[:4], n_samples=6, random_state=0)
    assert s.shape == (4, 6) and np.all(s.std(-1) > 0)
    mean, std = reg.predict(X[:4], return_std=True)
    np.testing.assert_array_equal(mean, reg.predict(X[:4]))
    np.testing.assert_array_equal(std, reg.predict(X[:4], return_std=True)[1])  # seeded



def test_mc_dropout_draws_are_centred_on_predict():
    """The draws are centred on ``predict``'s mean (the thinned networks' average is not
    the full network's output): their average is ``predict``'s forecast, their spread the
    passes' own, as ``predict(return_std=True)`` reports it."""
    X, y = _waves(120)
    reg = FlowformerRegressor(**FAST, uncertainty="mc_dropout", dropout=0.3).fit(X, y)
    mean, std = reg.predict(X[:20], return_std=True)
    S = reg.sample_posterior(X[:20], n_samples=40, random_state=0)
    assert S.std(-1).min() > 0.01 * std.min()
    # uncentred, the passes' average was 0.4 predictive standard deviations away (median)
    np.testing.assert_allclose(S.mean(-1), mean, rtol=0, atol=1e-12 * np.abs(mean).max())
    S30 = reg._draw_samples(reg._prepare_predict(X[:20]), 30, reg.seed_)
    np.testing.assert_allclose(S30.std(-1), std, rtol=1e-10)


def test_monte_carlo_dropout_without_dropout_warns():
    """Without dropout the Monte Carlo passes are one network: the draws' spread is 0, with
    the warning DIFFormer gives (one implementation, pointing at the caller's line). The
    Gaussian head draws from its own Gaussians and does not warn."""
    import warnings

    from skdiff import DIFFormerRegressor

    X, y = _waves(60)
    text = ("{} was trained without dropout ({}=0.0), so its Monte Carlo dropout draws are "
            "all equal to the prediction and their spread is 0. Set dropout above 0 (e.g. "
            "dropout=0.2) and refit for a spread.")
    reg = FlowformerRegressor(**FAST, uncertainty="mc_dropout", dropout=0.0).fit(X, y)
    clf = FlowformerClassifier(**FAST, dropout=0.0).fit(X, (y > 0).astype(int))
    dif = DIFFormerRegressor(n_layers=1, hidden_dim=8, max_epochs=2, dropout=0.0,
                             uncertainty="mc_dropout", device="cpu", random_state=0).fit(X, y)
    for est, name in ((reg, "dropout"), (clf, "dropout"), (dif, "dropout_")):
        calls = [(est.sample_posterior, dict(n_samples=3, random_state=0))]
        if est is not clf:
            calls.append((est.predict, dict(return_std=True)))
        for method, kwargs in calls:
            with pytest.warns(UserWarning) as record:
                out = method(X[:4], **kwargs)
            assert [str(w.message) for w in record] == [text.format(type(est).__name__, name)]
            assert record[0].filename == __file__
        spread = out[1] if est is not clf else out.std(-1)
        assert np.abs(spread).max() < 1e-12
    gaussian = FlowformerRegressor(**FAST, dropout=0.0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gaussian.sample_posterior(X[:4], n_samples=50, random_state=0).std(-1).min() > 0
        gaussian.predict(X[:4], return_std=True)


def test_the_fitted_head_predicts_whatever_uncertainty_is_set_to_after_fit():
    """predict and sample_posterior read the fitted head, ``uncertainty_``, not the
    parameter: set after the fit, it changes nothing until the next fit."""
    X, y = _waves(60)
    assert_the_fitted_head_is_kept(
        lambda head: FlowformerRegressor(**FAST, uncertainty=head, dropout=0.3), X, y,
        lambda reg: reg.set_params(warm_start=True).fit(X, y),
        r"warm_start=True continues the fitted network, which was built with "
        r"uncertainty='{fitted}' \(now '{other}'\)")


def test_the_first_gaussian_draws_do_not_depend_on_n_samples(fitted):
    """The Gaussian head's noise is drawn draw by draw: a call for k samples returns the
    first k of a call for more, with the same random_state."""
    reg, X, _ = fitted
    np.testing.assert_array_equal(reg.sample_posterior(X[200:205], 10, random_state=0),
                                  reg.sample_posterior(X[200:205], 25, random_state=0)[..., :10])


def test_a_bool_channel_graph_is_named():
    X, y = _waves(40)
    for est, target in ((FlowformerRegressor(**FAST), y),
                        (FlowformerClassifier(**FAST), (y > 0).astype(int))):
        with pytest.raises(TypeError, match=r"^'adjacency' must be an array-like or sparse "
                           r"matrix, got bool True\.$"):
            est.fit(X, target, True)

def test_multivariate_with_channel_graph_and_errors():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 12, 3))
    y = X[:, -1, 0] + X[:, -1, 2]
    A = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=float)  # asymmetric: symmetrised
    reg = FlowformerRegressor(**FAST).fit(X, y, adjacency=A)
    assert reg.predict(X[:5]).shape == (5,)
    deg = np.array([2.0, 3.0, 2.0])
    expected = (np.maximum(A, A.T) + np.eye(3)) / np.sqrt(np.outer(deg, deg))
    np.testing.assert_allclose(reg.adjacency_, expected, rtol=1e-6)
    with pytest.raises(ValueError, match=r"'adjacency' has shape \(2, 2\) but there are 3 "
                                         r"channels of X: it must be \(3, 3\)"):
        FlowformerRegressor(**FAST).fit(X, y, adjacency=np.eye(2))
    with pytest.raises(ValueError, match="negative"):
        FlowformerRegressor(**FAST).fit(X, y, adjacency=-np.eye(3))
    with pytest.raises(ValueError, match="X has 2 channels but FlowformerRegressor was fitted "
                                         "on 3"):
        reg.predict(X[:, :, :2])
    with pytest.raises(ValueError, match="X has 10 features, but FlowformerRegressor is "
                                         "expecting 12 features"):
        reg.predict(X[:, :10])


def test_input_errors():
    X, y = _waves(40)
    reg = FlowformerRegressor(**FAST)
    Xn = X.copy()
    Xn[3, 4] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        reg.fit(Xn, y)
    with pytest.raises(ValueError, match="X is ragged: every sequence must have the same"):
        reg.fit([[1.0, 2.0, 3.0], [1.0, 2.0]], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"X must be 2-D \(n_samples, length\) or 3-D .* got "
                                         r"an array of shape \(40, 24, 1, 1\)"):
        reg.fit(X[:, :, None, None], y)
    with pytest.raises(ValueError, match="'hidden_dim' \\(10\\) must be divisible by 'n_heads'"):
        FlowformerRegressor(**{**FAST, "hidden_dim": 10, "n_heads": 3}).fit(X, y)
    with pytest.raises(ValueError, match="'pooling' parameter of FlowformerRegressor must be"):
        FlowformerRegressor(pooling="max").fit(X, y)
    with pytest.raises(ValueError, match="'n_samples' must be an integer >= 1; got 0"):
        FlowformerRegressor(**FAST).fit(X, y).sample_posterior(X, n_samples=0)
    with pytest.raises(ValueError, match=r"'patch_len' \(25\) is longer than the sequences of "
                                         r"X \(24 steps\); use patch_len <= 24"):
        FlowformerRegressor(**FAST, patch_len=25).fit(X, y)
    with pytest.raises(ValueError, match=r"'patch_stride' \(4\) is the step between patches "
                                         r"and needs an integer 'patch_len'; got "
                                         r"patch_len=None"):
        FlowformerRegressor(**FAST, patch_len=None, patch_stride=4).fit(X, y)
    with pytest.raises(ValueError, match=r"'patch_stride' \(5\) is larger than 'patch_len' "
                                         r"\(4\): the steps between patches would be left out"):
        FlowformerRegressor(**FAST, patch_len=4, patch_stride=5).fit(X, y)
    with pytest.raises(ValueError, match="'patch_len' parameter of FlowformerRegressor must be"):
        FlowformerRegressor(**FAST, patch_len=0).fit(X, y)
    # score refuses NaN targets as fit does (no row is silently left out of the R²)
    fitted = FlowformerRegressor(**FAST).fit(X, y)
    yn = y.copy()
    yn[:3] = np.nan
    with pytest.raises(ValueError, match=r"^y contains NaN \(3 of 40 rows\); "
                                         r"FlowformerRegressor scores every row and needs a "
                                         r"value for each: drop or fill the rows without a "
                                         r"target\.$"):
        fitted.score(X, yn)
    with pytest.raises(ValueError, match=r"^y contains NaN; FlowformerRegressor needs a value"):
        FlowformerRegressor(**FAST).fit(X, yn)
    flat = FlowformerRegressor(**FAST, pooling="flatten").fit(X, y)
    with pytest.raises(ValueError, match=r"X has 20 features, but FlowformerRegressor is "
                                         r"expecting 24 features as input: sequences of 20 "
                                         r"time steps \(axis 1 of X with layout='NLC'\)"):
        flat.predict(X[:, :20])


def test_early_stopping_holds_out_the_last_rows():
    X, y = _waves(100)
    # the level skip, trained with the network: what predict scores on the validation rows
    # is the kept epoch's network, whose loss there early stopping recorded
    reg = FlowformerRegressor(**{**FAST, "max_epochs": 6}, uncertainty="mc_dropout",
                              skip="level", early_stopping=True, validation_fraction=0.2,
                              n_iter_no_change=2).fit(X, y)
    valid = reg.history_[:, "valid_loss"]
    z = (reg.predict(X[80:]) - reg.y_mean_[0]) / reg.y_scale_[0]  # scaled units, as trained
    yz = (y[80:] - reg.y_mean_[0]) / reg.y_scale_[0]
    assert np.mean((z - yz) ** 2) == pytest.approx(min(valid), rel=1e-4)


def test_classifier_early_stopping_on_two_rows_trains_on_both():
    # a validation split of two rows would train on one row of one class (predicting
    # [1, 0] for y = [0, 1]); with no split both rows train, as without early stopping
    X = np.random.RandomState(0).randn(2, 4)
    y = np.array([0, 1])
    kw = dict(n_layers=1, hidden_dim=8, n_heads=2, max_epochs=60, random_state=0,
              device="cpu")
    stopped = FlowformerClassifier(**kw, early_stopping=True).fit(X, y)
    plain = FlowformerClassifier(**kw, early_stopping=False).fit(X, y)
    assert stopped.predict(X).tolist() == plain.predict(X).tolist() == [0, 1]
    assert "valid_loss" not in stopped.history_[-1]


def test_sklearn_composition(waves, tmp_path):
    X, y = waves
    X, y = X[:120], y[:120]
    pipe = make_pipeline(FunctionTransformer(lambda a: 2 * a), FlowformerRegressor(**FAST))
    assert np.isfinite(pipe.fit(X, y).score(X, y))
    scores = cross_val_score(FlowformerRegressor(**FAST), X, y, cv=TimeSeriesSplit(3))
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    gs = GridSearchCV(FlowformerRegressor(**FAST), {"pooling": ["mean", "last"]},
                      cv=TimeSeriesSplit(2)).fit(X, y)
    assert gs.best_params_["pooling"] in ("mean", "last")
    # the level skip, whose network always forecasts (the window skip's may be the ridge
    # alone, which one more epoch need not change), without early stopping (which keeps
    # the weights a call starts from unless an epoch beats them, so one more epoch need not
    # change them either)
    reg = clone(FlowformerRegressor(**FAST, skip="level", early_stopping=False)).fit(X, y)
    again = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(reg.predict(X), again.predict(X))
    np.testing.assert_array_equal(
        reg.predict(X), FlowformerRegressor(**FAST, skip="level", early_stopping=False)
        .fit(X, y).predict(X))
    n = len(reg.history_)
    before = reg.predict(X)
    reg.partial_fit(X, y)
    assert len(reg.history_) == n + 1
    # the cached float64 inference copy follows the new weights, not the previous ones
    with torch.no_grad():
        net = copy.deepcopy(reg.module_).double().eval()
        direct = net(torch.as_tensor(reg._prepare_predict(X), dtype=torch.float64))[:, 0].numpy()
    np.testing.assert_allclose(reg.predict(X), direct * reg.y_scale_[0] + reg.y_mean_[0])
    assert not np.allclose(reg.predict(X), before)
    warm = FlowformerRegressor(**FAST, warm_start=True).fit(X, y)
    warm.fit(X, y)
    assert len(warm.history_) == 2 * FAST["max_epochs"]


def _bumps(n, L=24, seed=0):
    """Two classes of noisy sequences: a bump early (steps 3-8) or late (steps 15-20)."""
    rng = np.random.default_rng(seed)
    labels = np.array(["early", "late"])[rng.integers(0, 2, n)]
    centre = np.where(labels == "late", rng.uniform(15, 20, n), rng.uniform(3, 8, n))
    bump = np.exp(-0.5 * (np.arange(L) - centre[:, None]) ** 2)
    X = bump + 0.3 * rng.normal(size=(n, L))
    return np.stack([X, -X + 0.1 * rng.normal(size=(n, L))], axis=-1), labels


def test_classifier_learns_and_samples():
    X, labels = _bumps(240)
    clf = FlowformerClassifier(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=30, lr=5e-3,
                               early_stopping=False, random_state=0, device="cpu")
    clf.fit(X[:180], labels[:180])
    assert clf.score(X[180:], labels[180:]) > 0.9
    assert list(clf.classes_) == ["early", "late"]
    proba = clf.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(1), 1.0)
    s = clf.sample_posterior(X[:5], n_samples=4, random_state=0)
    assert s.shape == (5, 2, 4)
    np.testing.assert_allclose(s.sum(1), 1.0)
    with pytest.raises(ValueError, match="one label per row"):
        FlowformerClassifier(**FAST).fit(X, np.zeros((240, 2)))


def test_gaussian_head_variance_loss_does_not_train_the_encoder_or_the_mean():
    from skdiff.nn import Flowformer
    from skdiff.nn.losses import GaussianNLL

    torch.manual_seed(0)
    k = 3
    net = Flowformer(2, 2 * k, 16, hidden_dim=8, n_heads=2, n_layers=1, dropout=0.0,
                     n_detached_outputs=k)
    torch.nn.init.normal_(net.head.weight, std=0.1)
    x, y = torch.randn(5, 16, 2), torch.randn(5, k)
    out = net(x)
    # the variance half alone: gradients reach its head rows, nothing upstream
    out[:, k:].sum().backward()
    assert net.head.weight.grad[k:].abs().sum() > 0
    assert net.head.weight.grad[:k].abs().sum() == 0
    assert all(p.grad is None or p.grad.abs().sum() == 0 for p in net.layers.parameters())
    # the loss's gradient on the mean half is the squared error's, whatever the variance
    mean = torch.randn(5, k, requires_grad=True)
    raw = torch.randn(5, k, requires_grad=True)
    GaussianNLL()(torch.cat([mean, raw], 1), {"y": y, "w": torch.ones(5)}).backward()
    torch.testing.assert_close(mean.grad, (mean - y).detach() / mean.numel())
    with pytest.raises(ValueError, match="n_detached_outputs"):
        Flowformer(2, 4, 16, n_detached_outputs=5)


def test_window_skip_keeps_the_ridge_start_unless_an_epoch_beats_it():
    # a linear target: the ridge start is already the answer, and a large learning rate
    # makes every epoch worse on the validation rows; early stopping restores the start
    # (two epochs without beating it: patience counted from the start)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 12))
    y = X @ rng.normal(size=12) + 0.01 * rng.normal(size=300)
    kw = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=3, n_iter_no_change=2,
              random_state=0, device="cpu")
    start = FlowformerRegressor(**kw, lr=1e-12).fit(X[:250], y[:250])
    wild = FlowformerRegressor(**kw, lr=0.05).fit(X[:250], y[:250])
    assert len(wild.history_) == 2 and wild.net_.start_kept_
    # every epoch's validation loss (Gaussian NLL) is worse than the start's
    assert min(wild.history_[:, "valid_loss"]) > max(start.history_[:, "valid_loss"])
    np.testing.assert_allclose(wild.predict(X[250:]), start.predict(X[250:]), rtol=0,
                               atol=1e-9)
    assert wild.score(X[250:], y[250:]) > 0.999
    # the level skip has no such start to keep
    level = FlowformerRegressor(**kw, lr=0.05, skip="level").fit(X[:250], y[:250])
    assert level.score(X[250:], y[250:]) < 0.5


def _validation_errors(est, X_valid, y_valid, *, encoder):
    """Squared errors of ``est``'s forecast (standardised units) on validation rows, with
    or without the encoder's correction of the mean."""
    est = copy.deepcopy(est)
    if not encoder:
        with torch.no_grad():
            est.module_.head.weight[:1] = 0.0
            est.module_.head.bias[:1] = 0.0
    return ((est.predict(X_valid) - y_valid) / est.y_scale_[0]) ** 2


def test_window_skip_uses_the_encoder_only_where_it_lowers_the_validation_mse():
    kw = dict(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=40, lr=3e-3, random_state=0,
              device="cpu", early_stopping=True)
    rng = np.random.default_rng(0)
    # a target no linear forecast reads (|last step|): the encoder's correction is kept and
    # beats the ridge start by far (R² 0.72 against 0.02; it passes the test by 4 standard
    # errors of its 100 validation rows, where two are needed)
    X = rng.normal(size=(1100, 12))
    y = np.abs(X[:, -1]) + 0.05 * rng.normal(size=1100)
    nonlinear = FlowformerRegressor(**kw).fit(X[:1000], y[:1000])
    ridge = Ridge().fit(X[:1000], y[:1000]).score(X[1000:], y[1000:])
    assert nonlinear.encoder_used_
    assert nonlinear.score(X[1000:], y[1000:]) > ridge + 0.5
    # the decision compares the two forecasts on the validation rows (the last 10 % of the
    # rows, in order): the encoder is kept only when it lowers their MSE by more than two
    # standard errors of the per-row difference, and predict follows the decision
    X = rng.normal(size=(150, 12))
    y = X @ rng.normal(size=12) + rng.normal(size=150)
    decisions = []
    for seed in range(4):
        est = FlowformerRegressor(**{**kw, "max_epochs": 10, "random_state": seed}).fit(X, y)
        e_net, e_skip = (_validation_errors(est, X[135:], y[135:], encoder=e)
                         for e in (True, False))
        diff = e_net - e_skip
        margin = -diff.mean() - 2.0 * diff.std() / np.sqrt(len(diff))
        assert est.encoder_used_ == (margin > 0)
        if not est.encoder_used_:
            np.testing.assert_array_equal(e_net, e_skip)  # the correction's rows are zero
        decisions.append(est.encoder_used_)
    assert not all(decisions)  # noise the encoder fits: dropped at least once
    # a linear target the ridge start already answers, and epochs that only make the mean
    # worse: the start is kept, and with it the ridge forecast alone
    y = X @ rng.normal(size=12) + 0.01 * rng.normal(size=150)
    wild = FlowformerRegressor(**{**kw, "max_epochs": 3, "lr": 0.05}).fit(X[:120], y[:120])
    assert not wild.encoder_used_ and wild.score(X[120:], y[120:]) > 0.999
    # other skips keep their network as trained
    assert FlowformerRegressor(**{**kw, "max_epochs": 1}, skip="level").fit(X, y).encoder_used_


def test_encoder_check_uses_the_diebold_mariano_standard_error():
    """The standard error of the encoder check equals a dense Newey-West reference (Bartlett
    weights over as many lags as outputs minus one; lag 0 alone, the independent-row
    standard error, with one output), grows with the positive correlation of overlapping
    windows' errors, and decides encoder_used_ on a forecast of several steps."""
    from skdiff.flowformer._estimators import _forecast_comparison_se

    rng = np.random.default_rng(3)
    dev = np.convolve(rng.normal(size=60), np.ones(6), "same")  # correlated over 5 lags
    w = rng.uniform(0.5, 2.0, size=60)
    w /= w.sum()
    dev -= w @ dev
    for n_outputs in (1, 3, 6, 100):
        lags = min(n_outputs, 60) - 1
        i, j = np.meshgrid(np.arange(60), np.arange(60), indexing="ij")
        kernel = np.where(np.abs(i - j) <= lags, 1 - np.abs(i - j) / (lags + 1), 0.0)
        ref = np.sqrt((w * dev) @ kernel @ (w * dev))
        assert _forecast_comparison_se(dev, w, n_outputs) == pytest.approx(ref, rel=1e-12)
    assert _forecast_comparison_se(dev, w, 1) == pytest.approx(np.sqrt(w ** 2 @ dev ** 2))
    assert _forecast_comparison_se(dev, w, 6) > 1.5 * _forecast_comparison_se(dev, w, 1)
    # windows of one series, 6 steps ahead: the check passes the horizon as the lags, and
    # the decision follows the validation errors with that standard error
    import skdiff.flowformer._estimators as flow_module

    calls = []

    def spy(dev, w, n_outputs):
        se = _forecast_comparison_se(dev, w, n_outputs)
        calls.append((dev, w, n_outputs, se))
        return se

    t = np.arange(900)
    series = np.sin(2 * np.pi * t / 24) + 0.3 * rng.normal(size=t.size)
    X, y = make_windows(series, window=24, horizon=6)
    # the series and its square as two channels: a ridge on them is what the encoder beats
    # on some seeds and not on others (on the series alone the ridge relative to the last
    # value already forecasts the sine to the noise, and the encoder is never kept)
    X = np.stack([X, X ** 2], axis=-1)
    valid = np.arange(len(X) - int(np.ceil(0.1 * len(X))), len(X))
    kw = dict(hidden_dim=16, n_heads=2, n_layers=1, lr=3e-3, device="cpu", max_epochs=8)
    used = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(flow_module, "_forecast_comparison_se", spy)
        for seed in range(3):
            est = FlowformerRegressor(**kw, random_state=seed).fit(X, y)
            dev, w, n_outputs, se = calls[-1]
            assert n_outputs == 6 and len(dev) == len(valid)
            np.testing.assert_allclose(w, 1 / len(valid))
            errors = (((est.predict(X[valid]) - y[valid]) / est.y_scale_) ** 2).mean(1)
            if est.encoder_used_:
                with torch.no_grad():
                    est.module_.head.weight[:6] = 0.0
                    est.module_.head.bias[:6] = 0.0
                skip = (((est.predict(X[valid]) - y[valid]) / est.y_scale_) ** 2).mean(1)
                diff = errors - skip
                np.testing.assert_allclose(diff - diff.mean(), dev, atol=1e-8)
                assert -diff.mean() > 2.0 * se
            else:  # dropped: the correction's rows of the head are zero
                assert not est.module_.head.weight[:6].any() and \
                    not est.module_.head.bias[:6].any()
            used.append(est.encoder_used_)
    assert len(calls) == 3
    assert any(used) and not all(used)  # both outcomes occur among these seeds


def test_encoder_check_margin_is_two_standard_errors_after_many_epochs_one_after_one():
    """Early stopping picks the epoch on the validation rows the check then judges: a call
    that chose among many epochs must win by two standard errors, a call of a single epoch
    (``partial_fit``, ``max_epochs=1``) by one; encoder_used_ follows the margin."""
    import skdiff.flowformer._estimators as flow_module
    from skdiff._tasks import beats_by_se

    assert flow_module.CORRECTION_MARGIN_SE == 2.0
    calls = []

    def spy(err, err_simple, w, n_se=1.0, **kwargs):
        out = beats_by_se(err, err_simple, w, n_se=n_se, **kwargs)
        calls.append((n_se, out))
        return out

    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 12))
    y = np.abs(X[:, -1]) + 0.3 * rng.normal(size=300)
    kw = dict(hidden_dim=16, n_heads=2, n_layers=1, lr=3e-3, device="cpu", random_state=0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(flow_module, "beats_by_se", spy)
        fitted = FlowformerRegressor(**kw, max_epochs=5).fit(X, y)
        assert calls[-1][0] == 2.0
        one = FlowformerRegressor(**kw, max_epochs=1).fit(X, y)
        assert calls[-1][0] == 1.0
        stream = FlowformerRegressor(**kw)
        for start in range(0, 300, 100):
            stream.partial_fit(X[start:start + 100], y[start:start + 100])
            assert calls[-1][0] == 1.0
    for est, (n_se, (decision, mean, se)) in zip((fitted, one, stream),
                                                 (calls[0], calls[1], calls[-1])):
        assert est.encoder_used_ == decision == (-mean > n_se * se)


def test_ridge_skip_penalty_is_chosen_by_forward_chaining_folds():
    # the skip's ridge equals scikit-learn's Ridge with the penalty whose summed validation
    # MSE over TimeSeriesSplit(5) folds is lowest (penalties relative to each fold's rows)
    from skdiff.flowformer._data import RIDGE_PENALTIES, ridge_skip

    rng = np.random.default_rng(0)
    F = rng.normal(size=(300, 30))
    y = F[:, :3] @ np.array([[1.0], [-0.5], [0.2]]) + 0.8 * rng.normal(size=(300, 1))
    rows = np.arange(300)
    y1 = y[:, 0]
    errors = [sum(np.mean((Ridge(alpha=a * len(fit)).fit(F[fit], y1[fit]).predict(F[val])
                           - y1[val]) ** 2)
                  for fit, val in TimeSeriesSplit(5).split(rows)) for a in RIDGE_PENALTIES]
    alpha = RIDGE_PENALTIES[int(np.argmin(errors))]
    assert 0 < int(np.argmin(errors)) < len(RIDGE_PENALTIES) - 1  # an inner choice
    weight, bias = ridge_skip(F, y, rows, 1)
    ref = Ridge(alpha=alpha * 300).fit(F, y1)
    np.testing.assert_allclose(weight[0], ref.coef_, atol=1e-10)
    np.testing.assert_allclose(bias, ref.intercept_, atol=1e-10)
    # a Gaussian head also gets the residual variance (inverse softplus) in its last bias
    weight2, bias2 = ridge_skip(F, y, rows, 2)
    resid = np.mean((ref.predict(F) - y1) ** 2)
    np.testing.assert_allclose(np.log1p(np.exp(bias2[1])), resid, rtol=1e-10)
    np.testing.assert_array_equal(weight2[1], 0.0)


def test_ridge_skip_folds_fitted_on_fewer_rows_than_features_do_not_vote():
    # 120 rows of 30 features: TimeSeriesSplit(5)'s first fold fits on 20 rows, an
    # underdetermined ridge, and is left out of the choice; the other four folds choose
    from skdiff.flowformer._data import RIDGE_PENALTIES, ridge_skip

    def choice(F, y1, rows, keep):
        errors = [sum(np.mean((Ridge(alpha=a * len(fit)).fit(F[fit], y1[fit]).predict(F[val])
                               - y1[val]) ** 2)
                      for fit, val in TimeSeriesSplit(5).split(rows) if keep(fit))
                  for a in RIDGE_PENALTIES]
        return RIDGE_PENALTIES[int(np.argmin(errors))]

    rng = np.random.default_rng(2)
    F = rng.normal(size=(120, 30))
    y = F[:, :3] @ np.array([[1.0], [-0.5], [0.2]]) + 0.5 * rng.normal(size=(120, 1))
    rows = np.arange(120)
    alpha = choice(F, y[:, 0], rows, lambda fit: len(fit) > 30)
    assert alpha != choice(F, y[:, 0], rows, lambda fit: True)  # the rule matters here
    weight, bias = ridge_skip(F, y, rows, 1)
    ref = Ridge(alpha=alpha * 120).fit(F, y[:, 0])
    np.testing.assert_allclose(weight[0], ref.coef_, atol=1e-10)
    np.testing.assert_allclose(bias, ref.intercept_, atol=1e-10)
    # with every fold underdetermined (110 features) the last fold alone chooses
    rng = np.random.default_rng(7)
    F = rng.normal(size=(120, 110))
    y = F[:, :3] @ np.array([[1.0], [-0.5], [0.2]]) + 0.5 * rng.normal(size=(120, 1))
    alpha = choice(F, y[:, 0], rows, lambda fit: len(fit) == 100)
    assert alpha != choice(F, y[:, 0], rows, lambda fit: True)
    ref = Ridge(alpha=alpha * 120).fit(F, y[:, 0])
    np.testing.assert_allclose(ridge_skip(F, y, rows, 1)[0][0], ref.coef_, atol=1e-9)


def test_ridge_skip_anchor_fits_the_ridge_relative_to_the_last_value():
    # anchor=(last, window): the ridge (penalty by the same forward-chaining folds) is
    # fitted to y - last on the window's values taken relative to the last value, and
    # returned as the same map of the unshifted features
    from skdiff.flowformer._data import ridge_skip

    rng = np.random.default_rng(1)
    X, y = make_windows(np.cumsum(rng.normal(size=400)), 12, 2)
    F = np.column_stack([X.mean(1), X.std(1), X[:, -1], X])
    rows = np.arange(len(F))
    A = F.copy()
    A[:, 3:] -= F[:, 2:3]
    w_ref, b_ref = ridge_skip(A, y - F[:, 2:3], rows, 2)
    weight, bias = ridge_skip(F, y, rows, 4, anchor=(2, slice(3, None)))
    np.testing.assert_allclose(F @ weight[:2].T + bias[:2],
                               A @ w_ref.T + b_ref + F[:, 2:3], atol=1e-9)
    # the Gaussian head's variance bias is the anchored ridge's residual variance
    resid = np.mean((A @ w_ref.T + b_ref - (y - F[:, 2:3])) ** 2, axis=0)
    np.testing.assert_allclose(np.log1p(np.exp(bias[2:])), resid, rtol=1e-9)


def test_univariate_forecast_follows_a_level_beyond_the_training_range():
    # the ridge skip of a univariate series shrinks toward persistence, so windows of a
    # random walk moved 15 training stds beyond the training windows are forecast nearly as
    # well as unmoved ones (measured: MSE x1.5); the same ridge shrunk toward the training
    # mean pulls them back (x2.6)
    rng = np.random.default_rng(0)
    s = np.cumsum(rng.normal(size=700))
    X, y = make_windows(s, 24, 4)
    est = FlowformerRegressor(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=3,
                              random_state=0).fit(X[:500], y[:500])
    X_te, y_te = X[500:], y[500:]
    shift = 15.0 * s[:500].std()
    mse_in = np.mean((est.predict(X_te) - y_te) ** 2)
    mse_out = np.mean((est.predict(X_te + shift) - (y_te + shift)) ** 2)
    assert mse_in < 1.05 * np.mean((X_te[:, -1:] - y_te) ** 2)  # as good as persistence
    assert mse_out < 2.0 * mse_in


@pytest.mark.parametrize("channels, skip, anchored", [(1, "window", True), (1, "level", False),
                                                      (2, "window", False)])
def test_persistence_anchor_only_for_the_fixed_skip_of_one_channel(channels, skip, anchored):
    # with several channels no output belongs to one channel's last value, and the trained
    # "level" skip keeps its plain ridge start
    from skdiff.flowformer._data import ridge_skip

    rng = np.random.default_rng(2)
    X, y = make_windows(np.cumsum(rng.normal(size=300)), 16, 2)
    X = np.stack([X] * channels, axis=-1) if channels > 1 else X
    est = FlowformerRegressor(skip=skip, hidden_dim=8, n_heads=2, n_layers=1, max_epochs=1,
                              early_stopping=False, random_state=0).fit(X, y)
    assert (est._persistence_anchor(est.module_) is not None) == anchored
    if not anchored:
        return
    # the anchor: the standardised window's last value (column 2) and values (3 on), its
    # level columns (mean and last value), and persistence in the units of X
    anchor = est._persistence_anchor(est.module_)
    assert (anchor.last, anchor.window, anchor.level) == (2, slice(3, 19), (0, 2))
    np.testing.assert_allclose(anchor.ratio, est.x_scale_[0] / est.y_scale_)
    # the fixed skip holds the anchored ridge of the standardised windows
    Xs = torch.as_tensor(est._sequences(X, reset=False))
    F = est.module_.skip_features(Xs).double().numpy()
    z = (y - est.y_mean_) / est.y_scale_
    weight, bias = ridge_skip(F, z, np.arange(len(F)), 4, anchor=anchor)
    np.testing.assert_allclose(est.module_.skip.weight.detach().numpy(), weight, atol=1e-5)
    np.testing.assert_allclose(est.module_.skip.bias.detach().numpy(), bias, atol=1e-5)


def test_univariate_forecast_moves_with_the_window():
    # y holds later values of the series (a forecast): the ridge skip leaves the window's
    # level out, and the encoder reads the window less its mean (RevIN), so a window moved
    # by c is forecast moved by c, however far beyond the training windows
    rng = np.random.default_rng(4)
    X, y = make_windows(np.cumsum(0.2 + rng.normal(size=400)), 16, 2)
    est = FlowformerRegressor(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=3,
                              random_state=0).fit(X[:300], y[:300])
    assert est._ridge_state_.anchor.level == (0, 2)

    def moved_alike():
        for c in (-30.0, 500.0):  # measured: off by 4e-6 and 4e-5 (float32 features)
            np.testing.assert_allclose(est.predict(X[300:] + c) - est.predict(X[300:]), c,
                                       rtol=0, atol=1e-5 * abs(c))

    moved_alike()
    # with the encoder's correction, set aside by its test here, added back: the same
    assert not est.encoder_used_
    est._set_correction(*est._unused_head_)
    moved_alike()


def test_univariate_forecast_with_y_in_other_units_keeps_the_level():
    # y in other units than X (an affine change, as TransformedTargetRegressor(
    # StandardScaler()) makes) is no longer the series' continuation in the units of X:
    # the ridge skip keeps the level columns, with its anchor in standardised units, which
    # an affine change of y leaves as it is: two such changes give the same fit, and
    # predictions change alike
    rng = np.random.default_rng(4)
    X, y = make_windows(np.cumsum(rng.normal(size=400)), 16, 2)
    kw = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=3, random_state=0)
    est = FlowformerRegressor(**kw).fit(X, 250.0 * y - 3.0)
    assert est._ridge_state_.anchor.level == ()
    pred = est.predict(X[-20:])
    pred2 = FlowformerRegressor(**kw).fit(X, 0.01 * y + 5.0).predict(X[-20:])
    np.testing.assert_allclose((pred2 - 5.0) / 0.01, (pred + 3.0) / 250.0, rtol=1e-4,
                               atol=1e-3)


def test_ridge_skip_leaves_the_level_out_unless_the_level_forecasts_far_better():
    from skdiff.flowformer._data import Anchor, ridge_skip

    rng = np.random.default_rng(5)
    anchor = Anchor(2, slice(3, None), level=(0, 2), ratio=1.0)

    def fit(series, y=None):
        X, target = make_windows(series, 12, 2)
        F = np.column_stack([X.mean(1), X.std(1), X[:, -1], X])
        *skip, state = ridge_skip(F, target if y is None else y(X), np.arange(len(F)), 2,
                                  anchor=anchor, return_state=True)
        return X, F, skip, state.anchor

    # a random walk with drift: the fit without the level, a map that moves with the window
    X, F, (weight, bias), chosen = fit(np.cumsum(0.3 + rng.normal(size=400)))
    assert chosen == anchor
    np.testing.assert_allclose(weight[:, 0], 0.0, atol=1e-12)  # the mean's weight
    np.testing.assert_allclose(weight[:, 2] + weight[:, 3:].sum(1), 1.0, atol=1e-9)
    moved = np.column_stack([X.mean(1) + 50, X.std(1), X[:, -1] + 50, X + 50])
    np.testing.assert_allclose(moved @ weight.T - F @ weight.T, 50.0, atol=1e-8)
    # a stationary series, whose level it returns to (AR(1), 0.3: the Dickey-Fuller test
    # rejects a unit root), and a target that is not the series' continuation (|last
    # value| of white noise): the level is kept, as is the level's ridge
    ar = np.zeros(400)
    for t in range(1, 400):  # generating the data; not a library path
        ar[t] = 0.3 * ar[t - 1] + rng.normal()
    assert fit(ar)[3] == Anchor(2, slice(3, None))
    assert fit(rng.normal(size=400), lambda X: np.abs(X[:, -2:]))[3] == Anchor(2, slice(3, None))


def test_stationary_is_the_augmented_dickey_fuller_test_at_five_percent():
    from skdiff.flowformer._data import stationary

    rng = np.random.default_rng(6)
    e = rng.normal(size=600)
    ar = np.zeros(600)
    for t in range(1, 600):  # generating the data; not a library path
        ar[t] = 0.8 * ar[t - 1] + e[t]
    assert stationary(ar) and stationary(e)
    assert not stationary(np.cumsum(e)) and not stationary(np.cumsum(e + 0.2))
    assert not stationary(e[:11])  # too short to reject anything
    with warnings.catch_warnings():  # deterministic series: decided without log(0)
        warnings.simplefilter("error")
        assert stationary(np.ones(50)) and not stationary(np.arange(50.0))
        assert not stationary(np.r_[np.zeros(40), np.arange(20.0)])
    # the decision of statsmodels' adfuller (autolag="AIC", MacKinnon's 5 % critical value)
    adfuller = pytest.importorskip(
        "statsmodels.tsa.stattools", reason="statsmodels (the benchmarks extra) holds the "
        "reference implementation").adfuller
    for n in (20, 60, 250, 900):
        for phi in (0.5, 0.9, 0.97, 1.0):
            x = np.zeros(n)
            for t in range(1, n):
                x[t] = phi * x[t - 1] + e[t % 600]
            with warnings.catch_warnings():  # newer statsmodels: a result object ahead
                warnings.simplefilter("ignore", FutureWarning)
                stat, _, _, _, crit, _ = adfuller(x, regression="c", autolag="AIC")
            assert stationary(x) == (stat < crit["5%"]), (n, phi)


def test_rows_of_weight_zero_are_as_if_absent(waves):
    # neither trained on nor held out: early stopping scores the last rows of positive
    # weight, and the fit equals the fit without the zero-weight rows
    X, y = waves
    X, y = X[:200], y[:200]
    w = np.ones(len(X))
    w[-20:] = 0.0  # the rows the validation split would otherwise hold out
    w[50:60] = 0.0
    kw = dict(FAST, max_epochs=4, early_stopping=True)
    weighted = FlowformerRegressor(**kw).fit(X, y, sample_weight=w)
    kept = w > 0
    dropped = FlowformerRegressor(**kw).fit(X[kept], y[kept])
    valid = weighted.history_[:, "valid_loss"]
    assert np.all(np.abs(valid) > 0)
    np.testing.assert_allclose(valid, dropped.history_[:, "valid_loss"], rtol=1e-5)
    np.testing.assert_allclose(weighted.predict(X), dropped.predict(X), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("Est", [FlowformerRegressor, FlowformerClassifier])
def test_sample_weight_routes_through_a_search_with_metadata_routing(waves, Est):
    # the classifier's own cross-validated start (a logistic regression) is an internal
    # choice that the caller's routing setting does not reach
    import sklearn

    X, y = waves
    X, y = X[:120], y[:120]
    y = y if Est is FlowformerRegressor else (y > 0).astype(int)
    w = np.where(np.arange(120) % 4 == 0, 2.0, 1.0)
    plain = Est(**FAST).fit(X, y, sample_weight=w)
    with sklearn.config_context(enable_metadata_routing=True):
        est = Est(**FAST).set_fit_request(sample_weight=True).set_score_request(
            sample_weight=True)
        search = GridSearchCV(est, {"lr": [1e-3]}, cv=2, refit=True)
        search.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(search.best_estimator_.predict(X), plain.predict(X),
                               rtol=1e-5, atol=1e-6)
