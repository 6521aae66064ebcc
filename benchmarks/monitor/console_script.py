# ruff: noqa: I001
# The script pip writes for the ``sdpa-tui`` command (entry point ``sdpa_tui.cli:main``), line for line: benchmarks
# start the monitor through it, as a user's ``sdpa-tui`` runs, where the package is imported from a checkout rather
# than installed (the GPU machine). Run as a script, it is the main module multiprocessing hands to spawned children
# (engine/host/spawned_main.py), which ``python -m sdpa_tui`` is not.
import re
import sys
from sdpa_tui.cli import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\.pyw|\.exe)?$', '', sys.argv[0])
    sys.exit(main())
