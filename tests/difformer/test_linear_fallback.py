"""DIFFormerRegressor's ``linear_fallback``: a ridge the network learns a correction to, kept
only where the correction beats the ridge on validation rows."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_friedman1, make_friedman2, make_regression
from sklearn.linear_model import RidgeCV

from skdiff import DIFFormerRegressor, Graph
from skdiff._tasks import mean_difference_se
from skdiff.difformer._estimators import FALLBACK_ALPHAS

FAST = dict(n_layers=2, hidden_dim=32, max_epochs=60, device="cpu")
# the network needs its default training to learn Friedman #1 (2-3 s a fit)
FULL = dict(device="cpu")


@pytest.fixture(scope="module")
def linear():
    """A target linear in 5 of 20 features: the ridge's ground."""
    X, y = make_regression(400, 20, n_informative=5, noise=10.0, random_state=0)
    return X[:300], y[:300], X[300:], y[300:]


@pytest.fixture(scope="module")
def friedman():
    """Friedman #1: a nonlinear target the ridge explains 72 % of."""
    X, y = make_friedman1(1000, noise=1.0, random_state=0)
    return X[:800], y[:800], X[800:], y[800:]


def _mse(y, pred):
    return float(np.mean((y - pred) ** 2))


def test_a_linear_target_gets_the_ridge(linear):
    Xtr, ytr, Xte, yte = linear
    reg = DIFFormerRegressor(**FAST, random_state=0).fit(Xtr, ytr)
    net = DIFFormerRegressor(**FAST, linear_fallback=False, random_state=0).fit(Xtr, ytr)
    assert reg.linear_fallback == "auto" and not reg.network_used_
    assert net.network_used_ and net.linear_fallback_ is None
    # the ridge predicts, refitted to all rows: its means, in the units of y, on the scaled
    # features, and its leave-one-out error as the variance
    ridge = reg.linear_fallback_
    assert isinstance(ridge, RidgeCV) and ridge.alphas == FALLBACK_ALPHAS
    scale = reg._feature_scaling
    scaled = ((Xtr - scale.mean_) / scale.scale_).astype(np.float32)
    ys = (ytr - reg.y_mean_[0]) / reg.y_scale_[0]
    ref = RidgeCV(alphas=list(FALLBACK_ALPHAS)).fit(scaled, ys)
    assert ridge.alpha_ == ref.alpha_
    np.testing.assert_allclose(ridge.coef_.ravel(), ref.coef_, rtol=1e-5)
    test_scaled = ((Xte - scale.mean_) / scale.scale_).astype(np.float32)
    np.testing.assert_allclose(reg.predict(Xte), ref.predict(test_scaled) * reg.y_scale_[0]
                               + reg.y_mean_[0], rtol=1e-5, atol=1e-4)
    loo = np.mean([(ref.fit(np.delete(scaled, i, 0), np.delete(ys, i)).predict(scaled[i:i + 1])
                    [0] - ys[i]) ** 2 for i in range(0, 300, 10)])  # a slow subsample
    assert ridge.loo_mse_[0] == pytest.approx(loo, rel=0.3)
    _, std = reg.predict(Xte, return_std=True)
    np.testing.assert_allclose(std, np.sqrt(ridge.loo_mse_[0] + 1e-6) * reg.y_scale_[0],
                               rtol=1e-4)
    assert reg.std_scale_[0] == 1.0
    # far better than the network alone on this target, and calibrated on the ridge's errors
    assert _mse(yte, reg.predict(Xte)) < 0.5 * _mse(yte, net.predict(Xte))
    assert _mse(yte, reg.predict(Xte)) < 1.3 * 10.0 ** 2  # near the noise variance
    mean, std = reg.predict(Xte, return_std=True)
    assert 0.85 <= np.mean(np.abs(yte - mean) <= 1.96 * std) <= 1.0
    # sample_posterior and transduction_ take the same means
    draws = reg.sample_posterior(Xte, n_samples=400, random_state=0)
    np.testing.assert_allclose(draws.mean(-1), mean, atol=4 * std.max() / np.sqrt(400))
    np.testing.assert_allclose(reg.transduction_, reg.predict(Xtr), rtol=1e-5, atol=1e-4)


def _correction_means(reg, X):
    """Standardised means of the ridge plus the network's correction on the rows of ``X``,
    whichever of the two predicts."""
    from skdiff.difformer._estimators import _DIFFormerBase

    prepared = reg._prepare_predict(X)
    with reg._inference():
        raw = _DIFFormerBase._network_outputs(reg, prepared)  # the network's own outputs
    return reg._with_skip(raw, prepared[1])[:, 0], raw[:, 0]


def test_a_nonlinear_target_keeps_the_network(friedman):
    Xtr, ytr, Xte, yte = friedman
    reg = DIFFormerRegressor(**FULL, random_state=0).fit(Xtr, ytr)
    net = DIFFormerRegressor(**FULL, linear_fallback=False, random_state=0).fit(Xtr, ytr)
    assert reg.network_used_ and net.network_used_ and net.linear_fallback_ is None
    assert net.network_target_ == "targets"
    ridge_mse = _mse(yte, RidgeCV(alphas=FALLBACK_ALPHAS).fit(Xtr, ytr).predict(Xte))
    assert _mse(yte, reg.predict(Xte)) < 0.8 * ridge_mse
    assert _mse(yte, reg.predict(Xte)) < 1.1 * _mse(yte, net.predict(Xte))
    mean, std = reg.predict(Xte, return_std=True)
    assert 0.85 <= np.mean(np.abs(yte - mean) <= 1.96 * std) <= 1.0
    draws = reg.sample_posterior(Xte, n_samples=400, random_state=0)
    np.testing.assert_allclose(draws.mean(-1), mean, atol=4 * std.max() / np.sqrt(400))


def _sine3(n, noise, random_state):
    """``sin(x0) + sin(x1) + sin(x2)`` of 5 standard normal features: a smooth target a
    network learns better from the targets than as a correction to a ridge."""
    rng = np.random.RandomState(random_state)
    X = rng.normal(size=(n, 5))
    return X, np.sin(X[:, :3]).sum(1) + noise * rng.normal(size=n)


@pytest.mark.parametrize("data, n_rows", [("friedman", 150), ("friedman", 800),
                                          ("friedman2", 150), ("sine3", 800)])
def test_the_network_learns_a_correction_or_the_targets(data, n_rows, capsys):
    """The network learns the ridge's residuals; with 20 validation rows or more a second
    one, from the same seed, learns the targets themselves, kept instead only if it beats
    the ridge plus the correction on the validation rows by one standard error (recomputed
    here from the validation rows of a mask). The ridge's and the correction's predictions
    add up (whether or not the two-standard-error rule against the ridge then keeps them)."""
    maker = {"friedman": make_friedman1, "friedman2": make_friedman2, "sine3": _sine3}[data]
    X, y = maker(1000, noise={"friedman": 1.0, "friedman2": 10.0, "sine3": 0.1}[data],
                 random_state=0)
    Xtr, ytr, Xte = X[:n_rows], y[:n_rows], X[800:]
    mask = np.zeros(n_rows, dtype=bool)
    mask[::5 if data == "sine3" else 10] = True
    # four layers, the depth at which these data sets take each path (over a table the
    # default, n_layers="auto", takes one, with which the sine keeps the correction)
    full = {**FULL, "n_layers": 4}
    reg = DIFFormerRegressor(**full, random_state=0, verbose=1).fit(Xtr, ytr,
                                                                   validation_mask=mask)
    out = capsys.readouterr().out
    two = "a network on the targets" in out
    assert two == (n_rows >= 400)  # 15 validation rows, then 80 and 160
    ys = (ytr[mask] - reg.y_mean_[0]) / reg.y_scale_[0]
    if two:
        assert out.count("linear_fallback:") == 2
        line = next(ln for ln in out.splitlines() if "a network on the targets" in ln)
        assert line.endswith(f"{reg.network_target_} kept")
        # the second network, refitted alone from the same seed, is the targets one
        net = DIFFormerRegressor(**full, random_state=0, linear_fallback=False).fit(
            Xtr, ytr, validation_mask=mask)
        err_targets = ((net.predict(Xtr[mask]) - ytr[mask]) / reg.y_scale_[0]) ** 2
        if reg.network_target_ == "targets":
            if reg.network_used_:
                np.testing.assert_allclose(reg.predict(Xte), net.predict(Xte), rtol=1e-5,
                                           atol=1e-4)
        else:
            corrected, _ = _correction_means(reg, Xtr[mask])
            w = np.full(mask.sum(), 1 / mask.sum())
            diff = err_targets - (corrected - ys) ** 2
            assert not -diff.mean() > mean_difference_se(diff - diff.mean(), w)
    else:
        assert reg.network_target_ == "residuals"
    # the paths of predict: Friedman #2 with 150 rows keeps the correction, the sine (800
    # rows, 160 of them validation rows) the network on the targets
    assert reg.network_used_ or data == "friedman"
    assert (reg.network_target_ == "targets") == (data == "sine3")
    scale = reg._feature_scaling
    test_scaled = ((Xte - scale.mean_) / scale.scale_).astype(np.float32)
    corrected, network = _correction_means(reg, Xte)
    if reg.network_target_ == "residuals":
        # predictions are the ridge's (fitted to the training rows) plus the network's
        # output times the residuals' scale
        ridge, graph_scale, c = reg._skip
        assert (reg.linear_fallback_ is ridge) == reg.network_used_  # else refitted
        assert graph_scale is None and 0 < c[0] < 1
        expected = ridge.predict(test_scaled.astype(np.float64)) + c[0] * network
    else:
        assert reg._skip is None
        expected = network
    np.testing.assert_allclose(corrected, expected, rtol=1e-6, atol=1e-6)
    if reg.network_used_:  # else the ridge refitted to all rows predicts
        np.testing.assert_allclose(reg.predict(Xte),
                                   expected * reg.y_scale_[0] + reg.y_mean_[0],
                                   rtol=1e-5, atol=1e-4)


def test_the_network_learns_the_ridges_leave_one_out_residuals(linear):
    """The correction's targets: the training rows' residuals of the ridge left out one at
    a time (recomputed here by refitting it without each row), divided by their standard
    deviation; the validation rows' plain residuals, scaled alike."""
    from sklearn.linear_model import Ridge

    Xtr, ytr, _, _ = linear
    mask = np.zeros(len(ytr), dtype=bool)
    mask[::8] = True
    seen = {}
    make = DIFFormerRegressor._make_datasets

    def spy(self, data, train, valid):
        out = make(self, data, train, valid)
        seen["targets"] = out[0].item[1]["y"].cpu().numpy().ravel()
        seen["valid"] = out[1].item[1]["y"].cpu().numpy().ravel()
        return out

    reg = DIFFormerRegressor(**dict(FAST, max_epochs=2), random_state=0)
    import unittest.mock as mock

    with mock.patch.object(DIFFormerRegressor, "_make_datasets", spy):
        reg.fit(Xtr, ytr, validation_mask=mask)
    scale = reg._feature_scaling
    scaled = ((Xtr - scale.mean_) / scale.scale_).astype(np.float64)
    ys = (ytr - reg.y_mean_[0]) / reg.y_scale_[0]
    ridge = reg._skip[0]
    tr = np.flatnonzero(~mask)
    loo = np.array([ys[i] - Ridge(alpha=ridge.alpha_).fit(
        scaled[np.setdiff1d(tr, i)], ys[np.setdiff1d(tr, i)]).predict(scaled[i:i + 1])[0]
        for i in tr])
    np.testing.assert_allclose(reg._skip[2], [loo.std()], rtol=1e-4)
    np.testing.assert_allclose(seen["targets"][tr], loo / loo.std(), rtol=1e-3, atol=1e-4)
    assert np.isnan(seen["targets"][mask]).all()
    plain = (ys[mask] - ridge.predict(scaled[mask])) / loo.std()
    np.testing.assert_allclose(seen["valid"][mask], plain, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("data", ["linear", "friedman"])
def test_the_decision_is_the_two_standard_error_rule(data, request):
    """Recomputed from the validation rows of a ``validation_mask``: the network's
    correction is kept exactly when the ridge plus it has a validation MSE lower than the
    ridge's by more than two standard errors of the mean per-row difference (standardised
    targets)."""
    Xtr, ytr, _, _ = request.getfixturevalue(data)
    mask = np.zeros(len(ytr), dtype=bool)
    mask[::8] = True
    reg = DIFFormerRegressor(**FULL, linear_fallback=True, random_state=0).fit(
        Xtr, ytr, validation_mask=mask)
    scale = reg._feature_scaling
    scaled = ((Xtr - scale.mean_) / scale.scale_).astype(np.float32)
    ys = (ytr - reg.y_mean_[0]) / reg.y_scale_[0]
    ridge = RidgeCV(alphas=list(FALLBACK_ALPHAS)).fit(scaled[~mask], ys[~mask])
    if reg._skip is not None:  # the compared ridge is the one the network corrects
        np.testing.assert_allclose(reg._skip[0].coef_.ravel(), ridge.coef_, rtol=1e-5,
                                   atol=1e-7)
    # the ridge kept is the compared one, or the one refitted to all rows that predicts
    kept_ridge = RidgeCV(alphas=list(FALLBACK_ALPHAS)).fit(
        *((scaled, ys) if not reg.network_used_ else (scaled[~mask], ys[~mask])))
    np.testing.assert_allclose(reg.linear_fallback_.coef_.ravel(), kept_ridge.coef_,
                               rtol=1e-5, atol=1e-7)
    yv = ys[mask]
    corrected, _ = _correction_means(reg, Xtr[mask])
    err_net = (corrected - yv) ** 2
    err_ridge = (ridge.predict(scaled[mask]) - yv) ** 2
    diff = err_net - err_ridge
    w = np.full(mask.sum(), 1 / mask.sum())
    kept = -diff.mean() > 2 * mean_difference_se(diff - diff.mean(), w)
    assert reg.network_used_ == kept
    assert kept == (data == "friedman")


def test_where_auto_compares(linear):
    Xtr, ytr, _, _ = linear
    short = dict(FAST, max_epochs=2, random_state=0)
    # unlabelled rows beside the labelled ones: compared on labelled validation rows
    semi = DIFFormerRegressor(**short).fit(Xtr, np.where(np.arange(300) % 2, ytr, np.nan))
    assert semi.linear_fallback_ is not None
    A = sp.eye(300, k=1, format="csr")
    A = A + A.T
    g = Graph(Xtr, A)
    graph_mode = DIFFormerRegressor(**short).fit(g.node_ids(), ytr, graph=g)
    few = DIFFormerRegressor(**short).fit(Xtr[:19], ytr[:19])  # none held out
    # a graph whose 40 labelled nodes give 4 validation rows holds none out
    few_nodes = DIFFormerRegressor(**short).fit(
        Xtr, np.where(np.arange(300) < 40, ytr, np.nan), adjacency=A)
    assert "valid_loss" not in few_nodes.history_[-1]
    # ... unless validation rows are given: 6 of them are compared on
    given = DIFFormerRegressor(**short).fit(
        Xtr, np.where(np.arange(300) < 40, ytr, np.nan), adjacency=A,
        validation_mask=np.arange(300) < 6)
    assert given.linear_fallback_ is not None
    mc = DIFFormerRegressor(**short, uncertainty="mc_dropout").fit(Xtr, ytr)
    no_split = DIFFormerRegressor(**short, early_stopping=False).fit(Xtr, ytr)
    for est in (graph_mode, few, few_nodes, mc, no_split):
        assert est.network_used_ and est.linear_fallback_ is None
    # from 5 validation rows it compares (50 rows): they are held out, scored every epoch,
    # but do not stop the training (a split of 5 rows stops on noise)
    small = DIFFormerRegressor(**dict(short, max_epochs=30)).fit(Xtr[:50], ytr[:50])
    assert small.linear_fallback_ is not None and small.early_stopping_ is False
    assert len(small.history_) == 30 and "valid_loss" in small.history_[-1]
    assert small.dropout_ == 0.2  # too few validation rows to calibrate the head
    # a graph among the rows compares from 41 labelled nodes, labelled or not (the ridge
    # then reads the graph too); True compares wherever there are validation rows
    for y_graph in (ytr, np.where(np.arange(300) < 41, ytr, np.nan)):
        graph = DIFFormerRegressor(**short).fit(Xtr, y_graph, adjacency=A)
        assert graph.linear_fallback_ is not None
    forced = DIFFormerRegressor(**short, linear_fallback=True).fit(Xtr[:19], ytr[:19])
    assert forced.linear_fallback_ is not None


def test_a_table_of_20_to_49_rows_holds_out_5_rows_to_compare_on(monkeypatch):
    # validation_fraction=0.1 holds out 2-4 of them, too few to compare on: the network
    # alone predicts 40 rows of a target linear in 5 of 20 features far worse than a ridge
    X, y = make_regression(1040, 20, n_informative=5, noise=5.0, random_state=3)
    Xtr, ytr, Xte, yte = X[:40], y[:40], X[40:], y[40:]
    held_out = []
    split = DIFFormerRegressor._validation_rows

    def spy(self, data):
        train, valid = split(self, data)
        held_out.append(valid.size)
        return train, valid

    monkeypatch.setattr(DIFFormerRegressor, "_validation_rows", spy)
    reg = DIFFormerRegressor(**FULL, random_state=0).fit(Xtr, ytr)
    net = DIFFormerRegressor(**FULL, linear_fallback=False, random_state=0).fit(Xtr, ytr)
    assert held_out == [5, 0]
    assert not reg.network_used_ and net.network_used_
    ridge = RidgeCV(alphas=FALLBACK_ALPHAS).fit((Xtr - Xtr.mean(0)) / Xtr.std(0), ytr)
    ridge_mse = _mse(yte, ridge.predict((Xte - Xtr.mean(0)) / Xtr.std(0)))
    assert _mse(yte, reg.predict(Xte)) < 1.05 * ridge_mse
    assert _mse(yte, net.predict(Xte)) > 10 * ridge_mse
    # a validation_fraction that holds out more is kept; under 20 rows, with nothing to
    # compare on, no row is held out from the network
    short = dict(FAST, max_epochs=2, random_state=0)
    DIFFormerRegressor(**short, validation_fraction=0.25).fit(Xtr, ytr)
    DIFFormerRegressor(**short).fit(X[:60], y[:60])
    DIFFormerRegressor(**short).fit(Xtr[:19], ytr[:19])
    assert held_out[2:] == [10, 6, 0]


def test_a_few_labelled_rows_among_unlabelled_ones_are_guarded_too():
    # 40 labelled rows of 300, the others unlabelled: the network reads all 300 through its
    # attention and still predicts a linear target far worse than a ridge on the 40
    X, y = make_regression(300, 20, n_informative=5, noise=5.0, random_state=3)
    y_semi = np.where(np.arange(300) < 40, y, np.nan)
    reg = DIFFormerRegressor(**FULL, random_state=0).fit(X, y_semi)
    net = DIFFormerRegressor(**FULL, linear_fallback=False, random_state=0).fit(X, y_semi)
    assert not reg.network_used_ and net.network_used_
    scaled = (X - X.mean(0)) / X.std(0)
    ridge = RidgeCV(alphas=FALLBACK_ALPHAS).fit(scaled[:40], y[:40])
    ridge_mse = _mse(y[40:], ridge.predict(scaled[40:]))
    assert _mse(y[40:], reg.transduction_[40:]) < 1.05 * ridge_mse
    assert _mse(y[40:], net.transduction_[40:]) > 10 * ridge_mse
    np.testing.assert_allclose(reg.predict(X[40:]), reg.transduction_[40:], rtol=1e-5,
                               atol=1e-4)


@pytest.fixture(scope="module")
def graph_task():
    """Node regression on a contextual stochastic block model with 120 of 1,000 nodes
    labelled: the value is a level per block plus a linear function of the features, and
    edges mostly join nodes of one block, so the average of the features over a node's
    neighbours tells its block better than its own features do."""
    rng = np.random.RandomState(0)
    n, n_blocks, d = 1000, 4, 16
    block = rng.randint(n_blocks, size=n)
    X = rng.normal(scale=0.6, size=(n_blocks, d))[block] + rng.normal(size=(n, d))
    same = block[:, None] == block[None, :]
    p = np.where(same, 8 * 0.8 / (n / n_blocks), 8 * 0.2 / (n - n / n_blocks))
    A = sp.csr_matrix(np.triu(rng.uniform(size=(n, n)) < p, 1).astype(float))
    A = A + A.T
    y = rng.normal(size=n_blocks)[block] + X[:, :8] @ rng.normal(scale=0.2, size=8) \
        + 0.3 * rng.normal(size=n)
    labelled = np.zeros(n, dtype=bool)
    labelled[rng.choice(n, 120, replace=False)] = True
    return X, A, y, labelled


def test_the_ridge_reads_weights_as_the_network_does():
    # a row of weight 0 is an unlabelled row, and scaling every weight changes nothing:
    # the ridge's penalty must not be traded against the weights' scale
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 4))
    y = 0.2 * X[:, 0] + rng.normal(size=120)
    w = np.ones(120)
    w[:80] = 0
    y_nan = np.where(w > 0, y, np.nan)
    fit = lambda *a, **k: DIFFormerRegressor(n_layers=1, max_epochs=5, random_state=0,  # noqa: E731
                                             device="cpu").fit(*a, **k)
    unlabelled = fit(X, y_nan)
    assert not unlabelled.network_used_  # the ridge predicts
    for other in (fit(X, y, sample_weight=w), fit(X, y_nan, sample_weight=(w > 0) * 1.0),
                  fit(X, y_nan, sample_weight=7.0 * (w > 0))):
        assert not other.network_used_
        np.testing.assert_allclose(other.linear_fallback_.coef_,
                                   unlabelled.linear_fallback_.coef_, rtol=1e-10)
        np.testing.assert_allclose(other.linear_fallback_.loo_mse_,
                                   unlabelled.linear_fallback_.loo_mse_, rtol=1e-10)
        np.testing.assert_allclose(other.predict(X, return_std=True),
                                   unlabelled.predict(X, return_std=True), rtol=1e-10)


def test_on_a_graph_the_ridge_reads_the_features_and_their_graph_average(graph_task,
                                                                          monkeypatch):
    """With an adjacency the fallback ridge reads the scaled features and their 2-hop SGC
    average beside them: the linear model of the nodes of a graph. Where
    the network does not beat it, that ridge predicts the unlabelled nodes (better than the
    network alone and than a ridge on the features), on the fitted graph and on a new one."""
    from skdiff.difformer._propagation import smoothed_features

    X, A, y, labelled = graph_task
    y_fit = np.where(labelled, y, np.nan)
    reg = DIFFormerRegressor(**FULL, random_state=0).fit(X, y_fit, adjacency=A)
    net = DIFFormerRegressor(**FULL, linear_fallback=False, random_state=0).fit(
        X, y_fit, adjacency=A)
    assert not reg.network_used_ and net.network_used_
    assert "valid_loss" in reg.history_[-1]  # 12 labelled nodes held out to compare on
    scale = reg._feature_scaling
    F = ((X - scale.mean_) / scale.scale_).astype(np.float32)
    S = smoothed_features(A, F)
    # the averages as they are or standardised over the graph's nodes, by leave-one-out
    scale = reg._fallback_graph_scale
    assert np.array_equal(scale, np.ones(16)) or np.allclose(scale, S.std(0), rtol=1e-5)
    Z = np.hstack([F, S / scale])
    ys = (y - reg.y_mean_[0]) / reg.y_scale_[0]
    ref = RidgeCV(alphas=list(FALLBACK_ALPHAS)).fit(Z[labelled], ys[labelled])
    np.testing.assert_allclose(reg.linear_fallback_.coef_.ravel(), ref.coef_, rtol=1e-4,
                               atol=1e-6)
    expected = ref.predict(Z) * reg.y_scale_[0] + reg.y_mean_[0]
    np.testing.assert_allclose(reg.transduction_, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(reg.predict(X, adjacency=A), expected, rtol=1e-4, atol=1e-4)
    # rows without an adjacency are isolated nodes: their graph average is their features
    isolated = ref.predict(np.hstack([F[:5], F[:5] / scale])) * reg.y_scale_[0] \
        + reg.y_mean_[0]
    np.testing.assert_allclose(reg.predict(X[:5]), isolated, rtol=1e-4, atol=1e-4)
    # the ridge has no dropout: one pass per prediction, not one per Monte Carlo draw
    import skdiff.difformer._estimators as est_module

    calls = []
    monkeypatch.setattr(est_module, "smoothed_features",
                        lambda *a: calls.append(1) or smoothed_features(*a))
    # on the fitted rows and graph the answers are fit's: no pass at all
    reg.predict(X, adjacency=A, return_std=True)
    assert calls == []
    # the same graph with its nodes in another order is another graph to predict on
    order = np.arange(len(X))[::-1]
    reg.predict(X[order], adjacency=A[order][:, order], return_std=True)
    reg.sample_posterior(X[order], 50, adjacency=A[order][:, order], random_state=0)
    assert len(calls) == 3  # predict's mean and std, sample_posterior's moments
    scored = ~labelled
    plain = RidgeCV(alphas=list(FALLBACK_ALPHAS)).fit(F[labelled], y[labelled])
    assert _mse(y[scored], reg.transduction_[scored]) < 0.8 * _mse(
        y[scored], plain.predict(F[scored]))
    assert _mse(y[scored], reg.transduction_[scored]) < 0.8 * _mse(
        y[scored], net.transduction_[scored])


def test_linear_fallback_errors_name_the_parameter_and_the_fix(linear):
    Xtr, ytr, _, _ = linear
    short = dict(FAST, max_epochs=2, random_state=0, linear_fallback=True)
    g = Graph(Xtr, sp.eye(300, k=1, format="csr"))
    with pytest.raises(ValueError, match=r"linear_fallback=True .* graph mode"):
        DIFFormerRegressor(**short).fit(g.node_ids(), ytr, graph=g)
    with pytest.raises(ValueError, match=r"linear_fallback=True .*uncertainty='mc_dropout'"):
        DIFFormerRegressor(**short, uncertainty="mc_dropout").fit(Xtr, ytr)
    with pytest.raises(ValueError, match=r"holds 0 \(early_stopping=False.*validation_mask"):
        DIFFormerRegressor(**short, early_stopping=False).fit(Xtr, ytr)
    with pytest.raises(ValueError, match=r"holds 0 \(early_stopping=False"):
        DIFFormerRegressor(**{**short, "linear_fallback": np.True_},
                           early_stopping=False).fit(Xtr, ytr)  # numpy's True is True
    with pytest.raises(ValueError, match="linear_fallback"):
        DIFFormerRegressor(linear_fallback="ridge").fit(Xtr, ytr)


def test_verbose_reports_the_comparison(linear, capsys):
    Xtr, ytr, _, _ = linear
    DIFFormerRegressor(**FAST, random_state=0, verbose=1).fit(Xtr, ytr)
    assert "linear_fallback: the network's validation MSE is" in capsys.readouterr().out


def test_a_fallback_fit_round_trips(linear, tmp_path):
    """Pickled, copied or saved, a regressor that predicts with the ridge keeps its state
    (the same attributes, the same predictions and samples)."""
    import copy
    import pickle

    Xtr, ytr, Xte, _ = linear
    reg = DIFFormerRegressor(**FAST, random_state=0).fit(Xtr, ytr)
    assert not reg.network_used_
    reg.save(tmp_path / "model.joblib")
    for other in (pickle.loads(pickle.dumps(reg)), copy.deepcopy(reg),
                  DIFFormerRegressor.load(tmp_path / "model.joblib")):
        np.testing.assert_array_equal(other.predict(Xte, return_std=True),
                                      reg.predict(Xte, return_std=True))
        np.testing.assert_array_equal(other.sample_posterior(Xte, 4, random_state=0),
                                      reg.sample_posterior(Xte, 4, random_state=0))
        assert set(vars(other)) == set(vars(reg))


@pytest.mark.parametrize("data", ["linear", "friedman"])
def test_the_kept_ridges_hold_nothing_per_training_row(data, request):
    """The ridge that predicts or that the correction is added to keeps its coefficients
    and leave-one-out MSE, but no table of per-row errors: fitted on twice the rows, its
    arrays have the same sizes."""
    Xtr, ytr, _, _ = request.getfixturevalue(data)
    sizes = []
    for n in (200, 400):
        reg = DIFFormerRegressor(**dict(FAST, max_epochs=5), random_state=0).fit(Xtr[:n], ytr[:n])
        ridges = [reg.linear_fallback_, reg.__dict__.get("_skip", None) and reg._skip[0]]
        ridges = [r for r in ridges if r]
        assert ridges
        for ridge in ridges:
            assert not hasattr(ridge, "cv_results_") and not hasattr(ridge, "loo_errors_")
            assert ridge.get_params()["store_cv_results"] is False
        sizes.append(sorted(np.size(v) for r in ridges for v in vars(r).values()
                            if isinstance(v, np.ndarray)))
    assert sizes[0] == sizes[1]


def test_a_partial_fit_call_too_small_to_compare_keeps_the_ridge():
    # the first call (25 rows: 5 held out) chooses the ridge on a linear target; later calls
    # of 15 rows hold out 2, too few to compare, and switched to the network unjudged (test
    # R2 0.99 -> -0.10 after 30 such calls); now they keep the ridge the comparison chose
    X, y = make_regression(n_samples=525, n_features=20, n_informative=10, noise=10.0,
                           random_state=0)
    reg = DIFFormerRegressor(random_state=0).partial_fit(X[:25], y[:25])
    assert not reg.network_used_
    ridge, before = reg.linear_fallback_, reg.predict(X[25:])
    for i in range(3):
        reg.partial_fit(X[25 + 15 * i:40 + 15 * i], y[25 + 15 * i:40 + 15 * i])
        assert not reg.network_used_ and reg.linear_fallback_ is ridge
    np.testing.assert_array_equal(reg.predict(X[25:]), before)
    # the call's rows are the ridge's predictions too
    np.testing.assert_allclose(reg.transduction_, reg.predict(X[55:70]), rtol=1e-9)
    # a call large enough to compare judges again
    reg.partial_fit(X[100:], y[100:])
    assert reg.linear_fallback_ is not ridge


def test_a_partial_fit_call_too_small_to_calibrate_keeps_the_calibration():
    # the network is kept on Friedman #2 and its intervals calibrated on the held-out rows;
    # a later call of 15 rows holds out 2, too few to calibrate (or to compare with the
    # ridge): the scale stays (it was reset to 1, intervals fitted to the training rows)
    X, y = make_friedman2(400, noise=10.0, random_state=0)
    reg = DIFFormerRegressor(random_state=0, max_epochs=60).fit(X[:300], y[:300])
    assert reg.network_used_
    scale = reg.std_scale_.copy()
    assert not np.allclose(scale, 1.0)
    reg.partial_fit(X[300:315], y[300:315])
    assert reg.network_used_
    np.testing.assert_array_equal(reg.std_scale_, scale)
