"""The official statistics (calculate_stats) and stopping rule (should_stop) of eval.py, as small pure functions:
no torch, so the parent reads a run's figures without importing it."""
import dataclasses
import math

# Official stopping rule constants (eval.py _run_single_benchmark).
MIN_RUNS = 3
RELATIVE_ERROR_TARGET = 0.001
WALL_LIMIT_NS = 120e9


@dataclasses.dataclass
class Stats:
    runs: int
    mean: float
    std: float
    err: float
    best: float
    worst: float


def calculate_stats(durations: list) -> Stats:
    """The official statistics over durations in ns: sample std (n-1), err = std / sqrt(n)."""
    runs = len(durations)
    if runs == 0:
        raise ValueError("no durations to summarise")
    average = sum(durations) / runs
    variance = sum((d - average) ** 2 for d in durations)
    # The official code divides by n-1 and so needs two runs; a single run has no spread to report.
    std = math.sqrt(variance / (runs - 1)) if runs > 1 else 0.0
    return Stats(runs=runs, mean=average, std=std, err=std / math.sqrt(runs),
                 best=float(min(durations)), worst=float(max(durations)))


def should_stop(stats: Stats, wall_ns: float, max_time_ns: float, wall_limit_ns: float = WALL_LIMIT_NS) -> bool:
    """The official rule, checked after every call from the third on: precise enough, enough kernel time, or too long."""
    if stats.runs < MIN_RUNS:
        return False
    if stats.mean <= 0:  # a zero-time call cannot get more precise (the official code would divide by zero)
        return True
    return (stats.err / stats.mean < RELATIVE_ERROR_TARGET
            or stats.mean * stats.runs > max_time_ns
            or wall_ns > wall_limit_ns)
