#!/bin/bash
# The module hooks' cost per module call on the lent GPU, by range backend, plain and under
# `record --no-modules` (the collector and NVTX-to-CUPTI in place, no hooks of record's own), with
# no trace kind and with the default kinds: hook_cost.py, one JSON line per run in $OUT/hook_cost.jsonl.
# About 40 s. The third loan's open question: the hooks alone cost a launch-bound step 14 %.
#   OUT=$OUT scripts/gpu/hook_probe.sh
set -u
OUT=${OUT:-/tmp/ss_hook_probe}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KIT=${KIT:-$ROOT/gpu-kit}
PY=${PY:-python3}
W=$(mktemp -d /tmp/ss_hook_probe.XXXXXX)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
one() { local label=$1; shift
        env HOOK_COST_LABEL="$label" "$@" "$PY" "$ROOT/scripts/gpu/hook_cost.py" ${HOOK_COST_ARGS:-} \
          > "$W/$label.log" 2>&1 || { echo "== $label failed"; tail -20 "$W/$label.log"; } >> "$OUT/failures.txt"
        grep '^{' "$W/$label.log" >> "$OUT/hook_cost.jsonl"
        grep -h "shardscope\]" "$W/$label.log" | sed "s/^/$label: /" >> "$OUT/messages.txt"; }
for i in 1 2; do
  one "plain$i"
  one "record_none$i" SHARDSCOPE_TRACE_KINDS=none "$KIT/bin/shardscope" record -o "$W/none$i.ssdb" --no-modules --
  one "record_all$i" "$KIT/bin/shardscope" record -o "$W/all$i.ssdb" --no-modules --
done
cat "$OUT/hook_cost.jsonl"
