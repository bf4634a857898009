#!/bin/bash
# `shardscope record` end to end without a GPU: two CPU ranks (gloo) started the way torchrun
# starts them (RANK / LOCAL_RANK / WORLD_SIZE; a plain launcher keeps the test independent of
# torchrun's rendezvous), the Python hooks via sitecustomize, the merge, exit-code pass-through, and Ctrl+C.
# usage: record_cpu_e2e.sh path/to/shardscope SOURCE_DIR PYTHON
set -u
SS=$1
SRC=$2
PY=${3:-/usr/bin/python3}
. "$(dirname "$0")/../support/cpu_ranks.sh"  # torch or skip, T, fail, $T/two_ranks.sh

# 1. Two ranks, the job's exit code (3) passed through, one merged profile.
"$SS" record -o "$T/run.ssdb" -- bash "$T/two_ranks.sh" "$SRC/scripts/fsdp_train_sample.py" \
    --device cpu --tiny --steps 3 --exit-code 3
rc=$?
[ "$rc" -eq 3 ] || fail "record returned $rc, expected the job's exit code 3"
[ -f "$T/run.ssdb" ] || fail "no merged profile"
[ -d "$T/run.ssdb.parts" ] && fail "per-rank folder not removed after the merge"

"$PY" - "$T/run.ssdb" <<'PY' || exit 1
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
q = lambda sql: db.execute(sql).fetchall()
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
check(q("select count(*) from ranks") == [(2,)], "two ranks: %r" % q("select * from ranks"))
# tiny model: dim 64 -> attention = 4 x 64x64 weights; a decoder layer adds SwiGLU 3 x 64x128 and two norms
check(q("select class_name, param_count, param_bytes from modules where fqn='layers.0.attention'")
      == [("Attention", 16384, 65536)], "attention module sizes")
check(q("select param_count from modules where fqn='layers.0'") == [(16384 + 3 * 64 * 128 + 2 * 64,)], "layer size")
check(q("select count(*) from modules m join modules p on p.id = m.parent_id where m.fqn='layers.1.feed_forward.w2' and p.fqn='layers.1.feed_forward'") == [(1,)], "module tree")
for rank in (0, 1):
    check(q("select count(*) from steps where rank=%d" % rank) == [(3,)], "3 steps on rank %d" % rank)
    phases = dict(q("select e.label, count(*) from ranges r join enums e on e.type='range_phase' and e.value=r.phase where r.rank=%d group by 1" % rank))
    check(phases.get("forward", 0) >= 3 * 20 and phases.get("backward", 0) >= 3 * 10, "phases on rank %d: %r" % (rank, phases))
    check(q("select count(*) from ranges r join strings s on s.id = r.name_id where r.rank=%d and s.value = 'optimizer.step' and r.phase = 4" % rank) == [(3,)],
          "optimizer ranges on rank %d" % rank)
    # CPU is the device: operators on the compute lane, gloo collectives with bytes, memory by category.
    check(q("select count(*) from kernels k join streams s on s.id = k.stream_id where s.rank=%d and s.kind = 1" % rank)[0][0] > 100,
          "operators on rank %d's compute lane" % rank)
    check(q("select count(*) from collectives where rank=%d and bytes > 0 and sequence >= 0" % rank)[0][0] == 3 * (5 + 3),
          "3 steps x (5 all-gathers + 3 reduce-scatters) on rank %d" % rank)
    cats = {r[0] for r in q("select e.label from memory_events m join enums e on e.type='memory_category' and e.value=m.category where m.rank=%d" % rank)}
    check({"sharded_parameter", "activation", "optimizer_state", "all_gather_buffer"} <= cats, "memory categories %r" % cats)
# forward ranges nest: every layers.0.attention range has the layers.0 range as parent
check(q("select count(*) from ranges r join strings s on s.id=r.name_id join ranges p on p.id=r.parent_id "
        "join strings ps on ps.id=p.name_id where s.value='layers.0.attention' and ps.value='layers.0'")[0][0] >= 6, "nesting")
check(q("select count(*) from ranges r join modules m on m.id = r.module_id where m.fqn = 'layers.1' and r.kind = 1")[0][0] == 2 * 3 * 2, "module links")
print("profile checks passed")
PY

# 2. Ctrl+C: SIGINT to record reaches the job, the merge still happens, 128+SIGINT comes back.
"$SS" record -o "$T/int.ssdb" -- "$PY" "$SRC/scripts/fsdp_train_sample.py" \
    --device cpu --tiny --steps 1000 --sleep-per-step 0.2 &
pid=$!
for _ in $(seq 1 300); do
  grep -qs "ss:opt:1" "$T"/int.ssdb.parts/*.modules.tsv && break
  sleep 0.1
done
grep -qs "ss:opt:1" "$T"/int.ssdb.parts/*.modules.tsv || fail "the job never reached step 2"
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] || fail "record returned $rc after SIGINT, expected 130 (the job's KeyboardInterrupt)"
[ -f "$T/int.ssdb" ] || fail "no profile merged after SIGINT"
steps=$("$PY" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from steps').fetchone()[0])" "$T/int.ssdb")
[ "$steps" -ge 2 ] || fail "interrupted profile has $steps steps"

# 3. A command that does not exist: clear error, 127, no profile.
"$SS" record -o "$T/none.ssdb" -- /nonexistent/train 2> "$T/err"
rc=$?
[ "$rc" -eq 127 ] || fail "missing command returned $rc"
grep -q "cannot run '/nonexistent/train'" "$T/err" || fail "no clear error: $(cat "$T/err")"
[ -f "$T/none.ssdb" ] && fail "a profile was written for a command that never ran"
echo "record e2e passed"
