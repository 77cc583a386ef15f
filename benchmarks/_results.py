"""The header every benchmark results file carries, and how the file is written.

The docs' ``benchmark`` directive (``docs/_ext/skdiff_benchmarks.py``) renders, beside each
table, three top-level fields of the results file: ``command`` (the command line that wrote
it), ``date`` (ISO 8601, UTC) and ``environment`` (``device_name``, ``torch``, ``threads``,
...), and ``complete``: false while the script still runs (it rewrites its file after every
result, so a stopped run leaves what it measured), true once it has finished.
:func:`header` builds them; :func:`write_json` writes a results file atomically so that
an interrupted run never leaves half a file for the docs build to read.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import sys
from pathlib import Path

import torch

#: The placeholder recorded instead of a ``--data-home`` value (a machine path).
DATA_HOME = "$SKDIFF_DATA"
#: The repository root: path arguments inside it are recorded relative to it.
ROOT = Path(__file__).resolve().parents[1]
#: The 1-minute load average when the benchmark process started.
_LOAD_AT_START = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def relative_path(arg):
    """A path argument relative to the repository root; other absolute paths become
    ``PATH`` (machine paths are not recorded). An ``--option=/abs/path`` argument keeps its
    option and has its value mapped the same way."""
    if arg.startswith("-") and "=" in arg:
        option, value = arg.split("=", 1)
        return f"{option}={relative_path(value)}"
    if not os.path.isabs(arg):
        return arg
    try:
        return str(Path(arg).resolve().relative_to(ROOT))
    except ValueError:
        return "PATH"


def command(script, argv=None):
    """The command line ``python benchmarks/<script> ...``, without machine paths.

    A ``--data-home`` value is recorded as ``$SKDIFF_DATA``, the environment variable the
    library's loaders read when no folder is passed; other absolute paths are recorded
    relative to the repository, or as ``PATH`` outside it. A set ``OMP_NUM_THREADS`` is
    recorded in front, as it was run.

    Parameters
    ----------
    script : str
        The script's file name, e.g. ``"cora.py"``.
    argv : list of str, default=None
        The arguments; ``None``: ``sys.argv[1:]``.

    Returns
    -------
    str
        The command line, shell-quoted.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    out, data_home_next = [], False
    for a in argv:
        if data_home_next:
            a, data_home_next = DATA_HOME, False
        elif a == "--data-home":
            data_home_next = True
        elif a.startswith("--data-home="):
            a = f"--data-home={DATA_HOME}"
        else:
            a = relative_path(a)
        out.append(a)
    # shlex.join would quote the placeholder; it is left bare so that a shell expands it
    quoted = [a if a.endswith(DATA_HOME) else shlex.quote(a) for a in out]
    flags = [f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}"] \
        if "OMP_NUM_THREADS" in os.environ else []
    return " ".join([*flags, "python", f"benchmarks/{script}", *quoted])


def _cpu_name():
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else the architecture."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(threads, device="cpu", note=None):
    """What ran the benchmark: device name, torch version, threads, CPU count and load.

    Parameters
    ----------
    threads : int
        The torch threads the measurement used.
    device : str, default="cpu"
        The torch device; a CUDA device is named by ``torch.cuda.get_device_name``.
    note : str, default=None
        A caveat shown with the results, e.g. that the machine was shared.

    Returns
    -------
    dict
        ``device``, ``device_name``, ``torch``, ``threads``, ``python``, ``cpu_count``,
        ``loadavg`` (1-minute load when the process started) and ``note`` if given
        (:func:`write_json` adds the load at the end, and a note when other jobs shared the
        cores).
    """
    cuda = torch.device(device).type == "cuda"
    env = {"device": str(device),
           "device_name": torch.cuda.get_device_name(device) if cuda else
           f"{_cpu_name()}, {os.cpu_count()} cores",
           "torch": torch.__version__, "threads": threads,
           "python": platform.python_version(), "cpu_count": os.cpu_count()}
    if _LOAD_AT_START is not None:
        env["loadavg"] = _LOAD_AT_START
    if note:
        env["note"] = note
    return env


def header(script, threads, device="cpu", note=None, argv=None):
    """``command``, ``date`` and ``environment`` for the top of a results file.

    Parameters
    ----------
    script : str
        The script's file name, e.g. ``"cora.py"``.
    threads : int
        The torch threads the measurement used.
    device : str, default="cpu"
        The torch device.
    note : str, default=None
        A caveat, stored as ``environment["note"]``.
    argv : list of str, default=None
        The arguments; ``None``: ``sys.argv[1:]``.

    Returns
    -------
    dict
        ``{"command": ..., "date": ..., "environment": {...}, "complete": False}``.
    """
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return {"command": command(script, argv), "date": date,
            "environment": environment(threads, device, note), "complete": False}


def add_run_arguments(parser, threads=1):
    """Add the options every benchmark run records: ``--threads`` (torch threads),
    ``--note`` (a caveat stored with the results) and ``--json`` (the results file)."""
    parser.add_argument("--threads", type=int, default=threads)
    parser.add_argument("--note", default=None,
                        help="a caveat stored with the results, e.g. that the machine is shared")
    parser.add_argument("--json", default=None, help="write the rows to this JSON file")


def write_json(path, doc, complete=False):
    """Write ``doc`` to ``path`` as indented JSON, atomically (a temporary file renamed).

    ``complete`` is stored as ``doc["complete"]``: true for the final write of a run. The
    environment gets the load average now (``loadavg_end``) and, without a note of its own,
    one saying so when the load exceeded the run's threads: other jobs held cores meanwhile.
    """
    doc = {**doc, "complete": complete}
    env = doc.get("environment")
    if isinstance(env, dict) and env.get("loadavg") is not None and hasattr(os, "getloadavg"):
        env = {**env, "loadavg_end": round(os.getloadavg()[0], 2)}
        if not env.get("note") and max(env["loadavg"], env["loadavg_end"]) > \
                env["threads"] + 0.5:
            env["note"] = (f"{env['cpu_count']}-core CPU shared with other jobs: 1-minute load "
                           f"average {env['loadavg']:.1f} at the start, "
                           f"{env['loadavg_end']:.1f} at the end")
        doc["environment"] = env
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1, default=float)
        fh.write("\n")
    os.replace(tmp, path)
