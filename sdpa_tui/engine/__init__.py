"""The measuring engine, by process: ``host/`` in the UI process (no torch), ``child/`` the engine process,
``profiler/`` its profiler process, ``costs/`` the advice's children, ``measuring/`` one SDPA call on torch; at the top
what the processes share (the record pipe, the output capture, dying with the parent)."""
