"""The Python API's hooks into other tools: ``%load_ext sdpa_tui`` and ``%%sdpa_watch`` in IPython and Jupyter
(:mod:`.magic`), and the Trainer and Lightning callbacks (:mod:`.callbacks`). Each runs its cell or its training run
in a ``with watch():`` block, which lives with the rest of watch (``watch/from_python/``: the probe installed in this
process, its states collected as ``sdpa-tui watch`` collects a program's, the same report, text and JSON, and the same
advice); ``from sdpa_tui import watch`` is that package, called.
"""
