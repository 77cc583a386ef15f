"""GPU smoke test: fit and predict every estimator on CUDA, compare with CPU, time it.

    python benchmarks/gpu_smoke.py [--data-home DIR] [--device cpu] [--save FILE]
                                   [--results-dir DIR] [--parts estimators attention]
    python benchmarks/gpu_smoke.py --check-pickle FILE    # on a CPU-only machine

Exits 0 with a message when CUDA is absent (CI has no GPU). With CUDA it checks, for each
estimator, that a CUDA fit trains (score above a floor), that the fitted model pickles and
predicts the same after loading, and prints wall times. The large-N DIFFormer step and the
Flow-Attention long-sequence runs are what a GPU is for; their CPU figures are in
docs/benchmarks.md. Flow-Attention (normal and causal) is compared with
``scaled_dot_product_attention`` at L = 4K and 16K, B8 H8 d32, float32 and bfloat16, with a
``chunk_size`` sweep of the causal kernel (B2 H2 at L = 256 and 512 in the CPU dry run);
``--results-dir DIR`` writes the rows as JSON and a Markdown table there. ``--device cpu``
runs the same checks on the CPU (a few minutes): a dry run that catches a broken script
before GPU time is spent on it (the CUDA-vs-CPU comparison then compares the CPU with
itself). ``--parts`` runs a subset: ``estimators`` (the fits) and ``attention`` (the
Flow-Attention checks and the comparison), e.g. the comparison alone on an idle GPU before
other work shares it. ``--save FILE`` pickles the three fitted estimators with
their predictions; ``--check-pickle FILE`` loads that file on another machine (one without
CUDA, say) and checks that each estimator loads there and predicts the same.
"""

import argparse
import io
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import torch

DEVICE = "cuda"


def _cuda():
    return DEVICE == "cuda"


def _reset_peak():
    if _cuda():
        torch.cuda.reset_peak_memory_stats()


def _print_peak():
    if _cuda():
        print(f"  peak CUDA memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")


def _timed(label, fn):
    t = time.perf_counter()
    out = fn()
    if _cuda():
        torch.cuda.synchronize()
    print(f"  {label}: {time.perf_counter() - t:.2f} s")
    return out


def _roundtrip(est):
    buf = io.BytesIO()
    pickle.dump(est, buf)
    buf.seek(0)
    return pickle.load(buf)


def difformer(data_home):
    from cora import CORA_RECIPE  # benchmarks/cora.py: the official run.sh settings
    from sklearn.preprocessing import normalize

    from skdiff import DIFFormerClassifier, Graph
    from skdiff.datasets import load_planetoid

    print(f"DIFFormerClassifier on Cora (public split, Cora recipe), {DEVICE}")
    cora = load_planetoid("cora", data_home=data_home)
    g = Graph(normalize(cora.data, norm="l1"), cora.adjacency)
    ids = np.concatenate([cora.train_idx, cora.val_idx])
    clf = DIFFormerClassifier(**CORA_RECIPE, device=DEVICE, random_state=0)
    _timed("fit", lambda: clf.fit(ids[:, None], cora.target[ids], graph=g,
                                  validation_mask=np.isin(ids, cora.val_idx)))
    acc = clf.score(cora.test_idx[:, None], cora.target[cora.test_idx])
    print(f"  test accuracy {acc:.3f}")
    assert acc > 0.80, acc
    p1 = clf.predict_proba(g.node_ids())
    p2 = _roundtrip(clf).predict_proba(g.node_ids())
    np.testing.assert_allclose(p1, p2, atol=1e-5)
    saved = (clf, "predict_proba", g.node_ids(), p1)

    print("DIFFormer simple kernel, 100K rows, one training step")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100_000, 128)).astype(np.float32)
    yy = rng.integers(0, 5, 100_000)
    big = DIFFormerClassifier(n_layers=2, max_epochs=1, early_stopping=False, device=DEVICE,
                              random_state=0)
    _reset_peak()
    _timed("fit (1 epoch)", lambda: big.fit(X, yy))
    _print_peak()
    _timed("inductive predict 100K", lambda: big.predict(X))
    return saved


def flowformer():
    from skdiff import FlowformerRegressor
    from skdiff.datasets import make_windows

    print(f"FlowformerRegressor on a sine mixture, {DEVICE}")
    t = np.arange(4000)
    s = np.sin(2 * np.pi * t / 24) + 0.5 * np.sin(2 * np.pi * t / 168)
    X, y = make_windows(s, window=96, horizon=24)
    reg = FlowformerRegressor(max_epochs=10, device=DEVICE, random_state=0)
    _timed("fit", lambda: reg.fit(X[:3000], y[:3000]))
    r2 = reg.score(X[3000:], y[3000:])
    print(f"  R^2 {r2:.3f}")
    # a smoke floor (training happened), not an accuracy target: R^2 0.970 in the CPU dry run
    assert r2 > 0.9, r2
    pred = reg.predict(X[:50])
    np.testing.assert_allclose(pred, _roundtrip(reg).predict(X[:50]), atol=1e-5)
    saved = (reg, "predict", X[:50], pred)
    # the univariate ETTh1 recipe's options: window skip, patch tokens, best of 3 inits
    patched = FlowformerRegressor(skip="window", patch_len=8, patch_stride=4, n_init=3,
                                  max_epochs=10, device=DEVICE, random_state=0)
    _timed("fit, patch tokens, n_init=3", lambda: patched.fit(X[:3000], y[:3000]))
    r2p = patched.score(X[3000:], y[3000:])
    print(f"  R^2 {r2p:.3f} (init losses {np.round(patched.init_scores_, 4).tolist()})")
    assert r2p > 0.9, r2p
    return saved


def flow_attention_checks():
    """Flow-Attention on the device against the CPU in float64, and under bfloat16 autocast
    against float64 (the custom backward passes included)."""
    from skdiff.nn import flow_attention

    g = torch.Generator().manual_seed(0)
    q, k, v, gout = (torch.randn(2, 4, 1000, 32, generator=g, dtype=torch.float64)
                     for _ in range(4))
    for causal in (False, True):
        qr, kr, vr = (t.clone().requires_grad_() for t in (q, k, v))
        ref = flow_attention(qr, kr, vr, causal=causal)
        ref.backward(gout)
        ref = (ref.detach(), qr.grad, kr.grad, vr.grad)
        qc, kc, vc = (t.to(DEVICE, copy=True).requires_grad_() for t in (q, k, v))
        out = flow_attention(qc, kc, vc, causal=causal)
        out.backward(gout.to(DEVICE))
        for a, b in zip((out.detach(), qc.grad, kc.grad, vc.grad), ref):
            torch.testing.assert_close(a.cpu(), b)
        # bfloat16 autocast: values and gradients within 2 % of the largest float64 entry
        # (the tests ask 1.5 % at L = 300 on the CPU)
        qc, kc, vc = (t.to(DEVICE, torch.float32).requires_grad_() for t in (q, k, v))
        with torch.autocast(DEVICE, dtype=torch.bfloat16):
            out = flow_attention(qc, kc, vc, causal=causal)
        out.float().backward(gout.to(DEVICE, torch.float32))
        for a, b in zip((out.detach(), qc.grad, kc.grad, vc.grad), ref):
            err = float((a.double().cpu() - b).abs().max() / b.abs().max())
            assert err < 0.02, (causal, err)
    print(f"  flow_attention fwd+bwd on {DEVICE} equals CPU in float64, and float64 within 2 % "
          "under bfloat16 autocast (normal and causal)")


def flow_attention_vs_sdpa(results_dir):
    """Flow-Attention vs SDPA, forward+backward, float32 and bfloat16: B8 H8 d32 at L = 4K
    and 16K on CUDA (B2 H2 at 256 and 512 in the CPU dry run, in-process, no memory), plus a
    ``chunk_size`` sweep of the causal kernel at each length. Printed, and written to
    ``results_dir`` (flow_attention_speed.json, flow_attention_speed.md) when given."""
    from flow_attention_speed import compare, environment, table

    print(f"Flow-Attention vs scaled_dot_product_attention, {DEVICE}")
    sizes = dict(lengths=[4096, 16384], batch=8, heads=8) if _cuda() else \
        dict(lengths=[256, 512], batch=2, heads=2)
    # best of 10 on a GPU (a step takes milliseconds there), of 3 in the CPU dry run
    common = dict(device=DEVICE, dtypes=("float32", "bfloat16"), dim=32,
                  reps=10 if _cuda() else 3,
                  threads=torch.get_num_threads(), isolate=False, log=lambda line: None)
    rows = compare(causal=(True, False), **sizes, **common)
    md = table(rows)
    print(md + "\n")
    sweep = []
    for chunk in (32, 64, 128, 256):
        sweep += compare(lengths=sizes["lengths"], batch=sizes["batch"],
                         heads=sizes["heads"], causal=(True,), methods=("flow",),
                         chunk_size=chunk, **common)
    sweep_md = ["| L | dtype | chunk_size | causal Flow s |", "|---|---|---|---|"]
    sweep_md += [f"| {r['L']} | {r['dtype']} | {r['chunk_size']} | {r['seconds']:.4f} |"
                 for r in sweep]
    print("\n".join(sweep_md))
    if results_dir:
        out = Path(results_dir)
        out.mkdir(parents=True, exist_ok=True)
        env = environment(DEVICE, torch.get_num_threads())
        with open(out / "flow_attention_speed.json", "w") as f:
            json.dump({"environment": env, "rows": rows, "chunk_sweep": sweep}, f, indent=1)
        (out / "flow_attention_speed.md").write_text(
            f"B{sizes['batch']} H{sizes['heads']} d32, forward+backward, "
            f"{env['device_name']}, torch {env['torch']}\n\n{md}\n\n" + "\n".join(sweep_md)
            + "\n")
        print(f"  written to {out}/flow_attention_speed.json and .md")
    return rows


def ndp():
    from skdiff import NDPRegressor

    print(f"NDPRegressor, 10 context points, 50 targets, 64 samples, {DEVICE}")
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(10, 1))
    y = np.sin(2 * X[:, 0])
    Xq = np.linspace(-2, 2, 50)[:, None]
    reg = NDPRegressor(device=DEVICE, random_state=0).fit(X, y)
    mean, std = _timed("predict(return_std=True)", lambda: reg.predict(Xq, return_std=True))
    err = np.abs(mean - np.sin(2 * Xq[:, 0])).mean()
    print(f"  mean abs error {err:.3f}, mean std {std.mean():.3f}")
    assert err < 0.5, err
    np.testing.assert_allclose(mean, _roundtrip(reg).predict(Xq), atol=1e-4)
    return (reg, "predict", Xq, mean)


def check_pickle(path):
    """Load estimators pickled by ``--save`` (on CUDA, say) here and compare predictions.

    DIFFormer and Flowformer predict deterministically: same numbers up to float32 rounding
    across devices. NDP's prediction averages reverse-diffusion samples whose noise comes from
    the device's generator, so on another device it is a different Monte Carlo draw: compared
    with a tolerance of Monte Carlo size.
    """
    with open(path, "rb") as f:
        saved = pickle.load(f)
    print(f"loaded {path} on {'CUDA' if torch.cuda.is_available() else 'a machine without CUDA'}")
    for name, (est, method, X, expected) in saved.items():
        if name == "ndp":  # two independent means of n_samples draws: 5 standard errors of
            got, std = est.predict(X, return_std=True)  # their difference, std sqrt(2 / n)
            atol = 5 * std * np.sqrt(2 / est.n_samples) + 1e-3
        else:
            got, atol = getattr(est, method)(X), 1e-4
        diff = float(np.max(np.abs(got - expected)))
        print(f"  {name}: device_ {est.device_!r}, max |difference| {diff:.2e}")
        assert np.all(np.abs(got - expected) <= atol), (name, diff)
    print("pickles load and predict the same here.")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None,
                        help="folder holding planetoid/ (default: the loaders' own, "
                             "$SKDIFF_DATA else ~/skdiff_data)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cpu: a dry run of the same checks on the CPU")
    parser.add_argument("--save", help="pickle the fitted estimators and predictions here")
    parser.add_argument("--check-pickle", help="load a --save file here and compare")
    parser.add_argument("--parts", nargs="+", choices=["estimators", "attention"],
                        default=["estimators", "attention"], help="what to run (default: all)")
    parser.add_argument("--results-dir", help="write the Flow-Attention vs SDPA comparison "
                        "(JSON and a Markdown table) to this folder")
    args = parser.parse_args()
    if args.check_pickle:
        return check_pickle(args.check_pickle)
    global DEVICE
    DEVICE = args.device
    if _cuda() and not torch.cuda.is_available():
        print("CUDA is not available: nothing to smoke-test here (run this on a GPU machine, "
              "or pass --device cpu for a dry run).")
        return 0
    name = torch.cuda.get_device_name() if _cuda() else "CPU (dry run)"
    print(f"device: {name} | torch {torch.__version__}")
    saved = {}
    if "estimators" in args.parts:
        saved = {"difformer": difformer(args.data_home), "flowformer": flowformer(),
                 "ndp": ndp()}
    if "attention" in args.parts:
        flow_attention_checks()
        flow_attention_vs_sdpa(args.results_dir)
    if args.save and saved:
        with open(args.save, "wb") as f:
            pickle.dump(saved, f)
        print(f"fitted estimators and predictions pickled to {args.save}")
    print(f"GPU smoke test passed ({DEVICE}).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
