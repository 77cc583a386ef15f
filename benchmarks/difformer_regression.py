"""DIFFormerRegressor on graph regression, beside Ridge on features and on propagated features.

Task (:func:`skdiff.datasets.make_graph_signal`): a smooth field on a 6-nearest-neighbour
graph of points in the unit square; the first feature is a noisy reading of the field
(noise std 1), the other five are noise. A fraction of the nodes is labelled; the score is
R² on the unlabelled nodes (transductive). Methods:

* ``difformer``: ``DIFFormerRegressor(random_state=seed).fit(X, y_semi, adjacency=A)``
  (defaults), the unlabelled rows marked ``NaN``; ``network_used`` records, per seed,
  whether ``linear_fallback`` kept the network or predicts with its ridge;
* ``difformer_network``: the same with ``linear_fallback=False``, the network alone;
* ``ridge``: ``RidgeCV`` on the features of the labelled nodes;
* ``ridge_2hop``: ``RidgeCV`` on SGC features :math:`\\hat A^2 X` (Wu et al., ICML 2019) with
  :math:`\\hat A = D^{-1/2}(A + I)D^{-1/2}`, the plain baseline that uses the graph.

``--task csbm``: node regression on contextual stochastic block models (the defaults
benchmark's generator, ``csbm_regression``: a level per block plus a linear function of 16
informative features plus noise, 2,000 nodes of which 100 are labelled, signal-to-noise 1)
at the homophilies of ``--homophily``, one graph per seed (graph seeds 11, 12, ...: the
defaults benchmark's rows use seed 0), scored by R² and MSE on the unlabelled nodes.

Run (a few minutes on 2 CPU cores)::

    python benchmarks/difformer_regression.py --json benchmarks/results/difformer_regression.json
    python benchmarks/difformer_regression.py --task csbm --seeds 4 \
        --json benchmarks/results/difformer_regression_csbm.json

``--set KEY=VALUE`` fits the DIFFormer methods with other parameters, e.g. ``--set
n_layers=1`` for the depth the regressor takes on a table (``n_layers="auto"``)::

    python benchmarks/difformer_regression.py --sizes 1000 --set n_layers=1 \
        --json benchmarks/results/difformer_regression_one_layer.json
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _defaults_tasks import sgc_features
from _results import add_run_arguments, header, write_json
from defaults import add_set_argument, parse_set
from sklearn.linear_model import RidgeCV
from sklearn.metrics import r2_score

from skdiff import DIFFormerRegressor
from skdiff.datasets import make_graph_signal

#: First graph seed of ``--task csbm``.
CSBM_SEED = 11


def signal_task(n, labelled, seed):
    """``make_graph_signal`` with ``labelled`` (a fraction) of the nodes labelled."""
    X, y, A = make_graph_signal(n, random_state=seed)
    rng = np.random.RandomState(seed)
    lab = np.zeros(n, dtype=bool)
    lab[rng.choice(n, int(labelled * n), replace=False)] = True
    return X, y, A, lab


def csbm_task(n, homophily, seed):
    """The defaults benchmark's CSBM node regression with graph seed ``CSBM_SEED + seed``."""
    from _defaults_data import csbm_regression

    d = csbm_regression(None, n, homophily, 1.0, seed=CSBM_SEED + seed)
    return d.X, d.y, d.A, ~d.scored


def run(X, y, A, lab, seed, params=None):
    """{method: (R², seconds, MSE[, network kept])} on the unlabelled nodes; ``params``: the
    DIFFormer fits' parameters other than the defaults (``--set``)."""
    y_semi = np.where(lab, y, np.nan)

    def scored(pred, t0):
        return (r2_score(y[~lab], pred), time.perf_counter() - t0,
                float(np.mean((y[~lab] - pred) ** 2)))

    out = {}
    for name, kw in (("difformer", {}), ("difformer_network", {"linear_fallback": False})):
        t0 = time.perf_counter()
        reg = DIFFormerRegressor(random_state=seed, **(params or {}), **kw).fit(
            X, y_semi, adjacency=A)
        out[name] = scored(reg.transduction_[~lab], t0) + (bool(reg.network_used_),)
    alphas = np.logspace(-3, 3, 13)
    for name, F in (("ridge", X), ("ridge_2hop", sgc_features(X, A))):
        t0 = time.perf_counter()
        out[name] = scored(RidgeCV(alphas=alphas).fit(F[lab], y[lab]).predict(F[~lab]), t0)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", choices=("signal", "csbm"), default="signal")
    p.add_argument("--sizes", type=int, nargs="+", default=None,
                   help="nodes (default: 1000 5000; csbm: 2000)")
    p.add_argument("--labelled", type=float, nargs="+", default=[0.05, 0.2],
                   help="labelled fractions (signal task)")
    p.add_argument("--homophily", type=float, nargs="+", default=[0.2, 0.6, 0.8, 0.9],
                   help="edge homophilies (csbm task; 100 labelled nodes)")
    p.add_argument("--seeds", type=int, default=3)
    add_set_argument(p)
    add_run_arguments(p)
    args = p.parse_args(argv)
    params = parse_set(p, args.set)
    torch.set_num_threads(args.threads)
    doc = {**header("difformer_regression.py", args.threads, note=args.note, argv=argv),
           "params": params}
    csbm = args.task == "csbm"
    sizes = args.sizes or ([2000] if csbm else [1000, 5000])
    rows = []
    print(f"{'n':>6s} {'setting':>9s} {'method':>17s} {'R2 (mean ± sd)':>16s} {'seconds':>8s}")
    for n in sizes:
        for setting in (args.homophily if csbm else args.labelled):
            runs = [run(*(csbm_task(n, setting, s) if csbm else signal_task(n, setting, s)), s,
                        params) for s in range(args.seeds)]
            for method in runs[0]:
                r2 = np.array([r[method][0] for r in runs])
                sec = np.mean([r[method][1] for r in runs])
                rows.append({"n": n, ("homophily" if csbm else "labelled"): setting,
                             "method": method, "r2": r2.tolist(), "r2_mean": float(r2.mean()),
                             "r2_std": float(r2.std()), "seconds": float(sec),
                             "mse": [r[method][2] for r in runs]})
                if method == "difformer":
                    rows[-1]["network_used"] = [r[method][3] for r in runs]
                print(f"{n:6d} {setting:9.2f} {method:>17s} {r2.mean():8.3f} ± {r2.std():.3f} "
                      f"{sec:8.1f}", flush=True)
    if args.json:
        write_json(args.json, {**doc, "rows": rows}, complete=True)


if __name__ == "__main__":
    main()
