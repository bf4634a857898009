#!/usr/bin/env bash
# Regenerates the screenshots in docs/screenshots from a GUI build, under Xvfb at 1600x1000, from
# the bundled samples, the model descriptions and the real traces in ../shared/data/traces
# (those shots are skipped, with a message, where the folder is absent). docs/gui.md
# ("Screenshots") says what each one shows.
#
#   scripts/screenshots.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, docs/screenshots)
#
# Each `gui --screenshot` run writes its fixed file names into a scratch folder of its own; the
# ones kept are copied under the names the docs use. Look at them before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-docs/screenshots}
exe="$build/app/shardscope"
[ -x "$exe" ] || { echo "screenshots.sh: $exe not built (a GUI build)" >&2; exit 2; }
traces=../shared/data/traces
work=$(mktemp -d /tmp/shardscope-shots.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

xvfb() { xvfb-run -a -s "-screen 0 1600x1000x24" "$@"; }
# shot NAME ARGS...: runs `gui ARGS --screenshot` into $work/NAME
shot() {
  local name=$1; shift
  mkdir -p "$work/$name"
  echo "== $name: gui $*"
  xvfb "$exe" gui "$@" --screenshot "$work/$name" >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; return 1; }
}
keep() { cp "$work/$1" "$out/$2"; echo "   $out/$2"; }

sample=resources/samples/cpu-fsdp2-llama-2rank.ssdb
shot sample "$sample"
keep sample/sample-main-window.png sample-main-window.png
keep sample/analyses.png analyses.png
keep sample/unshard-panel.png unshard-panel.png
keep sample/memory.png memory-cpu-sample.png

# The Unshard tab with measured per-unit figures (gui --cluster; measure_fsdp_units' figures on the
# 2-core VM, 2026-12-06), staged with Plan buckets.
echo '{"name": "fsdp-units-measured", "fsdp_unit_forward_us": 905.4, "fsdp_unit_backward_us": 3847.8}' >"$work/units.json"
shot measured "$sample" --cluster "$work/units.json"
keep measured/unshard-panel.png whatif-measured-cluster.png

# A plan from the command line opened on its profile (gui FILE --plan): kept units under a budget
# and buckets, from `plan --budget --buckets` with the per-unit figures above.
"$exe" plan "$sample" --budget 96MiB --buckets --cluster "$work/units.json" -o "$work/cli-plan.json" >/dev/null
shot cliplan "$sample" --plan "$work/cli-plan.json" --cluster "$work/units.json"
keep cliplan/unshard-plan.png unshard-plan.png

# A recording with a capture window, so calibrated to the job without the profiler: the user's
# own loop (tests/python/user_loop.py) evaluating after every second step, steps 2-3 profiled,
# recorded here with the project's venv (skipped without it).
if [ -x .venv/bin/python ]; then
  OMP_NUM_THREADS=1 PYTHONPATH=profiler/python "$exe" record -o "$work/window.ssdb" --steps 2:4 -- .venv/bin/python -m \
    torch.distributed.run --nproc_per_node=2 --standalone tests/python/user_loop.py --device cpu --extras --steps 8 \
    >"$work/window.log" 2>&1 || { cat "$work/window.log"; exit 1; }
  shot window "$work/window.ssdb"
  keep window/unshard-panel.png unshard-panel-unprofiled.png
else
  echo "== window: skipped (no .venv: scripts/python-env.sh makes it)"
fi

shot synthetic resources/samples/synthetic-fsdp-4rank.ssdb
keep synthetic/unshard-panel.png unshard-panel-warning.png
keep synthetic/memory.png memory-synthetic.png

shot h100 resources/samples/h100-fsdp2-decoder-1gpu.ssdb
keep h100/sample-main-window.png h100-sample-main-window.png
keep h100/memory.png memory-h100-sample.png

echo '{"gradient_accumulation": 16, "parallelism": {"tp": 8, "sequence_parallel": true, "pp": 4}}' >"$work/tp8-pp4.json"
shot model --model resources/models/llama3-8b.json --world 64 --plan "$work/tp8-pp4.json"
keep model/whatif-panel.png whatif-panel.png
keep model/whatif-timeline-lanes.png whatif-timeline-lanes.png

# A bucket plan (plan --buckets) applied in the panel: the Bucket column names each unit's list.
"$exe" plan --model resources/models/qwen1.5-moe-a2.7b.json --world 64 --buckets -o "$work/buckets.json" >/dev/null
shot buckets --model resources/models/qwen1.5-moe-a2.7b.json --world 64 --plan "$work/buckets.json"
keep buckets/whatif-panel.png whatif-buckets.png

# The two shots the GUI tests take at the moments they check (docs/gui.md).
echo "== test shots (test_timeline_gui, test_compare_gui)"
mkdir -p "$work/tests"
SHARDSCOPE_SCREENSHOT_DIR="$work/tests" xvfb "$build/tests/views/test_timeline_gui" "View > Whole profile*" >/dev/null
SHARDSCOPE_SCREENSHOT_DIR="$work/tests" xvfb "$build/tests/views/test_compare_gui" "the what-if panel's controls*" >/dev/null
keep tests/memory-after-deep-zoom-and-ctrl0.png memory-after-deep-zoom-and-ctrl0.png
keep tests/whatif-panel-after-undo.png whatif-panel-after-undo.png

if [ -d "$traces/nsys-h100-fsdp-2gpu" ] && [ -d "$traces/kineto-v100-dlrm-8ranks" ]; then
  "$exe" import "$traces/nsys-h100-fsdp-2gpu/mfu_2gpu_after.sqlite" -o "$work/nsys-after.ssdb" >/dev/null 2>&1
  "$exe" import "$traces/nsys-h100-fsdp-2gpu/mfu_2gpu_before.sqlite" -o "$work/nsys-before.ssdb" >/dev/null 2>&1
  "$exe" import "$traces"/kineto-v100-dlrm-8ranks/*.json.gz -o "$work/dlrm8.ssdb" >/dev/null 2>&1
  shot nsys "$work/nsys-after.ssdb"
  keep nsys/main-window.png main-window.png
  keep nsys/memory.png memory.png
  shot dlrm "$work/dlrm8.ssdb"
  keep dlrm/timeline.png timeline.png
  keep dlrm/sample-main-window.png first-screen-8rank.png
  shot compare "$work/nsys-before.ssdb" --compare "$work/nsys-after.ssdb"
  keep compare/compare.png compare-real.png
else
  echo "screenshots.sh: $traces absent: main-window, memory, timeline, first-screen-8rank and compare-real not retaken" >&2
fi
echo "screenshots.sh: done; look at each one in $out"
