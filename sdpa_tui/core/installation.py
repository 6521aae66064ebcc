"""Where this copy of sdpa-tui is installed, and its version: what a child process needs to import the same copy."""

from __future__ import annotations

import os

VERSION = "0.1.0"

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The ``sdpa_tui`` package's folder: frames of its own files are no call site of the watched program's."""
IMPORT_ROOT = os.path.dirname(os.path.realpath(PACKAGE_DIR))
"""The folder that holds the package: a child process gets it on ``PYTHONPATH`` (or ``sys.path``), so it imports this
same copy, wherever a module sits in the package."""
