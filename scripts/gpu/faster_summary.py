"""Gather ``sdpa-tui sweep --json`` files into one table: where SDPA's pick is not the fastest.

    python3 scripts/gpu/faster_summary.py OUT_DIR SWEEP.json [SWEEP.json ...]

Writes ``OUT_DIR/faster.json`` and ``OUT_DIR/faster.md``: one row per (workload, length) with
SDPA's pick, each backend's median on the sweep's clock, the fastest by median, and the
backends that beat the pick beyond the noise (the sweep's ``pick_not_fastest``). Used by the
``faster`` step of scripts/gpu/gpu-check.sh.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LABEL = {"CUDNN_ATTENTION": "cuDNN", "FLASH_ATTENTION": "Flash", "EFFICIENT_ATTENTION": "Mem-efficient", "MATH": "Math"}


def rows_of(doc: dict) -> list[dict]:
    base = doc["base_workload"]
    shape = f"{base['dtype']} hd{base['head_dim']} {'causal' if base['mask'] == 'causal' else 'full'}"
    gpu = doc["clock"] == "GPU/call"
    claims = {entry["seq"]: entry for entry in doc.get("pick_not_fastest", [])}
    picks = {int(seq): pick for seq, pick in doc.get("picks", {}).items()}
    rows = []
    for seq in doc["seqs"]:
        times = {
            p["backend"]: (p["gpu_us"] if gpu else p["eager_us"])
            for p in doc["points"]
            if p["seq"] == seq and p["status"] == "ok"
        }
        if not times:
            continue
        claim = claims.get(seq)
        rows.append({
            "workload": shape,
            "seq": seq,
            "clock": doc["clock"],
            "median_us": times,
            "fastest": min(times, key=times.get),
            "pick": picks.get(seq),
            "faster_than_pick": claim["faster"] if claim else [],
        })
    return rows


def markdown(rows: list[dict]) -> str:
    out = ["# Where SDPA's pick is not the fastest", "",
           "| workload | seq | cuDNN µs | Flash µs | Mem-efficient µs | SDPA's pick | fastest (median) | beats the pick (beyond noise) |",
           "|---|---:|---:|---:|---:|---|---|---|"]
    for r in rows:
        t = r["median_us"]
        cells = [f"{t[b]:,.1f}" if b in t else "–" for b in ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION")]
        beats = ", ".join(f"{LABEL[f['backend']]} {f['ratio']:.2f}x" for f in r["faster_than_pick"])
        pick = LABEL.get(r["pick"], "–")
        out.append(f"| {r['workload']} | {r['seq']} | " + " | ".join(cells) + f" | {pick} | {LABEL[r['fastest']]} | {beats or '–'} |")
    found = [r for r in rows if r["faster_than_pick"]]
    out += ["", f"{len(found)} of {len(rows)} points where a backend beats SDPA's pick beyond the noise.", ""]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: faster_summary.py OUT_DIR SWEEP.json [SWEEP.json ...]\n")
        return 2
    out = Path(argv[0])
    rows = []
    for name in argv[1:]:
        try:
            rows += rows_of(json.loads(Path(name).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError) as exc:
            sys.stderr.write(f"faster_summary: skipping {name}: {exc}\n")
    (out / "faster.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    (out / "faster.md").write_text(markdown(rows), encoding="utf-8")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
