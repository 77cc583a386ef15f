"""An NDP prior learned from the ETTh1 daily profiles against ML-II GPR and the shipped prior.

Curves: every calendar day of ETTh1 and every one of its 7 columns gives one curve, hour of
the day (0-23) -> value; each column is standardised with the mean and standard deviation
of its training days, so the columns share units. The days are split chronologically, fixed
before any result was seen: the first 70 % train the prior, the next 10 % (``--split dev``)
chose the training length and network size, the last 20 % (``--split test``) are held out.

The prior (:func:`skdiff.diffusion.train_prior` with ``functions``, one torch thread) is
trained on all training curves, then checkpointed and saved with its family's units; a
rerun resumes or reuses it. On ``--n-days`` held-out days drawn at random (seeded), every
column's curve is observed at 3, 5 and 10 random hours (seeded) and the other hours are
scored:

* ``loglik``: mean log density per scored point under each method's Gaussian marginal
  predictive (for the NDPs the Gaussian moment-matched to 64 samples, the metric of
  ``NDPRegressor.log_likelihood``, computed from ``predict``'s moments of the same seeded
  samples and checked equal to it on the first curve; for GPR its exact Gaussian
  predictive);
* ``mse``: mean squared error of the predictive mean, in standardised units;
* ``coverage95``: fraction of scored points inside the central 95 % interval.

Methods: ``ndp_family`` (``NDPRegressor(prior=<the learned prior>)``, its family's units),
``ndp_gp`` (``NDPRegressor()``, the shipped ``gp`` prior, the context's own standardisation),
``gpr`` (``GaussianProcessRegressor(RBF() + WhiteKernel(), normalize_y=True)``, ML-II with 2
optimiser restarts) and ``mean_profile`` (the training curves' mean and standard deviation at
each hour, ignoring the observations: what the family alone says).

Run (one thread; the prior trains in minutes, the evaluation takes longer)::

    python benchmarks/ndp_function_prior.py --data-home DIR --work-dir DIR --split test \\
        --json benchmarks/results/ndp_function_prior.json
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from _ndp_common import add_sampler_arg, summarise
from _results import header, write_json
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel

from skdiff import NDPRegressor
from skdiff.datasets import load_ett
from skdiff.diffusion import PriorConfig, train_prior
from skdiff.diffusion.priors import save_prior

SPLITS = {"train": (0.0, 0.7), "dev": (0.7, 0.8), "test": (0.8, 1.0)}
METHODS = ("ndp_family", "ndp_gp", "gpr", "mean_profile")


def daily_profiles(data_home=None):
    """(days, 24, 7) standardised profiles and the split of the days (dict of slices)."""
    ett = load_ett("ETTh1", data_home=data_home, as_frame=False)
    hours = ett.dates.astype("datetime64[h]").astype(np.int64) % 24
    start = int(np.argmax(hours == 0))  # the first midnight
    n_days = (len(hours) - start) // 24
    rows = slice(start, start + 24 * n_days)
    if not np.array_equal(hours[rows], np.tile(np.arange(24), n_days)):
        raise ValueError("ETTh1 is expected hourly without gaps")
    days = ett.data[rows].reshape(n_days, 24, -1)
    cut = {k: slice(round(a * n_days), round(b * n_days)) for k, (a, b) in SPLITS.items()}
    train = days[cut["train"]]
    mean, std = train.mean((0, 1)), train.std((0, 1))
    return (days - mean) / std, cut, list(ett.feature_names)


def curves(days):
    """Every (day, column) of ``days`` (n, 24, C) as an (hours, values) pair."""
    hours = np.arange(24.0)
    return [(hours, days[d, :, c]) for d in range(days.shape[0]) for c in range(days.shape[2])]


def get_prior(train_curves, args, work):
    """Train (or resume, or reuse) the family prior; returns the weights path and manifest."""
    config = PriorConfig(hidden_dim=args.hidden_dim, n_layers=args.n_layers,
                         n_heads=args.n_heads, batch_size=args.batch_size,
                         n_points=(args.min_points, 24),
                         warmup_steps=args.warmup).for_functions(train_curves)
    steps_per_epoch = 250
    epochs = -(-args.steps // steps_per_epoch)
    name = f"ett_daily_h{args.hidden_dim}_l{args.n_layers}_s{epochs * steps_per_epoch}"
    t0, c0 = time.perf_counter(), time.process_time()
    _, ema, history = train_prior(
        config, functions=train_curves, max_epochs=epochs, steps_per_epoch=steps_per_epoch,
        random_state=args.seed, checkpoint=work / f"{name}.ckpt", checkpoint_every=60,
        resume=True, verbose=1)
    seconds = time.perf_counter() - t0
    pt, _ = save_prior(name, config, ema, directory=work, steps=epochs * steps_per_epoch,
                       final_loss=float(history[-1, "train_loss"]), seed=args.seed)
    return pt, {"name": name, "steps": epochs * steps_per_epoch,
                "final_loss": float(history[-1, "train_loss"]),
                "config": config.to_dict(), "n_train_curves": len(train_curves),
                "train_seconds_this_run": seconds,
                "train_cpu_seconds_this_run": time.process_time() - c0}


def gaussian_ll(y, mean, std):
    """Mean log density per point under independent Gaussians (NDPRegressor.log_likelihood's
    formula, applied to every method)."""
    var = np.maximum(std ** 2, 1e-12)
    return float(np.mean(-0.5 * (np.log(2 * np.pi * var) + (y - mean) ** 2 / var)))


def scores(y, mean, std, ll=None):
    ll = gaussian_ll(y, mean, std) if ll is None else ll
    return [ll, float(np.mean((mean - y) ** 2)), float(np.mean(np.abs(y - mean) < 1.96 * std))]


def evaluate(method, Xc, yc, Xq, yq, prior, profile, seed, sampler="auto"):
    if method == "mean_profile":
        mean, std = profile
        return scores(yq, mean[Xq.ravel().astype(int)], std[Xq.ravel().astype(int)])
    if method == "gpr":
        gpr = GaussianProcessRegressor(RBF() + WhiteKernel(), normalize_y=True,
                                       n_restarts_optimizer=2, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gpr.fit(Xc, yc)
        return scores(yq, *gpr.predict(Xq, return_std=True))
    est = NDPRegressor(prior=prior if method == "ndp_family" else "gp", random_state=seed,
                       sampler=sampler, device="cpu").fit(Xc, yc)
    mean, std = est.predict(Xq, return_std=True)
    out = scores(yq, mean, std)
    if seed == 0:
        # predict and log_likelihood draw the same seeded samples, so the formula above is
        # NDPRegressor.log_likelihood; checked on the first curve, which halves the cost
        ll = est.log_likelihood(Xq, yq)
        if not np.isclose(out[0], ll, rtol=1e-9, atol=1e-9):
            raise AssertionError(f"log-likelihood {out[0]} differs from {ll}")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-home", default=None, help="folder holding ett/ETTh1.csv "
                   "(default: $SKDIFF_DATA)")
    p.add_argument("--work-dir", required=True, help="where the prior's checkpoint and "
                   "weights are written (resumed from there)")
    p.add_argument("--split", choices=("dev", "test"), default="dev")
    p.add_argument("--n-days", type=int, default=12, help="held-out days scored (x 7 curves)")
    p.add_argument("--observed", type=int, nargs="+", default=[3, 5, 10])
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--hidden-dim", type=int, default=64)
    p.add_argument("--n-layers", type=int, default=4)
    p.add_argument("--n-heads", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--min-points", type=int, default=12,
                   help="fewest points of a training function (the most is 24)")
    p.add_argument("--warmup", type=int, default=250)
    p.add_argument("--seed", type=int, default=0)
    add_sampler_arg(p)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)

    days, cut, columns = daily_profiles(args.data_home)
    train = days[cut["train"]]
    prior, prior_record = get_prior(curves(train), args, work)
    profile = (train.mean((0, 2)), train.std((0, 2)))  # per hour, pooled over the columns
    held = days[cut[args.split]]
    rng = np.random.RandomState(args.seed)
    pick = np.sort(rng.choice(len(held), min(args.n_days, len(held)), replace=False))
    tasks = curves(held[pick])
    # the arguments without machine paths; a rerun with the same ones keeps the results of
    # the observed counts already measured (the evaluation resumes, like the training)
    recorded = {k: v for k, v in vars(args).items() if k not in ("work_dir", "data_home")}
    doc = {**header("ndp_function_prior.py", 1), "args": recorded,
           "days": {k: [s.start, s.stop] for k, s in cut.items()}, "columns": columns,
           "prior": prior_record, "results": {}}
    if args.json and Path(args.json).is_file():
        old = json.loads(Path(args.json).read_text())
        same = {k: v for k, v in old.get("args", {}).items() if k != "observed"} == \
            {k: v for k, v in recorded.items() if k != "observed"}
        if same and old.get("prior", {}).get("name") == prior_record["name"]:
            doc["results"] = {k: v for k, v in old["results"].items()
                              if int(k) in args.observed}
    for k in args.observed:
        if str(k) in doc["results"]:
            print(f"{k} observed hours: measured already, kept")
            continue
        rows = {m: [] for m in args.methods}
        seconds = dict.fromkeys(args.methods, 0.0)
        for i, (hours, y) in enumerate(tasks):
            task_rng = np.random.RandomState([args.seed, k, i])
            seen = np.sort(task_rng.choice(24, k, replace=False))
            rest = np.setdiff1d(np.arange(24), seen)
            Xc, Xq = hours[seen, None], hours[rest, None]
            for m in args.methods:
                t0 = time.perf_counter()
                rows[m].append(evaluate(m, Xc, y[seen], Xq, y[rest], prior, profile, i,
                                        args.sampler))
                seconds[m] += time.perf_counter() - t0
        res = {m: summarise(r) | {"n_curves": len(r), "seconds_per_curve": seconds[m] / len(tasks)}
               for m, r in rows.items()}
        doc["results"][str(k)] = res
        print(f"\n{k} observed hours, {len(tasks)} {args.split} curves")
        print(f"{'method':13s} {'loglik/pt':>16s} {'MSE':>16s} {'cover95':>16s} {'s/curve':>8s}")
        for m, r in res.items():
            print(f"{m:13s} " + " ".join(f"{r[q][0]:9.3f} ± {r[q][1]:.3f}"
                                         for q in ("loglik", "mse", "coverage95"))
                  + f" {r['seconds_per_curve']:8.2f}")
        if args.json:
            write_json(args.json, doc, complete=k == args.observed[-1])
    if args.json:
        print(f"written to {args.json}")


if __name__ == "__main__":
    main()
