"""Times as every table, panel and export writes them: one rule for numbers in µs columns, one for a duration
with its unit. (Seven formatters with four thresholds grew before this module; 2026-11-24 review.)"""

from __future__ import annotations

NA = "–"


def us_number(value: float | None) -> str:
    """Microseconds in a column headed µs: 9.6, 1,234.5, 30,654 (no decimal from 10,000 on)."""
    if value is None:
        return NA
    return f"{value:,.1f}" if value < 10_000 else f"{value:,.0f}"


def duration(us: float | None) -> str:
    """A time with its unit: 9.6 µs, 1.23 ms, 12.3 ms, 1,234.5 ms."""
    if us is None:
        return NA
    if us >= 10_000:
        return f"{us / 1000:,.1f} ms"
    if us >= 1_000:
        return f"{us / 1000:,.2f} ms"
    return f"{us:,.1f} µs"
