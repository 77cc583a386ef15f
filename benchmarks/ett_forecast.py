"""ETTh1 forecasting: Flowformer vs last value, ridge and a softmax Transformer of the same size.

Standard protocol (Informer/Autoformer code): 12/4/4-month train/val/test split, every
channel standardised with the training rows' mean and std, lookback 96, test windows whose
targets lie in the test months (their inputs may reach back into the validation months).
Settings: "S" = the target OT alone; "MS" = all 7 channels in, OT out; "M" = all 7 channels
in, all 7 out (the multivariate benchmark of the Informer/Autoformer tables; y is the
(horizon, 7) block flattened to horizon * 7 outputs, the metrics average over all of them).
Metrics are MSE and MAE on the standardised scale, averaged over horizon steps and windows;
for Flowformer also the coverage of the central 90 % predictive interval on the test windows.

Neural models and ridge see every ``--train-stride``-th training window (default 1: all of
them); validation and test use every window. Neural models run once per ``--seeds`` entry;
the table reports mean +- standard deviation over the seeds. Run (one torch thread):
    OMP_NUM_THREADS=1 python benchmarks/ett_forecast.py --data-home DIR --threads 1 \
        --json benchmarks/results/ett_forecast.json
The JSON holds one row per (setting, horizon, model, seed): ``mse``, ``mae``, ``val_mse``,
``coverage90`` (Flowformer), ``ot_mse`` (M setting), ``seconds``; it is rewritten after every
row.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from _results import header, write_json
from sklearn.linear_model import Ridge

from skdiff import FlowformerRegressor
from skdiff.datasets import load_ett, make_windows

LOOKBACK = 96


def windows(S, start, stop, horizon, setting, target):
    """Windows whose targets start in [start, stop - horizon]; inputs may precede start."""
    part = S[max(start - LOOKBACK, 0):stop]
    if setting == "M":  # y (n, horizon, C) flattened: column t * C + c
        X, y = make_windows(part, LOOKBACK, horizon)
        y = y.reshape(len(y), -1)
    elif setting == "MS":
        X, y = make_windows(part, LOOKBACK, horizon, target=target)
    else:
        X, y = make_windows(part[:, target], LOOKBACK, horizon)
    return X.astype(np.float32), y


def channel_independent(X, y, horizon):
    """M-setting windows (n, L, C) / (n, horizon * C) as n * C univariate ones (n * C, L) /
    (n * C, horizon): one model shared by all channels (PatchTST's channel independence).
    The rows are a permutation of the M targets, so MSE, MAE and coverage are unchanged."""
    n, L, C = X.shape
    Xc = X.transpose(0, 2, 1).reshape(n * C, L)
    yc = y.reshape(n, horizon, C).transpose(0, 2, 1).reshape(n * C, horizon)
    return Xc, yc


def scores(y, pred):
    return {"mse": float(np.mean((pred - y) ** 2)), "mae": float(np.mean(np.abs(pred - y)))}


def flowformer(args, attention, uncertainty, Xtr, ytr, Xva, yva, Xte, yte, seed):
    X = np.concatenate([Xtr, Xva])
    y = np.concatenate([ytr, yva])
    reg = FlowformerRegressor(
        hidden_dim=args.hidden_dim, n_heads=args.n_heads, n_layers=args.n_layers,
        dropout=args.dropout, attention=attention, uncertainty=uncertainty,
        instance_norm=args.instance_norm == "on", skip=args.skip, patch_len=args.patch_len,
        patch_stride=args.patch_stride, pooling=args.pooling, n_init=args.n_init,
        max_epochs=args.max_epochs,
        lr=args.lr, weight_decay=args.weight_decay, batch_size=args.batch_size,
        validation_fraction=len(Xva) / len(X), n_iter_no_change=args.patience,
        random_state=seed, device="cpu",
    )
    t0 = time.perf_counter()
    reg.fit(X, y)  # early stopping on the last rows = the standard validation months
    fit_s = time.perf_counter() - t0
    pred = reg.predict(Xte)
    samples = reg.sample_posterior(Xte, n_samples=100, random_state=0)
    lo, hi = np.quantile(samples, [0.05, 0.95], axis=-1)
    return pred, {"val_mse": scores(yva, reg.predict(Xva))["mse"],  # what recipes are chosen on
                  "coverage90": float(np.mean((yte >= lo) & (yte <= hi))),
                  "fit_s": round(fit_s, 1), "epochs": len(reg.history_)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-home", default=None)
    p.add_argument("--horizons", type=int, nargs="+", default=[24, 96])
    p.add_argument("--settings", nargs="+", default=["S", "MS", "M"],
                   choices=["S", "MS", "M"])
    p.add_argument("--models", nargs="+",
                   default=["last", "ridge", "flow", "softmax"],
                   help="also: ridge_all (ridge on every training window whatever the "
                        "stride), flow_mc (Flowformer with MC dropout, univariate only); "
                        "in the M setting a suffix _ci (last_ci, ridge_ci, flow_ci, "
                        "softmax_ci) fits one univariate model shared by all channels")
    p.add_argument("--hidden-dim", type=int, default=32)
    p.add_argument("--n-heads", type=int, default=4)
    p.add_argument("--n-layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--instance-norm", choices=["on", "off"], default="on")
    p.add_argument("--skip", choices=["level", "window"], default="level")
    p.add_argument("--patch-len", type=int, default=None,
                   help="time steps per token (PatchTST patches; default: one per step)")
    p.add_argument("--patch-stride", type=int, default=None,
                   help="step between patches (default: --patch-len)")
    p.add_argument("--pooling", choices=["mean", "last", "flatten"], default="mean")
    p.add_argument("--n-init", type=int, default=1,
                   help="networks per fit from different seeds; the best on validation is kept")
    p.add_argument("--max-epochs", type=int, default=6)
    p.add_argument("--train-stride", type=int, default=1,
                   help="use every k-th training window (CPU budget); val/test use all")
    p.add_argument("--patience", type=int, default=3)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--note", default=None,
                   help="a caveat stored with the results, e.g. that the machine is shared")
    p.add_argument("--json", default=None, help="write the rows to this JSON file")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    doc = header("ett_forecast.py", args.threads, note=args.note)
    # the recipe, without the data folder (a machine path) and the output options
    recipe = {k: v for k, v in vars(args).items() if k not in ("data_home", "note", "json")}

    ett = load_ett("ETTh1", data_home=args.data_home)
    tr, va, te = ett.train_index, ett.val_index, ett.test_index
    mu, sd = ett.data[tr].mean(0), ett.data[tr].std(0)
    S = (ett.data - mu) / sd  # standardised with the training rows only
    target = ett.target_column
    print(f"ETTh1 {S.shape}, train/val/test rows {len(tr)}/{len(va)}/{len(te)}, "
          f"lookback {LOOKBACK}")
    results = []
    for h in args.horizons:
        for setting in args.settings:
            mv = setting != "S"
            Xall, yall = windows(S, tr[0], tr[-1] + 1, h, setting, target)
            Xtr, ytr = Xall[::args.train_stride], yall[::args.train_stride]
            Xva, yva = windows(S, va[0], va[-1] + 1, h, setting, target)
            Xte, yte = windows(S, te[0], te[-1] + 1, h, setting, target)
            pairs = [(Xall, yall), (Xtr, ytr), (Xva, yva), (Xte, yte)]
            layouts = {False: sum(pairs, ())}
            if setting == "M":  # the channel-independent layout, built once per horizon
                layouts[True] = sum((channel_independent(X, y, h) for X, y in pairs), ())
            for name, seed in [(m, s) for m in args.models for s in args.seeds]:
                model = name.removesuffix("_ci")
                if (model == "flow_mc" and mv) or (model != name and setting != "M"):
                    continue  # MC dropout: univariate only; channel independence: M only
                if model in ("last", "ridge", "ridge_all") and seed != args.seeds[0]:
                    continue  # deterministic
                Xa, ya, Xtr, ytr, Xva, yva, Xte, yte = layouts[model != name]
                t0 = time.perf_counter()
                extra = {}
                if model == "last":
                    if model != name:  # channel-independent rows: (n * C, L) windows
                        pred = np.repeat(Xte[:, -1:], h, axis=1)
                    elif setting == "M":  # every channel's last value, repeated per step
                        pred = np.tile(Xte[:, -1, :], h)
                    else:
                        last = Xte[:, -1, target] if mv else Xte[:, -1]
                        pred = np.repeat(last[:, None], h, axis=1)
                elif model in ("ridge", "ridge_all"):  # ridge_all: every training window
                    Xr, yr = (Xa, ya) if model == "ridge_all" else (Xtr, ytr)
                    flat = [a.reshape(len(a), -1) for a in (Xr, Xva, Xte)]
                    best = min(
                        (scores(yva, Ridge(alpha=a).fit(flat[0], yr).predict(flat[1]))["mse"], a)
                        for a in (0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
                    )
                    pred = Ridge(alpha=best[1]).fit(flat[0], yr).predict(flat[2])
                    extra = {"alpha": best[1], "val_mse": best[0]}
                else:
                    attention = "softmax" if model == "softmax" else "flow"
                    unc = "mc_dropout" if model == "flow_mc" else "gaussian"
                    pred, extra = flowformer(args, attention, unc, Xtr, ytr, Xva, yva, Xte, yte,
                                             seed)
                res = scores(yte, pred)
                if setting == "M":  # the OT channel alone, to set beside S and MS
                    C = S.shape[1]
                    ot = (slice(target, None, C), slice(None)) if model != name \
                        else (slice(None), slice(target, None, C))
                    res["ot_mse"] = scores(yte[ot], pred[ot])["mse"]
                res = {"setting": setting, "horizon": h, "model": name, "seed": seed, **res,
                       **extra,
                       "seconds": round(time.perf_counter() - t0, 1)}
                results.append(res)
                print(json.dumps(res), flush=True)
                if args.json:
                    write_json(args.json, {**doc, "args": recipe, "rows": results})
    print(f"\n| setting | horizon | model | test MSE | test MAE | validation MSE | 90% coverage "
          f"| OT test MSE | fit s | seeds |   (mean +- std over {args.seeds} for the neural "
          f"models; OT test MSE: the target channel alone, M setting)")
    print("|---|---|---|---|---|---|---|---|---|---|")
    groups = {}
    for r in results:
        groups.setdefault((r["setting"], r["horizon"], r["model"]), []).append(r)

    def stat(rows, key, fmt):
        vals = np.array([r[key] for r in rows if key in r])
        if len(vals) == 0:
            return ""
        return f"{vals.mean():{fmt}}" + (f" ± {vals.std(ddof=1):{fmt}}" if len(vals) > 1 else "")

    for (setting, h, model), rows in groups.items():
        print(f"| {setting} | {h} | {model} | {stat(rows, 'mse', '.4f')} | "
              f"{stat(rows, 'mae', '.4f')} | {stat(rows, 'val_mse', '.4f')} | "
              f"{stat(rows, 'coverage90', '.3f')} | {stat(rows, 'ot_mse', '.4f')} | "
              f"{stat(rows, 'fit_s', '.0f')} | {len(rows)} |")
    if args.json:
        write_json(args.json, {**doc, "args": recipe, "rows": results}, complete=True)
        print(f"rows written to {args.json}")


if __name__ == "__main__":
    main()
