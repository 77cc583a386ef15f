#!/bin/bash
# Everything this project measures on a CUDA GPU, in one command that ends within a budget:
#
#   bash benchmarks/gpu_benchmarks.sh OUT [SECONDS] [DATA_HOME]
#
# 1. Flow-Attention against SDPA on the idle GPU: flow_attention_speed.py (the table of the
#    Flowformer benchmark page, OUT/flow_attention_speed_cuda.json), then gpu_smoke.py
#    --parts attention (CUDA against the CPU in float64 and under bfloat16, chunk_size sweep),
#    then causal Flow-Attention under torch.compile (OUT/flow_attention_compiled_cuda.json);
# 2. NDP prior runs (scripts/pretrain_ndp.py --device cuda), one per "PRIOR DIMS WEIGHTS"
#    line of the variable NDP_RUNS (none by default; e.g. "se 2 skdiff/weights/se_d2.pt"
#    fine-tunes the shipped D=2 SE prior), all at once, as many steps as a probe of the
#    step time says fit before the evaluation; each run packed into OUT/runs_<name>.tgz;
# 3. beside them, the estimators' smoke test (gpu_smoke.py --parts estimators --save
#    OUT/smoke.pkl; Cora from DATA_HOME/planetoid, by default the loaders' own folder);
# 4. each trained prior on 8 paper tasks on the GPU (ndp_interpolation.py --device cuda),
#    beside the same evaluation of the weights it started from.
# Logs and results: OUT/logs.tgz. SECONDS (default 480) bounds the whole; steps 2-4 adapt.
# DEVICE=cpu runs the same steps on the CPU, small, as a dry run of the script.
OUT=${1:?usage: gpu_benchmarks.sh OUT [SECONDS] [DATA_HOME]}
TOTAL=${2:-480}
DATA_HOME=${3:+--data-home $3}
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
LENGTHS="1024 4096 16384 32768" COMPILED_LENGTHS="4096 16384"
[ "$DEVICE" = cpu ] && LENGTHS="256 512" COMPILED_LENGTHS=256
START=$(date +%s)
el() { echo $(( $(date +%s) - START )); }
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
LOGS=$OUT/logs
RUNS=$OUT/runs
mkdir -p "$LOGS" "$RUNS"
(nvidia-smi; $PY -c "import torch; print(torch.__version__, torch.cuda.get_device_name())") \
  > "$LOGS/env.txt" 2>&1

timeout 150 $PY benchmarks/flow_attention_speed.py --device "$DEVICE" --dtypes float32 bfloat16 \
  --lengths $LENGTHS --reps 5 --json "$OUT/flow_attention_speed_cuda.json" \
  > "$LOGS/flow_speed.log" 2>&1
echo "flow_attention_speed rc=$? at $(el) s"
timeout 120 $PY benchmarks/gpu_smoke.py --device "$DEVICE" --parts attention --results-dir "$LOGS/attention" \
  > "$LOGS/attention.log" 2>&1
echo "gpu_smoke attention rc=$? at $(el) s"
timeout 200 $PY benchmarks/flow_attention_speed.py --device "$DEVICE" --dtypes bfloat16 \
  --lengths $COMPILED_LENGTHS --causal-only --methods flow flow_compiled --reps 5 \
  --json "$OUT/flow_attention_compiled_cuda.json" > "$LOGS/flow_compiled.log" 2>&1
echo "flow_attention_speed, compiled rc=$? at $(el) s"

EVAL_START=$(( TOTAL - 130 ))
WINDOW=$(( EVAL_START - $(el) - 20 ))
pids=""
if [ "$WINDOW" -lt 60 ]; then
  echo "only $WINDOW s left before the evaluation: no NDP runs"
  NDP_RUNS="" WINDOW=60
fi
if [ -n "$NDP_RUNS" ]; then
  # seconds per step alone, then steps for the window, allowing 1.5x for sharing the GPU
  STEP=$(timeout 60 $PY - "$DEVICE" <<'EOF' 2>>"$LOGS/probe.log"
import sys

import numpy as np
from skdiff.diffusion.priors import get_prior_config
from skdiff.diffusion.training import train_prior
_, _, h = train_prior([get_prior_config("se", 2)], max_epochs=2, steps_per_epoch=40,
                      device=sys.argv[1])
print(f"{np.asarray(h[:, 'dur'])[-1] / 40:.5f}")
EOF
)
  STEPS=$($PY -c "import sys; print(max(1000, min(128000, int(int(sys.argv[2]) / (float(sys.argv[1] or 1) * 1.5)) // 100 * 100)))" "$STEP" $WINDOW)
  echo "probe $STEP s/step: $STEPS steps per run in $WINDOW s"
  while read -r prior dims init; do
    [ -z "$prior" ] && continue
    name=${prior}_d${dims//,/}
    $PY scripts/pretrain_ndp.py --prior "$prior" --n-dims ${dims//,/ } --steps "$STEPS" \
      --device "$DEVICE" --run-dir "$RUNS/$name" --init-from "$init" --checkpoint-every 60 \
      --milestone-every 20000 --max-seconds "$WINDOW" --verbose 0 \
      > "$LOGS/train_$name.log" 2>&1 &
    pids="$pids $!"
  done <<< "$NDP_RUNS"
fi
timeout $(( WINDOW + 10 )) $PY benchmarks/gpu_smoke.py --device "$DEVICE" --parts estimators $DATA_HOME \
  --save "$OUT/smoke.pkl" > "$LOGS/smoke.log" 2>&1
echo "gpu_smoke estimators rc=$? at $(el) s"
[ -n "$pids" ] && wait $pids
echo "training done at $(el) s"

EV=$(( TOTAL - $(el) - 15 ))
while read -r prior dims init; do
  [ -z "$prior" ] && continue
  name=${prior}_d${dims//,/}
  (cd "$RUNS" && tar czf "../runs_$name.tgz" "$name")
  kernels=$([ "$prior" = gp ] && echo "se matern52" || echo "$prior")
  d=${dims%%,*}
  for which in new old; do
    weights=$([ $which = new ] && echo "$RUNS/$name/weights/${prior}_d$d.pt" || echo "$init")
    timeout "$EV" $PY benchmarks/ndp_interpolation.py --sampler fast --n-tasks 8 --kernels $kernels \
      --dims "$d" --prior "$weights" --device "$DEVICE" --threads 2 \
      --json "$LOGS/eval_${name}_$which.json" > "$LOGS/eval_${name}_$which.log" 2>&1 &
  done
done <<< "$NDP_RUNS"
wait
echo "evaluation done at $(el) s"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs runs)
ls -la "$OUT"
