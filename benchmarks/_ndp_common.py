"""Command-line plumbing shared by the NDP benchmark scripts.

Every script writes its JSON through :func:`write_json`: the header of every results file
(``command``, ``date``, ``environment``: see ``_results.py``) and then the script's fields.
"""

import sys
from pathlib import Path

import numpy as np
import torch
from _results import header
from _results import write_json as write_results


def add_runtime_args(parser):
    """Add ``--threads`` to an argparse parser (``--prior`` takes a name or a weights path)."""
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")


def apply_runtime_args(args):
    """Set the torch thread count."""
    if args.threads:
        torch.set_num_threads(args.threads)


def write_json(path, payload):
    """Write ``payload`` under the common header (:func:`_results.header`), complete."""
    script = Path(sys.argv[0]).name
    write_results(path, {**header(script, torch.get_num_threads()), **payload}, complete=True)
    print(f"written to {path}")


def summarise(rows):
    """Rows of (log-likelihood, MSE, 95 % coverage) per task -> ``{metric: [mean, standard
    error]}`` (standard error 0 for a single row)."""
    a = np.asarray(rows, dtype=np.float64)
    se = a.std(0, ddof=1) / np.sqrt(len(a)) if len(a) > 1 else np.zeros(a.shape[1])
    return {k: [float(a[:, i].mean()), float(se[i])]
            for i, k in enumerate(("loglik", "mse", "coverage95"))}
