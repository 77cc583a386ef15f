"""Conventions users bring from scikit-learn, skorch and sktime: weights, devices, threads,
progress, callbacks, persistence, pipelines, sequence layouts."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import Callback, Checkpoint, GradientNormClipping, LRScheduler

import skdiff._base as base
from skdiff import (
    DIFFormerClassifier,
    DIFFormerRegressor,
    FlowformerClassifier,
    FlowformerRegressor,
    sample_posterior,
)
from skdiff.callbacks import EpochScoring, WeightAveraging
from skdiff.datasets import make_planted_partition

FLOW = dict(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=6, device="cpu", random_state=0)
DIF = dict(n_layers=2, hidden_dim=16, max_epochs=20, device="cpu", random_state=0)


@pytest.fixture(scope="module")
def sequences():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, 160)
    centre = np.where(y == 1, 14.0, 4.0)[:, None]
    X = np.exp(-0.5 * (np.arange(18) - centre) ** 2) + 0.3 * rng.normal(size=(160, 18))
    return X, y


@pytest.fixture(scope="module")
def graph():
    return make_planted_partition(90, 3, p_in=0.1, p_out=0.01, n_features=6,
                                  feature_signal=1.0, random_state=0)


# -- sample_weight and class_weight --------------------------------------------------------
def test_sample_weight_is_a_weighted_mean_of_the_loss(sequences):
    X, y = sequences
    kw = dict(FLOW, dropout=0.0, batch_size=400, early_stopping=False)  # one batch per epoch
    w = np.where(np.arange(160) < 40, 2.0, 1.0)
    # the window's maximum: not linear in the window, so the rows' weights shape the fit (the
    # last value itself is fitted exactly by the ridge skip relative to persistence)
    t = X.max(axis=1)
    weighted = FlowformerRegressor(**kw).fit(X, t, sample_weight=w)
    repeated = FlowformerRegressor(**kw).fit(np.r_[X, X[:40]], np.r_[t, t[:40]])
    # float32 sums over 160 and 200 rows round differently (up to ~3e-5 after 6 epochs on
    # some CPUs); ignoring the weights moves the predictions by ~5e-2
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-4, atol=1e-4)
    unweighted = FlowformerRegressor(**kw).fit(X, t)
    assert np.abs(unweighted.predict(X) - repeated.predict(X)).max() > 1e-2


def test_class_weight_multiplies_the_loss_weights(sequences, graph):
    X, y = sequences
    clf = FlowformerClassifier(class_weight="balanced")
    imbalanced = np.r_[np.flatnonzero(y == 0)[:10], np.flatnonzero(y == 1)]
    yi = y[imbalanced]
    _, _, _, w = clf._targets(yi, reset=True, weights=np.full(len(yi), 2.0))
    np.testing.assert_allclose(w, 2.0 * len(yi) / (2 * np.bincount(yi)[yi]))
    _, _, _, w = clf.set_params(class_weight={0: 3.0})._targets(yi, reset=True,
                                                                weights=np.ones(len(yi)))
    np.testing.assert_allclose(w, np.where(yi == 0, 3.0, 1.0))
    with pytest.raises(ValueError, match="'class_weight' names classes \\[7\\]"):
        FlowformerClassifier(**FLOW, class_weight={7: 1.0}).fit(X, y)
    # on imbalanced data, balancing the classes finds more of the rare one
    kw = dict(FLOW, max_epochs=15, early_stopping=False)
    plain = FlowformerClassifier(**kw).fit(X[imbalanced], yi).predict(X)
    balanced = FlowformerClassifier(**kw, class_weight="balanced").fit(
        X[imbalanced], yi).predict(X)
    assert np.mean(balanced[y == 0] == 0) > np.mean(plain[y == 0] == 0)
    Xg, yg, A = graph
    y_semi = np.where(np.arange(90) % 3 == 0, -1, yg)
    zero = np.where(np.arange(90) % 3 == 0, 0.0, 1.0)
    # a third of the rows marked -1 beside three classes of about 20: the estimator asks
    # whether -1 is a class; here it marks unlabelled rows
    with pytest.warns(UserWarning, match="30 rows have the label -1"):
        a = DIFFormerClassifier(**DIF).fit(Xg, y_semi, adjacency=A)
    b = DIFFormerClassifier(**DIF).fit(Xg, yg, adjacency=A, sample_weight=zero)
    np.testing.assert_allclose(a.predict_proba(Xg, adjacency=A), b.predict_proba(Xg, adjacency=A),
                               atol=1e-6)


# -- device, threads, progress ---------------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the errors of a CPU-only machine")
def test_device_strings(monkeypatch):
    assert base.resolve_device("cpu") == "cpu"
    assert base.resolve_device(torch.device("cpu")) == "cpu"
    with pytest.raises(ValueError, match=r"'device' parameter is 'cuda:1' but CUDA is not "
                                         r"available on this machine \(available: cpu"):
        base.resolve_device("cuda:1")
    with pytest.raises(ValueError, match=r"'device' parameter is 'mps' but it is not "
                                         r"available .*available: cpu"):
        base.resolve_device("mps")
    with pytest.raises(ValueError, match="'auto' or a torch device"):
        base.resolve_device("gpu please")
    # 'auto' takes the GPU with the most free memory when there are several
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    free = {0: 1e9, 1: 5e9, 2: 2e9}
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda i: (free[i], 8e9))
    assert base.resolve_device("auto") == "cuda:1"


class _ThreadsSeen(Callback):
    def on_epoch_end(self, net, **kwargs):
        self.seen = torch.get_num_threads()


def test_n_threads_applies_inside_fit_and_is_restored(sequences):
    X, y = sequences
    before = torch.get_num_threads()
    seen = _ThreadsSeen()
    FlowformerClassifier(**FLOW, n_threads=2, callbacks=[seen]).fit(X, y)
    assert seen.seen == 2 and torch.get_num_threads() == before
    with pytest.raises(ValueError, match="'n_threads' parameter"):
        FlowformerClassifier(**FLOW, n_threads=0).fit(X, y)


def test_verbose_zero_is_silent_and_one_shows_a_bar(sequences, capfd):
    X, y = sequences
    clf = FlowformerClassifier(**FLOW).fit(X, y)
    clf.sample_posterior(X[:3], n_samples=30)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    FlowformerClassifier(**FLOW, verbose=1, n_init=2).fit(X, y)
    out, err = capfd.readouterr()
    assert "FlowformerClassifier (init 2/2)" in err and "epoch" in err and out == ""
    FlowformerClassifier(**FLOW, verbose=2).fit(X, y)
    out, _ = capfd.readouterr()
    assert "train_loss" in out  # skorch's epoch table


# -- skorch callbacks -----------------------------------------------------------------------
def test_skorch_callbacks_work_and_scoring_counts_labelled_rows(sequences, graph, tmp_path):
    X, y = sequences
    cbs = [Checkpoint(dirname=str(tmp_path / "ckpt")), GradientNormClipping(1.0),
           LRScheduler(policy=torch.optim.lr_scheduler.StepLR, step_size=2, gamma=0.5),
           EpochScoring("accuracy")]
    clf = FlowformerClassifier(**FLOW, early_stopping=True, callbacks=cbs).fit(X, y)
    assert (tmp_path / "ckpt" / "params.pt").is_file()
    assert "valid_accuracy" in clf.history_[-1]
    Xg, yg, A = graph
    y_semi = np.where(np.arange(90) % 2 == 0, yg, -1)
    with pytest.warns(UserWarning,
                      match="scores the validation rows, and this fit has none") as record:
        DIFFormerClassifier(**DIF, callbacks=[EpochScoring("accuracy")]).fit(
            Xg, y_semi, adjacency=A)  # early_stopping="auto": no validation rows here
    assert record[0].filename == __file__  # the caller's line, not skorch's
    with pytest.warns(UserWarning, match="scores the validation rows") as record:
        make_pipeline(StandardScaler(), FlowformerClassifier(
            **{**FLOW, "max_epochs": 1}, early_stopping=False,
            callbacks=[EpochScoring("accuracy")])).fit(X, y)
    assert record[0].filename == __file__
    clf = DIFFormerClassifier(**DIF, early_stopping=True,  # validation rows to score
                              callbacks=[EpochScoring("accuracy")]).fit(Xg, y_semi, adjacency=A)
    np.testing.assert_allclose(clf.history_[:, "valid_accuracy"], clf.history_[:, "valid_acc"])
    from skorch.callbacks import EpochScoring as SkorchScoring

    with pytest.raises(TypeError, match="use skdiff.callbacks.EpochScoring"):
        FlowformerClassifier(**FLOW, callbacks=[SkorchScoring("accuracy")]).fit(X, y)


def test_a_scorer_object_is_named_by_its_metric_and_reserved_keys_are_refused(graph):
    # a make_scorer scorer has no __name__: its key names the metric it wraps, and a key the
    # estimator records itself (early stopping and n_init read it) cannot be taken
    from sklearn.metrics import make_scorer, zero_one_loss

    Xg, yg, A = graph
    loss = EpochScoring(make_scorer(zero_one_loss), lower_is_better=True)
    assert loss.history_key() == "valid_zero_one_loss"
    clf = DIFFormerClassifier(**DIF, early_stopping=True, callbacks=[loss]).fit(
        Xg, yg, adjacency=A)
    np.testing.assert_allclose(clf.history_[:, "valid_zero_one_loss"],
                               1 - np.asarray(clf.history_[:, "valid_acc"]), atol=1e-12)
    for name in ("valid_score", "valid_loss"):
        with pytest.raises(ValueError, match=rf"record its score as '{name}', a history key "
                                             r"DIFFormerClassifier records itself"):
            DIFFormerClassifier(**DIF, callbacks=[EpochScoring("accuracy", name=name)]).fit(
                Xg, yg, adjacency=A)


class _Snapshots(Callback):
    """Records the network's weights at the end of every epoch."""

    def initialize(self):
        self.states = []
        return self

    def on_epoch_end(self, net, **kwargs):
        self.states.append({k: v.detach().clone() for k, v in net.module_.state_dict().items()})


def test_weight_averaging_predicts_with_the_moving_average_of_the_epochs(sequences):
    X, y = sequences
    snaps, avg = _Snapshots(), WeightAveraging(decay=0.7, compare=False)
    clf = FlowformerClassifier(**FLOW, callbacks=[snaps, avg]).fit(X, y)
    assert len(snaps.states) == FLOW["max_epochs"]
    expected = dict(snaps.states[0])
    for state in snaps.states[1:]:
        expected = {k: 0.7 * expected[k] + 0.3 * v if v.dtype.is_floating_point else v
                    for k, v in state.items()}
    fitted = clf.module_.state_dict()
    last = snaps.states[-1]
    assert any(not torch.allclose(fitted[k], last[k]) for k in fitted)  # not the last epoch's
    for k, v in fitted.items():
        torch.testing.assert_close(v, expected[k], rtol=1e-5, atol=1e-6)
    assert avg.averaged_ and avg.losses_ is None
    assert avg.average_ is None  # no second copy of the weights travels in a pickle
    # one epoch of partial_fit averages that epoch alone: its own weights
    snaps, avg = _Snapshots(), WeightAveraging(decay=0.7)
    clf = FlowformerClassifier(**FLOW, callbacks=[snaps, avg]).partial_fit(X, y)
    for k, v in clf.module_.state_dict().items():
        torch.testing.assert_close(v, snaps.states[-1][k])


def test_weight_averaging_decay(sequences):
    assert WeightAveraging().decay_for(300) == pytest.approx(0.95)
    assert WeightAveraging().decay_for(60) == pytest.approx(0.75)
    assert WeightAveraging().decay_for(15) == 0.0  # too short a run to average
    assert WeightAveraging(0.5).decay_for(300) == 0.5
    X, y = sequences
    for bad in (1.0, -0.1, "fast", True):
        with pytest.raises(ValueError, match=rf"WeightAveraging: 'decay' must be 'auto' or a "
                                             rf"number in \[0, 1\); got {bad!r}"):
            FlowformerClassifier(**FLOW, callbacks=[WeightAveraging(bad)]).fit(X, y)
    with pytest.raises(ValueError, match="WeightAveraging: 'compare' must be True or False; "
                                         "got 'yes'"):
        FlowformerClassifier(**FLOW, callbacks=[WeightAveraging(compare="yes")]).fit(X, y)
    # numpy scalars are numbers and flags like any other
    avg = WeightAveraging(np.float32(0.5), compare=np.bool_(False))
    FlowformerClassifier(**FLOW, callbacks=[avg]).fit(X, y)
    assert avg.decay_ == 0.5 and avg.averaged_ and avg.losses_ is None


# -- persistence and pipelines --------------------------------------------------------------
def test_save_and_load_restore_everything(sequences, tmp_path):
    X, y = sequences
    reg = FlowformerRegressor(**FLOW).fit(X, X[:, -1] * 100 + 7)
    reg.save(tmp_path / "reg.joblib")
    again = FlowformerRegressor.load(tmp_path / "reg.joblib")
    np.testing.assert_array_equal(again.predict(X), reg.predict(X))
    np.testing.assert_array_equal(again.y_scale_, reg.y_scale_)
    with pytest.raises(TypeError, match="holds a FlowformerRegressor, not a "
                                        "FlowformerClassifier"):
        FlowformerClassifier.load(tmp_path / "reg.joblib")
    # bad files and folders are named with what to do
    with pytest.raises(IsADirectoryError, match="is a folder. Pass a file path, e.g. "):
        reg.save(tmp_path)
    with pytest.raises(IsADirectoryError, match="is a folder. Pass the file's path"):
        FlowformerRegressor.load(tmp_path)
    raw = (tmp_path / "reg.joblib").read_bytes()
    for name, content in (("empty", b""), ("truncated", raw[: len(raw) // 2]),
                          ("text", b"not an estimator")):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError, match="could not be read .*FlowformerRegressor.load "
                                             "expects a file written by .*Save the estimator"):
            FlowformerRegressor.load(tmp_path / name)
    with open(tmp_path / "plain.pkl", "wb") as fh:  # a plain pickle loads, with a warning
        pickle.dump(reg, fh)
    with pytest.warns(UserWarning, match="holds a plain pickle of a FlowformerRegressor") as rec:
        loaded = FlowformerRegressor.load(tmp_path / "plain.pkl")
    assert rec[0].filename == __file__
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))
    # a plain pickle of another estimator is refused as a saved one is; other objects by type
    with pytest.raises(TypeError, match="holds a FlowformerRegressor, not a "
                                        "FlowformerClassifier; load it with FlowformerRegressor"):
        FlowformerClassifier.load(tmp_path / "plain.pkl")
    with open(tmp_path / "scaler.pkl", "wb") as fh:
        pickle.dump(StandardScaler(), fh)
    with pytest.raises(TypeError, match="holds a StandardScaler, not a FlowformerRegressor; "
                                        "read it with joblib.load"):
        FlowformerRegressor.load(tmp_path / "scaler.pkl")
    with open(tmp_path / "list.pkl", "wb") as fh:
        pickle.dump([1, 2], fh)
    with pytest.raises(ValueError, match="holds a list, not an estimator written by "
                                         "FlowformerRegressor.save"):
        FlowformerRegressor.load(tmp_path / "list.pkl")


def test_sample_posterior_through_a_pipeline(graph):
    Xg, yg, _ = graph
    pipe = make_pipeline(StandardScaler(), DIFFormerRegressor(**DIF)).fit(Xg * 50, yg * 1.0)
    direct = pipe[-1].sample_posterior(pipe[0].transform(Xg[:5] * 50), n_samples=6,
                                       random_state=0)
    np.testing.assert_array_equal(sample_posterior(pipe, Xg[:5] * 50, n_samples=6,
                                                   random_state=0), direct)
    with pytest.raises(TypeError, match="has no sample_posterior"):
        sample_posterior(make_pipeline(StandardScaler()).fit(Xg), Xg)


# -- sequence layouts ------------------------------------------------------------------------
def test_ncl_layout_equals_the_transposed_nlc_array():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(80, 20, 3))  # (n, L, C)
    y = X[:, -1, 0]
    nlc = FlowformerRegressor(**FLOW).fit(X, y)
    ncl = FlowformerRegressor(**FLOW, layout="NCL").fit(X.transpose(0, 2, 1), y)
    np.testing.assert_allclose(ncl.predict(X.transpose(0, 2, 1)), nlc.predict(X), rtol=1e-6)
    with pytest.warns(UserWarning, match="pass layout='NCL'") as caught:
        FlowformerRegressor(**{**FLOW, "max_epochs": 1}).fit(X.transpose(0, 2, 1), y)
    assert caught[0].filename == __file__  # the warning points at the caller's line
    # the mirror mistake: an (n, L, C) array passed as "NCL"
    with pytest.warns(UserWarning) as caught:
        FlowformerRegressor(**{**FLOW, "max_epochs": 1}, layout="NCL").fit(X, y)
    assert str(caught[0].message) == (
        "X of shape (80, 20, 3) is read as (samples, channels, length) (layout='NCL'): 3 "
        "time steps of 20 channels. If it is (samples, length, channels), as tslearn stores "
        "series, pass layout='NLC'.")
    assert caught[0].filename == __file__


@pytest.mark.parametrize("Est", [FlowformerRegressor, FlowformerClassifier])
def test_ncl_layout_checks_the_sequence_length_and_channels(Est):
    # n_features_in_ is the sequence length in both layouts, so predict refuses another
    # length, even with a skip and pooling that could run on it
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 3, 24))  # (n, C, L)
    y = X[:, 0, -1] if Est is FlowformerRegressor else (X[:, 0, -1] > 0).astype(int)
    est = Est(**{**FLOW, "max_epochs": 1}, layout="NCL", skip="level").fit(X, y)
    assert (est.n_features_in_, est.sequence_length_, est.n_channels_in_) == (24, 24, 3)
    with pytest.raises(ValueError, match=(
            r"^X has 20 features, but \w+ is expecting 24 features as input: sequences of 20 "
            r"time steps \(axis 2 of X with layout='NCL'\), fitted on sequences of 24\. Crop "
            r"or pad every sequence to 24 steps \(e\.g\. keep the last 24\)\.$")):
        est.predict(X[:5, :, :20])
    with pytest.raises(ValueError, match=r"X has 2 channels but .* fitted on 3; pass "
                                         r"sequences with the 3 channels .*axis 1"):
        est.predict(X[:5, :2])


def test_a_dataframe_of_series_gets_the_conversion_to_3d():
    # sktime's and aeon's nested format: one series per cell
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(0)
    X = rng.normal(size=(20, 2, 12))
    nested = pd.DataFrame({f"dim_{c}": [pd.Series(X[i, c]) for i in range(20)]
                           for c in range(2)})
    with pytest.raises(ValueError, match="cells hold whole series.*layout='NCL'"):
        FlowformerRegressor(**FLOW).fit(nested, X[:, 0, -1])
    # the conversion the message gives is the (n, C, L) array
    converted = np.stack([np.stack(row) for row in nested.to_numpy()])
    np.testing.assert_array_equal(converted, X)


def test_ncl_layout_takes_array_likes():
    from sklearn.utils.estimator_checks import _NotAnArray

    X = np.random.RandomState(0).normal(size=(40, 2, 12))
    y = X[:, 0, -1]
    a = FlowformerRegressor(**{**FLOW, "max_epochs": 1}, layout="NCL").fit(X, y)
    b = FlowformerRegressor(**{**FLOW, "max_epochs": 1}, layout="NCL").fit(_NotAnArray(X), y)
    np.testing.assert_array_equal(a.predict(X), b.predict(_NotAnArray(X)))


def test_monte_carlo_draws_of_a_row_do_not_depend_on_the_other_rows(sequences):
    # like GaussianProcessRegressor, a row's standard deviation and samples are those of
    # the row alone, however many rows share the call and in how many chunks they run:
    # each Monte Carlo draw drops the same units for every row
    rng = np.random.RandomState(0)
    X = rng.normal(size=(150, 4))
    y = X[:, 0] + 0.1 * rng.normal(size=150)
    y[:100] = np.nan
    X_new = rng.normal(size=(40, 4))
    reg = DIFFormerRegressor(**{**DIF, "max_epochs": 10}, linear_fallback=False,
                             batch_size=16).fit(X, y)  # predicts in chunks of 16 rows
    Xs, labels = sequences
    flow = FlowformerRegressor(**FLOW, uncertainty="mc_dropout", batch_size=4).fit(
        Xs[:120], Xs[:120, -1])
    clf = DIFFormerClassifier(**DIF, dropout=0.3).fit(X, (X[:, 0] > 0).astype(int))
    for est, Z in ((reg, X_new), (flow, Xs[120:])):
        torch.manual_seed(0)
        before = torch.rand(2)
        mean, std = est.predict(Z, return_std=True)
        alone = [est.predict(Z[i:i + 1], return_std=True) for i in (0, 3, len(Z) - 1)]
        rows = [0, 3, len(Z) - 1]
        np.testing.assert_allclose([s[1][0] for s in alone], std[rows], rtol=1e-12)
        np.testing.assert_allclose([s[0][0] for s in alone], mean[rows], rtol=1e-12)
        assert std.min() > 0
        torch.manual_seed(0)
        assert torch.equal(torch.rand(2), before)  # the caller's torch stream is untouched
    # draws without a Gaussian head's noise (which sample_posterior adds draw by draw from
    # one stream for all rows, as GaussianProcessRegressor.sample_y draws jointly) are the
    # row's own too
    for est, Z in ((flow, Xs[120:]), (clf, X_new)):
        draws = est.sample_posterior(Z, n_samples=4, random_state=1)
        np.testing.assert_allclose(  # float64 inference: equal up to rounding
            est.sample_posterior(Z[3:5], n_samples=4, random_state=1), draws[3:5],
            rtol=1e-12, atol=1e-12)
        assert not np.allclose(draws[..., 0], draws[..., 1])  # the draws differ
