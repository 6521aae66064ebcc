set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --find-links .tfw --no-compile --no-cache-dir transformers > /dev/null 2>&1 || echo "transformers install failed"
export PYTHONPATH=$PWD/.site:$PWD
mkdir -p $OUT/r
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version(), "transformers", transformers.__version__)'
echo "=== watch cuda tests"; timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_watch_cuda.py 2>&1 | tail -40
echo "=== truth"; timeout 400 python3 benchmarks/watch_truth.py --steps 60 --json $OUT/r/watch-truth-h100.json 2>&1 | tail -40
echo "=== overhead"; timeout 120 python3 benchmarks/watch_overhead.py --device cuda --json $OUT/r/watch-overhead-cuda.json 2>&1 | tail -20
} 2>&1 | tee $OUT/r/log.txt
tar czf $OUT/res.tgz -C $OUT r
