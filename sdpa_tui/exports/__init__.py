"""Documents and metrics from what was measured: the lab's report and snapshots, compare's documents, the sweep's
output, Prometheus metrics, and the files they are written to."""
