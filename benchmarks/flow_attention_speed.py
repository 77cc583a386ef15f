"""Flow-Attention vs softmax attention (SDPA): forward+backward time and peak memory.

For each length, normal and causal, :func:`skdiff.nn.flow_attention` against
:func:`torch.nn.functional.scaled_dot_product_attention` (``is_causal=True`` for the causal
rows: PyTorch's fused kernels, flash / memory-efficient on CUDA), on (batch, heads, L, dim)
inputs of each dtype (default B8 H8 d32). In bfloat16, Flow-Attention keeps its flow
statistics and carried states in float32 (see ``flow_attention``); SDPA runs in bfloat16.
One step is ``out = attention(q, k, v); out.backward(grad)`` with a dense random ``grad``;
the time is the best of ``--reps`` after one warm-up (softmax attention at L >= 16K on the
CPU: one run, no warm-up; it takes minutes there).

Peak memory: on CUDA, ``torch.cuda.max_memory_allocated`` of the step (inputs, outputs and
gradients included), all configurations in one process. On the CPU each configuration runs
in a fresh subprocess whose peak resident memory (``ru_maxrss``) is its own; "extra" subtracts
the peak of a subprocess that only imports torch and allocates the inputs.

Run:
    python benchmarks/flow_attention_speed.py --threads 1 \\
        --json benchmarks/results/flow_attention_speed_cpu.json
    python benchmarks/flow_attention_speed.py --device cuda --dtypes float32 bfloat16 \\
        --json benchmarks/results/flow_attention_speed_cuda.json
The JSON holds ``command``, ``date``, ``environment`` and one row per (L, dtype, causal,
method): the configuration, ``seconds`` (best rep), ``times``, ``peak_mb`` and, on the CPU,
``extra_mb``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import _results
import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def measure(method, L, causal, dtype, device="cpu", batch=8, heads=8, dim=32, reps=3,
            chunk_size=None):
    """Time one configuration in this process; ``method`` is "flow", "flow_compiled"
    (:func:`torch.compile` of ``flow_attention``; the warm-up compiles), "sdpa" or "none"
    (inputs only). Returns a dict: seconds (best rep), times, cuda_peak_mb (CUDA only)."""
    import torch.nn.functional as F

    from skdiff.nn import flow_attention

    if method == "flow_compiled":
        flow_attention = torch.compile(flow_attention, dynamic=False)

    cuda = torch.device(device).type == "cuda"
    torch.manual_seed(0)
    q, k, v, grad = (torch.randn(batch, heads, L, dim, device=device, dtype=DTYPES[dtype],
                                 requires_grad=i < 3) for i in range(4))

    def step():
        if method in ("flow", "flow_compiled"):
            out = flow_attention(q, k, v, causal=causal, chunk_size=chunk_size)
        else:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out.backward(grad)
        q.grad = k.grad = v.grad = None

    def sync():
        if cuda:
            torch.cuda.synchronize()

    times = []
    if method != "none":
        slow = method == "sdpa" and L >= 16384 and not cuda
        if not slow:
            step()  # warm-up
        if cuda:
            sync()
            torch.cuda.reset_peak_memory_stats()
        for _ in range(1 if slow else reps):
            sync()
            t0 = time.perf_counter()
            step()
            sync()
            times.append(time.perf_counter() - t0)
    return {"seconds": min(times) if times else 0.0, "times": times,
            "cuda_peak_mb": torch.cuda.max_memory_allocated() / 2**20 if cuda else None}


def _measure_in_subprocess(threads, **config):
    """:func:`measure` in a fresh interpreter (its own peak RSS), with ``threads`` threads."""
    code = ("import json, resource, sys, torch; sys.path.insert(0, sys.argv[3]); "
            "import flow_attention_speed as s; torch.set_num_threads(int(sys.argv[2])); "
            "r = s.measure(**json.loads(sys.argv[1])); "
            "r['maxrss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024; "
            "print(json.dumps(r))")
    here = str(Path(__file__).resolve().parent)
    out = subprocess.run([sys.executable, "-c", code, json.dumps(config), str(threads), here],
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"benchmark subprocess failed for {config}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(lengths, device="cpu", dtypes=("float32",), causal=(False, True),
            methods=("flow", "sdpa"), batch=8, heads=8, dim=32, reps=3, threads=1,
            chunk_size=None, softmax_max_length=None, isolate=None, log=print):
    """Rows for every (length, dtype, causal, method): a list of dicts (the configuration,
    seconds, times, peak_mb, extra_mb where measured). ``isolate`` (default: on the CPU)
    runs each configuration in a subprocess for its peak RSS; on the CPU without it no
    memory is measured."""
    from skdiff.nn.flow_attention import default_chunk_size

    cuda = torch.device(device).type == "cuda"
    isolate = not cuda if isolate is None else isolate
    flow_chunk = default_chunk_size(device) if chunk_size is None else chunk_size
    rows = []
    for L in lengths:
        for dtype in dtypes:
            shape = dict(L=L, dtype=dtype, device=device, batch=batch, heads=heads, dim=dim)
            if isolate:
                base = _measure_in_subprocess(threads, method="none", causal=False, reps=0,
                                              **shape)["maxrss_mb"]
            for is_causal in causal:
                for method in methods:
                    if method == "sdpa" and softmax_max_length and L > softmax_max_length:
                        continue
                    config = dict(method=method, causal=is_causal, reps=reps,
                                  chunk_size=None if method == "sdpa" else flow_chunk, **shape)
                    if isolate:
                        r = _measure_in_subprocess(threads, **config)
                        r.pop("cuda_peak_mb")
                        r["peak_mb"] = r.pop("maxrss_mb")
                        r["extra_mb"] = r["peak_mb"] - base
                    else:
                        r = measure(**config)
                        r["peak_mb"] = r.pop("cuda_peak_mb")
                        if cuda:
                            torch.cuda.empty_cache()
                    row = {**config, **r}
                    rows.append(row)
                    log(json.dumps(row))
    return rows


def table(rows):
    """Markdown table: Flow-Attention vs SDPA per (L, causal, dtype), speed-up = SDPA / Flow."""
    keyed = {(r["L"], r["causal"], r["dtype"], r["method"]): r for r in rows}
    compiled = any(r["method"] == "flow_compiled" for r in rows)
    extra = " compiled s |" if compiled else ""
    lines = [f"| L | causal | dtype | Flow s |{extra} SDPA s | speed-up | Flow peak MB | "
             "SDPA peak MB |", "|---|---|---|---|" + "---|" * compiled + "---|---|---|---|"]

    def mem(r):
        if r is None or r["peak_mb"] is None:
            return "-"
        extra = f" ({r['extra_mb']:.0f})" if r.get("extra_mb") is not None else ""
        return f"{r['peak_mb']:.0f}{extra}"

    for (L, causal, dtype, method), f in keyed.items():
        if method != "flow":
            continue
        s = keyed.get((L, causal, dtype, "sdpa"))
        speed = f"{s['seconds'] / f['seconds']:.2f}x" if s else "-"
        sdpa_s = f"{s['seconds']:.4f}" if s else "-"
        c = keyed.get((L, causal, dtype, "flow_compiled"))
        comp = (f" {c['seconds']:.4f} |" if c else " - |") if compiled else ""
        lines.append(f"| {L} | {causal} | {dtype} | {f['seconds']:.4f} |{comp} {sdpa_s} | "
                     f"{speed} | {mem(f)} | {mem(s)} |")
    return "\n".join(lines)


def environment(device, threads, note=None):
    """The ``environment`` field of the results file (see ``_results.environment``)."""
    return _results.environment(threads, device, note)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096, 16384])
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtypes", nargs="+", choices=sorted(DTYPES), default=["float32"])
    p.add_argument("--causal-only", action="store_true", help="skip the normal rows")
    p.add_argument("--methods", nargs="+", choices=("flow", "flow_compiled", "sdpa"),
                   default=["flow", "sdpa"],
                   help="flow_compiled: torch.compile of flow_attention (compiled in the "
                        "warm-up, which the timings leave out)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=2, help="CPU threads (torch.set_num_threads)")
    p.add_argument("--chunk-size", type=int, default=None,
                   help="Flow-Attention chunk_size (default: the device's default)")
    p.add_argument("--softmax-max-length", type=int, default=None,
                   help="skip softmax attention above this length")
    p.add_argument("--note", default=None,
                   help="a caveat stored with the results, e.g. that the machine is shared")
    p.add_argument("--json", help="write the rows and the environment to this JSON file")
    args = p.parse_args(argv)
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        p.error(f"--device {args.device}: CUDA is not available here.")
    torch.set_num_threads(args.threads)
    doc = _results.header("flow_attention_speed.py", args.threads, args.device, args.note, argv)
    rows = compare(args.lengths, device=args.device, dtypes=args.dtypes,
                   causal=(True,) if args.causal_only else (False, True),
                   methods=tuple(args.methods), batch=args.batch,
                   heads=args.heads, dim=args.dim, reps=args.reps, threads=args.threads,
                   chunk_size=args.chunk_size, softmax_max_length=args.softmax_max_length)
    env = doc["environment"]
    print(f"\nB{args.batch} H{args.heads} d{args.dim}, forward+backward, {env['device_name']}, "
          f"torch {env['torch']}, {args.threads} thread(s)")
    print(table(rows))
    if args.json:
        _results.write_json(args.json, {**doc, "rows": rows}, complete=True)
        print(f"rows written to {args.json}")


if __name__ == "__main__":
    main()
