"""``sdpa-tui watch``'s app: the lab with the watched program's Calls view on top, its rows, the program's log."""
