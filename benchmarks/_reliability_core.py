"""The reliability battery's shared machinery: probes, the outcome rule, small estimators and data.

A :class:`Probe` is one call of the public API with one bad (or unusual but valid) input, run
in a process of its own by ``benchmarks/reliability.py``. Its function returns a one-line
account of what it checked, or raises :class:`Wrong` when the call returned a wrong result; any
other exception is the library's answer, which :func:`classify` grades.

Outcome rule
------------
``clear_error``
    The call raised an exception that (1) is not an internal error type (``KeyError``,
    ``AttributeError``, ``IndexError``, ``ZeroDivisionError``, ``AssertionError``,
    ``RecursionError``, ``NotImplementedError``, ``UnboundLocalError``/``NameError``,
    ``StopIteration``, ``numpy.linalg.LinAlgError``, ``FloatingPointError``,
    ``KeyboardInterrupt``; a subclass that is also a ``ValueError`` or ``TypeError``, such
    as scikit-learn's ``NotFittedError``, is not internal), (2) whose message names the
    culprit (one of the probe's ``names``: the parameter or argument, e.g. ``'hidden_dim'``,
    ``X``, ``sample_weight``, or a file's path), and (3) says what is wrong or expected: it
    quotes the bad value or contains an expectation or remedy word (:data:`EXPECTATION`).
    An ``OSError`` that carries the culprit's path as its ``filename`` satisfies (3) with its
    ``strerror``.
``unclear_error``
    Any other exception, or a valid input refused (a probe that expects ``"ok"``).
``silent_garbage``
    The call returned but the probe's check failed (non-finite or mis-shaped outputs, results
    that do not follow the data's units, a changed state after a failed fit, a poisoned
    cache...), or an input the probe expects to be refused was accepted without an error or a
    warning that names it.
``ok``
    The call returned and the check passed, or an invalid input was accepted with a warning
    that names the culprit.
``crash`` / ``hang``
    The probe's process died (a signal, ``os._exit``, an abort) / ran past its time limit.
"""

from __future__ import annotations

import math
import re
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

OUTCOMES = ("ok", "clear_error", "unclear_error", "silent_garbage", "crash", "hang")
GOOD = ("ok", "clear_error")

ESTIMATORS = ("DIFFormerClassifier", "DIFFormerRegressor", "FlowformerRegressor",
              "FlowformerClassifier", "NDPRegressor")

#: Exception types that reveal an unhandled case inside the library, whatever their message.
INTERNAL_TYPES = (KeyError, AttributeError, IndexError, ZeroDivisionError, AssertionError,
                  RecursionError, NotImplementedError, NameError, StopIteration,
                  np.linalg.LinAlgError, FloatingPointError, KeyboardInterrupt)

#: Words by which a message says what is expected, what is wrong or what to do.
EXPECTATION = re.compile(
    r"\b(must|expect\w*|should|needs?|requires?|use|pass|only|at least|at most|got|instead|"
    r"not supported|cannot|can't|refus\w*|allowed|valid|one of|fitted on|lower|raise|set|"
    r"rescale|choose|give|delete|download|check|missing|not found|contains?|holds?|"
    r"does not|do not|is not|are not|not in|no \w+|out of|exceed\w*|too (large|small|many|few)|"
    r"but)\b",
    re.IGNORECASE)


class Wrong(Exception):
    """Raised by a probe's check: the call returned, and its result is wrong."""


@dataclass
class Probe:
    """One call of the public API with one bad or unusual input.

    Parameters
    ----------
    area : str
        ``params``, ``data``, ``methods``, ``faults``, ``persistence``, ``loaders``,
        ``generators``.
    target : str
        The estimator or function under test.
    name : str
        What the probe feeds it (unique within ``area/target``).
    func : callable
        Module-level function ``func(tmp, **kwargs) -> str``; raises :class:`Wrong` when the
        result is wrong.
    kwargs : dict
        Its arguments (picklable).
    names : tuple of str
        What a clear message must name (any one of them).
    expect : {"error", "ok", "either"}
        ``"error"``: an invalid input that must be refused (or warned about);
        ``"ok"``: a valid input that must work; ``"either"``: a clear error or a correct
        result are both fine.
    correct : str
        What a correct outcome is, in words.
    call : str
        The call, as a user would write it (the reproducer's core).
    bad : object
        The bad value, which a clear message may quote.
    timeout : float
        Seconds before the probe counts as a hang.
    """

    area: str
    target: str
    name: str
    func: object
    kwargs: dict = field(default_factory=dict)
    names: tuple = ()
    expect: str = "error"
    correct: str = ""
    call: str = ""
    bad: object = None
    timeout: float = 240.0

    @property
    def id(self):
        return f"{self.area}/{self.target}/{self.name}"


# -- the rule ---------------------------------------------------------------------------------
def _mentions(text, name):
    """Whether ``text`` names ``name``: as a whole word for identifiers, else as a substring."""
    if re.fullmatch(r"\w+", name):
        return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None
    return name in text


def names_culprit(text, names):
    return any(_mentions(text, n) for n in names)


def _quoted(text, bad):
    """Whether ``text`` quotes the bad value (numbers and strings of 2+ characters)."""
    if isinstance(bad, bool) or bad is None:
        return repr(bad) in text
    if isinstance(bad, (int, float, np.integer, np.floating, str)):
        forms = {repr(bad), str(bad)}
        if isinstance(bad, (float, np.floating)) and math.isfinite(float(bad)):
            forms.add(f"{float(bad):g}")
        return any(len(f) >= 2 and f in text for f in forms)
    return False


def judge_error(exc, probe):
    """(is it clear, why not) for an exception raised by a probe's call."""
    if isinstance(exc, INTERNAL_TYPES) and not isinstance(exc, (ValueError, TypeError)):
        return False, f"an internal {type(exc).__name__}"
    msg = str(exc)
    if not names_culprit(msg, probe.names):
        return False, f"does not name {' / '.join(probe.names) or 'the culprit'}"
    filename = getattr(exc, "filename", None)
    if isinstance(exc, OSError) and filename and names_culprit(str(filename), probe.names):
        return True, ""
    if EXPECTATION.search(msg) or _quoted(msg, probe.bad):
        return True, ""
    return False, "does not say what is expected"


def _where(exc):
    """The innermost frame of the traceback inside skdiff (else the innermost), as file:line."""
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if "/skdiff/" in f.filename]
    f = (inside or frames or [None])[-1]
    if f is None:
        return ""
    path = f.filename
    cut = path.rfind("/skdiff/")
    path = path[cut + 1:] if cut >= 0 else path.rsplit("/", 1)[-1]
    return f"{path}:{f.lineno} ({f.name})"


#: Warning categories that leak implementation details when they reach a user.
_NOISY = ("RuntimeWarning", "DeprecationWarning", "FutureWarning", "PendingDeprecationWarning",
          "ResourceWarning")


def execute(probe, tmp):
    """Run ``probe`` in this process; return its record (outcome, message, warnings, timing)."""
    t0 = time.perf_counter()
    result, exc, wrong = "", None, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = probe.func(tmp=tmp, **probe.kwargs) or ""
        except Wrong as w:
            wrong = str(w)
        except BaseException as e:  # noqa: BLE001 - the library's answer, whatever it is
            exc = e
    wall = time.perf_counter() - t0
    warns = []
    for w in caught:
        text = f"{w.category.__name__}: {w.message}"
        if text not in warns:
            warns.append(text)
    rec = dict(id=probe.id, area=probe.area, target=probe.target, name=probe.name,
               expect=probe.expect, correct=probe.correct, call=probe.call,
               wall_s=round(wall, 3), warnings=[w[:400] for w in warns], exc_type="",
               message="", where="", detail="")
    warned = any(names_culprit(w, probe.names) for w in warns
                 if not w.startswith(_NOISY))
    if wrong is not None:
        rec.update(outcome="silent_garbage", detail=wrong)
    elif exc is not None:
        clear, why = judge_error(exc, probe)
        rec.update(exc_type=type(exc).__name__, message=str(exc)[:1500], where=_where(exc))
        if probe.expect == "ok":
            rec.update(outcome="unclear_error", detail="a valid input was refused")
        elif clear:
            rec.update(outcome="clear_error")
        else:
            rec.update(outcome="unclear_error", detail=why)
    elif probe.expect == "error" and not warned:
        rec.update(outcome="silent_garbage",
                   detail="accepted without an error or a warning that names it"
                   + (f"; {result}" if result else ""))
    else:
        rec.update(outcome="ok", detail=result + (" (warned)" if probe.expect == "error"
                                                   else ""))
    rec["look"] = _worth_a_look(rec, warns, warned)
    return rec


def _worth_a_look(rec, warns, warned):
    """Why a good outcome still deserves a look ('' when it does not)."""
    if rec["outcome"] not in GOOD:
        return ""
    why = []
    noisy = [w for w in warns if w.startswith(_NOISY)]
    if noisy:
        why.append(f"leaks {noisy[0][:160]}")
    if rec["expect"] == "ok" and warns and not noisy:
        why.append(f"warns on a valid input: {warns[0][:160]}")
    if rec["expect"] == "error" and rec["outcome"] == "ok":
        why.append("an invalid input accepted with a warning only")
    if rec["wall_s"] > 60:
        why.append(f"slow ({rec['wall_s']:.0f} s)")
    return "; ".join(why)


# -- small estimators and their data ----------------------------------------------------------
TINY = {
    "DIFFormerClassifier": dict(n_layers=1, hidden_dim=8, max_epochs=3, device="cpu",
                                random_state=0),
    "DIFFormerRegressor": dict(n_layers=1, hidden_dim=8, max_epochs=3, device="cpu",
                               random_state=0),
    "FlowformerRegressor": dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=2,
                                batch_size=32, device="cpu", random_state=0),
    "FlowformerClassifier": dict(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=2,
                                 batch_size=32, device="cpu", random_state=0),
    "NDPRegressor": dict(n_samples=4, n_sampling_steps=3, n_resample=0, device="cpu",
                         random_state=0),
}

#: NDPRegressor settings that train a small prior (pretrained=False) in seconds.
TINY_PRIOR = dict(pretrained=False, prior="se", hidden_dim=8, n_layers=1, n_heads=2,
                  max_epochs=1, steps_per_epoch=3, batch_size=4)


def is_classifier(name):
    return name.endswith("Classifier")


def family(name):
    return "difformer" if name.startswith("DIFFormer") else \
        "flowformer" if name.startswith("Flowformer") else "ndp"


def est_class(name):
    import skdiff

    return getattr(skdiff, name)


def make(name, **params):
    """The estimator ``name`` with the battery's small settings, overridden by ``params``."""
    return est_class(name)(**{**TINY[name], **params})


def tiny_repr(name):
    """``Name(**TINY)`` as code, for reproducers."""
    args = ", ".join(f"{k}={v!r}" for k, v in TINY[name].items())
    return f"{name}({args})"


def data(name, n=None):
    """(X, y) of a small, learnable problem for the estimator ``name`` (fixed seeds).

    DIFFormer: 48 rows of 5 features (3 classes by the first feature / a linear target);
    Flowformer: 48 noisy sine windows of 12 steps (class = phase half / sum of the last 3);
    NDP: 10 points of sin(6x) on [0, 1].
    """
    rng = np.random.RandomState(0)
    fam = family(name)
    if fam == "difformer":
        n = n or 48
        X = rng.normal(size=(n, 5))
        if is_classifier(name):
            return X, np.digitize(X[:, 0], [-0.4, 0.4])
        return X, X @ np.array([1.0, -2.0, 0.5, 0.0, 0.0]) + 0.1 * rng.normal(size=n)
    if fam == "flowformer":
        n = n or 48
        phase = rng.uniform(0, 2 * np.pi, n)
        t = np.arange(12)
        X = np.sin(2 * np.pi * t / 6 + phase[:, None]) + 0.1 * rng.normal(size=(n, 12))
        if is_classifier(name):
            return X, (phase > np.pi).astype(int)
        return X, X[:, -3:].sum(1)
    n = n or 10
    X = np.linspace(0, 1, n)[:, None]
    return X, np.sin(6 * X[:, 0])


def fitted(name, **params):
    """(estimator fitted on :func:`data`, X, y)."""
    X, y = data(name)
    return make(name, **params).fit(X, y), X, y


def outputs(est, X, **predict_params):
    """The deterministic outputs of a fitted estimator (probabilities for classifiers)."""
    if hasattr(est, "predict_proba"):
        return np.asarray(est.predict_proba(X, **predict_params))
    return np.asarray(est.predict(X, **predict_params))


def check_sane(est, X, n_rows=None, **predict_params):
    """Check ``predict`` (and ``predict_proba``) of a fitted estimator on ``X``: shapes, finite
    values, probabilities that sum to 1, labels among ``classes_``. Returns an account."""
    n = n_rows
    if n is None:  # a sparse matrix has no len(), a list no shape
        n = X.shape[0] if hasattr(X, "shape") else len(X)
    pred = np.asarray(est.predict(X, **predict_params))
    if pred.shape[:1] != (n,):
        raise Wrong(f"predict returned shape {pred.shape} for {n} rows")
    if hasattr(est, "predict_proba"):
        P = np.asarray(est.predict_proba(X, **predict_params))
        k = len(est.classes_)
        if P.shape != (n, k):
            raise Wrong(f"predict_proba returned shape {P.shape}, expected {(n, k)}")
        if not np.all(np.isfinite(P)) or (P < 0).any() or (P > 1).any():
            raise Wrong(f"predict_proba returned values outside [0, 1]: {P.ravel()[:4]}")
        if n and not np.allclose(P.sum(1), 1.0, atol=1e-5):
            raise Wrong(f"probabilities do not sum to 1: {P.sum(1)[:4]}")
        if not np.isin(pred, est.classes_).all():
            raise Wrong("predict returned labels outside classes_")
        return f"predict/predict_proba sane on {n} rows"
    if not np.all(np.isfinite(pred.astype(np.float64))):
        raise Wrong(f"predict returned non-finite values: {pred.ravel()[:4]}")
    return f"predict finite, shape {pred.shape}"


def check_close(a, b, what, rtol=1e-3, atol=None):
    """Raise :class:`Wrong` unless ``a`` and ``b`` agree (``atol`` defaults to rtol times the
    scale of ``b``)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise Wrong(f"{what}: shapes {a.shape} and {b.shape} differ")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise Wrong(f"{what}: non-finite values ({a.ravel()[:3]} vs {b.ravel()[:3]})")
    scale = float(np.max(np.abs(b))) if b.size else 1.0
    tol = rtol * max(scale, 1e-300) if atol is None else atol
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    if err > tol:
        raise Wrong(f"{what}: max difference {err:.3g} exceeds {tol:.3g} "
                    f"(relative {err / max(scale, 1e-300):.3g})")
    return f"{what}: max difference {err:.2g}"


def state_of(est):
    """What a failed fit must not change: public and private attributes (arrays compared by
    value, other objects by identity) and the network weights."""
    out = {}
    for k, v in vars(est).items():
        if isinstance(v, np.ndarray):
            out[k] = ("array", v.copy())
        elif isinstance(v, (int, float, str, bool, type(None), tuple)):
            out[k] = ("value", v)
        else:
            out[k] = ("object", id(v))
    module = getattr(est, "module_", None)
    if module is not None:
        out["__weights__"] = ("weights", {k: t.detach().clone()
                                          for k, t in module.state_dict().items()})
        if hasattr(est, "history_"):
            out["__history__"] = ("value", len(est.history_))
    return out


def check_same_state(before, after, what="state"):
    import torch

    if set(before) != set(after):
        raise Wrong(f"{what}: attributes changed: +{sorted(set(after) - set(before))} "
                    f"-{sorted(set(before) - set(after))}")
    for k, (kind, v) in before.items():
        kind2, v2 = after[k]
        if kind == "array":
            same = isinstance(v2, np.ndarray) and v.shape == v2.shape and \
                np.array_equal(v, v2, equal_nan=v.dtype.kind == "f")
        elif kind == "weights":
            same = set(v) == set(v2) and all(torch.equal(v[n], v2[n]) for n in v)
        else:
            same = v == v2
        if not same:
            raise Wrong(f"{what}: attribute {k} changed")
    return f"{what} unchanged ({len(before)} attributes)"


def then(what, fn):
    """Run the check ``fn`` after a call returned; an exception there means the call left an
    unusable result (:class:`Wrong`)."""
    try:
        return fn()
    except Wrong:
        raise
    except Exception as exc:  # noqa: BLE001
        raise Wrong(f"the call returned, then {what} raised {type(exc).__name__}: "
                    f"{str(exc)[:300]}") from exc
