# On the GPU machine (repo root, carrying .whl and .tfw): issue 39's first look. Where GPU/call, a one-replay
# probe and the kernel sum part (scripts/diagnostics/diag_gpu_call.py), the engine's clocks against benchmarks/clocks/fidelity.py
# and report, and a 10-s watched training program's windows (benchmarks/watch_cost/watch_step_cost.py, windows' logs kept).
# Writes $OUT/r/ and $OUT/res.tgz.
OUT=${OUT:-$PWD/gpu-diag-out}
source scripts/gpu/gpu-env.sh
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version())'
echo "=== diag_gpu_call"; timeout 300 python3 scripts/diagnostics/diag_gpu_call.py $OUT/r/diag-gpu-call.json
echo "=== report small"; timeout 60 python3 -m sdpa_tui report --json $OUT/r/report-small.json | tail -12
echo "=== report 8k causal"; timeout 60 python3 -m sdpa_tui report --batch 1 --heads 16 --seq 8192 --head-dim 128 \
  --dtype bf16 --causal --json $OUT/r/report-8k.json | tail -12
echo "=== fidelity"; timeout 150 python3 benchmarks/clocks/fidelity.py --json $OUT/r/fidelity.json 2>&1 | tail -20
echo "=== watch step cost (a ~10-s program)"; STEPS=${STEPS:-170}
SDPA_TUI_TEST_LLAMA=large timeout 200 python3 benchmarks/watch_cost/watch_step_cost.py --llama large --steps $STEPS --rounds 2 \
  --only windows --json $OUT/r/watch-step-cost.json 2>&1 | tail -25
} 2>&1 | tee $OUT/r/log.txt
tar czf $OUT/res.tgz -C $OUT r
