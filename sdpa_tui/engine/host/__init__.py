"""The engine as the UI process and the commands see it (no torch): start, supervise and speak to the engine
process, measure headless, and run the advice's cost children."""
