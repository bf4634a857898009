#!/bin/bash
# Builds the GPU kit: a relocatable install tree of ShardScope in gpu-kit/ (ignored by git, taken
# to a lent GPU machine with the device tool's `carry`; docs/gpu-runs.md).
#
#   scripts/gpu/kit.sh            # build (build-kit/, no GUI), install, prove, print the manifest
#
# gpu-kit/ is what `cmake --install` gives (cmake/ShardScopeInstall.cmake) with
# SHARDSCOPE_BUNDLE_RUNTIME_DEPS=ON: bin/shardscope, lib/shardscope/ (the collector, the plugins,
# and every shared library they need that is not the C/C++ runtime, the driver or CUPTI, found
# through RPATH $ORIGIN), share/shardscope/python (the Python package) and share/shardscope/scripts
# (the training scripts). Binaries are stripped. The proof: `ldd` under `env -i` finds every library
# of the CLI, the plugins and the collector (CUPTI aside, which the target machine brings), and
# the CLI runs from the bundle in an empty environment. gpu-kit/MANIFEST.txt records what was
# built, from which commit, the ldd output and the newest glibc / libstdc++ symbol versions the
# bundle needs (the target's C/C++ runtime must be at least that new).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${KIT_BUILD_DIR:-$ROOT/build-kit}
KIT=${KIT_DIR:-$ROOT/gpu-kit}
JOBS=${JOBS:-2}

cmake -S . -B "$BUILD" -G Ninja -DSHARDSCOPE_GUI=OFF -DSHARDSCOPE_BUNDLE_RUNTIME_DEPS=ON > "$BUILD.configure.log" 2>&1 \
  || { cat "$BUILD.configure.log"; exit 1; }
grep -q "CUPTI found" "$BUILD.configure.log" || echo "kit: WARNING: CUPTI not found here; the kit has no collector" >&2
cmake --build "$BUILD" -j"$JOBS" --target shardscope
rm -rf "$KIT"
cmake --install "$BUILD" --prefix "$KIT" --strip > /dev/null

# The proof, in an empty environment.
libs=("$KIT/bin/shardscope" "$KIT"/lib/shardscope/plugins/*.so)
[ -f "$KIT/lib/shardscope/libshardscope_collector.so" ] && libs+=("$KIT/lib/shardscope/libshardscope_collector.so")
missing=0
{
  echo "ShardScope GPU kit"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!gpu-kit' 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -m)"
  echo "size: $(du -sh "$KIT" | cut -f1)"
  echo
  for f in "${libs[@]}"; do
    echo "== env -i ldd ${f#"$ROOT"/}"
    env -i /usr/bin/ldd "$f" | sed 's/ (0x[0-9a-f]*)//'
  done
  echo
  echo "== newest symbol versions needed (the target's glibc / libstdc++ must provide them)"
  for f in "${libs[@]}" "$KIT"/lib/shardscope/lib*.so*; do
    objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*\|GLIBCXX_[0-9.]*\|CXXABI_[0-9.]*' || true
  done | sort -u -V | awk -F_ '{v[$1]=$0} END {for (k in v) print "  " v[k]}' | sort
  echo
  echo "== files"
  (cd "$KIT" && find . -type f | sort)
} > "$KIT/MANIFEST.txt"
for f in "${libs[@]}"; do
  if env -i /usr/bin/ldd "$f" | grep "not found" | grep -v "libcupti"; then
    echo "kit: $f: a library is missing under env -i" >&2
    missing=1
  fi
done
env -i "$KIT/bin/shardscope" --help > /dev/null || { echo "kit: the bundled CLI does not run under env -i" >&2; exit 1; }
[ "$missing" = 0 ] || exit 1
sed -n '1,4p' "$KIT/MANIFEST.txt"
echo "kit: ready in ${KIT#"$ROOT"/}/ ($(du -sh "$KIT" | cut -f1)); dry run: scripts/gpu/checks.sh --cpu"
