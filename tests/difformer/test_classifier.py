"""DIFFormerClassifier: real-data floors, graph recipes, sklearn integration, errors."""

import pickle
import warnings
from concurrent.futures import ThreadPoolExecutor

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
import torch
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler, normalize

from skdiff import DIFFormerClassifier, Graph
from skdiff.datasets import load_planetoid, make_planted_partition
from tests._shared import predictions_while_sampling

FAST = dict(n_layers=2, hidden_dim=32, max_epochs=60, device="cpu")


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    rng = np.random.RandomState(0)
    idx = rng.permutation(len(y))
    X = StandardScaler().fit_transform(X)
    return X[idx[:900]], y[idx[:900]], X[idx[900:1300]], y[idx[900:1300]]


@pytest.fixture(scope="module")
def planted():
    X, y, A = make_planted_partition(300, 3, p_in=0.1, p_out=0.004, n_features=32,
                                     random_state=0)
    return X, y, A


# -- real data -------------------------------------------------------------------------------
def test_cora_public_split_accuracy(cora_home):
    cora = load_planetoid("cora", data_home=cora_home)
    g = Graph(normalize(cora.data, norm="l1"), cora.adjacency)  # as the official code
    ids = np.concatenate([cora.train_idx, cora.val_idx])
    clf = DIFFormerClassifier(random_state=0).fit(
        ids[:, None], cora.target[ids], graph=g, validation_mask=np.isin(ids, cora.val_idx))
    acc = clf.score(cora.test_idx[:, None], cora.target[cora.test_idx])
    assert acc >= 0.80
    assert clf.transduction_.shape == (g.n_nodes,)


def test_weight_averaging_where_training_runs_all_its_epochs(planted):
    X, y, A = planted
    y_semi = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    names = lambda clf: dict(clf.net_.callbacks_)  # noqa: E731
    settled = {**FAST, "max_epochs": 300}  # after 60 or 150 epochs the loss still falls and
    # the last weights fit the training rows better than their average, which is not kept
    avg = DIFFormerClassifier(**settled, random_state=0, weight_averaging=True).fit(
        X, y_semi, adjacency=A)
    assert "weight_averaging" in names(avg) and not avg.early_stopping_
    assert avg.weights_averaged_
    last = DIFFormerClassifier(**settled, random_state=0).fit(X, y_semi, adjacency=A)
    assert "weight_averaging" not in names(last) and not last.weights_averaged_  # the default
    # the same run, predicted from other weights, and as well on this graph
    assert names(avg)["weight_averaging"].losses_ is not None
    w_avg, w_last = avg.module_.state_dict(), last.module_.state_dict()
    assert any(not torch.equal(w_avg[k], w_last[k]) for k in w_avg)
    unlabelled = y_semi == -1
    acc = lambda clf: np.mean(clf.transduction_[unlabelled] == y[unlabelled])  # noqa: E731
    assert acc(avg) >= 0.9 and acc(avg) >= acc(last) - 0.02
    # early stopping keeps its best epoch: nothing is averaged
    stopped = DIFFormerClassifier(**FAST, random_state=0, early_stopping=True,
                                  weight_averaging=True).fit(X, y_semi, adjacency=A)
    assert "weight_averaging" not in names(stopped) and "early_stopping" in names(stopped)
    assert not stopped.weights_averaged_
    with pytest.raises(ValueError, match="'weight_averaging' parameter of "
                                         "DIFFormerClassifier must be an instance of 'bool'"):
        DIFFormerClassifier(**FAST, weight_averaging="yes").fit(X, y_semi, adjacency=A)


def test_an_average_with_a_higher_training_loss_is_not_kept():
    # make_hastie_10_2: the training loss falls from 0.65 at epoch 100 to 0.18 at epoch 250
    # of 300, so a long average (decay 0.98: 13 % of its weight from before epoch 200) mixes
    # in weights that had not learnt the task; its training loss says so, and the last
    # weights are kept. The default decay (0.95) averages a stretch that has settled.
    from sklearn.datasets import make_hastie_10_2
    from sklearn.model_selection import train_test_split

    from skdiff.callbacks import RestoreLowestLoss, WeightAveraging

    X, y = make_hastie_10_2(n_samples=1000, random_state=606)
    Xtr, Xte, ytr, yte = train_test_split(X, (y > 0).astype(int), test_size=0.25,
                                          random_state=0, stratify=y)

    def fit(**kwargs):  # four layers, the depth this schedule of losses was measured at
        return DIFFormerClassifier(n_layers=4, random_state=0, device="cpu", **kwargs).fit(
            Xtr, ytr)

    last = fit(weight_averaging=False,
               callbacks=[RestoreLowestLoss(tolerance=np.inf)]).score(Xte, yte)
    blind = fit(weight_averaging=False,
                callbacks=[WeightAveraging(0.98, compare=False)]).score(Xte, yte)
    guard = WeightAveraging(0.98)
    guarded = fit(weight_averaging=False, callbacks=[guard]).score(Xte, yte)
    assert last > 0.85 and blind < last - 0.1
    # the average's training loss is about twice the last weights' (1.99-2.0 times, by the
    # last digits of the installed numerical libraries): the guard compares the two
    assert not guard.averaged_ and guard.losses_[1] > 1.5 * guard.losses_[0]
    assert guarded == last
    default = fit(weight_averaging=True)
    assert default.weights_averaged_ and default.score(Xte, yte) >= last


@pytest.mark.parametrize("seed", [0, 2])
def test_the_defaults_do_not_end_on_a_spike_of_the_training_loss(seed):
    # full-batch Adam ends these runs (300 epochs at lr 3e-3) in a spike of the training
    # loss: the last weights scored 0.725 (seed 0) and 0.78 (seed 2) on the training rows
    # themselves; the weights of the epoch with the lowest training loss are restored
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    X, y = make_classification(400, n_features=10, n_informative=2, n_redundant=2,
                               random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    clf = DIFFormerClassifier(random_state=seed, device="cpu").fit(Xtr, ytr)
    assert clf.score(Xtr, ytr) >= 0.95 and clf.score(Xte, yte) >= 0.8


def test_the_logits_start_at_the_cross_validated_logistic_regression():
    """logistic_start: the logits start at a logistic regression on the scaled features
    (penalty chosen by stratified folds), kept fixed, the output layer at zero: with a
    learning rate of 1e-9 the fit predicts what that logistic regression predicts, on the
    fitted rows and on new ones."""
    from sklearn.linear_model import LogisticRegression

    from skdiff._tasks import LOGISTIC_CS

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 6)) * [1, 2, 3, 1, 1, 5] + 3
    y = np.array(["a", "b", "c"])[(X[:, 0] + 0.5 * X[:, 1] > 4.5).astype(int)
                                  + (X[:, 2] > 4)]
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=2, lr=1e-9, random_state=0, device="cpu")
    clf = DIFFormerClassifier(**kw, logistic_start=True).fit(X[:90], y[:90])
    assert clf.logistic_C_ in LOGISTIC_CS and not clf.module_.skip.weight.requires_grad
    assert clf.module_.fc_out.weight.abs().max() < 1e-6  # started at zero, moved by ~lr
    Xs = clf._feature_scaling.transform(X)
    lr = LogisticRegression(C=clf.logistic_C_, max_iter=2000).fit(Xs[:90], y[:90])
    np.testing.assert_allclose(clf.predict_proba(X[90:]), lr.predict_proba(Xs[90:]),
                               atol=1e-4)
    np.testing.assert_allclose(clf.predict_proba(X[:90]), lr.predict_proba(Xs[:90]),
                               atol=1e-4)
    # the fixed skip survives a pickle and is not trained by a continued fit
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X[90:]), clf.predict_proba(X[90:]))
    skip = clf.module_.skip.weight.detach().clone()
    again.set_params(lr=1e-2).partial_fit(X[:90], y[:90])
    assert torch.equal(again.module_.skip.weight, skip) and again.logistic_C_ == clf.logistic_C_
    # a binary problem splits the single logit in two
    binary = DIFFormerClassifier(**kw, logistic_start=True).fit(X[:90], y[:90] == "a")
    lr2 = LogisticRegression(C=binary.logistic_C_, max_iter=2000).fit(Xs[:90], y[:90] == "a")
    np.testing.assert_allclose(binary.predict_proba(X[90:]), lr2.predict_proba(Xs[90:]),
                               atol=1e-4)
    # without the start (the default on dense features): the paper's network alone
    plain = DIFFormerClassifier(**kw).fit(X[:90], y[:90])
    assert plain.logistic_C_ is None and plain.module_.skip is None
    assert plain.feature_scaling_ == "standard" and not plain.logistic_start_
    assert clf.logistic_start_
    assert np.abs(plain.predict_proba(X[90:]) - lr.predict_proba(Xs[90:])).max() > 0.1
    # a class without training rows (partial_fit with classes): no start, still trains
    part = DIFFormerClassifier(**kw, logistic_start=True).partial_fit(
        X[:90], np.where(y[:90] == "c", "a", y[:90]), classes=["a", "b", "c"])
    assert part.logistic_C_ is None and not part.module_.skip.weight.any()
    assert part.predict_proba(X[90:]).shape == (30, 3)


def test_auto_starts_at_a_logistic_regression_on_bag_of_words_features():
    """logistic_start="auto": on where the features are scaled by rows (bag-of-words,
    feature_scaling_ "row"), off otherwise; True / False force it."""
    rng = np.random.default_rng(0)
    topics = rng.dirichlet(np.full(200, 0.1), size=3)
    y = np.repeat([0, 1, 2], 40)
    counts = np.stack([rng.multinomial(20, topics[c]) for c in y]).astype(float)
    X = sp.csr_matrix((counts > 0).astype(float))  # binary word presence
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=5, random_state=0, device="cpu")
    auto = DIFFormerClassifier(**kw).fit(X, y)
    assert auto.feature_scaling_ == "row" and auto.logistic_start_
    assert auto.logistic_C_ is not None and auto.module_.skip is not None
    off = DIFFormerClassifier(**kw, logistic_start=False).fit(X, y)
    assert not off.logistic_start_ and off.module_.skip is None
    # the same features scaled by columns: no start
    standard = DIFFormerClassifier(**kw, feature_scaling="standard").fit(X, y)
    assert not standard.logistic_start_ and standard.logistic_C_ is None


def test_the_network_corrects_the_logistic_start_where_classes_are_not_linear():
    """Two rings: the logistic start is at chance, the network's correction separates them."""
    from sklearn.datasets import make_circles

    X, y = make_circles(400, noise=0.05, factor=0.5, random_state=0)
    clf = DIFFormerClassifier(**FAST, logistic_start=True, random_state=0).fit(X[:300],
                                                                                y[:300])
    assert clf.logistic_C_ is not None
    assert clf.score(X[300:], y[300:]) > 0.95


def test_tabular_semi_supervised_and_string_classes(digits):
    X, y, Xt, yt = digits
    names = np.array([f"digit{c}" for c in range(10)], dtype=object)
    y_semi = names[y].copy()
    y_semi[200:] = -1  # 200 labels, 700 unlabelled rows in the attention
    clf = DIFFormerClassifier(**FAST, random_state=0).fit(X, y_semi)
    assert set(clf.classes_) == set(names)
    assert clf.transduction_.shape == (900,)
    assert clf.score(Xt, names[yt]) > 0.85
    assert np.mean(clf.transduction_[200:] == names[y[200:]]) > 0.85


def test_inductive_predict_is_independent_of_batching(digits):
    X, y, Xt, _ = digits
    clf = DIFFormerClassifier(**FAST, batch_size=50, random_state=0).fit(X[:300], y[:300])
    full = clf.predict_proba(Xt)
    perm = np.random.RandomState(1).permutation(len(Xt))
    np.testing.assert_allclose(clf.predict_proba(Xt[perm]), full[perm], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(clf.predict_proba(Xt[:7]), full[:7], rtol=1e-12, atol=1e-12)
    # on the CPU the rows go through a float64 copy of the network, so a row's probabilities
    # do not depend on how many rows share the call (float32 products round differently)
    one = np.vstack([clf.predict_proba(Xt[i:i + 1]) for i in range(5)])
    np.testing.assert_allclose(one, full[:5], rtol=1e-12, atol=1e-12)
    # a joint forward over X would depend on the other rows, and needs a model fitted with
    # a graph
    with pytest.raises(ValueError, match="fitted without a graph"):
        clf.predict_proba(Xt, adjacency=sp.eye(len(Xt), k=1, format="csr"))


@pytest.mark.parametrize("kernel,scope", [("advanced", "all"), ("softmax", "all"),
                                          ("softmax", "graph"), ("simple", "graph")])
def test_other_kernels_learn_the_planted_graph(planted, kernel, scope):
    X, y, A = planted
    y_semi = y.copy()
    y_semi[::2] = -1
    clf = DIFFormerClassifier(**FAST, kernel=kernel, attention_scope=scope, block_size=64,
                              random_state=0).fit(X, y_semi, adjacency=A)
    assert np.mean(clf.transduction_[::2] == y[::2]) > 0.75  # chance is 1/3
    assert clf.predict(X[1::2]).shape == (150,)  # inductive: new rows are isolated nodes


def test_predict_on_the_fitted_rows_without_their_adjacency_warns(planted):
    # fit(X, y, adjacency=A) then predict(X): every row becomes an isolated new node, a
    # likely slip that costs accuracy; the warning says what to pass instead
    X, y, A = planted
    y_semi = y.copy()
    y_semi[::2] = -1
    clf = DIFFormerClassifier(**FAST, random_state=0).fit(X, y_semi, adjacency=A)
    with pytest.warns(UserWarning, match="fitted on with an adjacency") as record:
        isolated = clf.predict(X)
    assert "adjacency to predict" in str(record[0].message)
    assert "transduction_" in str(record[0].message)
    assert record[0].filename == __file__  # it points at the caller's line
    joint = clf.predict(X, adjacency=A)
    acc_isolated, acc_joint = (np.mean(p[::2] == y[::2]) for p in (isolated, joint))
    assert acc_joint > acc_isolated + 0.05
    # no warning with the adjacency, on other rows, from a pickled copy's other rows, or
    # after a fit without a graph
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict(X, adjacency=A)
        clf.predict(X[:299])
        clf.predict(X + 1e-3)
        pickle.loads(pickle.dumps(clf)).predict(X[::-1])
        DIFFormerClassifier(**{**FAST, "max_epochs": 2}, random_state=0).fit(X, y).predict(X)
    with pytest.warns(UserWarning, match="fitted on with an adjacency"):
        pickle.loads(pickle.dumps(clf)).predict_proba(X)


def test_minibatch_training_with_induced_subgraphs(planted):
    X, y, A = planted
    y_semi = y.copy()
    y_semi[::2] = -1
    clf = DIFFormerClassifier(**FAST, batch_size=100, random_state=0).fit(X, y_semi,
                                                                          adjacency=A)
    assert clf.history_[-1, "train_batch_count"] == 3
    acc = np.mean(clf.predict(X, adjacency=A)[::2] == y[::2])
    assert acc > 0.7


# -- one graph under cross-validation ------------------------------------------------------
def _cv_score(X, y, A, seed=0):
    g = Graph(X, A)
    clf = DIFFormerClassifier(**FAST, random_state=seed)
    cv = StratifiedKFold(3, shuffle=True, random_state=seed)
    return cross_val_score(clf, g.node_ids(), y, cv=cv, params={"graph": g}).mean()


def test_graph_cross_validation_uses_edges(planted):
    X, y, A = planted  # features are pure noise: only the edges carry the labels
    assert _cv_score(X, y, A) > 0.85
    perm = np.random.RandomState(0).permutation(len(y))
    shuffled = A[perm][:, perm]  # same degrees, edges unrelated to the labels
    assert _cv_score(X, y, shuffled) < 0.45  # chance is 1/3


def test_graph_gridsearch_and_cache_not_stale(planted):
    X, y, A = planted
    g = Graph(X, A)
    assert not hasattr(g, "__len__") and not hasattr(g, "shape")  # sklearn must not slice it
    assert g.node_ids().shape == (300, 1) and repr(g).startswith("Graph(n_nodes=300")
    search = GridSearchCV(DIFFormerClassifier(**FAST, random_state=0),
                          {"graph_weight": [None, 0.0]}, cv=2)
    search.fit(g.node_ids(), y, graph=g)
    assert search.best_params_ == {"graph_weight": None}  # the graph term is what helps
    clf = DIFFormerClassifier(**FAST, random_state=0).fit(g.node_ids()[:150], y[:150], graph=g)
    p1 = clf.predict_proba(g.node_ids())
    g2 = Graph(X, A[np.random.RandomState(0).permutation(300)])
    assert not np.allclose(clf.predict_proba(g.node_ids(), graph=g2), p1)
    clf.fit(g2.node_ids()[:150], y[:150], graph=g2)  # refit: the cache follows the new graph
    np.testing.assert_allclose(clf.predict_proba(g.node_ids()),
                               clf.predict_proba(g.node_ids(), graph=g2), rtol=1e-5)
    S = clf.attention_graph(g.node_ids()[:10], k=5)
    assert S.shape == (10, 300) and S.getnnz(axis=1).tolist() == [5] * 10
    # attention restricted to the graph: the weights lie on a node's edges and itself
    local = DIFFormerClassifier(**FAST, random_state=0, attention_scope="graph").fit(
        g.node_ids()[:150], y[:150], graph=g)
    S = local.attention_graph(g.node_ids(), k=300)
    on_edges = (sp.csr_matrix(A) + sp.eye(300)) > 0
    assert np.asarray(on_edges[S.nonzero()]).all()
    np.testing.assert_allclose(np.asarray(S.sum(1)).ravel(), 1.0, rtol=1e-5)


# -- scikit-learn integration --------------------------------------------------------------
def test_pipeline_with_metadata_routing(planted):
    X, y, A = planted
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(
            StandardScaler(),
            DIFFormerClassifier(**FAST, random_state=0).set_fit_request(adjacency=True)
            .set_predict_request(adjacency=True))
        pipe.fit(X, y, adjacency=A)
        with_graph = np.mean(pipe.predict(X, adjacency=A) == y)
    no_graph = DIFFormerClassifier(**FAST, random_state=0).fit(X, y).score(X, y)
    assert with_graph > 0.95 and with_graph > no_graph


def test_score_takes_the_adjacency_and_graph_through_metadata_routing(planted):
    """score declares predict's adjacency and graph, so set_score_request routes them:
    Pipeline.score with the adjacency is the estimator's score with it (0.82 on these rows,
    0.60 without it); a routed cross-validation of a graph-mode fit scores on the graph
    without a score request, as without routing."""
    X, y, A = make_planted_partition(150, 3, p_in=0.08, p_out=0.01, random_state=0)
    est = DIFFormerClassifier(n_layers=2, max_epochs=30, device="cpu", random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(StandardScaler(), clone(est).set_fit_request(adjacency=True)
                             .set_score_request(adjacency=True))
        pipe.fit(X, y, adjacency=A)
        routed = pipe.score(X, y, adjacency=A)
        Z = pipe[0].transform(X)
        assert routed == pipe[-1].score(Z, y, adjacency=A) == \
            np.mean(pipe[-1].predict(Z, adjacency=A) == y)
        with pytest.warns(UserWarning, match="predict received none"):
            assert pipe[-1].score(Z, y) < routed - 0.1
        g, cv = Graph(X, A), StratifiedKFold(3, shuffle=True, random_state=0)
        small = DIFFormerClassifier(n_layers=1, max_epochs=10, device="cpu", random_state=0)
        on_graph = cross_val_score(clone(small).set_fit_request(graph=True), g.node_ids(), y,
                                   cv=cv, params={"graph": g})
    np.testing.assert_array_equal(
        on_graph, cross_val_score(small, g.node_ids(), y, cv=cv, params={"graph": g}))


def test_clone_pickle_joblib_and_seed(digits, tmp_path):
    X, y, Xt, _ = digits
    clf = DIFFormerClassifier(**FAST, random_state=3).fit(X[:200], y[:200])
    again = clone(clf).fit(X[:200], y[:200])
    np.testing.assert_array_equal(again.predict_proba(Xt), clf.predict_proba(Xt))
    loaded = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(loaded.predict_proba(Xt), clf.predict_proba(Xt))
    joblib.dump(clf, tmp_path / "m.joblib")
    np.testing.assert_array_equal(joblib.load(tmp_path / "m.joblib").predict(Xt),
                                  clf.predict(Xt))


def test_threads_sharing_a_fitted_model_or_fitting_clones_get_the_lone_results():
    """Threads (a web service, joblib's threading backend) share torch's generator and the
    fitted network with its cached float64 copy: a fit or sampler of one thread gives the
    numbers it gives alone, and predict_proba while another thread samples is the prediction."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(150, 5))
    y = (X[:, 0] + 0.5 * rng.normal(size=150) > 0).astype(int)
    est = DIFFormerClassifier(n_layers=2, hidden_dim=16, max_epochs=10, dropout=0.3,
                              device="cpu", random_state=0)
    fitted = clone(est).fit(X, y)
    ref = fitted.predict_proba(X)
    with ThreadPoolExecutor(2) as ex:
        fits = list(ex.map(lambda _: clone(est).fit(X, y).predict_proba(X), range(2)))
    assert all(np.array_equal(p, ref) for p in fits)
    probas, draws, lone = predictions_while_sampling(fitted, fitted.predict_proba, X, 40, 20)
    assert sum(not np.array_equal(p, ref) for p in probas) == 0
    assert draws and all(np.array_equal(d, lone) for d in draws)


def test_the_fitted_caches_follow_weights_loaded_through_the_net(planted, tmp_path):
    import copy

    from skorch.callbacks import Checkpoint

    X, y, A = planted
    kw = dict(FAST, dropout=0.1, random_state=0, label_propagation=False)
    short = DIFFormerClassifier(**{**kw, "max_epochs": 3}).fit(X[:200], y[:200])
    short.net_.save_params(f_params=tmp_path / "short.pt")
    expected = short.predict_proba(X[200:])
    # the same weights loaded back, a pickle and a copy: the summaries still hold
    short.net_.load_params(f_params=tmp_path / "short.pt")
    for same in (short, pickle.loads(pickle.dumps(short)), copy.deepcopy(short)):
        np.testing.assert_array_equal(same.predict_proba(X[200:]), expected)
    # other weights: summaries_ (of the fitted weights) would be mixed with them
    long = DIFFormerClassifier(**kw).fit(X[:200], y[:200])
    long.net_.load_params(f_params=tmp_path / "short.pt")
    message = (r"^The weights of DIFFormerClassifier's network changed after fit \(e\.g\. by "
               r"net_\.load_params\), but inductive prediction attends to summaries_, .* "
               r"Refit \(to end a fit on a skorch Checkpoint's weights, pass "
               r"Checkpoint\(load_best=True\) in callbacks\), or move the whole fitted "
               r"estimator \(save/load or pickle\) rather than the network's weights\.$")
    for method in (long.predict, long.predict_proba, long.sample_posterior):
        with pytest.raises(RuntimeError, match=message):
            method(X[200:])
    with pytest.raises(RuntimeError, match=message):
        pickle.loads(pickle.dumps(long)).predict(X[200:])
    # graph mode keeps the graph: its full-graph forward follows the loaded weights
    g = Graph(X, A)
    ids = g.node_ids()
    g_short = DIFFormerClassifier(**{**kw, "max_epochs": 3}).fit(ids[:150], y[:150], graph=g)
    g_short.net_.save_params(f_params=tmp_path / "g_short.pt")
    g_long = DIFFormerClassifier(**kw).fit(ids[:150], y[:150], graph=g)
    assert np.abs(g_long.predict_proba(ids) - g_short.predict_proba(ids)).max() > 0.1
    g_long.net_.load_params(f_params=tmp_path / "g_short.pt")
    np.testing.assert_array_equal(g_long.predict_proba(ids), g_short.predict_proba(ids))
    # a Checkpoint's best weights loaded inside fit are the ones the summaries are made of
    cp = Checkpoint(dirname=str(tmp_path / "cp"), monitor="train_loss_best", load_best=True)
    best = DIFFormerClassifier(**kw, callbacks=[cp]).fit(X[:200], y[:200])
    assert best.predict_proba(X[200:]).shape == (100, 3)
    # a failed warm start restores the weights it started from (same values, new versions)
    warm = DIFFormerClassifier(**{**kw, "max_epochs": 3}, warm_start=True).fit(X[:200], y[:200])
    before = warm.predict_proba(X[200:])
    with pytest.raises(ValueError, match="has 5 features"):
        warm.fit(X[:200, :5], y[:200])
    np.testing.assert_array_equal(warm.predict_proba(X[200:]), before)


def test_sample_posterior_is_calibrated_on_held_out_rows(digits):
    X, y, Xt, yt = digits
    clf = DIFFormerClassifier(**{**FAST, "hidden_dim": 64}, dropout=0.1,
                              random_state=0).fit(X[:150], y[:150])
    S = clf.sample_posterior(Xt, n_samples=40, random_state=0)
    assert S.shape == (len(Xt), 10, 40)
    np.testing.assert_allclose(S.sum(1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(S, clf.sample_posterior(Xt, n_samples=40, random_state=0))
    mean = S.mean(-1)
    pred, conf = mean.argmax(1), mean.max(1)
    correct = pred == yt
    # expected calibration error of the MC mean over 10 confidence bins
    bins = np.minimum((conf * 10).astype(int), 9)
    ece = sum(abs(conf[bins == b].mean() - correct[bins == b].mean()) * np.mean(bins == b)
              for b in np.unique(bins))
    assert ece < 0.1
    spread = S[np.arange(len(yt)), pred].std(-1)  # MC std of the predicted class
    assert 0.8 < correct.mean() < 1.0
    assert spread[~correct].mean() > 1.5 * spread[correct].mean()


def test_warm_start_continues_training(digits):
    X, y, _, _ = digits
    clf = DIFFormerClassifier(**{**FAST, "max_epochs": 5}, early_stopping=False, warm_start=True,
                              random_state=0).fit(X[:200], y[:200])
    first = clf.history_[-1, "train_loss"]
    clf.fit(X[:200], y[:200])
    assert len(clf.history_) == 10 and clf.history_[-1, "train_loss"] < first


def test_partial_fit_trains_one_epoch_per_call(digits):
    X, y, _, _ = digits
    clf = DIFFormerClassifier(**{**FAST, "max_epochs": 50}, early_stopping=False, random_state=0)
    clf.partial_fit(X[:200], y[:200])
    assert len(clf.history_) == 1
    first = clf.history_[-1, "train_loss"]
    for _ in range(9):
        clf.partial_fit(X[:200], y[:200])
    assert len(clf.history_) == 10 and clf.history_[-1, "train_loss"] < first
    # reproducible: the same calls with the same seed give the same model
    again = DIFFormerClassifier(**{**FAST, "max_epochs": 50}, early_stopping=False,
                                random_state=0)
    for _ in range(10):
        again.partial_fit(X[:200], y[:200])
    np.testing.assert_array_equal(clf.predict_proba(X[200:260]), again.predict_proba(X[200:260]))
    with pytest.raises(ValueError, match="partial_fit needs the same classes"):
        clf.partial_fit(X[:200], y[:200], classes=np.arange(11))
    # a call whose y lacks a class keeps the output layer when classes are given up front
    part = DIFFormerClassifier(**FAST, early_stopping=False, random_state=0)
    part.partial_fit(X[:200][y[:200] != 9], y[:200][y[:200] != 9], classes=np.arange(10))
    part.partial_fit(X[:200], y[:200])
    assert part.predict_proba(X[:5]).shape == (5, 10)
    # classes third, as scikit-learn's partial_fit(X, y, classes)
    positional = DIFFormerClassifier(**FAST, early_stopping=False, random_state=0)
    positional.partial_fit(X[:200][y[:200] != 9], y[:200][y[:200] != 9], np.arange(10))
    np.testing.assert_array_equal(positional.classes_, np.arange(10))


def test_partial_fit_drops_the_unlabelled_marker_from_classes():
    # classes=np.unique(y), scikit-learn's idiom, lists the marker of semi-supervised y: it
    # is dropped with a warning, so partial_fit gets fit's classes and never predicts -1
    rng = np.random.RandomState(0)
    X = rng.randn(60, 4)
    y = (X[:, 0] > 0).astype(int)
    y[20:] = -1
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=2, device="cpu", random_state=0)
    clf = DIFFormerClassifier(**kw)
    with pytest.warns(UserWarning, match=r"^'classes' lists -1, the `unlabelled` marker, "
                      r"which marks unlabelled rows and is not a class: it was dropped from "
                      r"'classes'\. Pass unlabelled=None if -1 is a class\.$") as record:
        clf.partial_fit(X, y, classes=np.unique(y))
    assert record[0].filename == __file__
    assert clf.classes_.tolist() == [0, 1]
    assert clf.predict_proba(X).shape == (60, 2)
    assert set(clf.predict(X).tolist()) <= {0, 1}
    with pytest.warns(UserWarning, match="dropped from 'classes'"):
        clf.partial_fit(X, y, classes=np.unique(y))  # a later call with the same idiom
    assert clf.classes_.tolist() == [0, 1]
    # a string marker is dropped alike; with unlabelled=None -1 is a class
    names = np.array(["", "a", "b"])[y + 1]
    with pytest.warns(UserWarning, match="'classes' lists '', the `unlabelled` marker"):
        strings = DIFFormerClassifier(**kw, unlabelled="").partial_fit(
            X, names, classes=np.unique(names))
    assert strings.classes_.tolist() == ["a", "b"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        every = DIFFormerClassifier(**kw, unlabelled=None).partial_fit(X, y,
                                                                       classes=np.unique(y))
    assert every.classes_.tolist() == [-1, 0, 1]


def test_one_class_left_by_the_marker_names_the_marker():
    # labels {-1, 1} (make_hastie_10_2): -1 is the unlabelled marker, which leaves one class;
    # the error says so, with the class printed as a plain number
    from sklearn.datasets import make_hastie_10_2

    X, y = make_hastie_10_2(200, random_state=0)
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=2, device="cpu", random_state=0)
    with pytest.warns(UserWarning, match="pass unlabelled=None") as record, \
            pytest.raises(ValueError, match=r"^y contains only one class \(1\.0\) among the "
                          r"labelled rows \(104 rows are -1, the `unlabelled` marker, and were "
                          r"taken as unlabelled; pass unlabelled=None if -1 is a class\); "
                          r"DIFFormerClassifier needs at least 2 classes\.$"):
        DIFFormerClassifier(**kw).fit(X, y)
    assert str(record[0].message) == (
        "104 rows have the label -1, which marks unlabelled rows (excluded from the loss), "
        "beside 1 class of 96 rows: if -1 is a genuine class, pass unlabelled=None.")
    # one marked row is a missing label, not a class: no warning, the error names the marker
    one = np.where(np.arange(200) == 0, -1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(ValueError, match=r"^y contains only one class \(1\) among the "
                           r"labelled rows \(1 row is -1, the `unlabelled` marker, and was "
                           r"taken as "):
            DIFFormerClassifier(**kw).fit(X, one)
    with pytest.raises(ValueError, match=r"^y contains only one class \('a'\) among the "
                       r"labelled rows; DIFFormerClassifier needs"):
        DIFFormerClassifier(**kw).fit(X, np.array(["a"] * 200))
    assert DIFFormerClassifier(**kw, unlabelled=None).fit(X, y).classes_.tolist() == [-1, 1]


def test_the_marker_warns_only_when_as_frequent_as_a_class():
    # the marked rows among the class sizes (at most twice the largest, at least the
    # smallest or half the mean, at least 2 rows) look like a genuine class; a few marked
    # rows among many labelled ones are missing labels (y.fillna(-1)) and draw no warning
    from sklearn.datasets import make_hastie_10_2

    from skdiff._checks import split_unlabelled, warn_if_marker_looks_like_a_class

    def messages(y, marker=-1):
        y = np.asarray(y)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            warn_if_marker_looks_like_a_class(y, split_unlabelled(y, marker), marker)
        return [str(w.message) for w in record]

    _, hastie = make_hastie_10_2(random_state=0)  # 6068 of the 12000 rows are -1
    assert messages(hastie) == [
        "6068 rows have the label -1, which marks unlabelled rows (excluded from the loss), "
        "beside 1 class of 5932 rows: if -1 is a genuine class, pass unlabelled=None."]
    assert messages(np.arange(60) % 3 - 1) == [
        "20 rows have the label -1, which marks unlabelled rows (excluded from the loss), "
        "beside 2 classes of 20 rows each: if -1 is a genuine class, pass unlabelled=None."]
    assert messages(np.r_[[-1] * 12, [0] * 8, [1] * 16]) == [
        "12 rows have the label -1, which marks unlabelled rows (excluded from the loss), "
        "beside 2 classes of 8-16 rows: if -1 is a genuine class, pass unlabelled=None."]
    # a minority class -1 as large as the smallest class
    assert messages(np.r_[[-1] * 30, [0] * 30, [1] * 300]) == [
        "30 rows have the label -1, which marks unlabelled rows (excluded from the loss), "
        "beside 2 classes of 30-300 rows: if -1 is a genuine class, pass unlabelled=None."]
    one_of_40 = np.arange(40) % 2
    one_of_40[7] = -1  # 1 marked row beside classes of 20 and 19
    forty_of_1000 = np.arange(1000) % 3
    forty_of_1000[:40] = -1  # 40 marked rows beside classes of 320
    three_of_108 = np.r_[[-1] * 3, [0] * 5, [1] * 100]
    for y in (one_of_40, forty_of_1000, three_of_108):
        assert messages(y) == []
    # through fit: 1 marked row of 40 trains without a warning
    X = np.random.RandomState(0).randn(40, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        clf = DIFFormerClassifier(n_layers=1, hidden_dim=8, max_epochs=2, device="cpu",
                                  random_state=0).fit(X, one_of_40)
    assert clf.classes_.tolist() == [0, 1]


def test_the_marker_looks_like_a_class_warning_points_at_the_callers_line():
    # labels {-1, 0, 1} with -1 as frequent as the classes: the warning names this file (the
    # caller's line) from fit, partial_fit, a Pipeline's fit and cross_val_score, not a
    # line inside skdiff, scikit-learn or joblib
    rng = np.random.RandomState(0)
    X = rng.randn(60, 4)
    y = np.arange(60) % 3 - 1
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=2, device="cpu", random_state=0)
    calls = [lambda: DIFFormerClassifier(**kw).fit(X, y),
             lambda: DIFFormerClassifier(**kw).partial_fit(X, y),
             lambda: make_pipeline(StandardScaler(), DIFFormerClassifier(**kw)).fit(X, y),
             lambda: cross_val_score(DIFFormerClassifier(**kw), X, y, cv=2)]
    for n_fits, call in zip([1, 1, 1, 2], calls):
        with pytest.warns(UserWarning, match="if -1 is a genuine class") as record:
            call()
        assert [w.filename for w in record] == [__file__] * n_fits


def test_early_stopping_on_two_rows_trains_on_both():
    # a validation split of two rows would train on one row of one class (predicting
    # [1, 0] for y = [0, 1]); with no split both rows train, as without early stopping
    X = np.random.RandomState(0).randn(2, 4)
    y = np.array([0, 1])
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=60, random_state=0, device="cpu")
    stopped = DIFFormerClassifier(**kw, early_stopping=True).fit(X, y)
    plain = DIFFormerClassifier(**kw, early_stopping=False).fit(X, y)
    assert stopped.predict(X).tolist() == plain.predict(X).tolist() == [0, 1]
    assert "valid_loss" not in stopped.history_[-1]


def test_a_class_the_split_would_hold_out_whole_stays_on_the_training_side():
    # 30 labelled rows, one of them the only row of class 2 (too few to stratify): the
    # random split of seed 5 holds it out, so that row goes back to the training side; the
    # splits that keep every class are train_test_split's as before
    from sklearn.model_selection import train_test_split

    from skdiff._base import FitData

    strata = np.r_[np.zeros(15, int), np.ones(14, int), 2]
    clf = DIFFormerClassifier(early_stopping=True)
    for seed in range(10):
        clf.seed_ = seed
        train, valid = clf._validation_rows(FitData(rows=np.arange(30), strata=strata))
        tr, va = train_test_split(np.arange(30), test_size=3, random_state=seed)
        if 29 in va:
            assert seed == 5 and train.tolist() == sorted([*tr, 29])
            assert valid.tolist() == sorted(set(va) - {29})
        else:
            assert train.tolist() == sorted(tr) and valid.tolist() == sorted(va)


# -- errors ----------------------------------------------------------------------------------
def test_bad_inputs_are_clear_errors(planted):
    X, y, A = planted
    clf = DIFFormerClassifier(**{**FAST, "max_epochs": 1})
    with pytest.raises(ValueError, match="Input X contains NaN"):
        clf.fit(np.where(np.eye(300, 32) > 0, np.nan, X), y)
    with pytest.raises(ValueError, match=r"'adjacency' has shape \(299, 299\).*\(300, 300\)"):
        clf.fit(X, y, adjacency=A[:299, :299])
    with pytest.raises(ValueError, match="'adjacency' must be square"):
        clf.fit(X, y, adjacency=A[:, :299])
    with pytest.raises(ValueError, match="'adjacency' has negative entries"):
        clf.fit(X, y, adjacency=-A)


def test_an_adjacency_split_with_the_rows_names_the_graph_recipe(planted):
    """cross_validate slices the rows of a sample-aligned adjacency, not its columns, and a
    split of X leaves it whole: both errors say so and give the Graph recipe."""
    from sklearn.model_selection import cross_validate

    X, y, A = planted
    clf = DIFFormerClassifier(**{**FAST, "max_epochs": 1})
    recipe = (r"An adjacency among the rows of X is not split with them: a cross-validation "
              r"\(cross_validate, GridSearchCV, params=\{'adjacency': A\}\) slices its rows but "
              r"not its columns, and a split of X leaves it whole\. For a subset of the rows, "
              r"slice it as A\[rows\]\[:, rows\]; to cross-validate over one graph, build it "
              r"once over all the rows, g = skdiff\.Graph\(X, A\), and pass its node ids as X "
              r"with the graph: cross_validate\(est, g\.node_ids\(\), y, "
              r"params=\{'graph': g\}\)\.$")
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    with pytest.raises(ValueError, match=r"^'adjacency' must be square; got shape \(200, 300\): "
                       r"one row for each of the 200 rows of X but 300 columns\. " + recipe):
        cross_validate(clf, X, y, cv=cv, params={"adjacency": A}, error_score="raise")
    with pytest.raises(ValueError, match=r"^'adjacency' has shape \(300, 300\) but there are 200 "
                       r"rows of X: it must be \(200, 200\)\. " + recipe):
        clf.fit(X[:200], y[:200], adjacency=A)
    # other wrong shapes keep the plain message
    with pytest.raises(ValueError, match=r"^'adjacency' has shape \(299, 299\) but there are 300 "
                       r"rows of X: it must be \(300, 300\)\.$"):
        clf.fit(X, y, adjacency=A[:299, :299])
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(X, np.where(np.arange(300) < 10, 1, -1))
    with pytest.raises(ValueError, match="no labelled rows"):
        clf.fit(X, np.full(300, -1))
    with pytest.raises(ValueError, match="'kernel' parameter .* Got 'linear'"):
        clone(clf).set_params(kernel="linear").fit(X, y)
    with pytest.raises(ValueError, match="'qk_norm' parameter"):
        clone(clf).set_params(qk_norm="frobenius").fit(X, y)
    with pytest.raises(ValueError, match=r"^attention_scope='graph' attends along the edges of "
                                         r"a graph: pass 'adjacency' \(or 'graph'\) to fit, or "
                                         r"set n_neighbors to an int \(a k-nearest-neighbour "
                                         r"graph built by fit\), or use attention_scope='all'\.$"):
        clone(clf).set_params(attention_scope="graph", n_neighbors=None).fit(X, y)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="'device' parameter is 'cuda' but CUDA is not"):
            clone(clf).set_params(device="cuda").fit(X, y)
    g = Graph(X, A)
    clf = DIFFormerClassifier(**{**FAST, "max_epochs": 1})
    with pytest.raises(ValueError, match=r"X must be a column of integer node ids.*\(300, 32\)"):
        clf.fit(X, y, graph=g)
    with pytest.raises(ValueError, match=r"Node ids must lie in \[0, 300\).*to 300"):
        clf.fit(np.arange(1, 301)[:, None], y, graph=g)
    with pytest.raises(TypeError, match="'graph' must be a skdiff.Graph; got tuple"):
        clf.fit(g.node_ids(), y, graph=(X, A))
    with pytest.raises(ValueError, match="either 'graph' .* not both"):
        clf.fit(g.node_ids(), y, A, graph=g)
    fitted = clone(clf).fit(g.node_ids(), y, graph=g)
    for method in (fitted.predict, fitted.predict_proba, fitted.sample_posterior):
        with pytest.raises(ValueError, match="either 'graph' .* not both"):
            method(g.node_ids(), adjacency=A, graph=g)
    # graph mode takes node ids: an adjacency at prediction (with feature rows, or with the
    # ids) is refused by name, for attention_graph too
    for method in (fitted.predict, fitted.predict_proba, fitted.sample_posterior,
                   fitted.attention_graph):
        for rows in (X, g.node_ids()):
            with pytest.raises(ValueError, match="fitted in graph mode .* got an 'adjacency'"):
                method(rows, adjacency=A)
    with pytest.raises(ValueError, match="either 'graph' .* not both"):
        fitted.attention_graph(g.node_ids(), adjacency=A, graph=g)
    with pytest.raises(ValueError, match="'validation_mask' must be a boolean array"):
        clf.fit(X, y, validation_mask=np.arange(10))
    with pytest.raises(ValueError, match="'adjacency' contains NaN"):
        Graph(X, A * np.nan)
    with pytest.raises(ValueError, match="'n_samples' must be an integer >= 1"):
        clf.fit(X, y).sample_posterior(X, n_samples=0)


def test_an_adjacency_may_be_a_torch_tensor_dense_or_sparse(planted):
    X, y, A = planted
    A = sp.csr_matrix(A)
    kw = dict(FAST, max_epochs=3, random_state=0)
    ref = DIFFormerClassifier(**kw).fit(X, y, adjacency=A)
    expected = ref.predict_proba(X[:100], adjacency=A[:100, :100])
    dense = torch.tensor(A.toarray())
    for At in (dense, dense.to_sparse(), dense.to_sparse_csr(), dense.float()):
        clf = DIFFormerClassifier(**kw).fit(X, y, adjacency=At)
        np.testing.assert_array_equal(clf.predict_proba(X[:100], adjacency=At[:100, :100]
                                                        if At.layout == torch.strided
                                                        else A[:100, :100]), expected)
    np.testing.assert_array_equal(ref.predict_proba(X[:100], adjacency=dense[:100, :100]
                                                    .to_sparse()), expected)
    g = Graph(X, dense.to_sparse_csr())
    assert (g.adjacency != Graph(X, A).adjacency).nnz == 0
    with pytest.raises(ValueError, match="'adjacency' holds complex numbers"):
        DIFFormerClassifier(**kw).fit(X, y, adjacency=dense.to(torch.complex64))
    with pytest.raises(ValueError, match=r"'adjacency' must be 2-D \(n, n\); got an array of "
                                         r"shape \(1, 300, 300\)"):
        DIFFormerClassifier(**kw).fit(X, y, adjacency=dense[None].to_sparse())


def test_an_adjacency_at_predict_needs_a_model_fitted_with_a_graph(planted):
    # the joint forward adds the graph term (and every row's self-loop): a network trained
    # without one would get a term it never learnt, so the adjacency is refused
    from skdiff import DIFFormerRegressor

    X, y, A = planted
    kw = dict(FAST, max_epochs=3, random_state=0)
    plain = DIFFormerClassifier(**kw, n_neighbors=None).fit(X, y)
    empty = sp.csr_matrix((300, 300))
    message = (r"^DIFFormerClassifier was fitted without a graph, so its network has no "
               r"trained graph term; got an 'adjacency'\. Leave adjacency=None to predict "
               r"each row from the training rows, or fit with an adjacency among the training "
               r"rows \(or n_neighbors, a k-nearest-neighbour graph\) to predict with one\.$")
    score = lambda X, adjacency: plain.score(X, y, adjacency=adjacency)  # noqa: E731
    for method in (plain.predict, plain.predict_proba, plain.sample_posterior,
                   plain.attention_graph, score):
        for adjacency in (A, empty):
            with pytest.raises(ValueError, match=message):
                method(X, adjacency=adjacency)
    reg = DIFFormerRegressor(**kw).fit(X, y.astype(float))
    with pytest.raises(ValueError, match=r"fitted without a graph.* training rows to predict "
                                         r"with one\.$"):
        reg.predict(X, adjacency=A)
    # a graph of fit, given or built by n_neighbors, makes the joint forward the model's own
    y_semi = np.where(np.arange(300) % 4 == 0, y, -1)
    knn = DIFFormerClassifier(**kw, n_neighbors=5).fit(X, y_semi)
    assert knn.n_neighbors_ == 5 and knn.predict_proba(X, adjacency=A).shape == (300, 3)
    given = DIFFormerClassifier(**kw).fit(X, y, adjacency=A)
    assert given.predict_proba(X, adjacency=empty).shape == (300, 3)


def test_graph_scoped_attention_runs_along_the_edges_of_the_neighbours_graph(planted):
    from sklearn.neighbors import kneighbors_graph

    X, y, _ = planted
    X, y = X[:120], y[:120]
    kw = dict(FAST, max_epochs=3, feature_scaling=None, random_state=0)
    y_semi = np.where(np.arange(120) % 4 == 0, y, -1)
    for n_neighbors, labels, k in [(5, y_semi, 5), ("auto", y, 10)]:
        clf = DIFFormerClassifier(**kw, n_neighbors=n_neighbors,
                                  attention_scope="graph").fit(X, labels)
        assert clf.n_neighbors_ == k
        knn = kneighbors_graph(X, k)
        edges = ((knn + knn.T + sp.eye(120)) > 0).toarray()
        S = clf.attention_graph(X, adjacency=knn, k=120)
        # every row's weights lie on its edges (itself included) and sum to 1
        assert edges[S.nonzero()].all() and S.nnz == edges.sum()
        np.testing.assert_allclose(np.asarray(S.sum(1)).ravel(), 1.0, rtol=1e-5)
        assert clf.predict_proba(X[:5]).shape == (5, 3)


def test_early_stopping_auto_needs_many_labelled_rows_or_given_validation_rows(
        planted, monkeypatch):
    import skdiff._base

    X, y, A = planted
    kw = dict(FAST, max_epochs=3, random_state=0)
    auto = DIFFormerClassifier(**kw).fit(X, y, adjacency=A)
    assert auto.early_stopping_ is False and "valid_loss" not in auto.history_[-1]
    on = DIFFormerClassifier(**kw, early_stopping=True).fit(X, y, adjacency=A)
    assert on.early_stopping_ is True and "valid_loss" in on.history_[-1]
    mask = np.arange(len(y)) % 5 == 0
    given = DIFFormerClassifier(**kw).fit(X, y, adjacency=A, validation_mask=mask)
    assert given.early_stopping_ is True and "valid_loss" in given.history_[-1]
    monkeypatch.setattr(skdiff._base, "AUTO_EARLY_STOPPING_ROWS", len(y))
    many = DIFFormerClassifier(**kw).fit(X, y, adjacency=A)
    assert many.early_stopping_ is True and "valid_loss" in many.history_[-1]


def test_auto_dropout_is_off_for_fully_labelled_rows_only(planted):
    X, y, A = planted
    kw = dict(FAST, max_epochs=2, random_state=0)
    assert DIFFormerClassifier(**kw).fit(X, y).dropout_ == 0.0
    y_semi = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    assert DIFFormerClassifier(**kw).fit(X, y_semi).dropout_ == 0.2  # unlabelled rows
    assert DIFFormerClassifier(**kw).fit(X, y, adjacency=A).dropout_ == 0.2  # a graph
    g = Graph(X, A)
    assert DIFFormerClassifier(**kw).fit(g.node_ids(), y, graph=g).dropout_ == 0.2
    assert DIFFormerClassifier(**kw, dropout=0.35).fit(X, y).dropout_ == 0.35
    assert DIFFormerClassifier(**kw, dropout=0.0).fit(X, y_semi).dropout_ == 0.0
    assert DIFFormerClassifier(**kw).fit(X, y).module_.dropout.p == 0.0
    with pytest.raises(ValueError, match=r"'dropout' parameter.*'auto'.*Got 'high'"):
        DIFFormerClassifier(**kw, dropout="high").fit(X, y)


def test_auto_dropout_fits_nonlinear_fully_labelled_data():
    """Two noisy concentric circles, every row labelled (the defaults benchmark's circles
    row): with dropout 0.2 on each of four layers the network underfits (test accuracy
    0.72); ``"auto"`` trains it without dropout and separates them as well as gradient
    boosting (0.99). (With one layer, the default depth on a table, dropout does not hurt
    here: 0.99 either way.)"""
    from sklearn.datasets import make_circles
    from sklearn.model_selection import train_test_split

    X, y = make_circles(1000, noise=0.1, factor=0.5, random_state=404)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    auto = DIFFormerClassifier(n_layers=4, random_state=0, device="cpu").fit(Xtr, ytr)
    assert auto.score(Xte, yte) > 0.97
    old = DIFFormerClassifier(n_layers=4, dropout=0.2, random_state=0, device="cpu").fit(
        Xtr, ytr)
    assert old.score(Xte, yte) < 0.9
    default = DIFFormerClassifier(random_state=0, device="cpu").fit(Xtr, ytr)
    assert default.n_layers_ == 1 and default.dropout_ == 0 and default.score(Xte, yte) > 0.97
    # a semi-supervised table gets its 10-nearest-neighbour graph, and four layers over it
    semi = DIFFormerClassifier(max_epochs=2, random_state=0, device="cpu").fit(
        Xtr, np.where(np.arange(len(ytr)) % 2 == 0, ytr, -1))
    assert semi.n_neighbors_ == 10 and semi.n_layers_ == 4 and semi.module_.n_layers == 4


def test_sample_posterior_without_dropout_warns_and_repeats_the_prediction(planted):
    X, y, _ = planted
    clf = DIFFormerClassifier(**FAST, random_state=0).fit(X, y)
    assert clf.dropout_ == 0.0
    with pytest.warns(UserWarning, match=r"without dropout \(dropout_=0.*Set dropout above 0"):
        S = clf.sample_posterior(X[:5], n_samples=3, random_state=0)
    assert S.shape == (5, 3, 3)
    np.testing.assert_allclose(S, np.repeat(clf.predict_proba(X[:5])[..., None], 3, -1),
                               rtol=1e-6)


def test_validation_mask_of_no_labelled_row_is_refused(planted):
    X, y, A = planted
    y_semi = np.where(np.arange(len(y)) % 2 == 0, y, -1)
    clf = DIFFormerClassifier(**dict(FAST, max_epochs=2, random_state=0))
    for mask in (y_semi == -1, np.zeros(len(y), bool)):
        with pytest.raises(ValueError, match=rf"'validation_mask' marks {mask.sum()} rows, "
                                             r"none of them labelled.*validation_mask=None"):
            clf.fit(X, y_semi, adjacency=A, validation_mask=mask)


def test_a_labelled_row_of_weight_zero_is_an_unlabelled_row_without_a_graph():
    # the automatic k-NN graph and label propagation of a semi-supervised fit take the
    # rows of weight 0 as unlabelled, as the loss does
    X, y = load_digits(return_X_y=True)
    X, y = X[:300], y[:300]
    hidden = np.arange(300) % 3 == 0
    kw = dict(FAST, max_epochs=5, random_state=0)
    weighted = DIFFormerClassifier(**kw).fit(X, y, sample_weight=(~hidden).astype(float))
    masked = DIFFormerClassifier(**kw).fit(X, np.where(hidden, -1, y))
    assert weighted.n_neighbors_ == masked.n_neighbors_ > 0
    assert weighted.label_propagation_ == masked.label_propagation_
    np.testing.assert_allclose(weighted.predict_proba(X), masked.predict_proba(X), atol=1e-6)


@pytest.mark.parametrize("fit_sparse", [False, True])
def test_features_scale_alike_whether_sparse_or_dense(fit_sparse):
    # the standardisation is the one fitted (centred after a dense fit, divided only after a
    # sparse one), whatever the format of the features given to predict
    from skdiff import DIFFormerRegressor

    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 6))
    X[X < 0.3] = 0.0
    X[:, 0] -= 0.5  # negative values: "standard" scaling
    y = (X[:, 1] > 0.5).astype(int)
    fit_X = sp.csr_matrix(X) if fit_sparse else X
    kw = dict(FAST, max_epochs=3, random_state=0)
    clf = DIFFormerClassifier(**kw).fit(fit_X, y)
    reg = DIFFormerRegressor(**kw).fit(fit_X, 2.0 * X[:, 1])
    assert clf.feature_scaling_ == reg.feature_scaling_ == "standard"
    # equal up to float32 rounding (a sparse input runs sparse products)
    np.testing.assert_allclose(clf.predict_proba(X), clf.predict_proba(sp.csr_matrix(X)),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(reg.predict(X), reg.predict(sp.csr_matrix(X)), rtol=1e-5,
                               atol=1e-7)


def test_auto_feature_scaling_row_normalises_only_columns_of_one_scale():
    # bag-of-words (binary or counts) is row-normalised, as the paper; sparse non-negative
    # columns in different units (indicators beside an income) are standardised, and the
    # model then does not depend on those units
    from skdiff.difformer._data import FeatureScaling

    rng = np.random.RandomState(0)
    words = (rng.rand(300, 50) < 0.05) * 1.0
    assert FeatureScaling("auto").fit(sp.csr_matrix(words)).how_ == "row"
    assert FeatureScaling("auto").fit(words * rng.randint(1, 20, size=50)).how_ == "row"
    X = np.abs(rng.normal(size=(400, 6))) * (rng.rand(400, 6) < 0.5)
    y = (X[:, 0] > X[:, 1]).astype(int)
    scores = []
    for units in ([1.0] * 6, [1, 1, 1, 1, 1, 1e6], [1e-6, 1e-6, 1, 1, 1, 1]):
        Xs = sp.csr_matrix(X * units)
        clf = DIFFormerClassifier(**{**FAST, "max_epochs": 20}, random_state=0).fit(
            Xs[:300], y[:300])
        scores.append((clf.feature_scaling_, clf.predict_proba(Xs[300:])))
    assert [how for how, _ in scores] == ["row", "standard", "standard"]
    np.testing.assert_allclose(scores[1][1], scores[2][1], rtol=1e-4, atol=1e-6)


def test_prediction_takes_repeated_node_ids_on_any_graph():
    """fit refuses a node listed twice (two labels for one sample); prediction answers each
    row, so a repeated id gets the same answer twice, on the fitted graph, on another Graph
    object with the same nodes, in sample_posterior and in attention_graph."""
    from skdiff import DIFFormerRegressor

    X, y, A = make_planted_partition(60, 3, p_in=0.2, p_out=0.02, random_state=0)
    g, same = Graph(X, A), Graph(X, A)
    kw = dict(n_layers=1, hidden_dim=8, max_epochs=3, random_state=0)
    clf = DIFFormerClassifier(**kw, label_propagation=False).fit(g.node_ids()[:40], y[:40],
                                                                 graph=g)
    ids, once = np.array([[5], [5], [7]]), np.array([[5], [7]])
    expected = clf.predict_proba(once)[[0, 0, 1]]
    np.testing.assert_array_equal(clf.predict_proba(ids), expected)
    np.testing.assert_array_equal(clf.predict_proba(ids, graph=same), expected)
    draws = clf.sample_posterior(ids, n_samples=2, random_state=0)
    np.testing.assert_array_equal(draws[0], draws[1])
    S = clf.attention_graph(ids, k=3)
    assert S.shape == (3, 60) and (S[0] != S[1]).nnz == 0
    reg = DIFFormerRegressor(**kw).fit(g.node_ids()[:40], y[:40].astype(float), graph=g)
    mean, std = reg.predict(ids, return_std=True)
    assert mean[0] == mean[1] and std[0] == std[1]
    with pytest.raises(ValueError, match=r"^X holds duplicate node ids; each node is one "
                                         r"sample \(pass each id once\)\.$"):
        clone(clf).fit(np.r_[once, once[:1]], y[[5, 7, 5]], graph=g)


def test_feature_rows_given_to_a_graph_mode_model_name_the_mode():
    """Graph mode takes node ids, one column: feature rows get an error that names the mode
    and the node ids, not scikit-learn's feature count."""
    X, y, A = make_planted_partition(60, 3, p_in=0.2, p_out=0.02, random_state=0)
    g = Graph(X, A)
    clf = DIFFormerClassifier(n_layers=1, hidden_dim=8, max_epochs=2, random_state=0,
                              label_propagation=False).fit(g.node_ids(), y, graph=g)
    msg = (r"^DIFFormerClassifier was fitted in graph mode \(fit\(\.\.\., graph=g\)\), so X "
           r"holds node ids, one column; got X of shape \(60, 16\), which looks like feature "
           r"rows\. Pass node ids of the graph \(g\.node_ids\(\), or a subset of its rows\)")
    with pytest.raises(ValueError, match=msg):
        clf.predict(X)
    with pytest.raises(ValueError, match=r"predicts on a graph \(graph=\.\.\.\), so X holds "
                                         r"node ids, one column; got X of shape \(60, 16\)"):
        clf.predict_proba(X, graph=Graph(X, A))
    assert clf.predict(g.node_ids()[:5]).shape == (5,)


def test_classes_that_are_not_a_list_of_labels_are_named():
    """A flag passed positionally to partial_fit lands on ``classes``: it is named as such,
    not reported as labels missing from the classes [True]."""
    X, y = np.random.RandomState(0).randn(20, 3), np.arange(20) % 2
    clf = DIFFormerClassifier(n_layers=1, hidden_dim=8, max_epochs=1, random_state=0)
    with pytest.raises(TypeError, match=r"^'classes' must be a 1-D array-like of every "
                                        r"label, e.g. classes=np.unique\(y\); got bool True\. "
                                        r"Pass it by keyword"):
        clf.partial_fit(X, y, True)
    with pytest.raises(TypeError, match=r"got an array of shape \(2, 1\)"):
        clf.partial_fit(X, y, classes=[[0], [1]])
    assert clf.partial_fit(X, y, classes=[0, 1]).classes_.tolist() == [0, 1]
