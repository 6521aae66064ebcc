"""``sdpa-tui compare``'s documents: two reports, their environments, or two ``watch --report`` files side by side."""
