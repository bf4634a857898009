#!/bin/bash
# Runs injection_probe.py and checks the outcome for a machine with or without a GPU.
set -u
LIB=$1
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
out=$(python3 "$HERE/injection_probe.py" "$LIB" "$T" 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: the probe process exited $rc"; exit 1; }
echo "$out" | grep -q "probe done" || { echo "FAIL: the probe did not finish"; exit 1; }
files=$(ls "$T")
if echo "$out" | grep -q "\[shardscope\] cannot start CUPTI"; then
  [ -z "$files" ] || { echo "FAIL: collector off but files written: $files"; exit 1; }
  [ "$(echo "$out" | grep -c '\[shardscope\]')" -eq 1 ] || { echo "FAIL: more than one message"; exit 1; }
  echo "no driver: one message, no file"
else
  f=$(ls "$T"/shardscope_rank*_pid*.ssdb) || { echo "FAIL: collector on but no rank file"; exit 1; }
  /usr/bin/python3 -c "import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); print('rank file ok, ranks:', db.execute('select count(*) from ranks').fetchone()[0])" "$f" \
    || { echo "FAIL: unreadable rank file"; exit 1; }
fi
