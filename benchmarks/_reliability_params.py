"""Probes of every public parameter of every estimator, derived from its constraints.

For each estimator the parameter list is ``get_params()``; for each parameter the bad values
come from its entry in ``_parameter_constraints`` (intervals: booleans, non-integral and
out-of-range numbers, NaN and infinities, numeric strings, ``None`` where it is not allowed;
string options: unknown, case-changed and padded strings; flags: strings and integers;
``random_state``, ``verbose``, array-likes, callbacks and dictionaries: their own classic
mistakes), plus numpy-typed valid values that must be accepted and a curated list of absurd
sizes and cross-parameter conflicts. A parameter without a constraint is probed with generic
bad values and reported as such. Each probe sets the value on the battery's small estimator
(:data:`_reliability_core.TINY`) and fits it on :func:`_reliability_core.data`; correct is a
clear error naming the parameter for an invalid value, a sane fitted estimator for a valid
one.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from _reliability_core import (
    ESTIMATORS,
    TINY,
    TINY_PRIOR,
    Probe,
    check_close,
    check_sane,
    data,
    est_class,
    family,
    make,
    outputs,
)

#: NDPRegressor parameters that only act when a prior is trained (pretrained=False): probed on
#: a small prior-training configuration.
PRIOR_PARAMS = {"hidden_dim", "n_layers", "n_heads", "max_epochs", "steps_per_epoch", "lr",
                "batch_size", "cache_dir", "callbacks"}

#: A valid value for parameters whose default is None or context-dependent.
VALID = {"ff_dim": 8, "patch_len": 4, "patch_stride": 2, "graph_weight": 0.5, "batch_size": 16,
         "n_threads": 1, "clamp": 1.0, "x_bounds": [0.0, 1.0]}

#: Base settings a parameter is probed under (so that its own value decides the outcome).
BASE = {"patch_stride": {"patch_len": 4}}


def fit_and_check(tmp, est, params):
    """Fit ``est`` with ``params`` on its small problem; check predictions are sane."""
    X, y = data(est)
    model = make(est, **params)
    model.fit(X, y)
    return check_sane(model, X)


def _short(value, label):
    r = repr(value)
    if " at 0x" in r:
        return label
    return r if len(r) <= 60 else r[:57] + "..."


def _valid(est, param, default):
    base = {**TINY[est], **(TINY_PRIOR if _on_prior(est, param) else {})}
    if param in base:
        return base[param]
    if default is not None:
        return default
    return VALID.get(param)


def _on_prior(est, param):
    return family(est) == "ndp" and param in PRIOR_PARAMS


def _interval_values(iv, cons, add, valid):
    """Bad values of one interval constraint (and the numpy-typed valid one)."""
    from skdiff._base import Interval  # noqa: F401  (the refuse-booleans subclass)

    integral = iv.type is numbers.Integral
    takes_real = any(getattr(c, "type", None) is numbers.Real for c in cons)
    add("True", True, "error")
    if integral and not takes_real:
        add("2.5", 2.5, "error")
        add("2.0 (a float)", 2.0, "error")
    if not integral:
        add("nan", math.nan, "error")
        add("-inf", -math.inf, "error")
        add("inf", math.inf, "either" if iv.right is None else "error")
    if iv.left is not None:
        open_left = iv.closed in ("right", "neither")
        if open_left:
            add(f"{iv.left} (open bound)", iv.left, "error")
        below = iv.left - 1 if integral else iv.left - (0.5 if iv.left else 1e-3)
        add(f"{below} (below {iv.left})", below, "error")
        if iv.left > 0:
            add("-1", -1, "error")
    if iv.right is not None:
        open_right = iv.closed in ("left", "neither")
        if open_right:
            add(f"{iv.right} (open bound)", iv.right, "error")
        above = iv.right + 1 if integral else iv.right + 0.5
        add(f"{above} (above {iv.right})", above, "error")
    if not any(c is str or type(c).__name__ == "StrOptions" for c in cons):
        text = "3" if integral else "0.5"
        add(f"{text!r} (a numeric string)", text, "error")
    if isinstance(valid, numbers.Real) and not isinstance(valid, bool):
        typed = np.int64(valid) if integral else np.float32(valid)
        add(f"np.{type(typed).__name__}({valid})", typed, "ok")


def bad_values(est, param, cons, default):
    """(label, value, expect) for one parameter of ``est`` from its constraint list."""
    out = []

    def add(label, value, expect):
        if label not in (o[0] for o in out):
            out.append((label, value, expect))

    valid = _valid(est, param, default)
    if cons is None:  # no constraint at all: generic bad values
        for label, value in (("'bogus'", "bogus"), ("True", True), ("-1", -1),
                             ("object()", object()), ("nan", math.nan)):
            add(label, value, "error")
        return out
    if None not in cons and "random_state" not in cons:  # random_state takes None
        add("None", None, "error")
    kinds = {c if isinstance(c, str) else type(c).__name__ for c in cons
             if c is not None and not isinstance(c, type)}
    types = [c for c in cons if isinstance(c, type)]
    for c in cons:
        if type(c).__name__ == "Interval":
            _interval_values(c, cons, add, valid)
        elif type(c).__name__ == "StrOptions":
            opt = sorted(c.options)[0]
            add("'bogus'", "bogus", "error")
            if opt.upper() != opt:
                add(f"{opt.upper()!r}", opt.upper(), "error")
            add(f"' {opt}' (padded)", f" {opt}", "error")
            if isinstance(valid, str):
                add(f"np.str_({valid!r})", np.str_(valid), "ok")
            if not any(k in kinds for k in ("Interval",)) and numbers.Integral not in types:
                add("3 (an int)", 3, "error")
    if "boolean" in kinds:
        add("'False' (a string)", "False", "error")
        add("1 (an int)", 1, "either")
        add(f"np.bool_({valid})", np.bool_(valid), "ok")
    if "random_state" in kinds:
        add("'seed'", "seed", "error")
        add("-1", -1, "error")
        add("2**32", 2 ** 32, "error")
        add("1.5", 1.5, "error")
        add("True", True, "either")
        add("np.random.default_rng(0)", np.random.default_rng(0), "either")
        add("np.random.RandomState(0)", np.random.RandomState(0), "ok")
        add("np.int64(0)", np.int64(0), "ok")
    if "verbose" in kinds:
        add("-1", -1, "error")
        add("'loud'", "loud", "error")
        add("1.5", 1.5, "error")
    if "array-like" in kinds:
        add("'0,1' (a string)", "0,1", "error")
        add("[1.0, 0.0] (reversed)", [1.0, 0.0], "error")
        add("[nan, 1.0]", [math.nan, 1.0], "error")
        add("[0.0, inf]", [0.0, math.inf], "error")
        add("three (low, high) rows for 1 feature", [[0.0, 1.0]] * 3, "error")
        add("[0.0] (one number)", [0.0], "error")
        add("[[0.0, 1.0]]", [[0.0, 1.0]], "ok")
    if list in types:  # callbacks
        from skorch.callbacks import EarlyStopping, GradientNormClipping

        add("'cb' (a string)", "cb", "error")
        add("[1]", [1], "error")
        add("[EarlyStopping] (a class, not an instance)", [EarlyStopping], "error")
        add("{} (a dict)", {}, "error")
        add("[('name', 1)]", [("name", 1)], "error")
        add("[GradientNormClipping(1.0)]", [GradientNormClipping(1.0)], "ok")
    if dict in types:  # class_weight
        classes = np.unique(data(est)[1]).tolist()
        add("{99: 1.0} (unknown class)", {99: 1.0}, "error")
        add("{0: -1.0}", {0: -1.0}, "error")
        add("{0: nan}", {0: math.nan}, "error")
        add("{0: inf}", {0: math.inf}, "error")
        add("{0: 'a'}", {0: "a"}, "error")
        add("every class 0.0", {c: 0.0 for c in classes}, "error")
        add("[1.0, 2.0] (a list)", [1.0, 2.0], "error")
        add("{}", {}, "ok")
        add("{np.int64(0): 2.0}", {np.int64(0): 2.0}, "ok")
    if numbers.Integral in types:  # unlabelled
        add("True", True, "error")
        add("1.5", 1.5, "error")
        add("np.int64(-1)", np.int64(-1), "ok")
    return out


def _curated(est):
    """{param: [(label, value, expect, extra params)]}: sizes, conflicts and valid extremes."""
    fam = family(est)
    big = 10 ** 7
    c = {}
    if fam in ("difformer", "flowformer"):
        c["hidden_dim"] = [("10**7", big, "either", {})]
        c["n_heads"] = [("10**7", big, "either", {})]
        c["n_layers"] = [("10**7", big, "either", {})]
        c["batch_size"] = [("1", 1, "ok", {}), ("10**7", big, "ok", {})]
        c["validation_fraction"] = [("0.999", 0.999, "ok", {})]
        c["n_iter_no_change"] = [("10**7", big, "ok", {})]
        c["max_epochs"] = [("1", 1, "ok", {})]
        c["lr"] = [("1e300", 1e300, "either", {})]
        c["weight_decay"] = [("1e300", 1e300, "either", {})]
        c["dropout"] = [("0.999", 0.999, "ok", {})]
        c["n_threads"] = [("64", 64, "ok", {})]
        c["mixed_precision"] = [("'bf16'", "bf16", "ok", {}), ("'fp16'", "fp16", "either", {}),
                                ("'fp32'", "fp32", "error", {})]  # 'BF16': from StrOptions
        c["accelerator"] = [("'cpu'", "cpu", "error", {})]
        c["n_init"] = [("2", 2, "ok", {})]
    if fam == "difformer":
        c["block_size"] = [("1 (advanced kernel)", 1, "ok", {"kernel": "advanced"}),
                           ("10**7", big, "ok", {})]
        c["kernel"] = [("'advanced'", "advanced", "ok", {}), ("'softmax'", "softmax", "ok", {})]
        c["qk_norm"] = [("'row'", "row", "ok", {})]
        c["feature_scaling"] = [("None", None, "ok", {}), ("'row'", "row", "ok", {})]
        # the classifier builds a k-nearest-neighbour graph for this scope (n_neighbors)
        c["attention_scope"] = [("'graph' without an adjacency", "graph",
                                 "ok" if est == "DIFFormerClassifier" else "error", {})]
        c["alpha"] = [("1e-300", 1e-300, "ok", {})]
        c["graph_weight"] = [("0", 0, "ok", {}), ("1", 1, "ok", {})]
        c["value_projection"] = [("True", True, "ok", {})]
        c["n_heads"].append(("4", 4, "ok", {}))
    if fam == "flowformer":
        c["ff_dim"] = [("10**7", big, "either", {})]
        c["n_heads"].append(("3 (does not divide hidden_dim=8)", 3, "error", {}))
        c["n_layers"].append(("0", 0, "ok", {}))
        c["patch_len"] = [("10**7 (longer than the 12 steps)", big, "error", {}),
                          ("12 (the whole window)", 12, "ok", {}), ("1", 1, "ok", {})]
        c["patch_stride"] = [("2 without patch_len", 2, "error", {"patch_len": None}),
                             ("5 > patch_len=4", 5, "error", {}),
                             ("10**7", big, "error", {})]
        c["skip"] = [("'window' with instance_norm=False", "window", "ok",
                      {"instance_norm": False}), ("'window'", "window", "ok", {}),
                     ("'level'", "level", "ok", {})]
        c["pooling"] = [("'flatten'", "flatten", "ok", {}), ("'last'", "last", "ok", {})]
        c["causal"] = [("True", True, "ok", {})]
        c["attention"] = [("'softmax'", "softmax", "ok", {})]
        c["clamp"] = [("1e-300", 1e-300, "either", {}), ("None", None, "ok", {})]
        c["layout"] = [("'NCL' with 2-D X", "NCL", "ok", {})]
        c["inference_dtype"] = [("'float32'", "float32", "ok", {})]
        c["instance_norm"] = [("False", False, "ok", {})]
        if est == "FlowformerRegressor":
            c["uncertainty"] = [("'mc_dropout'", "mc_dropout", "ok", {})]
    if fam == "ndp":
        c["prior"] = [("'bogus'", "bogus", "error", {}), ("3", 3, "error", {}),
                      ("'' (empty)", "", "error", {}),
                      ("a missing file", "missing_prior.pt", "error", {}),
                      ("'se'", "se", "ok", {}),
                      ("a path with pretrained=False", "missing_prior.pt", "error",
                       {"pretrained": False})]
        c["sampler"] = [("'ddpm'", "ddpm", "ok", {})]
        c["n_sampling_steps"] = [("501 (more than the 500 levels)", 501, "either", {}),
                                 ("10**7", big, "either", {}), ("2", 2, "ok", {})]
        c["n_samples"] = [("10**7", big, "either", {}), ("2", 2, "ok", {})]
        c["x_margin"] = [("1e-300", 1e-300, "either", {})]
        c["x_scaling"] = [("'box'", "box", "ok", {})]
        c["x_compression"] = [("1", 1, "ok", {}), ("10", 10.0, "ok", {})]
        c["x_shrink"] = [("1", 1, "ok", {}), ("4", 4.0, "ok", {})]
        c["alpha"] = [("0.5", 0.5, "ok", {}), ("0", 0.0, "ok", {})]
        c["trend"] = [("'linear'", "linear", "either", {})]
        c["max_context"] = [("2", 2, "ok", {})]
        c["predict_batch_size"] = [("1", 1, "ok", {}), ("10**7", big, "ok", {})]
        c["predict_noise"] = [("False", False, "ok", {})]
        c["normalize_y"] = [("False", False, "ok", {})]
        c["pretrained"] = [("False (a small prior)", False, "ok",
                            {k: v for k, v in TINY_PRIOR.items() if k != "pretrained"})]
        c["device"] = []
        c["hidden_dim"] = [("8 with pretrained=True", 8, "error", {"pretrained": True}),
                           ("10**7", big, "either", {})]
        c["n_heads"] = [("3 (does not divide hidden_dim=8)", 3, "either", {})]
        c["cache_dir"] = [("an existing file", "a_file.txt", "either", {}),
                          ("'' (the working folder)", "", "either", {})]
        c["n_threads"] = [("64", 64, "ok", {})]
    c.setdefault("device", [])
    c["device"] += [("'gpu'", "gpu", "error", {}), ("'cuda:99'", "cuda:99", "either", {}),
                    ("'cuda'", "cuda", "either", {}), ("'' (empty)", "", "error", {}),
                    ("0 (an int)", 0, "error", {}), ("'CPU'", "CPU", "either", {}),
                    ("'meta'", "meta", "error", {}), ("'mps'", "mps", "either", {}),
                    ("'cpu:0'", "cpu:0", "ok", {}), ("torch.device('cpu')", "torch:cpu", "ok", {})]
    return c


def fit_param(tmp, est, param, value, extra):
    """Set ``param`` (and ``extra``) on the small estimator and fit; values that name files
    are made inside the probe's folder."""
    import os

    if param == "device" and value == "torch:cpu":
        import torch

        value = torch.device("cpu")
    if param == "prior" and isinstance(value, str) and value.endswith(".pt"):
        value = os.path.join(tmp, value)
    if param == "cache_dir" and value == "a_file.txt":
        value = os.path.join(tmp, value)
        with open(value, "w") as f:
            f.write("not a folder\n")
    params = {**extra, param: value}
    return fit_and_check(tmp, est, params)


def probes():
    out = []
    for est in ESTIMATORS:
        cls = est_class(est)
        defaults = cls().get_params()
        constraints = cls._parameter_constraints
        curated = _curated(est)
        for param, default in defaults.items():
            cons = constraints.get(param)
            base = dict(BASE.get(param, {}))
            if _on_prior(est, param):
                base = {**TINY_PRIOR, **base}
            rows = [(label, value, expect, {}) for label, value, expect
                    in bad_values(est, param, cons, default)]
            rows += curated.get(param, [])
            pick = _after_fit_value(rows)
            if pick is not None:
                label, value = pick[0], pick[1]
                out.append(Probe(
                    area="params", target=est, name=f"{param}={label} set after fit",
                    func=set_after_fit,
                    kwargs=dict(est=est, param=param, value=value, extra=base),
                    names=(param,), expect="either", bad=value,
                    correct=f"a clear error naming '{param}' where prediction reads it; "
                            "otherwise unchanged predictions and samples",
                    call=f"est = {est}(**small).fit(X, y); est.set_params({param}="
                         f"{_short(value, label)}); est.predict(X)"))
            for label, value, expect, extra in rows:
                names = (param,) + tuple(k for k in extra if k in defaults)
                out.append(Probe(
                    area="params", target=est, name=f"{param}={label}", func=fit_param,
                    kwargs=dict(est=est, param=param, value=value, extra={**base, **extra}),
                    names=names, expect=expect, bad=value,
                    correct=_correct(param, expect),
                    call=f"{est}({param}={_short(value, label)}"
                         + "".join(f", {k}={v!r}" for k, v in {**base, **extra}.items())
                         + ", **small).fit(X, y)",
                    timeout=300 if "10**7" in label else 180))
    return out


def set_after_fit(tmp, est, param, value, extra):
    """Fit, then ``set_params`` a bad value and predict: the value must be refused clearly
    where prediction reads it, and must not change predictions where it does not."""
    X, y = data(est)
    model = make(est, **extra).fit(X, y)
    out0 = outputs(model, X)
    s0 = model.sample_posterior(X[:3], n_samples=2, random_state=0)
    model.set_params(**{param: value})
    out1 = outputs(model, X)
    s1 = model.sample_posterior(X[:3], n_samples=2, random_state=0)
    check_close(out1, out0, "predictions after set_params", atol=0.0)
    check_close(s1, s0, "posterior samples after set_params", atol=0.0)
    return "predictions unchanged: prediction does not read it"


def _after_fit_value(rows):
    """The bad value a user most plausibly sets after fit: below the range, an unknown string,
    a string for a flag, else the first invalid one."""
    errors = [r for r in rows if r[2] == "error"]
    for key in ("below", "'bogus'", "'False'"):
        for r in errors:
            if key in r[0]:
                return r
    return errors[0] if errors else None


def _correct(param, expect):
    if expect == "error":
        return f"a clear error naming '{param}' (or a warning naming it)"
    if expect == "ok":
        return "fit works and predictions are sane (a valid value)"
    return f"a clear error naming '{param}', or a fit with sane predictions"


def unconstrained():
    """{estimator: [public parameters without an entry in _parameter_constraints]}."""
    return {est: sorted(set(est_class(est)().get_params())
                        - set(est_class(est)._parameter_constraints)) for est in ESTIMATORS}
