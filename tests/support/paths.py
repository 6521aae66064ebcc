"""Where the tests' files are, found from this module's place (``tests/support/``), so a test file reads the same
paths from whichever folder of ``tests/`` it lives in."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The checkout under test: the working directory and ``PYTHONPATH`` of the processes the tests start."""
FIXTURES = REPO / "tests" / "fixtures"
REPORTS = FIXTURES / "reports"
PROGRAMS = REPO / "tests" / "watch_programs"
"""The programs the watch tests run watched."""
BENCHMARKS = REPO / "benchmarks"
