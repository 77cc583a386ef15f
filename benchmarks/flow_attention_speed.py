"""Flow-Attention vs softmax attention: forward+backward time and peak memory.

Batch 8, 8 heads, head dim 32, L = 1K, 4K, 16K, normal and causal. Softmax attention is
:func:`torch.nn.functional.scaled_dot_product_attention` (PyTorch's fused CPU kernel).
Each configuration runs in a fresh subprocess so that its peak resident memory
(``resource.getrusage(...).ru_maxrss``) is its own; "extra MB" subtracts the peak of a
subprocess that only imports torch and allocates the inputs. Softmax at 16K takes minutes on
a CPU: it is timed once (``--reps`` applies to the others, after one warm-up).

Run:
    python benchmarks/flow_attention_speed.py            # ~10 min on 2 CPU cores
    python benchmarks/flow_attention_speed.py --device cuda
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
import torch
import torch.nn.functional as F
from skdiff.nn import flow_attention
method, L, causal, reps, device, threads = sys.argv[1:7]
L, causal, reps = int(L), causal == "1", int(reps)
torch.set_num_threads(int(threads))
torch.manual_seed(0)
q, k, v = (torch.randn(8, 8, L, 32, device=device, requires_grad=True) for _ in range(3))
def step():
    if method == "flow":
        out = flow_attention(q, k, v, causal=causal)
    else:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out.sum().backward()
def sync():
    if device.startswith("cuda"):
        torch.cuda.synchronize()
times = []
if method != "none":
    if reps > 1:
        step()  # warm-up
    for _ in range(reps):
        sync(); t0 = time.perf_counter(); step(); sync()
        times.append(time.perf_counter() - t0)
gpu = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else None
print(json.dumps({"seconds": min(times) if times else 0.0,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "gpu_peak_mb": gpu}))
"""


def run(method, L, causal, reps, device, threads):
    out = subprocess.run(
        [sys.executable, "-c", CHILD, method, str(L), "1" if causal else "0", str(reps), device,
         str(threads)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096, 16384])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--softmax-max-length", type=int, default=16384,
                   help="skip softmax attention above this length")
    args = p.parse_args()
    rows = []
    for L in args.lengths:
        base = run("none", L, False, 0, args.device, args.threads)["maxrss_mb"]
        for causal in (False, True):
            res = {}
            for method in ("flow", "softmax"):
                if method == "softmax" and L > args.softmax_max_length:
                    continue
                reps = 1 if (method == "softmax" and L >= 16384 and args.device == "cpu") \
                    else args.reps
                r = run(method, L, causal, reps, args.device, args.threads)
                r["extra_mb"] = r["maxrss_mb"] - base
                res[method] = r
                print(json.dumps({"L": L, "causal": causal, "method": method, **r}), flush=True)
            rows.append((L, causal, res))
    print(f"\n| L | causal | Flow s | softmax s | speed-up | Flow peak MB (extra) | "
          f"softmax peak MB (extra) |   device={args.device}")
    print("|---|---|---|---|---|---|---|")
    for L, causal, res in rows:
        f, s = res["flow"], res.get("softmax")
        def mem(r):
            if r is None:
                return "-"
            if r["gpu_peak_mb"] is not None:
                return f"{r['gpu_peak_mb']:.0f} (GPU)"
            return f"{r['maxrss_mb']:.0f} ({r['extra_mb']:.0f})"
        sp = f"{s['seconds'] / f['seconds']:.1f}x" if s else "-"
        ss = f"{s['seconds']:.3f}" if s else "-"
        print(f"| {L} | {causal} | {f['seconds']:.3f} | {ss} | {sp} | {mem(f)} | {mem(s)} |")


if __name__ == "__main__":
    main()
