#!/usr/bin/env bash
# The CPU test suite against another torch, in a venv of its own (about 5 GB; torch's CUDA wheels from PyPI):
#   bash scripts/torch_range.sh 2.11.0            # the floor pyproject.toml allows
#   bash scripts/torch_range.sh 2.11.0 tests/test_watch_cpu.py   # some tests only
# The venv goes to ${VENV:-/tmp/sdpa-tui-torch-VERSION}; the project is installed into it editable from here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version=$1; shift
venv=${VENV:-/tmp/sdpa-tui-torch-$version}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q "torch==$version"
"$venv/bin/pip" install -q -e '.[test]'
rm -rf build sdpa_tui.egg-info
"$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
