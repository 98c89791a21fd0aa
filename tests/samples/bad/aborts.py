#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: aborts its process. Expected: error, "killed by signal 6 (SIGABRT)"."""
import os

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    os.abort()
