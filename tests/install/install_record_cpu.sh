#!/bin/bash
# An installed ShardScope records a real FSDP2 job with the build and source trees out of reach:
# `cmake --install` into a fresh prefix, the prefix copied elsewhere and the first one removed,
# then `record` from the copy (two CPU ranks over gloo, started as torchrun starts them).
# usage: install_record_cpu.sh CMAKE BUILD_DIR PYTHON EXPECT_COLLECTOR(0|1)
set -u
CMAKE=$1
BUILD=$2
PY=$3
EXPECT_COLLECTOR=$4
. "$(dirname "$0")/../support/cpu_ranks.sh"  # torch or skip, T, fail, $T/two_ranks.sh

"$CMAKE" --install "$BUILD" --prefix "$T/first" > "$T/install.log" 2>&1 || { cat "$T/install.log"; fail "cmake --install"; }
cp -a "$T/first" "$T/moved" && rm -rf "$T/first"
P=$T/moved
for f in bin/shardscope share/shardscope/python/shardscope/__init__.py share/shardscope/python/shardscope/_site/sitecustomize.py \
         share/shardscope/python/shardscope/_cuda_memory.py share/shardscope/scripts/fsdp_train_sample.py \
         share/shardscope/scripts/closed_loop.py share/shardscope/scripts/memory_vs_tracker.py; do
  [ -f "$P/$f" ] || fail "$f not installed"
done
if [ "$EXPECT_COLLECTOR" = 1 ]; then
  [ -f "$P/lib/shardscope/libshardscope_collector.so" ] || fail "the collector library is not installed"
fi
ls "$P"/lib/shardscope/plugins/*.so > /dev/null 2>&1 || fail "no plugins installed"
find "$P" -name __pycache__ | grep -q . && fail "__pycache__ installed"

# The recorded command sees the copied prefix's collector and Python package, nothing else.
"$P/bin/shardscope" record -o "$T/env.ssdb" -- "$PY" -c \
  "import os; print('INJECT=' + os.environ.get('CUDA_INJECTION64_PATH', '')); print('PYPATH=' + os.environ['PYTHONPATH'])" \
  > "$T/env.out" 2> "$T/env.err"
grep -q "^PYPATH=$P/share/shardscope/python/shardscope/_site:$P/share/shardscope/python" "$T/env.out" \
  || fail "PYTHONPATH is not the installed package's: $(cat "$T/env.out" "$T/env.err")"
if [ "$EXPECT_COLLECTOR" = 1 ]; then
  grep -q "^INJECT=$P/lib/shardscope/libshardscope_collector.so$" "$T/env.out" \
    || fail "CUDA_INJECTION64_PATH is not the installed collector: $(cat "$T/env.out")"
fi

# A real FSDP2 job from the installed scripts: 2 ranks, gloo, 3 steps of the tiny model.
(cd "$T" && OMP_NUM_THREADS=1 "$P/bin/shardscope" record -o "$T/run.ssdb" -- bash "$T/two_ranks.sh" \
    "$P/share/shardscope/scripts/fsdp_train_sample.py" --device cpu --tiny --steps 3) > "$T/run.log" 2>&1 \
  || { tail -30 "$T/run.log"; fail "record from the installed tree failed"; }
grep -q "shardscope Python package was not found\|module hooks not installed" "$T/run.log" && fail "$(cat "$T/run.log")"

"$PY" - "$T/run.ssdb" <<'PY' || exit 1
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
q = lambda sql, *a: db.execute(sql, a).fetchall()
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
check(q("select count(*) from ranks") == [(2,)], "two ranks")
units = dict(q("select fqn, reshard_policy from modules where is_fsdp_unit = 1"))
check(units == {"": "false", "layers.0": "true", "layers.1": "true"}, "FSDP units %r" % units)
for rank in (0, 1):
    check(q("select count(*) from steps where rank = ?", rank) == [(3,)], "3 steps on rank %d" % rank)
    # Per step: all-gathers of the root and both layers in forward, of both layers again in
    # backward; one reduce-scatter per unit; every one with its size.
    by_type = dict(q("select e.label, count(*) from collectives c join enums e on e.type = 'collective_type' "
                     "and e.value = c.type where c.rank = ? and c.bytes > 0 group by 1", rank))
    check(by_type.get("all_gather") == 3 * 5 and by_type.get("reduce_scatter") == 3 * 3, "collectives on rank %d: %r" % (rank, by_type))
    phases = dict(q("select e.label, count(*) from ranges r join enums e on e.type = 'range_phase' and e.value = r.phase "
                    "where r.rank = ? and r.kind = 1 group by 1", rank))  # module ranges
    optimizer = q("select count(*) from ranges r join strings s on s.id = r.name_id where r.rank = ? "
                  "and s.value = 'optimizer.step' and r.phase = 4", rank)
    check(phases.get("forward", 0) > 0 and phases.get("backward", 0) > 0 and optimizer == [(3,)],
          "module ranges by phase on rank %d: %r, optimizer ranges %r" % (rank, phases, optimizer))
print("installed record: 2 ranks, 3 steps, 3 FSDP units, 15 all-gathers and 9 reduce-scatters per rank")
PY
echo "install test passed ($(du -sh "$P" | cut -f1) installed)"
