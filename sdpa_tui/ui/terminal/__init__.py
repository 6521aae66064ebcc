"""The terminal and the ways out: exit signals, a driver that survives a dead terminal, and the only Textual
internals sdpa-tui touches."""
