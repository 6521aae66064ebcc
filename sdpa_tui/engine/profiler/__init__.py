"""Kernel captures apart from the timing loop: the profiler process, and its client inside the engine process."""
