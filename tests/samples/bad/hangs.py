#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: never returns. Expected: timeout, "exceeded the N s case limit"."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    while True:
        pass
