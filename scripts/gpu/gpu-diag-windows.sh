# On the GPU machine: why a short program's signature goes unprofiled, and when a long one detaches CUPTI.
# cuda_shapes.py watched twice with its windows kept (per window: each range's calls and those with GPU
# work), then truth.py (STEPS) watched once with its windows' log. Writes $OUT/res.tgz.
source scripts/gpu/gpu-env.sh
{
for i in 1 2; do
  rm -rf /tmp/tr; mkdir -p /tmp/tr
  echo "=== cuda_shapes run $i"
  SDPA_TUI_KEEP_TRACES=/tmp/tr timeout 120 python3 -m sdpa_tui watch --report /tmp/w.json -- python3 tests/watch_programs/cuda_shapes.py > /dev/null 2>/tmp/err.txt
  echo "rc $?"; grep -v "^$" /tmp/err.txt | head -5
  cat /tmp/tr/windows-*.log
  python3 - <<'PY'
import collections, glob, json
from sdpa_tui.core.traces.trace import load_trace
from sdpa_tui.core.traces.window_reading import read_window
d = json.load(open("/tmp/w.json"))
print("captures", d["captures"])
for c in d["calls"]:
    print(c["q_shape"], c["flags"][:1], c["backend"], "count", c["count"], "n", c["kernel_us"]["n"])
for path in sorted(glob.glob("/tmp/tr/*.json"), key=lambda p: __import__("os").path.getmtime(p)):
    r = read_window(load_trace(path)).reading
    per = collections.defaultdict(lambda: [0, 0, set()])
    for call in r.ranged:
        p = per[call.name]; p[0] += 1; p[1] += bool(call.activities); p[2].add(len(call.activities))
    print(path[-14:], {k: (v[0], v[1], sorted(v[2])) for k, v in sorted(per.items())})
PY
done
rm -rf /tmp/tr; mkdir -p /tmp/tr
echo "=== truth ${STEPS:-600} steps watched"
SDPA_TUI_KEEP_TRACES=/tmp/tr timeout 150 python3 -m sdpa_tui watch --report /tmp/t.json -- python3 tests/watch_programs/truth.py ${STEPS:-600} 2>/dev/null | tail -1
grep -v "^    " /tmp/tr/windows-*.log
python3 -c 'import json; print(json.load(open("/tmp/t.json"))["captures"])'
} 2>&1 | tee $OUT/r/log-diag-windows.txt
tar czf $OUT/res.tgz -C $OUT r
