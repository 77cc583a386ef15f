"""Reliability: no silent wrong answer, no poisoned cache, a failed fit never corrupts a fit.

Fault injection (an interrupt at a given epoch, a corrupt cache file, two processes writing one
cache, a refit that fails), scale-free numerics and label handling. The longer battery of bad
inputs lives in ``benchmarks/reliability.py``.
"""

import hashlib
import io
import json
import multiprocessing as mp
import pickle
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from skorch.callbacks import Callback

from skdiff import (
    DIFFormerClassifier,
    DIFFormerRegressor,
    FlowformerClassifier,
    FlowformerRegressor,
    NDPRegressor,
    TrainingDivergedError,
)
from skdiff.datasets import make_graph_signal, make_planted_partition

FLOW = dict(hidden_dim=16, n_heads=2, n_layers=1, max_epochs=8, device="cpu", random_state=0)
DIF = dict(n_layers=2, hidden_dim=16, max_epochs=30, device="cpu", random_state=0)


@pytest.fixture(scope="module")
def series():
    rng = np.random.RandomState(0)
    t = np.arange(300)[:, None] + np.arange(16)
    X = np.sin(2 * np.pi * t / 12) + 0.1 * rng.normal(size=t.shape)
    return X, X[:, -4:].sum(1)


@pytest.fixture(scope="module")
def graph():
    return make_planted_partition(120, 3, p_in=0.1, p_out=0.01, n_features=8,
                                  feature_signal=1.0, random_state=0)


class _InterruptAt(Callback):
    """Raise KeyboardInterrupt at the end of epoch ``epoch``, as a Ctrl-C would."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == self.epoch:
            raise KeyboardInterrupt


def _state(est):
    """What must not change when a refit fails: attributes and the network's weights."""
    weights = {k: v.clone() for k, v in est.module_.state_dict().items()}
    return sorted(vars(est)), weights


def _same_state(a, b):
    assert a[0] == b[0]
    assert all(torch.equal(a[1][k], b[1][k]) for k in a[1])


# -- fit is a transaction ----------------------------------------------------------------------
def test_a_failed_refit_leaves_the_fitted_estimator_as_it_was(series, graph):
    X, y = series
    reg = FlowformerRegressor(**FLOW).fit(X, y)
    before, pred = _state(reg), reg.predict(X)
    with pytest.raises(TrainingDivergedError, match="Lower 'lr'"):
        reg.set_params(lr=1e4).fit(X, y * 1e3)
    _same_state(before, _state(reg))
    np.testing.assert_array_equal(reg.predict(X), pred)
    # a refit whose labels fail keeps the previous classes and network
    Xg, yg, A = graph
    clf = DIFFormerClassifier(**DIF).fit(Xg, yg, adjacency=A)
    before, proba = _state(clf), clf.predict_proba(Xg, adjacency=A)
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(Xg, np.array(["u" if i < 5 else -1 for i in range(120)], dtype=object))
    _same_state(before, _state(clf))
    assert clf.classes_.tolist() == [0, 1, 2]
    np.testing.assert_array_equal(clf.predict_proba(Xg, adjacency=A), proba)


def test_a_failed_warm_start_restores_the_network_it_was_training(series):
    X, y = series
    reg = FlowformerRegressor(**FLOW, warm_start=True).fit(X, y)
    before, n_epochs, module, history = _state(reg), len(reg.history_), reg.module_, \
        reg.history_
    with pytest.raises(TrainingDivergedError, match=r"currently 10000.0"):
        reg.set_params(lr=1e4).fit(X, y)  # a warm start trains with the current parameters
    _same_state(before, _state(reg))
    assert len(reg.history_) == n_epochs
    assert reg.net_.optimizer_.param_groups[0]["lr"] == pytest.approx(1e-3)
    # the same network object, its weights restored, and the optimiser still drives it
    assert reg.module_ is module and reg.net_.module_ is module and reg.history_ is history
    params = {id(p) for p in module.parameters()}
    assert {id(p) for g in reg.net_.optimizer_.param_groups for p in g["params"]} == params
    reg.set_params(lr=1e-3).fit(X, y)  # and a later warm start trains it
    assert reg.module_ is module and len(reg.history_) > n_epochs


@pytest.mark.parametrize("change", [{"hidden_dim": 8}, {"causal": True},
                                    {"uncertainty": "mc_dropout"}, {"dropout": 0.3}])
def test_a_warm_start_refuses_parameters_the_network_was_not_built_with(series, change):
    # continuing the fitted network would silently ignore them: get_params() would no
    # longer describe the model
    X, y = series
    reg = FlowformerRegressor(**{**FLOW, "max_epochs": 2}, warm_start=True).fit(X, y)
    before, n_epochs = _state(reg), len(reg.history_)
    (name, value), = change.items()
    built = reg.get_params()[name]
    with pytest.raises(ValueError, match=rf"warm_start=True continues the fitted network, "
                                         rf"which was built with {name}={built!r} \(now "
                                         rf"{value!r}\).*warm_start=False"):
        reg.set_params(**change).fit(X, y)
    with pytest.raises(ValueError, match=r"partial_fit continues the fitted network"):
        reg.partial_fit(X, y)
    _same_state(before, _state(reg))
    assert len(reg.history_) == n_epochs
    reg.set_params(**{name: built}).fit(X, y)  # restored, the warm start trains on
    assert len(reg.history_) == 2 * n_epochs
    # a new network for the new value
    assert reg.set_params(warm_start=False, **change).fit(X, y).get_params()[name] == value


def test_a_warm_start_trains_with_the_current_training_parameters(series):
    X, y = series
    reg = FlowformerRegressor(**{**FLOW, "max_epochs": 1}, warm_start=True,
                              batch_size=16).fit(X, y)
    seen = []

    class Batches(Callback):
        def on_batch_begin(self, net, batch=None, training=False, **kwargs):
            if training:
                seen.append(len(batch[0]) if isinstance(batch, (tuple, list)) else None)

    reg.set_params(batch_size=64, max_epochs=2, lr=5e-4, callbacks=[Batches()]).fit(X, y)
    assert max(seen) == 64 and len(reg.history_) == 3
    assert reg.net_.optimizer_.param_groups[0]["lr"] == pytest.approx(5e-4)


def test_a_warm_start_continues_a_learning_rate_schedule():
    # the continued net keeps the learning rate its scheduler left, as skorch's warm start:
    # cosine annealing over 3 epochs continues past its minimum instead of restarting from
    # lr with the scheduler's recursive steps (which drove it to 5 x lr)
    from skorch.callbacks import LRScheduler
    from torch.optim.lr_scheduler import CosineAnnealingLR

    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] > 0).astype(int)
    clf = DIFFormerClassifier(hidden_dim=8, n_layers=1, max_epochs=3, lr=3e-3, warm_start=True,
                              random_state=0,
                              callbacks=[LRScheduler(CosineAnnealingLR, T_max=3)])
    clf.fit(X, y).fit(X, y)
    lrs = [row["event_lr"] for row in clf.history_]
    np.testing.assert_allclose(lrs, [3e-3, 2.25e-3, 7.5e-4, 0.0, 7.5e-4, 2.25e-3], atol=1e-12)
    # a learning rate changed between the fits is applied
    clf.set_params(lr=1e-3, callbacks=None).fit(X, y)
    assert clf.net_.optimizer_.param_groups[0]["lr"] == pytest.approx(1e-3)


def test_partial_fit_with_early_stopping_ends_on_the_best_weights_of_all_calls():
    from copy import deepcopy

    from sklearn.datasets import make_classification

    X, y = make_classification(120, 5, n_informative=3, random_state=0)
    states = []

    class Spy(Callback):
        def on_epoch_end(self, net, **kwargs):
            states.append(deepcopy(net.module_.state_dict()))

    clf = DIFFormerClassifier(n_layers=1, hidden_dim=16, lr=0.05, early_stopping=True,
                              validation_fraction=0.3, random_state=0,
                              callbacks=[("spy", Spy())])
    for _ in range(6):
        clf.partial_fit(X, y, classes=[0, 1])
        scores = clf.history_[:, "valid_score"]
        best = int(np.argmax(scores))  # the first of a tie, as early stopping keeps it
        kept = clf.module_.state_dict()
        assert all(torch.equal(states[best][k], v) for k, v in kept.items())
    # the run this checks: an early best that later calls do not beat
    assert best < len(scores) - 1


class _ScoreToBeat(Callback):
    """Records, as a continued call begins, early stopping's score to beat and the monitored
    score of the starting weights on this call's validation rows (measured here)."""

    def __init__(self, measure):
        self.measure = measure
        self.seen = []

    def on_epoch_begin(self, net, dataset_valid=None, **kwargs):
        from skdiff._engine import early_stopping_of

        stopper = early_stopping_of(net)
        self.seen.append((stopper.dynamic_threshold_,
                          stopper._calc_new_threshold(self.measure(net, dataset_valid))))


def test_partial_fit_on_a_stream_beats_the_start_on_each_call_s_own_rows():
    # a stream whose first batch is easy: scored on its rows, its best is a score no epoch
    # on the later, noisy batches can reach, and carrying that score froze every later call
    # on the first call's weights. Each call's score to beat is its start's on its own rows.
    from skdiff._engine import validation_loss
    from skdiff.difformer._estimators import _valid_score

    rng = np.random.RandomState(0)
    X = rng.normal(size=(360, 5))
    y = (X[:, 0] > 0).astype(int)
    y[60:] = rng.randint(0, 2, size=300)  # labels of the later batches are mostly noise
    y[60:][X[60:, 0] > 1] = 1
    spy = _ScoreToBeat(_valid_score)
    clf = DIFFormerClassifier(n_layers=1, hidden_dim=16, lr=0.05, max_epochs=30,
                              early_stopping=True, validation_fraction=0.3, random_state=0,
                              callbacks=[("spy", spy)]).fit(X[:60], y[:60])
    first = {k: v.clone() for k, v in clf.module_.state_dict().items()}
    assert max(clf.history_[:, "valid_acc"]) == 1.0
    spy.seen.clear()
    for start in range(60, 360, 60):
        clf.partial_fit(X[start:start + 60], y[start:start + 60])
    assert len(spy.seen) == 5
    for beat, measured in spy.seen:
        assert beat == pytest.approx(measured, abs=1e-12)
    assert max(beat for beat, _ in spy.seen) < 0.95  # not the first fit's 1.0
    assert any(not torch.equal(first[k], v) for k, v in clf.module_.state_dict().items())

    # the regressors' monitor, the validation loss, with a batch of small targets first
    Xs = rng.normal(size=(300, 12)).cumsum(1)
    ys = Xs[:, -1] + rng.normal(size=300)
    ys[:60] = Xs[:60, -1] + 0.01 * rng.normal(size=60)
    spy = _ScoreToBeat(validation_loss)
    reg = FlowformerRegressor(**FLOW, skip="level", early_stopping=True,
                              callbacks=[("spy", spy)]).partial_fit(Xs[:60], ys[:60])
    before = reg.predict(Xs)
    for start in range(60, 300, 60):
        reg.partial_fit(Xs[start:start + 60], ys[start:start + 60])
    for beat, measured in spy.seen[1:]:
        assert beat == pytest.approx(measured, rel=1e-9)
    assert not np.array_equal(reg.predict(Xs), before)


def test_a_warm_start_of_difformer_refuses_a_new_network_size():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(80, 4))
    y = (X[:, 0] > 0).astype(int)
    clf = DIFFormerClassifier(hidden_dim=8, n_layers=1, max_epochs=2, warm_start=True,
                              random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"built with hidden_dim=8 \(now 16\)"):
        clf.set_params(hidden_dim=16).fit(X, y)


def test_a_failed_first_fit_leaves_an_unfitted_estimator(series):
    X, y = series
    reg = FlowformerRegressor(**{**FLOW, "lr": 1e4})
    with pytest.raises(TrainingDivergedError):
        reg.fit(X, y * 1e3)
    with pytest.raises(NotFittedError):
        reg.predict(X)
    assert not [k for k in vars(reg) if k.endswith("_") and not k.startswith("_")]


# -- interruption ------------------------------------------------------------------------------
def test_an_interrupt_ends_training_keeps_the_best_weights_and_says_so(series):
    X, y = series
    with pytest.warns(UserWarning, match="interrupted .* during epoch 3.*best weights") as rec:
        reg = FlowformerRegressor(**{**FLOW, "max_epochs": 20},
                                  callbacks=[_InterruptAt(3)]).fit(X, y)
    assert rec[0].filename == __file__  # the warning points at the caller's line
    assert len(reg.history_) == 3
    best = int(np.argmin(reg.history_[:, "valid_loss"]))
    assert reg.history_[best, "valid_loss_best"]
    # one interrupt stops every initialisation of n_init
    with pytest.warns(UserWarning, match="interrupted") as rec:
        reg = FlowformerRegressor(**{**FLOW, "max_epochs": 20}, n_init=3,
                                  callbacks=[_InterruptAt(2)]).fit(X, y)
    assert reg.init_scores_.shape == (1,)
    assert rec[0].filename == __file__
    # through a Pipeline, and from partial_fit, it points at the caller's line too
    with pytest.warns(UserWarning, match="interrupted") as rec:
        make_pipeline(FunctionTransformer(), FlowformerRegressor(
            **{**FLOW, "max_epochs": 20}, callbacks=[_InterruptAt(1)])).fit(X, y)
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="interrupted") as rec:
        FlowformerRegressor(**FLOW, callbacks=[_InterruptAt(1)]).partial_fit(X, y)
    assert rec[0].filename == __file__


def test_early_stopping_is_not_an_interrupt(series):
    X, y = series
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reg = FlowformerRegressor(**{**FLOW, "max_epochs": 200, "lr": 0.05},
                                  n_iter_no_change=2).fit(X, y)
    assert len(reg.history_) < 200


# -- divergence --------------------------------------------------------------------------------
def test_a_learning_rate_that_wrecks_training_is_an_error(graph):
    Xg, yg, A = graph
    with pytest.raises(TrainingDivergedError, match=r"Lower 'lr' \(currently 1000.0\)"):
        DIFFormerClassifier(**{**DIF, "lr": 1e3}).fit(Xg, yg)
    X = np.random.RandomState(0).normal(size=(200, 12))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(TrainingDivergedError):
        FlowformerClassifier(**{**FLOW, "lr": 1e3}).fit(X, y)


# -- labels ------------------------------------------------------------------------------------
def test_minus_one_is_unlabelled_unless_unlabelled_is_none(graph):
    Xg, yg, _ = graph
    y = np.where(yg == 0, -1, yg)  # a genuine class -1, as frequent as the others
    with pytest.warns(UserWarning, match="pass unlabelled=None"):
        clf = DIFFormerClassifier(**DIF).fit(Xg, y)
    assert clf.classes_.tolist() == [1, 2]
    clf = DIFFormerClassifier(**DIF, unlabelled=None).fit(Xg, y)
    assert clf.classes_.tolist() == [-1, 1, 2]
    # many unlabelled rows (semi-supervised data): no warning
    y_semi = np.where(np.arange(120) % 4 == 0, yg, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        DIFFormerClassifier(**{**DIF, "max_epochs": 2}).fit(Xg, y_semi)
    # a list mixing strings and the number -1: -1 stays the marker, not the string '-1',
    # and cannot be one of the string classes however frequent it is (no warning)
    names = ["a", "b", "c"]
    y_list = [names[c] if i % 3 else -1 for i, c in enumerate(yg)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        clf = DIFFormerClassifier(**{**DIF, "max_epochs": 2}).fit(Xg, y_list)
    assert clf.classes_.tolist() == names
    assert clf.score(Xg, y_list) == np.mean(clf.predict(Xg)[np.arange(120) % 3 > 0]
                                            == np.array(y_list, dtype=object)[
                                                np.arange(120) % 3 > 0])


# -- scale-free numerics -----------------------------------------------------------------------
@pytest.mark.parametrize("factor", [1e-13, 1e13])
def test_predictions_follow_the_units_of_x_and_y(series, graph, factor):
    X, y = series
    reg = FlowformerRegressor(**FLOW).fit(X, y)
    scaled = FlowformerRegressor(**FLOW).fit(X * factor, y * factor + 5 * factor)
    np.testing.assert_allclose(scaled.predict(X * factor), reg.predict(X) * factor + 5 * factor,
                               rtol=1e-4, atol=1e-4 * factor)
    Xg, yg, A = graph
    clf = DIFFormerClassifier(**DIF).fit(Xg, yg, adjacency=A)
    np.testing.assert_allclose(
        DIFFormerClassifier(**DIF).fit(Xg * factor, yg, adjacency=A).predict_proba(
            Xg * factor, adjacency=A), clf.predict_proba(Xg, adjacency=A), atol=1e-4)
    Xs, ys, As = make_graph_signal(100, random_state=0)
    dreg = DIFFormerRegressor(**DIF).fit(Xs, ys, adjacency=As)
    np.testing.assert_allclose(
        DIFFormerRegressor(**DIF).fit(Xs * factor, ys * factor, adjacency=As).predict(
            Xs * factor, adjacency=As), dreg.predict(Xs, adjacency=As) * factor, rtol=1e-3,
        atol=1e-3 * factor)


def test_ndp_follows_the_units_of_y_and_refuses_what_it_cannot_use():
    rng = np.random.RandomState(0)
    X = np.linspace(0, 1, 8)[:, None]
    y = np.sin(6 * X[:, 0]) + 0.05 * rng.normal(size=8)
    kw = dict(n_samples=8, n_sampling_steps=4, n_resample=1, random_state=0, device="cpu")
    mean = NDPRegressor(**kw).fit(X, y).predict(X)
    for factor in (1e-13, 1e13, 1e200):
        with np.errstate(over="raise"):  # no overflow on the way (y's squares do)
            scaled = NDPRegressor(**kw).fit(X, y * factor)
        np.testing.assert_allclose(scaled.predict(X) / factor, mean, rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="numeric targets; y has dtype <U"):
        NDPRegressor(**kw).fit(X, np.array(list("abcdefgh")))
    with pytest.warns(UserWarning, match="y is constant"):
        NDPRegressor(**kw).fit(X, np.full(8, 3e-14))


# -- caches ------------------------------------------------------------------------------------
_TINY_PRIOR = dict(pretrained=False, prior="se", hidden_dim=8, n_layers=1, n_heads=2,
                   max_epochs=1, steps_per_epoch=3, batch_size=4, n_samples=4,
                   n_sampling_steps=3, n_resample=0, device="cpu", random_state=0)


def _fit_tiny_prior(cache_dir):
    X = np.linspace(0, 1, 5)[:, None]
    NDPRegressor(**_TINY_PRIOR, cache_dir=cache_dir).fit(X, X[:, 0])
    return sorted(p.name for p in __import__("pathlib").Path(cache_dir).glob("prior_*"))


def test_a_corrupt_cache_entry_is_discarded_and_rebuilt(tmp_path):
    from skdiff.ndp._prior_cache import _MEMORY

    _MEMORY.clear()
    files = _fit_tiny_prior(tmp_path)
    pt = next(tmp_path.glob("prior_*.pt"))
    good = pt.read_bytes()
    pt.write_bytes(good[: len(good) // 2])  # a truncated file
    _MEMORY.clear()
    X = np.linspace(0, 1, 5)[:, None]
    with pytest.warns(UserWarning, match="unusable .* discarded and trained again") as rec:
        make_pipeline(FunctionTransformer(),
                      NDPRegressor(**_TINY_PRIOR, cache_dir=tmp_path)).fit(X, X[:, 0])
    assert rec[0].filename == __file__  # the warning points at the caller's line
    assert sorted(p.name for p in tmp_path.glob("prior_*")) == files
    assert pt.read_bytes() == good  # rebuilt, bit for bit (same seed and steps)
    # a manifest that is JSON but not an object is discarded the same way
    js = pt.with_suffix(".json")
    js.write_text("[]")
    _MEMORY.clear()
    with pytest.warns(UserWarning, match="unusable .*holds a list, not an object"):
        assert _fit_tiny_prior(tmp_path) == files
    assert isinstance(json.loads(js.read_text()), dict)


def test_two_processes_write_one_cache(tmp_path):
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        results = pool.map(_fit_tiny_prior, [str(tmp_path)] * 2)
    assert results[0] == results[1] and len(results[0]) == 3  # .pt, .json, .lock
    from skdiff.ndp._prior_cache import _MEMORY

    _MEMORY.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the entry verifies
        _fit_tiny_prior(tmp_path)


def test_an_interrupted_prior_training_writes_no_cache_entry(tmp_path):
    from skdiff.ndp._prior_cache import _MEMORY

    _MEMORY.clear()
    with pytest.raises(KeyboardInterrupt):
        NDPRegressor(**_TINY_PRIOR, cache_dir=tmp_path,
                     callbacks=[_InterruptAt(1)]).fit(np.zeros((3, 1)), [0.0, 1.0, 2.0])
    assert not list(tmp_path.glob("prior_*.pt"))


# -- smaller findings --------------------------------------------------------------------------
def test_parameter_and_input_errors_name_the_fix(series, graph):
    X, y = series
    with pytest.raises(ValueError, match="'hidden_dim' parameter .* Got True"):
        FlowformerRegressor(**{**FLOW, "hidden_dim": True}).fit(X, y)
    with pytest.raises(MemoryError, match="lower them"):
        FlowformerRegressor(**{**FLOW, "hidden_dim": 2 ** 40, "n_heads": 1}).fit(X, y)
    Xg, yg, A = graph
    clf = DIFFormerClassifier(**{**DIF, "max_epochs": 2}).fit(Xg, yg, adjacency=A)
    with pytest.raises(ValueError, match=r"'layer' must be an integer in \[-2, 2\)"):
        clf.attention_graph(Xg, A, layer=5)
    with pytest.raises(ValueError, match="'k' must be an integer >= 1; got 0"):
        clf.attention_graph(Xg, A, k=0)
    from skdiff import Graph

    g = Graph(Xg, A)
    with pytest.raises(ValueError, match="duplicate node ids"):
        clf.fit(np.r_[g.node_ids(), g.node_ids()[:1]], np.r_[yg, 1 - yg[:1]], graph=g)
    clf.fit(g.node_ids(), yg, graph=g)
    with pytest.raises(ValueError, match="has 3 features but DIFFormerClassifier was fitted "
                                         "on 8"):
        clf.predict(g.node_ids(), graph=Graph(Xg[:, :3], A))
    Xc = np.random.RandomState(0).normal(size=(40, 12, 3))
    reg = FlowformerRegressor(**FLOW, warm_start=True).fit(Xc, Xc[:, -1, 0],
                                                           adjacency=np.ones((3, 3)))
    with pytest.raises(ValueError, match="different 'adjacency'"):
        reg.fit(Xc, Xc[:, -1, 0], adjacency=np.eye(3))
    assert pickle.loads(pickle.dumps(reg)).adjacency_.shape == (3, 3)


@pytest.mark.parametrize("cls", [FlowformerRegressor, DIFFormerRegressor])
@pytest.mark.parametrize("param, value, match", [
    ("mixed_precision", "BF16", "must be a str among .*'bf16'.* or None. Got 'BF16'"),
    ("mixed_precision", True, "must be a str among .* or None. Got True"),
    ("accelerator", "cpu", "must be an object implementing 'prepare' and 'backward' or None. "
                           "Got 'cpu'"),
    ("lr", 1e300, "must be a float in the range \\(0.0, 3.40.*e\\+38\\). Got 1e\\+300"),
    ("weight_decay", 1e300, "must be a float in the range \\[0.0, 3.40.*e\\+38\\). Got 1e\\+300"),
])
def test_training_parameters_are_checked_before_training(series, cls, param, value, match):
    X, y = series
    with pytest.raises(ValueError, match=f"The '{param}' parameter of {cls.__name__} {match}"):
        cls(max_epochs=1, **{param: value}).fit(X[:20], y[:20])


@pytest.mark.parametrize("param", ["mixed_precision", "inference_dtype", "uncertainty"])
def test_a_parameter_set_after_fit_is_checked_by_predict(series, param):
    X, y = series
    reg = FlowformerRegressor(**{**FLOW, "max_epochs": 1}).fit(X[:40], y[:40])
    reg.set_params(**{param: "bogus"})
    with pytest.raises(ValueError, match=f"The '{param}' parameter of FlowformerRegressor must "
                                         "be .* Got 'bogus' instead"):
        reg.predict(X[:5])


def test_batch_size_may_be_a_numpy_integer(series):
    X, y = series
    reg = FlowformerRegressor(**{**FLOW, "max_epochs": 1, "batch_size": np.int64(16)})
    assert reg.fit(X[:40], y[:40]).predict(X[:5]).shape == (5,)


@pytest.mark.parametrize("class_weight, match", [
    ({0: np.nan}, "must map classes to finite non-negative numbers; got \\{0: nan\\}"),
    ({0: -1.0}, "must map classes to finite non-negative numbers; got \\{0: -1.0\\}"),
    ({0: np.inf}, "must map classes to finite non-negative numbers; got \\{0: inf\\}"),
    ({0: "a"}, "must map classes to finite non-negative numbers; got \\{0: 'a'\\}"),
    ({0: 0.0, 1: 0.0, 2: 0.0}, "gives every labelled row a weight of 0 .*give some class a "
                               "positive weight"),
])
@pytest.mark.parametrize("cls", [FlowformerClassifier, DIFFormerClassifier])
def test_class_weight_must_be_finite_non_negative_and_not_all_zero(graph, cls, class_weight,
                                                                  match):
    Xg, yg, _ = graph
    with pytest.raises(ValueError, match=f"'class_weight' {match}"):
        cls(max_epochs=1, class_weight=class_weight).fit(Xg, yg)


@pytest.mark.parametrize("cls", [FlowformerRegressor, DIFFormerRegressor])
def test_x_of_the_wrong_shape_or_type_is_named(series, cls):
    X, y = series
    with pytest.raises(ValueError, match=f"'X' of {cls.__name__} has the wrong number of "
                                         "dimensions. Expected 2D array, got 1D array"):
        cls(max_epochs=1).fit(X[:, 0], y)
    with pytest.raises(ValueError, match=f"Complex data not supported: 'X' of {cls.__name__} "
                                         "holds complex numbers; pass real numbers"):
        cls(max_epochs=1).fit(X + 1j, y)


def test_ndp_names_x_of_strings():
    with pytest.raises(ValueError, match="'X' of NDPRegressor must be numbers; could not convert "
                                         "string to float.*Encode text or categories"):
        NDPRegressor().fit(np.array([["a"], ["b"]] * 5), np.arange(10.0))


@pytest.mark.parametrize("sub", ["", "sub"])
def test_a_cache_dir_that_is_a_file_is_named(tmp_path, sub):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    X = np.linspace(-1, 1, 10)[:, None]
    with pytest.raises(NotADirectoryError, match="The 'cache_dir' parameter must be a folder for "
                       "the trained priors; got .*a_file.*a file .* stands in the way"):
        NDPRegressor(**_TINY_PRIOR, cache_dir=a_file / sub).fit(X, X[:, 0])


def test_sample_posterior_refuses_more_samples_than_memory_holds(series):
    X, y = series
    reg = FlowformerRegressor(**{**FLOW, "max_epochs": 1}).fit(X[:40], y[:40])
    # 10**13 draws of 5 rows exceed any address space: refused before the network runs
    with pytest.raises(MemoryError, match="Not enough memory for n_samples=10000000000000 draws "
                                          "of 5 rows .*draw fewer samples"):
        reg.sample_posterior(X[:5], n_samples=10**13)


@pytest.mark.parametrize("cls, params", [(DIFFormerRegressor, dict(n_layers=10**7)),
                                         (FlowformerRegressor, dict(ff_dim=10**9))])
def test_a_network_larger_than_memory_is_refused_before_it_is_built(series, cls, params):
    X, y = series
    # counted on the meta device: refused at once, not after building 10**7 layers
    with pytest.raises(MemoryError, match="The network would hold .* parameters .* more than "
                                          "this machine's .* of memory; its size comes from "
                                          ".*: lower them"):
        cls(max_epochs=1, **params).fit(X[:20], y[:20])


def test_a_network_larger_than_the_address_space_limit_is_refused_before_it_is_built(
        series, monkeypatch):
    # 10**7 layers of width 8 (over 2.5 GB of weights) fit in a machine's memory but not
    # in a process limited to 2 GiB of address space (ulimit -v): refused from the limit
    # at once, not after minutes of building up to a MemoryError
    import resource

    X, y = series
    real = resource.getrlimit

    def limited(which):
        return (2**31, resource.RLIM_INFINITY) if which == resource.RLIMIT_AS else real(which)

    monkeypatch.setattr(resource, "getrlimit", limited)
    with pytest.raises(MemoryError, match=r"more than this process's address-space limit of "
                                          r"2 GiB; its size comes from .*'n_layers': 10000000"):
        DIFFormerRegressor(hidden_dim=8, n_layers=10**7, max_epochs=1).fit(X[:20], y[:20])


def test_a_network_larger_than_the_container_memory_limit_is_refused_before_it_is_built(
        series, monkeypatch):
    # the same network under a container's 2 GiB cgroup limit (memory.max) and no ulimit
    import skdiff._base as base

    X, y = series
    monkeypatch.setattr(base, "_cgroup_memory_limit", lambda: 2**31)
    with pytest.raises(MemoryError, match=r"more than this container's memory limit "
                                          r"\(cgroup\) of 2 GiB; its size comes from "
                                          r".*'n_layers': 10000000"):
        DIFFormerRegressor(hidden_dim=8, n_layers=10**7, max_epochs=1).fit(X[:20], y[:20])


@pytest.mark.parametrize("version, content, expected", [
    ("v2", "3221225472\n", 3 * 2**30),
    ("v2", "max\n", None),
    ("v1", "2147483648\n", 2**31),
    ("v1", "9223372036854771712\n", None),  # v1's "no limit": 2**63 rounded to pages
])
def test_the_cgroup_memory_limit_is_read_for_the_process_group(tmp_path, version, content,
                                                               expected):
    from skdiff._base import _cgroup_memory_limit

    proc = tmp_path / "cgroup"
    if version == "v2":
        proc.write_text("0::/jobs/job7\n")
        limit = tmp_path / "jobs" / "job7" / "memory.max"
    else:
        proc.write_text("5:cpu,cpuacct:/\n4:memory:/jobs/job7\n")
        limit = tmp_path / "memory" / "jobs" / "job7" / "memory.limit_in_bytes"
    limit.parent.mkdir(parents=True)
    limit.write_text(content)
    assert _cgroup_memory_limit(root=str(tmp_path), proc=str(proc)) == expected
    # a limit at the mount point (a container's own cgroup namespace) counts too, the
    # lower one winning
    (tmp_path / "memory.max").write_text(f"{2**30}\n")
    assert _cgroup_memory_limit(root=str(tmp_path), proc=str(proc)) == 2**30
    # nothing to read: no limit
    assert _cgroup_memory_limit(root=str(tmp_path / "none"), proc=str(tmp_path / "no")) is None


@pytest.mark.parametrize("cls", [FlowformerRegressor, DIFFormerRegressor])
@pytest.mark.parametrize("scale", [1e-50, 1e300])
def test_sample_weights_of_any_common_scale_give_the_unweighted_fit(series, cls, scale):
    X, y = series
    # only the ratios of the weights matter; float32 would flush 1e-50 to 0 and 1e300 to inf
    params = dict(max_epochs=2, random_state=0, device="cpu")
    plain = cls(**params).fit(X[:40], y[:40]).predict(X[:10])
    weighted = cls(**params).fit(X[:40], y[:40], sample_weight=np.full(40, scale))
    np.testing.assert_allclose(weighted.predict(X[:10]), plain, rtol=1e-6, atol=1e-6)


def test_partial_fit_with_another_number_of_outputs_says_what_to_pass(series):
    X, y = series
    reg = FlowformerRegressor(**{**FLOW, "max_epochs": 1}).partial_fit(X[:40], y[:40])
    with pytest.raises(ValueError, match="y has 2 outputs but the fitted network predicts 1; "
                                         "pass a y of 1 output\\(s\\) to continue training, or "
                                         "call fit"):
        reg.partial_fit(X[:40], np.c_[y[:40], y[:40]])


def test_cpu_out_of_memory_in_training_names_the_size_parameters(monkeypatch):
    from skdiff import FlowformerRegressor
    from skdiff._engine import Net

    def exhausted(self, *args, **kwargs):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: "
                           "can't allocate memory: you tried to allocate 80000000000 bytes.")

    monkeypatch.setattr(Net, "partial_fit", exhausted)
    X, y = np.random.default_rng(0).normal(size=(40, 8)), np.zeros(40)
    with pytest.raises(MemoryError, match=r"The CPU ran out of memory .*Lower 'batch_size' or "
                                          r"'hidden_dim' or 'ff_dim' or 'n_layers'\.$"):
        FlowformerRegressor(max_epochs=1, device="cpu").fit(X, y)


def test_a_warm_start_takes_the_current_callbacks_and_warns_on_interrupt(series):
    from skorch.callbacks import Callback

    class Interrupt(Callback):
        def on_epoch_end(self, net, **kwargs):
            raise KeyboardInterrupt

    X, y = series
    reg = FlowformerRegressor(**FLOW, warm_start=True).fit(X, y)
    n0 = len(reg.history_)
    reg.set_params(callbacks=[Interrupt()])
    with pytest.warns(UserWarning, match="interrupted .KeyboardInterrupt. during epoch"):
        reg.fit(X, y)
    assert len(reg.history_) == n0 + 1
    reg.set_params(callbacks=None).fit(X, y)  # the interrupt is gone from the next call
    assert len(reg.history_) > n0 + 1


def test_an_interrupt_in_the_middle_of_an_epoch_keeps_the_completed_ones(series):
    from skorch.callbacks import Callback

    class InterruptBatch(Callback):
        def on_batch_end(self, net, training=None, **kwargs):
            if training and len(net.history) == 2:
                raise KeyboardInterrupt

    X, y = series
    with pytest.warns(UserWarning, match="interrupted .KeyboardInterrupt. during epoch 2"):
        reg = FlowformerRegressor(**FLOW, callbacks=[InterruptBatch()]).fit(X, y)
    assert np.isfinite(reg.predict(X)).all() and "train_loss" in reg.history_[0]


def test_score_checks_the_lengths_of_y_and_sample_weight(series):
    X, y = series
    reg = FlowformerRegressor(**FLOW).fit(X, y)
    with pytest.raises(ValueError, match=r"y has \d+ rows but X has \d+; score needs one"):
        reg.score(X, y[:-1])
    with pytest.raises(ValueError, match=r"sample_weight has \d+ entries but X has \d+ rows"):
        reg.score(X, y, sample_weight=np.ones(len(y) - 1))


def test_sample_posterior_names_a_bad_random_state(series):
    X, y = series
    reg = FlowformerRegressor(**FLOW).fit(X, y)
    with pytest.raises(ValueError, match="'random_state' must be None, an int .*got 'x'"):
        reg.sample_posterior(X[:2], n_samples=2, random_state="x")


@pytest.mark.parametrize("bad, message", [
    (np.zeros((0, 4)), "'X' of NDPRegressor has no rows"),
    (np.zeros((5, 0)), "'X' of NDPRegressor has no columns"),
    ([[1.0, 2.0], [1.0]], "'X' of NDPRegressor must be a rectangular array"),
    (np.zeros((5, 4, 1)), r"'X' of NDPRegressor must be 2-D \(n_samples, n_features\)"),
])
def test_malformed_x_is_named(bad, message):
    from skdiff import NDPRegressor

    with pytest.raises(ValueError, match=message):
        NDPRegressor().fit(bad, np.zeros(len(bad)))


def test_unlabelled_marker_and_validation_mask_mistakes_are_refused(graph):
    Xg, yg, A = graph
    y = np.where(np.arange(len(yg)) % 3 == 0, -1, yg)
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=2, device="cpu", random_state=0)
    with pytest.raises(ValueError, match="unlabelled='-1' is a string, but y holds numbers"):
        DIFFormerClassifier(**kw, unlabelled="-1").fit(Xg, y, adjacency=A)
    with pytest.raises(ValueError, match="'unlabelled' marks unlabelled rows by a label value"):
        DIFFormerClassifier(**kw, unlabelled=True).fit(Xg, yg, adjacency=A)
    with pytest.raises(ValueError, match="'validation_mask' marks all .* labelled rows"):
        DIFFormerClassifier(**kw).fit(Xg, yg, adjacency=A,
                                      validation_mask=np.ones(len(yg), dtype=bool))


def test_label_and_target_type_mistakes_are_named(graph, series):
    from skdiff import NDPRegressor

    Xg, yg, A = graph
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=2, device="cpu", random_state=0)
    mixed = [0 if i % 2 else "a" for i in range(len(yg))]
    with pytest.raises(ValueError, match="y mixes numbers and strings among its labels"):
        DIFFormerClassifier(**kw).fit(Xg, mixed, adjacency=A)
    X, y = series
    with pytest.raises(ValueError, match="y of FlowformerRegressor must be numbers"):
        FlowformerRegressor(**FLOW).fit(X, np.array(["a"] * len(y)))
    with pytest.raises(ValueError, match="'X' and 'y' of NDPRegressor must have the same number"):
        NDPRegressor().fit(np.zeros((10, 1)), np.zeros(9))


def test_missing_labels_are_named_with_the_ways_to_keep_or_drop_their_rows(graph):
    # a pandas column of string labels with gaps holds NaN or None: named as missing labels
    # (not as numbers among strings), with the marker of the labels' kind for DIFFormer
    pd = pytest.importorskip("pandas")
    Xg, yg, _ = graph
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=2, device="cpu", random_state=0)
    names = pd.Series(np.array(["a", "b", "c"])[yg], dtype=object)
    gaps = names.copy()
    gaps[[3, 7, 8, 20, 41, 60]] = np.nan
    gaps[7] = None
    head = (r"^y has 6 missing labels \(NaN/None\) at rows \[3, 7, 8, 20, 41, \.\.\.\]; ")
    with pytest.raises(ValueError, match=head + r"drop those rows, or fill them with a marker of "
                       r"the labels' kind and pass it as `unlabelled` \(e\.g\. y\.fillna\(''\) "
                       r"on a pandas Series, with unlabelled=''\) to keep them as unlabelled "
                       r"rows\.$"):
        DIFFormerClassifier(**kw).fit(Xg, gaps)
    with pytest.raises(ValueError, match=head + r"drop those rows, or fill them with '\?', the "
                       r"`unlabelled` marker"):
        DIFFormerClassifier(**kw, unlabelled="?").fit(Xg, gaps)
    with pytest.raises(ValueError, match=head + r"FlowformerClassifier needs a label on every "
                       r"row: drop those rows\.$"):
        FlowformerClassifier(**FLOW).fit(Xg, gaps)
    with pytest.raises(ValueError, match=head):  # pandas' own string dtype (NA)
        DIFFormerClassifier(**kw).fit(Xg, gaps.astype("string"))
    # the spelling given keeps the rows as unlabelled ones
    clf = DIFFormerClassifier(**kw, unlabelled="").fit(Xg, gaps.fillna(""))
    assert clf.classes_.tolist() == ["a", "b", "c"]
    # numeric labels with a NaN: the numeric marker
    numbers = yg.astype(float)
    numbers[5] = np.nan
    with pytest.raises(ValueError, match=r"^y has 1 missing label \(NaN/None\) at row 5; drop "
                       r"those rows, or fill them with -1, the `unlabelled` marker \(e\.g\. "
                       r"y\.fillna\(-1\) on a pandas Series\), to keep them"):
        DIFFormerClassifier(**kw).fit(Xg, numbers)
    with pytest.raises(ValueError, match=r"unlabelled=-1\) to keep them"):
        DIFFormerClassifier(**kw, unlabelled=None).fit(Xg, numbers)


def test_a_weights_file_holding_code_is_not_loaded(tmp_path):
    import json
    import shutil

    from skdiff.diffusion.priors import PriorWeightsError, load_prior_file, weights_dir

    class Payload:
        def __reduce__(self):
            return (print, ("not loaded",))

    buf = io.BytesIO()
    torch.save({"x": Payload()}, buf)  # a pickle with code, behind a matching checksum
    shutil.copyfile(weights_dir() / "se_d1.json", tmp_path / "se_d1.json")
    (tmp_path / "se_d1.pt").write_bytes(buf.getvalue())
    manifest = json.loads((tmp_path / "se_d1.json").read_text())
    manifest["sha256"] = hashlib.sha256(buf.getvalue()).hexdigest()
    manifest["bytes"] = len(buf.getvalue())
    (tmp_path / "se_d1.json").write_text(json.dumps(manifest))
    with pytest.raises(PriorWeightsError, match="se_d1.pt are not a plain tensor file"):
        load_prior_file(tmp_path / "se_d1.pt")


def test_ndp_score_and_target_shape_errors_say_what_is_expected():
    from skdiff import Graph, NDPRegressor

    X = np.linspace(0, 1, 10)[:, None]
    y = np.sin(4 * X[:, 0])
    ndp = NDPRegressor(n_samples=4, n_sampling_steps=3, n_resample=0, random_state=0)
    with pytest.raises(ValueError, match=r"y is expected of shape \(n_samples,\); got "
                                         r"\(10, 1, 1\)"):
        ndp.fit(X, y[:, None, None])
    ndp.fit(X, y)
    with pytest.raises(ValueError, match="y has 9 values but X has 10 rows"):
        ndp.score(X, y[:-1])
    with pytest.raises(ValueError, match="y holds 1 NaN or infinite values"):
        ndp.score(X, np.r_[y[:-1], np.nan])
    with pytest.raises(ValueError, match="sample_weight has 9 entries but X has 10 rows"):
        ndp.score(X, y, sample_weight=np.ones(9))
    assert np.isfinite(ndp.score(X, y))
    with pytest.raises(ValueError, match="Graph 'features' must be 2-D"):
        Graph(np.zeros(5), np.eye(5))


def test_cpu_out_of_memory_in_ndp_sampling_names_n_samples(monkeypatch):
    import skdiff.ndp._estimator as ndp_module
    from skdiff import NDPRegressor

    X = np.linspace(0, 1, 6)[:, None]
    ndp = NDPRegressor(n_samples=4, n_sampling_steps=3, n_resample=0, random_state=0).fit(
        X, np.sin(4 * X[:, 0]))

    def exhausted(*args, **kwargs):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                           "10 GB")

    monkeypatch.setattr(ndp_module, "conditional_sample", exhausted)
    with pytest.raises(MemoryError, match=r"Sampling 4 joint samples of 6 points ran out of "
                                          r"memory .*Lower 'n_samples' \(currently 4\)"):
        ndp.predict(X)

    def failing(*args, **kwargs):  # another RuntimeError passes through unchanged
        raise RuntimeError("a shape mismatch")

    monkeypatch.setattr(ndp_module, "conditional_sample", failing)
    with pytest.raises(RuntimeError, match="a shape mismatch"):
        ndp.predict(X)


def test_divergence_is_judged_on_the_kept_weights_and_above_noise():
    # a first loss near 0 (a skip that fits the target exactly): a rise of ~1e-4 is noise,
    # not divergence; without validation rows early stopping keeps the best training-loss
    # epoch, which is the one judged
    kw = dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=20, lr=1e-2, batch_size=32,
              pooling="flatten", device="cpu")
    X = np.random.RandomState(0).normal(size=(10, 4))
    FlowformerRegressor(**kw, random_state=0, uncertainty="mc_dropout").fit(X, X[:, 0])
    X1 = 3 * np.random.RandomState(0).uniform(size=(1, 10))
    reg = FlowformerRegressor(**kw, random_state=1, instance_norm=False,
                              early_stopping=True).fit(X1, X1[:, 0].astype(int))
    losses = np.asarray(reg.history_[:, "train_loss"])
    assert losses[-1] - losses[0] > abs(losses[0])  # the last epoch alone would look diverged
    with pytest.raises(TrainingDivergedError, match="Lower 'lr'"):
        FlowformerRegressor(**{**kw, "lr": 1e4}, random_state=0).fit(X, X[:, 1] ** 2)


class _NoisyLastEpoch(Callback):
    """Record the last epoch's training loss 2.5 times the first's magnitude above it: the
    jump one epoch's Gaussian NLL makes on a few rows with dropout."""

    def __init__(self, epochs):
        self.epochs = epochs

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == self.epochs:
            first = net.history[0, "train_loss"]
            net.history.record("train_loss", first + 2.5 * abs(first))


def test_one_noisy_epoch_on_a_few_rows_is_not_a_divergence():
    # 20 training rows with dropout, whose last epoch's loss jumps far above the first
    # epoch's: the default fit must not fail on it
    from sklearn.datasets import make_friedman2

    X, y = make_friedman2(1000, noise=10.0, random_state=2)
    rows = np.random.RandomState(101).permutation(1000)[:25]
    reg = DIFFormerRegressor(random_state=0, device="cpu", callbacks=[_NoisyLastEpoch(300)])
    reg.fit(X[rows], y[rows])
    losses = np.asarray(reg.history_[:, "train_loss"])
    assert reg.dropout_ > 0 and not reg.early_stopping_ and len(losses) == 300
    assert losses[-1] - losses[0] > abs(losses[0])  # the last epoch alone would look diverged
    assert np.median(losses[-3:]) - losses[0] < abs(losses[0])


def test_the_noise_of_a_one_row_fit_is_not_a_divergence():
    # one row with dropout: the Gaussian NLL starts near 0 and moves by about a nat from
    # epoch to epoch; its last three epochs' median lies above twice the first epoch's
    # magnitude, yet nothing diverged (seeds whose noise shows this at four layers). A
    # learning rate far too high still raises.
    X, y = np.array([[1.0, 2.0, 3.0]]), np.array([5.0])
    for seed in (3, 4):
        reg = DIFFormerRegressor(n_layers=4, max_epochs=5, random_state=seed,
                                 device="cpu").fit(X, y)
        losses = np.asarray(reg.history_[:, "train_loss"])
        assert np.median(losses[-3:]) - losses[0] > abs(losses[0]) + 0.2
        assert np.isfinite(reg.predict(X)).all()
    Xr = np.random.RandomState(0).normal(size=(200, 5))
    with pytest.raises(TrainingDivergedError, match="far above where it started"):
        DIFFormerRegressor(max_epochs=30, lr=1.0, random_state=0, device="cpu").fit(
            Xr, Xr[:, 0] ** 2)


def _small_classification():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 4))
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("callback, key", [
    ("EarlyStopping", "valid_loss"), ("Checkpoint", "valid_loss_best")])
def test_a_callback_monitoring_validation_without_validation_rows_is_refused(
        callback, key, tmp_path):
    import skorch.callbacks

    X, y = _small_classification()
    kwargs = {"dirname": str(tmp_path)} if callback == "Checkpoint" else {}
    cb = getattr(skorch.callbacks, callback)(**kwargs)
    clf = DIFFormerClassifier(hidden_dim=8, n_layers=1, max_epochs=2, callbacks=[cb])
    with pytest.raises(ValueError, match=rf"monitors '{key}', but this fit holds out no "
                                         r"validation rows \(early_stopping='auto'\)\. Set "
                                         "early_stopping=True"):
        clf.fit(X, y)
    assert not hasattr(clf, "net_")
    clf.set_params(early_stopping=True, validation_fraction=0.3).fit(X, y)  # rows held out
    assert key.removesuffix("_best") in clf.history_[-1]


def test_callbacks_are_set_whole_and_not_under_reserved_names():
    from skorch.callbacks import GradientNormClipping

    X, y = _small_classification()
    clf = DIFFormerClassifier(hidden_dim=8, n_layers=1, max_epochs=2,
                              callbacks=[("clip", GradientNormClipping(1.0))])
    with pytest.raises(ValueError, match=r"Invalid parameter 'callbacks__clip__gradient_clip_"
                                         r"value'.*set_params\(callbacks=\[\.\.\.\]\)"):
        clf.set_params(callbacks__clip__gradient_clip_value=0.5)
    for name in ("reshuffle", "restore_lowest_loss", "train_loss"):
        clf.set_params(callbacks=[(name, GradientNormClipping(1.0))])
        with pytest.raises(ValueError, match=rf"The callback name '{name}' is one that "
                                             "DIFFormerClassifier's own callbacks"):
            clf.fit(X, y)


def test_a_warm_start_takes_a_new_integer_random_state():
    X, y = _small_classification()
    kw = dict(hidden_dim=8, n_layers=1, max_epochs=3, dropout=0.3, warm_start=True)
    a = DIFFormerClassifier(**kw, random_state=0).fit(X, y)
    b = clone(a).fit(X, y)
    seed = a.seed_
    a.set_params(random_state=1).fit(X, y)
    b.fit(X, y)
    assert a.seed_ != seed and b.seed_ == seed
    assert not np.allclose(a.predict_proba(X), b.predict_proba(X))
    c = clone(b).set_params(random_state=0).fit(X, y).fit(X, y)  # the same integer: same run
    np.testing.assert_array_equal(c.predict_proba(X), b.predict_proba(X))
