"""Bias of the conditional samplers with an oracle noise model (no training involved).

For GP data y_0 ~ N(0, K), the exact noise prediction is E[eps | y_t] = s (a^2 K + s^2 I)^-1 y_t.
With it every step of ``conditional_sample`` is linear-Gaussian, so the exact distribution of
its output is propagated in closed form (no Monte Carlo) and compared with the exact GP
posterior on the tasks of ``ndp_interpolation.py`` (SE, lengthscale 0.25, noise 0.0025, 1-9
context points, 50 targets on U(-2, 2)), official 500-level schedule. Two KL divergences per
target point, averaged over tasks:

``KL(s||p)``
    of the sampler's output from the exact posterior (the sampler's own error);
``KL(p||s)``
    of the exact posterior from the sampler's output: the expected shortfall of the paper's
    metric (joint log-likelihood of held-out targets) with infinitely many samples.

The oracle isolates the discretisation and RePaint bias; errors of a trained network interact
with the step sizes differently (``ndp_sampler_network.py`` measures that).

Run (about a minute)::

    python benchmarks/ndp_sampler_oracle.py [--n-tasks 16] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from ndp_interpolation import NOISE, make_tasks
from ndp_sampler_network import SAMPLERS, sampler_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test oracle lives in tests/

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
    p.add_argument("--n-tasks", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    schedule = NoiseSchedule.official()
    tasks = []
    for Xc, yc, Xt, _ in make_tasks("se", 1, args.n_tasks, seed=args.seed):
        x = np.concatenate([Xc[:, 0], Xt[:, 0]])
        K = np.exp(-0.5 * (x[:, None] - x[None]) ** 2 / 0.25**2) + NOISE * np.eye(len(x))
        tasks.append((K, len(Xc), yc, *gp_posterior(K, len(Xc), yc)))
    print(f"{'sampler':22s} {'evals':>6s} {'KL(s||p)':>9s} {'KL(p||s)':>9s}   per target point, "
          f"mean over {len(tasks)} tasks")
    results = {}
    for name, kw in CONFIGS.items():
        path = sampler_path(schedule, kw)
        eta = kw.get("eta", 1.0)
        kl = np.array([(kl_per_point(m, P, mu, Sig), kl_per_point(mu, Sig, m, P))
                       for K, C, yc, mu, Sig in tasks
                       for m, P in [sampler_moments(schedule, K, C, yc, path, eta)]])
        results[name] = {"evaluations": n_evaluations(path), "kwargs": kw,
                         "kl_sampler_exact": kl[:, 0].mean(),
                         "kl_exact_sampler": kl[:, 1].mean()}
        r = results[name]
        print(f"{name:22s} {r['evaluations']:6d} {r['kl_sampler_exact']:9.4f} "
              f"{r['kl_exact_sampler']:9.4f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
