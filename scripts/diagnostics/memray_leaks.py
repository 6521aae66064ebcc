"""Which native stacks keep host memory while the engine repeats one thing (memray).

    pip install memray
    python3 scripts/diagnostics/memray_leaks.py configure --warm 45 --repeats 45 --out /tmp/configure.bin

Runs an experiment of ``benchmarks/soak/engine_memory.py`` (``configure``, ``burst``, ...) on the
GPU: ``--warm`` repetitions untracked (caches fill), then ``--repeats`` under memray with
native stacks. Prints the allocations still alive at the end, grouped by stack, largest
first: a stack whose count grows with the repetitions is memory that nothing frees.
"""

from __future__ import annotations

import argparse
import collections
import gc
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks" / "soak")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", help="an engine_memory.py experiment, e.g. configure or burst")
    parser.add_argument("--warm", type=int, default=45)
    parser.add_argument("--repeats", type=int, default=45)
    parser.add_argument("--out", default="memray-leaks.bin", help="memray capture file (must not exist)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()

    import engine_memory as em
    import memray

    from sdpa_tui.engine.measuring.environment import resolve_device

    name = args.experiment
    device, _ = resolve_device("cuda")
    state = em.setup(name, device)
    gc.freeze()
    for i in range(args.warm):
        em.one_repeat(name, device, state, i)
    with memray.Tracker(args.out, native_traces=True):
        for i in range(args.warm, args.warm + args.repeats):
            em.one_repeat(name, device, state, i)
        gc.collect()

    groups: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for record in memray.FileReader(args.out).get_leaked_allocation_records(merge_threads=True):
        stack = " <- ".join(f"{fn} ({Path(file).name}:{line})" for fn, file, line in record.hybrid_stack_trace(max_stacks=14))
        groups[stack][0] += record.size
        groups[stack][1] += record.n_allocations
    total = sum(size for size, _ in groups.values())
    print(f"{name}: {args.repeats} repeats after {args.warm} warm-up; still allocated at the end: "
          f"{total / 2**20:.2f} MiB in {sum(n for _, n in groups.values())} allocations")
    for stack, (size, count) in sorted(groups.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"{size / 1024:10.1f} KiB {count:7d}  {stack}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
