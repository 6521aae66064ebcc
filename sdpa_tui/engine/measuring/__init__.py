"""One SDPA call run and measured where torch is imported (the engine, the profiler process, the cost children,
the watched program's probe): its tensors, the clocks, eligibility in torch's words, accuracy, what it runs on."""
