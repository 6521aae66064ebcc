"""The folder ``sdpa-tui watch`` puts on a job's ``PYTHONPATH``: its ``sitecustomize`` (see ``startup.py``).

A package only so that installs carry it; nothing imports it as ``sdpa_tui.watch.probe.hook``.
"""
