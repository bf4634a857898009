#!/bin/bash
# A short GPU probe of what `record` costs a launch-bound FSDP2 job, by mode (docs/gpu-runs.md):
# interleaved runs of the kit's training script without record, with `record --steps A:B` (the
# collector traces only inside the window), and without record on PyTorch's cudaMallocAsync
# backend (what the default --memory per-tensor switches the job to). One JSON line per run in
# $OUT/runs.jsonl (the job's own per-step wall times and max_memory_allocated), the window
# profile's `info` in $OUT/window_info.txt, what record said in $OUT/messages.txt (probe_run.sh).
#   scripts/gpu/window_probe.sh [ROUNDS] [STEPS] [WINDOW]     (defaults 1, 24, 12:16)
set -u
OUT=${OUT:-/tmp/ss_window_probe}
ROUNDS=${1:-1} STEPS=${2:-24} WINDOW=${3:-12:16}
RUNS=$OUT/runs.jsonl
. "$(dirname "$0")/probe_run.sh"
job() { job_cmd "$1" --steps "$STEPS" --warmup 4; }
for i in $(seq 1 "$ROUNDS"); do
  probe_one "base$i" - $(job "base$i")
  probe_one "window$i" "$WINDOW" "$KIT/bin/shardscope" record --steps "$WINDOW" -o "$W/window$i.ssdb" -- $(job "window$i")
  probe_one "async$i" cudaMallocAsync PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync $(job "async$i")
done
"$KIT/bin/shardscope" info "$W/window1.ssdb" > "$OUT/window_info.txt" 2>&1
"$KIT/bin/shardscope" sql "$W/window1.ssdb" "SELECT key, value FROM meta WHERE key LIKE '%capture%' OR key LIKE '%memory_mode%'" \
  >> "$OUT/window_info.txt" 2>&1
"$KIT/bin/shardscope" sql "$W/window1.ssdb" "SELECT s.number, (SELECT count(*) FROM kernels k WHERE k.rank = s.rank AND k.start_ns >= s.start_ns AND k.start_ns < s.start_ns + s.duration_ns) FROM steps s ORDER BY s.number" \
  >> "$OUT/window_info.txt" 2>&1
"$KIT/bin/shardscope" sql "$W/window1.ssdb" "SELECT count(*), min(start_ns), max(start_ns) FROM kernels" >> "$OUT/window_info.txt" 2>&1
"$KIT/bin/shardscope" sql "$W/window1.ssdb" "SELECT number, duration_ns FROM unobserved_steps ORDER BY number" >> "$OUT/window_info.txt" 2>&1
