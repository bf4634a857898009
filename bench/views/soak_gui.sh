#!/usr/bin/env bash
# The long soak of the main window (issue 24): the test CI runs for 120 actions per profile
# (tests/views/test_gui_soak.cpp), here for many seeds and more actions, on the bundled sample and
# a 1M-kernel profile, under Xvfb at 1600x1000. Prints each run's worst action (main-thread CPU)
# and resident memory; a failing run prints its seed and action, which the CI test replays with
# SHARDSCOPE_SOAK_SEED=<seed> SHARDSCOPE_SOAK_ACTIONS=<n>.
#
#   bench/views/soak_gui.sh BUILD_DIR [SEEDS] [ACTIONS]      e.g. bench/views/soak_gui.sh build 10 400
set -euo pipefail
build=${1:?usage: soak_gui.sh BUILD_DIR [SEEDS] [ACTIONS]}
seeds=${2:-10}
actions=${3:-400}
exe="$build/tests/views/test_gui_soak"
[ -x "$exe" ] || { echo "soak_gui.sh: $exe not built (a GUI build: cmake -DSHARDSCOPE_GUI=ON)" >&2; exit 2; }
failed=0
for seed in $(seq 1 "$seeds"); do
  if ! out=$(SHARDSCOPE_SOAK_SEED=$seed SHARDSCOPE_SOAK_ACTIONS=$actions \
             xvfb-run -a -s "-screen 0 1920x1080x24" "$exe" 2>&1); then
    failed=$((failed + 1))
    echo "seed $seed: FAILED"
    echo "$out" | grep -E "SOAK HANG|with message|main thread busy|REQUIRE" -A2 | head -12
  else
    echo "$out" | grep -E "^soak "
  fi
done
echo "soak_gui.sh: $seeds seeds x $actions actions per profile, $failed failed"
[ "$failed" -eq 0 ]
