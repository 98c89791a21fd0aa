#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: sleeps longer than the case time limit (run with a small --timeout).

Expected: timeout, "exceeded the N s case limit".
"""
import time

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    time.sleep(600)
    raise AssertionError("unreachable")
