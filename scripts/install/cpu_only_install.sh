#!/usr/bin/env bash
# A machine without a GPU, set up as the README says: torch's CPU-only build first (about 200 MB instead of the
# default CUDA build's 5 GB), then this project, in a clean venv; then a report on the CPU. Checks that pip kept
# the CPU build (the project only asks for torch>=2.11).
#   bash scripts/install/cpu_only_install.sh                      # torch from PyTorch's CPU index, as the README says
#   TORCH_SPEC='torch==2.13.0+cpu' bash scripts/install/cpu_only_install.sh   # a CPU build from the index pip is set up with
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
venv=${VENV:-$(mktemp -d)/venv}
python3 -m venv "$venv"
if [ -n "${TORCH_SPEC:-}" ]; then
  "$venv/bin/pip" install -q "$TORCH_SPEC"
else
  "$venv/bin/pip" install -q torch --index-url https://download.pytorch.org/whl/cpu
fi
"$venv/bin/pip" install -q .
rm -rf build sdpa_tui.egg-info
"$venv/bin/python" -c 'import torch; print("torch", torch.__version__, "CUDA build" if torch.version.cuda else "CPU build")'
"$venv/bin/pip" list 2>/dev/null | grep -ci '^nvidia-.*-cu' | sed 's/^/CUDA library packages (nvidia-*-cu*) installed: /' || true
du -sh "$venv" | sed 's/^/venv size: /'
cd "$(mktemp -d)" && "$venv/bin/sdpa-tui" report --device cpu --batch 1 --heads 2 --seq 64 --head-dim 32 --duration 1
