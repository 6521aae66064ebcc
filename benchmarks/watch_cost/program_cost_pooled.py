"""Watch's cost on one program, pooled over several runs of ``watch_program_cost.py`` (each a machine's start).

On a GPU machine a 10-s program's rounds swing by a third either way with the machine's start-up (torch's import
took 3 to 6 s from one run to the next on the same H100), so one run of 9 rounds can read anywhere from −6 to +16 %
while watch's own part from the loop on stays about +0.1 s. Each round pairs a watched run with the plain run beside
it on the same machine; this pools the rounds of the results named (one program size and target, the same code) and
gives, for each result and for the pool: the rounds, the plain and watched medians and their ratio, the median round
with the interval where it lies with 90 % confidence (``watch_program_cost.median_interval``: by rank, assuming only
independent rounds), and what watch added before the loop and from it on (``watch_program_cost.added_split``): each
result's and the pool's pairs summarised as ``watch_program_cost.summarise`` summarises one run. The
pool mixes machines: its interval is over rounds, each a within-machine comparison, not over machines.

    python3 benchmarks/watch_cost/program_cost_pooled.py --size decoder --seconds 10 A.json B.json [--json out.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import run_header, write_result  # noqa: E402
from watch_program_cost import device_tag, summarise  # noqa: E402


def rounds_of(result: dict, size: str, seconds: float) -> list[tuple[dict, dict]]:
    """A result's (plain, watched) runs of that size and target, paired by round."""
    pairs: list[tuple[dict, dict]] = []
    for target in result["targets"]:
        if target["size"] != size or float(target["seconds"]) != seconds:
            continue
        plain = {run["round"]: run for run in target["runs"]["plain"]}
        pairs += [(plain[run["round"]], run) for run in target["runs"]["watched"] if run["round"] in plain]
    return pairs


def summary(pairs: list[tuple[dict, dict]]) -> dict:
    """The pairs' plain and watched medians, the median round with its interval and the added seconds, as
    ``watch_program_cost.summarise`` reads them for one run."""
    both = summarise({"plain": [p for p, _ in pairs], "watched": [w for _, w in pairs]})
    plain, watched = both["plain"], both["watched"]
    added = watched["wall_s_added_pct"]
    return {"rounds": len(pairs), "plain_wall_s": plain["wall_s"]["median"], "watched_wall_s": watched["wall_s"]["median"],
            "of_medians_pct": added["of_medians"], "median_round_pct": added["per_round"]["median"],
            "median_round_interval": added["median_round_interval"], "added_s": watched["added_s"]}


def short(name: str, width: int = 34) -> str:
    """A file's name in ``width`` characters, its end kept (where the names of one run's results differ)."""
    return name if len(name) <= width else "…" + name[-(width - 1):]


def row(label: str, s: dict) -> str:
    interval = s["median_round_interval"]
    where = (f"{interval['low']:+.1f}..{interval['high']:+.1f} ({interval['coverage']:.0%})" if interval
             else "too few rounds")
    return (f"{label:<51} {s['rounds']:>6} {s['plain_wall_s']:>8.2f} {s['watched_wall_s']:>8.2f} "
            f"{s['of_medians_pct']:>+9.1f}% {s['median_round_pct']:>+8.1f}% {where:>22} "
            f"{s['added_s']['before_loop_s']['median']:>+9.2f} {s['added_s']['from_loop_s']['median']:>+9.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="watch_program_cost.py's JSON results")
    parser.add_argument("--size", default="decoder", help="the program's size (default decoder)")
    parser.add_argument("--seconds", type=float, default=10.0, help="the target (default 10)")
    parser.add_argument("--json", help="where the pooled result goes (default: benchmarks/results/…)")
    args = parser.parse_args()
    started = dt.datetime.now(dt.timezone.utc)
    out = {**run_header(started, None, "results"), "size": args.size, "seconds": args.seconds, "results": []}
    pooled: list[tuple[dict, dict]] = []
    print(f"~{args.seconds:g}-s program ({args.size}), wall time, medians; the median round's interval with its "
          "confidence; added seconds a round, medians")
    print(f"{'result':<34} {'GPU':<4} {'date':<11} {'rounds':>6} {'plain s':>8} {'watched':>8} {'medians':>10} "
          f"{'round':>9} {'the round lies in':>22} {'before s':>9} {'loop on s':>9}")
    gpus = set()
    for path in args.results:
        result = json.loads(Path(path).read_text())
        pairs = rounds_of(result, args.size, args.seconds)
        if not pairs:
            parser.error(f"{path}: no {args.size} rounds at {args.seconds:g} s")
        gpus.add(result.get("gpu"))
        s = summary(pairs)
        print(row(f"{short(Path(path).name):<34} {device_tag(result.get('gpu')):<4} {result['date'][:10]:<11}", s))
        out["results"].append({"file": Path(path).name, "gpu": result.get("gpu"), "date": result["date"], **s})
        pooled += pairs
    out["pooled"] = summary(pooled)
    print(row(f"pooled ({len(args.results)} results)", out["pooled"]))
    tag = "-".join(sorted({device_tag(g) for g in gpus}))
    write_result(out, args.json, f"watch-program-cost-pooled-{tag}-{args.size}-{started.date()}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
