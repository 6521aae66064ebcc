set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --find-links .tfw --no-compile --no-cache-dir transformers > /dev/null 2>&1
export PYTHONPATH=$PWD/.site:$PWD
mkdir -p $OUT/r
{
echo "=== step cost"; timeout 330 python3 benchmarks/watch_step_cost.py --steps 300 --rounds 2 --json $OUT/r/watch-step-cost-h100.json
echo "=== watch screenshots"; timeout 200 python3 scripts/watch_screenshots.py --device cuda --out $OUT/r --tag h100
} 2>&1 | tee $OUT/r/log.txt
tar czf $OUT/res.tgz -C $OUT r
