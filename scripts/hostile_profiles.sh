#!/usr/bin/env bash
# Hostile and corrupt profiles against every reader: each edit in scripts/hostile/edits.sql is
# applied to a fresh copy of each PROFILE, and every command that reads a profile runs on the
# result (info, simulate, plan, export, diff, sql, each analysis; with --gui the app too, under
# xvfb-run, taking its screenshots). A finding is an exit code of 3 or more (internal error,
# signal, timeout), or a sanitizer report; a clear error with exit 1 or 2 is what bad input gets.
# Not part of CI (minutes); run it with a sanitizer build after changing a reader:
#
#   scripts/hostile_profiles.sh [--gui] SHARDSCOPE PROFILE... 
#   e.g. scripts/hostile_profiles.sh build-asan/app/shardscope resources/samples/cpu-fsdp2-llama-2rank.ssdb
#        scripts/hostile_profiles.sh --gui build/app/shardscope resources/samples/*.ssdb
#
# Prints one line per finding and a count per profile; exits 1 when there is any finding.
set -uo pipefail
cd "$(dirname "$0")/.."
gui=0
[ "${1:-}" = "--gui" ] && { gui=1; shift; }
[ $# -ge 2 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
exe=$(realpath "$1"); shift
edits=scripts/hostile/edits.sql
work=$(mktemp -d /tmp/shardscope-hostile.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ $gui = 1 ]; then  # one X server for every run (xvfb-run per run sometimes fails its own cleanup: exit 5)
  display=":$((200 + $$ % 500))"
  Xvfb "$display" -screen 0 1600x1000x24 -nolisten tcp >/dev/null 2>&1 &
  xvfb_pid=$!
  trap 'kill $xvfb_pid 2>/dev/null; rm -rf "$work"' EXIT
  sleep 1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
analyses=$("$exe" analyze --list 2>/dev/null | awk '/^Analyses:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}')
findings=0

# check LABEL CMD...: runs one reader; reports exit >= 3 or a sanitizer line.
check() {
  local label=$1; shift
  timeout 120 "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ $rc -ge 3 ] || grep -q "runtime error\|AddressSanitizer\|LeakSanitizer" "$work/err"; then
    findings=$((findings + 1))
    echo "FINDING rc=$rc $label"
    grep -m2 "runtime error\|ERROR: AddressSanitizer\|SUMMARY\|error" "$work/err" | cut -c1-240 | sed 's/^/    /'
  fi
}

for profile in "$@"; do
  before=$findings
  n=0
  while IFS= read -r edit; do
    case "$edit" in ''|--*) continue ;; esac
    n=$((n + 1))
    f="$work/e$n.ssdb"
    cp "$profile" "$f" && chmod u+w "$f"
    if ! sqlite3 "$f" "$edit" 2>/dev/null; then continue; fi  # the edit does not apply to this profile
    chmod a-w "$f"
    what="[$(basename "$profile"): $edit]"
    for c in "info $f" "info $f --json" "simulate $f" "simulate $f --fit" "plan $f --budget 1GiB" \
             "diff $f $profile" "diff $profile $f --by kernel" "diff $f $profile --by collective"; do
      read -ra args <<<"$c"
      check "$what ${args[0]} ${args[*]:2}" "$exe" "${args[@]}"
    done
    check "$what export perfetto" "$exe" export "$f" -o "$work/e$n.json"
    check "$what export csv" "$exe" export "$f" -f csv -o "$work/e$n.csv"
    check "$what sql" "$exe" sql "$f" "SELECT count(*) FROM kernels"
    for a in $analyses; do check "$what analyze $a" "$exe" analyze "$a" "$f"; done
    if [ $gui = 1 ]; then
      mkdir -p "$work/shots$n"
      check "$what gui" env DISPLAY="$display" "$exe" gui "$f" --screenshot "$work/shots$n"
    fi
    rm -rf "$f" "$work/e$n.json" "$work/e$n.csv" "$work/shots$n"
  done <"$edits"
  echo "$(basename "$profile"): $n edits, $((findings - before)) findings"
done
[ $findings -eq 0 ]
