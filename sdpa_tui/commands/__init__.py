"""Every command, once ``cli.py`` has parsed it: the live monitor (``monitor.py``), ``watch`` (``watch.py``, its live
view ``watch_monitor.py``), ``report``, ``sweep``, ``compare``, ``exporter``, ``serve``, and the option groups they share."""
