#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: ends its own process without a word. Expected: error, "exited with code 3"."""
import os

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    os._exit(3)
