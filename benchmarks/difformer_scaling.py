"""DIFFormer-s scaling on CPU: training-step time and peak memory, inductive prediction.

Each configuration runs in a fresh subprocess so that its peak resident memory
(``resource.getrusage(...).ru_maxrss``) is its own; "setup" is the RSS after building the data
and the model (torch itself included), "peak" the maximum over the timed steps.

Configurations: full-batch forward+backward+Adam step of the simple kernel,
N = 10K and 100K rows, 128 features, hidden 64, 2 layers, 1 head, with and without a random
graph of average degree 10, and at 100K also with per-layer gradient checkpointing
(``checkpoint_layers=True``, what ``DIFFormerClassifier`` uses for batches above 20K rows);
then inductive ``predict_proba`` of 100K new rows by a ``DIFFormerClassifier`` fitted on 10K
rows (each new row attends to the cached per-layer
summaries of the training rows).

Peak RSS also counts memory that glibc keeps after torch frees it (its mmap threshold grows
after large frees, so later tensors come from a heap that is not returned);
``--fixed-mmap-threshold`` runs the children with ``MALLOC_MMAP_THRESHOLD_=1MiB`` so the peak
tracks the live tensors.

Run: ``python benchmarks/difformer_scaling.py [--threads 1] [--fixed-mmap-threshold]
[--json benchmarks/results/difformer_scaling.json]``; the JSON holds one row per training
configuration, ``{n, graph, ckpt, step_s, setup_mb, peak_mb}``, and ``inductive``:
``{n_train, n_new, predict_s, setup_mb, peak_mb}``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
from _results import header, write_json


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _random_graph(n, degree, rng):
    import scipy.sparse as sp

    m = n * degree // 2
    rows, cols = rng.integers(0, n, m), rng.integers(0, n, m)
    A = sp.csr_matrix((np.ones(m, dtype=np.float32), (rows, cols)), shape=(n, n))
    return A.maximum(A.T).tocsr()


def run_train(n, graph, ckpt, steps, threads):
    import torch

    from skdiff.nn.difformer import DIFFormer
    from skdiff.nn.graph import edge_index_from_scipy, normalized_adjacency

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = torch.randn(n, 128)
    y = torch.randint(0, 5, (n,))
    adj = None
    if graph:
        ei, ew = edge_index_from_scipy(_random_graph(n, 10, rng))
        adj = normalized_adjacency(ei, ew, n, symmetrize=False, layout="csr")
    model = DIFFormer(128, 5, hidden_dim=64, n_layers=2, kernel="simple", checkpoint_layers=ckpt)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    setup = _rss_mb()
    times = []
    for i in range(steps + 1):  # the first step warms up and is not timed
        t = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x, adj), y)
        loss.backward()
        opt.step()
        if i:
            times.append(time.perf_counter() - t)
    return {"n": n, "graph": graph, "ckpt": ckpt, "step_s": float(np.median(times)),
            "setup_mb": setup, "peak_mb": _rss_mb()}


def run_inductive(n_train, n_new, threads):
    import torch

    from skdiff import DIFFormerClassifier

    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_train, 128)).astype(np.float32)
    y = rng.integers(0, 5, n_train)
    clf = DIFFormerClassifier(n_layers=2, hidden_dim=64, max_epochs=1, early_stopping=False,
                              device="cpu", random_state=0).fit(X, y)
    X_new = rng.normal(size=(n_new, 128)).astype(np.float32)
    setup = _rss_mb()
    clf.predict_proba(X_new[:1000])  # warm-up
    t = time.perf_counter()
    clf.predict_proba(X_new)
    return {"n_train": n_train, "n_new": n_new, "predict_s": time.perf_counter() - t,
            "setup_mb": setup, "peak_mb": _rss_mb()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--fixed-mmap-threshold", action="store_true",
                        help="run the children with MALLOC_MMAP_THRESHOLD_=1MiB: glibc then "
                             "returns freed tensors to the OS, so peak RSS tracks live memory")
    parser.add_argument("--note", default=None,
                        help="a caveat stored with the results, e.g. that the machine is shared")
    parser.add_argument("--json", default=None, help="write the rows to this JSON file")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # child process: one configuration, JSON on stdout
        kind, *rest = args.one.split(",")
        if kind == "train":
            res = run_train(int(rest[0]), rest[1] == "1", rest[2] == "1", args.steps,
                            args.threads)
        else:
            res = run_inductive(int(rest[0]), int(rest[1]), args.threads)
        print(json.dumps(res))
        return

    doc = {**header("difformer_scaling.py", args.threads, note=args.note), "rows": []}
    doc["environment"]["fixed_mmap_threshold"] = args.fixed_mmap_threshold
    env = dict(os.environ)
    if args.fixed_mmap_threshold:
        env["MALLOC_MMAP_THRESHOLD_"] = str(1 << 20)

    def child(spec):
        out = subprocess.run([sys.executable, __file__, "--one", spec, "--threads",
                              str(args.threads), "--steps", str(args.steps)],
                             capture_output=True, text=True, check=True, env=env)
        return json.loads(out.stdout.strip().splitlines()[-1])

    print(f"DIFFormer-s, 128 features, hidden 64, 2 layers, torch threads={args.threads}, "
          f"fixed mmap threshold={args.fixed_mmap_threshold}")
    print(f"{'N':>8} {'graph':>6} {'ckpt':>5} {'step (s)':>9} {'setup RSS (MB)':>15} "
          f"{'peak RSS (MB)':>14}")
    res = {}
    for graph in (False, True):
        for n, ckpt in ((10_000, False), (100_000, False), (100_000, True)):
            r = child(f"train,{n},{int(graph)},{int(ckpt)}")
            res[n, graph, ckpt] = r
            doc["rows"].append(r)
            if args.json:  # rewritten after every configuration
                write_json(args.json, doc)
            print(f"{n:>8} {str(graph):>6} {str(ckpt):>5} {r['step_s']:>9.3f} "
                  f"{r['setup_mb']:>15.0f} {r['peak_mb']:>14.0f}", flush=True)
    for graph in (False, True):
        ratio = res[100_000, graph, False]["step_s"] / res[10_000, graph, False]["step_s"]
        print(f"time(100K)/time(10K), graph={graph}: {ratio:.1f} (target <= 12)")
    r = child("inductive,10000,100000")
    print(f"inductive predict_proba of {r['n_new']} rows against {r['n_train']} training rows: "
          f"{r['predict_s']:.2f} s, peak RSS {r['peak_mb']:.0f} MB")
    doc["inductive"] = r
    if args.json:
        write_json(args.json, doc, complete=True)
        print(f"rows written to {args.json}")


if __name__ == "__main__":
    main()
