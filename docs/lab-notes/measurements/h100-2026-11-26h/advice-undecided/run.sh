set -u
# prev: the commit before a3e5927 (git archive a3e5927~1 sdpa_tui | tar -x -C prev); now: a3e5927. Run on the GPU
# machine from the checkout root with .whl carried (docs/lab-notes/measurements/h100-2026-11-26h, eleventh session).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .whl/*.whl || exit 1
mkdir -p $OUT/r
for i in 1 2; do
  for side in prev now; do
    where=$PWD; [ $side = prev ] && where=$PWD/prev
    PYTHONPATH=$where:$PWD/.site python3 -m sdpa_tui watch --no-flex --report $OUT/r/calls-$side-$i.json -- \
      python3 tests/watch_programs/cuda_shapes.py 40 > $OUT/r/calls-$side-$i.txt 2>&1; echo "$side $i exit=$?"
  done
done
python3 - $OUT/r <<'PY'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("calls-*.json")):
    d = json.loads(f.read_text())
    print(f.stem, d["advice"]["note"][:90])
    for c in d["calls"]:
        a = c.get("advice") or {}
        print("   ", c["signature"][:60] if isinstance(c.get("signature"), str) else "", c["backend"], "->", (c.get("best") or {}).get("backend"), a.get("current_us"), a.get("best_us"))
PY
tar -czf $OUT/advice-ab.tgz -C $OUT r
