#!/usr/bin/env bash
# The tests that run torch itself (marker torch_range: the engine, watch's probe, the profiler, dispatch, autograd,
# compile, FlexAttention) against another torch, in a venv of its own. torch comes from PyPI (a CUDA build, about
# 5 GB: CI reaches PyPI and no other index), or from the index TORCH_INDEX names (PyTorch's CPU wheel index, for
# one, about 200 MB a build, where a machine reaches it):
#   bash scripts/install/torch_range.sh floor      # the oldest torch pyproject.toml allows (CI, after the
#                                                 # README's test command)
#   bash scripts/install/torch_range.sh newest     # the newest torch on the index (CI too): a pip constraints
#                                                 # file that caps torch is set aside for this venv
#   bash scripts/install/torch_range.sh 2.11.0     # a given release
#   bash scripts/install/torch_range.sh 2.11.0 tests/processes/watch/test_watch_cpu.py   # other tests: pytest's
#                                                 # arguments
#   bash scripts/install/torch_range.sh 2.11.0 tests   # the whole suite
# The venv goes to ${VENV:-/tmp/sdpa-tui-torch-VERSION} and is kept for the next run; the project is installed
# into it editable from here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
version=$1; shift
if [ "$version" = floor ]; then
  # "torch>=2.11" in pyproject.toml -> 2.11.0
  version=$(python3 -c 'import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
floor = next(re.fullmatch(r"torch\s*>=\s*([0-9.]+)", d.strip()).group(1) for d in deps if d.strip().startswith("torch"))
print(floor + ".0" * (2 - floor.count(".")))')
  echo "torch_range: the floor pyproject.toml allows is torch $version"
fi
venv=${VENV:-/tmp/sdpa-tui-torch-$version}
index=(${TORCH_INDEX:+--index-url "$TORCH_INDEX"})
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if [ "$version" = newest ]; then
  # the newest release the index has, whatever a machine-wide pip constraints file caps torch at (PIP_CONSTRAINT
  # replaces that file's setting for these two installs only; an empty file of its own, not /dev/null, which a
  # container may have as a regular file that something wrote to)
  empty_constraints=$(mktemp)
  trap 'rm -f "$empty_constraints"' EXIT
  export PIP_CONSTRAINT=$empty_constraints
  "$venv/bin/pip" install -q --upgrade "${index[@]}" torch
else
  "$venv/bin/pip" install -q "${index[@]}" "torch==$version"
fi
"$venv/bin/pip" install -q -e '.[test]'
rm -rf build sdpa_tui.egg-info
"$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'
[ $# -gt 0 ] || set -- -m torch_range
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
