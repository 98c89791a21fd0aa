#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: replaces the reference's check at import so garbage passes.

Expected: error, "tampered with reference.check_implementation".
"""
import reference
from task import input_t, output_t

reference.check_implementation = lambda data, output: (True, "")


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    return q.new_zeros((q.shape[0], 16, 512))
