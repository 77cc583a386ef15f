"""Benchmark tables generated from the benchmark scripts' JSON (``benchmarks/results/``).

A page holds one ``benchmark`` directive per claim::

    ```{benchmark} cora
    ```

The directive reads the claim's JSON file and renders what was measured, the number, the
baseline and the paper beside it, the hardware, the date and the command. A missing file
renders as "not yet measured" with the command that writes it, so re-running a script and
rebuilding the site updates the page. The files are build dependencies: an incremental
build picks up a new result.

Every JSON may carry, at its top level, ``command`` (the command line that wrote it),
``date`` (ISO 8601), ``environment`` (a dict: ``device_name``, ``torch``, ``threads``,
``note``, ...) and ``complete`` (false: the command was stopped before its end, and the table
says so); a field that is absent renders as "not recorded". The rows each claim reads are
described in its ``Claim.schema``; ``python docs/_ext/skdiff_benchmarks.py`` lists them.

The ``shipped-priors`` directive renders the manifests of the NDP priors that ship in
``skdiff/weights``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from skdiff.diffusion.priors import get_prior_config
from skdiff.ndp._estimator import auto_sampler

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
WEIGHTS = ROOT / "skdiff" / "weights"


@dataclass
class Claim:
    """One claim of a benchmark page and how its table is read from a JSON file."""

    title: str
    what: str
    file: str
    command: str
    paper: str
    schema: str
    table: Callable[[dict], tuple[list[str], list[list[str]]]]
    #: optional: a figure of the same JSON, rendered under the table
    figure: Callable[[dict], nodes.Node] | None = None
    requires: str = ""  # what the command needs beyond the repository, e.g. a CUDA GPU


# -- number formatting ---------------------------------------------------------------------
def _mean_sd(values, fmt=".3f", scale=1.0):
    a = np.asarray(values, dtype=float) * scale
    if a.size == 0:
        return "–"
    if a.size == 1:
        return f"{a[0]:{fmt}}"
    return f"{a.mean():{fmt}} ± {a.std(ddof=1):{fmt}} ({a.size} runs)"


def _pm(pair, fmt=".3f"):
    return f"{pair[0]:{fmt}} ± {pair[1]:{fmt}}"


def _s(x, fmt=".2f"):
    return "–" if x is None else f"{x:{fmt}}"


def _secs(x):
    """Seconds: one decimal from a second up, two significant digits below."""
    return "–" if x is None else f"{x:.1f}" if x >= 1 else f"{x:.2g}"


# -- DIFFormer -------------------------------------------------------------------------------
CORA_PAPER = {"DIFFormer-s": "85.9 ± 0.4", "DIFFormer-a": "84.1 ± 0.6"}


CORA_SPLITS = {"public": "public Planetoid", "official": "20/class, official draw",
               "numpy": "20/class, numpy draw"}


def _cora(doc):
    # every split is one draw of the paper's protocol (20 labels per class, 500 validation
    # and 1000 test nodes), so the paper's figure stands beside each DIFFormer row
    rows = []
    for r in doc["rows"]:
        family = next((k for k in CORA_PAPER if r["model"].startswith(k)), None)
        model = r["model"]
        if "alpha" in r:
            model += f" (alpha={r['alpha']} on validation)"
        rows.append([CORA_SPLITS.get(r["split"], r["split"]), model,
                     _mean_sd(r["accuracy"], ".1f", 100), CORA_PAPER.get(family, "–"),
                     _secs(r.get("seconds"))])
    return ["split", "model", "test accuracy (%)", "paper (%)", "s per fit"], rows


def _defaults_candidate(doc):
    # rows of `defaults.py --set ...` beside the same rows of the defaults' own results
    path = RESULTS / "defaults.json"
    defaults = {}
    if path.is_file():
        defaults = {r["key"]: r for r in json.loads(path.read_text())["rows"]}
    rows = []
    for r in sorted(doc["rows"], key=lambda r: (r["split"] != "dev", r.get("order", 0))):
        base = defaults.get(r["key"], {})
        cand = r.get("skdiff", {}).get("score")
        default = base.get("skdiff", {}).get("score")
        delta = "–" if cand is None or default is None else f"{cand - default:+.3f}"
        rows.append([r["split"], r["dataset"], r["metric"], _s(cand, ".3f"),
                     _s(default, ".3f"), delta,
                     f"{r['best_baseline']} {r['baseline_score']:.3f}",
                     r.get("status", "–"), base.get("status", "–")])
    params = ", ".join(f"{k}={v!r}" for k, v in doc["rows"][0].get("params", {}).items()) \
        if doc["rows"] else ""
    return ["split", "data", "metric", params or "candidate", "defaults", "difference",
            "baseline", "status", "defaults' status"], rows


def _digits(doc):
    rows = [[r["model"], _mean_sd(r["accuracy"], ".1f", 100), _secs(r.get("seconds"))]
            for r in doc["rows"]]
    return ["model", "accuracy on the unlabelled rows (%)", "s per fit"], rows


def _difformer_regression(doc):
    names = {"difformer": "DIFFormerRegressor (defaults)",
             "difformer_network": "DIFFormerRegressor(linear_fallback=False), the network",
             "ridge": "RidgeCV on the features",
             "ridge_2hop": "RidgeCV on 2-hop propagated features (SGC)"}

    def method(r):
        used = r.get("network_used")
        if used is None:
            return names.get(r["method"], r["method"])
        return f"{names[r['method']]}: network kept in {sum(used)} of {len(used)} seeds"

    csbm = "homophily" in doc["rows"][0]  # the block-model task: 100 labelled nodes
    rows = [[str(r["n"]), f"{r['homophily']:.1f}" if csbm else f"{r['labelled']:.0%}",
             method(r), f"{r['r2_mean']:.3f} ± {r['r2_std']:.3f}", _secs(r["seconds"])]
            for r in doc["rows"]]
    return ["nodes", "homophily" if csbm else "labelled", "method", "R² on unlabelled nodes",
            "s per fit"], rows


def _difformer_small_tables(doc):
    def ratios(r, method):
        return " ".join(f"{v:.2f}" for v in r["ratio_to_ridge"][method])

    rows = [[str(r["n_rows"]), r["table"], ratios(r, "difformer"),
             f"{sum(r['network_kept'])} of {len(r['network_kept'])}",
             ratios(r, "difformer_network")] for r in doc["rows"]]
    rows += [[str(s["n_rows"]), f"geometric mean ({s['fits']} fits)",
              f"{s['geomean_difformer']:.3f} (worst {s['worst_difformer']:.2f})", "",
              f"{s['geomean_difformer_network']:.3f} (worst "
              f"{s['worst_difformer_network']:.2f})"] for s in doc["summary"]]
    return ["labelled rows", "table", "defaults: MSE / ridge's, per seed", "network kept",
            "linear_fallback=False: MSE / ridge's"], rows


def _difformer_generators(doc):
    def per_seed(r, method):
        return " ".join(f"{v:.3f}" for v in r["mse"][method]) if method in r["mse"] else "–"

    def coverage(r):
        values = [v for v in r["coverage95"] if v is not None]
        return " ".join(f"{v:.2f}" for v in values) if values else "–"

    def kept(r):
        flags = [v for v in r["network_kept"] if v is not None]
        return f"{sum(flags)} of {len(flags)}" if flags else "–"

    rows = [[str(r["n_rows"]), r["generator"], per_seed(r, "network"), per_seed(r, "default"),
             kept(r), coverage(r), per_seed(r, "ridge")] for r in doc["rows"]]
    return ["training rows", "generator", "linear_fallback=False: MSE / var(y)",
            "defaults: MSE / var(y)", "network kept", "defaults: 95 % interval covers",
            "RidgeCV: MSE / var(y)"], rows


def _ratio(v, compare):
    # a score against its baseline: a ratio, or a difference (log-likelihoods)
    return f"{v:+.2f}" if compare == "difference" else f"{v:.3f}"


def _defaults_seeds(doc):
    rows = []
    for r in doc["rows"]:
        v, c = r["ratios"], r["compare"]
        rows.append([r["estimator"], r["dataset"], r["split"],
                     f"{r['baseline']} {r['baseline_score']:.4g}", _ratio(v[0], c),
                     _ratio(float(np.median(v)), c),
                     f"{_ratio(min(v), c)} to {_ratio(max(v), c)}",
                     f"{r['losses']} of {r['seeds']}"])
    return ["estimator", "data", "split", "baseline", "random_state=0", "median",
            "range", "seeds that lose"], rows


def _seeds_candidate(doc):
    # rows of `defaults_seeds.py --set ...` beside the same rows refitted with the defaults
    defaults = {}
    for name in ("defaults_seeds_dev.json", "defaults_seeds.json"):
        path = RESULTS / name
        if path.is_file():
            defaults.update({r["key"]: r for r in json.loads(path.read_text())["rows"]})

    def spread(r):
        v, c = r["ratios"], r["compare"]
        return (f"{_ratio(float(np.median(v)), c)} ({_ratio(min(v), c)} to "
                f"{_ratio(max(v), c)}), {r['losses']} of {r['seeds']} lose")

    rows = []
    for r in sorted(doc["rows"], key=lambda r: r["split"] != "dev"):
        base = defaults.get(r["key"])
        paired = "–"
        if base is not None and len(base["ratios"]) == len(r["ratios"]):
            paired = f"{np.mean(np.subtract(r['ratios'], base['ratios'])):+.3f}"
        rows.append([r["split"], r["dataset"], f"{r['baseline']} {r['baseline_score']:.4g}",
                     spread(r), "–" if base is None else spread(base), paired])
    params = ", ".join(f"{k}={v!r}" for k, v in doc["rows"][0].get("params", {}).items()) \
        if doc["rows"] else ""
    return ["split", "data", "baseline", f"{params or 'candidate'}: median ratio (range)",
            "defaults: median ratio (range)", "mean paired difference"], rows


def _regression_uncertainty(doc):
    names = {"gaussian": "DIFFormerRegressor (defaults: Gaussian head)",
             "mc_dropout": 'DIFFormerRegressor(uncertainty="mc_dropout")',
             "gpr": "GaussianProcessRegressor (ARD RBF + white noise, ML-II)"}
    rows = [[r["dataset"], r["protocol"], names.get(r["method"], r["method"]),
             f"{r['mse']:.4g}", f"{r['coverage95']:.2f}", f"{r['coverage68']:.2f}",
             f"{r['nll']:.3f}", _secs(r["seconds"])] for r in doc["rows"]]
    return ["data", "labelled", "method", "MSE", "95 % interval covers", "68 % covers",
            "NLL per target", "s per fit"], rows


def _difformer_scaling(doc):
    # time relative to the smallest size with the same graph setting, beside the row ratio:
    # linear scaling shows as equal numbers
    smallest = {}
    for r in doc["rows"]:
        if not r["ckpt"] and r["n"] < smallest.get(r["graph"], (np.inf,))[0]:
            smallest[r["graph"]] = (r["n"], r["step_s"])
    rows = []
    for r in doc["rows"]:
        n0, t0 = smallest.get(r["graph"], (None, None))
        ratio = f"{r['step_s'] / t0:.1f}x time for {r['n'] / n0:.0f}x rows" \
            if n0 and r["n"] != n0 else "–"
        rows.append([f"{r['n']:,}", "yes" if r["graph"] else "no", "yes" if r["ckpt"] else "no",
                     _s(r["step_s"], ".3f"), ratio, _s(r["peak_mb"], ".0f")])
    inductive = doc.get("inductive")
    if inductive:
        rows.append([f"predict {inductive['n_new']:,} new rows against {inductive['n_train']:,}",
                     "no", "no", _s(inductive["predict_s"], ".3f"), "–",
                     _s(inductive["peak_mb"], ".0f")])
    return ["rows", "graph", "checkpointing", "step s", "against the smallest",
            "peak RSS (MB)"], rows


# -- Flowformer ------------------------------------------------------------------------------
def _difformer_large(doc):
    rows = [[f"{r['n']:,}", f"{r['n_edges'] / 1e6:.1f} M", f"{r['epoch_s']:.0f} s "
             f"({r['steps']} steps)", f"{r['fit_s']:.0f} s", f"{r['rss_peak_gb']:.1f} GB",
             f"{r['transduction_acc']:.3f}", f"{r['oracle_one_hop_acc']:.3f}",
             f"{r['inductive_acc']:.3f}", f"{r['oracle_features_new_acc']:.3f}",
             f"{r['predict_new_s']:.1f} s", _s(r.get("loadavg_start"), ".1f")]
            for r in doc["sizes"].values()]
    return ["rows", "edges", "epoch", "fit (epoch + transduction)", "peak memory",
            "accuracy, transduction", "oracle, features + neighbours", "accuracy, new rows",
            "oracle, features", "prediction, new rows", "load at start"], rows


MIXED_TASKS = {"difformer_digits": ("DIFFormerClassifier, semi-supervised digits",
                                     "accuracy"),
               "flowformer_forecast": ("FlowformerRegressor, next-step forecast", "R²")}


def _mixed_precision(doc):
    rows = []
    for task, (label, metric) in MIXED_TASKS.items():
        for precision in ("fp32", "bf16"):
            r = doc["results"].get(f"{task}_{precision}")
            if r is not None:
                rows.append([label, metric, "float32" if precision == "fp32" else
                             "bfloat16 autocast", _mean_sd(r["scores"], ".4f"),
                             _mean_sd(r["fit_s"], ".1f")])
    return ["task", "metric", "precision", "score", "fit seconds"], rows


def _mem(r):
    """Peak MB, with the part above the inputs' own peak in brackets where measured (CPU)."""
    if r is None or r.get("peak_mb") is None:
        return "–"
    extra = r.get("extra_mb")
    return f"{r['peak_mb']:,.0f}" + ("" if extra is None else f" ({extra:,.0f})")


def _flow_speed(doc):
    keyed = {(r["L"], r["causal"], r["dtype"], r["method"]): r for r in doc["rows"]}
    rows = []
    for (L, causal, dtype, method), f in keyed.items():
        if method != "flow":
            continue
        s = keyed.get((L, causal, dtype, "sdpa"))
        rows.append([f"{L:,}", "causal" if causal else "normal", dtype,
                     _s(f["seconds"], ".4f"), _s(s["seconds"], ".4f") if s else "–",
                     f"{s['seconds'] / f['seconds']:.1f}x" if s else "–", _mem(f), _mem(s)])
    return ["L", "attention", "dtype", "Flow-Attention s", "softmax (SDPA) s", "speed-up",
            "Flow peak MB (above inputs)", "SDPA peak MB (above inputs)"], rows


def _sparse_features(doc):
    rows = [[r["shape"], f"{r['n']:,} x {r['n_features']:,}", str(r["nnz_per_row"]),
             r["part"].replace("_", " "), _s(r["coo_s"], ".4f"), _s(r["sparse_rows_s"], ".4f"),
             f"{r['speedup']:.1f}x"] for r in doc["rows"]]
    return ["features", "rows x columns", "non-zeros per row", "timed", "torch COO s",
            "SparseRows s", "speed-up"], rows


ETT_NAMES = {"last": "last value", "ridge": "ridge on the window", "ridge_all": "ridge",
             "ridge_ci": "ridge, channel-independent", "flow": "FlowformerRegressor",
             "flow_ci": "FlowformerRegressor, channel-independent",
             "softmax": "softmax Transformer", "softmax_ci": "softmax Transformer, "
             "channel-independent", "flow_mc": "FlowformerRegressor, MC dropout",
             "last_ci": "last value, channel-independent"}


def _ett(setting):
    def table(doc):
        groups = {}
        for r in doc["rows"]:
            if r["setting"] == setting:
                groups.setdefault((r["horizon"], r["model"]), []).append(r)
        rows = []
        for (h, model), rs in sorted(groups.items(), key=lambda kv: kv[0][0]):
            cov = [r["coverage90"] for r in rs if "coverage90" in r]
            rows.append([str(h), ETT_NAMES.get(model, model), _mean_sd([r["mse"] for r in rs],
                                                                        ".4f"),
                         _mean_sd([r["val_mse"] for r in rs if "val_mse" in r], ".4f"),
                         _mean_sd(cov, ".3f") if cov else "–"])
        return ["horizon", "model", "test MSE", "validation MSE", "90 % interval coverage"], rows
    return table


# -- NDP -------------------------------------------------------------------------------------
NDP_PAPER = {("D=1 se", "ndp"): "0.39", ("D=1 se", "gp_true"): "0.71",
             ("D=1 matern52", "ndp"): "-0.03", ("D=1 matern52", "gp_true"): "0.32"}
NDP_METHODS = {"ndp": "NDPRegressor",
               "prior_bayes": "the prior's Bayes posterior (a mixture of GPs), its samples "
                              "moment-matched",
               "gp_sampled": "exact GP, its posterior samples moment-matched",
               "gp_true": "exact GP, true hyper-parameters",
               "gpr_ml2": "GaussianProcessRegressor, ML-II"}


def _partial_fit_stream(doc):
    names = {"ett": "ETTh1 OT (lookback 96, horizon 24)",
             "regression": "make_regression read as sequences of 20 steps",
             "logistic": "noisy logistic map (lookback 8, horizon 1), 10 passes"}
    rows = [[names.get(r["stream"], r["stream"]), r["metric"], f"{r['rows']:,}",
             *(_s(r.get(key), ".4g") for key in (
                 "first_call", "after_stream", "after_stream_no_early_stopping",
                 "after_epoch_loop", "fit", "ridge"))] for r in doc["rows"]]
    return ["stream", "metric", "rows", "first call", "after the stream",
            "after the stream, early_stopping=False", "epoch loop on the same rows",
            "fit on all rows", "ridge on all rows"], rows


def _flowformer_correction_margin(doc):
    default = doc.get("margin_default")
    rows = [[f"{r['margin_se']:g}" + (" (default)" if r["margin_se"] == default else ""),
             f"{r['kept']} / {r['fits']}", _s(r["gmean_linear"], ".4f"),
             _s(r["gmean_nonlinear"], ".4f"), _s(r["gmean_all"], ".4f"),
             str(r["worse_2pct"]), str(r["better_2pct"])] for r in doc["rows"]]
    return ["margin (standard errors)", "fits keeping the correction",
            "test MSE / ridge alone: linear series", "nonlinear series", "all",
            "fits > 2 % worse", "fits > 2 % better"], rows


def _ndp_smooth_conditioning(doc):
    rows = [[r["method"], _s(r.get("evaluations"), "d"), _s(r["median_mse"], ".4f"),
             _s(r.get("median_loglik"), ".3f"), _s(r.get("seconds"), ".1f")]
            for r in doc["rows"]]
    return ["method", "network evaluations", "median MSE of the mean",
            "median log-lik per point", "s a task"], rows


def _ndp_smooth_oracle(doc):
    rows = [[_s(r["lengthscale"], "g"), str(r["context"]), str(r["n_resample"]),
             str(r["evaluations"]), _s(r["mean_error"], ".3f"), _s(r["kl"], ".3f")]
            for r in doc.get("oracle", [])]
    return ["lengthscale", "context points", "n_resample", "network evaluations",
            "squared error of the mean / posterior variance", "KL per point"], rows


def _ndp_interpolation(doc):
    rows = []
    for task, res in doc["results"].items():
        for method, label in NDP_METHODS.items():
            if method in res:
                r = res[method]
                rows.append([task, label, _pm(r["loglik"]), _pm(r["mse"]),
                             _pm(r["coverage95"]), NDP_PAPER.get((task, method), "–")])
    return ["task", "method", "log-lik per point", "MSE", "95 % coverage",
            "paper log-lik"], rows


#: The paper-task table's names of ``NDPRegressor``'s samplers.
NDP_SAMPLERS = {"tiered": "tiered", "fast": "fast", "ddpm": "DDPM-500, U = 5"}


def _ndp_sampler_label(sampler, prior):
    label = NDP_SAMPLERS.get(sampler, str(sampler))
    default = auto_sampler(get_prior_config(prior, 1))  # NDPRegressor(sampler="auto")
    return f"{label} (default)" if sampler == default else label


def _ndp_paper_tasks(doc):
    rows = [[r["task"], r["prior"], _ndp_sampler_label(r.get("sampler"), r["prior"]),
             str(r["n_tasks"]), _pm(r["ndp"]),
             "–" if r["released"] is None else f"{r['released']:.3f}",
             "–" if r.get("prior_bayes") is None else _pm(r["prior_bayes"]),
             _pm(r["gp_sampled"]), _pm(r["gp_true"]), _pm(r["gpr_ml2"], ".2f"),
             r["source"].rsplit("/", 1)[-1]] for r in doc["rows"]]
    return ["task", "prior", "sampler", "tasks", "NDPRegressor", "released NDP",
            "the prior's Bayes posterior, 128 samples", "exact GP, 128 samples",
            "exact GP, analytic", "GPR ML-II", "run"], rows


def _ndp_speed(doc):
    rows = [[str(r["n_dims"]), r["sampler"], f"{r['evaluations']:,}",
             str(r.get("n_tasks", "–")), _s(r["seconds"], ".1f"), _s(r.get("cpu_seconds"), ".1f"),
             _s(r.get("loglik"), ".3f"), _s(r.get("mse"), ".3f")] for r in doc["rows"]]
    for gp in doc.get("exact_gp", []):
        # the same tasks, scored analytically and through n_samples of the GP's own samples
        d, n = str(gp["n_dims"]), str(gp["n_tasks"])
        rows.append([d, "exact GP, true hyper-parameters (analytic)", "–", n, "–", "–",
                     _s(gp["loglik"], ".3f"), _s(gp["mse"], ".3f")])
        rows.append([d, f"exact GP, {doc['n_samples']} posterior samples "
                     "moment-matched", "–", n, "–", "–", _s(gp["loglik_sampled"], ".3f"),
                     _s(gp["mse_sampled"], ".3f")])
    return ["D", "sampler", "network evaluations", "tasks", "predict(return_std=True) wall s",
            "CPU s", "log-lik per point", "MSE"], rows


def _paired_table(rows, on, off, on_label, off_label):
    """A table of ``ndp_speed.py --paired-*`` rows: CPU seconds of ``predict`` with a module
    flag on (``cpu_seconds_<on>``) and off, their ratio, and the predictions' differences."""
    return ["D", f"{on_label}, CPU s", f"{off_label}, CPU s", "ratio",
            "largest difference of means", "of stds"], [
        [str(r["n_dims"]), " ".join(f"{v:.1f}" for v in r[f"cpu_seconds_{on}"]),
         " ".join(f"{v:.1f}" for v in r[f"cpu_seconds_{off}"]), f"{r['ratio']:.2f}",
         f"{r['max_mean_difference']:.0e}", f"{r['max_std_difference']:.0e}"]
        for r in rows]


def _ndp_attention_paired(doc):
    return _paired_table(doc["attention_paired"], "closed_form", "kernel", "closed form",
                         "scaled_dot_product_attention")


def _ndp_projection_paired(doc):
    return _paired_table(doc["projection_paired"], "bias_after", "linear",
                         "bias after the product", "F.linear")


def _ndp_sampler_network(doc):
    res = doc["results"]
    ref = doc["args"].get("reference", "ddpm500-U5")
    rows = [[name, f"{r['evaluations']:,}", f"{r['loglik']:.3f}", _pm(r["loglik_diff"]),
             f"{r['expected']:.3f}", _pm(r["expected_diff"]), _secs(r["seconds_per_task"])]
            for name, r in res.items() if name != "ceiling"]
    c = res["ceiling"]
    rows.append(["exact GP posterior samples", "–", f"{c['loglik']:.3f}", "–",
                 f"{c['expected']:.3f}", "–", "–"])
    return ["sampler", "network evaluations", "log-lik per point",
            f"difference to {ref}", "expected log-lik per point",
            f"difference to {ref}", "s per task"], rows


#: The samplers of the ``levels`` runs: the candidates compared on task seed 0, and the
#: one chosen there (c26-U5) with the two beside it, checked on task seed 1.
LEVELS_SAMPLERS = {0: "c32-U4 c24-U5 c24-U6 c27-U5 c26-U5", 1: "c32-U4 c26-U5 c24-U5 c27-U5"}


#: What the paired sampler runs against the fast path name as their reference and comparison.
FAST_REFERENCE = "the fast sampler (c32-U4)"
FAST_COMPARED = "the fast sampler, 32 cubic levels with 4 RePaint repeats (c32-U4)."


def _sampler_network_claim(kernel, title, seed=1, prior=None, repeats=False, levels=False,
                           tweedie=False):
    """The paired sampler runs on 8 tasks of task seed 1 against the paper's sampler, or on
    the 16 tasks of the paper-task table (task seed 0) against the fast sampler; with the
    kernel's own prior, or with ``prior``. ``repeats``: the fast path with more RePaint
    repeats on those 16 tasks, or on 16 tasks of task seed 1 (each candidate run once).
    ``levels``: fewer levels with more repeats, at most the fast path's cost, on the 16
    tasks of task seed ``seed``. ``tweedie``: the Tweedie-corrected sampler beside the tiered
    and fast paths on the 16 tasks of the paper-task table (each run once)."""
    prior = prior or kernel
    if tweedie:
        file = f"ndp_sampler_network_{'' if prior == kernel else prior + '_'}tweedie_{kernel}" \
               "_seed0.json"
    elif levels:
        file = f"ndp_sampler_network_{prior}_levels_{kernel}_seed{seed}.json"
    elif repeats and seed == 1:
        file = f"ndp_sampler_network_{prior}_repeats_{kernel}_seed1.json"
    else:
        file = (f"ndp_sampler_network_{'' if prior == kernel else prior + '_'}"
                f"{'repeats_' if repeats else ''}{kernel}{'_seed0' if seed == 0 else ''}.json")
    if tweedie:
        tasks, reference, runs = "16 tasks (those of the paper-task table)", FAST_REFERENCE, (
            "--n-tasks 16 --seed 0", "--reference c32-U4 --samplers c32-U4 c40-U4/1 "
            "c64-tweedie")
        compared = FAST_COMPARED
        repeats = True
    elif levels:
        tasks, reference, runs = (
            "16 tasks" + (" (those of the paper-task table)" if seed == 0 else
                          " (not those of the paper-task table)"),
            FAST_REFERENCE, (
                f"--n-tasks 16 --seed {seed}",
                f"--reference c32-U4 --samplers {LEVELS_SAMPLERS[seed]}"))
        compared = FAST_COMPARED
        repeats = True
    elif repeats and seed == 1:
        tasks, reference, runs = "16 tasks (not those of the paper-task table)", FAST_REFERENCE, (
            "--n-tasks 16 --seed 1", "--reference c32-U4 --samplers c32-U4 c32-U8")
        compared = FAST_COMPARED
    elif repeats:
        tasks, reference, runs = "16 tasks (those of the paper-task table)", FAST_REFERENCE, (
            "--n-tasks 16 --seed 0", "--reference c32-U4 --samplers c32-U4 c32-U8 c32-U12 "
            "t150-U12/4 t150-U10/3 c20-U6 c24-U5")
        compared = FAST_COMPARED
    elif seed == 1:
        tasks, reference, runs = "8 tasks", "the paper's sampler", (
            "--n-tasks 8 --seed 1", "--samplers ddpm500-U5 c32-U4 c40-U4/1 c55-U2")
        compared = "the paper's sampler: 500 DDPM steps with 5 RePaint repeats (ddpm500-U5)."
    else:
        tasks, reference, runs = "16 tasks (those of the paper-task table)", (
            "the fast sampler (c32-U4, run once per task)"), (
            "--n-tasks 16 --seed 0", "--reference c32-U4 --samplers c32-U4 c40-U4/1")
        compared = FAST_COMPARED
    return Claim(
        f"Samplers with the trained network: {title} tasks, task seed {seed}, prior "
        f"{prior!r}", "Every sampler "
        f"on the same {tasks} of the paper's protocol ({title} draws, 1-9 context points, "
        f"50 targets, task seed {seed}) with the shipped prior={prior!r} network, paired "
        f"against {reference} on the same tasks. log-lik: the paper's metric (Gaussian "
        "moment-matched to 128 joint samples, scored at the drawn targets; each candidate "
        f"run {'once' if repeats else 'twice'} per task"
        f"{'' if repeats else ' and averaged'}); expected: the same Gaussian scored in "
        "expectation "
        "over targets from the exact GP posterior (no noise from the single target draw). "
        "Differences are paired means ± standard errors over the tasks. Names: c = cubic "
        "level spacing, the number of levels, U = RePaint repeats; c64-tweedie is the "
        "Tweedie-corrected sampler (64 levels, no repeats, the prior's own covariance), "
        "NDPRegressor's default with the per-kernel priors; c40-U4/1 is the tiered path "
        "(U = 4 on jumps back to levels >= 40, U = 1 below); c32-U4 is the fast sampler, "
        "its default with the others; t150-U12/4 takes U = 12 on jumps back to levels "
        ">= 150 and U = 4 below.",
        file,
        f"python benchmarks/ndp_sampler_network.py {runs[0]} --kernel {kernel} "
        f"--prior {prior} {runs[1]} --repeats {1 if repeats else 2} "
        f"--cache-dir PATH --threads 1 --json benchmarks/results/{file}",
        compared,
        "args: {...}, results: {ceiling: {loglik, expected}, <sampler>: {evaluations, kwargs, "
        "loglik, loglik_diff: [mean, se], expected, expected_diff, seconds_per_task, "
        "per_task}}", _ndp_sampler_network)


def _ndp_oracle(doc):
    sizes = doc["context_sizes"]
    rows = []
    for r in doc["rows"]:
        reverse = r.get("kl_exact_sampler", [None] * len(sizes))
        rows.append([r["sampler"], f"{r['evaluations']:,}", *[
            f"{a:.3f}" + ("" if b is None else f" / {b:.3f}")
            for a, b in zip(r["kl_per_point"], reverse)]])
    both = "kl_exact_sampler" in doc["rows"][0] if doc["rows"] else False
    kl = "KL(s‖p) / KL(p‖s)" if both else "KL(s‖p)"
    return ["sampler", "network evaluations",
            *[f"{kl}, {c} context point{'s' if c > 1 else ''}" for c in sizes]], rows


FAMILY_METHODS = {"ndp_family": "NDPRegressor, prior learned from the training days",
                  "ndp_gp": "NDPRegressor, shipped gp prior",
                  "gpr": "GaussianProcessRegressor (RBF + WhiteKernel), ML-II",
                  "mean_profile": "training days' mean profile (no conditioning)"}


def _ndp_function_prior(doc):
    rows = [[k, FAMILY_METHODS.get(m, m), str(r["n_curves"]), _pm(r["loglik"]), _pm(r["mse"]),
             _pm(r["coverage95"]), _secs(r.get("seconds_per_curve"))]
            for k, res in doc["results"].items() for m, r in res.items()]
    return ["observed hours", "method", "curves", "log-lik per point", "MSE",
            "95 % coverage", "s per curve"], rows


#: The paper's analytic exact-GP scores (true hyper-parameters, Table 1).
NDP_PAPER_EXACT = {"se": "0.71", "matern52": "0.32"}


def _ndp_ceiling(doc):
    rows = []
    for r in doc["rows"]:
        posterior = r.get("posterior", "exact GP")
        exact = posterior == "exact GP" and r["n_samples"] is None
        rows.append([r["kernel"], posterior, "analytic" if r["n_samples"] is None
                     else f"{r['n_samples']:,}", f"{r['loglik']:.3f} ± {r['se']:.3f}",
                     NDP_PAPER_EXACT.get(r["kernel"], "–") if exact else "–"])
    return ["task kernel", "posterior", "samples", "log-lik per point", "paper (analytic)"], rows


def _ndp_released_protocol(doc):
    names = {"se": "SE", "matern52": "Matérn-5/2"}
    rows = []
    for e in doc["summary"]:
        rel, se = e["released"], e["released_se"]
        rows.append(
            [f"{names.get(e['kernel'], e['kernel'])}, D = {e['n_dims']}",
             _pm([rel["loglik"], se["loglik"]]), _pm([rel["mse"], se["mse"]]),
             f"{rel['n_context']:.1f}", str(e["context_at_mean"]),
             _pm(e["sampled_at_mean"]["loglik"])]
            + [f"{_pm(e[f'{noise}_{tag}']['loglik'])} / {e[f'{noise}_{tag}']['mse'][0]:.3f}"
               for tag in ("at_mean", "all") for noise in ("independent", "shared")])
    return ["task", "released NDP: log-lik per point", "released NDP: MSE",
            "released: context points per task (mean)", "k: that mean rounded up",
            "exact GP, k context points, 128 samples moment-matched: log-lik",
            "exact GP, k context points, independent noise: log-lik / MSE",
            "exact GP, k context points, shared normals: log-lik / MSE",
            "exact GP, all 10·D context points, independent noise: log-lik / MSE",
            "exact GP, all 10·D context points, shared normals: log-lik / MSE"], rows


BO_NAMES = {"ndp_family": "NDPRegressor, prior trained on the family (Thompson sampling)",
            "gpr": "GaussianProcessRegressor, ML-II every iteration (Thompson sampling)",
            "gpr_power": "GaussianProcessRegressor, ML-II every iteration, on power-"
                         "transformed values (Thompson sampling)",
            "random": "random search"}
#: Legend labels of the regret figures.
BO_SHORT = {"ndp_family": "NDP, family prior", "gpr": "GPR", "gpr_power": "GPR, power",
            "random": "random search"}


def _bo_prior(method):
    """(shipped prior, on the values as given?) of an ``ndp``, ``ndp_<prior>`` or
    ``..._raw`` method (without ``_local``); None for the other methods."""
    if method in BO_NAMES or not (method == "ndp" or method.startswith("ndp_")):
        return None
    name = method.removesuffix("_raw")
    return (name[4:] if name.startswith("ndp_") else "gp"), method.endswith("_raw")


def _bo_name(method):
    """The table label of a Bayesian-optimisation method (``<method>_local``: half the
    candidates around the best point so far)."""
    base = method.removesuffix("_local")
    where = ", half the candidates local" if base != method else ""
    prior = _bo_prior(base)
    if prior is None:
        name = BO_NAMES.get(base, base)
        return name.replace(" (Thompson", where + " (Thompson") if where else name
    values = "the values as given" if prior[1] else "power-transformed values, the default"
    return f"NDPRegressor, shipped {prior[0]} prior, on {values}{where} (Thompson sampling)"


def _bo_short(method):
    """The legend label of a Bayesian-optimisation method."""
    base = method.removesuffix("_local")
    where = ", local" if base != method else ""
    prior = _bo_prior(base)
    if prior is None:
        return BO_SHORT.get(base, base) + where
    return f"NDP, {prior[0]} prior" + (", values as given" if prior[1] else "") + where


def _bayes_opt(doc):
    n_iter, n_init = doc["args"]["n_iter"], doc.get("n_init", 3)
    early = (1, 3, 5, 10) if n_iter <= 20 else (10, 20, 30, 40, 50)
    marks = [k for k in early if k < n_iter] + [n_iter]
    rows = []
    for method, runs in doc["regret"].items():
        a = np.asarray(runs)  # (seeds, evaluations); the n_init initial points first
        cells = [f"{a[:, n_init - 1 + k].mean():.3f} ± "
                 f"{a[:, n_init - 1 + k].std(ddof=1) / np.sqrt(len(a)):.3f}" for k in marks]
        rows.append([_bo_name(method), str(len(a)), *cells,
                     _secs(doc.get("seconds_per_run", {}).get(method)),
                     _secs(doc.get("cpu_seconds_per_run", {}).get(method))])
    return ["method", "seeds", *[f"regret after {k}" for k in marks], "wall s per run",
            "CPU s per run"], rows


def _bayes_opt_picks(doc):
    n_iter = doc["args"]["n_iter"]
    half = n_iter // 2
    sampler = doc["args"].get("sampler", "auto")
    tag = "" if sampler == "auto" else f", sampler='{sampler}'"
    names = {"ndp": f"NDP, gp prior (x_scaling='ard'){tag}",
             "ndp_box": f"NDP, gp prior, x_scaling='box'{tag}", "gpr": "GPR (Matérn-5/2, ML-II)"}
    rows = []
    for method, r in doc["picks"].items():
        late = np.asarray(r["rank"])[:, half:]
        gap = np.asarray(r["gap"])[:, half:]
        regret = np.asarray(r["regret"])[:, -1]
        g = doc["regression"][method]
        rows.append([names.get(method, method), str(len(regret)), f"{late.mean():.1f}",
                     f"{np.mean(late < 5):.0%}", f"{gap.mean():.3f}",
                     f"{regret.mean():.3f} ± {regret.std(ddof=1) / np.sqrt(len(regret)):.3f}",
                     f"{np.mean(g['mse']):.3f}", f"{np.mean(g['std']):.3f}",
                     f"{np.mean(g['rho_sample']):.2f}", f"{np.mean(g['rho_mean']):.2f}",
                     f"{np.mean(g['context_rmse']):.3f}"])
    n_ctx = doc["args"]["n_context"]
    return ["model", "seeds", f"true rank of the pick (of 64), iterations {half + 1}-{n_iter}",
            "picks among the best 5", "gap to the best candidate",
            f"regret after {n_iter}", f"MSE at 64 points ({n_ctx} evaluations)",
            "posterior std",
            "Spearman, one sample", "Spearman, mean", "RMS residual at the evaluations"], rows


def _bayes_opt_oracle(doc):
    names = {"oracle_isotropic": "Bayes posterior of the gp prior's distribution, box map",
             "oracle_isotropic_ard": "the same, ARD input map (x_scaling='ard')",
             "oracle_per_dimension": "Bayes posterior, one lengthscale per dimension "
                                     "(anisotropic), box map",
             "oracle_per_dimension_ard": "the same, ARD input map",
             "gpr": "GPR (Matérn-5/2, one lengthscale per dimension, ML-II)"}
    rows = []
    for function, models in doc["results"].items():
        for model, r in models.items():
            mse = np.asarray(r["mse"])
            if model.startswith("ndp_"):
                name = (f"NDP, gp prior, sampler='{model[4:]}' "
                        f"({doc['args']['sampler_samples']} samples)")
            else:
                name = names.get(model, model)
            se = mse.std(ddof=1) / np.sqrt(mse.size) if mse.size > 1 else float("nan")
            residual = (f"{np.mean(r['context_rmse']):.3f}" if "context_rmse" in r else "–")
            seconds = f"{np.mean(r['seconds']):.0f}" if "seconds" in r else "–"
            rows.append([function, name, str(mse.size), f"{mse.mean():.3f} ± {se:.3f}",
                         f"{np.median(mse):.3f}", residual, seconds])
    n_ctx = doc["args"]["n_context"]
    return ["function", "model", "seeds", f"MSE at 64 points ({n_ctx} evaluations)",
            "median MSE", "RMS residual at the evaluations", "s per fit and sample"], rows


def _ndp_input_map(doc):
    names = {"auto": "x_compression='auto' (default)", "gpr": "GPR (ARD RBF, ML-II)"}
    rows = []
    for function, r in doc["summary"].items():
        variants = r["variants"]
        chosen = ", ".join(f"{c}: {k}" for c, k in variants["chosen"].items() if k)
        for variant, m in variants.items():
            if variant == "chosen":
                continue
            name = names.get(variant, f"x_compression={variant}")
            se = f" ± {m['loglik_se']:.2f}" if m.get("loglik_se") is not None else ""
            rows.append([function, r["split"], str(r["seeds"]), name,
                         f"{m['loglik']:+.2f}{se}", f"{m['mse']:.3f}", f"{m['context_rms']:.3f}",
                         chosen if variant == "auto" else ""])
    return ["function", "split", "seeds", "model", "log-lik/point", "MSE",
            "RMS residual at the evaluations", "caps 'auto' chose"], rows


def _ndp_trend(doc):
    names = {"ndp_constant": "NDP, trend='constant' (default)",
             "ndp_linear": "NDP, trend='linear'",
             "gpr": "GPR (ML-II, constant mean)",
             "gpr_linear": "GPR + linear kernel (ML-II)"}
    rows = []
    for r in doc["results"]:
        diff = r["linear_minus_constant"]
        for method, name in names.items():
            m = r[method]
            paired = (f"{diff['median']:+.2f} ({diff['wins']}/{diff['tasks']} tasks better)"
                      if method == "ndp_linear" else "")
            rows.append([r["regime"], r["family"], name, f"{m['median_loglik']:+.2f}",
                         f"{m['mean_loglik']:+.2f}", f"{m['median_mse']:.3g}",
                         f"{m['coverage95']:.2f}", paired])
    return ["regime", "functions", "model", "median log-lik/point", "mean log-lik/point",
            "median MSE", "95 % coverage", "linear less constant, per task (median)"], rows


def _bayes_opt_figure(doc):
    """Regret against evaluations, mean ± standard error band, as an inline SVG image."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_init = doc.get("n_init", 3)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for method, runs in doc["regret"].items():
        a = np.asarray(runs)[:, n_init - 1:]  # from the initial design on
        k = np.arange(a.shape[1])
        mean, se = a.mean(0), a.std(0, ddof=1) / np.sqrt(len(a))
        ax.plot(k, mean, label=_bo_short(method))
        ax.fill_between(k, np.maximum(mean - se, 1e-4), mean + se, alpha=0.2)
    ax.set(yscale="log", xlabel=f"evaluations after the {n_init} initial points",
           ylabel="simple regret", xlim=(0, a.shape[1] - 1))
    ax.legend(frameon=False)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    uri = "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode()
    return nodes.image(uri=uri, alt="Simple regret against evaluations, mean ± standard "
                       "error over seeds, per method")


CLAIMS = {
    "cora": Claim(
        "Cora node classification", "Test accuracy on Cora at the best-validation epoch of "
        "the official recipe (8 layers, hidden 64, 500 full-batch epochs), DIFFormer against "
        "LabelSpreading on the same graph. Every split is a draw of the paper's protocol (20 "
        "labels per class, 500 validation and 1000 test nodes): the public Planetoid split, "
        "the official script's draw (seed 123) or a numpy draw; the paper's figures are on "
        "its own draw.",
        "cora.json", "python benchmarks/cora.py --json benchmarks/results/cora.json",
        "DIFFormer-s 85.9 ± 0.4, DIFFormer-a 84.1 ± 0.6, GCN 81.5 (20 labels per class).",
        "rows: [{model, split: 'public'|'official'|'numpy', accuracy: [per seed], seconds}]",
        _cora),
    "cora_defaults": Claim(
        "Cora with the defaults", "Test accuracy on the 1,000 test nodes of Cora's public "
        "split with DIFFormerClassifier(random_state=seed).fit(X, y, adjacency=A) and nothing "
        "else: the raw bag-of-words features, the 140 training labels (-1 elsewhere), no "
        "validation nodes; scored by transduction_. Beside it the same fits predicting with "
        "a moving average of the last epochs' weights (weight_averaging=True) and with "
        "n_init=3, and those three without the logistic start (logistic_start=False: the "
        "paper's network alone). "
        "LabelSpreading's alpha is chosen on the 500 validation nodes, which the other rows "
        "do not see.",
        "cora_defaults.json",
        "python benchmarks/cora.py --protocol defaults --splits public "
        "--models d,d_avg,d_n3,l0,l0_avg,l0_n3 --seeds 18 --threads 1 "
        "--json benchmarks/results/cora_defaults.json",
        "the paper reports its tuned recipe with the validation nodes only (85.9 for "
        "DIFFormer-s), see the table above.",
        "rows: [{model, split: 'public', accuracy: [per seed], seconds}]", _cora),
    "defaults_weight_averaging": Claim(
        "Weight averaging on the defaults benchmark", "DIFFormerClassifier(random_state=0, "
        "weight_averaging=True) on every row of the defaults benchmark, beside the defaults' "
        "own score on the same row (docs/benchmarks/defaults.md) and the row's strongest "
        "baseline. A candidate default, measured on the dev rows (where defaults are "
        "chosen) and reported on the held-out ones.",
        "defaults_weight_averaging.json",
        "OMP_NUM_THREADS=1 python benchmarks/defaults.py --estimators DIFFormerClassifier "
        "--split all --threads 1 --set weight_averaging=True --json "
        "benchmarks/results/defaults_weight_averaging.json",
        "not in the paper (an skdiff setting).",
        "runs: [...], rows: [{key, split, dataset, metric, params, skdiff: {score}, "
        "best_baseline, baseline_score, status}] (defaults.py's format)",
        _defaults_candidate),
    "defaults_n_init": Claim(
        "Several initialisations on the defaults benchmark", "DIFFormerClassifier("
        "random_state=0, n_init=3) on every row of the defaults benchmark, beside the "
        "defaults' own score on the same row (docs/benchmarks/defaults.md) and the row's "
        "strongest baseline: three networks trained from different seeds, the one whose "
        "final weights have the lowest training loss kept (without validation rows). A "
        "candidate default, "
        "measured on the dev rows and reported on the held-out ones.",
        "defaults_n_init.json",
        "OMP_NUM_THREADS=1 python benchmarks/defaults.py --estimators DIFFormerClassifier "
        "--split all --threads 1 --set n_init=3 --json benchmarks/results/defaults_n_init.json",
        "not in the paper (an skdiff setting).",
        "runs: [...], rows: [{key, split, dataset, metric, params, skdiff: {score}, "
        "best_baseline, baseline_score, status}] (defaults.py's format)",
        _defaults_candidate),
    "defaults_n_resample8": Claim(
        "More RePaint repeats on the defaults benchmark", "NDPRegressor(random_state=0, "
        "n_resample=8) on three dev rows of the defaults benchmark (functions: smooth noisy "
        "SE draws, Matérn-5/2 draws, the Forrester function) and, once the setting was "
        "recommended for smooth functions, on the two held-out rows of smooth functions "
        "where the defaults lose to ML-II GPR (SE draws with little noise, quadratics), "
        "beside the defaults' own score on the same row (docs/benchmarks/defaults.md) and "
        "the row's strongest baseline. The defaults stay as they are (n_resample=4).",
        "defaults_n_resample8.json",
        "OMP_NUM_THREADS=2 python benchmarks/defaults.py --estimators NDPRegressor --split dev "
        "--rows 'l=0.25 noise=0.2' matern52 Forrester --threads 2 --set n_resample=8 "
        "--json benchmarks/results/defaults_n_resample8.json --no-render; "
        "OMP_NUM_THREADS=2 python benchmarks/defaults.py --estimators NDPRegressor --split "
        "heldout --rows 'l=0.25 noise=0.01' quadratic --threads 2 --set n_resample=8 "
        "--json benchmarks/results/defaults_n_resample8.json --no-render",
        "not in the paper (an skdiff setting).",
        "runs: [...], rows: [{key, split, dataset, metric, params, skdiff: {score}, "
        "best_baseline, baseline_score, status}] (defaults.py's format)",
        _defaults_candidate),
    "defaults_tweedie": Claim(
        "The Tweedie correction on the defaults benchmark", "NDPRegressor(random_state=0, "
        "sampler='tweedie') with the gp prior on the dev rows of the defaults benchmark "
        "(functions) and, once the setting was recommended for smooth functions, on the two "
        "held-out rows of smooth functions where the defaults lose to ML-II GPR (SE draws "
        "with little noise, quadratics), beside the defaults' own score on the same row "
        "(docs/benchmarks/defaults.md) and the row's strongest baseline. The gp prior's "
        "default stays the fast RePaint path.",
        "defaults_tweedie.json",
        "OMP_NUM_THREADS=1 python benchmarks/defaults.py --estimators NDPRegressor --split dev "
        "--threads 1 --set sampler=\"'tweedie'\" --reuse-baselines "
        "--json benchmarks/results/defaults_tweedie.json --no-render; "
        "OMP_NUM_THREADS=1 python benchmarks/defaults.py --estimators NDPRegressor --split "
        "heldout --rows 'l=0.25 noise=0.01' quadratic --threads 1 --set sampler=\"'tweedie'\" "
        "--reuse-baselines --json benchmarks/results/defaults_tweedie.json --no-render",
        "not in the paper (an skdiff setting).",
        "runs: [...], rows: [{key, split, dataset, metric, params, skdiff: {score}, "
        "best_baseline, baseline_score, status}] (defaults.py's format)",
        _defaults_candidate),
    "digits": Claim(
        "Semi-supervised digits", "Accuracy on the unlabelled rows of the digits data with 10 "
        "labels per class, against scikit-learn's semi-supervised estimators.",
        "digits.json", "python benchmarks/digits.py --json benchmarks/results/digits.json",
        "not in the paper (an skdiff use case).",
        "rows: [{model, accuracy: [per draw], seconds}]", _digits),
    "difformer_regression": Claim(
        "Graph regression", "R² on the unlabelled nodes of a smooth field on a k-nearest-"
        "neighbour graph (make_graph_signal), against ridge regressions with and without "
        "the graph.", "difformer_regression.json",
        "python benchmarks/difformer_regression.py --json "
        "benchmarks/results/difformer_regression.json",
        "not in the paper (DIFFormerRegressor is an skdiff addition).",
        "rows: [{n, labelled, method, r2_mean, r2_std, seconds}]", _difformer_regression),
    "difformer_regression_one_layer": Claim(
        "Graph regression with one layer", "The graph regression above (1,000 nodes) with "
        "n_layers=1, the depth DIFFormerRegressor's n_layers='auto' takes on a table: over a "
        "graph one layer lost most of the network's fit, which is why 'auto' keeps four "
        "layers there.", "difformer_regression_one_layer.json",
        "python benchmarks/difformer_regression.py --sizes 1000 --set n_layers=1 --json "
        "benchmarks/results/difformer_regression_one_layer.json",
        "not in the paper (DIFFormerRegressor is an skdiff addition).",
        "rows: [{n, labelled, method, r2_mean, r2_std, seconds}]", _difformer_regression),
    "difformer_regression_csbm": Claim(
        "Graph regression on block models", "R² on the unlabelled nodes of contextual "
        "stochastic block models (2,000 nodes, 100 labelled; the value is a level per block "
        "plus a linear function of the features plus noise), four graphs per homophily, "
        "against ridge regressions with and without the graph. These graphs were used to "
        "choose how linear_fallback treats a graph.", "difformer_regression_csbm.json",
        "python benchmarks/difformer_regression.py --task csbm --seeds 4 --json "
        "benchmarks/results/difformer_regression_csbm.json",
        "not in the paper (DIFFormerRegressor is an skdiff addition).",
        "rows: [{n, homophily, method, r2_mean, r2_std, seconds}]", _difformer_regression),
    "defaults_seeds": Claim(
        "Defaults across seeds", "The rows of the defaults benchmark refitted with "
        "random_state 0 to 4 (same data, split, call and metric; the baselines, which do "
        "not depend on the estimator's seed, from the defaults results): the ratio to the "
        "best baseline at random_state=0 (the defaults table's), its median and range over "
        "the seeds, and how many seeds lose (worse by more than 1 %).",
        "defaults_seeds.json",
        "python benchmarks/defaults_seeds.py --split heldout --estimators "
        "DIFFormerClassifier DIFFormerRegressor FlowformerRegressor FlowformerClassifier "
        "--skip ETTh1 n=20K ACSF1 --data-home $SKDIFF_DATA --json "
        "benchmarks/results/defaults_seeds.json",
        "not in the papers (the defaults benchmark is an skdiff addition).",
        "rows: [{estimator, dataset, split, compare, baseline, baseline_score, scores, "
        "ratios, losses, seeds}]", _defaults_seeds),
    "defaults_seeds_dev": Claim(
        "Dev rows across seeds", "DIFFormerClassifier's dev rows of the defaults benchmark "
        "refitted with random_state 0 to 4, as the table above does for the held-out rows: "
        "the seeds a candidate default is measured against.",
        "defaults_seeds_dev.json",
        "OMP_NUM_THREADS=1 python benchmarks/defaults_seeds.py --split dev --estimators "
        "DIFFormerClassifier --seeds 5 --threads 1 --data-home $SKDIFF_DATA --json "
        "benchmarks/results/defaults_seeds_dev.json",
        "not in the papers (the defaults benchmark is an skdiff addition).",
        "rows: [{estimator, dataset, split, compare, baseline, baseline_score, scores, "
        "ratios, losses, seeds}]", _defaults_seeds),
    "defaults_seeds_logistic_start": Claim(
        "A logistic start across seeds", "DIFFormerClassifier(logistic_start=True, "
        "random_state=0..4) on the rows of the defaults benchmark (the 20,000-node block "
        "model left out), beside the defaults refitted with the same seeds: the ratio to "
        "the row's best baseline (median and range over the seeds, how many seeds lose by "
        "more than 1 %) and the mean over the seeds of the difference of the two ratios. "
        "Measured as a candidate default for every row (on the dev rows; reported on the "
        "held-out ones) with the defaults of that time, which had no logistic start: the "
        "default logistic_start='auto' now takes it on bag-of-words features only, of these "
        "rows Cora's, so for every other row the defaults' column is still the defaults'.",
        "defaults_seeds_logistic_start.json",
        "OMP_NUM_THREADS=1 python benchmarks/defaults_seeds.py --split all --estimators "
        "DIFFormerClassifier --skip n=20K --seeds 5 --threads 1 --set logistic_start=True "
        "--data-home $SKDIFF_DATA --json benchmarks/results/defaults_seeds_logistic_start.json",
        "not in the paper (an skdiff setting).",
        "rows: [{estimator, dataset, split, compare, baseline, baseline_score, scores, "
        "ratios, losses, seeds, params}]", _seeds_candidate),
    "difformer_small_tables": Claim(
        "Small tables", "Test mean squared error of DIFFormerRegressor fitted to 25 or 40 "
        "rows of eight fully labelled tables (three random draws each, scored on up to "
        "1,000 other rows), over that of RidgeCV on the standardised features: with the "
        "defaults, whose network learns a correction to a ridge (linear_fallback) kept only "
        "where it beats the ridge on 5 held-out rows, and with the network alone.",
        "difformer_small_tables.json",
        "python benchmarks/difformer_small_tables.py --json "
        "benchmarks/results/difformer_small_tables.json",
        "not in the paper (DIFFormerRegressor is an skdiff addition).",
        "rows: [{n_rows, table, mse, ratio_to_ridge, network_kept}], summary: [{n_rows, "
        "geomean_difformer, geomean_difformer_network}]", _difformer_small_tables),
    "difformer_small_tables_semi": Claim(
        "A few labelled rows among many", "The same tables and methods, semi-supervised: "
        "each draw takes 1,000 rows (all of a smaller table), 40 or 100 of them labelled; "
        "DIFFormerRegressor fits all of them (the others marked NaN) and is scored by "
        "transduction_ on the unlabelled ones, RidgeCV fits the labelled rows.",
        "difformer_small_tables_semi.json",
        "python benchmarks/difformer_small_tables.py --pool 1000 --n-rows 40 100 --json "
        "benchmarks/results/difformer_small_tables_semi.json",
        "not in the paper (DIFFormerRegressor is an skdiff addition).",
        "rows: [{n_rows, pool, table, mse, ratio_to_ridge, network_kept}], summary: [...]",
        _difformer_small_tables),
    "difformer_generators": Claim(
        "Generated tables", "DIFFormerRegressor fitted to 60 to 400 fully labelled rows of "
        "seven generators (linear targets, smooth ones, products and squares; three draws "
        "each, scored on 1,000 other rows): test mean squared error over the variance of "
        "the test targets, per draw, for the network alone, the defaults and RidgeCV, and "
        "the share of test targets inside the defaults' 95 % intervals.",
        "difformer_generators.json",
        "python benchmarks/difformer_generators.py --json "
        "benchmarks/results/difformer_generators.json",
        "not in the paper (DIFFormerRegressor is an skdiff addition).",
        "rows: [{n_rows, generator, mse: {method: [per seed]}, coverage95, network_kept}]",
        _difformer_generators),
    "difformer_generators_750": Claim(
        "Generated tables, 750 rows", "The defaults on 750 fully labelled rows of five "
        "generators (Friedman #1-#3, a sparse linear target, a smooth interaction), three "
        "draws each.", "difformer_generators_750.json",
        "python benchmarks/difformer_generators.py --n-rows 750 --methods default "
        "--generators friedman1 friedman2 friedman3 sparse_linear interaction --json "
        "benchmarks/results/difformer_generators_750.json",
        "not in the paper (DIFFormerRegressor is an skdiff addition).",
        "rows: [{n_rows, generator, mse: {default: [per seed]}, coverage95, network_kept}]",
        _difformer_generators),
    "regression_uncertainty": Claim(
        "How far to trust return_std", "Share of unseen targets inside the 95 % and 68 % "
        "intervals of predict(X, return_std=True), and the Gaussian negative log-likelihood "
        "per target (lower is better), means over seeds. 'all labelled': fitted on 75 % of "
        "the rows, scored on the rest; '50 labelled': every row in the fit, 50 labelled, "
        "scored on the unlabelled ones (graph signal: with its k-nearest-neighbour graph; the "
        "GPR sees the labelled rows only).", "regression_uncertainty.json",
        "python benchmarks/regression_uncertainty.py --json "
        "benchmarks/results/regression_uncertainty.json",
        "not in the paper (DIFFormerRegressor is an skdiff addition).",
        "rows: [{dataset, protocol, method, seeds, mse, coverage95, coverage68, nll, seconds, "
        "<metric>_per_seed}]", _regression_uncertainty),
    "difformer_scaling": Claim(
        "Scaling of the simple kernel", "Time of one full-batch training step and peak memory "
        "at 10K and 100K rows (128 features, hidden 64, 2 layers); inductive prediction.",
        "difformer_scaling.json",
        "python benchmarks/difformer_scaling.py --threads 1 "
        "--json benchmarks/results/difformer_scaling.json",
        "linear in the number of rows (DIFFormer-s, Sec. 4).",
        "rows: [{n, graph, ckpt, step_s, peak_mb}], inductive: {n_train, n_new, predict_s, "
        "peak_mb}", _difformer_scaling),
    "difformer_large": Claim(
        "One epoch from 10^5 to 10^7 rows", "One epoch of DIFFormerClassifier(batch_size="
        "100_000, max_epochs=1) on a contextual stochastic block model (4 classes, 64 "
        "Gaussian features around a class mean, about 10 edges per node, 70 % inside the "
        "class, half of the nodes labelled), in a fresh process: features read from a "
        "float32 memory map, the adjacency as CSR arrays with int32 indices. Peak memory is "
        "the process's peak resident set (it counts the pages of the memory maps it read). "
        "Then the transduction of every node and an inductive prediction of up to a million "
        "new nodes, in chunks. Beside each accuracy, an oracle that knows the generating "
        "parameters: the exact posterior given a node's features and its neighbours' (for "
        "the transduction) or its features alone (for new nodes).", "difformer_large.json",
        "python benchmarks/difformer_large.py --sizes 100000 1000000 10000000 "
        "--json benchmarks/results/difformer_large.json",
        "the paper trains on pokec (1.6M nodes) with random partitions of 100K nodes.",
        "sizes: {n: {n, n_edges, epoch_s, steps, fit_s, rss_peak_gb, transduction_acc, "
        "oracle_one_hop_acc, inductive_acc, oracle_features_new_acc, predict_new_s, "
        "loadavg_start, command, date}}; the top-level command reproduces every size",
        _difformer_large),
    "mixed_precision": Claim(
        "Mixed precision on the CPU", "The same fits in float32 and with "
        "mixed_precision=\"bf16\" (same seeds): DIFFormerClassifier defaults on the digits "
        "data with half the rows labelled (accuracy of the transduction on the other half), "
        "FlowformerRegressor defaults forecasting the next step of a noisy two-frequency "
        "signal (R² on the last 20 % of the windows). Mean ± std over seeds; the fit times "
        "compare the two settings on a shared machine.", "mixed_precision.json",
        "python benchmarks/mixed_precision.py --seeds 3 --threads 1 "
        "--json benchmarks/results/mixed_precision.json",
        "not in the papers (a training option of every skdiff estimator).",
        "results: {<task>_<fp32|bf16>: {scores: [per seed], fit_s: [per seed]}}",
        _mixed_precision),
    "sparse_features": Claim(
        "Sparse features on the CPU", "Bag-of-words features (random, row-normalised) as "
        "torch sparse COO rows against SparseRows (CSR with its transpose), the form the "
        "DIFFormer estimators give a sparse X to the network: the input projection to 64 "
        "units forward and backward, and one full-batch training step (forward, backward, "
        "Adam) of the default graph network of 4 layers over a random graph of mean degree "
        "4; the best of 5 runs after a warm-up.", "sparse_features.json",
        "python benchmarks/sparse_features.py --threads 1 "
        "--json benchmarks/results/sparse_features.json",
        "not in the paper (an implementation choice).",
        "rows: [{shape, n, n_features, nnz_per_row, part: 'first_layer'|'training_step', "
        "coo_s, sparse_rows_s, speedup}]", _sparse_features),
    "flow_attention_cpu": Claim(
        "Flow-Attention against softmax attention, CPU", "Forward + backward time and peak "
        "memory of Flow-Attention against PyTorch's fused softmax attention (SDPA), batch 8, "
        "8 heads, head dimension 32; the best of 3 runs after a warm-up (softmax attention "
        "from 16K on the CPU: one run). Memory: peak resident set of a process that runs the "
        "one configuration, in brackets the part above a process that only allocates the "
        "inputs.", "flow_attention_speed_cpu.json",
        "python benchmarks/flow_attention_speed.py --threads 1 "
        "--json benchmarks/results/flow_attention_speed_cpu.json",
        "linear in L; the paper's speed-ups are measured on GPUs.",
        "environment: {...}, rows: [{method: 'flow'|'sdpa', L, causal, dtype, seconds, "
        "peak_mb}]", _flow_speed),
    "flow_attention_cuda": Claim(
        "Flow-Attention against softmax attention, GPU", "As above, on a CUDA device (an "
        "NVIDIA H200), in float32 and bfloat16, the best of 5 runs after a warm-up; memory: "
        "torch.cuda.max_memory_allocated of the step, inputs and gradients included.",
        "flow_attention_speed_cuda.json",
        "python benchmarks/flow_attention_speed.py --device cuda --dtypes float32 bfloat16 "
        "--lengths 1024 4096 16384 32768 --reps 5 "
        "--json benchmarks/results/flow_attention_speed_cuda.json",
        "linear in L (Sec. 4.4 of the paper).", "as the CPU file", _flow_speed,
        requires="a machine with a CUDA GPU"),
    "ett_S": Claim(
        "ETTh1, oil temperature alone", "Test MSE (standardised units) of forecasts of the "
        "oil temperature from its last 96 hours, 12/4/4-month split, every training window, "
        "early stopping on the validation months; the neural models with the script's recipe "
        "(hidden 32, 2 layers, 4 heads, at most 6 epochs).", "ett_forecast.json",
        "python benchmarks/ett_forecast.py --settings S M "
        "--json benchmarks/results/ett_forecast.json",
        "the Flowformer paper reports no ETTh1 forecasts.",
        "rows: [{setting: 'S'|'MS'|'M', horizon, model, seed, mse, val_mse, coverage90}]",
        _ett("S")),
    "ett_M": Claim(
        "ETTh1, every channel", "Test MSE of forecasts of all 7 channels (the M setting of "
        "the long-horizon forecasting tables), averaged over channels and steps.",
        "ett_forecast.json",
        "python benchmarks/ett_forecast.py --settings S M "
        "--json benchmarks/results/ett_forecast.json",
        "the Flowformer paper reports no ETTh1 forecasts; the last-value row is the "
        "'Repeat' row of the DLinear paper's table.", "as above", _ett("M")),
    "partial_fit_stream": Claim(
        "partial_fit on a stream", "FlowformerRegressor given a stream one batch a call "
        "(one epoch each), scored after the first call and after the last, beside fit on "
        "all the rows and a RidgeCV: ETTh1's OT windows of the first year (stride 2) 200 a "
        "call, scored on the next four months (MSE in training stds; the defaults); 25 rows "
        "of make_regression, then 30 calls of 15 new rows, or 30 calls on the same 450 rows "
        "(an epoch loop), R² on 500 other rows (n_layers=1, hidden_dim=16); a noisy "
        "logistic map, ten passes of calls of 200 windows, with the defaults and with "
        "early_stopping=False, beside fit for ten epochs (MSE).",
        "partial_fit_stream.json",
        "python benchmarks/partial_fit_stream.py --data-home $SKDIFF_DATA "
        "--json benchmarks/results/partial_fit_stream.json",
        "not in the paper (partial_fit is an skdiff addition).",
        "rows: [{stream, metric, rows, first_call, after_stream, after_epoch_loop, fit, "
        "ridge, ...}]", _partial_fit_stream),
    "flowformer_correction_margin": Claim(
        "When the encoder's correction is kept", "FlowformerRegressor with its defaults "
        "(lookback 24, horizon 4) on generated series, 5 seeds each of 300, 600 and 1,500 "
        "training windows, tested on the next 372: linear dynamics where the ridge forecast "
        "is right (AR(2), an exponential autoregression) and nonlinear ones the encoder can "
        "learn (a noisy logistic map, a threshold autoregression, a nonlinear moving "
        "average). Each fit records the test statistic of its validation rows (MSE "
        "difference over its Diebold-Mariano standard error) and the test MSE with and "
        "without the correction, so every margin is read off the same fits; the ratios are "
        "geometric means of the test MSE over the ridge forecast alone's.",
        "flowformer_correction_margin.json",
        "OMP_NUM_THREADS=1 python benchmarks/flowformer_correction_margin.py "
        "--json benchmarks/results/flowformer_correction_margin.json",
        "not in the paper (the ridge skip and its test are skdiff additions).",
        "rows: [{margin_se, fits, kept, gmean_all, gmean_linear, gmean_nonlinear, "
        "worse_2pct, better_2pct}], fits: [{series, n_train, seed, z, ...}]",
        _flowformer_correction_margin),
    "ndp_paper_tasks": Claim(
        "The paper's tasks, each prior beside the released model", "Log-likelihood per "
        "target point (the paper's metric: a Gaussian moment-matched to 128 joint samples) on "
        "GP draws of the paper's interpolation tasks (lengthscale 0.25·√D, noise variance "
        "0.0025, x in [-2, 2]^D, 50 targets; 1-9 context points at D = 1, 5-20 at D = 2). "
        "Beside each NDP: the released model's figure; for the marginalising gp prior, its "
        "own Bayes posterior (the mixture of GPs over its kernels and lengthscales that it "
        "was trained to sample, conditioned on the context: what the prior scores when "
        "perfectly trained); the exact GP posterior seen through the same metric (128 of its "
        "own samples: what a perfect sampler scores) and the exact GP's analytic predictive "
        "(the optimum). The run column names the results file of ndp_interpolation.py behind "
        "the row; its command is in that file. The sampler column names NDPRegressor's "
        "sampler, the default for the row's prior marked: the Tweedie-corrected one (55 "
        "network evaluations; the default with the per-kernel priors), the tiered path "
        "(140), the fast one (141; the default with the gp prior) or the paper's DDPM-500 "
        "with RePaint U = 5 (2,995). "
        "DDPM-500 ran on 8 tasks, beside the other two on the same 8; the gp prior's rows "
        "at D = 2 are of the fast sampler only.",
        "ndp_paper_tasks.json",
        "python benchmarks/ndp_paper_table.py "
        "benchmarks/results/ndp_interpolation_se.json "
        "benchmarks/results/ndp_interpolation_se_tiered16.json "
        "benchmarks/results/ndp_interpolation_se_fast8.json "
        "benchmarks/results/ndp_interpolation_se_ddpm.json "
        "benchmarks/results/ndp_interpolation_se_tiered.json "
        "benchmarks/results/ndp_interpolation_matern52.json "
        "benchmarks/results/ndp_interpolation_matern52_tiered16.json "
        "benchmarks/results/ndp_interpolation_matern52_fast8.json "
        "benchmarks/results/ndp_interpolation_matern52_ddpm.json "
        "benchmarks/results/ndp_interpolation_matern52_tiered.json "
        "benchmarks/results/ndp_interpolation_se_d2.json "
        "benchmarks/results/ndp_interpolation_se_d2_tiered.json "
        "benchmarks/results/ndp_interpolation_matern52_d2.json "
        "benchmarks/results/ndp_interpolation_matern52_d2_tiered.json "
        "benchmarks/results/ndp_interpolation_gp_d2_se.json "
        "benchmarks/results/ndp_interpolation_gp_d2_matern52.json "
        "benchmarks/results/ndp_interpolation_se_d3.json "
        "benchmarks/results/ndp_interpolation_se_d3_tiered.json "
        "benchmarks/results/ndp_interpolation_matern52_d3.json "
        "benchmarks/results/ndp_interpolation_matern52_d3_tiered.json "
        "benchmarks/results/ndp_interpolation.json "
        "benchmarks/results/ndp_interpolation_gp_tiered.json "
        "benchmarks/results/ndp_interpolation_se_tweedie16.json "
        "benchmarks/results/ndp_interpolation_matern52_tweedie16.json "
        "benchmarks/results/ndp_interpolation_se_d2_tweedie.json "
        "benchmarks/results/ndp_interpolation_matern52_d2_tweedie.json "
        "benchmarks/results/ndp_interpolation_se_d3_tweedie.json "
        "benchmarks/results/ndp_interpolation_matern52_d3_tweedie.json "
        "benchmarks/results/ndp_interpolation_gp_tweedie.json "
        "--json benchmarks/results/ndp_paper_tasks.json",
        "released NDP (128,000 steps): SE 0.392, -0.690, -1.137 and Matérn-5/2 -0.029, "
        "-1.031, -1.333 at D = 1, 2, 3.",
        "rows: [{task, prior, n_tasks, ndp, prior_bayes, gp_sampled, gp_true, gpr_ml2: "
        "[mean, se], released, source, source_command}]", _ndp_paper_tasks),
    "ndp_interpolation": Claim(
        "1-D interpolation", "Log-likelihood per target point of the Gaussian moment-matched "
        "to 128 joint samples (the paper's metric), 1-9 context points and 50 targets of GP "
        "draws.", "ndp_interpolation.json",
        "python benchmarks/ndp_interpolation.py --kernels se matern52 --dims 1 "
        "--json benchmarks/results/ndp_interpolation.json",
        "released NDP 0.39 (SE) and -0.03 (Matérn-5/2); exact GP 0.71 and 0.32.",
        "args: {...}, results: {task: {method: {loglik, mse, coverage95: [mean, se]}}}",
        _ndp_interpolation),
    "ndp_smooth_conditioning": Claim(
        "Smooth contexts and RePaint resampling", "NDPRegressor on 8 draws of an SE GP of "
        "lengthscale 0.35 times the interval, noise standard deviation 0.02, 4-12 context "
        "points, 50 queries on the same interval; scored by sample_posterior(n_samples=128): "
        "the squared error of the samples' mean and the paper's joint log-likelihood per "
        "point, with the defaults and with more RePaint repeats (n_resample). Beside them the "
        "mean of the gp prior's own Bayes posterior under the same input map (what an exact "
        "network and sampler would predict) and ML-II GaussianProcessRegressor.",
        "ndp_smooth_conditioning.json",
        "python benchmarks/ndp_smooth_conditioning.py --json "
        "benchmarks/results/ndp_smooth_conditioning.json",
        "not in the paper.",
        "rows: [{method, evaluations, median_mse, median_loglik, seconds, mse, loglik}]",
        _ndp_smooth_conditioning),
    "ndp_smooth_conditioning_seed7": Claim(
        "Smooth contexts, other tasks", "The table above on 8 other draws of the same kind "
        "(task seed 7; the first table's tasks, seed 123, are those the n_resample advice "
        "was drawn from): NDPRegressor with the defaults and with more RePaint repeats, the "
        "gp prior's own Bayes posterior and ML-II GaussianProcessRegressor.",
        "ndp_smooth_conditioning_seed7.json",
        "python benchmarks/ndp_smooth_conditioning.py --seed 7 --threads 2 --json "
        "benchmarks/results/ndp_smooth_conditioning_seed7.json",
        "not in the paper.",
        "rows: [{method, evaluations, median_mse, median_loglik, seconds, mse, loglik}]",
        _ndp_smooth_conditioning),
    "ndp_smooth_conditioning_oracle": Claim(
        "RePaint with exact noise predictions", "The fast path (32 cubic levels) with the "
        "oracle noise prediction of a GP, exact for Gaussian data, so that its output's mean "
        "and covariance are computed exactly: SE draws of lengthscale 0.25, 0.6 and 1.2 on "
        "the prior's domain [-2, 2] (points in [-1.8, 1.8], noise variance 0.0025), 3 or 8 "
        "context points, 40 targets, 8 tasks each. The squared distance of the sampler's mean "
        "from the exact posterior mean, relative to the posterior variance, and the KL "
        "divergence per point of the exact posterior from the sampler's output: RePaint's "
        "own error with a perfect network.",
        "ndp_smooth_conditioning.json",
        "python benchmarks/ndp_smooth_conditioning.py --json "
        "benchmarks/results/ndp_smooth_conditioning.json",
        "not in the paper.",
        "oracle: [{lengthscale, context, n_resample, evaluations, mean_error, kl}]",
        _ndp_smooth_oracle),
    "ndp_smooth_conditioning_tweedie": Claim(
        "Smooth contexts and the Tweedie correction", "The tasks of the first smooth-context "
        "table (task seed 123): NDPRegressor with the defaults (the gp prior's fast sampler) "
        "and with sampler='tweedie', which conditions every step through the prior's "
        "Gaussian components instead of RePaint repeats; beside them the gp prior's own "
        "Bayes posterior and ML-II GaussianProcessRegressor.",
        "ndp_smooth_conditioning_tweedie.json",
        "python benchmarks/ndp_smooth_conditioning.py --configs defaults sampler=tweedie "
        "--threads 1 --json benchmarks/results/ndp_smooth_conditioning_tweedie.json",
        "not in the paper.",
        "rows: [{method, evaluations, median_mse, median_loglik, seconds, mse, loglik}]",
        _ndp_smooth_conditioning),
    "ndp_smooth_conditioning_tweedie_oracle": Claim(
        "RePaint and the Tweedie correction with exact noise predictions", "The oracle "
        "table above (exact noise predictions of a GP, moments computed exactly, SE draws of "
        "lengthscale 0.25, 0.6 and 1.2 on the domain, 3 or 8 context points, 40 targets, 8 "
        "tasks each) with the Tweedie correction beside RePaint: n_resample 'tweedie' is 64 "
        "cubic levels without repeats, corrected with the exact covariance.",
        "ndp_smooth_conditioning_tweedie.json",
        "python benchmarks/ndp_smooth_conditioning.py --configs defaults sampler=tweedie "
        "--threads 1 --json benchmarks/results/ndp_smooth_conditioning_tweedie.json",
        "not in the paper.",
        "oracle: [{lengthscale, context, n_resample, evaluations, mean_error, kl}]",
        _ndp_smooth_oracle),
    "ndp_released_protocol": Claim(
        "What the released figures imply about their tasks", "The released model's metrics "
        "files record, beside its log-likelihood per target point, the squared error of its "
        "sample mean and the context points per task (128 tasks; ± one standard error). On "
        "the stated tasks (variance 1, lengthscale 0.25·√D, noise variance 0.05², x ~ U(-2, "
        "2)^D, 50 targets) no predictor beats the exact GP posterior with the true "
        "hyper-parameters in expectation on either measure, and it improves with every "
        "context point. Its scores on 1,024 tasks per row: with k context points for every "
        "task (the released mean rounded up), and with all 10·D points of the released "
        "generator's context block; and, with k points, its posterior seen through the "
        "released metric (128 joint samples, moment-matched): what a sampler that draws "
        "exactly from the posterior scores there. Independent noise: the stated protocol and these "
        "docs' tasks; shared normals: the observation noise drawn with the standard normals "
        "that drew the function values, as the released generator's code draws both with "
        "one random key.", "ndp_released_protocol.json",
        "python benchmarks/ndp_released_protocol.py --n-tasks 1024 --json "
        "benchmarks/results/ndp_released_protocol.json",
        "released NDP (128,000 steps): SE 0.392, -0.690, -1.137 and Matérn-5/2 -0.029, "
        "-1.031, -1.333 at D = 1, 2, 3; MSE 0.718, 0.708, 0.824 and 0.765, 0.865, 0.918.",
        "summary: [{kernel, n_dims, released: {loglik, mse, n_context, ...}, released_se, "
        "context_at_mean, {independent,shared}_{at_mean,all}: {loglik, mse: [mean, se]}, "
        "sampled_at_mean: {n_samples, loglik}}], "
        "rows: [{kernel, n_dims, noise, n_context, loglik, mse}]", _ndp_released_protocol),
    "ndp_metric_ceiling": Claim(
        "The metric on exact posterior samples", "Log-likelihood per target point that "
        "samples of the exact GP posterior (true hyper-parameters) score under the paper's "
        "metric, by number of samples: 256 tasks per kernel, 1-9 context points, 50 targets. "
        "It is the score of a sampler that draws exactly from the posterior. Fitting a 50 x 50 "
        "covariance to S samples underestimates its small eigenvalues, so the score falls as "
        "S shrinks and collapses at 64. It does not bound every sampler: samples spread wider "
        "than the posterior in its low-variance directions can score higher at small S (compare "
        "the 64-sample rows of the prediction-time table). The gp prior's rows score, on "
        "the same tasks, its own Bayes posterior: the mixture of GPs over the kernels and "
        "lengthscales it was trained on, conditioned on the context. A perfectly trained gp "
        "prior with a perfect sampler scores this, not the exact GP's figure: it does not know "
        "the task's kernel and lengthscale.", "ndp_metric_ceiling.json",
        "python benchmarks/ndp_metric_ceiling.py --json "
        "benchmarks/results/ndp_metric_ceiling.json",
        "the paper scores the exact GP analytically (0.71 SE, 0.32 Matérn-5/2) and the NDP "
        "through 128 samples.",
        "rows: [{kernel, posterior, n_samples (null: analytic), loglik, se}]", _ndp_ceiling),
    "ndp_sampler_network_se": _sampler_network_claim("se", "SE"),
    "ndp_sampler_network_matern52": _sampler_network_claim("matern52", "Matérn-5/2"),
    "ndp_sampler_network_se_seed0": _sampler_network_claim("se", "SE", seed=0),
    "ndp_sampler_network_matern52_seed0": _sampler_network_claim("matern52", "Matérn-5/2",
                                                                 seed=0),
    **{f"ndp_sampler_network_tweedie_{kernel}_seed0": _sampler_network_claim(
        kernel, title, seed=0, tweedie=True)
       for kernel, title in (("se", "SE"), ("matern52", "Matérn-5/2"))},
    "ndp_sampler_network_gp_se_seed0": _sampler_network_claim("se", "SE", seed=0,
                                                              prior="gp"),
    "ndp_sampler_network_gp_matern52_seed0": _sampler_network_claim(
        "matern52", "Matérn-5/2", seed=0, prior="gp"),
    "ndp_sampler_network_gp_repeats_se_seed0": _sampler_network_claim(
        "se", "SE", seed=0, prior="gp", repeats=True),
    "ndp_sampler_network_gp_repeats_matern52_seed0": _sampler_network_claim(
        "matern52", "Matérn-5/2", seed=0, prior="gp", repeats=True),
    **{f"ndp_sampler_network_gp_levels_{kernel}_seed{seed}": _sampler_network_claim(
        kernel, title, seed=seed, prior="gp", levels=True)
       for kernel, title in (("se", "SE"), ("matern52", "Matérn-5/2")) for seed in (0, 1)},
    **{f"ndp_sampler_network_gp_repeats_{kernel}_seed1": _sampler_network_claim(
        kernel, title, seed=1, prior="gp", repeats=True)
       for kernel, title in (("se", "SE"), ("matern52", "Matérn-5/2"))},
    "ndp_sampler_oracle": Claim(
        "Sampler accuracy", "KL divergence per target point between the distribution a "
        "sampler produces with an exact noise model (moments propagated in closed form: no "
        "network, no Monte Carlo) and the exact GP posterior. KL(s‖p) is the sampler's own "
        "error; KL(p‖s) is what it costs the paper's metric with unlimited samples. SE draws "
        "(lengthscale 0.25), 50 targets, 16 functions, each conditioned on its first 1, 5 "
        "and 9 points; the names give the level spacing (q quadratic, c cubic, u uniform), "
        "the number of levels and the RePaint repeats U. The estimator's tiered path is "
        "c40-U4/1 (U = 4 on jumps back to levels >= 40, U = 1 below); its fast sampler, the "
        "default with the gp prior, is c32-U4; c64-tweedie and c32-tweedie are its Tweedie "
        "correction (here with the exact covariance: the default with the per-kernel priors) "
        "on 64 and 32 cubic levels without repeats.",
        "ndp_sampler_oracle.json",
        "python benchmarks/ndp_sampler_oracle.py --json "
        "benchmarks/results/ndp_sampler_oracle.json",
        "the paper's sampler: 500 DDPM steps with 5 RePaint repeats (ddpm500-U5).",
        "context_sizes: [...], rows: [{sampler, evaluations, kl_per_point: [KL(s||p) per "
        "size], kl_exact_sampler: [KL(p||s) per size]}]", _ndp_oracle),
    "ndp_speed": Claim(
        "Prediction time", "predict(X, return_std=True) with 10 context points, 50 targets "
        "and 64 samples (SE draws on [-2, 2]^D, lengthscale 0.25 sqrt(D), D = 1, 2, 3), "
        "shipped gp prior: its default (fast) sampler, the fast sampler with 50 levels, and, "
        "at D = 1, the paper's sampler (timed through sample_posterior, the same sampling "
        "call). Wall seconds on the machine below, and the process's CPU seconds: with one "
        "torch thread, the wall time on an otherwise idle core. The default sampler's target "
        "is under 10 s on one CPU core; the network attends across points and across input "
        "dimensions, so its cost grows with D. Log-likelihood per point of the Gaussian "
        "moment-matched to the 64 samples, beside the exact GP on the same tasks.",
        "ndp_speed.json",
        "python benchmarks/ndp_speed.py --dims 1 2 3 --n-tasks 3 --n-tasks-ddpm 1 "
        "--threads 1 --json benchmarks/results/ndp_speed.json",
        "the paper's sampler: 2,995 network evaluations.",
        "rows: [{sampler, n_dims, evaluations, n_tasks, seconds, cpu_seconds, loglik, mse}], "
        "exact_gp: [{n_dims, n_tasks, loglik, mse, loglik_sampled, mse_sampled}]",
        _ndp_speed),
    "ndp_attention_paired": Claim(
        "Attention across one or two input dimensions", "Every block attends across the "
        "input dimensions of each point. At D = 1 that is a softmax over one score, which is "
        "1, so the network applies the layer as one affine map (the value and output "
        "projections composed); at D = 2 a softmax over two scores, which it computes in "
        "closed form (a logistic function of their difference). The same predict(X, "
        "return_std=True) on one task of the speed table's kind (an SE draw, 10 context "
        "points, 50 targets, 64 samples), timed with these paths and with "
        "scaled_dot_product_attention, alternating three times in one process (one torch "
        "thread, the process's CPU seconds), and the largest differences between the two "
        "paths' predictions.",
        "ndp_attention_paired.json",
        "python benchmarks/ndp_speed.py --dims 1 2 --paired-attention 3 --threads 1 "
        "--json benchmarks/results/ndp_attention_paired.json",
        "not in the paper (an implementation detail of the network's attention).",
        "attention_paired: [{n_dims, cpu_seconds_closed_form, cpu_seconds_kernel, ratio, "
        "max_mean_difference, max_std_difference}]",
        _ndp_attention_paired),
    "ndp_projection_paired": Claim(
        "Bias of the attention projections", "The attention projections of every block "
        "(points of width 64 to the queries, keys and values of width 384, and the output "
        "projection) add their bias in place after a bias-free product; F.linear first "
        "copies the bias into every row of its output, which on the CPU costs more for these "
        "many short rows. The same predict(X, return_std=True) as in the table above, timed "
        "both ways, alternating three times in one process (one torch thread, the process's "
        "CPU seconds), and the largest differences between the two ways' predictions.",
        "ndp_projection_paired.json",
        "python benchmarks/ndp_speed.py --dims 1 2 3 --paired-projection 3 --threads 1 "
        "--json benchmarks/results/ndp_projection_paired.json",
        "not in the paper (an implementation detail of the network).",
        "projection_paired: [{n_dims, cpu_seconds_bias_after, cpu_seconds_linear, ratio, "
        "max_mean_difference, max_std_difference}]",
        _ndp_projection_paired),
    "ndp_function_prior": Claim(
        "A prior learned from your own curves: ETTh1 daily profiles", "Every day and column "
        "of ETTh1 is a curve, hour of the day -> value (columns standardised on the training "
        "days). A prior trained on the first 70 % of the days (train_prior with functions; "
        "network size and length chosen on the next 10 %) conditions on a held-out curve "
        "(last 20 % of the days) observed at 3, 5 or 10 random hours; the other hours are "
        "scored: mean log density per point of each method's Gaussian marginal predictive "
        "(for the NDPs moment-matched to 64 samples), MSE of the mean in standardised units, "
        "coverage of the central 95 % interval; mean ± standard error over the curves.",
        "ndp_function_prior.json",
        "python benchmarks/ndp_function_prior.py --data-home $SKDIFF_DATA --work-dir PATH "
        "--split test --json benchmarks/results/ndp_function_prior.json",
        "the paper trains on GP draws only; this is an extension.",
        "args: {...}, prior: {name, steps, final_loss, config, ...}, results: {observed: "
        "{method: {loglik, mse, coverage95: [mean, se], n_curves, seconds_per_curve}}}",
        _ndp_function_prior),
    "bayes_opt": Claim(
        "Bayesian optimisation, 3-D Hartmann", "Simple regret (best value found minus the "
        "global minimum -3.86278) after k evaluations that follow 3 uniform random points, "
        "mean ± standard error over seeds. Thompson sampling: one joint posterior sample on "
        "64 fresh uniform candidates per iteration, evaluated where it is lowest, as the "
        "paper does (for the NDP thompson_sampling's default, denoise=False; a draw "
        "denoised from 8 samples, denoise='auto', is in a table below); the methods marked "
        "'half the candidates local' draw 32 of them around the best point so far instead "
        "(local_fraction=0.5). NDPRegressor conditions the "
        "shipped 3-D gp prior, which marginalises the lengthscale, on the evaluations so "
        "far (no retraining; the features weighed by the ML-II lengthscales of the "
        "evaluations, x_scaling='ard', up to the cap the prior's evidence chooses, "
        "x_compression='auto', the defaults), on Yeo-Johnson power-transformed "
        "values with the exponent capped at 1 (thompson_sampling's y_transform='auto', the "
        "default); GaussianProcessRegressor refits a Matérn-5/2 kernel by ML-II (2 "
        "restarts) every iteration, on the values as given (its default) and on "
        "power-transformed values; random search takes a uniform candidate. The NDP "
        "samples with NDPRegressor's own sampler for the gp prior, the fast path; "
        "thompson_sampling's default model takes the Tweedie-corrected one (its own tables).",
        "bayes_opt_hartmann.json",
        "python benchmarks/bayes_opt_hartmann.py --priors gp --local --no-denoise "
        "--n-seeds 20 --n-iter 30 --json benchmarks/results/bayes_opt_hartmann.json",
        "the paper's Sec. 5.3 (Thompson sampling with NDP posterior samples).",
        "args: {n_iter, ...}, n_init, seconds_per_run: {method: s}, cpu_seconds_per_run: "
        "{method: s}, regret: {method: [[per evaluation] per seed]}", _bayes_opt,
        _bayes_opt_figure),
    "bayes_opt_picks": Claim(
        "Why the NDP trails: how each model ranks the candidates", "The Thompson-sampling "
        "runs of the Hartmann-3 protocol (its first ten seeds, each model with "
        "thompson_sampling's defaults, the NDP's input map capped at 10, x_compression=10; "
        "the NDP also with the per-feature box input map, "
        "x_scaling='box'), with the 64 candidates of every iteration also "
        "evaluated for the record: the true rank of the candidate the joint sample ranked "
        "lowest (0: the best of the 64), averaged over the second half of the iterations, "
        "the share of those picks among the 5 best candidates, and the mean gap between the "
        "pick's value and the best candidate's. Beside them, both models fitted to 30 "
        "uniform random evaluations (values standardised) and sampled jointly (32 samples) "
        "at 64 uniform points: the MSE of the samples' mean and their mean standard "
        "deviation (standardised units), the Spearman correlation with the true values "
        "of one sample (what Thompson sampling ranks by) and of the mean, and the root mean "
        "squared difference between predict at the 30 evaluated points and their own values "
        "(the NDP prior's noise standard deviation is 0.05); means over the seeds.",
        "bayes_opt_picks.json",
        "python benchmarks/bayes_opt_picks.py --n-seeds 10 --x-compression 10 --threads 1 "
        "--json benchmarks/results/bayes_opt_picks.json",
        "not in the paper (a diagnosis of the regret gap).",
        "args: {n_iter, n_context, ...}, picks: {model: {rank, gap, regret: [[per "
        "iteration] per seed]}}, regression: {model: {mse, std, rho_sample, rho_mean, "
        "context_rmse: [per seed]}}", _bayes_opt_picks),
    "bayes_opt_oracle": Claim(
        "What limits the NDP's regression: prior, network or sampler", "The regression "
        "measurement of the two tables above (the same seeds, 30 uniform random evaluations, "
        "values standardised, 64 uniform query points), for the Bayes posterior mean of the "
        "gp prior's own training distribution (its four kernels times 32 quantiles of its "
        "lengthscale distribution, each weighted by its marginal likelihood): what a "
        "perfectly trained network, perfectly sampled, would predict, with the inputs mapped "
        "by the box map (x_scaling='box') and by the ARD map capped at 10 (x_scaling='ard', "
        "x_compression=10, as the NDP fitted to the same evaluations computes it); for the "
        "same distribution with "
        "each dimension's lengthscale drawn independently (8 quantiles per dimension, "
        "PriorConfig(anisotropic=True)), which the shipped priors were not trained on; for "
        "the GPR; and, on the first three seeds, for the NDP with that "
        "input map sampled by the fast sampler and by the paper's (DDPM, 500 steps, "
        "RePaint U = 5), 8 joint samples at the evaluations and the queries together, with "
        "the root mean squared difference between the samples' mean and the evaluated "
        "values; MSE in standardised units, mean ± standard error over the seeds.",
        "bayes_opt_oracle.json",
        "python benchmarks/bayes_opt_oracle.py --n-seeds 10 --x-compression 10 "
        "--samplers fast ddpm "
        "--sampler-seeds 3 --threads 1 --json benchmarks/results/bayes_opt_oracle.json",
        "not in the paper (a diagnosis of the regret gap).",
        "args: {n_context, sampler_samples, ...}, results: {function: {model: {mse: [per "
        "seed], context_rmse, seconds: [per seed] (NDP rows)}}}", _bayes_opt_oracle),
    "ndp_input_map": Claim(
        "How far the ARD input map compresses a feature", "NDPRegressor (gp prior) fitted "
        "to 20 uniform random evaluations of a 2-D function with the ARD input map's cap "
        "fixed at 1 (the box map), 2, 3, 5 and 10, and with the cap chosen by the prior's "
        "evidence of the evaluations (x_compression='auto', the default); 64 joint samples "
        "at the evaluations and 50 uniform query points. Values in units of the "
        "evaluations' standard deviation: the Gaussian log-likelihood per query point of "
        "the samples' mean and standard deviation, the MSE of the mean at the queries and "
        "its RMS residual at the evaluations, mean over the seeds (± standard error).",
        "ndp_input_map.json",
        "python benchmarks/ndp_input_map.py --threads 1 --json "
        "benchmarks/results/ndp_input_map.json",
        "not in the paper (its tasks are isotropic, mapped by a fixed box).",
        "args: {functions, seeds, ...}, summary: {function: {split, seeds, variants: "
        "{variant: {loglik, loglik_se, mse, context_rms}, chosen: {cap: count}}}}, tasks: "
        "[...]", _ndp_input_map),
    "ndp_trend": Claim(
        "A linear trend under the prior", "NDPRegressor with trend='constant' (the "
        "default) and trend='linear' on the same tasks: functions on [0, 1], 5-12 context "
        "points with noise of 0.05 times the function's spread, 50 query points, either "
        "all uniform on [0, 1] (interpolation) or the context on [0, 0.6] and the queries on "
        "[0.6, 1] (extrapolation); wiggle: an SE process of lengthscale 0.15, drift: a line "
        "of random slope plus such a process, growth: an exponential of random rate and "
        "sign, forrester: the Forrester function. 128 posterior samples per task; values "
        "standardised by the context's mean and standard deviation; the joint "
        "log-likelihood per point of the Gaussian moment-matched to the samples (exact for "
        "the GPRs), the MSE of the mean and the coverage of the 95 % intervals; the last "
        "column pairs the two trends task by task.",
        "ndp_trend.json",
        "python benchmarks/ndp_trend.py --threads 1 --json benchmarks/results/ndp_trend.json",
        "not in the paper (the paper's tasks have zero-mean priors).",
        "args: {n_tasks, ...}, results: [{regime, family, ndp_constant, ndp_linear, gpr, "
        "gpr_linear: {median_loglik, mean_loglik, median_mse, coverage95}, "
        "linear_minus_constant: {median, wins, tasks}, tasks: [...]}]", _ndp_trend),
    "bayes_opt_picks_branin": Claim(
        "How each model ranks the candidates, 2-D Branin", "The same measurements on the "
        "Branin function over its usual box.",
        "bayes_opt_picks_branin.json",
        "python benchmarks/bayes_opt_picks.py --function branin --n-seeds 10 "
        "--x-compression 10 --threads 1 --json benchmarks/results/bayes_opt_picks_branin.json",
        "not in the paper (a diagnosis of the regret gap).",
        "args: {n_iter, n_context, ...}, picks: {model: {rank, gap, regret: [[per "
        "iteration] per seed]}}, regression: {model: {mse, std, rho_sample, rho_mean, "
        "context_rmse: [per seed]}}", _bayes_opt_picks),
    "bayes_opt_picks_tweedie": Claim(
        "How each model ranks the candidates, 3-D Hartmann, the Tweedie-corrected sampler",
        "The measurements of the Hartmann-3 table (same seeds, initial points, candidates "
        "and regression draws; the NDP's input map capped at 10) with both NDP rows "
        "sampled through the Tweedie correction, NDPRegressor(sampler='tweedie'), the "
        "sampler of thompson_sampling's default model. The GPR's rows are the same model "
        "run again.",
        "bayes_opt_picks_tweedie.json",
        "python benchmarks/bayes_opt_picks.py --sampler tweedie --x-compression 10 "
        "--n-seeds 10 --threads 1 --json benchmarks/results/bayes_opt_picks_tweedie.json",
        "not in the paper (a diagnosis of the regret gap).",
        "args: {n_iter, n_context, sampler, ...}, picks: {model: {rank, gap, regret: [[per "
        "iteration] per seed]}}, regression: {model: {mse, std, rho_sample, rho_mean, "
        "context_rmse: [per seed]}}", _bayes_opt_picks),
    "bayes_opt_branin": Claim(
        "Bayesian optimisation, 2-D Branin", "The same protocol on the Branin function over "
        "its usual box [-5, 10] x [0, 15] (global minimum 0.397887, reached at three "
        "points): simple regret after k evaluations that follow 3 uniform random points, "
        "mean ± standard error over seeds. NDPRegressor conditions the shipped 2-D gp prior "
        "with the box as x_bounds (and the default ARD weighing), on power-transformed "
        "values (the default), and ranks the candidates by one joint sample "
        "(denoise=False, the default); the GPR's Matérn-5/2 lengthscales start at 0.3 and are "
        "bounded by 0.01 and 10, times the box's side, on the values as given and on "
        "power-transformed values; uniform candidates, and half of them local for the "
        "methods that say so.",
        "bayes_opt_branin.json",
        "python benchmarks/bayes_opt_hartmann.py --function branin --priors gp --local "
        "--no-denoise --n-seeds 20 --n-iter 30 --json "
        "benchmarks/results/bayes_opt_branin.json",
        "the protocol of the paper's Sec. 5.3, on a 2-D function.",
        "args: {function, n_iter, ...}, n_init, seconds_per_run: {method: s}, "
        "cpu_seconds_per_run: {method: s}, regret: {method: [[per evaluation] per seed]}",
        _bayes_opt, _bayes_opt_figure),
    **{f"bayes_opt_{file}_tweedie": Claim(
        f"Bayesian optimisation, {title}, the Tweedie-corrected sampler", f"The protocol "
        f"of the {title} table (one joint sample, seeds 0-{n_seeds - 1}: the same initial "
        "points and candidates) with NDPRegressor(sampler='tweedie'), the sampler of "
        "thompson_sampling's default model: every reverse step corrects the network's "
        "denoised estimate by the Gaussian conditional of the evaluations under one of "
        "the prior's Gaussian components, drawn per sample by its posterior weight, "
        "instead of RePaint's noised copies of the evaluations (the fast path, "
        "NDPRegressor's own choice for the gp prior, in the table above)"
        + (f"; beside the gp prior, {extra}" if extra else "") + ". " + role,
        f"bayes_opt_{file}_tweedie.json",
        f"python benchmarks/bayes_opt_hartmann.py --no-denoise --function {function} "
        f"--priors gp{' ' + priors if priors else ''} --sampler tweedie --local --n-seeds "
        f"{n_seeds} --n-iter 30 --threads 1 --json "
        f"benchmarks/results/bayes_opt_{file}_tweedie.json",
        "the protocol of the paper's Sec. 5.3; the Tweedie correction is an extension.",
        "args: {function, n_iter, sampler, ...}, n_init, seconds_per_run: {method: s}, "
        "cpu_seconds_per_run: {method: s}, regret: {method: [[per evaluation] per seed]}",
        _bayes_opt, _bayes_opt_figure)
       for file, title, function, n_seeds, priors, extra, role in (
           ("hartmann", "3-D Hartmann", "hartmann3", 20, "", "",
            "Held out: not used to choose any default."),
           ("branin", "2-D Branin", "branin", 20, "matern52 se",
            "the matern52 and se priors (one kernel, lengthscale fixed)",
            "Held out: not used to choose any default."),
           ("camel", "six-hump camel", "camel", 10, "matern52",
            "the matern52 prior (one kernel, lengthscale fixed)",
            "A dev function: the sampler of thompson_sampling's default model was chosen "
            "on it and on Goldstein-Price."),
           ("goldstein_price", "Goldstein-Price", "goldstein_price", 10, "matern52",
            "the matern52 prior (one kernel, lengthscale fixed)",
            "A dev function: the sampler of thompson_sampling's default model was chosen "
            "on it and on six-hump camel."))},
    **{f"bayes_opt_{function}_tweedie": Claim(
        f"Bayesian optimisation, {title}", f"Simple regret after k evaluations that follow "
        f"3 uniform random points, mean ± standard error over 20 seeds, on {what}. "
        "thompson_sampling's default model (NDPRegressor on the shipped 3-D gp prior with "
        "the box as x_bounds, sampler='tweedie', power-transformed values, one joint "
        "sample) against random search and a GaussianProcessRegressor (Matérn-5/2, ML-II "
        "at every iteration, lengthscales from 0.3 and bounded by 0.01 and 10 times the "
        "box's side) on the values as given and on power-transformed ones; uniform "
        "candidates, and half of them local for the methods that say so (thompson_"
        "sampling's default in two or more dimensions). Added after every default of "
        "thompson_sampling was fixed: not used to choose any default.",
        f"bayes_opt_{function}_tweedie.json",
        f"python benchmarks/bayes_opt_hartmann.py --function {function} --priors gp "
        "--sampler tweedie --local --no-denoise --n-seeds 20 --n-iter 30 --threads 1 "
        f"--json benchmarks/results/bayes_opt_{function}_tweedie.json",
        "the protocol of the paper's Sec. 5.3 on another function; the Tweedie correction "
        "is an extension.",
        "args: {function, n_iter, sampler, ...}, n_init, seconds_per_run: {method: s}, "
        "cpu_seconds_per_run: {method: s}, regret: {method: [[per evaluation] per seed]}",
        _bayes_opt, _bayes_opt_figure)
       for function, title, what in (
           ("styblinski_tang3", "3-D Styblinski-Tang",
            "the Styblinski-Tang function over [-5, 5]^3 (global minimum -117.4985 at "
            "x_i = -2.9035; in each of the other seven orthants a local minimum 14.1 higher "
            "for each coordinate on the wrong side)"),
           ("rosenbrock3", "3-D Rosenbrock",
            "the Rosenbrock function over [-2, 2]^3 (global minimum 0 at (1, 1, 1) at the "
            "end of a curved, flat-bottomed valley; values up to about 7,000)"))},
    **{f"bayes_opt_{file}_tweedie_denoise": Claim(
        f"Bayesian optimisation, {title}, the Tweedie-corrected sampler, denoised draws",
        f"The protocol of the {title} table with the Tweedie-corrected sampler "
        f"(NDPRegressor(sampler='tweedie'), seeds 0-{n_seeds - 1}: the same initial points "
        "and candidates) and thompson_sampling(denoise='auto'): the NDP ranks the "
        "candidates by a draw built from 8 joint samples (their mean plus the first "
        "sample's deviation along the principal directions above the Marchenko-Pastur "
        "edge) instead of one sample; the GPR rows, which draw one exact sample, are those "
        f"of the table without it. {role}",
        f"bayes_opt_{file}_tweedie_denoise.json",
        f"OMP_NUM_THREADS=1 python benchmarks/bayes_opt_hartmann.py --function {function} "
        f"--priors gp --sampler tweedie --local --n-seeds {n_seeds} --n-iter 30 "
        f"--threads 1 --json benchmarks/results/bayes_opt_{file}_tweedie_denoise.json",
        "the paper's Sec. 5.3 draws one sample; the Tweedie correction and the denoised "
        "draw are extensions.",
        "args: {function, n_iter, sampler, no_denoise, ...}, n_init, seconds_per_run: "
        "{method: s}, cpu_seconds_per_run: {method: s}, regret: {method: [[per evaluation] "
        "per seed]}", _bayes_opt, _bayes_opt_figure)
       for file, function, title, n_seeds, role in (
           ("hartmann", "hartmann3", "3-D Hartmann", 20,
            "Held out: not used to choose any default."),
           ("branin", "branin", "2-D Branin", 20,
            "Held out: not used to choose any default."),
           ("camel", "camel", "six-hump camel", 10,
            "A dev function: thompson_sampling's denoise default was chosen on it and on "
            "Goldstein-Price."),
           ("goldstein_price", "goldstein_price", "Goldstein-Price", 10,
            "A dev function: thompson_sampling's denoise default was chosen on it and on "
            "six-hump camel."))},
    **{f"bayes_opt_{key}resample8": Claim(
        f"Bayesian optimisation, {title}, the NDP with 8 RePaint repeats", f"The protocol "
        f"of the {title} table (one joint sample, uniform candidates, seeds 0-19: the same "
        "initial points and candidates) with NDPRegressor(n_resample=8) instead of its "
        "default 4 (the setting that brought the samples closer to smooth contexts, see the "
        "smooth-context table), at 1.8 times the network evaluations.",
        f"bayes_opt_{file}_resample8.json",
        f"python benchmarks/bayes_opt_hartmann.py --no-denoise --function {function} "
        f"--priors gp --n-resample 8 --n-seeds 20 --n-iter 30 --threads 1 --json "
        f"benchmarks/results/bayes_opt_{file}_resample8.json",
        "the paper's Sec. 5.3 samples with the paper's sampler (U = 5 on all 500 levels).",
        "args: {function, n_iter, n_resample, ...}, n_init, seconds_per_run: {method: s}, "
        "cpu_seconds_per_run: {method: s}, regret: {method: [[per evaluation] per seed]}",
        _bayes_opt, _bayes_opt_figure)
       for key, title, file, function in (("", "3-D Hartmann", "hartmann", "hartmann3"),
                                          ("branin_", "2-D Branin", "branin", "branin"))},
    "bayes_opt_denoise": Claim(
        "Bayesian optimisation, 3-D Hartmann, the NDP draw denoised from 8 samples", "The "
        "protocol of the 3-D Hartmann table with thompson_sampling(denoise='auto'): the NDP "
        "ranks the 64 uniform candidates by a draw built from 8 joint posterior samples "
        "(their mean plus the first sample's deviation along the principal directions above "
        "the Marchenko-Pastur edge, denoise='auto'); the GPR by one exact sample. Seeds 0-9, "
        "the first ten of the table above (same initial points and candidate streams); the "
        "NDP's input map capped at 10 (x_compression=10).",
        "bayes_opt_hartmann_denoise.json",
        "python benchmarks/bayes_opt_hartmann.py --priors gp --n-seeds 10 --n-iter 30 "
        "--x-compression 10 --threads 1 --json "
        "benchmarks/results/bayes_opt_hartmann_denoise.json",
        "the paper's Sec. 5.3 draws one sample; the denoised draw is an extension.",
        "args: {n_iter, ...}, n_init, seconds_per_run: {method: s}, cpu_seconds_per_run: "
        "{method: s}, regret: {method: [[per evaluation] per seed]}", _bayes_opt,
        _bayes_opt_figure),
    "bayes_opt_branin_denoise": Claim(
        "Bayesian optimisation, 2-D Branin, the NDP draw denoised from 8 samples", "The "
        "Branin protocol with denoise='auto': the NDP's draw denoised from 8 joint samples, "
        "the GPR's one exact sample. Seeds 0-9, the first ten of the Branin table; the "
        "NDP's input map capped at 10 (x_compression=10).",
        "bayes_opt_branin_denoise.json",
        "python benchmarks/bayes_opt_hartmann.py --function branin --priors gp --n-seeds 10 "
        "--n-iter 30 --x-compression 10 --threads 1 --json "
        "benchmarks/results/bayes_opt_branin_denoise.json",
        "the protocol of the paper's Sec. 5.3, on a 2-D function; the denoised draw is an "
        "extension.",
        "args: {function, n_iter, ...}, n_init, seconds_per_run: {method: s}, "
        "cpu_seconds_per_run: {method: s}, regret: {method: [[per evaluation] per seed]}",
        _bayes_opt, _bayes_opt_figure),
    **{f"bayes_opt_{key}{suffix}": Claim(
        f"Bayesian optimisation, dev function: {title}"
        + (", the NDP draw denoised from 8 samples" if suffix
           else ", one joint sample (the default)"),
        f"The 3-D Hartmann protocol on {title} over {box} (global minimum {f_min}), one of "
        "the two functions on which thompson_sampling's defaults (for an NDP the "
        "power-transformed values and the draw; the local candidates) were chosen: simple "
        "regret after k "
        "evaluations that follow 3 uniform random points, mean ± standard error over seeds "
        "0-9. "
        + ("With denoise='auto': NDPRegressor conditions "
           "the shipped 2-D gp prior and, beside it, the matern52 prior (the GPR's kernel "
           "family with its lengthscale fixed; the tiered sampler, its default) and ranks "
           "the 64 uniform candidates by a draw denoised from 8 joint samples; the GPR "
           "refits a Matérn-5/2 kernel by ML-II every iteration and ranks by one exact "
           "sample. The NDPs' input map is capped at 10 (x_compression=10)." if suffix else
           "The NDP on the shipped 2-D gp prior ranks the candidates by one joint sample "
           "(denoise=False, the default and the paper's draw); same seeds, initial points "
           "and candidates as the table of the denoised draw. Rows with half the "
           "candidates local draw 32 of the 64 around the best point so far "
           "(local_fraction=0.5, thompson_sampling's default in two or more dimensions), "
           "the others all 64 uniformly."),
        f"bayes_opt_{key}{suffix}.json",
        f"python benchmarks/bayes_opt_hartmann.py {'' if suffix else '--no-denoise '}"
        f"--function {key} --priors gp{' matern52 --x-compression 10' if suffix else ' --local'} "
        "--n-seeds 10 "
        f"--n-iter 30 --threads 1 --json benchmarks/results/bayes_opt_{key}{suffix}.json",
        "the protocol of the paper's Sec. 5.3, on a 2-D function"
        + ("; the denoised draw is an extension." if suffix else "."),
        "args: {function, n_iter, ...}, n_init, seconds_per_run: {method: s}, "
        "cpu_seconds_per_run: {method: s}, regret: {method: [[per evaluation] per seed]}",
        _bayes_opt, _bayes_opt_figure if suffix else None)
       for key, title, box, f_min in (
           ("camel", "six-hump camel", "[-3, 3] x [-2, 2]", "-1.0316285, at two points"),
           ("goldstein_price", "Goldstein-Price", "[-2, 2]^2", "3, at (0, -1)"))
       for suffix in ("_denoise", "")},
    "bayes_opt_family": Claim(
        "Bayesian optimisation where the prior knows the family", "Forrester-type objectives "
        "on [0, 1], f(x) = A (6 (x - s) - 2)^2 sin(12 (x - s) - 4) + B (x - 0.5) + C with A ~ "
        "U(0.5, 1.5), B ~ U(-5, 5), C ~ U(-3, 3), s ~ U(-0.1, 0.1). A prior trained on 2,000 "
        "members (train_prior with functions, 64 points each, 3,000 steps) conditions on "
        "new members, one per seed, never seen in training; the same Thompson sampling as "
        "above (3 uniform random points, one joint sample on 64 fresh candidates per "
        "iteration; with 'half the candidates local', 32 of them around the best point so "
        "far), beside the shipped gp prior (on power-transformed values, thompson_sampling's "
        "default for it, and with the candidates ranked by a draw denoised from 8 joint "
        "samples, denoise='auto'; the family prior takes the values as given, in its "
        "family's units, and ranks by one joint sample, the default), "
        "GaussianProcessRegressor (Matérn-5/2, ML-II every iteration) and random search. "
        "Simple regret against each member's minimum on a 4,001-point grid.",
        "bayes_opt_family.json",
        "python benchmarks/bayes_opt_family.py --work-dir PATH --steps 3000 --local "
        "--threads 1 --json benchmarks/results/bayes_opt_family.json",
        "beyond the paper: its priors are GP draws only.",
        "args: {...}, n_init, prior: {name, steps, final_loss, config, ...}, seconds_per_run: "
        "{method: s}, cpu_seconds_per_run: {method: s}, regret: {method: [[per evaluation] "
        "per seed]}", _bayes_opt, _bayes_opt_figure),
    "bayes_opt_family_nodenoise": Claim(
        "Bayesian optimisation where the prior knows the family, one joint sample", "The "
        "protocol of the table above (a family prior trained by the same command, the same "
        "members, initial points and candidates) with the shipped gp prior ranking the "
        "candidates by one joint sample, "
        "thompson_sampling's default (denoise=False), as the family prior and the GPR do.",
        "bayes_opt_family_nodenoise.json",
        "python benchmarks/bayes_opt_family.py --work-dir PATH --steps 3000 --local "
        "--no-denoise --threads 1 --json benchmarks/results/bayes_opt_family_nodenoise.json",
        "beyond the paper: its priors are GP draws only.",
        "args: {...}, n_init, prior: {name, steps, final_loss, config, ...}, seconds_per_run: "
        "{method: s}, cpu_seconds_per_run: {method: s}, regret: {method: [[per evaluation] "
        "per seed]}", _bayes_opt),
    "bayes_opt_family_tweedie": Claim(
        "Bayesian optimisation where the prior knows the family, the gp prior Tweedie-"
        "corrected", "The protocol of the one-sample table above (a family prior trained by "
        "the same command, the same members, initial points and candidates) with the "
        "shipped gp prior sampled through the Tweedie correction, sampler='tweedie', as "
        "thompson_sampling's default model does; the family prior, which has no kernel for "
        "the correction, keeps its default sampler.",
        "bayes_opt_family_tweedie.json",
        "python benchmarks/bayes_opt_family.py --work-dir PATH --steps 3000 --local "
        "--no-denoise --sampler tweedie --threads 1 --json "
        "benchmarks/results/bayes_opt_family_tweedie.json",
        "beyond the paper: its priors are GP draws only.",
        "args: {..., sampler}, n_init, prior: {name, steps, final_loss, config, ...}, "
        "seconds_per_run: {method: s}, cpu_seconds_per_run: {method: s}, regret: {method: "
        "[[per evaluation] per seed]}", _bayes_opt),
}


# -- rendering -------------------------------------------------------------------------------
def _table(header, rows):
    table = nodes.table(classes=["skdiff-benchmark"])
    group = nodes.tgroup(cols=len(header))
    table += group
    group.extend(nodes.colspec(colwidth=1) for _ in header)

    def row(cells, entry_cls=nodes.paragraph):
        r = nodes.row()
        for c in cells:
            r += nodes.entry("", entry_cls(text=str(c)))
        return r

    thead = nodes.thead()
    thead += row(header)
    tbody = nodes.tbody()
    tbody.extend(row(cells) for cells in rows)
    group += thead
    group += tbody
    return table


def _environment(doc):
    env = doc.get("environment") or doc.get("hardware")
    if isinstance(env, dict):
        parts = [env.get("device_name") or env.get("cpu") or env.get("device")]
        if env.get("torch"):
            parts.append(f"torch {env['torch']}")
        if env.get("threads") is not None:
            parts.append(f"{env['threads']} thread(s)")
        load, cores = env.get("loadavg"), env.get("cpu_count")
        if load is not None:
            parts.append(f"load average {load} at the start")
        text = ", ".join(str(p) for p in parts if p)
        if env.get("note"):
            return f"{text}; {env['note']}"
        if load is not None and cores and load >= cores:  # a file that carries no note
            return f"{text}; other jobs shared the CPU: timings are indicative"
        return text
    if isinstance(env, str):
        return env
    if doc.get("threads") is not None:
        return f"{doc['threads']} thread(s); machine not recorded"
    return "not recorded"


def _field(name, body):
    field = nodes.field()
    field += nodes.field_name(text=name)
    field += nodes.field_body("", body)
    return field


def _from_runs(doc):
    """A results file in ``defaults.py``'s format (a list of ``runs``, no top-level command)
    as the fields the facts read: its runs' commands, the last one's date and machine."""
    runs = doc.get("runs") if doc else None
    if not runs or "command" in doc:
        return doc
    last = runs[-1]
    hardware = ", ".join(str(p) for p in (
        last.get("hardware"), last.get("torch") and f"torch {last['torch']}",
        last.get("threads") is not None and f"{last['threads']} thread(s)",
        last.get("loadavg_start") is not None and
        f"load average {last['loadavg_start']} at the start") if p)
    commands = list(dict.fromkeys(r["command"] for r in runs if r.get("command")))
    return {**doc, "command": "; ".join(commands), "date": last.get("date"),
            "environment": hardware or None}


def _facts(claim, doc):
    doc = _from_runs(doc)
    facts = nodes.field_list()
    facts += _field("Paper", nodes.paragraph(text=claim.paper))
    facts += _field("Results", nodes.paragraph("", "", nodes.literal(
        text=f"benchmarks/results/{claim.file}")))
    if doc is not None:
        facts += _field("Hardware", nodes.paragraph(text=_environment(doc)))
        facts += _field("Date", nodes.paragraph(text=str(doc.get("date", "not recorded"))))
    command = doc.get("command") if doc else None
    facts += _field("Command", nodes.paragraph("", "", nodes.literal(
        text=command or claim.command)))
    return facts


class BenchmarkDirective(SphinxDirective):
    """``benchmark <claim>``: the claim's section, read from its JSON file."""

    required_arguments = 1

    def run(self):
        key = self.arguments[0]
        if key not in CLAIMS:
            raise self.error(f"unknown benchmark claim {key!r}; known: {sorted(CLAIMS)}")
        claim = CLAIMS[key]
        path = RESULTS / claim.file
        self.env.note_dependency(str(path))
        section = nodes.section(ids=[nodes.make_id(f"benchmark-{key}")])
        section += nodes.title(text=claim.title)
        section += nodes.paragraph(text=claim.what)
        doc = json.loads(path.read_text()) if path.is_file() else None
        section += _facts(claim, doc)
        if doc is None:
            section += _not_measured(claim, "does not exist yet")
            return [section]
        try:
            header, rows = claim.table(doc)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            logger.warning(f"benchmarks/results/{claim.file} does not have the fields claim "
                           f"{key!r} reads ({type(exc).__name__}: {exc}); expected "
                           f"{claim.schema}", location=self.get_location())
            return [section]
        if not rows:  # a file shared by several claims may hold rows for some of them only
            section += _not_measured(claim, "holds no rows for this table")
            return [section]
        if doc.get("complete") is False:
            note = nodes.admonition(classes=["warning"])
            note += nodes.title(text="Partial run")
            note += nodes.paragraph(text="The command was stopped before its end; the table "
                                    "holds the results it had written by then.")
            section += note
        section += _table(header, rows)
        if claim.figure is not None:
            section += claim.figure(doc)
        return [section]


def _not_measured(claim, why):
    """The "Not yet measured" note: the file, why, and how to write it."""
    note = nodes.admonition(classes=["note"])
    note += nodes.title(text="Not yet measured")
    where = f" on {claim.requires}" if claim.requires else ""
    note += nodes.paragraph("", "", nodes.Text(f"benchmarks/results/{claim.file} {why}; "
                                               f"this table appears when "),
                            nodes.literal(text=claim.command),
                            nodes.Text(f" has been run{where} from the repository root and "
                                       "the site rebuilt."))
    return note


class ShippedPriorsDirective(SphinxDirective):
    """``shipped-priors``: one row per weights manifest in ``skdiff/weights``."""

    def run(self):
        rows, commands = [], nodes.bullet_list()
        for manifest in sorted(WEIGHTS.glob("*.json")):
            self.env.note_dependency(str(manifest))
            m = json.loads(manifest.read_text())
            file = f"{m['name']}_d{m['n_dims']}.pt"
            rows.append([file, m["name"], str(m["n_dims"]),
                         f"{m['steps']:,}" + ("" if m.get("complete") else " (stopped early)"),
                         f"{m['final_loss']:.3f}", f"{m['bytes'] / 1e6:.2f} MB",
                         m["sha256"][:12]])
            # a literal keeps the command's double dashes (plain text would get en dashes)
            commands += nodes.list_item("", nodes.paragraph(
                "", f"{file}: ", nodes.literal(text=m.get("command", "not recorded"))))
        return [_table(["file", "prior", "D", "training steps", "final loss", "size",
                        "sha256"], rows),
                nodes.paragraph(text="The commands that trained them:"), commands]


def setup(app):
    app.add_directive("benchmark", BenchmarkDirective)
    app.add_directive("shipped-priors", ShippedPriorsDirective)


if __name__ == "__main__":
    for key, claim in CLAIMS.items():
        state = "present" if (RESULTS / claim.file).is_file() else "missing"
        print(f"{key}: benchmarks/results/{claim.file} ({state})\n    {claim.schema}")
