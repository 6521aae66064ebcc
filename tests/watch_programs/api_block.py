"""A program run inside ``with watch():`` (the Python API), as ``sdpa-tui watch`` runs it under its probe.

    api_block.py REPORT.json PROGRAM.py [args ...]

The program gets its own ``sys.argv`` and runs as ``__main__``; the block's report goes to REPORT.json."""

import runpy
import sys

from sdpa_tui import watch

report, program = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
with watch(name=program) as w:
    runpy.run_path(program, run_name="__main__")
w.report.to_json(report)
