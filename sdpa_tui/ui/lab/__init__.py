"""What the lab screen is composed of beside its panels: the engine's news (its records and events, worded), which
GPU is shown and NVML's readings of every GPU, snapshot and trace requests, and the pace of the panels' redraws."""
