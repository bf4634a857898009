#!/usr/bin/env bash
# Same inputs, two shardscope binaries, the same profile: imports each input set with OLD and NEW
# and compares every table row for row (compare_profiles.py). For import speed work, where the
# profile must not change.
#   bench/import/compare_binaries.sh OLD_SHARDSCOPE NEW_SHARDSCOPE [INPUT_SET...]
# An input set is one import's files, separated by commas (a.json,b.json). Without sets: every
# real trace of ../shared/data/traces (each Kineto trace alone, the 8 DLRM ranks together, each
# nsys export), plus the sets in $EXTRA_SETS (space-separated), e.g. the 8 time-shifted copies
# that bench_real_traces.sh writes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
old=$1
new=$2
shift 2
python=${PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || python=python3
traces=${TRACES:-$root/../shared/data/traces}
sets=("$@")
if [ ${#sets[@]} -eq 0 ]; then
  for f in "$traces"/kineto-a100-ddp/*.json.gz "$traces"/kineto-b200-modules/*.json.gz "$traces"/nsys-*/*.sqlite; do
    [ -f "$f" ] && sets+=("$f")
  done
  dlrm=$(ls "$traces"/kineto-v100-dlrm-8ranks/*.json.gz 2>/dev/null | paste -sd, || true)
  [ -n "$dlrm" ] && sets+=("$dlrm")
  for s in ${EXTRA_SETS:-}; do sets+=("$s"); done
fi
[ ${#sets[@]} -gt 0 ] || { echo "no inputs (is $traces there?)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
for s in "${sets[@]}"; do
  IFS=, read -r -a files <<<"$s"
  "$old" import -q "${files[@]}" -o "$tmp/old.ssdb" >/dev/null
  "$new" import -q "${files[@]}" -o "$tmp/new.ssdb" >/dev/null
  if result=$("$python" "$here/compare_profiles.py" "$tmp/old.ssdb" "$tmp/new.ssdb"); then
    echo "same: $(tail -1 <<<"$result" | sed 's/: equal//') <- ${#files[@]} file(s): $(basename "${files[0]}")"
  else
    echo "DIFFERENT: ${files[*]}"
    grep -v ' equal$' <<<"$result"
    failed=1
  fi
done
exit $failed
