"""The shared estimator machinery, exercised through a minimal estimator."""

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from sklearn.base import clone
from skorch.callbacks import Callback

from skdiff._base import (
    TRAINING_PARAMETER_CONSTRAINTS,
    FitData,
    NeuralEstimatorBase,
    TrainingDivergedError,
    n_validation_rows,
    resolve_device,
    validate_data,
)
from skdiff._graph import check_adjacency
from skdiff._tasks import RegressorTask, conformal_quantile
from tests._shared import predictions_while_sampling


class _TinyRegressor(RegressorTask, NeuralEstimatorBase):
    """A whole estimator on the skeleton: parameters, three hooks and fit."""

    _parameter_constraints = dict(TRAINING_PARAMETER_CONSTRAINTS)
    _split_policy = "last"

    def __init__(self, *, max_epochs=5, lr=1e-2, weight_decay=0.0, batch_size=16,
                 early_stopping=False, validation_fraction=0.2, n_iter_no_change=2, n_init=1,
                 warm_start=False, device="cpu", n_threads=None, mixed_precision=None,
                 accelerator=None, random_state=None, verbose=0, callbacks=None):
        self._init_params(locals())

    def fit(self, X, y):
        return self._fit(X, y)

    def _make_data(self, X, y, *, reset):
        X = validate_data(self, X, dtype=np.float32, reset=reset)
        targets, _, _, _ = self._targets(y, reset=reset)
        return FitData(rows=np.arange(len(X)),
                       extra=dict(X=X, targets=targets, weights=np.ones(len(X))))

    def _build_module(self, data):
        return torch.nn.Sequential(torch.nn.Linear(data.X.shape[1], 8), torch.nn.Dropout(0.5),
                                   torch.nn.Linear(8, self.n_outputs_))

    def _prepare_predict(self, X):
        return torch.as_tensor(validate_data(self, X, dtype=np.float32, reset=False))

    def _outputs(self, X, mc=False):
        return self.module_(X.to(self.device_)).double().cpu().numpy()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 3))
    return X, X @ np.array([1.0, -2.0, 0.5])


def test_same_seed_same_predictions_and_global_rng_untouched(data):
    X, y = data
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    p1 = _TinyRegressor(random_state=0).fit(X, y).predict(X)
    after = torch.rand(3)
    p2 = _TinyRegressor(random_state=0).fit(X, y).predict(X)
    p3 = _TinyRegressor(random_state=1).fit(X, y).predict(X)
    assert torch.equal(before, after)
    np.testing.assert_array_equal(p1, p2)
    assert not np.allclose(p1, p3)


def test_fits_and_samplers_in_threads_equal_the_same_calls_run_alone(data):
    """torch's random generator is process-wide: seeded sections of several threads at once
    would draw from one stream. Threaded fits and samplers give the lone call's numbers."""
    X, y = data
    est = _TinyRegressor(random_state=0)  # with dropout, drawn from torch's generator
    alone = clone(est).fit(X, y).predict(X)
    with ThreadPoolExecutor(4) as ex:
        fits = list(ex.map(lambda _: clone(est).fit(X, y).predict(X), range(12)))
    assert all(np.array_equal(p, alone) for p in fits)
    fitted = clone(est).fit(X, y)
    lone = fitted.sample_posterior(X, n_samples=50, random_state=0)
    with ThreadPoolExecutor(4) as ex:
        draws = list(ex.map(lambda _: fitted.sample_posterior(X, n_samples=50, random_state=0),
                            range(8)))
    assert all(np.array_equal(d, lone) for d in draws)


def test_predict_is_deterministic_while_another_thread_samples(data):
    """Sampling switches the shared network's dropout to train mode: a predict of another
    thread meanwhile must still run the network in eval mode."""
    X, y = data
    fitted = _TinyRegressor(random_state=0).fit(X, y)
    ref = fitted.predict(X)
    preds, draws, lone = predictions_while_sampling(fitted, fitted.predict, X, 300, 50)
    assert sum(not np.array_equal(p, ref) for p in preds) == 0
    assert draws and all(np.array_equal(d, lone) for d in draws)


def test_history_and_learning(data):
    X, y = data
    est = _TinyRegressor(max_epochs=30, random_state=0).fit(X, y)
    losses = est.history_[:, "train_loss"]
    assert len(losses) == 30
    assert losses[-1] < 0.5 * losses[0]


def test_early_stopping_restores_best(data):
    X, y = data
    est = _TinyRegressor(max_epochs=200, lr=0.5, early_stopping=True, n_iter_no_change=3,
                         random_state=0).fit(X, y)
    valid = est.history_[:, "valid_loss"]
    assert len(valid) < 200
    # the weights in use are those of the best validation epoch; the validation rows are the
    # last ceil(0.2 * 64) = 13 (split policy "last"), the loss is in standardised units
    mse = np.mean(((est.predict(X[-13:]) - y[-13:]) / est.y_scale_) ** 2)
    assert mse == pytest.approx(min(valid), rel=1e-3)


def test_validation_fraction_k_over_n_holds_out_k_rows():
    # the recipe validation_fraction = n_val / (n_train + n_val) holds out exactly n_val
    # rows for every (k, n), though k / n * n lands above k in float for some (7 / 25 * 25)
    for n in range(2, 2001):
        for k in range(1, n):
            assert n_validation_rows(k / n, n) == k, (k, n)
    assert n_validation_rows(7 / 25, 25) == 7
    # otherwise ceil, as train_test_split rounds
    assert n_validation_rows(0.1, 25) == 3 and n_validation_rows(0.1, 191) == 20
    assert n_validation_rows(0.1, 2851) == 286 and n_validation_rows(715 / 2851, 2851) == 715
    est = _TinyRegressor(early_stopping=True, validation_fraction=7 / 25, random_state=0)
    X = np.random.RandomState(0).normal(size=(25, 3))
    train, valid = est.fit(X, X[:, 0])._validation_rows(FitData(rows=np.arange(25)))
    np.testing.assert_array_equal(valid, np.arange(18, 25))


def test_no_validation_split_that_leaves_fewer_than_two_training_rows():
    # as documented: with too few rows for a split the training loss is monitored; a split
    # that leaves two training rows is as before (policy "last": the last ceil(f * n) rows)
    X = np.random.RandomState(0).normal(size=(4, 3))
    est = _TinyRegressor(early_stopping=True, validation_fraction=0.5, max_epochs=1,
                         random_state=0).fit(X, X[:, 0])
    for n, train, valid in [(2, [0, 1], []), (3, [0, 1, 2], []), (4, [0, 1], [2, 3])]:
        split = est._validation_rows(FitData(rows=np.arange(n)))
        assert [part.tolist() for part in split] == [train, valid], n
    # one epoch: two training rows under dropout 0.5 give a loss so noisy that over more
    # epochs the divergence check fires for a few seeds (2 of 300 at two epochs; 7 of 300
    # for the 4-row fit above at five), and which ones depends on the machine's arithmetic
    two = _TinyRegressor(early_stopping=True, max_epochs=1, random_state=0).fit(X[:2], X[:2, 0])
    assert "valid_loss" not in two.history_[-1]


def test_the_conformal_quantile_covers_a_new_exchangeable_score_at_the_nominal_level():
    # 22 calibration scores and one new one, 40,000 times: the split-conformal bound (the
    # 21st smallest) holds the new score with probability 21/23 = 0.913, within
    # [0.9, 0.9 + 1/23]; the empirical 0.9 quantile of the 22 with probability 0.87
    scores = np.random.default_rng(0).exponential(size=(23, 40_000))
    bound = conformal_quantile(scores[:22], 0.9)
    np.testing.assert_array_equal(bound, np.sort(scores[:22], axis=0)[20])
    assert 0.905 < np.mean(scores[22] <= bound) < 0.922
    assert np.mean(scores[22] <= np.quantile(scores[:22], 0.9, axis=0)) < 0.88
    # rows first, any trailing shape; too few rows for the level: no finite bound
    assert conformal_quantile(np.arange(30.0).reshape(10, 3), 0.9).tolist() == [27, 28, 29]
    assert conformal_quantile(np.arange(8.0), 0.9) == np.inf
    # a product within rounding of an integer is that integer: 0.68 * 75 -> the 51st
    assert conformal_quantile(np.arange(74.0), 0.68) == 50.0


def test_nan_loss_stops_with_clear_error(data):
    X, y = data
    with pytest.raises(TrainingDivergedError, match="loss became .*Lower 'lr'"):
        _TinyRegressor(lr=1e30, max_epochs=20, random_state=0).fit(X * 1e20, y)


def test_bad_parameters_are_named(data):
    X, y = data
    with pytest.raises(ValueError, match="'lr' parameter .* Got -1"):
        _TinyRegressor(lr=-1).fit(X, y)
    with pytest.raises(TypeError, match="'callbacks' parameter must be a list of skorch"):
        _TinyRegressor(callbacks=["nope"]).fit(X, y)
    with pytest.raises(ValueError, match="device"):
        _TinyRegressor(device="tpu").fit(X, y)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error")
def test_cuda_without_cuda_is_a_clear_error():
    with pytest.raises(ValueError, match="'device' parameter is 'cuda' but CUDA is not avail"):
        resolve_device("cuda")
    assert resolve_device("auto") == "cpu"


def test_user_callbacks_run(data):
    X, y = data

    class Count(Callback):
        def initialize(self):
            self.n = 0
            return self

        def on_epoch_end(self, net, **kw):
            self.n += 1

    cb = Count()
    _TinyRegressor(max_epochs=4, callbacks=[cb], random_state=0).fit(X, y)
    assert cb.n == 4


class _SpikeAtTheEnd(Callback):
    """Throws the weights far off after the last epoch's loss is recorded: the spike that
    full-batch Adam can end a run in, made certain."""

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == net.max_epochs:
            gen = torch.Generator().manual_seed(0)  # not the training's random stream
            with torch.no_grad():
                for p in net.module_.parameters():
                    p.add_(5.0 * torch.randn(p.shape, generator=gen))


class _StartingWeights(Callback):
    """The weights every epoch starts from."""

    def initialize(self):
        self.states = []
        return self

    def on_epoch_begin(self, net, **kwargs):
        self.states.append({k: v.clone() for k, v in net.module_.state_dict().items()})


def test_a_spike_at_the_end_of_a_run_is_undone(data):
    from skdiff.callbacks import RestoreLowestLoss

    X, y = data
    names = lambda est: dict(est.net_.callbacks_)  # noqa: E731
    starts = _StartingWeights()
    clean = _TinyRegressor(max_epochs=30, random_state=0, callbacks=[starts]).fit(X, y)
    assert "restore_lowest_loss" in names(clean) and clean.restored_epoch_ is None
    spiked = _TinyRegressor(max_epochs=30, random_state=0, callbacks=[_SpikeAtTheEnd()])
    spiked.fit(X, y)
    # the run ends on the weights the epoch with the lowest recorded loss started from,
    # exactly those of the same run without the spike
    epoch = spiked.restored_epoch_
    losses = spiked.history_[:, "train_loss"]
    assert epoch == 1 + int(np.argmin(losses))
    state = spiked.module_.state_dict()
    assert all(torch.equal(state[k], starts.states[epoch - 1][k]) for k in state)
    last, best = names(spiked)["restore_lowest_loss"].losses_
    assert last > 10 * best
    mse = lambda est: np.mean((est.predict(X) - y) ** 2)  # noqa: E731
    assert mse(spiked) < 2 * mse(clean)
    # a RestoreLowestLoss of the user's replaces the estimator's; np.inf keeps the last weights
    keep_last = RestoreLowestLoss(tolerance=np.inf)
    kept = _TinyRegressor(max_epochs=30, random_state=0,
                          callbacks=[_SpikeAtTheEnd(), keep_last]).fit(X, y)
    assert "restore_lowest_loss" not in names(kept) and kept.restored_epoch_ is None
    assert keep_last.losses_[0] > 10 * keep_last.losses_[1]
    assert mse(kept) > 10 * mse(spiked)
    # early stopping restores its own best epoch; a run of one epoch keeps its weights
    stopped = _TinyRegressor(max_epochs=30, early_stopping=True, random_state=0).fit(X, y)
    assert "restore_lowest_loss" not in names(stopped) and stopped.restored_epoch_ is None
    once = _TinyRegressor(max_epochs=1, random_state=0, callbacks=[_SpikeAtTheEnd()])
    assert once.fit(X, y).restored_epoch_ is None
    assert names(once)["restore_lowest_loss"].losses_ is None
    # no copy of the weights stays behind to travel in a pickle
    cb = names(spiked)["restore_lowest_loss"]
    assert cb._best is None and cb._candidate is None
    with pytest.raises(ValueError, match="'tolerance' must be a number >= 0.*got -1"):
        _TinyRegressor(callbacks=[RestoreLowestLoss(tolerance=-1)]).fit(X, y)


class _SpikeTheFirstRun(_SpikeAtTheEnd):
    """Spikes the end of the first training it sees only (the first of ``n_init``)."""

    def __init__(self):
        self.runs = 0

    def on_train_begin(self, net, **kwargs):
        self.runs += 1

    def on_epoch_end(self, net, **kwargs):
        if self.runs == 1:
            super().on_epoch_end(net, **kwargs)


def test_n_init_scores_the_weights_each_run_ends_on(data):
    from skdiff.callbacks import RestoreLowestLoss

    X, y = data
    # the first run ends on spiked weights (kept: tolerance inf) after an ordinary last
    # recorded loss; its score is the loss of those weights, so the second run is kept
    keep_last = RestoreLowestLoss(tolerance=np.inf)
    est = _TinyRegressor(max_epochs=30, n_init=2, random_state=0,
                         callbacks=[_SpikeTheFirstRun(), keep_last]).fit(X, y)
    assert est.init_scores_[0] > 10 * est.init_scores_[1]
    assert est.seed_ != _TinyRegressor(random_state=0).fit(X, y).seed_
    # the score is the training loss without dropout of the weights kept
    assert est.init_scores_[1] == pytest.approx(keep_last.losses_[0], rel=1e-6)
    # with the estimator's own restorer the spiked run is restored and scored as restored
    restored = _TinyRegressor(max_epochs=30, n_init=2, random_state=0,
                              callbacks=[_SpikeTheFirstRun()]).fit(X, y)
    first = _TinyRegressor(max_epochs=30, random_state=0, callbacks=[_SpikeAtTheEnd()])
    first.fit(X, y)
    _, loss_restored = dict(first.net_.callbacks_)["restore_lowest_loss"].losses_
    assert restored.init_scores_[0] == pytest.approx(loss_restored, rel=1e-6)


def test_pickle_round_trip(data):
    X, y = data
    est = _TinyRegressor(random_state=0).fit(X, y)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est.predict(X), est2.predict(X))
    assert est2.device_ == "cpu"


def _pickled_as_if_on_cuda(obj, monkeypatch):
    """``pickle.dumps(obj)`` with every tensor storage tagged as living on ``cuda:0``."""
    import torch.serialization

    with monkeypatch.context() as m:
        m.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
        return pickle.dumps(obj)


@pytest.mark.skipif(torch.cuda.is_available(), reason="loads CUDA-tagged tensors without CUDA")
def test_a_cuda_fitted_estimator_unpickles_without_cuda(data, monkeypatch):
    # A tensor that pickle stores by itself keeps its device and refuses to load on a machine
    # without CUDA (seen: gpu_smoke.py --save on an H200, then --check-pickle here); skorch loads
    # its net's state with the tensors mapped to the CPU. So a fitted estimator may hold no
    # tensor outside that state: module_ comes back from net_, and neither the validation set
    # nor early stopping's copy of the best weights is kept after fit.
    from skdiff import DIFFormerClassifier, FlowformerRegressor, Graph
    from skdiff.datasets import make_planted_partition

    b = _pickled_as_if_on_cuda(torch.ones(2), monkeypatch)
    with pytest.raises(RuntimeError, match="CUDA"):  # the emulation is faithful
        pickle.loads(b)

    X, y = data
    est = _TinyRegressor(early_stopping=True, random_state=0).fit(X, y)
    loaded = pickle.loads(_pickled_as_if_on_cuda(est, monkeypatch))
    assert loaded.module_ is loaded.net_.module_ and loaded.device_ == "cpu"
    np.testing.assert_array_equal(est.predict(X), loaded.predict(X))

    Xg, yg, A = make_planted_partition(60, 3, n_features=4, random_state=0)
    g = Graph(Xg, A)
    clf = DIFFormerClassifier(n_layers=1, hidden_dim=8, max_epochs=2, device="cpu",
                              random_state=0)
    clf.fit(g.node_ids(), yg, graph=g, validation_mask=np.arange(60) % 4 == 0)
    again = pickle.loads(_pickled_as_if_on_cuda(clf, monkeypatch))
    np.testing.assert_array_equal(again.predict_proba(g.node_ids()),
                                  clf.predict_proba(g.node_ids()))

    reg = FlowformerRegressor(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=2,
                              early_stopping=True, device="cpu", random_state=0)
    Xs, ys = np.sin(np.arange(40 * 12).reshape(40, 12)), np.arange(40.0)
    reg.fit(Xs, ys)
    again = pickle.loads(_pickled_as_if_on_cuda(reg, monkeypatch))
    np.testing.assert_array_equal(again.predict(Xs), reg.predict(Xs))
    again.set_params(warm_start=True).fit(Xs, ys)  # a loaded net trains on, validating again
    assert len(again.history_) == 4 and "valid_loss" in again.history_[-1]


def test_check_adjacency_errors_and_symmetrisation():
    A = np.array([[0, 1, 0], [0, 0, 2], [0, 0, 0]], dtype=float)
    S = check_adjacency(A, 3)
    np.testing.assert_array_equal(S.toarray(), np.maximum(A, A.T))
    with pytest.raises(ValueError, match=r"shape \(3, 3\) but there are 4 rows of X.*\(4, 4\)"):
        check_adjacency(A, 4)
    with pytest.raises(ValueError, match="square"):
        check_adjacency(np.ones((2, 3)), 2)
    with pytest.raises(ValueError, match="negative"):
        check_adjacency(-A, 3)
    with pytest.raises(ValueError, match="NaN or infinite"):
        check_adjacency(A + np.nan, 3)
    with pytest.raises(ValueError, match="symmetric"):
        check_adjacency(A, 3, symmetrize=False)
    # weights beyond float32 would be inf in the models' float32 arithmetic: refused with
    # the largest weight and the fix (a DIFFormerRegressor predicted differently with A * 1e300
    # than with A * 1e30); the largest float32 itself passes
    with pytest.raises(ValueError) as info:
        check_adjacency(A * 1e300, 3)
    assert str(info.value) == (
        "'adjacency' has weights up to 2e+300, beyond the largest float32 (3.403e+38) that "
        "the models compute in; rescale it, e.g. adjacency / adjacency.max() (the graph terms "
        "normalise the weights by the node degrees, with a unit self loop per node).")
    top = float(np.finfo(np.float32).max)
    assert check_adjacency(A / 2 * top, 3).max() == top
    import scipy.sparse as sp

    for complex_A in (A * 1j, sp.csr_matrix(A * 1j), sp.lil_matrix(A * 1j), (A * 1j).tolist()):
        with pytest.raises(ValueError, match="holds complex numbers; edge weights must be real"):
            check_adjacency(complex_A, 3)
    # a flag passed positionally where the adjacency goes is named as a bool
    for flag in (True, np.False_):
        with pytest.raises(TypeError) as info:
            check_adjacency(flag, 3)
        assert str(info.value) == ("'adjacency' must be an array-like or sparse matrix, got "
                                   f"bool {bool(flag)}.")


def test_validating_an_adjacency_leaves_the_callers_sparse_matrix_as_it_was():
    # explicit zeros are dropped from the validated copy only: the caller's arrays (which a
    # CSR input would share with it) keep every entry, for every sparse format
    import scipy.sparse as sp

    from skdiff import DIFFormerClassifier, FlowformerRegressor, Graph

    def with_zeros(n):
        rows = np.r_[np.arange(n - 1), np.arange(1, n), 0, 5]
        cols = np.r_[np.arange(1, n), np.arange(n - 1), 7, 9]
        A = sp.csr_matrix((np.r_[np.ones(2 * (n - 1)), 0.0, 0.0], (rows, cols)), shape=(n, n))
        return sp.csr_matrix((A.data, A.indices, A.indptr), shape=(n, n))

    rng = np.random.RandomState(0)
    X, Xs = rng.normal(size=(40, 4)), rng.normal(size=(20, 16, 12))  # 40 rows, 12 channels
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=1, device="cpu", random_state=0)
    calls = [(40, lambda M: check_adjacency(M, 40)), (40, lambda M: Graph(X, M)),
             (40, lambda M: DIFFormerClassifier(**kw).fit(X, np.arange(40) % 2, adjacency=M)),
             (12, lambda M: FlowformerRegressor(**kw, n_heads=2).fit(Xs, Xs[:, -1, 0],
                                                                     adjacency=M))]
    forms = [lambda A: A, lambda A: A.astype(np.int64), sp.csc_matrix, sp.coo_matrix,
             sp.csr_array]
    for form in forms:
        for n, call in calls:
            M = form(with_zeros(n))
            kept = {k: getattr(M, k).copy() for k in ("data", "indices", "indptr", "row",
                                                      "col") if hasattr(M, k)}
            call(M)
            assert M.nnz == 2 * n  # its two explicit zeros among them
            for key, values in kept.items():
                np.testing.assert_array_equal(getattr(M, key), values)
    assert check_adjacency(with_zeros(40), 40).nnz == 78  # the validated copy drops them


def test_graph_repr_counts_a_self_loop_as_one_edge():
    from skdiff import Graph

    A = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=float)  # 2 edges, 2 self-loops
    assert repr(Graph(np.eye(3), A)) == "Graph(n_nodes=3, n_features=3, n_edges=4)"
    assert repr(Graph(np.eye(3), np.eye(3))) == "Graph(n_nodes=3, n_features=3, n_edges=3)"


def test_graph_features_errors_name_the_features():
    from skdiff import Graph

    for F, message in ((np.array([["a", "b"], ["c", "d"]]), "must be numbers; could not"),
                       (np.eye(2) * 1j, "holds complex numbers"),
                       (np.empty((0, 2)), "has no rows; pass at least one")):
        with pytest.raises(ValueError, match=f"Graph 'features' {message}"):
            Graph(F, np.eye(len(F)))


def test_node_ids_beyond_the_int64_range_are_reported_as_given():
    # the range is checked before the cast to int64, which would wrap these ids around
    import warnings

    from skdiff._graph import check_node_ids

    for ids, shown in ((np.array([[2**64 - 1]], dtype=np.uint64), "18446744073709551615"),
                       (np.array([[0.0], [1e20]]), "0 to 100000000000000000000")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "invalid value encountered in cast"
            with pytest.raises(ValueError, match=r"^Node ids must lie in \[0, 3\) for a graph "
                                                 rf"of 3 nodes; got ids from .*{shown}\.$"):
                check_node_ids(ids, 3)
    assert check_node_ids(np.array([[2.0], [0.0]]), 3).tolist() == [2, 0]
    assert check_node_ids(np.array([[2], [0]], dtype=np.uint64), 3).dtype == np.int64
