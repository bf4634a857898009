#!/bin/bash
# The GPU kit's one command (docs/gpu-runs.md): every check of issue 23 in at most 9 1/3 minutes on an
# H100, from the bundle that scripts/gpu/kit.sh built (gpu-kit/), writing OUT/checks.json and
# OUT/checks.log as it goes (and OUT/artifacts.tar.gz at the end). The stages are in checks.py.
#
#   scripts/gpu/checks.sh                 # on the lent GPU machine: OUT=$OUT, python3 with torch + CUDA
#   scripts/gpu/checks.sh --cpu           # the dry run here: CPU ranks (gloo), every stage that needs
#                                         # no CUDA, in an empty environment (env -i), under 3 minutes
# Options after these go to checks.py (--only health,loop, --budget S, --kit DIR, --work DIR).
# Environment: OUT (default /tmp/ss_gpu_checks), PY (default python3; with --cpu the project's .venv).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
KIT=${KIT:-$ROOT/gpu-kit}
[ -x "$KIT/bin/shardscope" ] || { echo "checks: no kit in $KIT (run scripts/gpu/kit.sh first)" >&2; exit 2; }
OUT_DIR=${OUT:-/tmp/ss_gpu_checks}
mkdir -p "$OUT_DIR"

if [ "${1:-}" = "--cpu" ]; then
  shift
  PY=${PY:-$ROOT/.venv/bin/python}
  [ -x "$PY" ] || { echo "checks: $PY not found (scripts/python-env.sh makes it)" >&2; exit 2; }
  # An empty environment: nothing from this shell (no PATH to the build tree, no PYTHONPATH, no
  # LD_LIBRARY_PATH) reaches the bundle; only what a bare machine would have.
  HOME_DIR=$(mktemp -d /tmp/ss_kit_home.XXXXXX)
  trap 'rm -rf "$HOME_DIR"' EXIT
  env -i PATH=/usr/bin:/bin HOME="$HOME_DIR" LANG=C.UTF-8 "$PY" "$HERE/checks.py" --cpu --kit "$KIT" \
      --out "$OUT_DIR" --python "$PY" "$@"
  exit $?
fi
exec "${PY:-python3}" "$HERE/checks.py" --kit "$KIT" --out "$OUT_DIR" --python "${PY:-python3}" "$@"
