# Sourced by the device steps beside it (scripts/gpu/*.sh) on the GPU machine (repo root, carrying .whl
# with Textual and friends and .tfw with transformers): install them beside the project, unbuffered output.
# Fill them here once (both git-ignored through .git/info/exclude): `bash ../shared/device/wheels.sh` writes .whl;
# `python3 -m pip download -d .tfw --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64
# --platform manylinux2014_x86_64 --platform any transformers`, then drop from .tfw what the machine has (torch,
# numpy, pygments, nvidia-*, triton, sympy, mpmath, networkx): a call carries 64 MiB with the tracked tree.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .whl/*.whl || exit 1
# --upgrade: the machine's image has a transformers of its own (5.17.0 in 2026-11/12), which a plain install leaves in
# place ("already satisfied"); the carried one replaces it, its dependencies upgraded only where it needs them
python3 -m pip install -q --upgrade --no-index --find-links .tfw --no-compile --no-cache-dir transformers > /tmp/tfw-install.txt 2>&1 \
  || { echo "transformers install failed (carry .tfw):"; tail -3 /tmp/tfw-install.txt; }
python3 - <<'PY'  # which transformers the run has: the logs say it
from importlib.metadata import PackageNotFoundError, version
def have(name):
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"
print("transformers", have("transformers"), "kernels", have("kernels"), "huggingface-hub", have("huggingface-hub"))
PY
export PYTHONPATH=$PWD/.site:$PWD
# the project's bytecode, as pip's install writes it: a checkout run where PYTHONDONTWRITEBYTECODE is set would
# otherwise compile every module the watch host and probe import, in every run (a cost no user's install has)
echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset}"; python3 -m compileall -q sdpa_tui > /dev/null
# transformers' too (installed --no-compile above, quicker in parallel here): without it every run of a transformers
# program compiles the modules it imports (on the 2-core VM the Llama's transformers import took 6.0 s that way, 2.1 s
# from bytecode); the log says how many of its modules have bytecode
tf=$(python3 -c "import importlib.util as u; s = u.find_spec('transformers'); print(s.submodule_search_locations[0] if s else '')")
if [ -n "$tf" ]; then
  python3 -m compileall -q -j 0 "$tf" > /dev/null
  echo "transformers: $(find "$tf" -name '*.pyc' | wc -l) of $(find "$tf" -name '*.py' | wc -l) modules with bytecode"
fi
mkdir -p "$OUT/r"
