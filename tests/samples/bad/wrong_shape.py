#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: returns half the value dimension. Expected: fail, SIZE MISMATCH."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    return q.new_zeros((q.shape[0], 16, 256))
