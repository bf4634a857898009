#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs every test: the full build (with the
# desktop app) and an ASan + UBSan build of the non-GUI libraries and their tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/python-env.sh
jobs=$(nproc)
# The FSDP2 tests must run here, not skip: a missing torch fails them (tests/python/_torch_or_skip.py).
export SHARDSCOPE_REQUIRE_TORCH=1

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

# Sanitizers: every non-GUI test again (Python tests run an uninstrumented interpreter: skipped).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSHARDSCOPE_GUI=OFF -DSHARDSCOPE_SANITIZE=ON \
  -DSHARDSCOPE_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE python
