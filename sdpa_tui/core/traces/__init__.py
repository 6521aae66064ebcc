"""Chrome traces read with the standard library: calls cut out of them, each call's kernels, and kernel names made
readable."""
