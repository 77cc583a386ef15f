"""Command-line plumbing shared by the NDP benchmark scripts (torch threads, a weights snapshot)."""

from pathlib import Path

import torch


def add_runtime_args(parser):
    """Add ``--threads`` and ``--weights-dir`` to an argparse parser."""
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    parser.add_argument("--weights-dir", default=None,
                        help="load priors from this directory (a snapshot), not skdiff/weights")


def apply_runtime_args(args):
    """Point the prior registry at ``--weights-dir`` and set the torch thread count."""
    if args.weights_dir:
        import skdiff.diffusion.priors as priors

        priors.weights_dir = lambda: Path(args.weights_dir)
    if args.threads:
        torch.set_num_threads(args.threads)
