"""The sampled checks of a call's output and gradients (a float64 reference), the repro folder a flagged call is
saved in, and its replay through every backend (run in a child process of ``report --inputs`` and ``watch``)."""
