"""The advice's child processes (torch): a compiled SDPA call, and FlexAttention, measured at lab workloads."""
