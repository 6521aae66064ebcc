"""The commands' own modules: what each of report, sweep, compare, exporter and serve does once cli.py has
parsed its options, and the option groups they share."""
