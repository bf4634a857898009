#!/usr/bin/env bash
# The main job: installs what is missing, builds, and opens the bundled sample profile. With a
# display it opens the desktop app; headless (or in a build without the app) it prints the CLI
# report of the same profile.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/python-env.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
sample=resources/samples/cpu-fsdp2-llama-2rank.ssdb  # a real recording (resources/samples/README.md)
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && build/app/shardscope --help | grep -q "^  gui "; then
  exec build/app/shardscope gui "$sample"
fi
exec build/app/shardscope info "$sample"
