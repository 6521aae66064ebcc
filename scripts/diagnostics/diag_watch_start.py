"""Where watch's start goes on a GPU machine (issue 39: watch's cost on a 10-s program; on an H200 the watched program
reached its first line 0.66 s later, by the medians, than plain python had imported torch, against 0.15 s on a CPU VM).

A program that only imports torch and makes the device's context writes its own clock (its first line, torch
imported, the context made). It runs as:

- ``plain``: ``python prog.py``;
- ``bootstrap``: ``python -m sdpa_tui.watch.probe.bootstrap prog.py`` with no watch socket (the watched process
  alone: the bootstrap's imports, torch's, the probe's install);
- ``watched``: ``sdpa-tui watch --report R --no-advice -- python prog.py`` (the host besides).

With ``--llama`` the program then imports transformers and builds the 60-s program's Llama and its optimizer on the
device (``tests/watch_programs/training.py``'s ``large``, by training.py's own builder; the optimizer's construction
imports ``torch._dynamo``; no step run), each timed: the 1-minute program's start-up, where
an H200 run read the watched start-up 3 s longer than the plain (before the first line +1.6 s, the build +1.6 s);
timed alone on the same machine, 4 rounds, watch added 0.16 to 0.45 s a pair (``docs/lab-notes/watch-truth.md``).
With ``--decoder`` it builds the 10-s program's decoder and its AdamW instead (no transformers import; the
optimizer's construction imports ``torch._dynamo``, most of that program's start-up on an H200).
``--variants`` picks which run (e.g. ``plain,watched``).

Each a fresh process, alternated over ROUNDS rounds; each prints one JSON line, and a table gives the medians and
spreads of: the launch to the first line, torch's import in the program, the context. With ``--import-times DIR``
one more run of ``plain`` and ``bootstrap`` under ``-X importtime`` writes each one's stderr to DIR, and the
slowest imports of each are printed.

    python3 scripts/diagnostics/diag_watch_start.py [--device cuda] [--rounds 6] [--import-times DIR]
    python3 scripts/diagnostics/diag_watch_start.py --llama --variants plain,watched --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("plain", "bootstrap", "watched")
PROGRAM = """import time
started = time.time()
import json, sys
import torch
imported = time.time()
if sys.argv[2].startswith("cuda"):
    torch.empty(0, device=sys.argv[2])
ready = time.time()
times = {"started": started, "imported": imported, "ready": ready}
if sys.argv[3:4] in (["llama"], ["decoder"]):  # training.py's model and its optimizer, built by training.py
    if sys.argv[3] == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM  # noqa: F401 - transformers' import, timed apart
    times["transformers"] = time.time()
    sys.path.insert(0, sys.argv[4])
    import training
    if sys.argv[3] == "llama":
        training.llama("large", sys.argv[2])
    else:
        training.decoder(sys.argv[2])
    if sys.argv[2].startswith("cuda"):
        torch.cuda.synchronize()
    times["built"] = time.time()
with open(sys.argv[1], "w") as f:
    json.dump(times, f)
"""


def run_once(variant: str, prog: str, device: str, tmp: str, flags: tuple[str, ...] = (),
             build: str | None = None) -> tuple[dict, str]:
    times = os.path.join(tmp, "times.json")
    if os.path.exists(times):
        os.unlink(times)
    python = [sys.executable, *flags]
    args = [prog, times, device, *([build, str(ROOT / "tests" / "watch_programs")] if build else [])]
    argv = {"plain": [*python, *args],
            "bootstrap": [*python, "-m", "sdpa_tui.watch.probe.bootstrap", *args],
            "watched": [sys.executable, "-m", "sdpa_tui", "watch", "--report", os.path.join(tmp, "calls.json"),
                        "--no-advice", "--", sys.executable, *args]}[variant]
    env = {k: v for k, v in os.environ.items() if k != "SDPA_TUI_WATCH_SOCKET"}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    wall = time.time() - t0
    if proc.returncode != 0:
        sys.exit(f"{variant} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    own = json.loads(Path(times).read_text())
    got = {"variant": variant, "wall_s": wall, "to_first_line_s": own["started"] - t0,
           "torch_import_s": own["imported"] - own["started"], "context_s": own["ready"] - own["imported"],
           "to_context_s": own["ready"] - t0}
    if build:
        got["transformers_import_s"] = own["transformers"] - own["ready"]
        got["build_s"] = own["built"] - own["transformers"]
        got["to_built_s"] = own["built"] - t0
    return got, proc.stderr


def slowest_imports(stderr: str, top: int = 15) -> list[str]:
    """``-X importtime``'s lines, the top-level packages' cumulative microseconds, largest first."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cumulative_us, name = line.split(":", 1)[1].split("|")
        depth = len(name) - len(name.lstrip())
        if depth <= 3:
            rows.append((int(cumulative_us), name.strip(), int(self_us)))
    rows.sort(reverse=True)
    return [f"{c / 1e6:7.3f} s (self {s / 1e6:.3f})  {n}" for c, n, s in rows[:top]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--import-times", metavar="DIR")
    parser.add_argument("--llama", action="store_const", const="llama", dest="build",
                        help="then import transformers and build the 60-s program's Llama and its optimizer")
    parser.add_argument("--decoder", action="store_const", const="decoder", dest="build",
                        help="then build the 10-s program's decoder and its optimizer")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    args = parser.parse_args()
    variants = tuple(v for v in args.variants.split(",") if v)
    if not variants or set(variants) - set(VARIANTS):
        parser.error(f"--variants: of {', '.join(VARIANTS)}")
    results: dict[str, list[dict]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, "prog.py")
        Path(prog).write_text(PROGRAM)
        for r in range(args.rounds):
            for v in variants if r % 2 == 0 else variants[::-1]:
                got, _ = run_once(v, prog, args.device, tmp, build=args.build)
                results[v].append(got)
                print(json.dumps(got), flush=True)
        if args.import_times:
            os.makedirs(args.import_times, exist_ok=True)
            for v in ("plain", "bootstrap"):
                got, stderr = run_once(v, prog, args.device, tmp, ("-X", "importtime"))
                Path(args.import_times, f"importtime-{v}.txt").write_text(stderr)
                print(f"--- {v} under -X importtime: {json.dumps(got)}")
                print("\n".join(slowest_imports(stderr)))
    keys = ("wall_s", "to_first_line_s", "torch_import_s", "context_s", "to_context_s")
    if args.build:
        keys += ("transformers_import_s", "build_s", "to_built_s")
    print(f"{'variant':<10} " + " ".join(f"{k.removesuffix('_s'):>22}" for k in keys)
          + f"   (median [min..max] of {args.rounds} rounds, s)")
    for v, runs in results.items():
        cells = []
        for k in keys:
            xs = [x[k] for x in runs]
            cells.append(f"{statistics.median(xs):.3f} [{min(xs):.2f}..{max(xs):.2f}]")
        print(f"{v:<10} " + " ".join(f"{c:>22}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
