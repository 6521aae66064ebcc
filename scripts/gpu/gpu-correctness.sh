# On the GPU machine (repo root, carrying .whl and .tfw): issue 19's and 18's GPU runs. The lab's gradient check
# (report fwd+bwd: a causal bf16 call, and a padded mask at seq 576 = 4*128+64, the shape of pytorch#196678's
# cuDNN NaN grad_q), the output check's cost (benchmarks/watch_cost/watch_check_cost.py), and watch's advice on truth.py.
# Writes $OUT/res.tgz.
source scripts/gpu/gpu-env.sh
{
nvidia-smi --query-gpu=name,driver_version,utilization.gpu --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version())'
echo "=== report fwd+bwd, causal bf16 [4,16,1024,128]"
timeout 120 python3 -m sdpa_tui report --batch 4 --heads 16 --seq 1024 --head-dim 128 --dtype bf16 --causal \
  --direction fwd+bwd --json $OUT/r/grad-causal-1024.json 2>&1 | tail -14
echo "=== report fwd+bwd, padding mask bf16 [2,8/2,576,128]"
timeout 120 python3 -m sdpa_tui report --batch 2 --heads 8 --kv-heads 2 --seq 576 --head-dim 128 --dtype bf16 \
  --mask padding --direction fwd+bwd --json $OUT/r/grad-padding-576.json 2>&1 | tail -14
echo "=== output check cost"
(cd benchmarks/watch_cost && timeout 150 python3 watch_check_cost.py --json $OUT/r/watch-check-cost-h100.json)
echo "=== watch truth.py ${STEPS:-300} with advice"
timeout 200 python3 -m sdpa_tui watch --report $OUT/r/advice-truth.json -- python3 tests/watch_programs/truth.py \
  ${STEPS:-300} 2>$OUT/r/advice-err.txt | tail -30; echo "rc ${PIPESTATUS[0]}"
} 2>&1 | tee $OUT/r/log-correctness.txt
tar czf $OUT/res.tgz -C $OUT r
