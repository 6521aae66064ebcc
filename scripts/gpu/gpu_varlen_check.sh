# On the GPU machine (repo root, carrying .whl and .tfw; scripts/gpu/gpu-env.sh says how): packed attention for padded
# batches (issue 40). PART=lab: report --padding 0.25 and 0.6 and sweep --padding on a Llama-sized workload;
# PART=watch: a transformers Llama from a config (random weights) on a batch padded 25 % and 60 %, watched with
# --report (the advice and its saving), then the same program with the advised code applied by hand
# (tests/watch_programs/hf_padded_packed.py --code-from) watched again: the saving realised against the promise
# and the real tokens' logits (PADS='0.25 0.6' and BUDGET=90, the advice's seconds, by default; WATCH_FLAGS e.g. --no-flex; HIDDEN the model's hidden size, 1024); PART=tests: the cuda-marked packed-attention tests; PART=diag: where the time goes (scripts/diagnostics/diag_packed_kernels.py); PART=by-hand: varlen_attn's code applied to the program whatever the advice says, unwatched (what packing gives it; ROUNDS such runs); PART=pace: the host's leads read by watch (no advice) and the code by hand, at each CONFIGS hidden:seq; PART=all (default): lab, watch and tests; several parts: PART='diag watch'.
# Writes logs and results under $OUT/r and $OUT/res.tgz.
OUT=${OUT:-$PWD/gpu-check-out}
source scripts/gpu/gpu-env.sh
PART=${PART:-all}
SEQ=${SEQ:-1024}
DTYPE=${DTYPE:-bfloat16}
lab() {
  for pad in 0.25 0.6; do
    echo "=== report --padding $pad [8, 16, $SEQ, 128] bf16 fwd+bwd"
    timeout 300 python3 -m sdpa_tui report --padding $pad --batch 8 --heads 16 --kv-heads 4 --seq $SEQ --head-dim 128 \
      --dtype bf16 --direction fwd+bwd --json $OUT/r/report-padding-$pad.json --markdown $OUT/r/report-padding-$pad.md
  done
  echo "=== sweep --padding [8, 16, $SEQ, 128] bf16 fwd+bwd"
  timeout 400 python3 -m sdpa_tui sweep --padding 0,0.1,0.25,0.4,0.6,0.8 --seq $SEQ --batch 8 --heads 16 --kv-heads 4 \
    --head-dim 128 --dtype bf16 --direction fwd+bwd --json $OUT/r/sweep-padding.json
}
watched() {
  for pad in ${PADS:-0.25 0.6}; do
    echo "=== watch: the Llama on a batch padded $pad (SDPA) [$(date +%T)]"
    timeout 400 python3 -m sdpa_tui watch --report $OUT/r/watch-padded-$pad.json --advice-budget ${BUDGET:-90} ${WATCH_FLAGS:-} -- \
      python3 tests/watch_programs/hf_padded_packed.py cuda $DTYPE $SEQ $pad --hidden ${HIDDEN:-1024} --steps ${STEPS:-40}
    echo "=== the same program, the advised code applied by hand, watched again [$(date +%T)]"
    timeout 400 python3 -m sdpa_tui watch --report $OUT/r/watch-packed-$pad.json --advice-budget 30 -- \
      python3 tests/watch_programs/hf_padded_packed.py cuda $DTYPE $SEQ $pad --hidden ${HIDDEN:-1024} \
      --code-from $OUT/r/watch-padded-$pad.json \
      --json $OUT/r/realised-$pad.json
    python3 - "$OUT/r/realised-$pad.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except OSError:
    sys.exit("no result: the advised program did not run (see above)")
ratio = r["realised_over_promised"]
print(f"padding {r['padding']:.0%}: promised {r['promised_us_per_step']:.0f} µs a step ({r['promised_clock']} clock), "
      f"realised {r['realised_us_per_step']:.0f} µs ({ratio:.2f} of the promise: "
      f"{'within' if ratio is not None and abs(ratio - 1) <= 0.10 else 'NOT within'} 10 %); "
      f"real tokens' logits max rel diff {r['logits_max_rel_diff_real_tokens']:.1e}")
PY
  done
}
by_hand() {  # the packed code applied by hand whatever the advice says: what packing gives the program, unwatched
  for pad in ${PADS:-0.25 0.6}; do
    python3 - "$OUT/r/varlen-code-$pad.json" "$SEQ" "${HIDDEN:-1024}" <<'PY'
import json, sys
from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.mask_forms import CAUSAL_KEY_PADDING
from sdpa_tui.core.calls.packed_alternative import varlen_code
seq, dim = int(sys.argv[2]), int(sys.argv[3]) // 16
sig = CallSignature((8, 16, seq, dim), (8, 16, seq, dim), "torch.bfloat16", "cuda:0", "bool", (8, 1, seq, seq),
                    scale=dim ** -0.5, grad=True)
call = {"mask": {"form": CAUSAL_KEY_PADDING}, "grad": True, "count": 1, "saving_us_per_call": 0.0, "advice": {"clock": "none"},
        "best": {"code": varlen_code(sig, CAUSAL_KEY_PADDING)}}
json.dump({"calls": [call]}, open(sys.argv[1], "w"))
PY
    echo "=== padding $pad: varlen_attn's code applied by hand, unwatched [$(date +%T)]"
    for round in $(seq ${ROUNDS:-1}); do
      timeout 200 python3 tests/watch_programs/hf_padded_packed.py cuda $DTYPE $SEQ $pad --hidden ${HIDDEN:-1024} \
        --code-from $OUT/r/varlen-code-$pad.json --json $OUT/r/by-hand-${HIDDEN:-1024}-$SEQ-$pad-$round.json \
        ${TRACE:+--trace $OUT/r/trace-$SEQ-$pad} | tail -1
    done
  done
}
pace() {  # the host's lead at each call, watched without advice, then the code by hand: the pace model's inputs and
  # what it should predict (CONFIGS: hidden:seq pairs; PADS)
  for hs in ${CONFIGS:-1024:2048 2048:2048 1024:1024}; do
    HIDDEN=${hs%:*}; SEQ=${hs#*:}
    for pad in ${PADS:-0.6}; do
      echo "=== leads: hidden $HIDDEN, seq $SEQ, padding $pad, watched without advice [$(date +%T)]"
      timeout 200 python3 -m sdpa_tui watch --report $OUT/r/leads-$HIDDEN-$SEQ-$pad.json --no-advice -- \
        python3 tests/watch_programs/hf_padded_packed.py cuda $DTYPE $SEQ $pad --hidden $HIDDEN --steps ${STEPS:-40} \
        | grep -E "host lead|ahead|batch|median step" | head -6
    done
    PADS=${PADS:-0.6} by_hand
  done
}
tests() { echo "=== the cuda-marked packed-attention tests [$(date +%T)]"; timeout 300 python3 -m pytest -q -p no:cacheprovider -m cuda tests/unit/watch/test_packed_alternative.py 2>&1 | tail -15; }
{
nvidia-smi --query-gpu=name,driver_version,utilization.gpu --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version())'
for part in $PART; do
  case $part in
    lab) lab ;;
    watch) watched ;;
    diag) echo "=== where the time goes: SDPA's padded call, the packed codes' every-call and once-per-batch parts"
      timeout 200 python3 scripts/diagnostics/diag_packed_kernels.py $OUT/r/packed-kernels.json --seq $SEQ ;;
    tests) tests ;;
    by-hand) by_hand ;;
    pace) pace ;;
    all) lab; watched; tests ;;
  esac
done
} 2>&1 | tee $OUT/r/log-varlen-${PART// /-}.txt
tar czf $OUT/res.tgz -C $OUT r
