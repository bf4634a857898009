#!/usr/bin/env bash
# Import speed on real traces (issue 14 item 9, issue 22 item 6): the whole `shardscope import` of
# N time-shifted rank copies of a real Kineto trace, against Python's json.load of the same files.
#   bench/import/bench_real_traces.sh [BUILD_DIR] [TRACE.json[.gz]] [N] [REPEATS]
# Defaults: build, the real A100 DDP trace of the shared data, 8 copies, 3 repeats.
# Prints the load (uptime), each run, the best and the median MB/s with the spread (min-max), the
# same for Python's json.load (as Python runs it, and with its garbage collector off: on traces of
# many small objects the collector is most of json.load's time), the ratios, and bench_import's
# phase split (main thread vs writer thread, parse alone). Set OLD=path/to/shardscope to time an
# older binary alternately with this one (before/after on the same machine state).
# The CPU trace of bench/import/gen_cpu_fsdp_trace.py (operators with shapes, [memory] events,
# flow arrows) is the other input of docs/benchmarks.md: pass its rank0.json as TRACE.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
trace=${2:-$root/../shared/data/traces/kineto-a100-ddp/nccl_data.json.gz}
n=${3:-8}
repeats=${4:-3}
json_repeats=${JSON_REPEATS:-$repeats}  # json.load of 8 CPU traces with the collector on takes ~1 min
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

new_times=()
old_times=()
for ((r = 1; r <= repeats; ++r)); do
  if [ -n "${OLD:-}" ]; then
    s=$(time_import "$OLD")
    printf 'run %d old: %.3f s\n' "$r" "$s"
    old_times+=("$s")
  fi
  s=$(time_import "$build/app/shardscope")
  printf 'run %d new: %.3f s\n' "$r" "$s"
  new_times+=("$s")
done

# Python's json.load of the same files, alternately with the collector on (as Python runs it) and off.
read -r load_gc load_gc_med load_nogc load_nogc_med < <("$python" - "$json_repeats" "${files[@]}" <<'EOF'
import gc, json, statistics, sys, time
repeats, files = int(sys.argv[1]), sys.argv[2:]
times = {True: [], False: []}
for _ in range(repeats):
    for collect in (True, False):
        (gc.enable if collect else gc.disable)()
        t = time.perf_counter()
        for f in files:
            with open(f, "rb") as h:
                d = json.load(h)
            del d
        times[collect].append(time.perf_counter() - t)
gc.enable()
print(min(times[True]), statistics.median(times[True]), min(times[False]), statistics.median(times[False]))
EOF
)
stats() {  # seconds... -> "min median max"
  printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; print v[1], m, v[NR]}'
}
mbs() { echo "$bytes / 1000000 / $1" | bc -l; }
report() {  # label seconds...
  local label=$1
  shift
  read -r lo med hi < <(stats "$@")
  printf '%-22s best %.3f s = %.1f MB/s, median %.3f s = %.1f MB/s (spread %.3f-%.3f s, %d runs)\n' \
    "$label" "$lo" "$(mbs "$lo")" "$med" "$(mbs "$med")" "$lo" "$hi" "$#"
}
report "shardscope import:" "${new_times[@]}"
[ -n "${OLD:-}" ] && report "old binary:" "${old_times[@]}"
printf 'python json.load:      best %.3f s = %.1f MB/s, median %.3f s; with gc off: best %.3f s = %.1f MB/s, median %.3f s\n' \
  "$load_gc" "$(mbs "$load_gc")" "$load_gc_med" "$load_nogc" "$(mbs "$load_nogc")" "$load_nogc_med"
read -r _ new_med _ < <(stats "${new_times[@]}")
read -r new_best _ _ < <(stats "${new_times[@]}")
printf 'ratio import / json.load: best %.2fx, median %.2fx (gc off: best %.2fx, median %.2fx)\n' \
  "$(echo "$load_gc / $new_best" | bc -l)" "$(echo "$load_gc_med / $new_med" | bc -l)" \
  "$(echo "$load_nogc / $new_best" | bc -l)" "$(echo "$load_nogc_med / $new_med" | bc -l)"
if [ -x "$build/bench/import/bench_import" ]; then
  echo "phase split (bench_import, in one process):"
  "$build/bench/import/bench_import" "${files[@]}" "$repeats"
fi
echo "load after: $(uptime)"
