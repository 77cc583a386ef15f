"""Markdown page of the defaults benchmark, built from its JSON results alone."""

from __future__ import annotations

import statistics

ESTIMATOR_ORDER = ("DIFFormerClassifier", "DIFFormerRegressor", "FlowformerRegressor",
                   "FlowformerClassifier", "NDPRegressor")
SPLITS = (("dev", "dev"), ("heldout", "held-out"))

INTRO = """\
# Defaults against plain baselines

Every row calls one skdiff estimator exactly as a new user would, with nothing but the data
and `random_state=0` (raw features, `-1` / `NaN` for unlabelled rows, the adjacency when there
is a graph), and sets its test score beside the plain scikit-learn baselines fitted on the
same data and split. The **baseline** of a row is the best of them on that row; **ratio** is
skdiff's score divided by it (for the NDP rows, **Δ** is the difference of log-likelihoods).
**win**: at least as good as the baseline; **tie**: within 1 % of it (0.01 nats for a
log-likelihood); **loss**: worse.

The data sets were split into a **dev** part (defaults may be chosen on it) and a
**held-out** part (only reported) before any result was seen; the assignment is the
`DATASETS` table of `benchmarks/defaults.py`, which also holds the protocol of every row.
Rows may join the dev part later (the forecasting rows after airline, bundled series that
probe where the forecaster's defaults generalise, the two sequence-regression sets, and
two block models with binary bag-of-words features, like a citation graph's, beside Cora);
the held-out part never grows.
Times are wall-clock seconds of the `fit` call (for NDP, fit plus `sample_posterior` summed
over the tasks) on a shared, loaded machine: compare them within a run, not across machines.

Baselines: tabular, `LogisticRegression` / `RidgeCV` in a `StandardScaler` pipeline,
`HistGradientBoosting*`, for regression `GaussianProcessRegressor(ConstantKernel() *
RBF(ones(n_features)) + WhiteKernel(), normalize_y=True, n_restarts_optimizer=3)` on
standardised features (`gpr_ard`, ML-II with a lengthscale per feature), `LabelSpreading`
(7-NN kernel, semi-supervised rows; the other models then fit the labelled rows only);
graphs, SGC (the same linear model on the 2-hop propagated features, without a scaler, as
published), `LabelSpreading` on the graph (alpha 0.9), the linear model on the features
alone; forecasting, ridge on the lag window
(penalty chosen on the latest 20 % of the training windows), seasonal naive, last value;
sequence regression, `RidgeCV` on the standardised flattened series,
`HistGradientBoostingRegressor` on the flattened series, the training targets' mean;
series classification, `LogisticRegression` and `RidgeClassifierCV` on the standardised
flattened series, 1-NN (Euclidean); functions, `GaussianProcessRegressor(ConstantKernel() *
RBF() + WhiteKernel(), normalize_y=True, n_restarts_optimizer=10)` (ML-II), on x as given
and on x standardised with the context's mean and std, scored by the exact Gaussian
log-likelihood of its joint predictive (the NDP can only be scored through 128 joint samples
moment-matched to a Gaussian, which costs even an exact posterior part of a nat per point:
the GPR seen that way is in the notes). Log-likelihoods, MSE and coverage are on the
function's natural scale (GP draws: unit variance; test functions: their standard deviation
over the domain).
"""


def _num(v, metric=""):
    if v is None:
        return "-"
    if "log-lik" in metric:
        return f"{v:.2f}"
    if "accuracy" in metric:
        return f"{v:.3f}"
    return f"{v:.4g}"


def _size(d):
    if not d:
        return ""
    if "tasks" in d:
        return f"{d['tasks']} tasks"
    if "nodes" in d:
        h = f", h={d['homophily']:.2f}" if "homophily" in d else ""
        return f"{d['nodes']} nodes, {d['edges']} edges, {d['labelled']} labelled{h}"
    if "train" in d:
        shape = "x".join(str(s) for s in d["shape"])
        return f"{d['train']} / {d['test']} ({shape})"
    return f"{d['rows']} rows, {d['labelled']} labelled"


def _notes(row):
    sk, out = row.get("skdiff", {}), []
    extra = sk.get("extra", {})
    if "epochs" in extra:
        out.append(f"{extra['epochs']} epochs")
    if "encoder_used" in extra:
        out.append("ridge skip + encoder's correction" if extra["encoder_used"]
                   else "ridge skip alone")
    if "network_used" in extra:
        kept = {"residuals": "network kept (ridge + correction)",
                "targets": "network kept (on the targets)"}.get(extra.get("network_target"),
                                                                "network kept")
        out.append(kept if extra["network_used"] else "linear fallback (ridge)")
    if "in_scaler_pipeline" in extra:
        scaled = _num(extra["in_scaler_pipeline"], row["metric"])
        out.append(f"in a StandardScaler pipeline {scaled}")
    if "coverage95" in extra and "median_mse" not in extra:  # a regressor's return_std
        out.append(f"95 % intervals cover {extra['coverage95']:.2f}")
    elif "coverage95" in extra:
        base = row["baselines"].get(row.get("best_baseline"), {}).get("extra", {})
        out.append(f"95 % coverage {extra['coverage95']:.2f} (GPR {base.get('coverage95', 0):.2f})")
        out.append(f"median MSE {extra['median_mse']:.3g} (GPR {base.get('median_mse', 0):.3g})")
        if "sampled_median_loglik" in base:
            out.append(f"GPR through 128 samples {base['sampled_median_loglik']:.2f}")
        if "true_gp_median_loglik" in base:
            out.append(f"true GP {base['true_gp_median_loglik']:.2f}")
    for w in row.get("warnings", []):
        w = " ".join(w.split())  # one line: a table cell cannot hold a line break
        out.append(f"warns {w[:110]}" + ("..." if len(w) > 110 else ""))
    if "error" in row:
        out.append(f"**{row['error']}**")
    return "; ".join(out)


def _summary(rows):
    head = ["| estimator |" + "".join(f" {label}: rows | {label}: win / tie / loss | "
                                      f"{label}: median ratio (Δ) |" for _, label in SPLITS)
            + " fit s (all rows) |",
            "|---|" + "---|---|---|" * len(SPLITS) + "---|"]
    body = []
    for est in ESTIMATOR_ORDER:
        mine = [r for r in rows if r["estimator"] == est]
        if not mine:
            continue
        cells = [est]
        for split, _ in SPLITS:
            part = [r for r in mine if r["split"] == split]
            done = [r for r in part if "ratio" in r]
            st = [r["status"] for r in part]
            errors = st.count("error")
            cells += [str(len(part)) if part else "-",
                      " / ".join(str(st.count(s)) for s in ("win", "tie", "loss"))
                      + (f" (+{errors} error)" if errors else "") if part else "-",
                      f"{statistics.median(r['ratio'] for r in done):.3f}" if done else "-"]
        fit = sum(r.get("skdiff", {}).get("fit_s", 0.0) for r in mine)
        cells.append(f"{fit:.0f}")
        body.append("| " + " | ".join(cells) + " |")
    return head + body


def _detail(rows, est):
    mine = sorted((r for r in rows if r["estimator"] == est),
                  key=lambda r: (r["split"] != "dev", r.get("order", 0)))
    if not mine:
        return []
    out = [f"### {est}", "",
           "| data | split | size (train / test) | metric | skdiff | baseline | ratio (Δ) | "
           "status | skdiff fit s | baseline s | other baselines | notes |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in mine:
        if r["status"] == "skipped":
            out.append(f"| {r['dataset']} | {r['split']} | | {r['metric']} | skipped | | | "
                       f"skipped | | | | {r.get('error', '')} |")
            continue
        m = r["metric"]
        best = r.get("best_baseline")
        base = r["baselines"].get(best, {})
        others = ", ".join(f"{k} {_num(v['score'], m)}" for k, v in r["baselines"].items()
                           if k != best)
        sk = r.get("skdiff", {})
        ratio = r.get("ratio")
        ratio_s = "-" if ratio is None else (f"{ratio:+.2f}" if r["compare"] == "difference"
                                             else f"{ratio:.3f}")
        out.append(
            f"| {r['dataset']} | {r['split']} | {_size(r.get('data'))} | {m} | "
            f"{_num(sk.get('score'), m)} | {best} {_num(r.get('baseline_score'), m)} | "
            f"{ratio_s} | {r['status']} | {sk.get('fit_s', float('nan')):.1f} | "
            f"{base.get('total_s', float('nan')):.1f} | {others} | {_notes(r)} |")
    return out + [""]


#: The section on how far ``random_state=0`` speaks for a row (its table is rendered by the
#: docs' ``benchmark`` directive from ``benchmarks/defaults_seeds.py``'s results).
SEEDS = """## Across seeds

Every row above is one fit, with `random_state=0`. The held-out rows below were fitted
again with `random_state` 0 to 4 on the same data and split, against the same baseline:
where the range is wide, a single seed's win or loss says little, and the median is the
better summary. Rows that take minutes per fit (ETTh1, the 20,000-node block model, ACSF1,
the functions) are not refitted.

```{benchmark} defaults_seeds
```"""


def render(doc, json_name="benchmarks/results/defaults.json"):
    """The docs page (a markdown string) of a results document (the parsed JSON)."""
    rows = doc["rows"]
    used = {r["run"] for r in rows}
    lines = [INTRO, "## Runs", "",
             "The runs the rows below come from (a row run again replaces its earlier result).",
             "", "| date | command | skdiff | hardware | torch threads | load average "
             "(start / end) | minutes |", "|---|---|---|---|---|---|---|"]
    for i, run in enumerate(doc["runs"]):
        if i not in used:
            continue
        version = run["skdiff"] + (f" ({run['commit']})" if run.get("commit") else "")
        lines.append(f"| {run['date']} | `{run['command']}` | {version} | {run['hardware']} | "
                     f"{run['threads']} | {run['loadavg_start']} / "
                     f"{run.get('loadavg_end', '-')} | {run.get('wall_min', '-')} |")
    lines += ["", f"Results: `{json_name}`; this page: `python benchmarks/defaults.py --render "
              f"--json {json_name}`.", "", "## Summary", "", *_summary(rows), "",
              SEEDS, "", "## Rows", ""]
    for est in ESTIMATOR_ORDER:
        lines += _detail(rows, est)
    return "\n".join(lines).rstrip() + "\n"
