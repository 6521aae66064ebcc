"""Plain Python, no torch, no Textual: the workload, the backends and their statuses, statistics and units at the top;
the engine's protocol, traces, the lab's model, the watched calls and the sweep in their own packages."""
