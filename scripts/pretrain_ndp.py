"""Pretrain an NDP prior, resumably, and export its weights + manifest.

A run lives in a folder (``--run-dir``): ``checkpoint.pt`` holds everything a bit-for-bit
resume needs (weights, EMA, optimiser, learning-rate position, data-stream counter, history)
and is rewritten atomically every ``--checkpoint-every`` seconds; ``weights/`` holds the EMA
weights and manifest exported at every checkpoint (``"complete": false`` until the last
step). Kill the process at any time and continue with the same command plus ``--resume``::

    python scripts/pretrain_ndp.py --prior se --n-dims 1 --steps 20000 --run-dir runs/se_d1
    python scripts/pretrain_ndp.py --prior se --n-dims 1 --steps 20000 --run-dir runs/se_d1 \\
        --resume

``--max-seconds S`` ends the process at the first epoch end after S seconds, checkpoint and
weights written: a borrowed GPU trains as far as its time allows, in one command, e.g.
``python scripts/pretrain_ndp.py --prior gp --n-dims 1 --steps 20000 --device cuda
--run-dir runs/gp_d1 --resume --max-seconds 480``, and the run continues from the same folder
on any device (bit for bit on the same device and torch build).

``--install`` copies the exported weights into ``skdiff/weights`` when the run completes.
One network can serve several input dimensions (``--n-dims 2 3`` trains on batches of both
and exports one file per D): the noise model is invariant to the number of dimensions.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import relative_path  # noqa: E402

from skdiff.diffusion.priors import get_prior_config, save_prior, weights_dir  # noqa: E402
from skdiff.diffusion.training import train_prior  # noqa: E402


def _relative(path):
    """A path as the manifest records it: relative to the repository when inside it."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return path.name


def _init_module(config, init_from, record):
    """The network to start from (``--init-from`` weights written by this script)."""
    if not init_from:
        return None
    init = Path(init_from)
    state = torch.load(init, map_location="cpu", weights_only=True)
    module = config.network()
    module.load_state_dict({k: v.float() for k, v in state.items()})
    record["init_from"] = _relative(init)
    manifest = init.with_suffix(".json")
    if manifest.exists():
        m = json.loads(manifest.read_text())
        record["init_from_sha256"] = m.get("sha256")
        record["init_from_steps"] = m.get("total_steps", m.get("steps"))
    return module


def _without_session_flags(argv):
    """The arguments that define the run (the manifest's command): without ``--resume`` and
    ``--max-seconds``, which only say how this process takes part in it."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--max-seconds":
            skip = True
        elif a != "--resume" and not a.startswith("--max-seconds="):
            out.append(a)
    return out


def _command(argv):
    """The manifest's command: the run-defining arguments (:func:`_without_session_flags`),
    absolute paths relative to the repository or ``PATH`` outside it (the benchmarks' rule:
    machine paths are not recorded)."""
    return "python scripts/pretrain_ndp.py " + " ".join(
        shlex.quote(relative_path(a)) for a in _without_session_flags(argv))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prior", default="gp")
    p.add_argument("--n-dims", type=int, nargs="+", default=[1],
                   help="one D, or several: one network trained on batches of each D")
    p.add_argument("--steps", type=int, default=8000)
    p.add_argument("--steps-per-epoch", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--run-dir", required=True, help="folder of the run's checkpoint and exports")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
    p.add_argument("--checkpoint-every", type=float, default=300.0, help="seconds")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="end this process at the first epoch end after that many seconds, "
                        "checkpoint written (continue later with --resume)")
    p.add_argument("--milestone-every", type=int, default=5000,
                   help="also keep the exports of every this many steps in weights/step_<N>")
    p.add_argument("--install", action="store_true",
                   help="copy the final weights into skdiff/weights when the run completes")
    p.add_argument("--verbose", type=int, default=1)
    p.add_argument("--lr", type=float, default=None, help="peak learning rate")
    p.add_argument("--warmup-steps", type=int, default=None)
    p.add_argument("--noise", type=float, default=None,
                   help="observation-noise variance of the training functions (default: the "
                        "prior's, 0.0025), e.g. 1e-4 for a prior of nearly noiseless "
                        "objectives")
    p.add_argument("--anisotropic", action="store_true",
                   help="draw each input dimension's lengthscale independently (an ARD "
                        "kernel) instead of one per function; the weights then differ from "
                        "the registered prior's configuration and load by their path, "
                        "NDPRegressor(prior='RUN_DIR/weights/gp_d2.pt')")
    p.add_argument("--init-from", default=None,
                   help="start from these weights (a .pt written by this script), e.g. to "
                        "fine-tune a D=1 prior for D=2: the network is dimension-agnostic")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    changes = {k: v for k, v in (("lr", args.lr), ("warmup_steps", args.warmup_steps),
                                 ("noise", args.noise)) if v is not None}
    if args.anisotropic:
        if args.install:
            p.error("--install replaces a registered prior, whose configuration is isotropic; "
                    "an --anisotropic run's weights load by their path instead")
        changes["anisotropic"] = True
    configs = [get_prior_config(args.prior, d).replace(**changes) for d in args.n_dims]
    config = configs[0]
    run_dir = Path(args.run_dir)
    export_dir = run_dir / "weights"
    epochs = max(1, args.steps // args.steps_per_epoch)
    record = {
        "command": _command(argv if argv is not None else sys.argv[1:]),
        "seed": args.seed,
        "steps_per_epoch": args.steps_per_epoch,
        "torch": torch.__version__,
        "threads": args.threads,
        "device": args.device,
    }
    module = _init_module(config, args.init_from, record)
    if len(configs) > 1:
        record["trained_dims"] = list(args.n_dims)
    base_steps = record.get("init_from_steps") or 0
    t0 = time.time()

    def export(net):
        ema = dict(net.callbacks_)["ema"]
        done = len(net.history)
        curve = [round(float(v), 5) for v in net.history[:, "train_loss"]]
        milestone = ema.n_updates_ // args.milestone_every * args.milestone_every
        for c in configs:
            info = dict(steps=ema.n_updates_, total_steps=base_steps + ema.n_updates_,
                        epochs=done, planned_epochs=epochs, complete=done >= epochs,
                        final_loss=curve[-1], curve_per_epoch=curve, **record)
            save_prior(args.prior, c, ema.state_dict(), directory=export_dir, **info)
            kept = export_dir / f"step_{milestone}" / f"{args.prior}_d{c.n_dims}.pt"
            if milestone and not kept.exists():
                save_prior(args.prior, c, ema.state_dict(), directory=kept.parent, **info)
        print(f"[{time.strftime('%H:%M:%S')}] checkpoint at step {ema.n_updates_} "
              f"({time.time() - t0:.0f} s this process), loss {curve[-1]:.4f}", flush=True)

    print(f"prior={args.prior} n_dims={args.n_dims} steps={epochs * args.steps_per_epoch} "
          f"resume={args.resume} config={config}", flush=True)
    _, _, history = train_prior(
        configs, max_epochs=epochs, steps_per_epoch=args.steps_per_epoch,
        random_state=args.seed, verbose=args.verbose, module=module, device=args.device,
        checkpoint=run_dir / "checkpoint.pt", checkpoint_every=args.checkpoint_every,
        resume=args.resume, on_checkpoint=export, max_seconds=args.max_seconds,
    )
    losses = np.asarray(history[:, "train_loss"])
    if len(history) < epochs:
        print(f"stopped after --max-seconds at epoch {len(history)} of {epochs}; continue with "
              "the same command and --resume", flush=True)
        return
    print(f"done; loss first/last epoch {losses[0]:.4f} / {losses[-1]:.4f}", flush=True)
    if args.install:
        for d in args.n_dims:
            for ext in (".pt", ".json"):
                src = export_dir / f"{args.prior}_d{d}{ext}"
                shutil.copyfile(src, weights_dir() / src.name)
        print(f"installed into {_relative(weights_dir())}", flush=True)


if __name__ == "__main__":
    main()
