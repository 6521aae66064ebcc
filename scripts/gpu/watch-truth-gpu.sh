# On the GPU machine (run from the repo root, carrying .whl and .tfw): watch against torch.profiler.
# Writes $OUT/res.tgz: the log, benchmarks' JSON, and one watched run's window logs (SDPA_TUI_KEEP_TRACES).
source scripts/gpu/gpu-env.sh
STEPS=${STEPS:-300}
ROUNDS=${ROUNDS:-3}
mkdir -p /tmp/traces
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version(), "transformers", transformers.__version__)'
echo "=== one watched run, its profiler windows kept"
SDPA_TUI_KEEP_TRACES=/tmp/traces timeout 200 python3 -m sdpa_tui watch --report $OUT/r/watched-run.json -- \
  python3 tests/watch_programs/truth.py 60
cat /tmp/traces/windows-*.log
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("captures", d["captures"])
for c in d["calls"]:
    print(c["q_shape"], c["kv_shape"], c["mask"]["shape"], "grad" if c["grad"] else "", "compiled" if c["compiled"] else "",
          c["backend"], "count", c["count"], "fwd", c["kernel_us"], "bwd", (c["backward"] or {}).get("kernel_us"))
' $OUT/r/watched-run.json

echo "=== CUPTI left attached (TEARDOWN_CUPTI=0) against detached after every window (TEARDOWN_CUPTI=1); watch's own policy: benchmarks/watch_cost/watch_step_cost.py"
for t in 0 1; do
  TEARDOWN_CUPTI=$t timeout 200 python3 -m sdpa_tui watch --report /tmp/t$t.json -- python3 tests/watch_programs/truth.py $STEPS 2>/dev/null | tail -1 | sed "s/^/TEARDOWN_CUPTI=$t watched: /"
done
timeout 200 python3 tests/watch_programs/truth.py $STEPS | tail -1 | sed "s/^/plain: /"
echo "=== truth"; timeout 400 python3 benchmarks/watch_truth/watch_truth.py --steps $STEPS --rounds $ROUNDS --json $OUT/r/watch-truth-h100.json 2>&1 | tail -40
} 2>&1 | tee $OUT/r/log.txt
tar czf $OUT/res.tgz -C $OUT r
