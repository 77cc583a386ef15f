"""Reliability battery: bad inputs, faults and persistence over every estimator and loader.

Every probe is one call of the public API with one bad (or unusual but valid) input: a bad
value for every public parameter of every estimator (derived from ``get_params()`` and
``_parameter_constraints``, so new parameters are covered without editing this file), bad data
for ``fit``/``predict``/``partial_fit``/``sample_posterior``/``score``/``attention_graph`` and
the other public methods, data in tiny and huge units, injected faults (an interrupt at a
random epoch, a corrupt or poisoned prior cache, concurrent cache writers, failed refits),
persistence round trips, and corrupt, truncated and malicious files for the loaders.

Each probe runs in a process of its own, forked from a server process that has imported the
library (so probes cannot affect each other and start in milliseconds), under an address-space
limit (``--memory-gb``, default 4) and a time limit, with one torch thread, a private temporary
folder as working directory, data home and cache. The outcome of each probe is one of
``ok``, ``clear_error``, ``unclear_error``, ``silent_garbage``, ``crash`` and ``hang``; the rule
is in ``benchmarks/_reliability_core.py`` and in the rendered report. Targets: no silent
garbage, no crash, no hang, and at most 5 unclear errors, each with a reason.

Run::

    OMP_NUM_THREADS=1 python benchmarks/reliability.py --workers 2   # everything (15 min)
    OMP_NUM_THREADS=1 python benchmarks/reliability.py --quick    # a sample, minutes
    python benchmarks/reliability.py --only params/NDPRegressor   # one area, target or probe
    python benchmarks/reliability.py --render                     # re-render the report

The table is printed and written to ``--json`` (default ``benchmarks/results/reliability.json``);
``docs/benchmarks/reliability.md`` is rendered from that JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

from _reliability_core import OUTCOMES, execute  # noqa: E402
from _results import command  # noqa: E402

DEFAULT_JSON = HERE / "results" / "reliability.json"
DEFAULT_DOC = ROOT / "docs" / "benchmarks" / "reliability.md"
PROBE_MODULES = ("_reliability_params", "_reliability_data", "_reliability_faults",
                 "_reliability_loaders")
BAD = ("silent_garbage", "crash", "hang", "unclear_error")


def collect(only=None, quick=False):
    """Every probe (or those whose id contains ``only``); ``quick`` keeps every 8th of each
    area/target group (its first always)."""
    import importlib

    probes = []
    for name in PROBE_MODULES:
        probes += importlib.import_module(name).probes()
    ids = [p.id for p in probes]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise SystemExit(f"duplicate probe ids: {sorted(dupes)[:5]}")
    if only:
        probes = [p for p in probes if any(o in p.id for o in only)]
    if quick:
        groups = defaultdict(list)
        for p in probes:
            groups[(p.area, p.target)].append(p)
        probes = [p for g in groups.values() for p in g[::8]]
    return probes


# -- running probes in child processes --------------------------------------------------------
def _scrub(text, tmp):
    """Machine paths out of a message: the probe's folder, the repository, the environment."""
    for path, label in ((tmp, "<tmp>"), (str(ROOT), "<repo>"), (sys.prefix, "<venv>"),
                        (str(Path.home()), "~"), (tempfile.gettempdir(), "<tmp>")):
        if path:
            text = text.replace(path, label)
    return text


def _child(probe, conn, memory, tmp):
    """The body of a probe's process: limits, a private folder, one thread; send the record."""
    import resource

    os.setpgrp()  # its own process group: a timeout kills whatever it started
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    log = os.open(os.path.join(tmp, "output.txt"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.environ.update(SKDIFF_CACHE=os.path.join(tmp, "cache"),
                      SKDIFF_DATA=os.path.join(tmp, "data"), OMP_NUM_THREADS="1")
    os.environ.pop("SKDIFF_DATA_URL", None)
    os.chdir(tmp)
    import torch

    torch.set_num_threads(1)
    rec = execute(probe, tmp)
    for key in ("message", "detail", "where", "call", "look"):
        if rec.get(key):
            rec[key] = _scrub(rec[key], tmp)
    rec["warnings"] = [_scrub(w, tmp) for w in rec["warnings"]]
    conn.send(rec)
    conn.close()


def _tail(path, n=600):
    try:
        return Path(path).read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_probes(probes, *, workers=1, memory_gb=4.0, timeout_scale=1.0, scratch=None,
               progress=True):
    """Run every probe in its own process; return their records in the probes' order."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                  if p])
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "sklearn", "pandas", "skorch", "skdiff",
                                "skdiff.datasets", "skdiff.bayes_opt", *PROBE_MODULES])
    base = Path(tempfile.mkdtemp(prefix="skdiff-reliability-", dir=scratch))
    memory = int(memory_gb * 2 ** 30)
    todo = list(enumerate(probes))[::-1]
    running, records = {}, [None] * len(probes)
    t_start = time.time()
    while todo or running:
        while todo and len(running) < workers:
            i, probe = todo.pop()
            tmp = base / f"p{i:05d}"
            tmp.mkdir()
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(probe, child, memory, str(tmp)))
            proc.start()
            child.close()
            running[proc.sentinel] = dict(i=i, probe=probe, proc=proc, conn=parent, tmp=tmp,
                                          t0=time.time(), rec=None)
        ready = wait([r["conn"] for r in running.values() if r["rec"] is None]
                     + list(running), timeout=1.0)
        now = time.time()
        for key, r in list(running.items()):
            if r["rec"] is None and r["conn"] in ready:
                try:
                    r["rec"] = r["conn"].recv()
                except (EOFError, OSError):
                    r["rec"] = False  # the pipe closed without a record: see the exit below
            done = key in ready
            limit = r["probe"].timeout * timeout_scale
            if not done and r["rec"] and now - r["t0"] > 5 + (r["rec"]["wall_s"] or 0) + 30:
                done = True  # a record was sent but the process lingers (threads, children)
            if not done and now - r["t0"] > limit:
                _kill_group(r["proc"].pid)
                r["proc"].join(5)
                records[r["i"]] = _failed(r, "hang", f"no answer within {limit:.0f} s")
            elif done:
                r["proc"].join(5)
                _kill_group(r["proc"].pid)
                if r["rec"]:
                    records[r["i"]] = r["rec"]
                else:
                    code = r["proc"].exitcode
                    how = f"killed by signal {-code}" if code and code < 0 else f"exit code {code}"
                    records[r["i"]] = _failed(r, "crash", f"the process died ({how})")
            else:
                continue
            r["conn"].close()
            del running[key]
            shutil.rmtree(r["tmp"], ignore_errors=True)
            if progress:
                rec = records[r["i"]]
                n_done = sum(x is not None for x in records)
                mark = "" if rec["outcome"] in ("ok", "clear_error") else "  <--"
                print(f"[{n_done}/{len(probes)} {time.time() - t_start:6.0f}s] "
                      f"{rec['outcome']:<15} {rec['id']}{mark}", flush=True)
    shutil.rmtree(base, ignore_errors=True)
    return records


def _failed(r, outcome, detail):
    """The record of a probe whose process gave no record (crash) or no answer (hang)."""
    p = r["probe"]
    out = _scrub(_tail(r["tmp"] / "output.txt"), str(r["tmp"]))
    return dict(id=p.id, area=p.area, target=p.target, name=p.name, expect=p.expect,
                correct=p.correct, call=p.call, wall_s=round(time.time() - r["t0"], 1),
                warnings=[], exc_type="", message=out.strip()[-600:], where="",
                detail=detail, outcome=outcome, look="")


# -- summaries ----------------------------------------------------------------------------------
def tables(records):
    """{"by_area": {area: Counter}, "by_target": {...}, "total": Counter}."""
    by_area, by_target = defaultdict(Counter), defaultdict(Counter)
    for r in records:
        by_area[r["area"]][r["outcome"]] += 1
        by_target[r["target"]][r["outcome"]] += 1
    total = Counter(r["outcome"] for r in records)
    return {"by_area": dict(by_area), "by_target": dict(by_target), "total": total}


def format_table(counts, title):
    head = f"| {title} | " + " | ".join(OUTCOMES) + " | total |"
    lines = [head, "|---" * (len(OUTCOMES) + 2) + "|"]
    for key in sorted(counts):
        c = counts[key]
        lines.append(f"| {key} | " + " | ".join(str(c.get(o, 0)) for o in OUTCOMES)
                     + f" | {sum(c.values())} |")
    return "\n".join(lines)


def causes(records):
    """The non-ok findings grouped by cause: the exception type and where it was raised, or
    for the other outcomes the first words of what went wrong."""
    groups = {}
    for r in records:
        if r["outcome"] not in BAD:
            continue
        if r["exc_type"] and r["where"]:
            key = (r["outcome"], r["exc_type"], r["where"])
        else:
            key = (r["outcome"], r["exc_type"], r["detail"].split(":")[0][:70])
        groups.setdefault(key, []).append(r)
    return sorted(groups.items(), key=lambda kv: (BAD.index(kv[0][0]), -len(kv[1])))


def meta(argv, wall, workers, memory_gb, timeout_scale, n):
    import numpy
    import sklearn
    import torch

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                                capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return dict(
        command=command("reliability.py", argv),
        date=dt.date.today().isoformat(), commit=commit,
        hardware=f"{os.cpu_count()}-core CPU ({platform.machine()}), shared with other jobs "
                 f"(load average {load:.1f} at the end)",
        python=platform.python_version(), torch=torch.__version__,
        sklearn=sklearn.__version__, numpy=numpy.__version__, n_probes=n,
        wall_s=round(wall), workers=workers, memory_limit_gb=memory_gb,
        timeout_scale=timeout_scale)


def _selection(cmd):
    """The sorted ``--only`` terms of a recorded command (empty without them, or with
    ``--bad``, whose selection depends on the records)."""
    words = shlex.split(cmd)
    if "--bad" in words or "--only" not in words:
        return ()
    terms = []
    for word in words[words.index("--only") + 1:]:
        if word.startswith("--"):
            break
        terms.append(word)
    return tuple(sorted(terms))


def _merge(old, records, argv, wall):
    """``old``'s records with those of ``records`` replaced (new ids appended, in the order of
    the current probe list); the update is recorded in the metadata."""
    current = [p.id for p in collect()]
    by_id = {r["id"]: r for r in old["probes"]}
    by_id.update({r["id"]: r for r in records})
    merged = [by_id[i] for i in current if i in by_id]
    m = dict(old["meta"])
    cmd = command("reliability.py", argv)
    # a later run of the same selection replaces all of an earlier one's records
    m["updates"] = [u for u in m.get("updates", [])
                    if not _selection(cmd) or _selection(u["command"]) != _selection(cmd)]
    m["updates"].append(dict(command=cmd, date=dt.date.today().isoformat(),
                             n_probes=len(records), wall_s=round(wall)))
    m["n_probes"] = len(merged)
    return {"meta": m, "probes": merged}


def print_report(records):
    t = tables(records)
    print()
    print(format_table(t["by_area"], "area"))
    print()
    print(format_table(t["by_target"], "target"))
    print()
    print("total:", ", ".join(f"{o} {t['total'].get(o, 0)}" for o in OUTCOMES))
    bad = [r for r in records if r["outcome"] in BAD]
    if bad:
        print("\nfindings:")
    for r in sorted(bad, key=lambda r: (BAD.index(r["outcome"]), r["id"])):
        print(f"- [{r['outcome']}] {r['id']}: {r['call']}")
        print(f"    correct: {r['correct']}")
        what = f"{r['exc_type']}: {r['message']}" if r["exc_type"] else r["message"]
        print(f"    got: {r['detail']} | {what[:400]}" + (f" @ {r['where']}" if r["where"]
                                                          else ""))
    print("\nby cause:")
    for (outcome, exc, where), rs in causes(records):
        print(f"- [{outcome}] {len(rs)} x {exc or '-'} @ {where}: "
              + ", ".join(r["id"] for r in rs[:6]) + (" ..." if len(rs) > 6 else ""))
    looks = [r for r in records if r.get("look")]
    if looks:
        print("\nworth a look:")
        for r in looks:
            print(f"- {r['id']}: {r['look']}")


# -- the report ---------------------------------------------------------------------------------
def render(json_path, doc_path):
    """Write the markdown report from the JSON alone."""
    from _reliability_core import TINY
    from _reliability_core import __doc__ as rule

    blob = json.loads(Path(json_path).read_text())
    m, records = blob["meta"], blob["probes"]
    t = tables(records)
    rule = _rule_markdown(rule.split("Outcome rule\n------------\n", 1)[1])
    out = [
        "# Reliability battery",
        "",
        "No silent wrong answer: every public parameter of every estimator, the data of every "
        "public method, injected faults, persistence and the loaders, probed with bad and "
        "unusual inputs, each probe in a process of its own under memory and time limits.",
        "Targets: **0 silent garbage, 0 crashes, 0 hangs; unclear errors ≤ 5, each with a "
        "reason.**",
        "",
        f"Command: `{m['command']}` (re-render: `python benchmarks/reliability.py --render`). "
        f"Date {m['date']}, commit `{m['commit']}`; {m['hardware']}; Python {m['python']}, "
        f"torch {m['torch']}, scikit-learn {m['sklearn']}, numpy {m['numpy']}. "
        f"{m['n_probes']} probes in {m['wall_s'] / 60:.0f} min with {m['workers']} worker(s), "
        f"each under a {m['memory_limit_gb']:g} GB address-space limit and its own time limit "
        f"(x{m['timeout_scale']:g}). Timings were taken on a shared, loaded machine."
        + "".join(f" Then `{u['command']}` ({u['date']}) re-ran "
                  + ("1 probe and replaced its record." if u["n_probes"] == 1 else
                     f"{u['n_probes']} probes and replaced their records.")
                  for u in m.get("updates", [])),
        "",
        "## Outcomes",
        "",
        "Total: " + ", ".join(f"**{o}** {t['total'].get(o, 0)}" for o in OUTCOMES) + ".",
        "",
        format_table(t["by_area"], "area"),
        "",
        format_table(t["by_target"], "target"),
        "",
        "## Rule",
        "",
        rule,
        "",
        "## Conventions of the calls below",
        "",
        "`**small` stands for the battery's small settings of each estimator and `X, y` for "
        "its small problem (`benchmarks/_reliability_core.py`: `TINY`, `data`): "
        + "; ".join(f"{name}: `{', '.join(f'{k}={v!r}' for k, v in kw.items())}`"
                    for name, kw in TINY.items())
        + ". DIFFormer: 48 rows of 5 features (3 classes / a linear target); Flowformer: 48 "
        "noisy sine windows of 12 steps; NDP: 10 points of sin(6x) on [0, 1]. Each probe's "
        "`correct` line says what a good outcome is.",
        "",
    ]
    bad = sorted((r for r in records if r["outcome"] in BAD),
                 key=lambda r: (BAD.index(r["outcome"]), r["id"]))
    groups = causes(records)
    out += ["## Findings by cause", "",
            f"{len(bad)} findings from {len(groups)} causes (an exception type and the line "
            "that raised it, or the kind of wrong result).", "",
            "| outcome | probes | exception | where / what |", "|---|---|---|---|"]
    out += [f"| {o} | {len(rs)} | {e or '-'} | `{w}` |" for (o, e, w), rs in groups]
    out += ["", "## Findings", ""]
    if not bad:
        out += ["None.", ""]
    for r in bad:
        got = f"`{r['exc_type']}`: {r['message']}" if r["exc_type"] else r["message"]
        out += [f"- **{r['outcome']}** `{r['id']}`",
                f"  - call: `{r['call']}`",
                f"  - correct: {r['correct']}",
                f"  - got: {r['detail']}" + (f"; {_one_line(got)}" if got.strip() else "")
                + (f" (at `{r['where']}`)" if r["where"] else ""), ""]
    looks = [r for r in records if r.get("look")]
    out += ["## Good outcomes worth a look", ""]
    out += [f"- `{r['id']}`: {_one_line(r['look'])}" for r in looks] or ["None."]
    out += ["", "## Every probe", "", "<details><summary>All "
            f"{len(records)} probes: what each expects and what it got</summary>", "",
            "| probe | expects | outcome | s |", "|---|---|---|---|"]
    out += [f"| `{r['id']}` | {r['expect']} | {r['outcome']} | {r['wall_s']:.1f} |"
            for r in records]
    out += ["", "</details>"]
    Path(doc_path).parent.mkdir(parents=True, exist_ok=True)
    Path(doc_path).write_text("\n".join(out) + "\n")


def _rule_markdown(text):
    """The rule's reStructuredText definition list as a markdown list."""
    import re

    from _reliability_core import EXPECTATION

    items = []
    for line in text.strip().splitlines():
        if line and not line.startswith(" "):
            items.append([line.strip(), []])
        elif items:
            items[-1][1].append(line.strip())
    words = EXPECTATION.pattern.replace("\\b", "").replace("\\w*", "...").replace(
        "\\w+", "...").strip("()").replace("|", ", ")
    out = []
    for term, body in items:
        body = " ".join(body).replace(":data:`EXPECTATION`", "listed below")
        out.append(f"- **{term}**: {body}")
    text = "\n".join(out) + f"\n\nExpectation and remedy words (case-insensitive): {words}."
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _one_line(text, n=500):
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= n else text[:n] + " ..."


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="every 8th probe of each group")
    p.add_argument("--only", nargs="+", help="probes whose id contains one of these")
    p.add_argument("--workers", type=int, default=1, help="probes run at once (default 1)")
    p.add_argument("--memory-gb", type=float, default=4.0)
    p.add_argument("--timeout-scale", type=float, default=1.0,
                   help="multiply every probe's time limit (a loaded machine)")
    p.add_argument("--json", default=str(DEFAULT_JSON))
    p.add_argument("--doc", default=str(DEFAULT_DOC))
    p.add_argument("--render", action="store_true", help="only re-render --doc from --json")
    p.add_argument("--list", action="store_true", help="list the probes and exit")
    p.add_argument("--update", action="store_true",
                   help="run the selected probes and replace their records in --json (e.g. "
                        "after a fix); the report says so")
    p.add_argument("--bad", action="store_true",
                   help="select the probes whose recorded outcome in --json is not ok or "
                        "clear_error")
    p.add_argument("--scratch", default=None, help="parent folder of the probes' folders")
    args = p.parse_args(argv)
    if args.render:
        render(args.json, args.doc)
        print(f"wrote {args.doc}")
        return
    probes = collect(args.only, args.quick)
    old = json.loads(Path(args.json).read_text()) if (args.update or args.bad) and \
        Path(args.json).is_file() else None
    if args.bad:
        bad = {r["id"] for r in (old or {}).get("probes", []) if r["outcome"] in BAD}
        probes = [pr for pr in probes if pr.id in bad]
    if args.list:
        for pr in probes:
            print(f"{pr.id}  [{pr.expect}]  {pr.call}")
        print(f"{len(probes)} probes")
        return
    t0 = time.time()
    records = run_probes(probes, workers=args.workers, memory_gb=args.memory_gb,
                         timeout_scale=args.timeout_scale, scratch=args.scratch)
    wall = time.time() - t0
    if args.update and old is not None:
        blob = _merge(old, records, argv, wall)
        print_report(blob["probes"])
    else:
        print_report(records)
        blob = {"meta": meta(argv, wall, args.workers, args.memory_gb, args.timeout_scale,
                             len(records)),
                "probes": records}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(blob, indent=1) + "\n")
    render(args.json, args.doc)
    print(f"\nwrote {args.json} and {args.doc}")


if __name__ == "__main__":
    main()
