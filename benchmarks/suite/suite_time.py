"""How long the README's test command takes: the whole suite's wall time, the slowest files and tests, the machine.

Runs ``python3 -m pytest -q`` (the README's command, after ``pip install -e '.[test]'``) in a checkout, with
PYTHONPATH at that checkout so its code is the one imported, in every process the tests start. pytest's JUnit XML
gives each test's time (setup, call and teardown together: a module's fixture counts in its first test); a file's
time is its tests' sum. With pytest-xdist's workers (pyproject.toml's addopts) the tests' times add up to more than
the wall time.

    python3 benchmarks/suite/suite_time.py                              # this checkout, the whole suite
    python3 benchmarks/suite/suite_time.py --root /tmp/base --json results/suite-time-before.json
    python3 benchmarks/suite/suite_time.py -- -m torch_range            # arguments after -- go to pytest
    python3 benchmarks/suite/suite_time.py -- -n 0                      # in one process, without pytest-xdist

Prints a table and writes benchmarks/results/suite-time-cpu-<date>.json (or ``--json``). On a shared machine the
wall time moves with the others' load: the load average before and after is recorded beside it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import load_average, run_header, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def machine() -> dict:
    """The cores this process may use, the CPU's model and the memory, read from Linux's /proc where it has one."""
    model, memory_gib = platform.processor() or None, None
    cpuinfo, meminfo = Path("/proc/cpuinfo"), Path("/proc/meminfo")
    if cpuinfo.exists():
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("model name")), model)
    if meminfo.exists():
        kib = next(int(line.split()[1]) for line in meminfo.read_text().splitlines() if line.startswith("MemTotal:"))
        memory_gib = round(kib / 2**20, 1)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cores": cores, "cpu": model, "memory_gib": memory_gib}


def torch_version(root: Path) -> str | None:
    proc = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                          text=True, cwd=root, timeout=300)
    return proc.stdout.strip() or None


def test_times(junit_xml: Path) -> list[dict]:
    """Each test's file, name, outcome and seconds, from pytest's JUnit XML."""
    tests = []
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        path = case.get("classname", "").split(".")
        module = next((i for i, part in enumerate(path) if part.startswith("test_")), len(path) - 1)
        name = case.get("name", "").split("@", 1)[0]  # pytest-xdist's loadgroup appends @group
        tests.append({"file": "/".join(path[:module + 1]) + ".py", "test": name,
                      "outcome": outcome, "seconds": float(case.get("time", 0.0))})
    return tests


def per_file(tests: list[dict]) -> list[dict]:
    """Each file's tests' seconds summed and counted, slowest first."""
    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for test in tests:
        seconds[test["file"]] += test["seconds"]
        counts[test["file"]] += 1
    return sorted(({"file": f, "seconds": round(s, 2), "tests": counts[f]} for f, s in seconds.items()),
                  key=lambda row: -row["seconds"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to time (default: this one)")
    parser.add_argument("--top", type=int, default=15, help="how many of the slowest files and tests to print")
    parser.add_argument("--json", default=None)
    parser.add_argument("pytest_args", nargs="*", help="after --: more arguments for pytest")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    started = dt.datetime.now(dt.timezone.utc)
    load_before = load_average()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp, "junit.xml")
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                   *args.pytest_args]
        t0 = time.monotonic()
        proc = subprocess.run(command, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        wall = time.monotonic() - t0
        tests = test_times(junit) if junit.exists() else []
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    files = per_file(tests)
    in_tests = sum(t["seconds"] for t in tests)
    outcomes = {o: sum(t["outcome"] == o for t in tests) for o in ("passed", "failure", "error", "skipped")}
    print(f"{' '.join(['pytest', '-q', *args.pytest_args])}: {wall / 60:.1f} min wall ({wall:.0f} s), exit "
          f"{proc.returncode}; {summary}")
    print(f"the tests' own times add up to {in_tests:.0f} s (over every worker where pytest-xdist runs several); "
          f"load average {load_before} before, {load_average()} after")
    print(f"\n{'seconds':>8}  {'tests':>5}  slowest files")
    for row in files[:args.top]:
        print(f"{row['seconds']:8.1f}  {row['tests']:5d}  {row['file']}")
    slowest = sorted(tests, key=lambda t: -t["seconds"])[:args.top]
    print(f"\n{'seconds':>8}  slowest tests")
    for test in slowest:
        print(f"{test['seconds']:8.1f}  {test['file']}::{test['test']}")
    for test in tests:
        if test["outcome"] in ("failure", "error"):
            print(f"{test['outcome']}: {test['file']}::{test['test']}")
    result = {
        **run_header(started, argv, "cpu"),
        "machine": machine(),
        "torch": torch_version(root),
        "pytest_command": ["pytest", "-q", *args.pytest_args],
        "exit_code": proc.returncode,
        "summary": summary,
        "wall_s": round(wall, 1),
        "in_tests_s": round(in_tests, 1),
        "outcomes": outcomes,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "files": files,
        "slowest_tests": [{**t, "seconds": round(t["seconds"], 2)} for t in slowest],
        "failed": [f"{t['file']}::{t['test']}" for t in tests if t["outcome"] in ("failure", "error")],
    }
    write_result(result, args.json, f"suite-time-cpu-{started:%Y-%m-%d}.json")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
