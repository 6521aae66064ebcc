# On the GPU machine: a watch program (PROGRAM, default cuda_shapes.py) watched with its windows kept: the windows'
# log, the report's rows and a summary of each trace. Writes $OUT/res.tgz.
source scripts/gpu/gpu-env.sh
PROGRAM=${PROGRAM:-cuda_shapes.py}
{
rm -rf /tmp/tr; mkdir -p /tmp/tr
SDPA_TUI_KEEP_TRACES=/tmp/tr timeout 120 python3 -m sdpa_tui watch --report /tmp/w.json -- python3 tests/watch_programs/$PROGRAM > /dev/null
echo "rc $?"
cat /tmp/tr/windows-*.log
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("captures", d["captures"])
for c in d["calls"]:
    print(c["q_shape"], c["flags"], c["backend"], "count", c["count"], "fwd", c["kernel_us"], [k[:40] for k in c["kernels"][:4]])
' /tmp/w.json
python3 scripts/diagnostics/diag_traces.py /tmp/tr
} 2>&1 | tee $OUT/r/log-diag.txt
