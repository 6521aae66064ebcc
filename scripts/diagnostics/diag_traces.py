"""Per kept watch trace: GPU events, launches, how many link, range threads vs launch threads, time bounds."""
import collections
import glob
import json
import sys

for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    t = json.load(open(path))
    ev = [e for e in t.get("traceEvents", []) if isinstance(e, dict)]
    cats = collections.Counter(e.get("cat") for e in ev)
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")]
    launches = {(e.get("args") or {}).get("correlation"): e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    linked = sum(1 for e in gpu if (e.get("args") or {}).get("correlation") in launches)
    ranges = [e for e in ev if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("sdpa-tui#")]
    rt = collections.Counter((e.get("pid"), e.get("tid")) for e in ranges)
    lt = collections.Counter((e.get("pid"), e.get("tid")) for e in launches.values())
    cpu_ts = [e["ts"] for e in ev if e.get("cat") == "cpu_op" and "ts" in e]
    gpu_ts = [e["ts"] for e in gpu]
    print(path.rsplit("/", 1)[-1], dict(cats.most_common(8)))
    print("   gpu", len(gpu), "linked", linked, "range threads", dict(rt), "launch threads", dict(lt.most_common(3)))
    if cpu_ts and gpu_ts:
        print("   cpu ts", min(cpu_ts), max(cpu_ts), "gpu ts", min(gpu_ts), max(gpu_ts))
    if ranges:
        r = ranges[0]
        inside = [e for e in launches.values() if r["ts"] <= e["ts"] <= r["ts"] + r["dur"] and e.get("tid") == r.get("tid")]
        print("   first range", r["name"], r["ts"], r["dur"], "launches inside", len(inside),
              [e.get("name") for e in inside][:5])
    print("   meta", {k: v for k, v in t.items() if k != "traceEvents" and not isinstance(v, (list, dict))})
