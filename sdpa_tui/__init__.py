"""sdpa-tui: a live terminal monitor for PyTorch's scaled_dot_product_attention backends.

In Python: ``from sdpa_tui import watch`` (``with watch() as w: ...``; the ``sdpa_tui.watch`` package, called), and
``%load_ext sdpa_tui`` in IPython or Jupyter for the ``%%sdpa_watch`` cell magic. Importing the package imports
neither torch nor Textual.
"""

from .core.installation import VERSION as __version__

__all__ = ["__version__", "load_ipython_extension", "watch"]


def load_ipython_extension(ipython) -> None:  # noqa: ANN001 - IPython's InteractiveShell, not imported here
    """``%load_ext sdpa_tui``: the ``%%sdpa_watch`` cell magic (``sdpa_tui/api/magic.py``). Imported by name, at the
    call: every module imports this package, and none of them may seem to import torch through it (import-linter
    reads a function's imports as the module's)."""
    import importlib

    importlib.import_module("sdpa_tui.api.magic").register(ipython)


def __getattr__(name: str):  # noqa: ANN202 - a module's attribute hook (PEP 562)
    """``import sdpa_tui`` then ``sdpa_tui.watch()``: the watch package (callable), imported by name at first use."""
    if name == "watch":
        import importlib

        return importlib.import_module("sdpa_tui.watch")
    raise AttributeError(f"module 'sdpa_tui' has no attribute {name!r}")
