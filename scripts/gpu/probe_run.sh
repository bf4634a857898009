# Sourced by the GPU probes (window_probe.sh, cost_probe.sh, peer_probe.sh), after they set OUT:
# the kit (KIT, default gpu-kit/), its training script S, a scratch folder W, START, and
#   job_cmd NAME [ARGS...]   the training job's command line (its --summary file: $W/NAME.json)
#   probe_one NAME LABEL [ENV=V ...] CMD...
# probe_one runs one job and appends a JSON line {name, label, rc, wall_s, summary} to $RUNS,
# its failure to $OUT/failures.txt and its [shardscope] lines to $OUT/messages.txt. No job starts
# once $BUDGET seconds have passed since $START (BUDGET optional).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KIT=${KIT:-$ROOT/gpu-kit}
S=$KIT/share/shardscope/scripts/fsdp_train_sample.py
W=$(mktemp -d /tmp/ss_probe.XXXXXX)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
DEVICE_ARGS=${DEVICE_ARGS:---device cuda}  # the dry run here: DEVICE_ARGS="--device cpu --tiny"
START=$(date +%s)
job_cmd() { local name=$1; shift
            echo python3 -m torch.distributed.run --nproc_per_node=1 --standalone "$S" \
              $DEVICE_ARGS --summary "$W/$name.json" "$@"; }
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
