"""``sdpa-tui watch``: run a program with its SDPA calls counted, timed and explained.

``probe/`` runs inside the watched program and imports torch; the rest is the parent's side (the program run and its
states collected, the report, the advice measured after it exits, the saved calls' replay asked for) and never does.
"""
