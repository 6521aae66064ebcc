"""On ``PYTHONPATH`` of a program ``sdpa-tui watch`` runs: every Python process the program starts
(torchrun's workers, ``torch.multiprocessing.spawn`` children, ``subprocess`` children) is watched too.

Python imports ``sitecustomize`` at start-up. This one asks :mod:`sdpa_tui.watch.probe.startup` to watch the
process once it imports torch (nothing is imported before that), then runs the ``sitecustomize`` the
process would have run without it, if there is one.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
try:
    _root = _here  # the folder that holds the sdpa_tui package, however deep in it this hook sits
    while os.path.basename(_root) != "sdpa_tui" and os.path.dirname(_root) != _root:
        _root = os.path.dirname(_root)
    _root = os.path.dirname(_root)
    if "sdpa_tui" not in sys.modules:
        sys.path.insert(0, _root)
        try:
            import sdpa_tui.watch.probe.startup as _startup
        finally:
            sys.path.remove(_root)
    else:
        import sdpa_tui.watch.probe.startup as _startup
    _startup.activate()
except Exception:  # noqa: BLE001 - watching must never stop a process from starting
    pass


def _chain() -> None:
    """The next ``sitecustomize`` on ``sys.path`` (a user's, a distribution's), as if this one were not there."""
    import importlib.machinery
    import importlib.util

    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_chain()
