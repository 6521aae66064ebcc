"""The Python API: SDPA watched from inside the user's own process (it imports torch, as ``watch/probe/`` does).

``from sdpa_tui import watch`` (``with watch() as w: ...``, :mod:`.watching`), ``w.report``
(:mod:`.calls_report`), ``%load_ext sdpa_tui`` and ``%%sdpa_watch`` (:mod:`.magic`), and the Trainer and
Lightning callbacks (:mod:`.callbacks`). All of it runs the machinery of ``sdpa-tui watch``: the probe installed in
this process (``watch/probe/install.py``), its states collected on the same socket (``watch/collected_states.py``),
the same report, text and JSON, and the same advice.
"""
