"""Semi-supervised digits: 10 labels per class, the other 1697 rows unlabelled (-1).

Transductive accuracy on the unlabelled rows, mean ± std over 5 draws of the labelled set:
DIFFormer (no graph; and with a 10-nearest-neighbour graph), LabelSpreading (kNN kernel) and
SelfTrainingClassifier(LogisticRegression). Features standardised.

Run: ``python benchmarks/digits.py [--draws 5] [--threads 1]
[--json benchmarks/results/digits.json]``; the JSON holds one row per model:
``{model, accuracy: [per draw], seconds}`` (seconds: mean per fit).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _results import header, write_json
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import kneighbors_graph
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier

from skdiff import DIFFormerClassifier
from skdiff.datasets import make_label_mask


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: torch's own choice)")
    parser.add_argument("--note", default=None,
                        help="a caveat stored with the results, e.g. that the machine is shared")
    parser.add_argument("--json", default=None, help="write the rows to this JSON file")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    doc = {**header("digits.py", torch.get_num_threads(), note=args.note), "rows": []}
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    A = kneighbors_graph(X, 10, include_self=False)
    models = {
        "DIFFormer (no graph)": lambda s: DIFFormerClassifier(n_neighbors=None, random_state=s,
                                                              device="cpu"),
        "DIFFormer + 10-NN graph": lambda s: DIFFormerClassifier(random_state=s, device="cpu"),
        "LabelSpreading (knn)": lambda s: LabelSpreading(kernel="knn", n_neighbors=10),
        "SelfTraining(LogReg)": lambda s: SelfTrainingClassifier(LogisticRegression(max_iter=1000)),
    }
    print(f"{'model':<26} {'accuracy on unlabelled rows':>28} {'s/fit':>6}")
    for name, make in models.items():
        accs, secs = [], []
        for draw in range(args.draws):
            y_semi = make_label_mask(y, 10, random_state=draw)
            unl = y_semi == -1
            t = time.perf_counter()
            est = make(draw)
            if "graph" in name and "no graph" not in name:
                est.fit(X, y_semi, adjacency=A)
            else:
                est.fit(X, y_semi)
            secs.append(time.perf_counter() - t)
            accs.append(np.mean(est.transduction_[unl] == y[unl]))
        accs = np.array(accs)
        doc["rows"].append({"model": name, "accuracy": accs.tolist(),
                            "seconds": float(np.mean(secs))})
        if args.json:  # rewritten after every model
            write_json(args.json, doc)
        print(f"{name:<26} {100 * accs.mean():>21.1f} ± {100 * accs.std():>4.1f} "
              f"{np.mean(secs):>6.1f}", flush=True)
    if args.json:
        write_json(args.json, doc, complete=True)
        print(f"rows written to {args.json}")


if __name__ == "__main__":
    main()
