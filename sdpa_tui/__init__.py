"""sdpa-tui: a live terminal monitor for PyTorch's scaled_dot_product_attention backends."""

import os

__version__ = "0.1.0"

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
"""This package's folder: frames of its own files are no call site of the watched program's."""
IMPORT_ROOT = os.path.dirname(os.path.realpath(PACKAGE_DIR))
"""The folder that holds this package: a child process gets it on ``PYTHONPATH`` (or ``sys.path``), so it imports this
same copy, wherever a module sits in the package."""
