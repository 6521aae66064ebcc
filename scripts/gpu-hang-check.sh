# On the GPU machine: the engine start-up test alone, and the Llama watch test with Kineto's CUPTI
# teardown off (watch's default) and on (TEARDOWN_CUPTI=1), each under its own time limit.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --find-links .tfw --no-compile --no-cache-dir transformers > /dev/null 2>&1
export PYTHONPATH=$PWD/.site:$PWD
mkdir -p $OUT/r
{
echo "=== startup test"; timeout 100 python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_startup_times.py 2>&1 | tail -30
echo "=== llama, teardown off"; time timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_watch_cuda.py -k llama 2>&1 | tail -15
echo "=== llama, TEARDOWN_CUPTI=1"; time TEARDOWN_CUPTI=1 timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_watch_cuda.py -k llama 2>&1 | tail -15
} > $OUT/r/log.txt 2>&1
cat $OUT/r/log.txt
