#!/usr/bin/env bash
# The Python API against the command on a GPU (issue 41): the same tiny transformers Trainer run
# (tests/watch_programs/hf_trainer.py on cuda, bf16) under `sdpa-tui watch --report` and with TrainerWatchCallback,
# each twice, one after the other (never two at once on the GPU), then each signature's median kernel time per
# run side by side, and `compare` of the first two. Writes everything under $OUT/r (default ./gpu-api-check-out/r).
#   bash scripts/gpu/gpu_api_check.sh            STEPS=200 bash scripts/gpu/gpu_api_check.sh
# The GPU machine lacks transformers: fill .tfw here once (git-ignored) and carry it, as for scripts/gpu/gpu-check.sh:
#   python3 -m pip download -d .tfw --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
#     --platform manylinux2014_x86_64 --platform any transformers accelerate
set -uo pipefail
OUT=${OUT:-$PWD/gpu-api-check-out}
R=$OUT/r
mkdir -p "$R"
STEPS=${STEPS:-120}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if [ -d .tfw ]; then
  python3 -m pip install -q --no-index --find-links .tfw --no-compile --no-cache-dir transformers accelerate || exit 1
fi
program=(tests/watch_programs/hf_trainer.py --device cuda --bf16 --steps "$STEPS")
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
  for run in 1 2; do
    echo "=== watch --report, run $run"
    python3 -m sdpa_tui watch --report "$R/command-$run.json" --no-advice -- python3 "${program[@]}" \
      > "$R/command-$run.log" 2>&1; echo "exit $?"
    echo "=== TrainerWatchCallback, run $run"
    python3 "${program[@]}" --callback "$R/callback-$run.json" > "$R/callback-$run.log" 2>&1; echo "exit $?"
  done
  echo "=== kernel time per call (median, us) and calls, per signature"
  python3 - "$R"/command-1.json "$R"/callback-1.json "$R"/command-2.json "$R"/callback-2.json <<'PY'
import json
import sys

runs = [(path.rsplit("/", 1)[-1].removesuffix(".json"), json.load(open(path))) for path in sys.argv[1:]]
keys = []
for _, report in runs:
    for call in report["calls"]:
        key = (call["site"], tuple(call["q_shape"]), tuple(call["kv_shape"]), call["dtype"], call["grad"])
        if key not in keys:
            keys.append(key)
print(f"{'signature':58}" + "".join(f"{name:>22}" for name, _ in runs))
for key in keys:
    cells = []
    for _, report in runs:
        call = next((c for c in report["calls"]
                     if (c["site"], tuple(c["q_shape"]), tuple(c["kv_shape"]), c["dtype"], c["grad"]) == key), None)
        def median(summary):
            value = (summary or {}).get("median")
            return "n/a" if value is None else f"{value:.2f}"

        cells.append("-" if call is None else f"{median(call.get('kernel_us'))}/"
                     f"{median((call.get('backward') or {}).get('kernel_us'))} x{call['count']}")
    site, q, kv, dtype, grad = key
    print(f"{site.rsplit('/', 1)[-1] + ' q' + str(list(q)) + ' kv' + str(list(kv)) + (' grad' if grad else ''):58}"
          + "".join(f"{c:>22}" for c in cells))
print("cells: forward/backward kernel median in us, x calls")
PY
  echo "=== compare command-1 callback-1"
  python3 -m sdpa_tui compare "$R/command-1.json" "$R/callback-1.json"
  echo "compare exit $?"
} 2>&1 | tee "$R/gpu_api_check.log"
