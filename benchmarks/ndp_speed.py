"""NDP prediction speed: the default sampler against the paper's DDPM-500 with U = 5.

``predict(X, return_std=True)`` for 50 targets, 64 Monte Carlo samples (``--n-samples``) and
10 context points
(SE draws, lengthscale 0.25 sqrt(D) on [-2, 2]^D, the interpolation benchmark's tasks; D = 1
by default, ``--dims 1 2 3`` for more), on this machine's CPU.
For each sampler: wall time of ``fit`` and of ``predict``, the process CPU time of
``predict`` (with one torch thread: about the wall time on an otherwise idle core), the number
of network evaluations, and the joint log-likelihood per target point (Gaussian moment-matched
to the samples) and MSE it reaches, averaged over ``--n-tasks`` tasks. Beside them, the
exact GP with the true hyper-parameters on the same tasks: scored analytically, and through
the same metric from as many of its own posterior samples (the ceiling of such a sampler).
The paper's sampler runs at D = 1 only.

Run::

    python benchmarks/ndp_speed.py --n-tasks 3 --n-tasks-ddpm 1   # DDPM: minutes per task
    python benchmarks/ndp_speed.py --n-tasks 3 --skip-ddpm --json ndp_speed.json
    python benchmarks/ndp_speed.py --dims 1 2 3 --n-tasks 3 --n-tasks-ddpm 1
    python benchmarks/ndp_speed.py --threads 2 --dims 1 2 3 --skip-ddpm   # two threads
    python benchmarks/ndp_speed.py --n-samples 32 --skip-ddpm             # a smaller batch
    python benchmarks/ndp_speed.py --dims 1 2 --paired-attention 3 --threads 1 \
        --json ndp_attention_paired.json   # the attention across dimensions, both paths
    python benchmarks/ndp_speed.py --dims 1 2 3 --paired-projection 3 --threads 1 \
        --json ndp_projection_paired.json  # the projections' bias, both ways

With ``--paired-attention N`` only that comparison runs: at D = 1 and D = 2 the network
computes the attention across the input dimensions of a point in closed form
(``skdiff.nn.ndp._SHORT_PATHS``: over one key an affine map, over two a logistic function);
the same ``predict(X, return_std=True)`` is timed with those paths and with
``scaled_dot_product_attention`` (the flag off), alternating, N times each in one process,
so that both see the same load of the machine. ``--paired-projection N`` does the same for
the attention projections (``skdiff.nn.ndp._BIAS_AFTER``: the bias added in place after a
bias-free product, or ``F.linear``), at every ``--dims``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _ndp_common import add_runtime_args, apply_runtime_args, write_json
from ndp_interpolation import gp_metrics, gp_sampled_metrics, sk_kernel
from ndp_sampler_network import sampler_path
from sklearn.gaussian_process import GaussianProcessRegressor

import skdiff.nn.ndp
from skdiff import NDPRegressor
from skdiff.datasets import make_gp_functions
from skdiff.diffusion import n_evaluations
from skdiff.ndp import gaussian_log_likelihood


def _value(v):
    """A float for the JSON, None for a metric that could not be computed (NaN)."""
    return None if np.isnan(v) else float(v)


def run(est, tasks, time_predict=True):
    """Per task: fit time, predict(return_std) time, and the metrics of the same sampler run.

    ``predict(X, return_std=True)`` is one ``conditional_sample`` call with ``n_samples``
    samples over all targets; ``sample_posterior(X, n_samples)`` is the same call, so its time
    stands in for ``predict`` when ``time_predict`` is false (the DDPM run, which would
    otherwise cost two 3,000-evaluation runs per task) and its samples give the metrics.
    """
    fit_s, pred_s, cpu_s, lls, mses = [], [], [], [], []
    for Xc, yc, Xt, yt in tasks:
        t0 = time.perf_counter()
        est.fit(Xc, yc)
        fit_s.append(time.perf_counter() - t0)
        if time_predict:
            t0, c0 = time.perf_counter(), time.process_time()
            est.predict(Xt, return_std=True)
            pred_s.append(time.perf_counter() - t0)
            cpu_s.append(time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()
        samples = est.sample_posterior(Xt, n_samples=est.n_samples, random_state=0)
        if not time_predict:
            pred_s.append(time.perf_counter() - t0)
            cpu_s.append(time.process_time() - c0)
        # the joint Gaussian of the samples is singular unless they outnumber the targets
        lls.append(gaussian_log_likelihood(yt, samples, joint=True)
                   if samples.shape[1] > len(yt) else float("nan"))
        mses.append(np.mean((samples.mean(1) - yt) ** 2))
    return fit_s, pred_s, cpu_s, lls, mses


def paired(d, n_repeats, args, flag, paths):
    """CPU seconds of ``predict(X, return_std=True)`` on one task of dimension ``d`` with the
    module flag ``skdiff.nn.ndp.<flag>`` on and off, alternating ``n_repeats`` times, and the
    largest differences between the two paths' means and standard deviations. ``paths``
    names them: ``(name with the flag on, name with it off)``."""
    data = make_gp_functions(1, 60, d, kernel="se", lengthscale=0.25 * np.sqrt(d),
                             random_state=1)
    X, y = data.X[0], data.y[0]
    est = NDPRegressor(prior=args.prior, x_bounds=[(-2, 2)] * d, x_scaling="box", alpha=0.0,
                       normalize_y=False, n_samples=args.n_samples,
                       random_state=0).fit(X[:10], y[:10])
    on, off = paths
    seconds, outputs = {on: [], off: []}, {}
    try:
        for _ in range(n_repeats):
            for path, value in ((off, False), (on, True)):
                setattr(skdiff.nn.ndp, flag, value)
                c0 = time.process_time()
                outputs[path] = est.predict(X[10:], return_std=True)
                seconds[path].append(time.process_time() - c0)
    finally:
        setattr(skdiff.nn.ndp, flag, True)
    (m_b, s_b), (m_k, s_k) = outputs[on], outputs[off]
    row = {"n_dims": d, f"cpu_seconds_{on}": seconds[on], f"cpu_seconds_{off}": seconds[off],
           "ratio": float(np.mean(seconds[on]) / np.mean(seconds[off])),
           "max_mean_difference": float(np.abs(m_b - m_k).max()),
           "max_std_difference": float(np.abs(s_b - s_k).max())}
    print(f"D={d} predict CPU s: {on} " + " ".join(f"{v:.2f}" for v in seconds[on])
          + f" | {off} " + " ".join(f"{v:.2f}" for v in seconds[off])
          + f" | ratio {row['ratio']:.3f} | largest difference of means "
          f"{row['max_mean_difference']:.1e}, of stds {row['max_std_difference']:.1e}",
          flush=True)
    return row


def paired_attention(d, n_repeats, args):
    """:func:`paired` for the closed-form attention across one or two input dimensions
    against the kernel."""
    return paired(d, n_repeats, args, "_SHORT_PATHS", ("closed_form", "kernel"))


def paired_projection(d, n_repeats, args):
    """:func:`paired` for the attention projections' bias added after the product against
    ``F.linear``."""
    return paired(d, n_repeats, args, "_BIAS_AFTER", ("bias_after", "linear"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tasks", type=int, default=3)
    p.add_argument("--n-tasks-ddpm", type=int, default=1)
    p.add_argument("--prior", default="gp")
    p.add_argument("--skip-ddpm", action="store_true")
    p.add_argument("--dims", nargs="+", type=int, default=[1],
                   help="input dimensions D of the tasks (the paper's sampler: D = 1 only)")
    p.add_argument("--n-samples", type=int, default=64,
                   help="Monte Carlo samples behind predict (the estimator's n_samples)")
    p.add_argument("--paired-attention", type=int, default=0, metavar="N",
                   help="only time the attention across one or two dimensions, closed form "
                        "against the kernel, alternating N times (D = 1 and 2)")
    p.add_argument("--paired-projection", type=int, default=0, metavar="N",
                   help="only time the attention projections, the bias added after the "
                        "product against F.linear, alternating N times")
    p.add_argument("--json", default=None, help="write the rows here")
    add_runtime_args(p)
    args = p.parse_args(argv)
    apply_runtime_args(args)
    if args.paired_projection:
        rows = [paired_projection(d, args.paired_projection, args) for d in args.dims]
        if args.json:
            write_json(args.json, {"args": vars(args), "n_context": 10, "n_targets": 50,
                                   "n_samples": args.n_samples, "projection_paired": rows})
        return
    if args.paired_attention:
        rows = [paired_attention(d, args.paired_attention, args) for d in args.dims if d <= 2]
        if args.json:
            write_json(args.json, {"args": vars(args), "n_context": 10, "n_targets": 50,
                                   "n_samples": args.n_samples, "attention_paired": rows})
        return
    print(f"torch threads: {torch.get_num_threads()}, tasks: {args.n_tasks}, "
          f"50 targets, 10 context points, {args.n_samples} samples")
    rows, ceilings = [], {}
    for d in args.dims:
        data = make_gp_functions(args.n_tasks, 60, d, kernel="se",
                                 lengthscale=0.25 * np.sqrt(d), random_state=1)
        tasks = [(X[:10], y[:10], X[10:], y[10:]) for X, y in zip(data.X, data.y)]
        configs = {"default": dict(), "fast, 50 steps": dict(sampler="fast", n_sampling_steps=50)}
        if not args.skip_ddpm and d == 1:
            configs["ddpm-500, U=5"] = dict(sampler="ddpm", n_resample=5)
        for name, kw in configs.items():
            ddpm = kw.get("sampler") == "ddpm"
            n_tasks = args.n_tasks_ddpm if ddpm else args.n_tasks
            est = NDPRegressor(prior=args.prior, x_bounds=[(-2, 2)] * d, x_scaling="box",
                               alpha=0.0, normalize_y=False, n_samples=args.n_samples,
                               random_state=0, **kw)
            fit_s, pred_s, cpu_s, lls, mses = run(est, tasks[:n_tasks], time_predict=not ddpm)
            # the fitted estimator's level path (its levels keywords and n_resample)
            n_eval = n_evaluations(sampler_path(est.schedule_, {
                **est._levels_kwargs(), "n_resample": est.n_resample}))
            if name == "default":  # sampler="auto": the fast sampler with the gp prior
                name = f"{est.sampler_} (default)"
            print(f"D={d} {name:16s} network evaluations {n_eval:5d} | fit "
                  f"{np.mean(fit_s):6.2f} s | predict(return_std) {np.mean(pred_s):7.2f} s "
                  f"(min {np.min(pred_s):.2f}, CPU {np.mean(cpu_s):.2f}) | "
                  f"loglik/pt {np.mean(lls):6.3f} | MSE {np.mean(mses):.3f} | tasks {n_tasks}",
                  flush=True)
            print(f"{'':20s} per task: loglik/pt " + " ".join(f"{v:.3f}" for v in lls)
                  + " | MSE " + " ".join(f"{v:.3f}" for v in mses), flush=True)
            rows.append({"sampler": name, "n_dims": d, "evaluations": n_eval,
                         "n_tasks": n_tasks, "seconds": float(np.mean(pred_s)),
                         "seconds_min": float(np.min(pred_s)),
                         "cpu_seconds": float(np.mean(cpu_s)),
                         "fit_seconds": float(np.mean(fit_s)),
                         "loglik": _value(np.mean(lls)), "mse": float(np.mean(mses)),
                         "loglik_per_task": [_value(v) for v in lls],
                         "mse_per_task": [float(v) for v in mses]})
        gp = GaussianProcessRegressor(sk_kernel("se", d, True), optimizer=None)
        exact = np.array([gp_metrics(gp, *t)[:2] for t in tasks])
        sampled = np.array([gp_sampled_metrics(gp, *t, args.n_samples, seed=0)[:2]
                            for t in tasks])
        if args.n_samples <= len(tasks[0][3]):  # the joint metric needs more samples
            sampled[:, 0] = np.nan
        ceilings[d] = {"n_dims": d, "n_tasks": len(tasks), "loglik": float(exact[:, 0].mean()),
                       "mse": float(exact[:, 1].mean()),
                       "loglik_sampled": _value(sampled[:, 0].mean()),
                       "mse_sampled": float(sampled[:, 1].mean())}
        c = ceilings[d]
        print(f"D={d} {'exact GP':16s} analytic loglik/pt {c['loglik']:6.3f} | MSE "
              f"{c['mse']:.3f} | {args.n_samples} samples, moment-matched: loglik/pt "
              f"{sampled[:, 0].mean():6.3f} | MSE {c['mse_sampled']:.3f}")
    if args.json:
        write_json(args.json, {"args": vars(args), "n_context": 10, "n_targets": 50,
                               "n_samples": args.n_samples, "rows": rows,
                               "exact_gp": list(ceilings.values())})


if __name__ == "__main__":
    main()
