"""DIFFormer on a million-row graph and beyond: one epoch, peak memory, chunked prediction.

The data is a contextual stochastic block model with a known answer: ``n`` nodes in
``--classes`` balanced classes, 64 Gaussian features around a class mean, and about
``--degree`` undirected edges per node, a fraction ``--homophily`` of them inside the class.
Two oracles that know the generating parameters bound what is recoverable: the Bayes
classifier on a node's own features, and the exact posterior given the node's features and
its neighbours' (one-hop belief propagation; the graph is locally tree-like). Half of the
nodes are labelled.

Each size runs in a fresh subprocess, so its peak resident memory
(``resource.getrusage(...).ru_maxrss``, which counts the pages of memory maps it has read) is
its own. The child loads the features as a ``numpy.memmap`` (float32) and the adjacency as
scipy CSR arrays (float32 weights, int32 indices), as they were written, and fits
``DIFFormerClassifier(batch_size=--batch-size, max_epochs=1)``: one epoch of random
partitions with their induced sub-graphs, then the transduction of every node by partitions.
It then predicts ``--n-new`` new nodes (another memory map) inductively, in chunks, against
the cached summaries. The data is generated once per size into ``--workdir`` (in another
subprocess) and reused.

Run: ``python benchmarks/difformer_large.py --sizes 100000 1000000 [--workdir DIR]``; add
``10000000`` for ten million rows (about 4 GB of data on disk). Results are printed and
merged into ``benchmarks/results/difformer_large.json`` (one row per size under ``sizes``,
each with its own command, date and load; the docs' scaling page renders them).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _results import command, header, write_json

RESULTS = Path(__file__).resolve().parent / "results" / "difformer_large.json"
CHUNK = 1 << 20  # rows per chunk of generation and of the oracles


def _rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


# -- data: a contextual SBM written to disk ----------------------------------------------------
def _class_means(args, rng):
    return rng.normal(size=(args.classes, args.features)) * args.signal


def _write_features(path, y, means, rng):
    """Features ``means[y] + N(0, I)`` written to a float32 ``.npy`` in chunks."""
    F = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                  shape=(y.size, means.shape[1]))
    for i in range(0, y.size, CHUNK):  # chunks of rows
        block = rng.standard_normal((min(CHUNK, y.size - i), means.shape[1]),
                                    dtype=np.float32)
        F[i:i + CHUNK] = block + means[y[i:i + CHUNK]]
    F.flush()
    del F


def _edges(y, args, rng):
    """Symmetric CSR adjacency: each of ``n * degree / 2`` edges joins a uniform source to
    a uniform node of its class (probability ``homophily``) or of another class."""
    import scipy.sparse as sp

    n, k = y.size, args.classes
    order = np.argsort(y, kind="stable").astype(np.int32)
    counts = np.bincount(y, minlength=k)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    m = n * args.degree // 2
    src = rng.integers(0, n, m, dtype=np.int32)
    other = rng.integers(1, k, m) * (rng.random(m) >= args.homophily)
    cls = (y[src] + other) % k
    dst = order[starts[cls] + (rng.random(m) * counts[cls]).astype(np.int64)]
    keep = src != dst
    src, dst = src[keep], dst[keep]
    A = sp.csr_matrix((np.ones(2 * src.size, dtype=np.float32),
                       (np.concatenate([src, dst]), np.concatenate([dst, src]))),
                      shape=(n, n))
    A.data[:] = 1.0  # a repeated pair is one edge
    return A


def _log_posterior(F, means):
    """Log posterior of the classes given a node's own features (uniform prior), float64."""
    out = np.empty((F.shape[0], means.shape[0]))
    for i in range(0, F.shape[0], CHUNK):  # chunks of rows
        x = np.asarray(F[i:i + CHUNK], dtype=np.float64)
        logit = x @ means.T - 0.5 * (means ** 2).sum(1)
        out[i:i + CHUNK] = logit - np.logaddexp.reduce(logit, axis=1, keepdims=True)
    return out


def _one_hop(log_post, A, args):
    """Exact posterior given the features of the node and of its neighbours (tree-like)."""
    k = args.classes
    T = np.full((k, k), (1 - args.homophily) / (k - 1))
    np.fill_diagonal(T, args.homophily)
    # log sum_c' T[c, c'] p(x_j | c') per neighbour j, summed over the neighbours of i
    messages = np.log(np.exp(log_post) @ T.T)
    return log_post + A @ messages


def make(n, args):
    """Write the data of size ``n`` and the oracles' accuracies to ``--workdir``."""
    out = Path(args.workdir) / f"n{n}"
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(n)
    means = _class_means(args, rng)
    y = rng.integers(0, args.classes, n)
    labelled = rng.random(n) < 0.5
    _write_features(out / "features.npy", y, means, rng)
    n_new = args.n_new or min(n, 1_000_000)
    y_new = rng.integers(0, args.classes, n_new)
    _write_features(out / "features_new.npy", y_new, means, rng)
    A = _edges(y, args, rng)
    for name in ("indptr", "indices", "data"):
        np.save(out / f"adjacency_{name}.npy", getattr(A, name))
    np.save(out / "y.npy", y)
    np.save(out / "y_new.npy", y_new)
    np.save(out / "labelled.npy", labelled)
    F = np.load(out / "features.npy", mmap_mode="r")
    log_post = _log_posterior(F, means)
    unl = ~labelled
    meta = {
        "n": n, "n_new": n_new, "n_edges": int(A.nnz // 2),
        "oracle_features_acc": float(np.mean(log_post[unl].argmax(1) == y[unl])),
        "oracle_one_hop_acc": float(np.mean(_one_hop(log_post, A, args)[unl].argmax(1)
                                            == y[unl])),
        "oracle_features_new_acc": float(np.mean(
            _log_posterior(np.load(out / "features_new.npy", mmap_mode="r"), means)
            .argmax(1) == y_new)),
    }
    (out / "meta.json").write_text(json.dumps(meta))


# -- the measured run -------------------------------------------------------------------------
def run(n, args):
    import scipy.sparse as sp
    import torch

    from skdiff import DIFFormerClassifier

    torch.set_num_threads(args.threads)
    d = Path(args.workdir) / f"n{n}"
    meta = json.loads((d / "meta.json").read_text())
    F = np.load(d / "features.npy", mmap_mode="r")
    A = sp.csr_matrix(tuple(np.load(d / f"adjacency_{k}.npy") for k in
                            ("data", "indices", "indptr")), shape=(n, n))
    y = np.load(d / "y.npy")
    labelled = np.load(d / "labelled.npy")
    y_fit = np.where(labelled, y, -1)
    res = {**meta, "batch_size": args.batch_size, "threads": args.threads,
           "rss_loaded_gb": _rss_gb()}
    clf = DIFFormerClassifier(batch_size=args.batch_size, max_epochs=1, early_stopping=False,
                              device="cpu", n_threads=args.threads, random_state=0)
    t = time.perf_counter()
    clf.fit(F, y_fit, adjacency=A)
    res["fit_s"] = time.perf_counter() - t
    res["epoch_s"] = float(clf.history_[-1, "dur"])
    res["steps"] = int(clf.history_[-1, "train_batch_count"])
    res["rss_fit_gb"] = _rss_gb()
    res["transduction_acc"] = float(np.mean(clf.transduction_[~labelled] == y[~labelled]))
    del A
    F_new = np.load(d / "features_new.npy", mmap_mode="r")
    t = time.perf_counter()
    pred = clf.predict(F_new)
    res["predict_new_s"] = time.perf_counter() - t
    res["inductive_acc"] = float(np.mean(pred == np.load(d / "y_new.npy")))
    res["rss_peak_gb"] = _rss_gb()
    return res


def _argv_with_sizes(sizes):
    """This run's arguments with ``--sizes`` set to ``sizes``: the command of one row, or of
    the whole file (every size it holds)."""
    argv, skip = [], False
    for a in sys.argv[1:]:
        if a == "--sizes":
            argv += [a, *map(str, sizes)]
            skip = True
        elif skip and not a.startswith("--"):
            continue
        else:
            skip = False
            argv.append(a)
    return argv


def _child(args, what, n):
    cmd = [sys.executable, __file__, f"--{what}", str(n), "--workdir", args.workdir,
           "--batch-size", str(args.batch_size), "--threads", str(args.threads),
           "--n-new", str(args.n_new)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"the {what} step for n={n} failed:\n{out.stderr[-3000:]}")
    return out.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--batch-size", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n-new", type=int, default=0,
                        help="new nodes predicted inductively (0: min(n, 1M))")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                          "skdiff_difformer_large"),
                        help="where the generated data is cached")
    parser.add_argument("--json", default=str(RESULTS))
    parser.add_argument("--make", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.classes, args.features, args.degree = 4, 64, 10
    args.homophily, args.signal = 0.7, 0.2
    if args.make:
        return make(args.make, args)
    if args.run:
        print(json.dumps(run(args.run, args)))
        return

    path = Path(args.json)
    # one row per size; a size measured again replaces its row, the others are kept
    results = json.loads(path.read_text()).get("sizes", {}) if path.exists() else {}
    print(f"DIFFormerClassifier(batch_size={args.batch_size}, max_epochs=1), 64 features, "
          f"~{args.degree} edges per node, torch threads={args.threads}")
    for n in args.sizes:
        if not (Path(args.workdir) / f"n{n}" / "meta.json").exists():
            _child(args, "make", n)
        r = json.loads(_child(args, "run", n).strip().splitlines()[-1])
        head = header("difformer_large.py", args.threads)
        r.update(command=command("difformer_large.py", _argv_with_sizes([n])), date=head["date"],
                 loadavg_start=head["environment"].get("loadavg"),
                 loadavg_end=round(os.getloadavg()[0], 2))
        results[str(n)] = r
        print(f"n={n:>9,}: epoch {r['epoch_s']:8.1f} s ({r['steps']} steps), fit "
              f"{r['fit_s']:8.1f} s, peak RSS {r['rss_peak_gb']:5.2f} GB (data loaded "
              f"{r['rss_loaded_gb']:.2f}, after fit {r['rss_fit_gb']:.2f}); transduction "
              f"acc {r['transduction_acc']:.3f} (oracles: features "
              f"{r['oracle_features_acc']:.3f}, features + neighbours "
              f"{r['oracle_one_hop_acc']:.3f}); inductive {r['n_new']:,} new rows "
              f"{r['predict_new_s']:.1f} s, acc {r['inductive_acc']:.3f} (oracle "
              f"{r['oracle_features_new_acc']:.3f})", flush=True)
        sizes = sorted(results, key=int)
        head["command"] = command("difformer_large.py", _argv_with_sizes(sizes))
        write_json(path, {**head, "sizes": {k: results[k] for k in sizes}},
                   complete=n == args.sizes[-1])
    sizes = sorted(int(k) for k in results)
    for a, b in zip(sizes, sizes[1:]):
        ratio = results[str(b)]["epoch_s"] / results[str(a)]["epoch_s"]
        print(f"epoch time ratio {b:,} / {a:,} rows: {ratio:.1f}")


if __name__ == "__main__":
    main()
