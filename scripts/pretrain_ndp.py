"""Pretrain an NDP prior and write its weights + manifest to skdiff/weights.

Usage (the commands behind the shipped weights are recorded in docs/ndp_pretraining.md and in
each manifest)::

    python scripts/pretrain_ndp.py --prior gp --n-dims 1 --steps 8000 --seed 0

The EMA weights are written after every epoch (``"complete": false`` in the manifest until the
last one), so an interrupted run still leaves a usable, clearly labelled checkpoint.
"""

from __future__ import annotations

import argparse
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
    """Write the current EMA weights and the loss curve after every epoch."""

    def __init__(self, name, config, directory, record, total_epochs):
        self.name, self.config, self.directory = name, config, directory
        self.record, self.total_epochs = record, total_epochs
        self.t0 = time.time()

    def on_epoch_end(self, net, **kwargs):
        ema = dict(net.callbacks_)["ema"]
        epoch = len(net.history)
        curve = [round(float(v), 5) for v in net.history[:, "train_loss"]]
        save_prior(
            self.name, self.config, ema.state_dict(), directory=self.directory,
            steps=ema.n_updates_, epochs=epoch, complete=epoch == self.total_epochs,
            final_loss=curve[-1], curve_per_epoch=curve,
            train_seconds=round(time.time() - self.t0, 1), **self.record,
        )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prior", default="gp")
    p.add_argument("--n-dims", type=int, default=1)
    p.add_argument("--steps", type=int, default=8000)
    p.add_argument("--steps-per-epoch", type=int, default=250)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=str(ROOT / "skdiff" / "weights"))
    p.add_argument("--verbose", type=int, default=1)
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    config = get_prior_config(args.prior, args.n_dims)
    epochs = max(1, args.steps // args.steps_per_epoch)
    record = {
        "command": "python scripts/pretrain_ndp.py " + " ".join(
            shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
        "seed": args.seed,
        "steps_per_epoch": args.steps_per_epoch,
        "torch": torch.__version__,
        "threads": args.threads,
    }
    print(f"prior={args.prior} n_dims={args.n_dims} steps={epochs * args.steps_per_epoch} "
          f"config={config}", flush=True)
    saver = SaveEveryEpoch(args.prior, config, args.out, record, epochs)
    t0 = time.time()
    _, _, history = train_prior(
        config, max_epochs=epochs, steps_per_epoch=args.steps_per_epoch,
        random_state=args.seed, verbose=args.verbose, callbacks=[("save", saver)],
    )
    losses = np.asarray(history[:, "train_loss"])
    print(f"done in {time.time() - t0:.0f}s; loss first/last epoch {losses[0]:.4f} / "
          f"{losses[-1]:.4f}", flush=True)


if __name__ == "__main__":
    main()
