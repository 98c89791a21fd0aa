#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter sample: a module aiter does not have (expected: AITER_UNKNOWN_MODULE).
from aiter.ops.mla_decode import decode  # EXPECT AITER_UNKNOWN_MODULE

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return decode(data[0])
