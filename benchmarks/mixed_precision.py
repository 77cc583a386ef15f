"""What ``mixed_precision="bf16"`` costs in accuracy (and saves in time) on the CPU.

Two tasks, each fitted in float32 and under bfloat16 autocast with the same seeds:

* DIFFormer: semi-supervised digits (features standardised, half the rows labelled, the
  other half scored through ``transduction_``), ``DIFFormerClassifier`` defaults;
* Flowformer: next-step forecasting of a noisy two-frequency signal (windows of 48 steps,
  the last 20 % held out in time order), R^2 of ``FlowformerRegressor`` defaults.

Mean ± std over ``--seeds`` seeds; the fit times come from a shared machine and compare the
two settings only. ``--json PATH`` writes the figures (the performance guide's table).

Run: ``python benchmarks/mixed_precision.py [--seeds 3] [--threads 1]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _results import header, write_json
from sklearn.datasets import load_digits
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler

from skdiff import DIFFormerClassifier, FlowformerRegressor


def difformer_task(seed, precision, threads):
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    unlabelled = np.random.default_rng(seed).random(len(y)) < 0.5
    clf = DIFFormerClassifier(mixed_precision=precision, device="cpu", n_threads=threads,
                              random_state=seed)
    t = time.perf_counter()
    clf.fit(X, np.where(unlabelled, -1, y))
    return float(np.mean(clf.transduction_[unlabelled] == y[unlabelled])), \
        time.perf_counter() - t


def flowformer_task(seed, precision, threads):
    rng = np.random.default_rng(0)
    t = np.arange(3048)
    s = np.sin(2 * np.pi * t / 24) + 0.5 * np.sin(2 * np.pi * t / 7) \
        + 0.2 * rng.normal(size=t.size)
    idx = np.arange(48)[None, :] + np.arange(3000)[:, None]
    X, y = s[idx].astype(np.float32), s[idx[:, -1] + 1]
    cut = 2400
    reg = FlowformerRegressor(mixed_precision=precision, device="cpu", n_threads=threads,
                              random_state=seed)
    t0 = time.perf_counter()
    reg.fit(X[:cut], y[:cut])
    return float(r2_score(y[cut:], reg.predict(X[cut:]))), time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    out = {}
    for name, task, metric in (("difformer_digits", difformer_task, "accuracy"),
                               ("flowformer_forecast", flowformer_task, "R^2")):
        for precision in (None, "bf16"):
            runs = np.array([task(seed, precision, args.threads)
                             for seed in range(args.seeds)])
            key = f"{name}_{precision or 'fp32'}"
            out[key] = {"scores": runs[:, 0].tolist(), "fit_s": runs[:, 1].tolist()}
            print(f"{name:20s} {precision or 'fp32':5s} {metric} {runs[:, 0].mean():.4f} ± "
                  f"{runs[:, 0].std():.4f}, fit {runs[:, 1].mean():.1f} s", flush=True)
    if args.json:
        write_json(args.json, {**header("mixed_precision.py", args.threads), "results": out},
                   complete=True)


if __name__ == "__main__":
    main()
