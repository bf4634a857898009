#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.cpp) with clang-14 + ASan + UBSan in build-fuzz
# and runs each for SECONDS (default 600) with its own corpus folder, seeded from the fixtures.
#   scripts/fuzz.sh [SECONDS] [TARGET...]       e.g. scripts/fuzz.sh 600 fuzz_kineto   (0: build only)
# Crashes are written to build-fuzz/fuzz-artifacts/<target>/; turn each into a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-600}"
shift || true
BUILD=build-fuzz
JOBS="${FUZZ_BUILD_JOBS:-2}"

cmake -S . -B "$BUILD" -G Ninja \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSHARDSCOPE_GUI=OFF -DSHARDSCOPE_BENCH=OFF -DSHARDSCOPE_SANITIZE=ON -DSHARDSCOPE_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
nice ninja -C "$BUILD" -j"$JOBS" "${targets[@]}"
if [ "$SECONDS_PER_TARGET" = "0" ]; then echo "built ${targets[*]} in $BUILD"; exit 0; fi

for t in "${targets[@]}"; do
  corpus="$BUILD/fuzz-corpus/$t"
  artifacts="$BUILD/fuzz-artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  # Seeds: the hand-written fixtures of the matching importer.
  case "$t" in
    fuzz_kineto*) cp -n tests/import/fixtures/*.json "$corpus"/ 2>/dev/null || true ;;
    fuzz_pickle*)
      # Python's own pickles (plain data, refused globals, snapshot layouts) from the test generator.
      py=.venv/bin/python; [ -x "$py" ] || py=python3
      "$py" tests/import/fixtures/make_pickles.py "$BUILD/pickle-seeds" >/dev/null
      for f in "$BUILD"/pickle-seeds/*.pickle; do
        [ "$(stat -c %s "$f")" -le 65536 ] && cp -n "$f" "$corpus"/
      done ;;
  esac
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  echo "== $t: ${SECONDS_PER_TARGET}s, corpus $corpus"
  # Keep going after a crash (-fork) so one run reports every distinct crash it finds.
  nice -n 19 "$BUILD/tests/fuzz/$t" "$corpus" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 \
    -timeout=10 -max_len=65536 -artifact_prefix="$artifacts/" -print_final_stats=1 "${dict[@]}" 2>&1 | tee "$BUILD/fuzz-$t.log" | tail -25
  echo "crash files: $(ls "$artifacts" | wc -l) in $artifacts"
done
