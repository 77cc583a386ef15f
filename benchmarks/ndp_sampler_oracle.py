"""Bias of the conditional samplers with an oracle noise model (no training involved).

For GP data y_0 ~ N(0, K), the exact noise prediction is E[eps | y_t] = s (a^2 K + s^2 I)^-1 y_t.
With it every step of ``conditional_sample`` is linear-Gaussian, so the exact distribution of
its output is propagated in closed form (no Monte Carlo) and compared with the exact GP
posterior on tasks as those of ``ndp_interpolation.py`` (SE, lengthscale 0.25, noise 0.0025,
50 targets on U(-2, 2)), official 500-level schedule. Every function is conditioned on each of
``--context-sizes`` (its first 1, 5, 9 points by default), so the sizes are compared on the same
functions. Two KL divergences per target point, averaged over the functions, per context size:

``KL(s||p)``
    of the sampler's output from the exact posterior (the sampler's own error);
``KL(p||s)``
    of the exact posterior from the sampler's output: the expected shortfall of the paper's
    metric (joint log-likelihood of held-out targets) with infinitely many samples.

The oracle isolates the discretisation and RePaint bias; errors of a trained network interact
with the step sizes differently (``ndp_sampler_network.py`` measures that).

Run (about a minute)::

    python benchmarks/ndp_sampler_oracle.py [--n-tasks 16] [--context-sizes 1 5 9] \
        [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from _ndp_common import write_json
from ndp_interpolation import NOISE
from ndp_sampler_network import SAMPLERS, sampler_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test oracle lives in tests/

from skdiff.datasets import make_gp_functions  # noqa: E402
from skdiff.diffusion import NoiseSchedule, n_evaluations  # noqa: E402
from tests.diffusion.oracle import gp_posterior, kl_per_point, sampler_moments  # noqa: E402

#: The samplers of ``ndp_sampler_network.py`` and a few variants only the oracle measures
#: (keyword arguments of ``conditional_sample``).
CONFIGS = {**SAMPLERS,
           "ddpm500-U0": dict(n_steps=None, n_resample=0),
           "u20-U4": dict(n_steps=20, n_resample=4, spacing="uniform"),
           "c32-U4 jump 2": dict(SAMPLERS["c32-U4"], jump_length=2),
           "q50-U2 jump 3": dict(SAMPLERS["q50-U2"], jump_length=3),
           "q30-U4 eta 0.5": dict(SAMPLERS["q30-U4"], eta=0.5),
           "q30-U4 DDIM eta 0": dict(SAMPLERS["q30-U4"], eta=0.0)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tasks", type=int, default=16, help="functions per context size")
    p.add_argument("--context-sizes", type=int, nargs="+", default=[1, 5, 9])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    schedule = NoiseSchedule.official()
    sizes, n_targets = sorted(args.context_sizes), 50
    data = make_gp_functions(args.n_tasks, sizes[-1] + n_targets, 1, kernel="se",
                             lengthscale=0.25, noise=NOISE, random_state=args.seed)
    tasks = {c: [] for c in sizes}  # per size: (K, C, y_ctx, exact mean, exact covariance)
    for X, y in zip(data.X, data.y):
        for c in sizes:
            # context: the function's first c points; targets: the same 50 for every size
            x = np.concatenate([X[:c, 0], X[sizes[-1]:, 0]])
            K = np.exp(-0.5 * (x[:, None] - x[None]) ** 2 / 0.25**2) + NOISE * np.eye(len(x))
            tasks[c].append((K, c, y[:c], *gp_posterior(K, c, y[:c])))
    print(f"KL(s||p) / KL(p||s) per target point, mean over {args.n_tasks} functions, "
          f"by context size")
    print(f"{'sampler':22s} {'evals':>6s} " + "".join(f"{f'{c} context':>17s}" for c in sizes))
    rows = []
    for name, kw in CONFIGS.items():
        path = sampler_path(schedule, kw)
        eta = kw.get("eta", 1.0)
        # kl[size, task] = (KL(sampler || exact), KL(exact || sampler))
        kl = np.array([[(kl_per_point(m, P, mu, Sig), kl_per_point(mu, Sig, m, P))
                        for K, C, yc, mu, Sig in tasks[c]
                        for m, P in [sampler_moments(schedule, K, C, yc, path, eta,
                                                     tweedie="covariance" in kw)]]
                       for c in sizes])
        rows.append({"sampler": name, "evaluations": n_evaluations(path), "kwargs": kw,
                     "kl_per_point": kl[:, :, 0].mean(1).tolist(),
                     "kl_exact_sampler": kl[:, :, 1].mean(1).tolist()})
        r = rows[-1]
        print(f"{name:22s} {r['evaluations']:6d} " + "".join(
            f"{a:8.4f} /{b:7.4f}" for a, b in zip(r["kl_per_point"], r["kl_exact_sampler"])),
            flush=True)
    if args.json:
        write_json(args.json, {"args": vars(args), "context_sizes": sizes, "rows": rows})


if __name__ == "__main__":
    main()
