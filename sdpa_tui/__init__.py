"""sdpa-tui: a live terminal monitor for PyTorch's scaled_dot_product_attention backends.

In Python: ``from sdpa_tui import watch`` (``with watch() as w: ...``; the ``sdpa_tui.watch`` package, called), and
``%load_ext sdpa_tui`` in IPython or Jupyter for the ``%%sdpa_watch`` cell magic. Importing the package imports
neither torch nor Textual.
"""

import os

__version__ = "0.1.0"

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
"""This package's folder: frames of its own files are no call site of the watched program's."""
IMPORT_ROOT = os.path.dirname(os.path.realpath(PACKAGE_DIR))
"""The folder that holds this package: a child process gets it on ``PYTHONPATH`` (or ``sys.path``), so it imports this
same copy, wherever a module sits in the package."""


def load_ipython_extension(ipython) -> None:  # noqa: ANN001 - IPython's InteractiveShell, not imported here
    """``%load_ext sdpa_tui``: the ``%%sdpa_watch`` cell magic (``sdpa_tui/api/magic.py``). Imported by name, at the
    call: every module imports this package (for ``IMPORT_ROOT``), and none of them may seem to import torch through
    it (import-linter reads a function's imports as the module's)."""
    import importlib

    importlib.import_module("sdpa_tui.api.magic").register(ipython)


def __getattr__(name: str):  # noqa: ANN202 - a module's attribute hook (PEP 562)
    """``import sdpa_tui`` then ``sdpa_tui.watch()``: the watch package (callable), imported by name at first use."""
    if name == "watch":
        import importlib

        return importlib.import_module("sdpa_tui.watch")
    raise AttributeError(f"module 'sdpa_tui' has no attribute {name!r}")
