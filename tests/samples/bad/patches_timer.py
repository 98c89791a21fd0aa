#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: replaces the clock at import so every timed call looks free.

Expected: error, "tampered with time.perf_counter_ns".
"""
import time

from reference import ref_kernel
from task import input_t, output_t

time.perf_counter_ns = lambda: 0


def custom_kernel(data: input_t) -> output_t:
    return ref_kernel(data)
