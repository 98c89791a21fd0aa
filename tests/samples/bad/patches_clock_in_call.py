#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: imports cleanly, then swaps the clock from inside its first call.

The harness times with the clock it took before the import and checks after every call.
Expected: error, "tampered with time.perf_counter_ns" (not at import).
"""
import time

from reference import ref_kernel
from task import input_t, output_t


def _frozen_clock() -> int:
    return 0


def custom_kernel(data: input_t) -> output_t:
    setattr(time, "perf_counter_ns", _frozen_clock)
    return ref_kernel(data)
