"""The report in words: ``watch --report``'s text and Markdown (``report_text.py``), the cells and lines of a call
that the live Calls view shares with it (``call_cells.py``), and the gradient check in words (``gradient_text.py``)."""
