"""``sdpa-tui watch`` against an independent torch.profiler run of the same program (GPU).

Runs ``tests/watch_programs/truth.py`` three times: plain (its training step time), under
torch.profiler (every SDPA op, its kernels and their summed time as torch itself attributes them),
and under ``sdpa-tui watch --report``. Per call signature (q and k shapes, mask shape) it prints
watch's forward kernel time, count and kernels beside the profiler's, the backward beside the
profiler's backward ops, and the training step with and without watch; writes it all as JSON.

    python3 benchmarks/watch_truth/watch_truth.py --json out.json [--steps 12] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "watch_programs" / "truth.py"
TOLERANCE = (0.10, 2.0)  # within max(10 %, 2 µs)


def _run(args: list[str], env: dict[str, str]) -> dict:
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(next(line for line in reversed(proc.stdout.splitlines()) if line.startswith('{"step_ms"')))


def _key(q, k, mask) -> str:
    return f"q{list(q)} k{list(k)}" + (f" mask{list(mask)}" if mask else "")


def reference(ops: list[dict]) -> tuple[dict, dict]:
    """Forward and backward groups: key → {count, kernel_us: [..], kernels: set}."""
    fwd: dict[str, dict] = {}
    bwd: dict[str, dict] = {}
    for op in ops:
        shapes = op["shapes"]
        if op["name"].endswith("_backward"):
            key, into = _key(shapes[1], shapes[2], None), bwd
        else:
            mask = shapes[3] if op["name"] == "aten::scaled_dot_product_attention" and len(shapes) > 3 else None
            key, into = _key(shapes[0], shapes[1], mask), fwd
        group = into.setdefault(key, {"count": 0, "kernel_us": [], "lists": [], "ops": set()})
        group["count"] += 1
        group["kernel_us"].append(op["kernel_us"])
        group["ops"].add(op["name"])
        group["lists"].append(tuple(op["kernels"]))
    for group in (*fwd.values(), *bwd.values()):  # the calls' usual kernels (a first call may differ)
        lists = group.pop("lists")
        group["kernels"] = list(max(set(lists), key=lists.count))
    return fwd, bwd


def within(a: float | None, b: float | None) -> bool | None:
    if a is None or b is None:
        return None
    return abs(a - b) <= max(TOLERANCE[0] * b, TOLERANCE[1])


def compare(report: dict, fwd: dict, bwd: dict) -> list[dict]:
    rows = []
    counts: dict[str, int] = {}
    for call in report["calls"]:
        key = _key(call["q_shape"], call["kv_shape"], call["mask"]["shape"])
        counts[key] = counts.get(key, 0) + call["count"]
    for call in report["calls"]:
        key = _key(call["q_shape"], call["kv_shape"], call["mask"]["shape"])
        ref = fwd.get(key, {})
        ref_us = statistics.median(ref["kernel_us"]) if ref.get("kernel_us") else None
        back = call.get("backward") or {}
        ref_b = bwd.get(_key(call["q_shape"], call["kv_shape"], None), {})
        ref_b_us = statistics.median(ref_b["kernel_us"]) if ref_b.get("kernel_us") else None
        watch_b = (back.get("kernel_us") or {}).get("median")
        rows.append({
            "signature": key, "grad": call["grad"], "compiled": call["compiled"], "backend": call["backend"],
            "watch_count": call["count"], "watch_count_group": counts[key], "profiler_count": ref.get("count"),
            "counts_equal": counts[key] == ref.get("count"),
            "watch_kernel_us": call["kernel_us"]["median"], "watch_n": call["kernel_us"]["n"],
            "profiler_kernel_us": ref_us, "time_ok": within(call["kernel_us"]["median"], ref_us),
            "kernels_equal": (call["kernels"] == ref.get("kernels")) if call["kernels"] else None,
            "watch_kernels": call["kernels"], "profiler_kernels": ref.get("kernels"),
            "first_call_us": call["first_call_us"], "share_of_gpu": call["share_of_gpu"],
            "watch_backward_us": watch_b, "profiler_backward_us": ref_b_us,
            "backward_ok": within(watch_b, ref_b_us) if call["grad"] else None,
            "backward_backend": back.get("backend"),
        })
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=1, help="plain and watched runs, alternated (step times)")
    args = parser.parse_args()
    env = dict(os.environ)
    program = [sys.executable, str(PROGRAM), str(args.steps)]
    with tempfile.TemporaryDirectory() as tmp:
        profile_path = os.path.join(tmp, "ops.json")
        _run(program, {**env, "SDPA_TUI_TEST_PROFILE": profile_path})
        ops = json.load(open(profile_path))
        report_path = os.path.join(tmp, "calls.json")
        plain, watched = [], []
        for _ in range(args.rounds):
            plain.append(_run(program, env))
            watched.append(_run([sys.executable, "-m", "sdpa_tui", "watch", "--report", report_path, "--", *program],
                                env))
        report = json.load(open(report_path))  # the last watched run's
    fwd, bwd = reference(ops)
    rows = compare(report, fwd, bwd)
    print(f"{'signature':<44} {'grad':>4} {'comp':>4} {'backend':<20} {'count w/p':>11} "
          f"{'fwd µs w/p':>17} {'ok':>3} {'bwd µs w/p':>17} {'ok':>3} {'kern=':>5}")
    for r in rows:
        def f(x):
            return "—" if x is None else f"{x:.1f}"
        print(f"{r['signature']:<44} {str(r['grad'])[0]:>4} {str(r['compiled'])[0]:>4} {str(r['backend']):<20} "
              f"{r['watch_count_group']:>5}/{str(r['profiler_count']):<5} {f(r['watch_kernel_us']):>8}/"
              f"{f(r['profiler_kernel_us']):<8} {str(r['time_ok'])[0]:>3} {f(r['watch_backward_us']):>8}/"
              f"{f(r['profiler_backward_us']):<8} {str(r['backward_ok'])[0]:>3} {str(r['kernels_equal'])[0]:>5}")
    steps = {}
    for key in ("step_ms", "late_step_ms"):
        p, w = statistics.median(r[key] for r in plain), statistics.median(r[key] for r in watched)
        steps[key] = {"plain": [r[key] for r in plain], "watched": [r[key] for r in watched],
                      "added_pct": (w / p - 1) * 100}
        print(f"training {key} ({args.steps} steps, median of {args.rounds} runs each): plain {p:.3f} ms, "
              f"watched {w:.3f} ms ({steps[key]['added_pct']:+.2f} %)")
    print(f"captures: {report['captures']}; SDPA share of GPU in the profiled windows: {report['sdpa_share_of_gpu']}")
    print(f"checksums: plain {[p['total'] for p in plain]}, watched {[w['total'] for w in watched]}")
    out = {"rows": rows, "steps": steps, "rounds": args.rounds, "training_steps": args.steps,
           "captures": report["captures"], "sdpa_share_of_gpu": report["sdpa_share_of_gpu"],
           "totals": {"plain": [p["total"] for p in plain], "watched": [w["total"] for w in watched]},
           "report": report, "reference_ops": {"forward": {k: {**v, "ops": sorted(v["ops"])} for k, v in fwd.items()},
                                               "backward": {k: {**v, "ops": sorted(v["ops"])} for k, v in bwd.items()}}}
    Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
