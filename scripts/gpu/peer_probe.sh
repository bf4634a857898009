#!/bin/bash
# Is the cost of kernel records CUPTI's or ours? (issue 22; docs/gpu-runs.md). The same launch-bound
# FSDP2 job, every run with a window of steps 10..17 of 24: `record --steps 10:18` with kernel
# records only, with CUPTI's own overhead records added, and with no trace kind (the module
# hooks alone); the job's own torch.profiler (Kineto, the same CUPTI) on the same steps, CUDA
# activity only and CPU + CUDA; and no profiler at all.
# Steps inside the window against steps outside it, in one process (window_cost.py prints them).
#   scripts/gpu/peer_probe.sh [BUDGET_S]      (default 280: no run starts after that)
#   VARIANTS="base record attached hooks segments no_history" scripts/gpu/peer_probe.sh 300   (the next
#   loan's questions: do the steps after the window still run slower than before it with CUPTI
#   detached (record) than kept attached (attached); what in the hooks' window costs the job (hooks,
#   and no_modules / segments / no_history without the hooks / the history / any memory records))
set -u
OUT=${OUT:-/tmp/ss_peer_probe}
BUDGET=${1:-280}
RUNS=$OUT/cost_runs.jsonl
. "$(dirname "$0")/probe_run.sh"
job() { local name=$1; shift; job_cmd "$name" --steps 24 --warmup 4 "$@"; }
rec() { local name=$1; shift; echo "$KIT/bin/shardscope" record -o "$W/$name.ssdb" --steps 10:18 "$@" --; }  # NAME [FLAGS]

# VARIANTS picks and orders the runs of each round (default: the third loan's six).
VARIANTS=${VARIANTS:-"base kernel torch_cuda hooks kernel_overhead torch_cpu_cuda"}
variant() { local v=$1 i=$2
  case $v in
    base) probe_one "base$i" none $(job "base$i") ;;
    kernel) probe_one "kernel$i" record:kernel SHARDSCOPE_TRACE_KINDS=kernel $(rec "kernel$i") $(job "kernel$i") ;;
    torch_cuda) probe_one "torch_cuda$i" torch:cuda $(job "torch_cuda$i" --torch-profiler-window 10:18) ;;
    hooks) probe_one "hooks$i" record:none SHARDSCOPE_TRACE_KINDS=none $(rec "hooks$i") $(job "hooks$i") ;;
    kernel_overhead) probe_one "kernel_overhead$i" record:kernel+overhead SHARDSCOPE_TRACE_KINDS=kernel,overhead \
                       $(rec "kernel_overhead$i") $(job "kernel_overhead$i") ;;
    torch_cpu_cuda) probe_one "torch_cpu_cuda$i" torch:cpu+cuda $(job "torch_cpu_cuda$i" --torch-profiler-window 10:18:cpu) ;;
    # What is left without the module hooks (optimizer steps only), and without the allocator history:
    no_modules) probe_one "no_modules$i" record:none,no-modules SHARDSCOPE_TRACE_KINDS=none \
                  $(rec "no_modules$i" --no-modules) $(job "no_modules$i") ;;
    no_history) probe_one "no_history$i" record:none,memory-off SHARDSCOPE_TRACE_KINDS=none \
                  $(rec "no_history$i" --memory off) $(job "no_history$i") ;;
    # Between the two: CUPTI's cudaMalloc segment records (MEMORY2 / MEMORY_POOL, on from CUDA init
    # like the history) without the allocator history. hooks - segments = the history's cost;
    # segments - no_history = the segment records' cost, before the window as inside it.
    segments) probe_one "segments$i" record:none,memory-segments SHARDSCOPE_TRACE_KINDS=none \
                $(rec "segments$i" --memory segments) $(job "segments$i") ;;
    # The steps after the window: record's defaults (CUPTI detached at the window's end) against
    # CUPTI kept attached with its kinds off, as before 2026-11-27 (the third loan's +25 % after it).
    record) probe_one "record$i" record $(rec "record$i") $(job "record$i") ;;
    attached) probe_one "attached$i" record:cupti-attached SHARDSCOPE_CUPTI_DETACH=0 $(rec "attached$i") $(job "attached$i") ;;
    *) echo "peer_probe: unknown variant $v" >&2 ;;
  esac
}
for i in 1 2 3; do
  for v in $VARIANTS; do variant "$v" "$i"; done
done
for f in "$W"/kernel_overhead1.ssdb "$W"/kernel1.ssdb; do
  [ -f "$f" ] && "$KIT/bin/shardscope" sql "$f" "SELECT key, value FROM meta WHERE key LIKE 'rank%.collector.%'" \
    > "$OUT/$(basename "$f" .ssdb)_meta.txt" 2>&1
done
python3 "$(dirname "$0")/window_cost.py" "$RUNS" 10:18 4 | tee "$OUT/window_cost.txt"
echo "peer_probe: $(( $(date +%s) - START )) s"
