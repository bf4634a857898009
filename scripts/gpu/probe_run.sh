# Sourced by the GPU probes (window_probe.sh, cost_probe.sh): runs one job and appends a JSON line
# {name, label, rc, wall_s, summary} to $RUNS (summary: the job's --summary file $W/NAME.json),
# its failure to $OUT/failures.txt and its [shardscope] lines to $OUT/messages.txt. No job starts
# once $BUDGET seconds have passed since $START (both optional).
#   probe_one NAME LABEL [ENV=V ...] CMD...
probe_one() {
  local name=$1 label=$2; shift 2
  if [ -n "${BUDGET:-}" ] && [ $(( $(date +%s) - ${START:-0} )) -ge "$BUDGET" ]; then echo "$name skipped (budget)"; return; fi
  local t0; t0=$(date +%s%N)
  env "$@" > "$W/$name.log" 2>&1
  local rc=$? t1; t1=$(date +%s%N)
  python3 - "$name" "$label" "$rc" "$t0" "$t1" "$W/$name.json" >> "$RUNS" <<'PY'
import json, sys
name, label, rc, t0, t1, path = sys.argv[1:]
try:
    s = json.load(open(path))
except Exception:
    s = None
print(json.dumps({"name": name, "label": label, "rc": int(rc), "wall_s": (int(t1) - int(t0)) / 1e9, "summary": s}))
PY
  [ "$rc" = 0 ] || { echo "== $name rc=$rc"; tail -25 "$W/$name.log"; } >> "$OUT/failures.txt"
  grep -h "shardscope\]" "$W/$name.log" | sed "s/^/$name: /" >> "$OUT/messages.txt"
  echo "$name rc=$rc $(( (t1 - t0) / 1000000 )) ms"
}
