"""A sweep's output: on the terminal (progress, table, chart, findings) and as JSON, CSV and Markdown."""
