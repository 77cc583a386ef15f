"""Injected faults and persistence.

``faults``: a ``KeyboardInterrupt`` at a random epoch (at an epoch's end and in the middle of
one, through a skorch callback, with ``n_init``, ``partial_fit`` and warm starts), refits that
fail in every way (a bad parameter, bad data, divergence, a failing callback, running out of
memory) and must leave the previous fit exactly as it was, a fresh refit on other data, NDP
prior caches that are truncated, garbage, poisoned (NaN weights or a malicious pickle behind a
matching checksum), locked, written by several processes at once or by one that is killed,
and pretrained weight files damaged the same ways.

``persistence``: same seed same model, ``clone``, ``pickle``, ``joblib``, ``copy.deepcopy``,
``save``/``load`` round trips (predictions, posterior samples and the ability to keep
training), and ``load`` of files that are truncated, empty, of another kind or missing.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import pickle
import zlib
from pathlib import Path

import _reliability_core as core
import numpy as np
from _reliability_core import ESTIMATORS, TINY_PRIOR, Probe, Wrong, check_sane, data, family, make
from skorch.callbacks import Callback


class Interrupt(Callback):
    """Raise ``KeyboardInterrupt`` (a Ctrl-C) at the end of epoch ``epoch``, or in the middle
    of it (``where="batch"``: after its first training batch)."""

    def __init__(self, epoch, where="epoch"):
        self.epoch = epoch
        self.where = where

    def on_epoch_end(self, net, **kwargs):
        if self.where == "epoch" and len(net.history) == self.epoch:
            raise KeyboardInterrupt

    def on_batch_end(self, net, training=None, **kwargs):
        if self.where == "batch" and training and len(net.history) == self.epoch:
            raise KeyboardInterrupt


class Boom(Callback):
    """A user callback that fails at the end of epoch 2."""

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == 2:
            raise RuntimeError("boom: a user callback failed")


def _epoch_for(est, salt):
    """A random epoch in [1, 5], fixed per estimator and probe."""
    return 1 + zlib.crc32(f"{est}/{salt}".encode()) % 5


# -- interrupts -------------------------------------------------------------------------------
def interrupt(tmp, est, epoch, where="epoch", n_init=1, mode="fit"):
    """Interrupt training; the fit must end with a warning, keep a usable model and say which
    epoch it reached."""
    import warnings

    X, y = data(est)
    params = dict(max_epochs=8, n_iter_no_change=50, n_init=n_init)
    if mode == "warm":
        model = make(est, warm_start=True, **params).fit(X, y)
        n0 = len(model.history_)
        model.set_params(callbacks=[Interrupt(n0 + epoch, where)])
    else:
        model = make(est, callbacks=[Interrupt(epoch, where)], **params)
        n0 = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if mode == "partial":
            model.partial_fit(X, y)
            model.partial_fit(X, y)
        else:
            model.fit(X, y)
    said = [str(w.message) for w in caught if "interrupt" in str(w.message).lower()]
    if mode != "partial":
        if not said:
            raise Wrong("training was interrupted but fit returned without a warning")
        reached = len(model.history_) - n0
        expected = epoch if where == "epoch" else epoch
        if reached != expected:
            raise Wrong(f"history_ holds {reached} epochs of this call; interrupted in epoch "
                        f"{epoch}")
    check_sane(model, X)
    model.set_params(callbacks=None, warm_start=True)
    core.then("continuing training after the interrupt", lambda: model.fit(X, y))
    return f"warned ({said[0][:80] if said else 'partial_fit'}), model usable, training continues"


def interrupt_prior(tmp, cache):
    """An interrupted prior training propagates KeyboardInterrupt (documented), writes no cache
    entry, and the next fit trains and caches the prior."""
    X, y = data("NDPRegressor")
    model = make("NDPRegressor", **TINY_PRIOR, cache_dir=cache,
                 callbacks=[Interrupt(1, "batch")])
    try:
        model.fit(X, y)
    except KeyboardInterrupt:
        pass
    else:
        raise Wrong("fit returned although the prior training was interrupted")
    left = sorted(p.name for p in Path(cache).glob("*") if not p.name.endswith(".lock"))
    if left:
        raise Wrong(f"the interrupted training left {left} in the cache")
    model.set_params(callbacks=None)
    model.fit(X, y)
    return check_sane(model, X)


# -- failed refits ------------------------------------------------------------------------------
FAILURES = {
    "a bad parameter": "param",
    "X with NaN": "nan_x",
    "unusable y": "bad_y",
    "a diverging learning rate": "diverge",
    "a failing callback": "callback",
    "running out of memory": "memory",
    "a missing prior file": "prior",
}


def _fail(model, est, how, X, y, tmp):
    """Make a refit of ``model`` fail ``how``; return the exception."""
    Xf, yf = X, y
    if how == "param":
        model.set_params(**({"n_samples": 0} if family(est) == "ndp" else {"hidden_dim": 0}))
    elif how == "nan_x":
        Xf = X.copy()
        Xf[0, 0] = np.nan
    elif how == "bad_y":
        yf = np.zeros(len(y), dtype=int) if core.is_classifier(est) else np.full(len(y), np.inf)
    elif how == "diverge":
        model.set_params(lr=1e4)
        yf = y if core.is_classifier(est) else y * 1e3
    elif how == "callback":
        model.set_params(callbacks=[Boom()], max_epochs=5, n_iter_no_change=50)
    elif how == "memory":
        model.set_params(hidden_dim=2 ** 40, n_heads=1)
    elif how == "prior":
        model.set_params(prior=os.path.join(tmp, "missing.pt"))
    try:
        model.fit(Xf, yf)
    except Exception as exc:  # noqa: BLE001 - any error: the point is the state after it
        return exc
    raise Wrong(f"the refit with {how} did not fail")


def failed_refit(tmp, est, how, warm=False):
    """A refit that fails must leave the fitted estimator exactly as it was."""
    model, X, y = core.fitted(est, **({"warm_start": True} if warm else {}))
    params = model.get_params()
    before = {k: v for k, v in core.state_of(model).items() if k not in params}
    out0 = core.outputs(model, X)
    exc = _fail(model, est, how, X, y, tmp)
    after = {k: v for k, v in core.state_of(model).items() if k not in params}
    core.check_same_state(before, after,
                          f"the estimator after a failed refit ({type(exc).__name__})")
    model.set_params(**params)  # set_params is not part of fit: undo it before predicting
    core.check_close(core.outputs(model, X), out0, "predictions after the failed refit", atol=0.0)
    core.then("a clean refit after the failure", lambda: model.fit(X, y))
    return f"state and predictions unchanged after {type(exc).__name__}; clean refit works"


def failed_first_fit(tmp, est, how):
    """A first fit that fails leaves an unfitted estimator (no fitted attributes)."""
    from sklearn.exceptions import NotFittedError

    X, y = data(est)
    model = make(est)
    params = set(model.get_params())
    _fail(model, est, how, X, y, tmp)
    left = [k for k in vars(model) if k.endswith("_") and k not in params
            and not k.startswith("__")]
    if left:
        raise Wrong(f"fitted attributes left after a failed first fit: {left}")
    try:
        model.predict(X)
    except NotFittedError:
        return "unfitted, predict raises NotFittedError"
    raise Wrong("predict works after a failed first fit")


def refit_other_data(tmp, est):
    """A plain refit on data of another shape replaces everything of the first fit."""
    model, X, y = core.fitted(est)
    rng = np.random.RandomState(5)
    if family(est) == "ndp":
        X2 = rng.uniform(size=(12, 2))
        y2 = np.cos(3 * X2.sum(1))
    elif family(est) == "flowformer":
        X2 = rng.normal(size=(40, 9, 2))
        y2 = (X2[:, -1, 0] > 0).astype(int) + 5 if core.is_classifier(est) else X2[:, -1, 0]
    else:
        X2 = rng.normal(size=(30, 3))
        y2 = (X2[:, 0] > 0).astype(int) + 5 if core.is_classifier(est) else X2[:, 0]
    model.fit(X2, y2)
    if model.n_features_in_ != X2.shape[1]:
        raise Wrong(f"n_features_in_ is {model.n_features_in_} after a refit on "
                    f"{X2.shape[1]} features")
    if core.is_classifier(est) and sorted(model.classes_.tolist()) != sorted(set(y2.tolist())):
        raise Wrong(f"classes_ {model.classes_} after a refit on classes {set(y2.tolist())}")
    return check_sane(model, X2)


# -- NDP prior caches ---------------------------------------------------------------------------
def _fit_prior(cache, **extra):
    X, y = data("NDPRegressor")
    return make("NDPRegressor", **TINY_PRIOR, cache_dir=str(cache), **extra).fit(X, y)


def fit_prior_files(cache):
    """Fit a small prior into ``cache`` (run in another process); return the entry's files and
    predictions."""
    import torch

    torch.set_num_threads(1)
    model = _fit_prior(cache)
    X, _ = data("NDPRegressor")
    return sorted(p.name for p in Path(cache).iterdir()), model.predict(X).tolist()


def _forget():
    from skdiff.ndp._prior_cache import _MEMORY

    _MEMORY.clear()


def _entry(cache):
    pt = next(Path(cache).glob("prior_*.pt"))
    return pt, pt.with_suffix(".json")


def _rewrite_with_manifest(pt, js, data_bytes):
    """Replace the weights and make the manifest's checksum match them."""
    pt.write_bytes(data_bytes)
    manifest = json.loads(js.read_text())
    manifest["sha256"] = hashlib.sha256(data_bytes).hexdigest()
    js.write_text(json.dumps(manifest))


class _Marker:
    """A pickle that creates a file when loaded (what a malicious weights file would do)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def cache_fault(tmp, fault):
    """Damage the cache entry of a small prior; the next fit must discard it (with a warning)
    or refuse it, never use it: predictions equal to the clean prior's."""
    import warnings

    import torch

    cache = Path(tmp) / "cache_fault"
    X, _ = data("NDPRegressor")
    clean = _fit_prior(cache).predict(X)
    pt, js = _entry(cache)
    good = pt.read_bytes()
    marker = Path(tmp) / "pwned"
    if fault == "truncated":
        pt.write_bytes(good[: len(good) // 2])
    elif fault == "empty":
        pt.write_bytes(b"")
    elif fault == "garbage manifest":
        js.write_text("{not json")
    elif fault == "no manifest":
        js.unlink()
    elif fault == "no weights":
        pt.unlink()
    elif fault == "NaN weights behind a matching checksum":
        state = torch.load(io.BytesIO(good), weights_only=True)
        buf = io.BytesIO()
        torch.save({k: torch.full_like(v, float("nan")) if v.is_floating_point() else v
                    for k, v in state.items()}, buf)
        _rewrite_with_manifest(pt, js, buf.getvalue())
    elif fault == "wrong shapes behind a matching checksum":
        state = torch.load(io.BytesIO(good), weights_only=True)
        buf = io.BytesIO()
        torch.save({k: torch.zeros(*(s + 1 for s in v.shape)) for k, v in state.items()}, buf)
        _rewrite_with_manifest(pt, js, buf.getvalue())
    elif fault == "malicious pickle behind a matching checksum":
        _rewrite_with_manifest(pt, js, pickle.dumps(_Marker(str(marker))))
    elif fault == "stale lock file":
        for lock in Path(cache).glob("*.lock"):
            lock.write_text("12345\n")
    _forget()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = _fit_prior(cache).predict(X)
    if marker.exists():
        raise Wrong("loading the cache entry ran code from the file")
    core.check_close(again, clean, "predictions after the cache fault", atol=1e-12)
    pt, js = _entry(cache)
    if fault not in ("stale lock file",) and pt.read_bytes() != good:
        raise Wrong("the rebuilt cache entry differs from the original (same seed and steps)")
    said = [str(w.message)[:100] for w in caught if "cache" in str(w.message).lower()]
    return "rebuilt or reused correctly" + (f"; warned: {said[0]}" if said else "")


def cache_concurrent(tmp, n=3):
    """Several processes fit the same missing prior into one cache at once: all succeed with
    the same predictions, one entry, no temporary files left, and the entry verifies."""
    import multiprocessing as mp
    import warnings

    cache = str(Path(tmp) / "shared_cache")
    with mp.get_context("spawn").Pool(n) as pool:
        results = pool.map(fit_prior_files, [cache] * n)
    files = {tuple(r[0]) for r in results}
    preds = [np.asarray(r[1]) for r in results]
    for p in preds[1:]:
        core.check_close(p, preds[0], "predictions of the concurrent writers", atol=0.0)
    names = sorted(os.listdir(cache))
    if len([f for f in names if f.endswith(".pt")]) != 1 or any(".tmp" in f for f in names):
        raise Wrong(f"the cache holds {names}")
    _forget()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _fit_prior(cache)
    return f"{n} writers agree; cache holds {names}; entry verifies ({len(files)} listings)"


def cache_killed_writer(tmp):
    """A process killed while it trains a prior (holding the entry's lock) must not block or
    poison the cache: the next fit trains the prior and caches a verified entry."""
    import multiprocessing as mp
    import signal
    import time
    import warnings

    cache = Path(tmp) / "killed_cache"
    ctx = mp.get_context("spawn")
    proc = ctx.Process(target=_slow_prior, args=(str(cache),))
    proc.start()
    deadline = time.time() + 120
    while time.time() < deadline and not list(cache.glob("*.lock")):
        time.sleep(0.2)
    time.sleep(2.0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    model = _fit_prior(cache)
    _forget()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _fit_prior(cache)
    X, _ = data("NDPRegressor")
    left = sorted(p.name for p in cache.iterdir())
    return check_sane(model, X) + f"; cache holds {left}"


def _slow_prior(cache):
    import torch

    torch.set_num_threads(1)
    X, y = data("NDPRegressor")
    make("NDPRegressor", **{**TINY_PRIOR, "steps_per_epoch": 100000},
         cache_dir=cache).fit(X, y)


# -- pretrained weight files --------------------------------------------------------------------
def _copy_prior(tmp, name="gp_d1"):
    import skdiff

    src = Path(skdiff.__file__).parent / "weights"
    dst = Path(tmp) / "weights"
    dst.mkdir(exist_ok=True)
    for ext in (".pt", ".json"):
        (dst / f"{name}{ext}").write_bytes((src / f"{name}{ext}").read_bytes())
    return dst / f"{name}.pt", dst / f"{name}.json"


def prior_file(tmp, fault):
    """Fit with ``prior=<path of a damaged copy of the shipped weights>``: a clear error naming
    the file, or (intact copy) the predictions of the shipped prior."""
    import torch

    pt, js = _copy_prior(tmp)
    marker = Path(tmp) / "pwned"
    target = pt
    if fault == "intact copy":
        pass
    elif fault == "truncated":
        pt.write_bytes(pt.read_bytes()[:1000])
    elif fault == "no manifest":
        js.unlink()
    elif fault == "a flipped byte":
        b = bytearray(pt.read_bytes())
        b[len(b) // 2] ^= 0xFF
        pt.write_bytes(bytes(b))
    elif fault == "NaN weights behind a matching checksum":
        state = torch.load(pt, weights_only=True)
        buf = io.BytesIO()
        torch.save({k: torch.full_like(v, float("nan")) if v.is_floating_point() else v
                    for k, v in state.items()}, buf)
        _rewrite_with_manifest(pt, js, buf.getvalue())
    elif fault == "malicious pickle behind a matching checksum":
        _rewrite_with_manifest(pt, js, pickle.dumps(_Marker(str(marker))))
    elif fault == "manifest with a bad config":
        m = json.loads(js.read_text())
        m["config"] = {"n_dims": "three"}
        js.write_text(json.dumps(m))
    elif fault == "a folder with two priors":
        _copy_prior(tmp, "se_d1")
        target = pt.parent
    elif fault == "an empty folder":
        target = Path(tmp) / "empty"
        target.mkdir()
    X, y = data("NDPRegressor")
    model = make("NDPRegressor", prior=str(target)).fit(X, y)
    if marker.exists():
        raise Wrong("loading the weights ran code from the file")
    ref = make("NDPRegressor").fit(X, y)
    return core.check_close(model.predict(X), ref.predict(X), "predictions vs the shipped prior",
                       atol=1e-12)


# -- persistence --------------------------------------------------------------------------------
def round_trip(tmp, est, how):
    """A fitted estimator survives a round trip: same predictions, same posterior samples for a
    fixed random_state, same attributes, and (trainable ones) it keeps training."""
    import joblib

    model, X, y = core.fitted(est)
    out0 = core.outputs(model, X)
    s0 = model.sample_posterior(X[:3], n_samples=3, random_state=0)
    path = os.path.join(tmp, "model.bin")
    if how == "pickle":
        again = pickle.loads(pickle.dumps(model))
    elif how == "pickle protocol 2":
        again = pickle.loads(pickle.dumps(model, protocol=2))
    elif how == "joblib":
        joblib.dump(model, path)
        again = joblib.load(path)
    elif how == "save/load":
        model.save(path)
        again = type(model).load(path)
    elif how == "deepcopy":
        again = copy.deepcopy(model)
    else:
        raise ValueError(how)
    core.check_close(core.outputs(again, X), out0, "predictions after the round trip", atol=0.0)
    core.check_close(again.sample_posterior(X[:3], n_samples=3, random_state=0), s0,
                "posterior samples after the round trip", atol=0.0)
    if sorted(vars(again)) != sorted(vars(model)):
        raise Wrong(f"attributes differ: {sorted(set(vars(model)) ^ set(vars(again)))}")
    if family(est) != "ndp":
        core.then("partial_fit after the round trip", lambda: again.partial_fit(X, y))
        check_sane(again, X)
    return f"{how}: predictions and samples identical"


def unfitted_round_trip(tmp, est):
    model = make(est)
    again = pickle.loads(pickle.dumps(model))
    if again.get_params() != model.get_params():
        raise Wrong("parameters changed in the round trip")
    X, y = data(est)
    return check_sane(again.fit(X, y), X)


def reproducible(tmp, est, how):
    """Same random_state, same fit: refitting, cloning or a fresh RandomState(0)."""
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    model, X, y = core.fitted(est)
    out0 = core.outputs(model, X)
    if how == "refit":
        other = model.fit(X, y)
    elif how == "clone":
        other = clone(model)
        try:
            other.predict(X)
        except NotFittedError:
            pass
        else:
            raise Wrong("clone of a fitted estimator is fitted")
        other.fit(X, y)
    elif how == "RandomState(0) twice":
        a = make(est, random_state=np.random.RandomState(0)).fit(X, y)
        other = make(est, random_state=np.random.RandomState(0)).fit(X, y)
        out0 = core.outputs(a, X)
    else:
        raise ValueError(how)
    return core.check_close(core.outputs(other, X), out0, f"predictions ({how})", atol=0.0)


def load_bad_file(tmp, est, what):
    """``Est.load`` of a file it cannot use: a clear error naming the file."""
    import joblib

    path = Path(tmp) / "model.joblib"
    model, X, y = core.fitted(est)
    if what == "truncated":
        model.save(path)
        path.write_bytes(path.read_bytes()[:200])
    elif what == "empty":
        path.write_bytes(b"")
    elif what == "a text file":
        path.write_text("hello\n")
    elif what == "a plain pickle of the estimator":
        path.write_bytes(pickle.dumps(model))
    elif what == "another estimator class":
        other = next(e for e in ESTIMATORS if e != est)
        make(other).save(path)
    elif what == "a missing file":
        path = Path(tmp) / "missing.joblib"
    elif what == "a folder":
        path = Path(tmp)
    elif what == "another skdiff version":
        joblib.dump({"skdiff_version": "0.0.0", "estimator": model}, path)
        again = core.est_class(est).load(path)
        return check_sane(again, X)
    core.est_class(est).load(path)
    return "loaded"


def save_to(tmp, est, where):
    model, X, _ = core.fitted(est)
    path = Path(tmp) / {"a new folder": "new/deeper/model.joblib",
                        "an existing folder": ".",
                        "over an existing file": "model.joblib"}[where]
    if where == "over an existing file":
        path.write_text("old\n")
    model.save(path)
    again = type(model).load(path)
    return core.check_close(core.outputs(again, X), core.outputs(model, X), "after save/load",
                            atol=0.0)


# -- the probe list -----------------------------------------------------------------------------
def probes():
    out = []
    for est in ESTIMATORS:
        trainable = family(est) != "ndp"
        if trainable:
            for where in ("epoch", "batch"):
                e = _epoch_for(est, where)
                out.append(Probe(
                    "faults", est, f"KeyboardInterrupt in epoch {e} ({where})", interrupt,
                    dict(est=est, epoch=e, where=where), ("interrupt",), "ok",
                    "fit ends with a warning, keeps the best weights so far, history_ stops "
                    "at the interrupted epoch, and training can continue",
                    f"{est}(max_epochs=8, callbacks=[Interrupt({e}, {where!r})]).fit(X, y)"))
            for mode, extra in (("fit", dict(n_init=3)), ("warm", {}), ("partial", {})):
                e = _epoch_for(est, mode)
                out.append(Probe(
                    "faults", est, f"KeyboardInterrupt in epoch {e} ({mode}"
                    + (", n_init=3" if extra else "") + ")", interrupt,
                    dict(est=est, epoch=e if mode != "partial" else 1, mode=mode, **extra),
                    ("interrupt",), "ok", "as above, for this way of training",
                    f"{est}(...).{mode}(X, y) interrupted"))
        hows = ["param", "nan_x", "bad_y"] + (["diverge", "callback", "memory"] if trainable
                                              else ["prior"])
        for name, how in FAILURES.items():
            if how not in hows:
                continue
            out.append(Probe(
                "faults", est, f"failed refit: {name}", failed_refit, dict(est=est, how=how),
                ("X",), "ok", "the failed refit raises and leaves attributes, weights and "
                "predictions exactly as they were; a clean refit then works",
                f"est = {est}(**small).fit(X, y); est.fit(...)  # fails by {name}"))
            out.append(Probe(
                "faults", est, f"failed first fit: {name}", failed_first_fit,
                dict(est=est, how=how), ("X",), "ok",
                "no fitted attribute is left; predict raises NotFittedError",
                f"{est}(**small).fit(...)  # fails by {name}"))
        if trainable:
            out.append(Probe(
                "faults", est, "failed warm-start refit: a diverging learning rate",
                failed_refit, dict(est=est, how="diverge", warm=True), ("X",), "ok",
                "the network, optimiser and history are restored",
                f"{est}(warm_start=True).fit(X, y).set_params(lr=1e4).fit(X, y)"))
        out.append(Probe("faults", est, "refit on data of another shape", refit_other_data,
                         dict(est=est), ("X",), "ok",
                         "the refit replaces n_features_in_, classes_ and the network",
                         f"{est}(**small).fit(X, y).fit(X2, y2)"))
        for how in ("pickle", "pickle protocol 2", "joblib", "save/load", "deepcopy"):
            out.append(Probe("persistence", est, f"round trip: {how}", round_trip,
                             dict(est=est, how=how), ("X",), "ok",
                             "identical predictions and posterior samples; training continues",
                             f"{how} of a fitted {est}"))
        out.append(Probe("persistence", est, "round trip: unfitted pickle", unfitted_round_trip,
                         dict(est=est), ("X",), "ok", "same parameters; fits",
                         f"pickle.loads(pickle.dumps({est}()))"))
        for how in ("refit", "clone", "RandomState(0) twice"):
            out.append(Probe("persistence", est, f"same random_state: {how}", reproducible,
                             dict(est=est, how=how), ("X",), "ok",
                             "bit-identical predictions on the CPU",
                             f"{est}(random_state=0)  # {how}"))
        for what in ("truncated", "empty", "a text file", "a plain pickle of the estimator",
                     "another estimator class", "a missing file", "a folder"):
            out.append(Probe("persistence", est, f"load {what}", load_bad_file,
                             dict(est=est, what=what), ("model.joblib", "missing.joblib",
                                                        "<tmp>", "path", "file"),
                             "error", "a clear error naming the file and what is wrong with it",
                             f"{est}.load(path)  # {what}"))
        out.append(Probe("persistence", est, "load a file of another skdiff version",
                         load_bad_file, dict(est=est, what="another skdiff version"),
                         ("skdiff",), "ok", "loads, with a warning naming the versions",
                         f"{est}.load(path_from_skdiff_0.0.0)"))
        for where in ("a new folder", "an existing folder", "over an existing file"):
            out.append(Probe("persistence", est, f"save to {where}", save_to,
                             dict(est=est, where=where), ("path", "<tmp>", "Is a directory"),
                             "ok" if where != "an existing folder" else "error",
                             "a clear error naming the folder" if where == "an existing folder"
                             else "saves and loads back", f"est.save(path)  # {where}"))
    # the NDP prior cache and pretrained weight files
    for fault in ("truncated", "empty", "garbage manifest", "no manifest", "no weights",
                  "NaN weights behind a matching checksum",
                  "wrong shapes behind a matching checksum",
                  "malicious pickle behind a matching checksum", "stale lock file"):
        out.append(Probe("faults", "prior cache", fault, cache_fault, dict(fault=fault),
                         ("cache", "prior"), "ok",
                         "the entry is discarded with a warning and trained again (or refused "
                         "with a clear error); never used; no code runs",
                         f"NDPRegressor(pretrained=False, cache_dir=d).fit(X, y)  # {fault}",
                         timeout=300))
    out.append(Probe("faults", "prior cache", "interrupted prior training", interrupt_prior,
                     dict(cache="interrupted_cache"), ("cache",), "ok",
                     "KeyboardInterrupt propagates, nothing is cached, the next fit works",
                     "NDPRegressor(pretrained=False, callbacks=[Interrupt]).fit(X, y)"))
    out.append(Probe("faults", "prior cache", "three processes write one entry",
                     cache_concurrent, {}, ("cache",), "ok",
                     "all succeed with identical predictions; one verified entry, no "
                     "temporary files", "3 processes: NDPRegressor(pretrained=False, "
                     "cache_dir=same).fit(X, y)", timeout=600))
    out.append(Probe("faults", "prior cache", "a writer killed while training",
                     cache_killed_writer, {}, ("cache",), "ok",
                     "the next fit is not blocked and caches a verified entry",
                     "kill -9 a process training a prior into d; NDPRegressor(cache_dir=d)"
                     ".fit(X, y)", timeout=600))
    for fault in ("intact copy", "truncated", "no manifest", "a flipped byte",
                  "NaN weights behind a matching checksum",
                  "malicious pickle behind a matching checksum", "manifest with a bad config",
                  "a folder with two priors", "an empty folder"):
        out.append(Probe("faults", "prior file", fault, prior_file, dict(fault=fault),
                         ("gp_d1", "weights", "empty", "prior"),
                         "ok" if fault == "intact copy" else "error",
                         "the shipped prior's predictions" if fault == "intact copy" else
                         "a clear error naming the file; never used; no code runs",
                         f"NDPRegressor(prior='<folder>/gp_d1.pt').fit(X, y)  # {fault}"))
    return out

