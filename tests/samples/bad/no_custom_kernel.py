#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: the entry point has the wrong name. Expected: error, no custom_kernel."""
from task import input_t, output_t


def custom_kernal(data: input_t) -> output_t:
    q = data[0]
    return q.new_zeros((q.shape[0], 16, 512))
