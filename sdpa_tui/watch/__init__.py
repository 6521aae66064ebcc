"""``sdpa-tui watch``: run a program with its SDPA calls counted, timed and explained.

The probe side (``probe``, ``origin``, ``choice``, ``timing``, ``bursts``, ``bootstrap``) runs
inside the watched program and imports torch; the parent side (``channel``, ``runner``,
``cli``, ``tables``) never does.
"""
