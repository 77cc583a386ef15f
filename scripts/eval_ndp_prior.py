"""Evaluate a pretrained NDP prior on the paper's 1-D interpolation task (Dutordoir et al. 2023,
§5.1, Table 1): 1-9 context points, 50 targets, x ~ U(-2, 2), GP draws (SE or Matérn-5/2,
lengthscale 0.25, variance 1, noise variance 0.0025). Metric: log-likelihood per target point
of a Gaussian moment-matched to the NDP's joint samples, next to the exact GP with the true
hyper-parameters (the optimum) and to the same metric computed from as many *exact* GP posterior
samples (the ceiling of the metric at that sample size: moment matching a 50-dimensional
Gaussian from 128 samples costs ~0.2 nats per point even for a perfect sampler).

    python scripts/eval_ndp_prior.py --prior se --task se --n-tasks 32

Prints one line per task and a summary (mean +- 1.96 standard errors).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skdiff.datasets._gp import gp_kernel, make_gp_functions  # noqa: E402
from skdiff.diffusion.priors import load_prior  # noqa: E402
from skdiff.diffusion.samplers import conditional_sample  # noqa: E402


def gaussian_ll(y, mean, cov):
    """log N(y | mean, cov) (float64)."""
    L = np.linalg.cholesky(cov)
    z = np.linalg.solve(L, y - mean)
    return -0.5 * z @ z - np.log(np.diag(L)).sum() - 0.5 * len(y) * np.log(2 * np.pi)


def gp_optimum(xc, yc, xt, yt, kernel, ls, noise):
    """Exact GP predictive of the noisy targets, true hyper-parameters."""
    Kcc = gp_kernel(xc, xc, kernel, ls) + noise * np.eye(len(xc))
    Ktc = gp_kernel(xt, xc, kernel, ls)
    Ktt = gp_kernel(xt, xt, kernel, ls) + noise * np.eye(len(xt))
    A = np.linalg.solve(Kcc, Ktc.T)
    mean = A.T @ yc
    cov = Ktt - Ktc @ A
    return gaussian_ll(yt, mean, cov), mean, cov


def moment_matched_ll(samples, yt):
    """The paper's metric: log-likelihood of a Gaussian fitted to the samples [S, M]."""
    cov = np.cov(samples, rowvar=False) + 1e-6 * np.eye(samples.shape[1])
    return gaussian_ll(yt, samples.mean(0), cov), cov


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prior", default="gp")
    p.add_argument("--weights-dir", default=None)
    p.add_argument("--task", default="se", choices=["se", "matern52"])
    p.add_argument("--n-tasks", type=int, default=32)
    p.add_argument("--n-samples", type=int, default=128)
    p.add_argument("--n-steps", type=int, default=20, help="sampler steps (500 = full DDPM)")
    p.add_argument("--n-resample", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)

    module, config = load_prior(args.prior, 1, directory=args.weights_dir, check_config=False)
    schedule = config.schedule()
    noise, ls = 0.0025, 0.25
    rng = np.random.RandomState(args.seed)
    data = make_gp_functions(args.n_tasks, 59, kernel=args.task, lengthscale=ls, noise=noise,
                             random_state=rng)
    n_ctx = rng.randint(1, 10, size=args.n_tasks)
    torch.manual_seed(args.seed)
    lls, gps, oracles, mses, gp_mses, cover = [], [], [], [], [], []
    t0 = time.time()
    for i in range(args.n_tasks):
        c = n_ctx[i]
        x, y = data.X[i], data.y[i]
        xc, yc, xt, yt = x[:c], y[:c], x[c:c + 50], y[c:c + 50]
        with torch.inference_mode():
            s = conditional_sample(
                module, schedule, torch.as_tensor(xc, dtype=torch.float32),
                torch.as_tensor(yc, dtype=torch.float32), torch.as_tensor(xt,
                                                                          dtype=torch.float32),
                n_samples=args.n_samples, n_resample=args.n_resample,
                n_steps=None if args.n_steps >= schedule.T else args.n_steps,
            )[..., 0].double().numpy()  # [S, 50]
        mean = s.mean(0)
        ll, cov = moment_matched_ll(s, yt)
        ll /= 50
        gll, gmean, gcov = gp_optimum(xc, yc, xt, yt, args.task, ls, noise)
        exact = rng.multivariate_normal(gmean, gcov, size=args.n_samples)
        oracles.append(moment_matched_ll(exact, yt)[0] / 50)
        sd = np.sqrt(np.diag(cov))
        lls.append(ll)
        gps.append(gll / 50)
        mses.append(np.mean((mean - yt) ** 2))
        gp_mses.append(np.mean((gmean - yt) ** 2))
        cover.append(np.mean(np.abs(yt - mean) <= 1.96 * sd))
        print(f"task {i:3d} context {c}: NDP ll {ll:7.3f}  GP ll {gll / 50:7.3f}  "
              f"oracle ll {oracles[-1]:7.3f}  mse {mses[-1]:.3f} / {gp_mses[-1]:.3f}  "
              f"cover95 {cover[-1]:.2f}", flush=True)

    def summary(v):
        v = np.asarray(v)
        return f"{v.mean():.3f} +- {1.96 * v.std(ddof=1) / np.sqrt(len(v)):.3f}"

    print(f"\nprior={args.prior} task={args.task} tasks={args.n_tasks} samples={args.n_samples} "
          f"steps={args.n_steps} resample={args.n_resample} ({time.time() - t0:.0f}s)")
    print(f"NDP  ll/point {summary(lls)}  mse {summary(mses)}  95% coverage "
          f"{np.mean(cover):.3f}")
    print(f"GP   ll/point {summary(gps)}  mse {summary(gp_mses)}  (true hyper-parameters)")
    print(f"GP-sampled ll/point {summary(oracles)}  (moment-matched to {args.n_samples} exact "
          "posterior samples: the ceiling of the metric)")
    print(f"NDP median ll/point {np.median(lls):.3f}")


if __name__ == "__main__":
    main()
