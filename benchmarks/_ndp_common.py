"""Command-line plumbing shared by the NDP benchmark scripts.

Every script writes its JSON through :func:`write_json`, which adds the three top-level fields
the docs' ``benchmark`` directive renders beside the table: ``command`` (the command line,
paths relative to the repository root), ``date`` (ISO 8601, UTC) and ``environment`` (CPU
model, core count, torch version and threads, and the machine's load average at the start and
the end of the run: a figure measured on cores shared with other jobs says so).
"""

import datetime
import json
import os
import platform
import shlex
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
_LOAD_AT_START = os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def add_runtime_args(parser):
    """Add ``--threads`` to an argparse parser (``--prior`` takes a name or a weights path)."""
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")


def apply_runtime_args(args):
    """Set the torch thread count."""
    if args.threads:
        torch.set_num_threads(args.threads)


def _relative(arg):
    """A path argument relative to the repository root; paths outside it become ``PATH``."""
    if not os.path.isabs(arg):
        return arg
    try:
        return str(Path(arg).resolve().relative_to(ROOT))
    except ValueError:
        return "PATH"


def command_line():
    """This process's command line as run from the repository root, without machine paths."""
    script = _relative(os.path.abspath(sys.argv[0]))
    flags = "".join(f"{k}={os.environ[k]} " for k in ("OMP_NUM_THREADS",) if k in os.environ)
    return f"{flags}python {script} " + shlex.join(_relative(a) for a in sys.argv[1:])


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment():
    """The machine the figures were measured on, with how busy it was during the run."""
    cores = os.cpu_count()
    threads = torch.get_num_threads()
    env = {"device": "cpu", "device_name": _cpu_name(), "cores": cores,
           "torch": torch.__version__, "threads": threads,
           "python": platform.python_version()}
    if _LOAD_AT_START is not None:
        load = (round(_LOAD_AT_START, 2), round(os.getloadavg()[0], 2))
        env["load_average"] = load
        # a load above the threads this run used means other processes held cores meanwhile
        busy = max(load) > threads + 0.5
        env["note"] = (f"{cores}-core CPU {'shared with other jobs' if busy else 'otherwise idle'}"
                       f": 1-minute load average {load[0]:.1f} at the start, {load[1]:.1f} "
                       "at the end")
    return env


def write_json(path, payload):
    """Write ``payload`` with ``command``, ``date`` and ``environment`` first."""
    doc = {"command": command_line(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "environment": environment(), **payload}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"written to {path}")
