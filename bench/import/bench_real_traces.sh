#!/usr/bin/env bash
# Import speed on real traces (issue 14, item 9): the whole `shardscope import` of N time-shifted
# rank copies of a real Kineto trace, against Python's json.load of the same files.
#   bench/import/bench_real_traces.sh [BUILD_DIR] [TRACE.json.gz] [N] [REPEATS]
# Defaults: build, the real A100 DDP trace of the shared data, 8 copies, 3 repeats (best taken).
# Prints the load (uptime), each run, the best MB/s, the ratio to json.load, and bench_import's
# phase split (main thread vs writer thread, parse alone). Set OLD=path/to/shardscope to time an
# older binary alternately with this one (before/after on the same machine state).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
trace=${2:-$root/../shared/data/traces/kineto-a100-ddp/nccl_data.json.gz}
n=${3:-8}
repeats=${4:-3}
python=${PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || python=python3
dir=${COPIES_DIR:-/tmp/ss_rank_copies_$n}
out=$(mktemp -d)/bench.ssdb
trap 'rm -rf "$(dirname "$out")"' EXIT

if [ ! -f "$dir/rank$((n - 1)).json" ]; then
  "$python" "$here/gen_rank_copies.py" "$trace" "$dir" "$n" >/dev/null
fi
files=()
for ((i = 0; i < n; ++i)); do files+=("$dir/rank$i.json"); done
bytes=$(cat "${files[@]}" | wc -c)
echo "input: $n copies of $(basename "$trace"), $bytes bytes of JSON in $dir"
echo "load before: $(uptime)"

time_import() {  # binary -> seconds of one whole `shardscope import`
  local t0 t1
  t0=$(date +%s.%N)
  "$1" import -q "${files[@]}" -o "$out" >/dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

best_new=999
best_old=999
for ((r = 1; r <= repeats; ++r)); do
  if [ -n "${OLD:-}" ]; then
    s=$(time_import "$OLD")
    printf 'run %d old: %.3f s\n' "$r" "$s"
    best_old=$(echo "if ($s < $best_old) $s else $best_old" | bc -l)
  fi
  s=$(time_import "$build/app/shardscope")
  printf 'run %d new: %.3f s\n' "$r" "$s"
  best_new=$(echo "if ($s < $best_new) $s else $best_new" | bc -l)
done

json_load=$("$python" - "$repeats" "${files[@]}" <<'EOF'
import json, sys, time
repeats, files = int(sys.argv[1]), sys.argv[2:]
best = 1e9
for _ in range(repeats):
    t = time.perf_counter()
    for f in files:
        with open(f, "rb") as h:
            d = json.load(h)
        del d
    best = min(best, time.perf_counter() - t)
print(best)
EOF
)
mbs() { echo "$bytes / 1000000 / $1" | bc -l; }
printf 'shardscope import, best of %d: %.3f s = %.1f MB/s\n' "$repeats" "$best_new" "$(mbs "$best_new")"
if [ -n "${OLD:-}" ]; then
  printf 'old binary, best of %d:        %.3f s = %.1f MB/s\n' "$repeats" "$best_old" "$(mbs "$best_old")"
fi
printf 'python json.load, best of %d:  %.3f s = %.1f MB/s\n' "$repeats" "$json_load" "$(mbs "$json_load")"
printf 'ratio import / json.load: %.2fx\n' "$(echo "$json_load / $best_new" | bc -l)"
if [ -x "$build/bench/import/bench_import" ]; then
  echo "phase split (bench_import, in one process):"
  "$build/bench/import/bench_import" "${files[@]}" "$repeats"
fi
echo "load after: $(uptime)"
