#!/bin/bash
# Is the cost of kernel records CUPTI's or ours? (issue 22; docs/gpu-runs.md). The same launch-bound
# FSDP2 job, every run with a window of steps 10..17 of 24: `record --steps 10:18` with kernel
# records only, with CUPTI's own overhead records added, and with no trace kind (the module
# hooks alone); the job's own torch.profiler (Kineto,
# the same CUPTI) on the same steps, CUDA activity only and CPU + CUDA; and no profiler at all.
# Steps inside the window against steps outside it, in one process (window_cost.py prints them).
#   scripts/gpu/peer_probe.sh [BUDGET_S]      (default 280: no run starts after that)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KIT=${KIT:-$ROOT/gpu-kit}
OUT=${OUT:-/tmp/ss_peer_probe}
BUDGET=${1:-280}
S=$KIT/share/shardscope/scripts/fsdp_train_sample.py
W=$(mktemp -d /tmp/ss_peer.XXXXXX)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
DEVICE_ARGS=${DEVICE_ARGS:---device cuda}  # the dry run here: DEVICE_ARGS="--device cpu --tiny"
START=$(date +%s)
job() { local name=$1; shift
        echo python3 -m torch.distributed.run --nproc_per_node=1 --master_port=$((20000 + RANDOM % 10000)) "$S" \
          $DEVICE_ARGS --steps 24 --warmup 4 --summary "$W/$name.json" "$@"; }
RUNS=$OUT/cost_runs.jsonl
. "$(dirname "$0")/probe_run.sh"
rec() { echo "$KIT/bin/shardscope" record -o "$W/$1.ssdb" --steps 10:18 --; }

for i in 1 2 3; do
  probe_one "base$i" none $(job "base$i")
  probe_one "kernel$i" record:kernel SHARDSCOPE_TRACE_KINDS=kernel $(rec "kernel$i") $(job "kernel$i")
  probe_one "torch_cuda$i" torch:cuda $(job "torch_cuda$i" --torch-profiler-window 10:18)
  probe_one "hooks$i" record:none SHARDSCOPE_TRACE_KINDS=none $(rec "hooks$i") $(job "hooks$i")
  probe_one "kernel_overhead$i" record:kernel+overhead SHARDSCOPE_TRACE_KINDS=kernel,overhead \
    $(rec "kernel_overhead$i") $(job "kernel_overhead$i")
  probe_one "torch_cpu_cuda$i" torch:cpu+cuda $(job "torch_cpu_cuda$i" --torch-profiler-window 10:18:cpu)
done
for f in "$W"/kernel_overhead1.ssdb "$W"/kernel1.ssdb; do
  [ -f "$f" ] && "$KIT/bin/shardscope" sql "$f" "SELECT key, value FROM meta WHERE key LIKE 'collector.%'" \
    > "$OUT/$(basename "$f" .ssdb)_meta.txt" 2>&1
done
python3 "$(dirname "$0")/window_cost.py" "$RUNS" 10:18 4 | tee "$OUT/window_cost.txt"
echo "peer_probe: $(( $(date +%s) - START )) s"
