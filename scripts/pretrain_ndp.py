"""Pretrain an NDP prior and write its weights + manifest to skdiff/weights.

Usage (the commands behind the shipped weights are recorded in docs/ndp_pretraining.md and in
each manifest)::

    python scripts/pretrain_ndp.py --prior gp --n-dims 1 --steps 8000 --seed 0

The EMA weights are written after every epoch (``"complete": false`` in the manifest until the
last one), so an interrupted run still leaves a usable, clearly labelled checkpoint.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch
from skorch.callbacks import Callback

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skdiff.diffusion.priors import get_prior_config, save_prior  # noqa: E402
from skdiff.diffusion.training import train_prior  # noqa: E402


class SaveEveryEpoch(Callback):
    """Write the current EMA weights and the loss curve after every epoch (one file per
    configuration: a network trained on several D is written once per D)."""

    def __init__(self, name, configs, directory, record, total_epochs):
        self.name, self.configs, self.directory = name, configs, directory
        self.record, self.total_epochs = record, total_epochs
        self.t0 = time.time()

    def on_epoch_end(self, net, **kwargs):
        ema = dict(net.callbacks_)["ema"]
        epoch = len(net.history)
        curve = [round(float(v), 5) for v in net.history[:, "train_loss"]]
        for config in self.configs:
            save_prior(
                self.name, config, ema.state_dict(), directory=self.directory,
                steps=ema.n_updates_, epochs=epoch, complete=epoch == self.total_epochs,
                final_loss=curve[-1], curve_per_epoch=curve,
                train_seconds=round(time.time() - self.t0, 1), **self.record,
            )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prior", default="gp")
    p.add_argument("--n-dims", type=int, nargs="+", default=[1],
                   help="one D, or several: one network trained on batches of each D")
    p.add_argument("--steps", type=int, default=8000)
    p.add_argument("--steps-per-epoch", type=int, default=250)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=str(ROOT / "skdiff" / "weights"))
    p.add_argument("--verbose", type=int, default=1)
    p.add_argument("--lr", type=float, default=None, help="peak learning rate")
    p.add_argument("--warmup-steps", type=int, default=None)
    p.add_argument("--init-from", default=None,
                   help="start from these weights (a .pt written by this script), e.g. to "
                        "fine-tune a D=1 prior for D=2: the network is dimension-agnostic")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    changes = {k: v for k, v in (("lr", args.lr), ("warmup_steps", args.warmup_steps))
               if v is not None}
    configs = [get_prior_config(args.prior, d).replace(**changes) for d in args.n_dims]
    config = configs[0]
    module = None
    if args.init_from:
        state = torch.load(args.init_from, map_location="cpu", weights_only=True)
        module = config.network()
        module.load_state_dict({k: v.float() for k, v in state.items()})
    epochs = max(1, args.steps // args.steps_per_epoch)
    record = {
        "command": "python scripts/pretrain_ndp.py " + " ".join(
            shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
        "seed": args.seed,
        "steps_per_epoch": args.steps_per_epoch,
        "torch": torch.__version__,
        "threads": args.threads,
    }
    if args.init_from:
        init = Path(args.init_from)
        record["init_from"] = init.name
        init_manifest = init.with_suffix(".json")
        if init_manifest.exists():
            m = json.loads(init_manifest.read_text())
            record["init_from_sha256"] = m.get("sha256")
            record["init_from_steps"] = m.get("steps")
    if len(configs) > 1:
        record["trained_dims"] = list(args.n_dims)
    print(f"prior={args.prior} n_dims={args.n_dims} steps={epochs * args.steps_per_epoch} "
          f"config={config}", flush=True)
    saver = SaveEveryEpoch(args.prior, configs, args.out, record, epochs)
    t0 = time.time()
    _, _, history = train_prior(
        configs, max_epochs=epochs, steps_per_epoch=args.steps_per_epoch,
        random_state=args.seed, verbose=args.verbose, callbacks=[("save", saver)],
        module=module,
    )
    losses = np.asarray(history[:, "train_loss"])
    print(f"done in {time.time() - t0:.0f}s; loss first/last epoch {losses[0]:.4f} / "
          f"{losses[-1]:.4f}", flush=True)


if __name__ == "__main__":
    main()
