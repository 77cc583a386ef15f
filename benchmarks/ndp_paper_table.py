"""The paper's interpolation tasks in one table: each shipped prior beside the released NDP.

Collects the results files of ``ndp_interpolation.py`` runs (one per prior and input
dimension; each keeps its own command) into one file, with a row per task and prior: the
NDP's log-likelihood per target point with the run's sampler, the released model's figure
on the same task (the paper's repository, ``experiments/regression/trained_models/*/
metrics.csv``: 128,000 steps), and the exact GP's two reference scores on the same tasks:
its posterior seen through the same metric (128 of its own samples, moment-matched: what a
perfect sampler scores) and its analytic predictive with the true hyper-parameters. A
marginalising prior's row also carries the score of its own Bayes posterior (the mixture of
GPs it was trained to sample, through the same 128-sample metric): what that prior scores when
perfectly trained, since it does not know the task's kernel and lengthscale.

    python benchmarks/ndp_paper_table.py benchmarks/results/ndp_interpolation_se.json \\
        benchmarks/results/ndp_interpolation_matern52.json ... \\
        --json benchmarks/results/ndp_paper_tasks.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _results import ROOT, header, write_json
from ndp_released_protocol import RELEASED as RELEASED_RECORDS

from skdiff.diffusion.priors import get_prior_config
from skdiff.ndp._estimator import auto_sampler

#: The released NDP's log-likelihood per target point (128 samples, moment-matched), from
#: the last row of its metrics files (``ndp_released_protocol.RELEASED``).
RELEASED = {task: round(r["loglik"], 3) for task, r in RELEASED_RECORDS.items()}


def rows_of(path):
    """The table rows of one ``ndp_interpolation.py`` results file."""
    doc = json.loads(Path(path).read_text())
    prior = doc["args"]["prior"]
    out = []
    for task, res in doc["results"].items():
        n_dims, kernel = task.split()
        n_dims = int(n_dims.removeprefix("D="))
        out.append({
            "task": task, "kernel": kernel, "n_dims": n_dims, "prior": prior,
            "sampler": res.get("sampler", doc["args"]["sampler"]),
            "n_tasks": doc["args"]["n_tasks"],
            "ndp": res["ndp"]["loglik"], "ndp_mse": res["ndp"]["mse"],
            "ndp_coverage95": res["ndp"]["coverage95"],
            "gp_sampled": res["gp_sampled"]["loglik"], "gp_true": res["gp_true"]["loglik"],
            "gpr_ml2": res["gpr_ml2"]["loglik"], "released": RELEASED.get((kernel, n_dims)),
            "prior_bayes": res.get("prior_bayes", {}).get("loglik"),
            "source": str(Path(path).resolve().relative_to(ROOT)),
            "source_command": doc.get("command"), "source_date": doc.get("date")})
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="results files of ndp_interpolation.py")
    p.add_argument("--json", default=None, help="write the table here")
    args = p.parse_args(argv)
    # the prior's default sampler (sampler="auto") first
    order = {"tweedie": 0, "tiered": 1, "fast": 2, "ddpm": 3}

    def default(r):
        return auto_sampler(get_prior_config(r["prior"], r["n_dims"]))

    rows = sorted((r for path in args.runs for r in rows_of(path)),
                  key=lambda r: (r["n_dims"], r["kernel"], r["prior"] != r["kernel"],
                                 -r["n_tasks"], r["sampler"] != default(r),
                                 order.get(r["sampler"], 4)))
    print(f"{'task':14s} {'prior':9s} {'sampler':7s} {'tasks':>5s} {'NDP':>15s} "
          f"{'released':>9s} {'prior Bayes':>15s} {'GP samples':>15s} {'GP analytic':>15s}")
    for r in rows:
        released = "–" if r["released"] is None else f"{r['released']:.3f}"
        bayes = "–" if r["prior_bayes"] is None else \
            f"{r['prior_bayes'][0]:7.3f} ± {r['prior_bayes'][1]:.3f}"
        print(f"{r['task']:14s} {r['prior']:9s} {r['sampler']:7s} {r['n_tasks']:5d} "
              f"{r['ndp'][0]:7.3f} ± {r['ndp'][1]:.3f} "
              f"{released:>9s} {bayes:>15s} {r['gp_sampled'][0]:7.3f} ± "
              f"{r['gp_sampled'][1]:.3f} {r['gp_true'][0]:7.3f} ± {r['gp_true'][1]:.3f}")
    if args.json:
        doc = {**header("ndp_paper_table.py", None), "rows": rows,
               "environment": "as recorded in each source file (the source column)"}
        write_json(args.json, doc, complete=True)
        print(f"written to {args.json}")


if __name__ == "__main__":
    main()
