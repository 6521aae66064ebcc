"""The exit codes of the ``sdpa-tui`` commands, for scripts and CI (README: "Exit codes"); 0 is
success. ``watch --report`` passes on the watched program's own code, and the live monitor
128 + the signal that ended it (``ui/terminal/exit_signals.py``)."""

EXIT_ENGINE = 1
"""report, sweep: the engine failed (said in one line)."""
EXIT_SLOWER = 1
"""compare: a clock got slower than ``--threshold``."""
EXIT_USAGE = 2
"""Bad input: a value, a device that is not there, a file that is not a report (one line)."""
EXIT_NOT_COMPARABLE = 3
"""compare: A and B measured different workloads (lab reports: shape, dtype, mask, direction; watch reports: no call
site ran the same shapes in both), so no clock can be said slower or faster (one line: "not comparable: ...")."""
EXIT_INTERRUPTED = 130
"""sweep: Ctrl+C (128 + SIGINT); the points measured so far are written."""
EXIT_NONFINITE = 4
"""watch --report --fail-on-nonfinite: the program exited 0, but an SDPA output or gradient held NaN or Inf
(a program that failed keeps its own exit code)."""
EXIT_NOTHING_MEASURED = 5
"""report, sweep: the engine ran, but no selected backend gave a number: each was not eligible for the workload on
this device (``--backends cudnn`` on the CPU), out of memory or failed (one line: "nothing measured: ..."). Not bad
input (2): only measuring finds it, and the table and files still say why."""
