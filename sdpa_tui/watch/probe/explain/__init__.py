"""Why a call ran as it did, read at its first call: where it comes from, what SDPA chose and why not the others,
the flags in force, the dispatch environment."""
