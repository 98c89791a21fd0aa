#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: returns its query tensor as the output. Expected: fail, SIZE MISMATCH."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return data[0]
