"""What ``watch`` knows of a program's SDPA calls (plain data): signatures, the processes' states, the report's
rows, ranks, compiled twins, the gradient check, and the advice (the backends and FlexAttention measured against a call)."""
