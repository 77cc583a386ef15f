"""Command-line plumbing shared by the NDP benchmark scripts."""

import torch


def add_runtime_args(parser):
    """Add ``--threads`` to an argparse parser (``--prior`` takes a name or a weights path)."""
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")


def apply_runtime_args(args):
    """Set the torch thread count."""
    if args.threads:
        torch.set_num_threads(args.threads)
