# On the GPU machine (repo root, carrying .whl and .tfw): every cuda-marked test (full output kept), and a
# 2-rank torchrun job on the GPU under watch. Writes $OUT/res.tgz.
source scripts/gpu/gpu-env.sh
{
echo "=== ranks on the GPU (2 ranks, gloo, one H100)"
timeout 150 python3 -m sdpa_tui watch --report $OUT/r/ranks-h100.json -- python3 -m torch.distributed.run \
  --nproc_per_node 2 --standalone tests/watch_programs/ranks.py --device cuda > $OUT/r/ranks-out.txt 2>&1; echo "exit=$?"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["calls"]:
    print(c["q_shape"], c["kv_shape"], c["device"], c["count"], c["ranks"], c["kernel_us"], c["rank_note"])
    for r, v in c["per_rank"].items(): print("   rank", r, v)
print("captures", d["captures"])' $OUT/r/ranks-h100.json
echo "=== cuda tests"; timeout 360 python3 -m pytest -q -p no:cacheprovider -m cuda tests/ > $OUT/r/cuda-tests.txt 2>&1; echo "exit=$?"
tail -40 $OUT/r/cuda-tests.txt
} 2>&1 | tee $OUT/r/log.txt
tar czf $OUT/res.tgz -C $OUT r
