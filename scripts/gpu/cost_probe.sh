#!/bin/bash
# What each part of `record` costs a launch-bound FSDP2 job on a GPU (issue 22: "measure what each
# profiler option costs and choose the defaults from those numbers"); docs/gpu-runs.md.
# Every recorded run uses a capture window (`record --steps 10:18` of 24 steps), so the job's own
# steps inside the window (traced) are compared with its steps outside it (untraced) in the same
# process, where the VM's drift between processes cancels. SHARDSCOPE_TRACE_KINDS picks what the
# window switches on: all (the default), none (the module hooks' ranges alone), kernel, kernel+api,
# kernel+memcpy+memset, kernel+marker. Then activation checkpointing with and without `record`
# (the job's max_memory_allocated). One JSON line per run in $OUT/cost_runs.jsonl (label: the kinds).
#   scripts/gpu/cost_probe.sh [BUDGET_S]      (default 300: no run starts after that)
set -u
OUT=${OUT:-/tmp/ss_cost_probe}
BUDGET=${1:-300}
RUNS=$OUT/cost_runs.jsonl
. "$(dirname "$0")/probe_run.sh"
job() { job_cmd "$@"; }
rec() { echo "$KIT/bin/shardscope" record -o "$W/$1.ssdb"; }

probe_one ckpt_base - $(job ckpt_base --checkpointing --steps 8 --warmup 2)
probe_one ckpt_rec all $(rec ckpt_rec) -- $(job ckpt_rec --checkpointing --steps 8 --warmup 2)
for i in 1 2 3; do
  probe_one "base$i" - $(job "base$i" --steps 24 --warmup 4)
  for kinds in all none kernel kernel,api kernel,memcpy,memset kernel,marker; do
    probe_one "w_${kinds//,/+}_$i" "$kinds" SHARDSCOPE_TRACE_KINDS="$kinds" $(rec "w_${kinds//,/+}_$i") --steps 10:18 -- \
      $(job "w_${kinds//,/+}_$i" --steps 24 --warmup 4)
  done
done
[ -f "$W/ckpt_rec.ssdb" ] && "$KIT/bin/shardscope" info "$W/ckpt_rec.ssdb" > "$OUT/ckpt_rec_info.txt" 2>&1
[ -f "$W/w_all_1.ssdb" ] && "$KIT/bin/shardscope" sql "$W/w_all_1.ssdb" \
  "SELECT key, value FROM meta WHERE key LIKE '%capture%' OR key LIKE '%trace_kinds%'" > "$OUT/window_meta.txt" 2>&1
echo "cost_probe: $(( $(date +%s) - START )) s"
