"""Bayesian optimisation where the prior knows the family: an NDP prior trained on related
objectives against GPR and the generic ``gp`` prior.

The family: Forrester-type functions on [0, 1] (the multi-fidelity family of Forrester et
al., 2008, with random parameters),
``f(x) = A (6 (x - s) - 2)^2 sin(12 (x - s) - 4) + B (x - 0.5) + C`` with ``A ~ U(0.5, 1.5)``,
``B ~ U(-5, 5)``, ``C ~ U(-3, 3)`` and ``s ~ U(-0.1, 0.1)``: a narrow global dip near
``x = 0.76 + s``, a local one near ``0.14 + s``, a tilt and an offset.

1. ``--n-train`` members, 64 uniform points each, train a prior
   (:func:`skdiff.diffusion.train_prior` with ``functions``; ``--steps`` steps, one torch
   thread; checkpointed in ``--work-dir``, so a rerun reuses or resumes it).
2. ``--n-seeds`` *new* members (parameters drawn from a separate seed) are minimised by
   Thompson sampling (:func:`skdiff.bayes_opt.thompson_sampling`: 3 uniform random points,
   then ``--n-iter`` evaluations, each where one joint posterior sample on 64 fresh uniform
   candidates is lowest) with four models: the family prior
   (``NDPRegressor(prior=<the trained prior>)``), the shipped ``gp`` prior
   (``NDPRegressor(x_bounds=[(0, 1)], alpha=0)``), ``GaussianProcessRegressor``
   (Matérn-5/2 refitted by ML-II every iteration) and random search; with ``--local``
   also the first three with half the candidates drawn around the best point so far
   (``local_fraction=0.5``), as ``<method>_local``. The ``gp`` prior ranks by a draw
   denoised from 8 joint samples (``thompson_sampling(denoise="auto")``), or by one sample
   with ``--no-denoise`` (the function's default, as for the family prior). ``--sampler``
   sets both NDPs' sampler, but for ``tweedie`` (thompson_sampling's default model), which
   needs a kernel: the family prior then keeps its own default.

Printed: the simple regret (best value so far minus the member's minimum on a 4001-point
grid) against iterations, mean ± standard error over the members; with ``--json``, every
run's regret after each evaluation and the seconds per run.

Run::

    python benchmarks/bayes_opt_family.py --work-dir /tmp/bo_family --json bo_family.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from _ndp_common import (
    add_runtime_args,
    add_sampler_arg,
    apply_runtime_args,
    bo_gpr,
    print_regrets,
    run_thompson,
    write_json,
)

from skdiff import NDPRegressor
from skdiff.diffusion import PriorConfig, save_prior, train_prior

BOUNDS = [(0.0, 1.0)]
GRID = np.linspace(0.0, 1.0, 4001)[:, None]


def draw_members(n, seed):
    """Parameters (A, B, C, s) of ``n`` family members, shape (n, 4)."""
    rng = np.random.RandomState(seed)
    return np.column_stack([rng.uniform(0.5, 1.5, n), rng.uniform(-5, 5, n),
                            rng.uniform(-3, 3, n), rng.uniform(-0.1, 0.1, n)])


def member(params):
    """The objective ``X (n, 1) -> (n,)`` of one member."""
    a, b, c, s = params

    def f(X):
        x = np.asarray(X, dtype=np.float64)[:, 0]
        u = x - s
        return a * (6 * u - 2) ** 2 * np.sin(12 * u - 4) + b * (x - 0.5) + c

    return f


def get_prior(args, work):
    """Train (or resume, or reuse) the family prior; returns its weights path and record."""
    rng = np.random.RandomState([args.seed, 1])  # the inputs' own stream, apart from the members'
    functions = []
    for params in draw_members(args.n_train, args.seed):
        x = rng.uniform(0.0, 1.0, 64)
        functions.append((x, member(params)(x[:, None])))
    config = PriorConfig(hidden_dim=64, n_layers=4, n_heads=8, batch_size=32,
                         n_points=(12, 64), warmup_steps=250).for_functions(
        functions, x_bounds=BOUNDS)
    steps_per_epoch = 250
    epochs = -(-args.steps // steps_per_epoch)
    name = f"forrester_family_s{epochs * steps_per_epoch}"
    weights = work / f"{name}_d1.pt"  # save_prior's name for a 1-D prior
    t0, c0 = time.perf_counter(), time.process_time()
    if weights.exists():  # trained by an earlier run: its manifest holds the final loss
        manifest = json.loads(weights.with_suffix(".json").read_text())
        record = {"name": name, "steps": manifest["steps"], "reused": True,
                  "final_loss": manifest["final_loss"], "created": manifest["created"]}
    else:
        _, ema, history = train_prior(
            config, functions=functions, max_epochs=epochs, steps_per_epoch=steps_per_epoch,
            random_state=args.seed, checkpoint=work / f"{name}.ckpt", checkpoint_every=60,
            resume=True, verbose=1)
        final = float(history[-1, "train_loss"])
        save_prior(name, config, ema, directory=work, steps=epochs * steps_per_epoch,
                   final_loss=final, seed=args.seed)
        record = {"name": name, "steps": epochs * steps_per_epoch, "final_loss": final}
    record.update(n_train_functions=args.n_train, train_seconds_this_run=round(
        time.perf_counter() - t0, 1), train_cpu_seconds_this_run=round(
        time.process_time() - c0, 1), config=config.to_dict())
    return str(weights), record


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work-dir", type=Path, required=True,
                   help="folder of the family prior's checkpoint and weights")
    p.add_argument("--n-train", type=int, default=2000)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-seeds", type=int, default=20)
    p.add_argument("--n-iter", type=int, default=15)
    p.add_argument("--n-candidates", type=int, default=64)
    p.add_argument("--local", action="store_true",
                   help="also run every model but random search with half the candidates "
                        "around the best point so far (local_fraction=0.5), as "
                        "'<method>_local'")
    p.add_argument("--no-denoise", action="store_true",
                   help="the gp prior ranks the candidates by one joint sample "
                        "(thompson_sampling's default, denoise=False) instead of a draw "
                        "denoised from 8 (denoise='auto')")
    add_sampler_arg(p)
    add_runtime_args(p)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    apply_runtime_args(args)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    prior, record = get_prior(args, args.work_dir)
    print(f"prior: {record['name']} ({record['train_seconds_this_run']} s)", flush=True)
    members = draw_members(args.n_seeds, args.seed + 10_000)  # never seen in training
    objectives = [(member(m), member(m)(GRID).min()) for m in members]
    models = {"random": lambda: "random", "gpr": lambda: bo_gpr(BOUNDS),
              "ndp": (lambda: NDPRegressor(x_bounds=BOUNDS, alpha=0.0, n_samples=2,
                                           sampler=args.sampler),
                      {"denoise": False if args.no_denoise else "auto"}),
              # the Tweedie correction needs a kernel, which a family prior has not: with
              # --sampler tweedie it keeps its own default
              "ndp_family": lambda: NDPRegressor(
                  prior=prior, n_samples=2,
                  sampler="auto" if args.sampler == "tweedie" else args.sampler)}
    if args.local:
        for name in ("gpr", "ndp", "ndp_family"):
            make, options = models[name] if isinstance(models[name], tuple) else \
                (models[name], {})
            models[f"{name}_local"] = (make, {**options, "local_fraction": 0.5})
    regrets, seconds, cpu_seconds = run_thompson(models, objectives, BOUNDS, args.n_iter,
                                                 args.n_candidates)
    print_regrets(regrets, [m for m in (0, 1, 2, 3, 5, 10, 15, 20, 30) if m <= args.n_iter])
    if args.json:
        args_out = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        args_out.pop("work_dir")
        write_json(args.json, {"args": args_out, "n_init": 3, "prior": record,
                               "seconds_per_run": seconds, "cpu_seconds_per_run": cpu_seconds,
                               "regret": {k: v.tolist() for k, v in regrets.items()}})


if __name__ == "__main__":
    main()
