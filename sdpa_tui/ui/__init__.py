"""Textual: the live monitor's app (``app.py``; ``live_app.py`` as ``sdpa-tui`` runs it, ``messages.py`` what
background threads post to it), the lab screen's parts (``lab/``, ``widgets/``, ``screens/``), the terminal and the
ways out (``terminal/``), and watch's Calls view on top of the lab (``watch/``)."""
