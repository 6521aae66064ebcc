# On the GPU machine: the engine start-up test alone, and the Llama watch test with Kineto's CUPTI
# teardown as watch decides it (sdpa_tui/watch/probe/kernels/cupti_detach.py) and after every window (TEARDOWN_CUPTI=1), each under its own time limit.
source scripts/gpu/gpu-env.sh
{
echo "=== startup test"; timeout 100 python3 -m pytest -q -p no:cacheprovider -m cuda tests/processes/engine/test_startup_times.py 2>&1 | tail -30
echo "=== llama, watch's policy"; time timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_watch_cuda.py -k llama 2>&1 | tail -15
echo "=== llama, TEARDOWN_CUPTI=1"; time TEARDOWN_CUPTI=1 timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_watch_cuda.py -k llama 2>&1 | tail -15
} > $OUT/r/log.txt 2>&1
cat $OUT/r/log.txt
