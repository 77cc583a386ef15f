"""The defaults benchmark's rows refitted with several seeds: how far one seed speaks for a row.

``benchmarks/defaults.py`` fits every estimator with ``random_state=0``. This script fits
the same rows (its ``DATASETS`` and ``TASKS``: the same data, split, call and metric) with
``random_state`` 0, 1, ..., ``--seeds - 1`` and sets each score beside the row's best
baseline as stored in the defaults results file (the baselines do not depend on the
estimator's seed; a row missing there has its baselines computed here). Reported per row:
the ratio at seed 0, the median and range over the seeds, and how many seeds lose (worse
than the baseline by more than 1 %, 0.01 nats for a log-likelihood).

Run (one thread; real data through the library's loaders; about 20 minutes: the rows that
take minutes per fit are left out)::

    OMP_NUM_THREADS=1 python benchmarks/defaults_seeds.py --split heldout \\
        --estimators DIFFormerClassifier DIFFormerRegressor FlowformerRegressor \\
        FlowformerClassifier --skip ETTh1 n=20K ACSF1 --data-home $SKDIFF_DATA \\
        --json benchmarks/results/defaults_seeds.json

``--rows`` and ``--estimators`` select rows as in ``defaults.py``; heavy rows (``--heavy``
there) and rows whose name matches ``--skip`` are left out. ``--set KEY=VALUE`` builds the
estimators with other parameters than their defaults (a candidate default across seeds).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import defaults as D
import numpy as np
import torch
from _results import add_run_arguments, header, write_json
from threadpoolctl import threadpool_limits


def _stored_baselines(path):
    """``{row key: (best baseline name, its score)}`` of a defaults results file."""
    if path is None or not Path(path).exists():
        return {}
    rows = json.loads(Path(path).read_text())["rows"]
    return {r["key"]: (r["best_baseline"], r["baseline_score"]) for r in rows
            if "baseline_score" in r}


def _best_baseline(task, d):
    """The row's baselines computed here: (name, score) of the best."""
    results = D.baselines(task, d)
    best = D.best_baseline(task, results)
    return best, results[best]["score"]


def _seeded(Est, seed, settings=None):
    """A factory the task calls as ``Est(random_state=0)``: the estimator with ``seed`` (and
    the ``--set`` parameters)."""
    def make(**params):
        return Est(**{**params, **(settings or {}), "random_state": seed})
    return make


def run_row(ds, ctx, seeds, stored, settings=None):
    task = D.TASKS[ds.task]
    Est = D._estimator(task.estimator)
    key = D.row_key(ds)
    d = ds.load(ctx)
    name, base = stored.get(key) or _best_baseline(task, d)
    scores = []
    for seed in range(seeds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scores.append(task.call(_seeded(Est, seed, settings), d)["score"])
    ratios, statuses = zip(*(D._status(task, s, base) for s in scores))
    row = {"key": key, "estimator": task.estimator, "dataset": ds.name, "split": ds.split,
           "metric": task.metric, "compare": task.compare, "baseline": name,
           "baseline_score": base, "scores": scores, "ratios": list(ratios),
           "losses": statuses.count("loss"), "seeds": seeds}
    if settings:
        row["params"] = dict(settings)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--split", choices=["dev", "heldout", "all"], default="heldout")
    p.add_argument("--estimators", nargs="+", default=None)
    p.add_argument("--rows", nargs="+", default=None,
                   help="only rows whose name contains one of these")
    p.add_argument("--skip", nargs="+", default=[],
                   help="leave out rows whose name contains one of these")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--data-home", default=None)
    p.add_argument("--baselines", type=Path, default=D.DEFAULT_JSON,
                   help="the defaults results file whose baselines are used")
    D.add_set_argument(p)
    add_run_arguments(p)
    args = p.parse_args(argv)
    settings = D.parse_set(p, args.set)
    torch.set_num_threads(args.threads)
    ctx = D.Context(data_home=Path(args.data_home) if args.data_home else None, quick=False)
    stored = _stored_baselines(args.baselines)
    doc = {**header("defaults_seeds.py", args.threads, note=args.note, argv=argv),
           "rows": []}
    for ds in D.DATASETS:
        task = D.TASKS[ds.task]
        if ds.heavy or (args.split != "all" and ds.split != args.split):
            continue
        if args.estimators and task.estimator not in args.estimators:
            continue
        if args.rows and not any(r in ds.name for r in args.rows):
            continue
        if any(s in ds.name for s in args.skip) or D._estimator(task.estimator) is None:
            continue
        t0 = time.perf_counter()
        with threadpool_limits(args.threads):
            row = run_row(ds, ctx, args.seeds, stored, settings)
        row["seconds"] = round(time.perf_counter() - t0, 1)
        doc["rows"].append(row)
        r = np.asarray(row["ratios"])
        print(f"{row['estimator']:21s} {row['dataset']:42s} seed 0 {r[0]:.3f} median "
              f"{np.median(r):.3f} range {r.min():.3f}-{r.max():.3f} losses "
              f"{row['losses']}/{args.seeds}", flush=True)
        if args.json:
            write_json(args.json, doc)
    if args.json:
        write_json(args.json, doc, complete=True)


if __name__ == "__main__":
    main()
