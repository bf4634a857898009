#!/usr/bin/env bash
# N consecutive `ctest -j2` runs of one label with a CPU-burning process beside them (issue 22: a
# test that passes alone must pass under load, every time). Prints one line per run and a summary;
# each run's log stays in OUT_DIR/run_<i>.log. Exit 1 when any run failed.
#
#   scripts/flake_check.sh [BUILD_DIR] [RUNS] [LABEL] [OUT_DIR] [FIRST]
#     (defaults: build 20 python /tmp/ss_flake 1)
#   e.g. scripts/flake_check.sh build-obs 20 python
# FIRST continues a series that was cut short (a session's end, a restart; not a failure) on the
# same binary: runs FIRST..RUNS, the earlier logs left as they are.
set -uo pipefail
build=${1:-build}
runs=${2:-20}
label=${3:-python}
out=${4:-/tmp/ss_flake}
first=${5:-1}
[ -f "$build/CTestTestfile.cmake" ] || { echo "flake_check.sh: $build is not a configured build folder" >&2; exit 2; }
mkdir -p "$out"
python3 -c "while True: pass" &
burner=$!
trap 'kill $burner 2>/dev/null' EXIT
echo "flake_check.sh: runs $first..$runs of ctest -j2 -L $label in $build, CPU burner pid $burner, $(date -u +%FT%TZ), $(git -C "$build" rev-parse --short HEAD 2>/dev/null || true)"
# What the runs exercise, so that a continued series can be shown to be on the same binary.
sha256sum "$build/app/shardscope" "$build"/profiler/collector/libshardscope_collector.so 2>/dev/null | cut -c1-16,65- | sed 's/^/  /'
failed_runs=0
for i in $(seq "$first" "$runs"); do
  start=$(date +%s)
  (cd "$build" && SHARDSCOPE_REQUIRE_TORCH=1 ctest -j2 -L "$label" --output-on-failure >"$out/run_$i.log" 2>&1)
  rc=$?
  # A label that matches nothing passes in ctest; here it is a failed run, not a green one.
  grep -qE "tests passed.* out of [1-9]" "$out/run_$i.log" || { [ "$rc" -ne 0 ] || rc=1; }
  [ "$rc" -eq 0 ] || failed_runs=$((failed_runs + 1))
  echo "run $i rc=$rc $(grep -E 'tests passed' "$out/run_$i.log") $(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
  [ "$rc" -eq 0 ] || grep -E "\(Failed\)|\(Timeout\)|\*\*\*" "$out/run_$i.log" | sed 's/^/    /'
done
echo "flake_check.sh: runs $first..$runs, $failed_runs failed, $(date -u +%FT%TZ)"
[ "$failed_runs" -eq 0 ]
