#!/usr/bin/env bash
# Installs the Debian 12 packages ShardScope needs to build, test and run, when they are missing.
# Runs as root, or through sudo. Safe to run again: it installs nothing when all are present.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # libraries (C++ dependencies come from Debian only)
  libsqlite3-dev sqlite3 zlib1g-dev libsimdjson-dev catch2 libbenchmark-dev
  # desktop app: Qt 6 Widgets + OpenGL + Charts, Dear ImGui 1.86, software GL and Xvfb for headless runs
  qt6-base-dev libqt6opengl6-dev qt6-charts-dev libimgui-dev libstb-dev libgl-dev libgl1-mesa-dri xvfb xauth
  # Python for the project-local .venv (scripts/python-env.sh installs torch from PyPI into it)
  python3 python3-venv python3-pip
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then as_root=(sudo); else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
