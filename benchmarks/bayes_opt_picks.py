"""Why NDP Thompson sampling trails the GPR's: how well each model ranks the candidates.

Two measurements on a test function of ``bayes_opt_hartmann.py`` (``--function``, by default
the 3-D Hartmann function), for ``NDPRegressor`` on the default ``gp`` prior with its default
input map (``x_scaling="ard"``, as ``ndp``) and with the per-feature box map
(``x_scaling="box"``, as ``ndp_box``), both with the sampler ``--sampler`` (by default the
estimator's own), and for that benchmark's GPR (Matérn-5/2, one lengthscale per dimension,
refitted by ML-II):

1. **Picks.** Thompson-sampling runs with the protocol of ``bayes_opt_hartmann.py`` (3 uniform
   initial points, ``--n-iter`` iterations, 64 fresh uniform candidates each, one joint
   sample, ``thompson_sampling``'s defaults for each model: power-transformed values for the
   NDP, the values as they are for the GPR). At every iteration the candidates are also
   evaluated, for the record only: the true rank of the candidate the sample ranked lowest
   (0: the best of the 64) and the gap between its value and the best candidate's. A model
   whose posterior pins the function down picks the best candidate or one close to it; one
   whose samples spread widely over the candidates picks nearly at random, which explores
   but rarely refines.
2. **Regression.** Both models fitted to ``--n-context`` uniform random evaluations (values
   standardised) and sampled jointly (32 samples) at 64 uniform points: the mean squared
   error of the samples' mean and their mean standard deviation (standardised units), the
   Spearman correlation with the true values of one sample (what Thompson sampling ranks
   by) and of the mean, and the root mean squared difference between ``predict`` at the
   evaluated points and their own values (how closely the model reproduces what it was
   given; the NDP's prior has a noise standard deviation of 0.05 there), over
   ``--n-seeds`` draws.

Run::

    python benchmarks/bayes_opt_picks.py --n-seeds 10 --threads 1 --json picks.json
    python benchmarks/bayes_opt_picks.py --function branin --n-seeds 10 --threads 1 \
        --json picks_branin.json
    python benchmarks/bayes_opt_picks.py --sampler tweedie --n-seeds 10 --threads 1 \
        --json picks_tweedie.json
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _ndp_common import (
    add_runtime_args,
    add_sampler_arg,
    add_x_compression_arg,
    apply_runtime_args,
    bo_gpr,
    write_json,
)
from bayes_opt_hartmann import FUNCTIONS
from scipy.stats import spearmanr
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning

from skdiff import NDPRegressor
from skdiff.bayes_opt import thompson_sampling

#: What every recording model saw, by its ``key``: [(candidates, samples)] per iteration
#: (``thompson_sampling`` clones the model, so the record lives outside it).
_RECORDS: dict[str, list] = {}


class _Recording(RegressorMixin, BaseEstimator):
    """``model``, keeping the candidates and joint samples of every ``sample_y`` call."""

    def __init__(self, model=None, key=""):
        self.model = model
        self.key = key

    def fit(self, X, y):
        self.model_ = clone(self.model).fit(X, y)
        return self

    def sample_y(self, X, n_samples=1, random_state=0):
        f = np.asarray(self.model_.sample_y(X, n_samples=n_samples, random_state=random_state))
        _RECORDS.setdefault(self.key, []).append((np.array(X), f.reshape(len(X), -1)))
        return f


def picks(name, model, objective, bounds, f_min, seeds, n_iter, options):
    """Per seed: the true rank of every pick among its candidates, its gap to the best
    candidate, and the regret after every evaluation."""
    ranks, gaps, regrets = [], [], []
    for seed in seeds:
        key = f"{name}:{seed}"
        _RECORDS.pop(key, None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = thompson_sampling(objective, bounds, model=_Recording(model, key),
                                    n_iter=n_iter, n_candidates=64, random_state=seed,
                                    **{"local_fraction": 0.0, **options})
        r, g = [], []
        for cand, f in _RECORDS.pop(key):
            true = objective(cand)
            pick = int(np.argmin(f[:, 0]))
            r.append(int(np.sum(true < true[pick])))
            g.append(float(true[pick] - true.min()))
        ranks.append(r)
        gaps.append(g)
        regrets.append((res.best_so_far - f_min).tolist())
        print(f"{name} seed {seed}: regret {regrets[-1][-1]:.3f}, mean true rank of the "
              f"picks {np.mean(r):.1f}", flush=True)
    return {"rank": ranks, "gap": gaps, "regret": regrets}


def draws(bounds, n_context, seed):
    """The ``n_context`` uniform random evaluation points and 64 uniform query points of the
    regression measurement for ``seed``."""
    b = np.asarray(bounds, dtype=np.float64)
    rng = np.random.RandomState(seed)
    X = b[:, 0] + np.ptp(b, axis=1) * rng.uniform(size=(n_context, len(b)))
    Q = b[:, 0] + np.ptp(b, axis=1) * rng.uniform(size=(64, len(b)))
    return X, Q


def regression(models, objective, bounds, n_context, seeds):
    """Per model and seed: MSE and std of joint samples at 64 uniform points, the Spearman
    correlations of one sample and of the mean with the true values, and the RMS residual of
    ``predict`` at the ``n_context`` evaluated points."""
    out = {name: {"mse": [], "std": [], "rho_sample": [], "rho_mean": [], "context_rmse": []}
           for name in models}
    for seed in seeds:
        X, Q = draws(bounds, n_context, seed)
        y, truth = objective(X), objective(Q)
        mu, sd = y.mean(), y.std()
        z = (truth - mu) / sd
        for name, model in models.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                m = clone(model).fit(X, (y - mu) / sd)
            s = np.asarray(m.sample_y(Q, n_samples=32, random_state=0)).reshape(64, -1)
            mean = s.mean(1)
            row = out[name]
            row["mse"].append(float(np.mean((mean - z) ** 2)))
            row["std"].append(float(s.std(1).mean()))
            row["rho_sample"].append(float(np.mean([spearmanr(s[:, j], z)[0]
                                                    for j in range(s.shape[1])])))
            row["rho_mean"].append(float(spearmanr(mean, z)[0]))
            residual = m.predict(X) - (y - mu) / sd
            row["context_rmse"].append(float(np.sqrt(np.mean(residual ** 2))))
        print(f"regression seed {seed}: " + ", ".join(
            f"{n} MSE {r['mse'][-1]:.3f} rho {r['rho_sample'][-1]:.2f} context "
            f"{r['context_rmse'][-1]:.3f}" for n, r in out.items()),
            flush=True)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--function", choices=sorted(FUNCTIONS), default="hartmann3")
    p.add_argument("--n-seeds", type=int, default=10)
    p.add_argument("--n-iter", type=int, default=30)
    p.add_argument("--n-context", type=int, default=30,
                   help="evaluations the regression part conditions on")
    add_sampler_arg(p)
    add_x_compression_arg(p)
    add_runtime_args(p)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    apply_runtime_args(args)
    objective, bounds, f_min = FUNCTIONS[args.function]
    ndp = NDPRegressor(x_bounds=bounds, alpha=0.0, n_samples=2, sampler=args.sampler,
                       x_compression=args.x_compression, random_state=0)
    ndp_box = clone(ndp).set_params(x_scaling="box")
    gpr = bo_gpr(bounds)
    seeds = range(args.n_seeds)
    power, raw = {"y_transform": "power"}, {"y_transform": None}
    result = {"picks": {
        "ndp": picks("ndp", ndp, objective, bounds, f_min, seeds, args.n_iter, power),
        "ndp_box": picks("ndp_box", ndp_box, objective, bounds, f_min, seeds, args.n_iter,
                         power),
        "gpr": picks("gpr", gpr, objective, bounds, f_min, seeds, args.n_iter, raw)}}
    result["regression"] = regression(
        {"ndp": clone(ndp).set_params(n_samples=32),
         "ndp_box": clone(ndp_box).set_params(n_samples=32), "gpr": gpr},
        objective, bounds, args.n_context, seeds)
    half = args.n_iter // 2
    for name, r in result["picks"].items():
        late = np.asarray(r["rank"])[:, half:]
        print(f"{name}: picks after iteration {half}: mean true rank {late.mean():.1f} of 64, "
              f"{np.mean(late < 5):.0%} among the best 5; regret after {args.n_iter} "
              f"{np.mean([g[-1] for g in r['regret']]):.3f}")
    if args.json:
        write_json(args.json, {"args": vars(args), "n_candidates": 64, **result})


if __name__ == "__main__":
    main()
