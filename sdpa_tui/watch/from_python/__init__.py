"""``with watch() as w:`` from inside Python: the block watches the user's own process (and the processes it starts)
with watch's probe, installed there for the block (``watching.py``; it imports torch, as ``probe/`` does), and
``w.report`` is the command's report (``calls_report.py``: its table in Rich and Jupyter, its JSON, its advice)."""
