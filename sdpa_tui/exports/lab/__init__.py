"""What the lab measured, as documents: the report (its data and its tables), the per-GPU table, snapshot folders,
the history's CSV."""
