"""The engine process (spawned; imports torch): its entry point and its measuring loop (slices per backend,
eligibility and runs, accuracy and the matmul peak), its start-up and its memory."""
