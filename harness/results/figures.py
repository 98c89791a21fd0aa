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


def format_model_us(us: float) -> str:
    """A model's microseconds (harness estimate): whole from 100 up, one decimal below (no third digit to claim)."""
    return f"{us:.0f}" if us >= 100 else f"{us:.1f}"


def format_model_band(low_us: float, high_us: float) -> str:
    """'48.1–86.0': an estimate's band (harness estimate)."""
    return f"{format_model_us(low_us)}–{format_model_us(high_us)}"
