# On the GPU machine (repo root, carrying .whl and .tfw): issue 39's clock check. The engine's kernel and GPU/call
# clocks against independent CUPTI and CUDA-graph probes (one back-to-back replay series, one single replay) at
# six shapes, RUNS fresh engines each (benchmarks/clocks/fidelity.py), and the GPU/call graph's sizing test.
# Writes $OUT/r/ and $OUT/res.tgz.
OUT=${OUT:-$PWD/gpu-clocks-out}
source scripts/gpu/gpu-env.sh
tag=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oE 'H100|H200' | tr 'A-Z' 'a-z')
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version())'
echo "=== fidelity, six shapes, ${RUNS:-2} runs"
timeout ${LIMIT:-420} python3 benchmarks/clocks/fidelity.py --runs ${RUNS:-2} --duration ${DURATION:-2} --json $OUT/r/fidelity-$tag.json 2>&1 | grep -v Warning
echo "=== the graph's sizing"
timeout 120 python3 -m pytest -q -p no:cacheprovider -p no:textual-snapshot -n 0 tests/gpu/test_engine_cuda.py -k "graph_holds" 2>&1 | tail -3
} 2>&1 | tee $OUT/r/log.txt
tar czf $OUT/res.tgz -C $OUT r
