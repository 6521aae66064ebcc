# On the GPU machine (repo root, carrying .whl and .tfw): every cuda-marked test, the watched step's cost,
# the wrapper's per-call cost, and the watch screenshots. Writes $OUT/res.tgz.
source scripts/gpu-env.sh
{
echo "=== cuda tests"; timeout 270 python3 -m pytest -q -p no:cacheprovider -m cuda tests/ 2>&1 | tail -25
echo "=== step cost"; timeout 180 python3 benchmarks/watch_step_cost.py --steps 300 --rounds 1 --json $OUT/r/watch-step-cost-h100.json
echo "=== watch screenshots"; timeout 100 python3 scripts/watch_screenshots.py --device cuda --out $OUT/r --tag h100
} 2>&1 | tee $OUT/r/log.txt
tar czf $OUT/res.tgz -C $OUT r
