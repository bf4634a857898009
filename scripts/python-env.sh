#!/usr/bin/env bash
# Creates (once) the project-local virtual environment .venv with a current PyTorch from PyPI
# (FSDP2 `fully_shard`, DTensor, torch.profiler; CPU training over gloo) and what the Python tests
# and real-run checks use. About 2 minutes and 5.4 GB on a fresh machine; nothing when it is
# already there. Debian's python3-torch (1.13) has no FSDP2, so it is not used.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
stamp=$venv/.shardscope-requirements
want=$(cat scripts/python-requirements.txt)
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
   "$venv/bin/python" -c "from torch.distributed.fsdp import fully_shard" 2>/dev/null; then
  echo "python-env: $venv ready ($("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
  exit 0
fi
py=$(command -v python3)
echo "python-env: creating $venv with $py and installing scripts/python-requirements.txt (a few minutes)"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r scripts/python-requirements.txt
"$venv/bin/python" -c "from torch.distributed.fsdp import fully_shard; import torch; print('python-env: torch', torch.__version__)"
echo "$want" > "$stamp"
