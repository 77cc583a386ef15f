"""Calls and baselines of the defaults benchmark (``benchmarks/defaults.py``).

Every skdiff estimator is built as ``Estimator(random_state=0)`` (nothing else) and given the
data exactly as a new user would (raw features, raw labels with ``-1`` / ``NaN`` for the
unlabelled rows, an adjacency when there is a graph). Every function here returns a dict
with ``score`` (the task's metric), ``fit_s`` (the ``fit`` call alone), ``total_s`` (fit,
prediction and scoring) and ``extra`` (other figures worth keeping).

Baselines are the plain scikit-learn models a user would otherwise reach for, each with the
usual preprocessing (a ``StandardScaler`` in front of linear models) and with its penalty
chosen by internal validation where that is the ordinary usage (``RidgeCV``, the ridge's
penalty on the latest training windows).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, RegressorMixin, clone, is_regressor
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.linear_model import LogisticRegression, Ridge, RidgeClassifierCV, RidgeCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading

from skdiff.datasets._gp import gp_kernel
from skdiff.ndp import gaussian_log_likelihood

#: Samples behind the moment-matched Gaussian of the function metrics (the NDP paper's 128).
N_FUNCTION_SAMPLES = 128
ALPHAS = np.logspace(-3, 3, 13)


def accuracy(y, pred):
    return float(np.mean(np.asarray(y) == np.asarray(pred)))


def mse(y, pred):
    return float(np.mean((np.asarray(y, dtype=np.float64) - pred) ** 2))


class _Clock:
    """Wall-clock seconds of a ``with`` block (``.s``)."""

    def __enter__(self):
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.s = time.perf_counter() - self._t


def _result(score, fit_s, t0, **extra):
    return {"score": float(score), "fit_s": round(fit_s, 2),
            "total_s": round(time.perf_counter() - t0, 2),
            "extra": {k: v for k, v in extra.items() if v is not None}}


def _epochs(est):
    est = est[-1] if isinstance(est, Pipeline) else est
    history = getattr(est, "history_", None)
    return None if history is None else len(history)


def _scaled(X):
    """A scaler that keeps a sparse matrix sparse."""
    return StandardScaler(with_mean=not sp.issparse(X))


def _transduced(est, X, scored, adjacency=None):
    """Predictions for the scored rows of a fit on all rows: ``transduction_`` when the
    estimator keeps one, else ``predict`` on those rows (with the graph, over all rows)."""
    last = est[-1] if isinstance(est, Pipeline) else est
    trans = getattr(last, "transduction_", None)
    if trans is not None:
        return np.asarray(trans)[scored]
    if adjacency is not None:
        return np.asarray(est.predict(X, adjacency=adjacency))[scored]
    return np.asarray(est.predict(X[scored]))


def _coverage95(est, y, X, rows=slice(None), **predict_params):
    """For a regressor: the share of ``y`` inside the 95 % intervals (mean +- 1.96 std) of
    ``predict(X, return_std=True)`` at ``rows``; ``{}`` for a classifier."""
    if not is_regressor(est):
        return {}
    mean, std = (np.asarray(a)[rows] for a in est.predict(X, return_std=True,
                                                             **predict_params))
    return {"coverage95": float(np.mean(np.abs(np.asarray(y) - mean) <= 1.959964 * std))}


# -- the skdiff calls ------------------------------------------------------------------------
def skdiff_semi(Est, d, metric, *, scaled_variant=True):
    """``Est(random_state=0).fit(X, y_fit)`` on all rows, scored on the unlabelled ones; the
    same in a ``StandardScaler`` pipeline as an extra figure."""
    t0 = time.perf_counter()
    with _Clock() as c:
        est = Est(random_state=0).fit(d.X, d.y_fit)
    score = metric(d.y[d.scored], _transduced(est, d.X, d.scored))
    extra = {"epochs": _epochs(est), **_coverage95(est, d.y[d.scored], d.X[d.scored]),
             **_fallback_outcome(est)}
    if scaled_variant:
        with _Clock() as c2:
            pipe = make_pipeline(StandardScaler(), Est(random_state=0)).fit(d.X, d.y_fit)
            extra["in_scaler_pipeline"] = metric(d.y[d.scored],
                                                 _transduced(pipe, d.X, d.scored))
        extra["in_scaler_pipeline_s"] = round(c2.s, 2)
    return _result(score, c.s, t0, **extra)


def skdiff_full(Est, d, metric, *, scaled_variant=True):
    """``Est(random_state=0).fit(X_train, y_train)``, scored on the test rows."""
    t0 = time.perf_counter()
    with _Clock() as c:
        est = Est(random_state=0).fit(d.X_train, d.y_train)
    score = metric(d.y_test, est.predict(d.X_test))
    extra = {"epochs": _epochs(est), **_coverage95(est, d.y_test, d.X_test),
             **_fallback_outcome(est)}
    if scaled_variant:
        with _Clock() as c2:
            pipe = make_pipeline(StandardScaler(), Est(random_state=0)).fit(d.X_train,
                                                                            d.y_train)
            extra["in_scaler_pipeline"] = metric(d.y_test, pipe.predict(d.X_test))
        extra["in_scaler_pipeline_s"] = round(c2.s, 2)
    return _result(score, c.s, t0, **extra)


def skdiff_graph(Est, d, metric):
    """``Est(random_state=0).fit(X, y_fit, adjacency=A)``, scored on the unlabelled nodes."""
    t0 = time.perf_counter()
    with _Clock() as c:
        est = Est(random_state=0).fit(d.X, d.y_fit, adjacency=d.A)
    score = metric(d.y[d.scored], _transduced(est, d.X, d.scored, adjacency=d.A))
    return _result(score, c.s, t0, epochs=_epochs(est), **_fallback_outcome(est),
                   **_coverage95(est, d.y[d.scored], d.X, d.scored, adjacency=d.A))


def _fallback_outcome(est):
    """``{"network_used": ..., "network_target": ...}`` where DIFFormerRegressor's
    ``linear_fallback`` compared the network with its ridge (the network's target: the
    ridge's residuals or the targets themselves), else nothing."""
    if getattr(est, "linear_fallback_", None) is None:
        return {}
    return {"network_used": bool(est.network_used_), "network_target": est.network_target_}


def skdiff_sequences(Est, d, metric):
    """``Est(random_state=0).fit(X_train, y_train)`` on windows / series, scored on the test
    part; records the regressor's ``encoder_used_``."""
    t0 = time.perf_counter()
    with _Clock() as c:
        est = Est(random_state=0).fit(d.X_train, d.y_train)
    # the forecaster's ridge skip alone, or with the encoder's correction (None elsewhere)
    return _result(metric(d.y_test, est.predict(d.X_test)), c.s, t0, epochs=_epochs(est),
                   encoder_used=getattr(est, "encoder_used_", None),
                   **_coverage95(est, d.y_test, d.X_test))


# -- function metrics ------------------------------------------------------------------------
def _sample_metrics(samples, y):
    """Joint log-likelihood per point of the Gaussian moment-matched to ``samples`` (n, S),
    MSE of their mean and coverage of mean +- 1.96 std, all in natural units."""
    mean, sd = samples.mean(1), samples.std(1, ddof=1)
    return (gaussian_log_likelihood(y, samples, joint=True), mse(y, mean),
            float(np.mean(np.abs(y - mean) <= 1.96 * sd)))


def _exact_loglik(mean, cov, y):
    L = np.linalg.cholesky(cov + 1e-9 * np.eye(len(y)))
    z = np.linalg.solve(L, y - mean)
    return float(-0.5 * (z @ z + 2 * np.log(np.diag(L)).sum() + len(y) * np.log(2 * np.pi))
                 / len(y))


def _function_summary(rows, t0, fit_s, **extra):
    a = np.asarray(rows)  # (tasks, 3): log-lik, MSE, coverage
    return _result(np.median(a[:, 0]), fit_s, t0, mean_loglik=float(a[:, 0].mean()),
                   median_mse=float(np.median(a[:, 1])), coverage95=float(a[:, 2].mean()),
                   n_tasks=len(a), **extra)


def skdiff_functions(Est, d, metric=None):
    """Per task ``Est(random_state=0).fit(x_context, y_context)`` then
    ``sample_posterior(x_query, n_samples=128)``; the score is the median over tasks of the
    joint log-likelihood per query point (natural units). ``fit_s`` sums fit and sampling."""
    t0 = time.perf_counter()
    offset, scale = d.unit
    rows, fit_s = [], 0.0
    for i, (xc, yc, xq, yq) in enumerate(d.tasks):
        with _Clock() as c:
            est = Est(random_state=0).fit(xc, yc)
            samples = est.sample_posterior(xq, n_samples=N_FUNCTION_SAMPLES, random_state=i)
        fit_s += c.s
        rows.append(_sample_metrics((samples - offset) / scale, (yq - offset) / scale))
    return _function_summary(rows, t0, fit_s, seconds_per_task=round(fit_s / len(rows), 2))


# -- baselines -------------------------------------------------------------------------------
def _timed(fn):
    """Run ``fn() -> (score, extra)`` and wrap it as a result (fit_s = whole call)."""
    t0 = time.perf_counter()
    score, extra = fn()
    s = time.perf_counter() - t0
    return _result(score, s, t0, **extra)


def _labelled(d):
    """Rows whose label is given to the fit (not every unscored row is labelled: Cora's
    unlabelled nodes outside the test set are neither)."""
    y_fit = np.asarray(d.y_fit)
    return ~np.isnan(y_fit) if y_fit.dtype.kind == "f" else y_fit != -1


def logreg():
    return LogisticRegression(max_iter=5000)


def semi_supervised_on_labelled(model, metric, scale=True):
    """``model`` fitted on the labelled rows only, scored on the unlabelled ones."""
    def run(d):
        def fn():
            lab = _labelled(d)
            est = make_pipeline(StandardScaler(), clone(model)) if scale else clone(model)
            est.fit(d.X[lab], d.y[lab])
            return metric(d.y[d.scored], est.predict(d.X[d.scored])), {}
        return _timed(fn)
    return run


def label_spreading_knn(d):
    """LabelSpreading with a 7-NN kernel on standardised features, all rows."""
    def fn():
        est = make_pipeline(StandardScaler(), LabelSpreading(kernel="knn", n_neighbors=7,
                                                              max_iter=1000)).fit(d.X, d.y_fit)
        return accuracy(d.y[d.scored], est[-1].transduction_[d.scored]), {}
    return _timed(fn)


def supervised(model, metric, scale=True):
    """``model`` fitted on the training rows, scored on the test rows."""
    def run(d):
        def fn():
            est = make_pipeline(StandardScaler(), clone(model)) if scale else clone(model)
            est.fit(d.X_train, d.y_train)
            return metric(d.y_test, est.predict(d.X_test)), {}
        return _timed(fn)
    return run


def sgc_features(X, A, hops=2):
    """SGC's propagated features (Wu et al., 2019): S^hops X with S = D^-1/2 (A + I) D^-1/2."""
    A = sp.csr_matrix(A, dtype=np.float64)
    A = A + sp.eye(A.shape[0], format="csr")
    inv_sqrt = 1.0 / np.sqrt(np.asarray(A.sum(1)).ravel())
    S = sp.diags(inv_sqrt) @ A @ sp.diags(inv_sqrt)
    Z = X.astype(np.float64) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    for _ in range(hops):
        Z = S @ Z
    return Z.toarray() if sp.issparse(Z) else Z


def graph_features_model(model, metric, propagate):
    """``model`` on the labelled nodes' features, scored on the unlabelled nodes:
    ``propagate=True``, SGC (its 2-hop features as published, no scaler: standardising the
    smoothed features re-inflates their noise and cost 2-14 points of accuracy on every
    graph here); ``propagate=False``, the raw features in a scaler pipeline."""
    def run(d):
        def fn():
            Z = sgc_features(d.X, d.A) if propagate else d.X
            lab = _labelled(d)
            est = clone(model) if propagate else make_pipeline(_scaled(Z), clone(model))
            est.fit(Z[lab], d.y[lab])
            return metric(d.y[d.scored], est.predict(Z[d.scored])), {}
        return _timed(fn)
    return run


def label_spreading_graph(d, alpha=0.9):
    """LabelSpreading with the graph itself as kernel (symmetrically normalised inside)."""
    def fn():
        A = sp.csr_matrix(d.A, dtype=np.float64)

        def kernel(a, b):
            return A[a.ravel().astype(int)][:, b.ravel().astype(int)]

        ids = np.arange(A.shape[0], dtype=np.float64)[:, None]
        est = LabelSpreading(kernel=kernel, alpha=alpha, max_iter=1000).fit(ids, d.y_fit)
        return accuracy(d.y[d.scored], est.transduction_[d.scored]), {"alpha": alpha}
    return _timed(fn)


def _flat(X):
    return X.reshape(len(X), -1)


def ridge_lag(d):
    """Ridge on the lag window, penalty chosen on the latest 20 % of the training windows
    (fitted on the earlier 80 %), then refitted on all of them."""
    def fn():
        X, y = _flat(d.X_train), d.y_train
        n_val = max(1, len(X) // 5)
        val = [mse(y[-n_val:], Ridge(alpha=a).fit(X[:-n_val], y[:-n_val]).predict(X[-n_val:]))
               for a in np.logspace(-3, 5, 9)]
        alpha = float(np.logspace(-3, 5, 9)[int(np.argmin(val))])
        pred = Ridge(alpha=alpha).fit(X, y).predict(_flat(d.X_test))
        return mse(d.y_test, pred), {"alpha": alpha}
    return _timed(fn)


def last_value(d):
    """Repeat the window's last value over the horizon."""
    def fn():
        last = _flat(d.X_test)[:, -1:]
        return mse(d.y_test, np.repeat(last, d.y_test.shape[1], axis=1)), {}
    return _timed(fn)


def seasonal_naive(d):
    """Repeat the window's last season (period ``d.season``) over the horizon."""
    def fn():
        X, h, m = _flat(d.X_test), d.y_test.shape[1], d.season
        idx = X.shape[1] - m + np.arange(h) % m
        return mse(d.y_test, X[:, idx]), {"season": m}
    return _timed(fn)


def series_flat_model(model, scale=True, metric=accuracy):
    """``model`` on the flattened (length x channels) series."""
    def run(d):
        def fn():
            est = make_pipeline(StandardScaler(), clone(model)) if scale else clone(model)
            est.fit(_flat(d.X_train), d.y_train)
            return metric(d.y_test, est.predict(_flat(d.X_test))), {}
        return _timed(fn)
    return run


def training_mean(d):
    """The training targets' mean for every test series."""
    def fn():
        return mse(d.y_test, np.full(np.shape(d.y_test), np.mean(d.y_train))), {}
    return _timed(fn)


nearest_neighbour = series_flat_model(KNeighborsClassifier(n_neighbors=1), scale=False)
ridge_classifier = series_flat_model(RidgeClassifierCV(alphas=ALPHAS))


def gpr_ml2(d, scale_x=False):
    """``GaussianProcessRegressor(ConstantKernel() * RBF(ones(D)) + WhiteKernel(),
    normalize_y=True, n_restarts_optimizer=10)`` per task (ML-II). ``scale_x=True``
    standardises x with the context's mean and std first (the kernel's initial lengthscale of
    1 then suits any units).

    Its score is the *exact* joint Gaussian log-likelihood of ``predict(return_cov=True)``
    (what a GPR user gets), coverage and MSE from the same mean and std. The NDP can only be
    scored through samples, and moment-matching 128 samples of 50 points costs even the exact
    posterior a good part of a nat per point, so this baseline is the harder one; the GPR
    seen through 128 ``sample_y`` draws is kept as an extra (``sampled_median_loglik``), as is
    the exact GP with the true hyper-parameters for GP draws (``true_gp_median_loglik``).
    """
    t0 = time.perf_counter()
    offset, scale = d.unit
    rows, sampled, oracle, fit_s = [], [], [], 0.0
    for i, (xc, yc, xq, yq) in enumerate(d.tasks):
        if scale_x:
            scaler = StandardScaler().fit(xc)
            xc, xq = scaler.transform(xc), scaler.transform(xq)
        kernel = ConstantKernel() * RBF(np.ones(xc.shape[1])) + WhiteKernel()
        gpr = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=10,
                                       random_state=0)
        with _Clock() as c, warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gpr.fit(xc, yc)
            mean, cov = gpr.predict(xq, return_cov=True)
        fit_s += c.s
        y_nat = (yq - offset) / scale
        mean, cov = (mean - offset) / scale, cov / scale ** 2
        sd = np.sqrt(np.clip(np.diag(cov), 0, None))
        rows.append((_exact_loglik(mean, cov, y_nat), mse(y_nat, mean),
                     float(np.mean(np.abs(y_nat - mean) <= 1.96 * sd))))
        samples = gpr.sample_y(xq, N_FUNCTION_SAMPLES, random_state=i)
        sampled.append(_sample_metrics((samples - offset) / scale, y_nat)[0])
        if d.oracle is not None:
            oracle.append(_oracle_loglik(d.oracle, i, y_nat))
    return _function_summary(
        rows, t0, fit_s, sampled_median_loglik=float(np.median(sampled)),
        true_gp_median_loglik=float(np.median(oracle)) if oracle else None)


def _oracle_loglik(o, i, y_query):
    """Exact log-likelihood per point under the GP that drew the task (natural units)."""
    xc, yc, xq = o["natural"][i]
    k = dict(kernel=o["kernel"], lengthscale=o["lengthscales"][i])
    Kcc = gp_kernel(xc, xc, **k) + o["noise_var"] * np.eye(len(xc))
    Kqc = gp_kernel(xq, xc, **k)
    Kqq = gp_kernel(xq, xq, **k) + o["noise_var"] * np.eye(len(xq))
    mean = Kqc @ np.linalg.solve(Kcc, yc)
    cov = Kqq - Kqc @ np.linalg.solve(Kcc, Kqc.T)
    return _exact_loglik(mean, cov, y_query)


# -- the model families ----------------------------------------------------------------------
HGB_CLF = HistGradientBoostingClassifier(random_state=0)
class ArdGPR(RegressorMixin, BaseEstimator):
    """``GaussianProcessRegressor(ConstantKernel() * RBF(ones(n_features)) + WhiteKernel(),
    normalize_y=True, n_restarts_optimizer=3)``: ML-II with one lengthscale per feature,
    built at ``fit`` (the kernel's lengthscale vector needs the number of features)."""

    def __init__(self, random_state=0):
        self.random_state = random_state

    def fit(self, X, y):
        kernel = ConstantKernel() * RBF(np.ones(X.shape[1])) + WhiteKernel()
        self.gpr_ = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=3,
                                             random_state=self.random_state).fit(X, y)
        return self

    def predict(self, X, return_std=False):
        return self.gpr_.predict(X, return_std=return_std)


HGB_REG = HistGradientBoostingRegressor(random_state=0)
RIDGE_CV = RidgeCV(alphas=ALPHAS)
