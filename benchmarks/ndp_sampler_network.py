"""NDP conditional samplers with a trained network, paired against the paper's sampler.

Every sampler runs on the same tasks with the same pretrained noise network; the reference is
the paper's sampler, DDPM over all 500 levels with RePaint resampling U = 5 (2,995 network
evaluations). Tasks are those of ``ndp_interpolation.py`` (Dutordoir et al., 2023, Sec. 5.1:
x ~ U(-2, 2)^D, GP draws with variance 1, lengthscale 0.25 sqrt(D), noise variance 0.0025,
1-9 context points at D = 1 / 5-20 at D = 2, 50 targets).

Two scores per task and sampler, both per target point:

``loglik``
    The paper's metric: joint log-likelihood of the held-out targets under the Gaussian
    moment-matched to ``--n-samples`` joint samples. Its Monte Carlo noise is large (a standard
    deviation of 0.1-0.2 nats per task even for exact posterior samples), so paired differences
    need many tasks.
``expected``
    The same Gaussian scored in expectation over targets drawn from the exact GP posterior of
    the task, in closed form: :math:`-\\tfrac{1}{2n}\\,[\\mathrm{tr}(\\hat\\Sigma^{-1}\\Sigma) +
    \\delta^\\top\\hat\\Sigma^{-1}\\delta + \\log\\det(2\\pi\\hat\\Sigma)]`. It removes the noise
    of the single target draw (standard deviation about 0.02 per task for exact samples) and
    measures the same thing when the network was trained on the tasks' GP (``--prior se`` on SE
    tasks).

``ceiling`` rows score exact GP posterior samples (as many) the same way: no sampler can beat
them in expectation. Paired differences to the reference are reported as mean ± standard error
over tasks. Samples are cached per sampler and task under ``--cache-dir`` so an interrupted run
resumes and new samplers are compared against the cached reference.

Run (the reference costs about 3,000 network evaluations per task: minutes per task on one
core)::

    python benchmarks/ndp_sampler_network.py --n-tasks 16 --prior se --kernel se \\
        --cache-dir ndp_sampler_cache --json ndp_sampler_network.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from _ndp_common import add_runtime_args, apply_runtime_args, write_json
from ndp_interpolation import gp_sampled_metrics, make_tasks, sk_kernel
from sklearn.gaussian_process import GaussianProcessRegressor

from skdiff.diffusion import conditional_sample, n_evaluations, resample_path, strided_levels
from skdiff.diffusion.priors import load_prior
from skdiff.diffusion.samplers import TIERED
from skdiff.ndp import gaussian_log_likelihood

#: The samplers compared: keyword arguments of ``conditional_sample``.
#: ``q``/``c``: quadratic/cubic level spacing, then the number of steps; ``U``: resamples.
SAMPLERS = {
    "ddpm500-U5": dict(n_steps=None, n_resample=5),
    "c32-U4": dict(n_steps=32, n_resample=4, spacing="cubic"),
    "q20-U4": dict(n_steps=20, n_resample=4, spacing="quadratic"),
    "q20-U6": dict(n_steps=20, n_resample=6, spacing="quadratic"),
    "q30-U4": dict(n_steps=30, n_resample=4, spacing="quadratic"),
    "c40-U3": dict(n_steps=40, n_resample=3, spacing="cubic"),
    "q50-U2": dict(n_steps=50, n_resample=2, spacing="quadratic"),
    "q75-U1": dict(n_steps=75, n_resample=1, spacing="quadratic"),
    "q100-U0": dict(n_steps=100, n_resample=0, spacing="quadratic"),
    # tiered: U = 4 on jumps back to levels >= 40, U = 1 below (140 evaluations)
    "c40-U4/1": dict(n_resample=4, **TIERED),
    "c55-U2": dict(n_steps=55, n_resample=2, spacing="cubic"),
    # more repeats on the fast path's 32 cubic levels: on all of them, or U on the jumps back
    # to levels >= 150 (where the coarse structure forms) and fewer below
    "c32-U8": dict(n_steps=32, n_resample=8, spacing="cubic"),
    "c32-U12": dict(n_steps=32, n_resample=12, spacing="cubic"),
    "t150-U12/4": dict(n_steps=32, n_resample=12, spacing="cubic", fine_level=150,
                       n_resample_fine=4),
    "t150-U10/3": dict(n_steps=32, n_resample=10, spacing="cubic", fine_level=150,
                       n_resample_fine=3),
    # fewer levels with more repeats, at about the fast path's cost (127 evaluations)
    "c20-U6": dict(n_steps=20, n_resample=6, spacing="cubic"),
    "c24-U5": dict(n_steps=24, n_resample=5, spacing="cubic"),
    # the same trade up to the paper sampler's 1/20 (150 evaluations): 148, 145 and 139
    "c24-U6": dict(n_steps=24, n_resample=6, spacing="cubic"),
    "c27-U5": dict(n_steps=27, n_resample=5, spacing="cubic"),
    "c26-U5": dict(n_steps=26, n_resample=5, spacing="cubic"),
    # Tweedie correction (NDPRegressor's sampler="tweedie"): the prior's Gaussian
    # approximation given the context (PriorConfig.context_covariance), no repeats; 64 and
    # 32 cubic levels (55 and 29 evaluations)
    "c64-tweedie": dict(n_steps=64, n_resample=0, spacing="cubic", covariance="prior"),
    "c32-tweedie": dict(n_steps=32, n_resample=0, spacing="cubic", covariance="prior"),
}
REFERENCE = "ddpm500-U5"


def sampler_path(schedule, kwargs):
    """The level path ``conditional_sample(**kwargs)`` walks (:func:`resample_path`)."""
    n = kwargs["n_steps"]
    levels = (list(range(schedule.T - 1, -1, -1)) if n is None
              else strided_levels(schedule.T, n, kwargs.get("spacing", "quadratic")))
    return resample_path(levels, kwargs["n_resample"], kwargs.get("jump_length", 1),
                         fine_level=kwargs.get("fine_level", 0),
                         n_resample_fine=kwargs.get("n_resample_fine", 0))


def exact_posterior(task, kernel, n_dims):
    """Mean and covariance of the noisy targets under the task's GP (true hyper-parameters)."""
    Xc, yc, Xt, _ = task
    gp = GaussianProcessRegressor(sk_kernel(kernel, n_dims, True), optimizer=None).fit(Xc, yc)
    return gp.predict(Xt, return_cov=True)


def expected_loglik(samples, mean, cov, jitter=1e-9):
    """E_{y ~ N(mean, cov)} of the moment-matched Gaussian's log density, per point."""
    n = len(mean)
    m = samples.mean(1)
    P = np.cov(samples) + jitter * np.eye(n)
    L = np.linalg.cholesky(P)
    d = np.linalg.solve(L, mean - m)
    tr = np.trace(np.linalg.solve(L, np.linalg.solve(L, cov).T))  # tr(P^-1 cov), P symmetric
    return float(-0.5 * (tr + d @ d + 2 * np.log(np.diag(L)).sum() + n * np.log(2 * np.pi)) / n)


def draw(module, schedule, task, kwargs, n_samples, seed, config=None):
    Xc, yc, Xt, _ = task
    f32 = lambda a: torch.as_tensor(a, dtype=torch.float32)  # noqa: E731
    if kwargs.get("covariance") == "prior":  # the Tweedie correction's covariance
        kwargs = dict(kwargs, covariance=config.context_covariance(
            np.concatenate([Xc, Xt]), np.asarray(yc).ravel()))
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    with torch.no_grad():
        y = conditional_sample(lambda x, y_t, t, mask=None: module(x, y_t, t, mask), schedule,
                               f32(Xc), f32(yc), f32(Xt), n_samples=n_samples, **kwargs)
    return y.squeeze(-1).T.double().numpy(), time.perf_counter() - t0


def paired(a, b):
    d = np.asarray(a) - np.asarray(b)
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tasks", type=int, default=16)
    p.add_argument("--kernel", default="se", choices=["se", "matern52"])
    p.add_argument("--n-dims", type=int, default=1)
    p.add_argument("--prior", default="se", help="registered prior whose weights are loaded")
    p.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=list(SAMPLERS))
    p.add_argument("--n-samples", type=int, default=128)
    p.add_argument("--repeats", type=int, default=1,
                   help="independent runs of each candidate per task (seeds i + 100 r), "
                        "scores averaged per task: less Monte Carlo noise in the differences")
    p.add_argument("--reference", default=REFERENCE, choices=list(SAMPLERS),
                   help="the sampler the others are paired against (default: the paper's)")
    p.add_argument("--seed", type=int, default=0, help="task seed (make_tasks)")
    p.add_argument("--task-ids", type=int, nargs="+", default=None,
                   help="run only these tasks of the --n-tasks set (default: all)")
    p.add_argument("--cache-dir", default=None, help="cache samples here (resumable)")
    add_runtime_args(p)
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    apply_runtime_args(args)
    reference = args.reference
    samplers = [reference] + [s for s in args.samplers if s != reference]
    module, config = load_prior(args.prior, args.n_dims)
    schedule = config.schedule()
    tasks = make_tasks(args.kernel, args.n_dims, args.n_tasks, seed=args.seed)
    ids = range(len(tasks)) if args.task_ids is None else args.task_ids
    cache = Path(args.cache_dir) if args.cache_dir else None
    rows = {name: {"loglik": [], "expected": [], "seconds": []} for name in samplers}
    ceiling = {"loglik": [], "expected": []}
    for i in ids:
        task = tasks[i]
        mean, cov = exact_posterior(task, args.kernel, args.n_dims)
        ll, _, _ = gp_sampled_metrics(GaussianProcessRegressor(
            sk_kernel(args.kernel, args.n_dims, True), optimizer=None), *task,
            n_samples=args.n_samples, seed=i)
        L = np.linalg.cholesky(cov + 1e-9 * np.eye(len(mean)))
        exact = mean[:, None] + L @ np.random.RandomState(i).standard_normal(
            (len(mean), args.n_samples))
        ceiling["loglik"].append(ll)
        ceiling["expected"].append(expected_loglik(exact, mean, cov))
        for name in samplers:
            scores = []
            # the reference runs once, with seeds offset by 1000: its Monte Carlo noise is
            # independent of the candidates'
            for r in range(1 if name == reference else args.repeats):
                seed = i + (1000 if name == reference else 100 * r)
                f = None if cache is None else cache / f"{args.prior}_d{args.n_dims}" / \
                    f"{args.kernel}_seed{args.seed}" / name / \
                    (f"task{i:02d}.npz" if r == 0 else f"task{i:02d}_r{r}.npz")
                if f is not None and f.exists():
                    z = np.load(f)
                    samples, seconds = z["samples"], float(z["seconds"])
                else:
                    samples, seconds = draw(module, schedule, task, SAMPLERS[name],
                                            args.n_samples, seed, config)
                    if f is not None:
                        f.parent.mkdir(parents=True, exist_ok=True)
                        np.savez(f, samples=samples, seconds=seconds)
                scores.append((gaussian_log_likelihood(task[3], samples),
                               expected_loglik(samples, mean, cov), seconds))
            for key, v in zip(("loglik", "expected", "seconds"), np.mean(scores, 0)):
                rows[name][key].append(float(v))
        print(f"task {i:2d} ({len(task[0])} context): " + "  ".join(
            f"{n} {rows[n]['loglik'][-1]:.3f}/{rows[n]['expected'][-1]:.3f}" for n in samplers),
            flush=True)
    ref = rows[reference]
    results = {"ceiling": {k: paired(v, np.zeros(len(v)))[0] for k, v in ceiling.items()}}
    print(f"\n{args.kernel} tasks, D={args.n_dims}, prior {args.prior!r}, {len(ids)} tasks, "
          f"{args.n_samples} samples (loglik / expected: per target point; difference to "
          f"{reference}: paired mean ± s.e.)")
    print(f"{'sampler':12s} {'evals':>6s} {'loglik':>8s} {'diff':>16s} {'expected':>9s} "
          f"{'diff':>16s} {'s/task':>7s}")
    for name in samplers:
        r = rows[name]
        out = {"evaluations": n_evaluations(sampler_path(schedule, SAMPLERS[name])),
               "kwargs": SAMPLERS[name],
               "loglik": float(np.mean(r["loglik"])),
               "loglik_diff": paired(r["loglik"], ref["loglik"]),
               "expected": float(np.mean(r["expected"])),
               "expected_diff": paired(r["expected"], ref["expected"]),
               "seconds_per_task": float(np.mean(r["seconds"])),
               "per_task": r}
        results[name] = out
        print(f"{name:12s} {out['evaluations']:6d} {out['loglik']:8.3f} "
              f"{out['loglik_diff'][0]:+8.3f} ± {out['loglik_diff'][1]:.3f} "
              f"{out['expected']:9.3f} {out['expected_diff'][0]:+8.3f} ± "
              f"{out['expected_diff'][1]:.3f} {out['seconds_per_task']:7.1f}")
    c = results["ceiling"]
    print(f"{'ceiling':12s} {'':6s} {c['loglik']:8.3f} {'':16s} {c['expected']:9.3f}")
    if args.json:
        # the cache folder is a local path: recorded only as whether one was used
        recorded = {**vars(args), "cache_dir": "<cache-dir>" if args.cache_dir else None}
        write_json(args.json, {"args": recorded, "results": results,
                               "ceiling_per_task": ceiling})


if __name__ == "__main__":
    main()
