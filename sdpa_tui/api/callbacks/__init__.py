"""A training run watched by its trainer's callback: ``TrainerWatchCallback`` for transformers' ``Trainer``
(``hf_trainer.py``), ``LightningWatchCallback`` for Lightning's (``lightning_trainer.py``).

Each watches the run in a ``with watch():`` block (``watch/from_python/watching.py``), logs each signature's time,
calls and non-finite counts at every logging step to the trainer's loggers (:mod:`.step_metrics`), and writes
``watch --report``'s JSON when the run ends. Neither framework is a dependency of sdpa-tui (``pip install
'sdpa-tui[transformers]'`` or ``'sdpa-tui[lightning]'``); each callback imports its own when it is asked for.
"""

from __future__ import annotations

from typing import Any

_WHERE = {"TrainerWatchCallback": "hf_trainer", "LightningWatchCallback": "lightning_trainer"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)


__all__ = list(_WHERE)
