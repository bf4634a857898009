#!/bin/bash
# The GPU checks of issue 4 (docs/collector.md, "Still to check on a real GPU"), in one run:
# overhead (steps/s with and without record, 3 runs each), dropped records, kernel count against
# torch.profiler, module parameter sizes against the model, peak memory against
# torch.cuda.max_memory_allocated. Prints every figure; writes them to $OUT/figures.json.
#   usage: scripts/collector_gpu_checks.sh   (env: SS=build/app/shardscope NPROC=2 OUT=/tmp/ss_gpu PY=python3)
set -eu
SS=${SS:-build/app/shardscope}
NPROC=${NPROC:-2}
OUT=${OUT:-/tmp/ss_gpu}
PY=${PY:-python3}
TRAIN="scripts/fsdp_train_sample.py"
mkdir -p "$OUT"
$PY -c "import torch; assert torch.cuda.is_available(), 'no CUDA'; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
run() { torchrun --nproc_per_node="$NPROC" "$TRAIN" "$@"; }

echo "== overhead: 3 runs without and with record (30 steps, 5 warm-up)"
for i in 1 2 3; do
  run --steps 30 --warmup 5 --summary "$OUT/base$i.json" > "$OUT/base$i.log" 2>&1
  "$SS" record -o "$OUT/rec$i.ssdb" -- torchrun --nproc_per_node="$NPROC" "$TRAIN" --steps 30 --warmup 5 \
      --summary "$OUT/rec$i.json" > "$OUT/rec$i.log" 2>&1
done
echo "== kernel count with torch.profiler (steps 2..7)"
run --steps 8 --warmup 2 --torch-profiler-kernels --summary "$OUT/kin.json" > "$OUT/kin.log" 2>&1
echo "== the sample recording (8 steps)"
"$SS" record -o "$OUT/llama.ssdb" -- torchrun --nproc_per_node="$NPROC" "$TRAIN" --steps 8 --warmup 2 \
    --summary "$OUT/llama.json" 2>&1 | tee "$OUT/llama.log" | grep shardscope || true
"$SS" info "$OUT/llama.ssdb" | tee "$OUT/llama.info"

$PY - "$OUT" <<'PY'
import json, sqlite3, statistics, sys, os
out = sys.argv[1]
J = lambda n: json.load(open(os.path.join(out, n)))
fig = {}
base = [J("base%d.json" % i)["steps_per_s"] for i in (1, 2, 3)]
rec = [J("rec%d.json" % i)["steps_per_s"] for i in (1, 2, 3)]
fig["steps_per_s_without"] = statistics.median(base)
fig["steps_per_s_with_record"] = statistics.median(rec)
fig["overhead_pct"] = 100.0 * (1 - fig["steps_per_s_with_record"] / fig["steps_per_s_without"])
dropped = 0
for i in (1, 2, 3):
    db = sqlite3.connect(os.path.join(out, "rec%d.ssdb" % i))
    dropped += db.execute("select coalesce(sum(count),0) from skipped_events where reason='cupti dropped records'").fetchone()[0]
fig["dropped_records_3_runs"] = dropped

db = sqlite3.connect(os.path.join(out, "llama.ssdb"))
q = lambda s, *a: db.execute(s, a).fetchall()
# kernels of rank 0 in steps >= 2 (all categories: torch.profiler's CUDA events include memcpy/memset)
fig["kernels_rank0_steps_2_7"] = q("""select count(*) from kernels k join steps s on s.rank = k.rank
    and k.start_ns >= s.start_ns and k.start_ns < s.start_ns + s.duration_ns where k.rank = 0 and s.number >= 2""")[0][0]
fig["torch_profiler_kernels_steps_2_7"] = J("kin.json")["torch_profiler_kernels_timed_steps"]
by_cat = dict(q("select category, count(*) from kernels where rank=0 group by 1"))
fig["kernels_rank0_by_category"] = by_cat
# module sizes: dim 1024, hidden 2816 -> a layer = 4 d^2 + 3 d h + 2 d
d, h, v = 1024, 2816, 32000
layer = 4 * d * d + 3 * d * h + 2 * d
rows = dict((r[0], r[1:]) for r in q("select fqn, param_count, param_bytes, is_fsdp_unit, reshard_policy from modules"))
fig["layers.0"] = rows.get("layers.0")
fig["layers.0_expected_params"] = layer
fig["root"] = rows.get("")
fig["root_expected_params"] = J("llama.json")["params"]
# peak memory: running sum of rank 0's memory events
total = peak = 0
for (b,) in q("select bytes from memory_events where rank = 0 order by time_ns, id"):
    total += b
    peak = max(peak, total)
fig["profile_peak_bytes_rank0"] = peak
fig["max_memory_allocated_rank0"] = J("llama.json")["max_memory_allocated"]
if peak and fig["max_memory_allocated_rank0"]:
    fig["peak_error_pct"] = 100.0 * (peak - fig["max_memory_allocated_rank0"]) / fig["max_memory_allocated_rank0"]
fig["collectives"] = q("""select e.label, count(*), min(bytes), max(bytes), max(sequence), max(group_size)
    from collectives c join enums e on e.type='collective_type' and e.value=c.type group by 1""")
fig["ranges_by_phase"] = q("select ep.label, count(*) from ranges r join enums ep on ep.type='range_phase' and ep.value=r.phase group by 1")
fig["file_mb"] = os.path.getsize(os.path.join(out, "llama.ssdb")) / 1e6
json.dump(fig, open(os.path.join(out, "figures.json"), "w"), indent=1, default=str)
print(json.dumps(fig, indent=1, default=str))
PY
