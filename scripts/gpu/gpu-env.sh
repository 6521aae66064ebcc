# Sourced by the device steps beside it (scripts/gpu/*.sh) on the GPU machine (repo root, carrying .whl
# with Textual and friends and .tfw with transformers): install them beside the project, unbuffered output.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --find-links .tfw --no-compile --no-cache-dir transformers > /dev/null 2>&1 \
  || echo "transformers install failed (carry .tfw)"
export PYTHONPATH=$PWD/.site:$PWD
mkdir -p "$OUT/r"
