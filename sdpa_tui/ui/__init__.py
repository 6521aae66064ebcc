"""Textual: the live monitor (``app.py``, ``widgets/``, ``screens/``) and watch's Calls view on top of it."""
