"""The program ``sdpa-tui watch`` runs: started as plain python would run it, and stopped with every process it
started (``watched_program.py``, the script as python opens it in ``script_files.py``); or, with ``--attach``, the
processes that watch themselves and publish to it (``attached_processes.py``); while it runs, its report published
for Prometheus (``metrics_publisher.py``)."""
