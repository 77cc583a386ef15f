"""Sparse features: torch COO rows against :class:`skdiff.nn.sparse.SparseRows` (CSR with its
transpose), the form DIFFormer's estimators give a sparse ``X`` to the network.

For three shapes of bag-of-words features (random, row-normalised: Cora-sized, PubMed-sized,
and a 30,000-word vocabulary), two timings per form, the best of ``--reps`` after a warm-up:

* ``first_layer``: the input projection to 64 units forward and backward (the weight's
  gradient), ``X W^T + b``;
* ``training_step``: one full-batch training step of the default graph network (4 layers,
  hidden 64, simple kernel, dropout 0.2) over a random graph of mean degree 4: forward,
  backward and an Adam step.

Run:
    python benchmarks/sparse_features.py --threads 1 \\
        --json benchmarks/results/sparse_features.json
The JSON holds ``command``, ``date``, ``environment`` and one row per (shape, part): ``n``,
``n_features``, ``nnz_per_row``, ``coo_s``, ``sparse_rows_s`` and ``speedup``.
"""

from __future__ import annotations

import argparse
import json
import time

import _results
import numpy as np
import scipy.sparse as sp
import torch

#: (name, rows, features, non-zeros per row).
SHAPES = (("Cora-sized", 2708, 1433, 18), ("PubMed-sized", 19717, 500, 50),
          ("30K-word vocabulary", 20000, 30000, 100))


def features(n, f, nnz, seed=0):
    """Random non-negative sparse rows, each normalised to sum 1 (as the estimators scale
    bag-of-words features), as a float32 CSR matrix."""
    from sklearn.preprocessing import normalize

    F = sp.random(n, f, density=nnz / f, format="csr", random_state=seed, dtype=np.float64)
    return sp.csr_matrix(normalize(F, norm="l1"), dtype=np.float32)


def as_coo(F):
    coo = F.tocoo()
    idx = torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.long)
    return torch.sparse_coo_tensor(idx, torch.as_tensor(coo.data), coo.shape).coalesce()


def best_time(step, reps):
    step()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return min(times)


def first_layer(x, f, reps):
    from skdiff.nn.difformer import _linear

    torch.manual_seed(0)
    layer = torch.nn.Linear(f, 64)

    def step():
        layer.zero_grad()
        _linear(layer, x).sum().backward()

    return best_time(step, reps)


def training_step(x, adj, f, reps):
    from skdiff.nn import DIFFormer

    torch.manual_seed(0)
    net = DIFFormer(f, 5, hidden_dim=64, n_layers=4, dropout=0.2).train()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        net(x, adj).logsumexp(1).mean().backward()
        opt.step()

    return best_time(step, reps)


def graph(n, seed=0):
    """A random graph of mean degree 4, as the network's normalised adjacency."""
    from skdiff.difformer._data import degree_scale, graph_rows

    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(0, n, size=(2, 2 * n))
    A = sp.csr_matrix((np.ones(2 * n), (rows, cols)), shape=(n, n))
    A = ((A + A.T) > 0).astype(np.float64).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    return graph_rows(A, degree_scale(A), 0, n)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--note", default=None)
    p.add_argument("--json", help="write the rows and the environment to this JSON file")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from skdiff.nn.sparse import SparseRows

    doc = {**_results.header("sparse_features.py", args.threads, note=args.note, argv=argv),
           "rows": []}
    for name, n, f, nnz in SHAPES:
        F = features(n, f, nnz)
        forms = {"coo": as_coo(F), "sparse_rows": SparseRows.from_scipy(F)}
        adj = graph(n)
        for part in ("first_layer", "training_step"):
            secs = {k: first_layer(x, f, args.reps) if part == "first_layer"
                    else training_step(x, adj, f, args.reps) for k, x in forms.items()}
            row = {"shape": name, "n": n, "n_features": f, "nnz_per_row": nnz, "part": part,
                   "coo_s": secs["coo"], "sparse_rows_s": secs["sparse_rows"],
                   "speedup": secs["coo"] / secs["sparse_rows"]}
            doc["rows"].append(row)
            print(json.dumps(row), flush=True)
            if args.json:
                _results.write_json(args.json, doc)
    if args.json:
        _results.write_json(args.json, doc, complete=True)
    print(table(doc["rows"]))


def table(rows):
    """Markdown table: one line per (shape, part), the two times and COO / SparseRows."""
    lines = ["| features | rows x features, non-zeros per row | step | torch COO s | "
             "SparseRows s | speed-up |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['n']} x {r['n_features']}, {r['nnz_per_row']} | "
                     f"{r['part'].replace('_', ' ')} | {r['coo_s']:.4f} | "
                     f"{r['sparse_rows_s']:.4f} | {r['speedup']:.1f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
