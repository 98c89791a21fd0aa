"""How times are summarised and printed, the same everywhere: geometric mean and microseconds."""
import statistics


def geomean(values) -> float | None:
    """The geometric mean (the leaderboard's ranking), None when a value is missing or not positive."""
    values = list(values)
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return statistics.geometric_mean(values)


def format_us(ns: float | None) -> str:
    """Nanoseconds as microseconds with about three significant digits; '–' when there is none."""
    if ns is None:
        return "–"
    us = ns / 1000.0
    if us >= 100:
        return f"{us:.0f}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"
