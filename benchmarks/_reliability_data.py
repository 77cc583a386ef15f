"""Bad data for the public methods of every estimator, and the answers that must follow units.

``data`` probes feed ``fit`` (and ``partial_fit``) malformed ``X``, ``y``, ``sample_weight``,
``adjacency``, ``graph`` and ``validation_mask``, plus valid inputs in unusual containers
(DataFrames, sparse matrices, read-only or Fortran-ordered arrays, lists) and data in tiny and
huge units, whose predictions must follow the units. ``methods`` probes call ``predict``,
``predict_proba``, ``sample_posterior``, ``score``, ``attention_graph`` and the NDP methods
with bad arguments on a fitted estimator, and check invariances (batching, row order,
repeated calls) and that nothing the user owns changes (inputs, global RNGs, thread counts,
grad mode, warning filters).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from _reliability_core import (
    ESTIMATORS,
    Probe,
    Wrong,
    check_close,
    check_same_state,
    check_sane,
    data,
    family,
    fitted,
    is_classifier,
    make,
    outputs,
    state_of,
    then,
)

#: How a message may name y.
Y_NAMES = ("y", "label", "labels", "target", "targets")


# -- probe functions (run in the probe's process) --------------------------------------------
def _mod(X, mod):
    """Containers that do not survive pickling: read-only and Fortran-ordered arrays."""
    if mod == "readonly":
        X = np.array(X)
        X.setflags(write=False)
    elif mod == "fortran":
        X = np.asfortranarray(X)
    return X


def fit_call(tmp, est, X, y, params=None, fit_kw=None, check="same", mod=None, partial=False):
    """Fit (or partial_fit) on the given data; then check predictions on ``check``: "same"
    (the fitted X), "clean" (the estimator's small data), None (no check)."""
    X = _mod(X, mod)
    model = make(est, **(params or {}))
    (model.partial_fit if partial else model.fit)(X, y, **(fit_kw or {}))
    if check is None:
        return "fit returned"
    Xc = X if check == "same" else data(est)[0]
    n = len(Xc) if not hasattr(Xc, "shape") else Xc.shape[0]
    return then("predict", lambda: check_sane(model, Xc, n_rows=n))


def warned_or_equal(tmp, est, a, b, words, **kwargs):
    """``fit_equal``, unless fitting ``a`` warns with every one of ``words`` (the estimator
    then says how it reads the input, which is the other acceptable outcome)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make(est).fit(a["X"], a["y"])
    said = [str(w.message) for w in caught if all(x in str(w.message) for x in words)]
    if said:
        return f"warned: {said[0][:100]}"
    return fit_equal(tmp, est, a, b, **kwargs)


def fit_equal(tmp, est, a, b, params=None, scale=1.0, shift=0.0, rtol=1e-3, what="outputs"):
    """Fit twice, on ``a`` and on ``b`` (each ``dict(X, y, fit_kw, predict_X, predict_kw,
    mod)``); the outputs of ``a`` must equal those of ``b`` times ``scale`` plus ``shift``."""
    outs = []
    for spec in (a, b):
        X = _mod(spec["X"], spec.get("mod"))
        model = make(est, **(params or {})).fit(X, spec["y"], **spec.get("fit_kw", {}))
        PX = spec.get("predict_X", X)
        outs.append(outputs(model, PX, **spec.get("predict_kw", {})))
    return check_close(outs[0], outs[1] * scale + shift, what, rtol=rtol)


def _check_result(kind, res, model, n):
    if kind == "none":
        return "returned"
    if kind == "sane":
        return check_sane(model, res)
    if kind == "finite":
        arr = np.asarray(res, dtype=np.float64)
        if not np.all(np.isfinite(arr)):
            raise Wrong(f"returned non-finite values: {arr.ravel()[:4]}")
        return f"finite, shape {arr.shape}"
    if kind.startswith("samples"):
        k = int(kind.split(":")[1])
        arr = np.asarray(res)
        lead = (n,) if not hasattr(model, "classes_") else (n, len(model.classes_))
        if arr.shape[:len(lead)] != lead or arr.shape[-1] != k:
            raise Wrong(f"samples of shape {arr.shape}; expected {lead} ... {k}")
        if not np.all(np.isfinite(arr)):
            raise Wrong("samples hold non-finite values")
        return f"samples of shape {arr.shape}"
    if kind == "std":
        mean, std = res
        if np.shape(mean) != np.shape(std) or np.shape(mean)[:1] != (n,):
            raise Wrong(f"mean {np.shape(mean)} and std {np.shape(std)} for {n} rows")
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std >= 0)):
            raise Wrong("mean/std not finite or std negative")
        return f"mean and std of shape {np.shape(mean)}"
    if kind == "cov":
        mean, cov = res
        cov = np.asarray(cov)
        if cov.shape != (n, n) or not np.all(np.isfinite(cov)) or \
                not np.allclose(cov, cov.T, atol=1e-8 * (1 + np.abs(cov).max())):
            raise Wrong(f"covariance of shape {cov.shape}, finite "
                        f"{bool(np.all(np.isfinite(cov)))}, symmetric?")
        if np.any(np.diag(cov) < -1e-8 * (1 + np.abs(cov).max())):
            raise Wrong("covariance with a negative variance")
        return "covariance square, symmetric, finite"
    if kind.startswith("attention"):
        S = res
        if not sp.issparse(S) or S.shape != (n, n):
            raise Wrong(f"attention graph of type {type(S).__name__}, shape "
                        f"{getattr(S, 'shape', None)}; expected a ({n}, {n}) sparse matrix")
        if S.nnz and (not np.all(np.isfinite(S.data)) or S.data.min() < 0):
            raise Wrong("attention weights not finite or negative")
        k = int(kind.split(":")[1])
        if S.getnnz(axis=1).max(initial=0) > k:
            raise Wrong(f"a row keeps {S.getnnz(axis=1).max()} weights, more than k={k}")
        return f"attention graph {S.shape}, {S.nnz} weights"
    if kind == "score":
        if not np.isfinite(float(res)):
            raise Wrong(f"score {res}")
        return f"score {float(res):.3g}"
    raise ValueError(kind)


def method_call(tmp, est, method, args=(), kw=None, params=None, fit_kw=None, result="none",
                n=None, fit_X=None, fit_y=None, fit=True):
    """Fit the small estimator (unless ``fit=False``), call ``method(*args, **kw)``, check its
    result by kind (see :func:`_check_result`)."""
    X, y = data(est)
    X = X if fit_X is None else fit_X
    y = y if fit_y is None else fit_y
    model = make(est, **(params or {}))
    if fit:
        model.fit(X, y, **(fit_kw or {}))
    res = getattr(model, method)(*args, **(kw or {}))
    n = n if n is not None else (len(args[0]) if args and hasattr(args[0], "__len__") else 0)
    return then("checking the result", lambda: _check_result(result, res, model, n))


def predict_invariance(tmp, est, how):
    """Batching, row order and repetition must not change predictions (deterministic
    inference); predicting must not change the estimator."""
    model, X, _ = fitted(est)
    base = outputs(model, X)
    if how == "batch":
        part = np.concatenate([outputs(model, X[:5]), outputs(model, X[5:17]),
                               outputs(model, X[17:])])
        return check_close(part, base, "predictions in 3 batches vs one call", atol=1e-6)
    if how == "order":
        perm = np.random.RandomState(1).permutation(len(X))
        return check_close(outputs(model, X[perm]), base[perm], "permuted rows", atol=1e-6)
    if how == "repeat":
        before = state_of(model)
        again = outputs(model, X)
        if hasattr(model, "sample_posterior"):
            model.sample_posterior(X[:3], n_samples=2, random_state=0)
        check_same_state(before, state_of(model), "the estimator after predict")
        return check_close(again, base, "a second predict", atol=0.0)
    raise ValueError(how)


def inputs_untouched(tmp, est, with_weights=True, with_adjacency=False):
    """fit and predict must not modify the arrays they are given."""
    X, y = data(est)
    kw = {}
    if with_weights and family(est) != "ndp":
        kw["sample_weight"] = np.linspace(0.5, 2.0, len(X))
    if with_adjacency:
        kw["adjacency"] = _ring(len(X)).toarray()
    copies = {k: np.array(v, copy=True) for k, v in dict(X=X, y=y, **kw).items()}
    model = make(est).fit(X, y, **kw)
    model.predict(X)
    for k, v in dict(X=X, y=y, **kw).items():
        if not np.array_equal(v, copies[k]):
            raise Wrong(f"fit/predict modified the caller's {k}")
    return f"{', '.join(copies)} unchanged"


def globals_untouched(tmp, est):
    """fit, predict and sample_posterior must leave the caller's global state as it was:
    numpy's, Python's and torch's RNGs, torch's thread count, grad mode and default dtype,
    the warning filters and scikit-learn's configuration."""
    import random
    import warnings

    import sklearn
    import torch

    fitted(est)  # a first fit imports what it needs lazily (sympy, scipy.special add filters)
    np.random.seed(123)  # noqa: NPY002 - the legacy global state is what is checked
    random.seed(123)
    torch.manual_seed(123)
    torch.set_num_threads(1)
    before = dict(np=np.random.get_state()[1].copy(), py=random.getstate(),  # noqa: NPY002
                  torch=torch.get_rng_state().clone(), threads=torch.get_num_threads(),
                  grad=torch.is_grad_enabled(), dtype=torch.get_default_dtype(),
                  filters=list(warnings.filters), config=dict(sklearn.get_config()))
    model, X, _ = fitted(est)
    model.predict(X)
    model.sample_posterior(X[:3], n_samples=2, random_state=0)
    after = dict(np=np.random.get_state()[1], py=random.getstate(),  # noqa: NPY002
                 torch=torch.get_rng_state(), threads=torch.get_num_threads(),
                 grad=torch.is_grad_enabled(), dtype=torch.get_default_dtype(),
                 filters=list(warnings.filters), config=dict(sklearn.get_config()))
    changed = [k for k in before if not (
        np.array_equal(before[k], after[k]) if k == "np" else
        torch.equal(before[k], after[k]) if k == "torch" else before[k] == after[k])]
    if changed:
        raise Wrong(f"changed the caller's global state: {changed}")
    return "RNGs, threads, grad mode, dtype, warning filters and config unchanged"


def _ring(n):
    """A ring graph over n nodes plus a chord every 5 nodes (sparse, symmetric)."""
    i = np.arange(n)
    rows = np.r_[i, (i + 1) % n, i[::5], (i[::5] + n // 2) % n]
    cols = np.r_[(i + 1) % n, i, (i[::5] + n // 2) % n, i[::5]]
    return sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))


def graph_call(tmp, est, ids, y, fit=True, predict_ids=None, predict_graph=None, **fit_kw):
    """Graph mode: fit on node ids of a small Graph; optionally predict on other ids/graph."""
    from skdiff import Graph

    X, yy = data(est)
    g = Graph(X, _ring(len(X)))
    model = make(est)
    model.fit(np.asarray(ids) if not isinstance(ids, str) else g.node_ids(),
              yy if isinstance(y, str) else y, graph=g, **fit_kw)
    if predict_ids is None:
        return then("predict", lambda: check_sane(model, g.node_ids(), graph=g))
    graph = g
    if predict_graph == "fewer_features":
        graph = Graph(X[:, :3], _ring(len(X)))
    elif predict_graph == "other":
        graph = Graph(X[::-1].copy(), _ring(len(X)))
    pid = g.node_ids() if isinstance(predict_ids, str) else np.asarray(predict_ids)
    res = model.predict(pid, graph=graph)
    return then("checking", lambda: _check_result("finite", np.asarray(res, dtype=float),
                                                  model, len(pid)))


def make_graph(tmp, features, adjacency):
    from skdiff import Graph

    g = Graph(features, adjacency)
    if not np.all(np.isfinite(g.features.toarray() if sp.issparse(g.features) else g.features)):
        raise Wrong("Graph kept non-finite features")
    return repr(g)


# -- probe tables ----------------------------------------------------------------------------
def _P(area, est, name, func, kwargs, names, expect, correct, call, bad=None, timeout=180):
    return Probe(area=area, target=est, name=name, func=func, kwargs=kwargs, names=names,
                 expect=expect, correct=correct, call=call, bad=bad, timeout=timeout)


def _x_probes(est):
    """Bad and unusual X for fit."""
    X, y = data(est)
    n, fam = len(X), family(est)
    seq = fam == "flowformer"
    nan = X.copy()
    nan[3, -1] = np.nan
    inf = X.copy()
    inf[3, -1] = np.inf
    rows = [
        ("X with NaN", nan, y, "error", {}),
        ("X with inf", inf, y, "error", {}),
        ("X with -inf", np.where(inf == np.inf, -np.inf, inf), y, "error", {}),
        ("X of 1e39 (beyond float32)", X * 1e39, y, "either", {}),
        ("X with 0 rows", X[:0], y[:0], "error", {}),
        ("X with 0 columns", X[:, :0], y, "error", {}),
        ("X of 1 row", X[:1], y[:1], "either", {}),
        ("X of 2 rows", X[:2], y[:2], "either", {}),
        ("X 1-D", X[:, 0], y, "error", {}),
        ("X as strings", X.astype(str).astype(object) + "x", y, "error", {}),
        ("X as numeric strings", X.astype(str), y, "either", {}),
        ("X as an object array of numbers", X.astype(object), y, "ok", {}),
        ("X with None", _with(X.astype(object), (2, 0), None), y, "error", {}),
        ("X as bool", X > 0, y, "ok", {}),
        ("X as int", np.round(X * 10).astype(np.int64), y, "ok", {}),
        ("X as float16", X.astype(np.float16), y, "ok", {}),
        ("X complex", X + 1j, y, "error", {}),
        ("X as a list of lists", X.tolist(), y, "ok", {}),
        ("X ragged list", [list(r) for r in X[:-1]] + [list(X[-1][:-1])], y, "error", {}),
        ("X as a torch tensor", __import__("torch").as_tensor(X), y, "either", {}),
        ("X constant (every row the same)", np.ones_like(X), y, "either", {}),
    ]
    if fam == "ndp":
        rows = [r for r in rows if r[0] not in ("X of 2 rows",)]
        rows += [("X 3-D", X[:, :, None], y, "error", {}),
                 ("X with 4 features (no 4-D prior)", np.c_[X, X ** 2, X ** 3, -X], y,
                  "either", {}),
                 ("X duplicated points, other y", np.r_[X, X], np.r_[y, y + 0.1], "ok", {}),
                 ("X sparse", sp.csr_matrix(X), y, "either", {}),
                 ("X as a DataFrame", pd.DataFrame(X, columns=["x"]), y, "ok", {})]
    elif seq:
        rows += [("X 4-D", X[:, :, None, None], y, "error", {}),
                 ("X of 1 step", X[:, :1], y, "either", {}),
                 ("X 3-D (n, L, 1)", X[:, :, None], y, "ok", {}),
                 ("X sparse", sp.csr_matrix(X), y, "error", {}),
                 ("X as a DataFrame", pd.DataFrame(X), y, "ok", {}),
                 ("X (n, 3, 12) read as 3 steps of 12 channels",
                  np.stack([X, X ** 2, -X], 1), y, "error", {"__names": ("layout",)}),
                 ("one constant sequence", _with(X.copy(), (0, slice(None)), 1.0), y, "ok",
                  {})]
    else:
        cols = [f"f{i}" for i in range(X.shape[1])]
        rows += [("X 3-D", X[:, :, None], y, "error", {}),
                 ("X sparse CSR", sp.csr_matrix(X), y, "ok", {}),
                 ("X sparse COO", sp.coo_matrix(X), y, "ok", {}),
                 ("X sparse with NaN", sp.csr_matrix(nan), y, "error", {}),
                 ("X as a DataFrame", pd.DataFrame(X, columns=cols), y, "ok", {}),
                 ("X DataFrame with a string column",
                  pd.DataFrame(X, columns=cols).assign(f0=list("ab" * (n // 2))), y, "error",
                  {}),
                 ("X DataFrame with pd.NA",
                  pd.DataFrame(X, columns=cols).astype("Float64").mask(
                      pd.DataFrame(np.eye(n, X.shape[1], dtype=bool), columns=cols)), y,
                  "error", {}),
                 ("X mostly zeros, non-negative", np.where(X > 1.2, X, 0.0), y, "ok", {}),
                 ("X with 1 column", X[:, :1], y, "ok", {})]
    out = []
    for name, Xb, yb, expect, extra in rows:
        names = extra.get("__names", ()) + ("X",) + (Y_NAMES if len(yb) != n else ())
        out.append(_P("data", est, name, fit_call, dict(est=est, X=Xb, y=yb), names, expect,
                      _expect_text(expect, "X"), f"{est}(**small).fit(X_bad, y)  # {name}"))
    for mod in ("readonly", "fortran"):
        out.append(_P("data", est, f"X {mod}", fit_equal,
                      dict(est=est, a=dict(X=X, y=y, mod=mod), b=dict(X=X, y=y), rtol=1e-6),
                      ("X",), "ok", f"a {mod} X gives the predictions of a plain one",
                      f"{est}(**small).fit(X_{mod}, y).predict(X_{mod})"))
    return out


def _with(A, idx, value):
    A[idx] = value
    return A


def _expect_text(expect, arg):
    return {"error": f"a clear error naming {arg}",
            "ok": "fit works; predictions sane",
            "either": f"a clear error naming {arg}, or a fit with sane predictions"}[expect]


def _y_probes(est):
    X, y = data(est)
    n = len(X)
    fam = family(est)
    # DIFFormerRegressor documents NaN (and None, read as NaN) as the unlabelled marker
    missing = "ok" if est == "DIFFormerRegressor" else "error"
    rows = [
        ("y with NaN", _with(y.astype(float), 3, np.nan), missing),
        ("y with inf", _with(y.astype(float), 3, np.inf), "error"),
        ("y one short", y[:-1], "error"),
        ("y one long", np.r_[y, y[:1]], "error"),
        ("y 3-D", y[:, None, None], "error"),
        ("y as strings of letters", np.array(["a", "b", "c", "d"])[y.astype(int) % 4]
         if is_classifier(est) else np.array(list("abcd") * n)[:n], "ok"
         if is_classifier(est) else "error"),
        ("y with None", _with(y.astype(object), 2, None), missing),
        ("y as a list", y.tolist(), "ok"),
        ("y as a pandas Series", pd.Series(y), "ok"),
        ("y (n, 1) column", y[:, None], "ok"),
    ]
    if is_classifier(est):
        k = len(np.unique(y))
        rows += [
            ("y continuous", np.linspace(0, 1, n), "error"),
            ("y (n, 2)", np.c_[y, y], "error"),
            ("y of one class", np.zeros(n, dtype=int), "error"),
            ("y all unlabelled (-1)", -np.ones(n, dtype=int), "error"),
            ("y mixing ints and strings", [int(v) if i % 2 else f"c{v}"
                                           for i, v in enumerate(y)], "either"),
            ("y bool", y.astype(bool) if k == 2 else (y > 0), "ok"),
            ("y labels near 2**62", (y.astype(np.int64) + 2 ** 62), "ok"),
            ("y negative labels", y.astype(int) * 7 - 5, "ok"),
            ("y float labels", y.astype(float), "ok"),
            ("y categorical Series", pd.Series(np.array(["lo", "mid", "hi"])[y % 3]
                                                ).astype("category"), "ok"),
            ("y with a class of one row", _with(y.copy(), 0, 9), "ok"),
        ]
    else:
        rows += [
            ("y (n, 2) multi-output", np.c_[y, -y], "ok"),
            ("y constant", np.full(n, 3.0), "ok"),
            ("y all NaN", np.full(n, np.nan), "error"),
        ]
        if fam == "difformer":
            rows += [("y NaN rows (unlabelled)", _with(y.astype(float), slice(0, 10), np.nan),
                      "ok"),
                     ("y NaN in one output of a row", _with(np.c_[y, -y], (3, 1), np.nan),
                      "error")]
        if fam == "ndp":
            rows = [r for r in rows if r[0] not in ("y (n, 2) multi-output", "y (n, 1) column")]
            rows += [("y (n, 2)", np.c_[y, -y], "error"), ("y (n, 1) column", y[:, None], "ok"),
                     ("y bool", y > 0, "either"), ("y constant 3e-14", np.full(n, 3e-14), "ok")]
    out = []
    for name, yb, expect in rows:
        out.append(_P("data", est, name, fit_call, dict(est=est, X=X, y=yb), Y_NAMES, expect,
                      _expect_text(expect, "y"), f"{est}(**small).fit(X, y_bad)  # {name}",
                      bad=None))
    return out


def _label_probes(est):
    """-1 as a class, the unlabelled marker, string markers (the classifiers)."""
    X, y = data(est)
    n = len(X)
    out = []
    if est == "DIFFormerClassifier":
        genuine = np.where(y == 0, -1, y)
        out.append(_P("data", est, "-1 as a genuine class (default unlabelled=-1)", fit_call,
                      dict(est=est, X=X, y=genuine), ("unlabelled",), "error",
                      "a warning (or error) that -1 is read as the unlabelled marker",
                      f"{est}(**small).fit(X, y_with_class_minus_1)"))
        out.append(_P("data", est, "-1 as a genuine class with unlabelled=None", fit_labels,
                      dict(est=est, X=X, y=genuine, params=dict(unlabelled=None),
                           classes=[-1, 1, 2]), Y_NAMES, "ok",
                      "classes_ == [-1, 1, 2]", f"{est}(unlabelled=None, **small).fit(X, y)"))
        semi = np.where(np.arange(n) % 2 == 0, -1, y)
        out.append(_P("data", est, "unlabelled='-1' (a string) with numeric -1 rows",
                      fit_labels, dict(est=est, X=X, y=semi, params=dict(unlabelled="-1"),
                                       classes=[0, 1, 2]), ("unlabelled",), "error",
                      "an error or warning: the string marker matches no numeric label",
                      f"{est}(unlabelled='-1', **small).fit(X, y_semi)"))
        out.append(_P("data", est, "unlabelled=True with labels 0, 1, 2", fit_labels,
                      dict(est=est, X=X, y=y, params=dict(unlabelled=True),
                           classes=[0, 1, 2]), ("unlabelled",), "error",
                      "an error: True is not a label marker (it equals the label 1)",
                      f"{est}(unlabelled=True, **small).fit(X, y)"))
        strs = np.array(["a", "b", "c"])[y].astype(object)
        strs[::3] = "?"
        out.append(_P("data", est, "string labels with unlabelled='?'", fit_labels,
                      dict(est=est, X=X, y=strs, params=dict(unlabelled="?"),
                           classes=["a", "b", "c"]), Y_NAMES, "ok",
                      "classes_ == ['a', 'b', 'c']", f"{est}(unlabelled='?', **small).fit(X, y)"))
    return out


def fit_labels(tmp, est, X, y, params, classes):
    model = make(est, **params).fit(X, y)
    got = np.asarray(model.classes_).tolist()
    if got != classes:
        raise Wrong(f"classes_ is {got}, expected {classes}")
    return then("predict", lambda: check_sane(model, X))


def _weight_probes(est):
    X, y = data(est)
    n = len(X)
    w = np.linspace(0.5, 2.0, n)
    rows = [
        ("sample_weight negative", _with(w.copy(), 2, -1.0), "error"),
        ("sample_weight NaN", _with(w.copy(), 2, np.nan), "error"),
        ("sample_weight inf", _with(w.copy(), 2, np.inf), "error"),
        ("sample_weight one short", w[:-1], "error"),
        ("sample_weight all zero", np.zeros(n), "error"),
        ("sample_weight (n, 1)", w[:, None], "either"),
        ("sample_weight strings", w.astype(str), "error"),
        ("sample_weight bool", w > 1, "either"),
        ("sample_weight scalar 2.0", 2.0, "ok"),
        ("sample_weight list", w.tolist(), "ok"),
        ("sample_weight one positive row", _with(np.zeros(n), 5, 1.0), "either"),
    ]
    if is_classifier(est):
        rows.append(("sample_weight zero on a whole class", np.where(y == y[0], 0.0, 1.0),
                     "either"))
    out = [_P("data", est, name, fit_call, dict(est=est, X=X, y=y,
                                                 fit_kw=dict(sample_weight=wb)),
              ("sample_weight",), expect, _expect_text(expect, "sample_weight"),
              f"{est}(**small).fit(X, y, sample_weight=w_bad)  # {name}")
           for name, wb, expect in rows]
    for f in (1e-50, 1e-30, 1e30, 1e300):
        out.append(_P("data", est, f"sample_weight all {f:g}", fit_equal,
                      dict(est=est, a=dict(X=X, y=y, fit_kw=dict(sample_weight=np.full(n, f))),
                           b=dict(X=X, y=y)),
                      ("sample_weight",), "ok",
                      "equal weights in any units give the unweighted fit",
                      f"{est}(**small).fit(X, y, sample_weight=np.full(n, {f:g}))"))
    return out


def _scale_probes(est):
    """Predictions must follow the units of X and y (and be unchanged by an offset of X)."""
    X, y = data(est)
    clf = is_classifier(est)
    out = []
    factors = (1e-13, 1e13, 1e-300, 1e200) if family(est) == "ndp" else (1e-13, 1e13)
    for f in factors:
        out.append(_P("data", est, f"X in units x{f:g}", fit_equal,
                      dict(est=est, a=dict(X=X * f, y=y), b=dict(X=X, y=y)), ("X",), "ok",
                      "the same predictions as in the original units",
                      f"{est}(**small).fit(X * {f:g}, y).predict(X * {f:g})"))
    for c in (1e4, 1e6, 1e8):
        out.append(_P("data", est, f"X shifted by {c:g}", fit_equal,
                      dict(est=est, a=dict(X=X + c, y=y), b=dict(X=X, y=y)), ("X",), "ok",
                      "the same predictions: standardisation removes the offset",
                      f"{est}(**small).fit(X + {c:g}, y).predict(X + {c:g})"))
    if not clf:
        for f in (1e-13, 1e13, 1e200, 1e-300):
            out.append(_P("data", est, f"y in units x{f:g}", fit_equal,
                          dict(est=est, a=dict(X=X, y=y * f), b=dict(X=X, y=y), scale=f),
                          Y_NAMES, "ok", f"predictions x{f:g}",
                          f"{est}(**small).fit(X, y * {f:g}).predict(X)"))
        for c in (1e8, 1e12):
            out.append(_P("data", est, f"y shifted by {c:g}", fit_equal,
                          dict(est=est, a=dict(X=X, y=y + c), b=dict(X=X, y=y), shift=c,
                               rtol=1e-3 * 3 / c), Y_NAMES, "ok",
                          f"predictions + {c:g} (to 1e-3 of y's spread)",
                          f"{est}(**small).fit(X, y + {c:g}).predict(X)"))
    return out


def _difformer_extra(est):
    """adjacency, validation_mask and graph mode."""
    X, y = data(est)
    n = len(X)
    A = _ring(n)
    Ad = A.toarray()
    out = []
    adj_rows = [
        ("adjacency not square", Ad[:, :-1], "error"),
        ("adjacency of another size", Ad[:-1, :-1], "error"),
        ("adjacency 3-D", Ad[:, :, None], "error"),
        ("adjacency negative", _with(Ad.copy(), (0, 1), -1.0), "error"),
        ("adjacency NaN", _with(Ad.copy(), (0, 1), np.nan), "error"),
        ("adjacency inf", _with(Ad.copy(), (0, 1), np.inf), "error"),
        ("adjacency x1e300 (beyond float32)", Ad * 1e300, "error"),
        ("adjacency strings", Ad.astype(str), "either"),
        ("adjacency as a list", Ad.tolist(), "ok"),
        ("adjacency bool", Ad > 0, "ok"),
        ("adjacency all zero", np.zeros((n, n)), "ok"),
        ("adjacency with self loops", Ad + np.eye(n), "ok"),
        ("adjacency with an isolated node, attention_scope='graph'",
         _with(_with(Ad.copy(), (0, slice(None)), 0.0), (slice(None), 0), 0.0), "ok"),
    ]
    for name, Ab, expect in adj_rows:
        params = dict(attention_scope="graph") if "scope" in name else {}
        out.append(_P("data", est, name, fit_call,
                      dict(est=est, X=X, y=y, fit_kw=dict(adjacency=Ab), params=params),
                      ("adjacency",), expect, _expect_text(expect, "adjacency"),
                      f"{est}(**small).fit(X, y, adjacency=A_bad)  # {name}"))
    for kernel in ("softmax", "advanced"):
        iso = _with(_with(Ad.copy(), (0, slice(None)), 0.0), (slice(None), 0), 0.0)
        out.append(_P("data", est, f"isolated node, kernel={kernel!r}, scope 'graph'", fit_call,
                      dict(est=est, X=X, y=y, fit_kw=dict(adjacency=iso),
                           params=dict(attention_scope="graph", kernel=kernel)),
                      ("adjacency",), "ok", "finite predictions for a node without edges",
                      f"{est}(kernel={kernel!r}, attention_scope='graph', **small)"
                      ".fit(X, y, adjacency=A_with_isolated_node)"))
    same = [("adjacency asymmetric (upper triangle)", sp.triu(A).tocsr(), A, 1e-5),
            ("adjacency sparse vs dense", A, Ad, 1e-5),
            ("adjacency x1e38 (vs x1e30)", A * 1e38, A * 1e30, 1e-4),
            ("adjacency x1e-300 (vs no edges)", A * 1e-300, sp.csr_matrix(A.shape), 1e-4),
            ("adjacency x1e-40 (vs no edges)", A * 1e-40, sp.csr_matrix(A.shape), 1e-4),
            ("adjacency with stored zeros", _stored_zeros(A), A, 1e-5)]
    for name, Aa, Ab, tol in same:
        out.append(_P("data", est, name, fit_equal,
                      dict(est=est, a=dict(X=X, y=y, fit_kw=dict(adjacency=Aa),
                                           predict_kw=dict(adjacency=Aa)),
                           b=dict(X=X, y=y, fit_kw=dict(adjacency=Ab),
                                  predict_kw=dict(adjacency=Ab)), rtol=tol),
                      ("adjacency",), "ok",
                      "the predictions of the equivalent graph: symmetrised as max(A, A.T); "
                      "edges far heavier than the unit self loops act alike, edges far lighter "
                      "act as no edges",
                      f"{est}(**small).fit(X, y, adjacency=A2).predict(X, adjacency=A2)"))
    m = np.zeros(n, dtype=bool)
    m[:8] = True
    mask_rows = [("validation_mask of 0/1 ints", m.astype(int), "either"),
                 ("validation_mask one short", m[:-1], "error"),
                 ("validation_mask all True", np.ones(n, dtype=bool), "error"),
                 ("validation_mask all False", np.zeros(n, dtype=bool), "error"),
                 ("validation_mask as a list", m.tolist(), "either")]
    for name, mb, expect in mask_rows:
        out.append(_P("data", est, name, fit_call,
                      dict(est=est, X=X, y=y, fit_kw=dict(validation_mask=mb)),
                      ("validation_mask",), expect, _expect_text(expect, "validation_mask"),
                      f"{est}(**small).fit(X, y, validation_mask=m_bad)  # {name}"))
    ids = np.arange(n).reshape(-1, 1)
    graph_rows = [
        ("graph mode, all nodes", "all", "ok", {}),
        ("graph mode, duplicate node ids", np.r_[ids, ids[:1]], "error", {}),
        ("graph mode, node id out of range", _with(ids.copy(), (0, 0), n), "error", {}),
        ("graph mode, negative node id", _with(ids.copy(), (0, 0), -1), "error", {}),
        ("graph mode, node ids 1.5", ids + 0.5, "error", {}),
        ("graph mode, node ids as floats 2.0", ids.astype(float), "ok", {}),
        ("graph mode, node ids as strings", ids.astype(str), "error", {}),
        ("graph mode, ids of shape (n, 2)", np.c_[ids, ids], "error", {}),
        ("graph mode, graph is a tuple", "all", "error", {"graph_tuple": True}),
        ("graph mode with an adjacency too", "all", "error", {"adjacency": A}),
    ]
    for name, ids_b, expect, extra in graph_rows:
        if extra.get("graph_tuple"):
            probe = _P("data", est, name, fit_call,
                       dict(est=est, X=ids, y=y, fit_kw=dict(graph=(X, A)), check=None),
                       ("graph",), expect, _expect_text(expect, "graph"),
                       f"{est}(**small).fit(ids, y, graph=(X, A))")
        else:
            yb = "same" if isinstance(ids_b, str) or len(ids_b) == n else \
                np.r_[y, y[:1]] if len(ids_b) == n + 1 else y
            probe = _P("data", est, name, graph_call,
                       dict(est=est, ids=ids_b, y=yb, **extra), ("X", "node ids", "graph",
                                                                  "adjacency"),
                       expect, _expect_text(expect, "the node ids"),
                       f"{est}(**small).fit(ids_bad, y, graph=Graph(X, A))  # {name}")
        out.append(probe)
    for name, pg, expect in (("predict on a graph with other features", "fewer_features",
                              "error"), ("predict on another graph", "other", "ok")):
        out.append(_P("methods", est, name, graph_call,
                      dict(est=est, ids="all", y="same", predict_ids="all", predict_graph=pg),
                      ("graph", "features"), expect, _expect_text(expect, "the graph"),
                      f"{est}(**small).fit(ids, y, graph=g).predict(ids, graph=g2)"))
    return out


def _stored_zeros(A):
    B = A.copy().tocoo()
    rows = np.r_[B.row, [0, 1]]
    cols = np.r_[B.col, [3, 4]]
    vals = np.r_[B.data, [0.0, 0.0]]
    return sp.csr_matrix((vals, (rows, cols)), shape=A.shape)


def _flowformer_extra(est):
    X, y = data(est)
    X3 = np.stack([X, np.roll(X, 1, axis=1), -X], axis=2)  # (n, 12, 3)
    out = []
    A = np.ones((3, 3))
    rows = [
        ("channel adjacency of another size", np.ones((2, 2)), "error"),
        ("channel adjacency negative", _with(A.copy(), (0, 1), -1.0), "error"),
        ("channel adjacency NaN", _with(A.copy(), (0, 1), np.nan), "error"),
        ("channel adjacency asymmetric", np.triu(A), "ok"),
        ("channel adjacency all zero", np.zeros((3, 3)), "ok"),
    ]
    for name, Ab, expect in rows:
        out.append(_P("data", est, name, fit_call,
                      dict(est=est, X=X3, y=y, fit_kw=dict(adjacency=Ab)), ("adjacency",),
                      expect, _expect_text(expect, "adjacency"),
                      f"{est}(**small).fit(X3, y, adjacency=A_bad)  # {name}"))
    out.append(_P("data", est, "X (n, L, 1) equals 2-D X", fit_equal,
                  dict(est=est, a=dict(X=X[:, :, None], y=y), b=dict(X=X, y=y), rtol=1e-5),
                  ("X",), "ok", "the same predictions as the 2-D array",
                  f"{est}(**small).fit(X[:, :, None], y).predict(X[:, :, None])"))
    out.append(_P("data", est, "NCL layout equals NLC", warned_or_equal,
                  dict(est=est, a=dict(X=X3.transpose(0, 2, 1).copy(), y=y),
                       b=dict(X=X3, y=y), words=("X", "layout='NCL'"), params=None,
                       rtol=1e-5),
                  ("X",), "either", "NCL data read with the default layout: a warning or the "
                  "same predictions", f"{est}(**small).fit(X_ncl, y)"))
    return out


def _ndp_extra():
    est = "NDPRegressor"
    X, y = data(est)
    out = []
    Q = np.linspace(-0.2, 1.2, 7)[:, None]
    calls = [
        ("predict return_std and return_cov", "predict", (Q,),
         dict(return_std=True, return_cov=True), "error", ("return_std", "return_cov"), "none"),
        ("predict return_cov", "predict", (Q,), dict(return_cov=True), "ok", (), "cov"),
        ("predict return_std", "predict", (Q,), dict(return_std=True), "ok", (), "std"),
        ("predict far outside the training range", "predict", (Q * 1e3,), {}, "either",
         ("X",), "finite"),
        ("log_likelihood y with NaN", "log_likelihood", (X[:3], [0.1, np.nan, 0.2]), {},
         "error", Y_NAMES, "finite"),
        ("log_likelihood y with inf", "log_likelihood", (X[:3], [0.1, np.inf, 0.2]), {},
         "error", Y_NAMES, "finite"),
        ("log_likelihood y one short", "log_likelihood", (X[:3], [0.1, 0.2]), {}, "error",
         Y_NAMES, "finite"),
        ("log_likelihood y strings", "log_likelihood", (X[:3], ["a", "b", "c"]), {}, "error",
         Y_NAMES, "finite"),
        ("log_likelihood y 2-D (3, 2)", "log_likelihood", (X[:3], np.ones((3, 2))), {},
         "error", Y_NAMES, "finite"),
        ("log_likelihood joint with n_samples <= n_X", "log_likelihood", (X, y),
         dict(joint=True), "error", ("n_samples", "joint"), "finite"),
        ("log_likelihood X with NaN", "log_likelihood", (_with(X[:3].copy(), (0, 0), np.nan),
                                                         y[:3]), {}, "error", ("X",), "finite"),
        ("sample_prior n_samples=0", "sample_prior", (Q,), dict(n_samples=0), "error",
         ("n_samples",), "none"),
        ("sample_prior X with NaN", "sample_prior", (_with(Q.copy(), (0, 0), np.nan),), {},
         "error", ("X",), "none"),
        ("sample_prior", "sample_prior", (Q,), dict(n_samples=3, random_state=0), "ok", (),
         "samples:3"),
        ("sample_y n_samples=True", "sample_y", (Q,), dict(n_samples=True), "error",
         ("n_samples",), "none"),
        ("sample_y", "sample_y", (Q,), dict(n_samples=2, random_state=0), "ok", (),
         "samples:2"),
    ]
    for name, method, args, kw, expect, names, result in calls:
        out.append(_P("methods", est, name, method_call,
                      dict(est=est, method=method, args=args, kw=kw, result=result),
                      names or ("X",), expect, _expect_text(expect, " / ".join(names or ("X",))),
                      f"ndp.{method}(...)  # {name}"))
    out.append(_P("data", est, "one point, normalize_y=False", fit_call,
                  dict(est=est, X=X[:1], y=y[:1], params=dict(normalize_y=False)), ("X",),
                  "ok", "a fit on one point", "NDPRegressor(normalize_y=False).fit(X[:1], y[:1])"))
    out.append(_P("data", est, "more points than max_context", fit_call,
                  dict(est=est, X=np.linspace(0, 1, 40)[:, None], y=np.sin(np.arange(40.0)),
                       params=dict(max_context=8)), ("max_context",), "ok",
                  "a warning naming max_context and a working fit",
                  "NDPRegressor(max_context=8).fit(X40, y40)"))
    return out


def _method_probes(est):
    """Bad arguments to the fitted estimator's prediction methods; invariances; side effects."""
    X, y = data(est)
    fam = family(est)
    clf = is_classifier(est)
    nan = X[:4].copy()
    nan[0, 0] = np.nan
    predict = "predict_proba" if clf else "predict"
    rows = [
        (f"{predict} before fit", predict, (X,), {}, "error", ("fit",), "none", False),
        (f"{predict} X with NaN", predict, (nan,), {}, "error", ("X",), "none", True),
        (f"{predict} X with inf", predict, (np.where(np.isnan(nan), np.inf, nan),), {},
         "error", ("X",), "none", True),
        (f"{predict} with another number of columns", predict,
         (np.c_[X[:4], X[:4, :1]],), {}, "error", ("X", "features", "steps", "sequence"),
         "none", True),
        (f"{predict} with 0 rows", predict, (X[:0],), {}, "either", ("X",), "none", True),
        (f"{predict} with 1 row", predict, (X[:1],), {}, "ok", (), "finite", True),
        (f"{predict} 1-D X", predict, (X[0],), {}, "error", ("X",), "none", True),
        (f"{predict} X as strings", predict, (X[:4].astype(str).astype(object) + "x",), {},
         "error", ("X",), "none", True),
        ("sample_posterior before fit", "sample_posterior", (X[:3],), {}, "error", ("fit",),
         "none", False),
        ("score before fit", "score", (X, y), {}, "error", ("fit",), "none", False),
        ("score y one short", "score", (X, y[:-1]), {}, "error", Y_NAMES, "none", True),
        ("score sample_weight one short", "score", (X, y), dict(sample_weight=np.ones(
            len(X) - 1)), "error", ("sample_weight",), "none", True),
        ("score", "score", (X, y), {}, "ok", (), "score", True),
        ("sample_posterior", "sample_posterior", (X[:3],), dict(n_samples=4, random_state=0),
         "ok", (), "samples:4", True),
        ("sample_posterior n_samples=1", "sample_posterior", (X[:3],),
         dict(n_samples=1), "ok", (), "samples:1", True),
        ("sample_posterior n_samples=np.int64(3)", "sample_posterior", (X[:3],),
         dict(n_samples=np.int64(3)), "ok", (), "samples:3", True),
        ("sample_posterior X with NaN", "sample_posterior", (nan,), dict(n_samples=2),
         "error", ("X",), "none", True),
        ("sample_posterior random_state='x'", "sample_posterior", (X[:3],),
         dict(n_samples=2, random_state="x"), "error", ("random_state",), "none", True),
    ]
    for bad in (0, -1, True, 1.5, "10", None):
        rows.append((f"sample_posterior n_samples={bad!r}", "sample_posterior", (X[:3],),
                     dict(n_samples=bad), "error", ("n_samples",), "none", True))
    if fam == "ndp" or est == "FlowformerRegressor":
        rows.append(("sample_posterior n_samples=10**9", "sample_posterior", (X[:3],),
                     dict(n_samples=10 ** 9), "either", ("n_samples",), "samples:1000000000",
                     True))
    if not clf:
        rows.append(("score y with NaN rows", "score", (X, _with(y.astype(float), 0, np.nan)),
                     {}, "either", Y_NAMES, "score", True))
        if fam != "ndp":
            rows.append(("predict return_std", "predict", (X[:5],), dict(return_std=True), "ok",
                         (), "std", True))
    else:
        rows += [("score y all unlabelled", "score", (X, -np.ones(len(X), dtype=int)), {},
                  "error" if fam == "difformer" else "ok", Y_NAMES,
                  "none" if fam == "difformer" else "score", True),
                 ("score y with unseen labels", "score", (X, y + 10), {}, "ok", (), "score",
                  True),
                 ("predict_proba with an adjacency keyword", "predict_proba", (X,),
                  dict(adjacency=np.eye(len(X))), "either" if fam == "difformer" else "error",
                  ("adjacency",), "none", True)]
    if fam == "difformer":
        rows += [
            ("attention_graph k=0", "attention_graph", (X,), dict(k=0), "error", ("k",),
             "none", True),
            ("attention_graph k=True", "attention_graph", (X,), dict(k=True), "error", ("k",),
             "none", True),
            ("attention_graph k=1.5", "attention_graph", (X,), dict(k=1.5), "error", ("k",),
             "none", True),
            ("attention_graph k=10**9", "attention_graph", (X,), dict(k=10 ** 9), "either",
             ("k",), f"attention:{len(X)}", True),
            ("attention_graph k=np.int64(3)", "attention_graph", (X,), dict(k=np.int64(3)),
             "ok", (), "attention:3", True),
            ("attention_graph layer=5", "attention_graph", (X,), dict(layer=5), "error",
             ("layer",), "none", True),
            ("attention_graph layer=True", "attention_graph", (X,), dict(layer=True), "error",
             ("layer",), "none", True),
            ("attention_graph layer=-1", "attention_graph", (X,), dict(layer=-1), "ok", (),
             "attention:10", True),
            # the fixture's model was fitted without a graph: its network has no graph term
            ("attention_graph with an adjacency", "attention_graph", (X, _ring(len(X))),
             dict(k=4), "error", ("adjacency",), "none", True),
            ("attention_graph X with NaN", "attention_graph", (nan,), {}, "error", ("X",),
             "none", True),
            ("predict with an adjacency of another size", predict, (X[:5], np.eye(4)), {},
             "error", ("adjacency",), "none", True),
            ("predict with a joint adjacency", predict, (X[:6], _ring(6)), {}, "error",
             ("adjacency",), "none", True),
        ]
    elif fam == "flowformer":
        rows += [(f"{predict} with sequences of another length", predict, (X[:4, :10],), {},
                  "error", ("X", "features", "steps", "length"), "none", True),
                 (f"{predict} 3-D with 2 channels", predict,
                  (np.stack([X[:4], X[:4]], 2),), {}, "error", ("X", "channels"), "none",
                  True)]
    out = []
    for name, method, args, kw, expect, names, result, do_fit in rows:
        out.append(_P("methods", est, name, method_call,
                      dict(est=est, method=method, args=args, kw=kw, result=result, fit=do_fit),
                      names or ("X",), expect,
                      _expect_text(expect, " / ".join(names or ("X",)))
                      if expect != "ok" else f"a result that passes the '{result}' check",
                      f"{'fitted' if do_fit else 'unfitted'}.{method}(...)  # {name}",
                      bad=kw.get("n_samples", kw.get("k"))))
    if fam != "ndp":
        hows = ("batch", "order", "repeat")
    else:
        hows = ("repeat",)
    for how in hows:
        out.append(_P("methods", est, f"predict invariance: {how}", predict_invariance,
                      dict(est=est, how=how), ("X",), "ok",
                      {"batch": "predictions do not depend on how rows are batched",
                       "order": "permuting rows permutes predictions",
                       "repeat": "predict is repeatable and leaves the estimator unchanged"}[how],
                      f"fitted.predict(X[:5]) vs fitted.predict(X)[:5]  # {how}"))
    out.append(_P("methods", est, "fit and predict leave the inputs unchanged",
                  inputs_untouched, dict(est=est, with_adjacency=fam == "difformer"), ("X",),
                  "ok", "the caller's X, y, sample_weight and adjacency are not modified",
                  f"{est}(**small).fit(X, y, ...); X, y unchanged?"))
    out.append(_P("methods", est, "global state unchanged", globals_untouched, dict(est=est),
                  ("X",), "ok", "no change to the caller's RNGs, threads, grad mode, dtype, "
                  "warning filters or scikit-learn config",
                  f"{est}(**small).fit(X, y); np.random / torch RNG states unchanged?"))
    # sklearn API misuse
    misuse = [("set_params with an unknown name", "set_params", (), dict(hiden_dim=3),
               ("hiden_dim",), False),
              ("fit with an unknown keyword", "fit", (X, y), dict(adjacancy=1),
               ("adjacancy",), False)]
    for name, method, args, kw, names, do_fit in misuse:
        out.append(_P("methods", est, name, method_call,
                      dict(est=est, method=method, args=args, kw=kw, fit=do_fit), names, "error",
                      _expect_text("error", names[0]), f"est.{method}(**{kw!r})"))
    return out


def _graph_object_probes():
    X, _ = data("DIFFormerClassifier")
    A = _ring(len(X))
    rows = [("features with NaN", _with(X.copy(), (0, 0), np.nan), A, "error", ("features",)),
            ("adjacency of another size", X, A[:-1, :-1], "error", ("adjacency",)),
            ("features 1-D", X[:, 0], A, "error", ("features",)),
            ("sparse features", sp.csr_matrix(X), A, "ok", ()),
            ("adjacency negative", X, A * -1.0, "error", ("adjacency",))]
    return [_P("data", "Graph", name, make_graph, dict(features=F, adjacency=Ab),
               names or ("features",), expect, _expect_text(expect, " / ".join(names or ("x",))),
               f"Graph(features, adjacency)  # {name}")
            for name, F, Ab, expect, names in rows]


def _partial_fit_probes(est):
    X, y = data(est)
    out = []
    if family(est) == "ndp":
        return out
    out.append(_P("data", est, "partial_fit first call", fit_call,
                  dict(est=est, X=X, y=y, partial=True), ("X",), "ok",
                  "one epoch from scratch; sane predictions", f"{est}(**small).partial_fit(X, y)"))
    out.append(_P("data", est, "partial_fit then fewer columns", partial_twice,
                  dict(est=est, second=dict(X=X[:, :-1], y=y)), ("X", "features", "steps"),
                  "error", "a clear error: the number of columns changed",
                  "est.partial_fit(X, y); est.partial_fit(X[:, :-1], y)"))
    if is_classifier(est):
        out.append(_P("data", est, "partial_fit then a new class", partial_twice,
                      dict(est=est, second=dict(X=X, y=np.where(y == 0, 7, y))),
                      ("classes", "y", "labels"), "error", "a clear error: a new class",
                      "est.partial_fit(X, y); est.partial_fit(X, y_with_new_class)"))
        classes = np.unique(y)
        out.append(_P("data", est, "partial_fit classes missing a label", fit_call,
                      dict(est=est, X=X, y=y, partial=True,
                           fit_kw=dict(classes=classes[:-1])), ("classes", "y"), "error",
                      "a clear error naming classes", "est.partial_fit(X, y, classes=[0, 1])"))
        out.append(_P("data", est, "partial_fit classes with duplicates", fit_call,
                      dict(est=est, X=X, y=y, partial=True,
                           fit_kw=dict(classes=np.r_[classes, classes])), ("classes",), "ok",
                      "duplicates ignored", "est.partial_fit(X, y, classes=[0, 1, 2, 0, 1, 2])"))
        out.append(_P("data", est, "partial_fit on a subset of the classes given", partial_twice,
                      dict(est=est, first_kw=dict(classes=np.r_[classes, 99]),
                           second=dict(X=X, y=y)), ("classes",), "ok",
                      "later calls keep the declared classes",
                      "est.partial_fit(X, y, classes=[0, 1, 2, 99]); est.partial_fit(X, y)"))
    else:
        out.append(_P("data", est, "partial_fit then 2 outputs", partial_twice,
                      dict(est=est, second=dict(X=X, y=np.c_[y, y])), ("y", "outputs"),
                      "error", "a clear error: the number of outputs changed",
                      "est.partial_fit(X, y); est.partial_fit(X, np.c_[y, y])"))
    if family(est) == "difformer":  # partial_fit keeps a table's rows: dense beside sparse
        out.append(_P("data", est, "partial_fit then a sparse batch of new rows", partial_twice,
                      dict(est=est, second=dict(X=sp.csr_matrix(X + 0.5), y=y)), ("X",),
                      "ok", "the kept dense rows and the sparse batch train together; sane "
                      "predictions",
                      "est.partial_fit(X, y); est.partial_fit(csr_matrix(X + 0.5), y)"))
    if is_classifier(est):
        out.append(_P("data", est, "warm_start refit with another class", warm_twice,
                      dict(est=est, second=dict(X=X, y=np.where(y == 0, 7, y))),
                      ("classes", "y", "labels"), "error",
                      "a clear error: warm start needs the same classes",
                      f"{est}(warm_start=True).fit(X, y).fit(X, y_with_class_7)"))
    if family(est) == "flowformer":
        out.append(_P("data", est, "warm_start refit with 2 channels", warm_twice,
                      dict(est=est, second=dict(X=np.stack([X, X], 2), y=y)),
                      ("X", "channels"), "error",
                      "a clear error: warm start needs the same channels",
                      f"{est}(warm_start=True).fit(X, y).fit(np.stack([X, X], 2), y)"))
    out.append(_P("data", est, "warm_start refit on fewer columns", warm_twice,
                  dict(est=est, second=dict(X=X[:, :-1], y=y)), ("X", "features", "steps"),
                  "error", "a clear error: warm start needs the same inputs",
                  f"{est}(warm_start=True).fit(X, y).fit(X[:, :-1], y)"))
    return out


def partial_twice(tmp, est, second, first_kw=None):
    X, y = data(est)
    model = make(est).partial_fit(X, y, **(first_kw or {}))
    model.partial_fit(second["X"], second["y"])
    return then("predict", lambda: check_sane(model, second["X"]))


def warm_twice(tmp, est, second):
    X, y = data(est)
    model = make(est, warm_start=True).fit(X, y)
    model.fit(second["X"], second["y"])
    return then("predict", lambda: check_sane(model, second["X"]))


def probes():
    out = []
    for est in ESTIMATORS:
        out += _x_probes(est) + _y_probes(est) + _scale_probes(est) + _method_probes(est)
        out += _partial_fit_probes(est)
        if family(est) != "ndp":
            out += _weight_probes(est)
        if family(est) == "difformer":
            out += _difformer_extra(est)
        if family(est) == "flowformer":
            out += _flowformer_extra(est)
        if is_classifier(est):
            out += _label_probes(est)
    out += _ndp_extra() + _graph_object_probes()
    return out

