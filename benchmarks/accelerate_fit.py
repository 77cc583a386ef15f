"""Data-parallel training with Hugging Face Accelerate, checked against one process.

Run by the launcher, e.g. on the CPU with two processes (gloo)::

    accelerate launch --multi_gpu --num_processes 2 benchmarks/accelerate_fit.py --cpu

(on GPUs: the same without ``--cpu``, one process per GPU). Every process fits, with
``accelerator=Accelerator(cpu=...)``,

* a ``FlowformerRegressor`` on windows of a noisy two-frequency signal (next-step targets):
  each process trains on its shard of every batch of 32 windows (``batch_size=32 /
  processes``) and the gradients are averaged;
* a mini-batch ``DIFFormerClassifier`` on a contextual stochastic block model (a
  :class:`~skdiff.Graph`, so that a search splits its nodes), half of its nodes labelled,
  with ``batch_size`` a quarter of the nodes: each process trains on its own partitions
  (with their induced sub-graphs) of every epoch.

The main process also fits both without the accelerator. The script prints the two scores
of each (held-out R^2, accuracy on the unlabelled nodes) and the fit times, and exits with
status 1 when a distributed score is further than ``--tolerance`` from the single-process
one. It also checks, in every process, that all processes end with the same network, that a
fitted accelerated estimator pickles and predicts the same after loading, that
``GridSearchCV`` over an accelerated estimator gives every process the same results, and
that full-batch DIFFormer training under several processes is refused with an error that
names ``batch_size``. ``--json PATH`` writes the figures.

Launched as a single process (e.g. ``accelerate launch --cpu --num_processes 2``, whose
multi-CPU mode needs MPI) the script says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import broadcast_object_list, gather_object
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV

from skdiff import DIFFormerClassifier, FlowformerRegressor, Graph
from skdiff.datasets import make_planted_partition


def signal_windows(n, length, rng):
    """Windows of a noisy two-frequency signal and the value after each window."""
    t = np.arange(n + length)
    s = np.sin(2 * np.pi * t / 24) + 0.5 * np.sin(2 * np.pi * t / 7) \
        + 0.1 * rng.normal(size=t.size)
    idx = np.arange(length)[None, :] + np.arange(n)[:, None]
    return s[idx].astype(np.float32), s[idx[:, -1] + 1]


def flowformer_task(args, accelerator):
    rng = np.random.default_rng(0)
    X, y = signal_windows(args.n_sequences, 32, rng)
    cut = int(0.8 * len(X))
    params = dict(hidden_dim=32, n_heads=2, max_epochs=args.epochs, batch_size=32,
                  lr=3e-3, n_threads=1, random_state=0)
    return "flowformer_r2", FlowformerRegressor, params, (X[:cut], y[:cut]), {}, \
        lambda est: r2_score(y[cut:], est.predict(X[cut:]))


def difformer_task(args, accelerator):
    X, y, A = make_planted_partition(args.n_nodes, 3, p_in=12 / args.n_nodes,
                                     p_out=1.5 / args.n_nodes, feature_signal=0.6,
                                     random_state=0)
    graph = Graph(X, A)  # graph mode: node ids as X, so a search splits the nodes
    unlabelled = np.random.default_rng(0).random(len(y)) < 0.5
    params = dict(n_layers=2, hidden_dim=32, max_epochs=args.epochs,
                  batch_size=args.n_nodes // 4, n_threads=1, random_state=0)
    return "difformer_acc", DIFFormerClassifier, params, \
        (graph.node_ids(), np.where(unlabelled, -1, y)), {"graph": graph}, \
        lambda est: float(np.mean(est.transduction_[unlabelled] == y[unlabelled]))


def timed_fit(cls, params, data, fit_params, accelerator=None):
    t = time.perf_counter()
    est = cls(**params, accelerator=accelerator).fit(*data, **fit_params)
    return est, time.perf_counter() - t


def same_everywhere(value):
    """Whether every process holds ``value`` (compared by its pickle)."""
    return len({pickle.dumps(v) for v in gather_object([value])}) == 1


def check_task(task, args, accelerator, out):
    """Fit distributed (and single-process on the main process); record and check."""
    name, cls, params, data, fit_params, score = task(args, accelerator)
    # Flowformer: each process takes batch_size / processes rows per step, so a step sees as
    # many rows as one process's step and an epoch has as many steps (DIFFormer: a step
    # takes one partition per process)
    dist_params = {**params, "batch_size": params["batch_size"] // accelerator.num_processes} \
        if cls is FlowformerRegressor else params
    est, seconds = timed_fit(cls, dist_params, data, fit_params, accelerator)
    out[name] = {"distributed": score(est), "distributed_fit_s": seconds}
    probe = est.predict(data[0][:50], **fit_params)
    out[name]["same_network_everywhere"] = same_everywhere(probe.round(10).tolist())
    loaded = pickle.loads(pickle.dumps(est))
    out[name]["pickle_predicts_same"] = bool(np.array_equal(
        loaded.predict(data[0][:50], **fit_params), probe))
    if accelerator.is_main_process:
        single, seconds = timed_fit(cls, params, data, fit_params)
        out[name].update(single_process=score(single), single_process_fit_s=seconds)
    accelerator.wait_for_everyone()
    return cls, params, data, fit_params


def check_search(cls, params, data, fit_params, accelerator):
    """GridSearchCV over an accelerated estimator: same results in every process."""
    search = GridSearchCV(cls(**params, accelerator=accelerator), {"lr": [1e-2, 3e-3]}, cv=2)
    search.fit(*data, **fit_params)
    return same_everywhere(np.round(search.cv_results_["mean_test_score"], 10).tolist())


def check_full_batch_refused(cls, params, data, fit_params, accelerator):
    try:
        cls(**{**params, "batch_size": None}, accelerator=accelerator).fit(*data, **fit_params)
    except ValueError as exc:
        return "batch_size" in str(exc)
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="train on the CPU (gloo)")
    parser.add_argument("--quick", action="store_true", help="smaller data, fewer epochs")
    parser.add_argument("--tolerance", type=float, default=0.05,
                        help="largest accepted gap between distributed and single-process "
                             "scores (R^2 and accuracy)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    args.n_sequences, args.n_nodes, args.epochs = (600, 600, 15) if args.quick else \
        (3000, 4000, 40)
    torch.set_num_threads(1)
    accelerator = Accelerator(cpu=args.cpu)
    if accelerator.num_processes < 2:
        print("accelerate_fit: launched as one process; launch it with several, e.g. "
              "accelerate launch --multi_gpu --num_processes 2 benchmarks/accelerate_fit.py "
              "--cpu", file=sys.stderr)
        sys.exit(2)
    accelerator.print(f"accelerate_fit: {accelerator.num_processes} processes on "
                      f"{accelerator.device} ({accelerator.distributed_type})", flush=True)
    out = {"processes": accelerator.num_processes, "device": str(accelerator.device),
           "tolerance": args.tolerance, "quick": args.quick}
    check_task(flowformer_task, args, accelerator, out)
    cls, params, data, fit_params = check_task(difformer_task, args, accelerator, out)
    params = {**params, "max_epochs": 3}
    out["search_same_everywhere"] = check_search(cls, params, data, fit_params, accelerator)
    out["full_batch_refused"] = check_full_batch_refused(cls, params, data, fit_params,
                                                         accelerator)
    failures = []
    if accelerator.is_main_process:
        for name in ("flowformer_r2", "difformer_acc"):
            r = out[name]
            gap = abs(r["distributed"] - r["single_process"])
            print(f"{name}: {accelerator.num_processes} processes {r['distributed']:.4f} "
                  f"({r['distributed_fit_s']:.1f} s), one process {r['single_process']:.4f} "
                  f"({r['single_process_fit_s']:.1f} s), gap {gap:.4f} (tolerance "
                  f"{args.tolerance})")
            if gap > args.tolerance:
                failures.append(f"{name} gap {gap:.4f} > {args.tolerance}")
            for check in ("same_network_everywhere", "pickle_predicts_same"):
                if not r[check]:
                    failures.append(f"{name}: {check} failed")
        for check in ("search_same_everywhere", "full_batch_refused"):
            print(f"{check}: {out[check]}")
            if not out[check]:
                failures.append(f"{check} failed")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
    failures = broadcast_object_list([failures])[0]
    accelerator.wait_for_everyone()
    # leave the process group before the interpreter exits: torn down at exit instead, gloo's
    # threads can abort a process ("terminate called without an active exception") after
    # every check has passed
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    if failures:
        accelerator.print("FAILED: " + "; ".join(failures))
        return 1
    accelerator.print("accelerate_fit: OK")
    return 0


if __name__ == "__main__":
    code = main()
    # end the process without the interpreter's teardown: the C++ side of torch.distributed
    # (gloo's threads) can still abort a process at exit ("terminate called without an
    # active exception", SIGABRT) after every check has passed and the process group has
    # been destroyed, which the launcher reports as a failure of the whole run
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
