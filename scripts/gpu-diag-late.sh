# On the GPU machine: late_shapes.py watched with its windows kept, the windows' log and a summary of each trace,
# with watch's CUPTI policy (default) and with TEARDOWN_CUPTI=0. Writes $OUT/res.tgz.
source scripts/gpu-env.sh
{
for t in default 0; do
  rm -rf /tmp/tr; mkdir -p /tmp/tr
  echo "=== TEARDOWN_CUPTI=$t"
  if [ $t = default ]; then unset TEARDOWN_CUPTI; else export TEARDOWN_CUPTI=$t; fi
  SDPA_TUI_KEEP_TRACES=/tmp/tr timeout 120 python3 -m sdpa_tui watch --report /tmp/late.json -- python3 tests/watch_programs/late_shapes.py
  echo "rc $?"
  cat /tmp/tr/windows-*.log
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("captures", d["captures"])
for c in d["calls"]:
    print(c["q_shape"], c["backend"], "count", c["count"], "fwd", c["kernel_us"], c["kernels"][:2])
' /tmp/late.json
  python3 scripts/diag_traces.py /tmp/tr
done
unset TEARDOWN_CUPTI
echo "=== llama test, full"
timeout 200 python3 -m pytest -q -p no:cacheprovider -x tests/test_watch_cuda.py -k llama 2>&1 | grep -v "^  " | tail -60
} 2>&1 | tee $OUT/r/log-diag.txt
tar czf $OUT/res.tgz -C $OUT r
