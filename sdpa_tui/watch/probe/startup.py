"""Watching a process that ``sdpa-tui watch`` did not start itself: a job's ranks, spawned workers.

The hook's ``sitecustomize`` (``hook/``, put on ``PYTHONPATH`` by the runner, beside
``SDPA_TUI_WATCH_SOCKET``) calls :func:`activate` at every Python start-up. It imports nothing
heavy: a finder waits for ``import torch`` to finish, then the probe is installed as in the
program's own process (``install.install``, once per process), its final state sent at exit and an
uncaught exception kept. A process that never imports torch (a shell tool, a launcher's helper)
costs one finder call per import and sends nothing; one that imports torch but makes no SDPA call
(torchrun's agent, a DataLoader worker) sends no calls and adds no row.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import os
import sys

from ..states.state_socket import SOCKET_ENV


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Finds ``torch`` with the finders after it and installs the probe once torch has been executed."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None and spec.loader is not None:
                spec.loader = _InstallAfter(spec.loader)
                return spec
        return None


class _InstallAfter(importlib.abc.Loader):
    def __init__(self, loader) -> None:
        self._loader = loader

    def __getattr__(self, name):  # resource readers and the like: torch's own loader answers
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _install()


def activate() -> None:
    """Watch this process from its ``import torch`` on, if ``sdpa-tui watch`` started the job."""
    if not os.environ.get(SOCKET_ENV) or any(isinstance(f, _AfterTorch) for f in sys.meta_path):
        return
    if "torch" in sys.modules:
        _install()
    else:
        sys.meta_path.insert(0, _AfterTorch())


def _install() -> None:
    try:
        from ..states.state_socket import StateSender
        from .install import flush_on_sigterm, format_exception, install

        path = os.environ.get(SOCKET_ENV)
        if not path:
            return
        probe = install(StateSender(path))
        atexit.register(probe.finish, at_exit=True)
        flush_on_sigterm(probe)
        previous = sys.excepthook

        def excepthook(kind, exc, tb):
            probe.error = format_exception(exc)
            previous(kind, exc, tb)

        sys.excepthook = excepthook
    except Exception:  # noqa: BLE001 - an unwatched process is better than a broken one
        pass
