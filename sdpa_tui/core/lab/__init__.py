"""The lab's model: each backend's state and the session built from the engine's records, which backends beat
SDPA's pick, the controller of what is measured, the same workload across GPUs."""
