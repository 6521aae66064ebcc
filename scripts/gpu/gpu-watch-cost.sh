# On the GPU machine (repo root, carrying .whl and .tfw). PART=tests: watch's cuda tests and the wrapper's
# per-call cost; PART=step: the watched training step's cost (STEPS, ROUNDS, LLAMA=small|large, ONLY); PART=program:
# watch's end-to-end cost on a whole training program, plain and watched alternated (TARGETS, seconds of the plain
# program, PROGRAM_ROUNDS, and PROGRAM_SIZES, training.py's size per target; the default, a 10-s program x 4 rounds and
# a 60-s one x 2, takes about 6 minutes on an H100). The 10-s program is the plain-torch decoder (size decoder): the large
# transformers Llama spends 11-15 s before its first step here, so its "10-s" program was 3 steps of start-up (the
# decoder itself spends 7-10 s on an H200, most of it torch's import and torch._dynamo's at the optimizer's construction,
# scripts/diagnostics/diag_program_build.py, so there too a start may leave room for 3 steps only); the
# 60-s program stays the large Llama, a transformers user's program with about 40 s of steps, comparable with the
# runs before. ADD_TO=file: this call's rounds are added to an earlier call's result on the same machine (the calls
# chained while it is warm; the earlier JSON copied into the checkout, where an untracked file travels), e.g. two
# calls of TARGETS=60 PROGRAM_SIZES=large PROGRAM_ROUNDS=3, the second with ADD_TO=watch-program-cost-h200.json.
# PART=window-cost: what one profiler window costs the decoder, part by part (scripts/diagnostics/diag_window_cost.py,
# ROUNDS rounds). PART=pyspy: where the decoder's 3 steps spend their time,
# plain and watched (ROUNDS of each), sampled by py-spy (carry .pyspy, its wheel) with each window's trace and log
# kept. PART=parts: watch's cost on the decoder with one part of the probe switched off at a time
# (scripts/diagnostics/diag_watch_parts.py, ROUNDS rounds of STEPS steps, VARIANTS; KEEP=1 keeps each window's log).
# PART=start: where watch's start goes (scripts/diagnostics/diag_watch_start.py, ROUNDS rounds, the imports' times
# besides). PART=check-cost: the forward check and the gradient
# comparison on the decoder's call, cold and warm (scripts/diagnostics/diag_check_cost.py). PART=shots: the watch
# screenshots. Writes $OUT/res.tgz.
source scripts/gpu/gpu-env.sh
PART=${PART:-tests}
tag=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oE 'H100|H200' | tr 'A-Z' 'a-z')
tag=${tag:-cuda}  # the results' names say which GPU ran them
{
nvidia-smi --query-gpu=name,driver_version,utilization.gpu --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version())'
case $PART in
  tests)
    echo "=== watch cuda tests"; timeout 330 python3 -m pytest -q -p no:cacheprovider --durations=8 tests/gpu/test_watch_cuda.py 2>&1 | tail -25
    echo "=== per-call cost"; timeout 200 python3 benchmarks/watch_cost/watch_overhead.py --repeats 7 --steps 5 --json $OUT/r/watch-overhead-$tag.json ;;
  step)
    echo "=== step cost"; timeout ${LIMIT:-560} python3 benchmarks/watch_cost/watch_step_cost.py --steps ${STEPS:-1000} --rounds ${ROUNDS:-1} \
      --llama ${LLAMA:-small} --json $OUT/r/watch-step-cost-$tag-${LLAMA:-small}.json ${ONLY:-} ;;
  program)
    echo "=== program cost"; timeout ${LIMIT:-560} python3 benchmarks/watch_cost/watch_program_cost.py --device cuda \
      --seconds ${TARGETS:-10,60} --rounds ${PROGRAM_ROUNDS:-4,2} --size ${PROGRAM_SIZES:-decoder,large} \
      ${ADD_TO:+--add-to $ADD_TO} --json $OUT/r/watch-program-cost-$tag.json ;;
  window-cost)
    echo "=== one window's cost, part by part"; timeout ${LIMIT:-400} python3 scripts/diagnostics/diag_window_cost.py \
      --device cuda --rounds ${ROUNDS:-3} ;;
  parts)
    echo "=== the probe's parts"; timeout ${LIMIT:-500} python3 scripts/diagnostics/diag_watch_parts.py --device cuda \
      --rounds ${ROUNDS:-3} --steps ${STEPS:-3} ${VARIANTS:+--variants $VARIANTS} \
      ${KEEP:+--keep-windows $OUT/r/windows-kept} ;;
  start)
    echo "=== watch's start"; timeout ${LIMIT:-300} python3 scripts/diagnostics/diag_watch_start.py --device cuda \
      --rounds ${ROUNDS:-6} --import-times $OUT/r/import-times ;;
  check-cost)
    echo "=== the checks, cold and warm"; timeout ${LIMIT:-300} python3 scripts/diagnostics/diag_check_cost.py --device cuda \
      --rounds ${ROUNDS:-3} ;;
  pyspy)
    python3 -m pip install -q --no-index --no-deps --target .site .pyspy/*.whl || exit 1
    for i in $(seq ${ROUNDS:-2}); do
      for v in plain watched; do
        pre=(); [ $v = watched ] && pre=(python3 -m sdpa_tui watch --report $OUT/r/calls-$i.json --no-advice --)
        mkdir -p $OUT/r/keep-$i
        echo "=== $v $i"; SDPA_TUI_KEEP_TRACES=$OUT/r/keep-$i timeout 120 .site/bin/py-spy record -r 400 -f raw --idle \
          --threads --subprocesses -o $OUT/r/spy-$v-$i.txt -- "${pre[@]}" python3 tests/watch_programs/training.py \
          $OUT/r/times-$v-$i.json 3 cuda decoder > /dev/null 2>$OUT/r/err-$v-$i.txt; echo "rc $?"; tail -3 $OUT/r/err-$v-$i.txt
        python3 -c "import json,sys; t=json.load(open(sys.argv[1])); print({k: (round(v,3) if isinstance(v,float) else v) for k,v in t.items() if k!='step_ms'}, [round(x,1) for x in t.get('step_ms',[])])" $OUT/r/times-$v-$i.json
      done
    done
    rm -f $OUT/r/keep-*/*.json ;;
  shots)
    echo "=== watch screenshots"; timeout 100 python3 scripts/screenshots/watch_screenshots.py --device cuda --out $OUT/r --tag $tag ;;
esac
} 2>&1 | tee $OUT/r/log-$PART.txt
tar czf $OUT/res.tgz -C $OUT r
